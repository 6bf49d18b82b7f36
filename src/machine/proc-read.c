/* proc-read.c: the reading half of the process cache (proc.c has the design and the table): the
 * texts (command lines in 64 KiB chunks, compacted between refreshes), one process's entry
 * brought up to date from /proc (a stat for the owner and identity, the command line when it is
 * new or due, /proc/PID/stat when stats are on), and its cgroup for the Slurm job and the
 * container. Each /proc file is read with one read() where the answer fits. */
#include "machine/pid.h"
#include "machine/proc.h"
#include "machine/proc-cache.h"
#include "machine/slurm.h"
#include "machine/container.h"
#include "machine/exitwatch.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ctr_ref proc_ctr_unread;

void proc_ctr_drop(struct ctr_ref **r)
{
	if (*r != PROC_CTR_UNREAD)
		free(*r);
	*r = PROC_CTR_UNREAD;
}

void proc_texts_free(struct chunk *c)
{
	while (c) {
		struct chunk *next = c->next;
		free(c);
		c = next;
	}
}

/* ---- texts ---- */

static char *text_alloc(struct proc_cache *pc, size_t n)
{
	struct chunk *c = pc->chunks;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > CHUNK - sizeof *c ? n : CHUNK - sizeof *c;
		c = xmalloc(sizeof *c + cap);
		*c = (struct chunk){.next = pc->chunks, .cap = cap};
		pc->chunks = c;
	}
	char *p = c->data + c->used;
	c->used += n;
	pc->live += n;
	return p;
}

void proc_text_drop(struct proc_cache *pc, struct proc_ent *e)
{
	if (e->text) {
		pc->live -= e->len;
		pc->garbage += e->len;
	}
	e->text = NULL;
	e->len = e->name_off = 0;
}

/* Called between refreshes, when no caller holds a text: moves the live ones together. */
void proc_text_compact(struct proc_cache *pc)
{
	if (pc->garbage < CHUNK || pc->garbage < pc->live)
		return;
	struct chunk *old = pc->chunks;
	pc->chunks = NULL;
	pc->live = pc->garbage = 0;
	for (size_t i = 0; i < pc->n; i++) {
		struct proc_ent *e = &pc->ents[i];
		if (e->text) {
			char *t = text_alloc(pc, e->len);
			memcpy(t, e->text, e->len);
			e->text = t;
		}
	}
	proc_texts_free(old);
}

/* ---- reading /proc ---- */

/* PID[/FILE] relative to pc->procfd, or /proc/PID[/FILE] when /proc could not be opened. Made by
 * hand: snprintf would cost more than the stat it is for. buf holds 64 bytes. */
static const char *proc_path(const struct proc_cache *pc, char *buf, unsigned pid, const char *file)
{
	char digits[12];
	size_t k = sizeof digits, n = 0;
	do
		digits[--k] = (char)('0' + pid % 10);
	while (pid /= 10);
	if (pc->procfd < 0) {
		memcpy(buf, "/proc/", 6);
		n = 6;
	}
	memcpy(buf + n, digits + k, sizeof digits - k);
	n += sizeof digits - k;
	if (file) {
		buf[n++] = '/';
		size_t len = strlen(file);
		memcpy(buf + n, file, len); /* "cmdline", "comm": it fits */
		n += len;
	}
	buf[n] = '\0';
	return buf;
}

/* Closing a /proc file read is a syscall of its own, the file's release; a close_range() over
 * a run of them is one syscall for the run (about 0.3 us a file less on the development VM, 10%
 * of what opening, reading and closing a command line costs there). Only this cache's own
 * descriptors are closed: a run is consecutive numbers all in the batch, so a descriptor opened
 * elsewhere in between (NSS's /etc/passwd, a pidfd) ends a run and is never in one. */
void proc_close_flush(struct proc_cache *pc)
{
	int *fd = pc->closing;
	unsigned n = pc->nclosing;
	pc->nclosing = 0;
	for (unsigned i = 1; i < n; i++) { /* nearly sorted already: openat gives the lowest free */
		int v = fd[i];
		unsigned j = i;
		for (; j && fd[j - 1] > v; j--)
			fd[j] = fd[j - 1];
		fd[j] = v;
	}
	for (unsigned i = 0; i < n;) {
		unsigned k = i + 1;
		while (k < n && fd[k] == fd[k - 1] + 1)
			k++;
		/* (close_range fails only on a kernel before 5.9: each closed then) */
		if (k - i == 1 || close_range((unsigned)fd[i], (unsigned)fd[k - 1], 0) != 0)
			for (unsigned m = i; m < k; m++)
				close(fd[m]);
		i = k;
	}
}

static void proc_close(struct proc_cache *pc, int fd)
{
	if (!pc->batch_closes) {
		close(fd);
		return;
	}
	if (pc->nclosing == PROC_CLOSE_BATCH)
		proc_close_flush(pc);
	pc->closing[pc->nclosing++] = fd;
}

