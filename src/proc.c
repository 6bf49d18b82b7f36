/* proc.c: owner and command line of GPU processes from /proc, read once per pid per refresh
 * (a process on eight GPUs costs one read, not eight), with user names cached for the run since
 * getpwuid can be slow under LDAP. With stats on (top), the same visit reads /proc/PID/stat:
 * parent, start, CPU and resident memory (the stat file has them all: no statm read); CPU use
 * is the difference from the previous refresh's counter of the same process (pid and start). */
#include "pid.h"
#include "proc.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct user_ent {
	uid_t uid;
	char *name;
};

struct cpu_mark {             /* a process's CPU counter at the previous refresh */
	unsigned pid;
	unsigned long long start;
	double cpu;            /* seconds */
};

struct proc_cache {
	bool stats;
	double tick;           /* seconds per clock tick */
	uint64_t page;         /* bytes per page */
	double now_mono, boot_now;     /* this refresh: monotonic clock, seconds since boot */
	double prev_mono;      /* the previous refresh with stats, 0 when none */
	struct cpu_mark *prev; /* its counters, sorted by pid */
	size_t nprev, prev_cap;
	struct proc_info *ents;
	size_t n, cap;
	unsigned *slots;       /* open addressing: index+1 into ents, 0 = empty */
	size_t nslots;
	struct user_ent *users;
	size_t nusers, users_cap;
};

struct proc_cache *proc_cache_new(void)
{
	return xcalloc(1, sizeof(struct proc_cache));
}

void proc_cache_stats(struct proc_cache *pc, bool on)
{
	if (on && !pc->tick) {
		long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
		pc->tick = 1.0 / (double)(hz > 0 ? hz : 100);
		pc->page = page > 0 ? (uint64_t)page : 4096;
	}
	pc->stats = on;
}

static int mark_cmp(const void *a, const void *b)
{
	unsigned x = ((const struct cpu_mark *)a)->pid, y = ((const struct cpu_mark *)b)->pid;
	return (x > y) - (x < y);
}

