/* exitwatch.c: which of a loop's processes are still the ones it read, told by one poll(2) a
 * refresh instead of a stat of each /proc/PID (issue 22: at 1,000 processes the stats were half
 * of what a `status -l 0.1` refresh cost, and at 10,000 most of it).
 *
 * A pidfd (pidfd_open(2)) refers to one process, not to its number: it becomes readable when
 * that process exits, and a pid is given to another process only after its process has exited.
 * So a pid whose pidfd was opened before the stat that read it, and is not readable, still
 * names the process that stat saw: the cache (proc.c) keeps what it read and skips the stat.
 * An exited one is forgotten here at the next refresh's begin, and proc.c stats it again (a
 * new process, or gone). The order matters: opened after the stat, a pidfd could belong to a
 * process that took the pid in between.
 *
 * Bounded: at most `max` descriptors (a share of what RLIMIT_NOFILE leaves: half for status -l
 * and top, a quarter for the exporter and the daemon, whose connections need the rest), each
 * close-on-exec as every pidfd is; a pid over the budget, a kernel without pidfd_open
 * (before 5.3) or a thread that is not a process leader is simply not watched: stat'd each
 * refresh as before. Only loops ask for it (proc_cache_watch_exits: status -l, top, the
 * exporter, the daemon): a one-shot would pay an open per process for nothing. */
#include "machine/exitwatch.h"
#include "machine/pid.h"
#include "base/util.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

struct exit_watch {
	struct pollfd *fds;     /* dense, one per watched pid, poll(2)'s array as it is */
	unsigned *pids, *gens;  /* beside fds: the pid, the last refresh that asked for it */
	size_t n, cap, max;
	unsigned *slots;        /* open addressing: index+1 into the arrays, 0 = empty */
	size_t nslots;
	unsigned gen;
	bool broken;            /* no pidfds here (pid_open's ENOSYS): nothing is watched */
};

static uint32_t hash(unsigned pid)
{
	return pid * 2654435761U;
}

static void rehash(struct exit_watch *w)
{
	size_t nslots = 256;
	while (nslots < 2 * (w->n + 1))
		nslots *= 2;
	if (nslots != w->nslots) {
		free(w->slots);
		w->slots = xcalloc(nslots, sizeof *w->slots);
		w->nslots = nslots;
	} else {
		for (size_t i = 0; i < nslots; i++)
			w->slots[i] = 0;
	}
	for (size_t i = 0; i < w->n; i++) {
		size_t h = hash(w->pids[i]) & (w->nslots - 1);
		while (w->slots[h])
			h = (h + 1) & (w->nslots - 1);
		w->slots[h] = (unsigned)i + 1;
	}
}

static long find(const struct exit_watch *w, unsigned pid)
{
	if (!w->nslots)
		return -1;
	for (size_t h = hash(pid) & (w->nslots - 1); w->slots[h]; h = (h + 1) & (w->nslots - 1))
		if (w->pids[w->slots[h] - 1] == pid)
			return (long)w->slots[h] - 1;
	return -1;
}

size_t exit_watch_budget(unsigned parts)
{
	/* A share of the descriptors the limit leaves: the rest stay the command's (top's
	 * terminal, the daemon's socket, the runtimes' sockets; the exporter's and the daemon's
	 * connections, which take a bigger share). */
	struct rlimit rl;
	if (parts < 2)
		parts = 2;
	return getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
		       ? (rl.rlim_cur > 256 ? (size_t)(rl.rlim_cur - 128) / parts : 0) : 65536 / parts;
}

struct exit_watch *exit_watch_new(unsigned parts)
{
	return exit_watch_new_max(exit_watch_budget(parts));
}

struct exit_watch *exit_watch_new_max(size_t max)
{
	struct exit_watch *w = xcalloc(1, sizeof *w);
	w->max = max;
	return w;
}

void exit_watch_free(struct exit_watch *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++)
		close(w->fds[i].fd);
	free(w->fds);
	free(w->pids);
	free(w->gens);
	free(w->slots);
	free(w);
}

void exit_watch_begin(struct exit_watch *w)
{
	if (w->n && poll(w->fds, (nfds_t)w->n, 0) < 0)
		for (size_t i = 0; i < w->n; i++)
			w->fds[i].revents = POLLIN; /* not told: everyone is stat'd again */
	/* Exited since the last refresh, or not asked for by it (no longer listed): forgotten. */
	size_t k = 0;
	for (size_t i = 0; i < w->n; i++) {
		if (w->fds[i].revents || w->gens[i] != w->gen) {
			close(w->fds[i].fd);
			continue;
		}
		w->fds[k] = w->fds[i];
		w->pids[k] = w->pids[i];
		w->gens[k++] = w->gens[i];
	}
	bool moved = k != w->n;
	w->n = k;
	if (moved || !w->nslots)
		rehash(w);
	w->gen++;
}

bool exit_watch_alive(struct exit_watch *w, unsigned pid)
{
	long i = find(w, pid);
	if (i < 0)
		return false;
	w->gens[i] = w->gen;
	return true;
}

void exit_watch_add(struct exit_watch *w, unsigned pid)
{
	if (exit_watch_alive(w, pid) || w->broken || w->n >= w->max)
		return;
	int fd = pid_open(pid, 0);
	if (fd < 0) {
		w->broken = errno == ENOSYS;
		return;
	}
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 256;
		w->fds = xrealloc(w->fds, w->cap * sizeof *w->fds);
		w->pids = xrealloc(w->pids, w->cap * sizeof *w->pids);
		w->gens = xrealloc(w->gens, w->cap * sizeof *w->gens);
	}
	w->fds[w->n] = (struct pollfd){.fd = fd, .events = POLLIN};
	w->pids[w->n] = pid;
	w->gens[w->n] = w->gen;
	w->n++;
	if (2 * (w->n + 1) > w->nslots)
		rehash(w);
	else {
		size_t h = hash(pid) & (w->nslots - 1);
		while (w->slots[h])
			h = (h + 1) & (w->nslots - 1);
		w->slots[h] = (unsigned)w->n;
	}
}

void exit_watch_drop(struct exit_watch *w, unsigned pid)
{
	long i = find(w, pid);
	if (i >= 0)
		w->gens[i] = w->gen - 1; /* not asked for in this refresh: closed at the next begin */
}