/* The whole file into pc->scratch (NUL added); -1 when it cannot be read. One read() where the
 * answer fits: a read of these /proc files that returns less than it asked for has reached the
 * end (cmdline copies the argument area until the count or its end; comm, cgroup and stat are
 * single_open seq files, whole in the kernel's buffer before the first byte is copied), so only
 * a read that filled the buffer reads again, into a bigger one (a long command line). */
static ssize_t read_scratch_max(struct proc_cache *pc, const char *path, size_t max);
static ssize_t read_scratch(struct proc_cache *pc, const char *path)
{
	return read_scratch_max(pc, path, SIZE_MAX);
}

/* As read_scratch, at most max bytes (more may be read: a whole buffer's). */
static ssize_t read_scratch_max(struct proc_cache *pc, const char *path, size_t max)
{
	int dir = pc->procfd >= 0 ? pc->procfd : AT_FDCWD;
	int fd = openat(dir, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == EMFILE && pc->nclosing) { /* the batch held the last descriptors */
		proc_close_flush(pc);
		fd = openat(dir, path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	size_t len = 0;
	for (;;) {
		if (pc->scratch_cap - len < 2) {
			pc->scratch_cap = pc->scratch_cap ? 2 * pc->scratch_cap : 8192;
			pc->scratch = xrealloc(pc->scratch, pc->scratch_cap);
		}
		size_t want = pc->scratch_cap - len - 1;
		ssize_t r = read(fd, pc->scratch + len, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			proc_close(pc, fd);
			return -1;
		}
		len += (size_t)r;
		if ((size_t)r < want || len >= max)
			break;
	}
	proc_close(pc, fd);
	pc->scratch[len] = '\0';
	return (ssize_t)len;
}

/* The command line, its arguments joined by spaces, and argv[0], as one text. */
static void read_text(struct proc_cache *pc, struct proc_ent *e)
{
	char path[64];
	proc_text_drop(pc, e);
	e->reread_ms = pc->now_ms + REREAD_AFTER / 2 + (uint32_t)((uint64_t)REREAD_AFTER * (proc_hash(e->pid) >> 16) >> 16);
	ssize_t n = read_scratch_max(pc, proc_path(pc, path, e->pid, "cmdline"), CMDLINE_MAX + 1);
	size_t len = n > 0 ? (size_t)n : 0;
	char *cmd = pc->scratch;
	if (len > CMDLINE_MAX) {   /* cut on a character's boundary, and said */
		len = CMDLINE_MAX - 3;
		while (len && ((unsigned char)cmd[len] & 0xC0) == 0x80)
			len--;
		memcpy(cmd + len, "...", 4);
		len += 3;
	}
	while (len && cmd[len - 1] == '\0')
		len--;
	if (!len) {
		/* Zombies and kernel threads have no command line: show [comm] as ps does. */
		if (read_scratch(pc, proc_path(pc, path, e->pid, "comm")) < 0)
			return;
		char shown[64];
		pc->scratch[strcspn(pc->scratch, "\n")] = '\0';
		len = (size_t)snprintf(shown, sizeof shown, "[%.16s]", pc->scratch);
		memcpy(cmd = pc->scratch, shown, len + 1);
	}
	size_t nlen = strlen(cmd);
	if (pc->no_owner)
		len = nlen; /* a compute-apps query prints argv[0] alone: only it is kept (issue 22) */
	bool one = nlen == len;           /* argv[0] alone: the name is the command line */
	e->len = (uint32_t)(len + 1 + (one ? 0 : nlen + 1));
	e->text = text_alloc(pc, e->len);
	e->name_off = one ? 0 : (uint32_t)len + 1;
	if (!one)
		memcpy(e->text + len + 1, cmd, nlen + 1);
	memcpy(e->text, cmd, len);
	e->text[len] = '\0';
	for (char *z = e->text; (z = memchr(z, '\0', (size_t)(e->text + len - z)));)
		*z++ = ' ';
}

void proc_cache_stats(struct proc_cache *pc, bool on)
{
	pc->stats = on;
	if (on && !pc->st) {
		long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
		pc->tick = 1.0 / (double)(hz > 0 ? hz : 100);
		pc->page = page > 0 ? (uint64_t)page : 4096;
		pc->st_cap = pc->cap;
		pc->st = xcalloc(pc->st_cap ? pc->st_cap : 1, sizeof *pc->st);
	}
}

/* Parent, start, CPU and memory from /proc/PID/stat, at now_ms (cache clock); CPU use since the
 * reading before when it read the same process (the same start time: a pid given to a new
 * process starts afresh). */
void proc_read_stats(struct proc_cache *pc, struct proc_ent *e, uint32_t now_ms)
{
	struct stat_ent *s = &pc->st[e - pc->ents];
	struct pid_stat ps;
	if (!pid_stat(e->pid, &ps)) {
		*s = (struct stat_ent){.gen = pc->gen};
		return;
	}
	bool same = s->start == ps.start && ps.cpu >= s->cpu && now_ms > s->cpu_ms;
	float pct = same ? (float)((double)(ps.cpu - s->cpu) * pc->tick * 1000.0 /
				   (double)(now_ms - s->cpu_ms) * 100.0) : 0;
	*s = (struct stat_ent){.start = ps.start, .cpu = ps.cpu, .rss = ps.rss, .ppid = ps.ppid,
			       .cpu_ms = now_ms, .cpu_pct = pct, .gen = pc->gen, .cpu_valid = same,
			       .state = ps.state};
}

void proc_cache_want_jobs(struct proc_cache *pc, bool on)
{
	pc->want_jobs = on;
	if (on && !pc->jobs) {
		pc->jobs_cap = pc->cap;
		pc->jobs = xmalloc((pc->jobs_cap ? pc->jobs_cap : 1) * sizeof *pc->jobs);
		for (size_t i = 0; i < pc->jobs_cap; i++)
			pc->jobs[i] = JOB_UNREAD;
	}
}

void proc_cache_want_containers(struct proc_cache *pc, bool on)
{
	pc->want_ctrs = on;
	if (on && !pc->ctrs) {
		pc->ctrs_cap = pc->cap;
		pc->ctrs = xmalloc((pc->ctrs_cap ? pc->ctrs_cap : 1) * sizeof *pc->ctrs);
		for (size_t i = 0; i < pc->ctrs_cap; i++)
			pc->ctrs[i] = PROC_CTR_UNREAD;
	}
}

void proc_cache_want_owner(struct proc_cache *pc, bool on)
{
	pc->no_owner = !on;
}

void proc_cache_watch_exits(struct proc_cache *pc, unsigned parts)
{
	/* A pidfd names a pid of this process's PID namespace, a stat of /proc/PID one of the
	 * namespace /proc was mounted in: where they differ (a container given the host's /proc)
	 * the two could be different processes, so nothing is watched there. */
	if (pc->ew)
		return;
	char self[32], want[32];
	ssize_t n = readlink("/proc/self", self, sizeof self - 1);
	snprintf(want, sizeof want, "%d", (int)getpid());
	if (n > 0 && (self[n] = '\0', !strcmp(self, want)))
		pc->ew = exit_watch_new(parts);
}

/* The Slurm job and the container of a process in /proc, those wanted and not yet read: one
 * read of its cgroup file, parsed by slurm.c and container.c. */
void proc_read_cgroup(struct proc_cache *pc, struct proc_ent *e)
{
	char path[64];
	size_t i = (size_t)(e - pc->ents);
	bool job = pc->want_jobs && pc->jobs[i] == JOB_UNREAD;
	bool ctr = pc->want_ctrs && pc->ctrs[i] == PROC_CTR_UNREAD;
	if (!job && !ctr)
		return;
	bool ok = read_scratch(pc, proc_path(pc, path, e->pid, "cgroup")) >= 0;
	struct ctr_ref r;
	if (job)
		pc->jobs[i] = ok ? slurm_cgroup_job(pc->scratch) : 0;
	if (ctr && (pc->ctrs[i] = NULL, ok && ctr_from_cgroup_at("/sys/fs/cgroup", pc->scratch, &r)))
		*(pc->ctrs[i] = xmalloc(sizeof r)) = r;
}

/* One stat per process and refresh: owner, and whether it is the process read before. */
void proc_refresh_ent(struct proc_cache *pc, struct proc_ent *e)
{
	char path[64];
	struct stat st;
	if (pc->no_owner) {
		/* Only the text (found when it could be read: proc_lookup); ident 0 keeps a later
		 * refresh with owners from taking it for the process it stats then. */
		read_text(pc, e);
		e->ident = 0;
		return;
	}
	bool due = (int32_t)(pc->now_ms - e->reread_ms) >= 0;
	if (pc->ew && e->ident && !due && exit_watch_alive(pc->ew, e->pid)) {
		/* The process read before, alive since (exitwatch.c): owner and text kept until
		 * the text is due again, when the stat below tells the owner anew. */
		if (pc->stats)
			proc_read_stats(pc, e, pc->now_ms);
		return;
	}
	if (pc->ew)
		exit_watch_add(pc->ew, e->pid); /* before the stat: see exitwatch.c */
	if (fstatat(pc->procfd >= 0 ? pc->procfd : AT_FDCWD,
		    proc_path(pc, path, e->pid, NULL), &st, 0) != 0) {
		proc_text_drop(pc, e);
		e->ident = 0;
		if (pc->ew)
			exit_watch_drop(pc->ew, e->pid);
		return;
	}
	uint64_t ident = ((uint64_t)st.st_ino * 1000000007ULL ^
			  ((uint64_t)st.st_ctim.tv_sec * 1000000000ULL + (uint64_t)st.st_ctim.tv_nsec)) | 1;
	bool same = ident == e->ident;
	e->uid = st.st_uid;
	e->ident = ident;
	if (!same && pc->jobs)
		pc->jobs[e - pc->ents] = JOB_UNREAD;
	if (!same && pc->ctrs)
		proc_ctr_drop(&pc->ctrs[e - pc->ents]);
	if (!same || due)
		read_text(pc, e);
	if (pc->stats)
		proc_read_stats(pc, e, pc->now_ms);
}