/* The counters of the refresh that ends become the marks the next one measures from. */
static void keep_marks(struct proc_cache *pc)
{
	pc->nprev = 0;
	for (size_t i = 0; pc->stats && i < pc->n; i++) {
		const struct proc_info *pi = &pc->ents[i];
		if (!pi->stat_valid)
			continue;
		pc->prev = grow_array(pc->prev, &pc->prev_cap, pc->nprev + 1, sizeof *pc->prev);
		pc->prev[pc->nprev++] = (struct cpu_mark){pi->pid, pi->start, pi->cpu_time};
	}
	if (pc->nprev)
		qsort(pc->prev, pc->nprev, sizeof *pc->prev, mark_cmp);
	pc->prev_mono = pc->stats && pc->n ? pc->now_mono : 0;
	struct timespec ts;
	pc->now_mono = now_mono();
	clock_gettime(CLOCK_BOOTTIME, &ts);
	pc->boot_now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void proc_cache_begin(struct proc_cache *pc)
{
	keep_marks(pc);
	for (size_t i = 0; i < pc->n; i++) {
		free(pc->ents[i].cmdline);
		free(pc->ents[i].name);
	}
	pc->n = 0;
	if (pc->slots)
		memset(pc->slots, 0, pc->nslots * sizeof *pc->slots);
}

void proc_cache_free(struct proc_cache *pc)
{
	if (!pc)
		return;
	proc_cache_begin(pc);
	free(pc->ents);
	free(pc->prev);
	free(pc->slots);
	for (size_t i = 0; i < pc->nusers; i++)
		free(pc->users[i].name);
	free(pc->users);
	free(pc);
}

/* User names are cached for the run: getpwuid can be slow under LDAP. */
static const char *proc_user_name(struct proc_cache *pc, uid_t uid)
{
	for (size_t i = 0; i < pc->nusers; i++)
		if (pc->users[i].uid == uid)
			return pc->users[i].name;
	char buf[256];
	char *name = xstrdup(user_name(uid, buf, sizeof buf));
	pc->users = grow_array(pc->users, &pc->users_cap, pc->nusers + 1, sizeof *pc->users);
	pc->users[pc->nusers++] = (struct user_ent){uid, name};
	return name;
}

/* Parent, start, CPU and memory from /proc/PID/stat; CPU use since the previous refresh when it
 * saw the same process (the same start time: a pid given to a new process starts afresh). */
static void read_stats(struct proc_cache *pc, struct proc_info *pi)
{
	struct pid_stat ps;
	if (!pid_stat(pi->pid, &ps))
		return;
	pi->stat_valid = true;
	pi->state = ps.state;
	pi->ppid = ps.ppid;
	pi->start = ps.start;
	pi->cpu_time = (double)ps.cpu * pc->tick;
	pi->rss = (uint64_t)ps.rss * pc->page;
	pi->elapsed = pc->boot_now - (double)ps.start * pc->tick;
	if (pi->elapsed < 0)
		pi->elapsed = 0;
	struct cpu_mark key = {.pid = pi->pid};
	const struct cpu_mark *m = pc->nprev ? bsearch(&key, pc->prev, pc->nprev, sizeof key, mark_cmp)
					     : NULL;
	double dt = pc->now_mono - pc->prev_mono;
	if (m && m->start == ps.start && pi->cpu_time >= m->cpu && pc->prev_mono && dt > 0) {
		pi->cpu_valid = true;
		pi->cpu_pct = (pi->cpu_time - m->cpu) / dt * 100.0;
	}
}

static void read_proc(struct proc_cache *pc, struct proc_info *pi)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%u", pi->pid);
	if (stat(path, &st) != 0)
		return;
	pi->found = true;
	pi->uid = st.st_uid;
	pi->user = proc_user_name(pc, st.st_uid);
	if (pc->stats)
		read_stats(pc, pi);
	size_t len = 0;
	snprintf(path, sizeof path, "/proc/%u/cmdline", pi->pid);
	char *cmd = read_file(path, &len);
	while (cmd && len && cmd[len - 1] == '\0')
		len--;
	if (cmd && len) {
		pi->name = xstrdup(cmd);
		for (size_t i = 0; i < len; i++)
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		cmd[len] = '\0';
		pi->cmdline = cmd;
		return;
	}
	free(cmd);
	/* Zombies and kernel threads have no command line: show [comm] as ps does. */
	snprintf(path, sizeof path, "/proc/%u/comm", pi->pid);
	char *comm = read_file(path, &len);
	if (comm) {
		comm[strcspn(comm, "\n")] = '\0';
		pi->cmdline = xasprintf("[%s]", comm);
		pi->name = xstrdup(pi->cmdline);
		free(comm);
	}
}

static void rehash(struct proc_cache *pc)
{
	free(pc->slots);
	pc->nslots = pc->nslots ? pc->nslots * 2 : 256;
	pc->slots = xcalloc(pc->nslots, sizeof *pc->slots);
	for (size_t i = 0; i < pc->n; i++) {
		size_t h = (pc->ents[i].pid * 2654435761U) & (pc->nslots - 1);
		while (pc->slots[h])
			h = (h + 1) & (pc->nslots - 1);
		pc->slots[h] = (unsigned)i + 1;
	}
}

const struct proc_info *proc_lookup(struct proc_cache *pc, unsigned pid)
{
	if (2 * (pc->n + 1) > pc->nslots)
		rehash(pc);
	size_t h = (pid * 2654435761U) & (pc->nslots - 1);
	while (pc->slots[h]) {
		struct proc_info *pi = &pc->ents[pc->slots[h] - 1];
		if (pi->pid == pid)
			return pi;
		h = (h + 1) & (pc->nslots - 1);
	}
	pc->ents = grow_array(pc->ents, &pc->cap, pc->n + 1, sizeof *pc->ents);
	struct proc_info *pi = &pc->ents[pc->n];
	*pi = (struct proc_info){.pid = pid};
	pc->slots[h] = (unsigned)++pc->n;
	read_proc(pc, pi);
	return pi;
}
