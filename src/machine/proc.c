/* proc.c: owner and command line of GPU processes from /proc, read once per pid per refresh
 * (a process on eight GPUs costs one read, not eight), with user names cached for the run since
 * getpwuid can be slow under LDAP.
 *
 * Across refreshes (status -l, the exporter) a process that is still the same keeps its command
 * line: each refresh stats /proc/PID, which it needs anyway for the owner (a process may change
 * its uid), and the inode of /proc/PID tells whether the process is the one read before. procfs
 * makes a new inode, with a new number and time, for each process a pid is given to: an old
 * process's /proc/PID dentry fails revalidation once it has died. Checking the start time in
 * /proc/PID/stat instead would cost more than reading the command line again. A command line can
 * also change (setproctitle: Ray workers rename themselves per task), so each is read again
 * after 0.5 to 1.5 times REREAD_AFTER, spread over refreshes by pid. A loop's cache
 * (proc_cache_watch_exits) skips the stat too while the process is watched and has not exited
 * (exitwatch.c: one poll a refresh tells who exited), until its text is due.
 *
 * With stats on (gpuctl top, status --details), the same visit reads /proc/PID/stat: parent,
 * start, CPU and resident memory (the stat file has them all: no statm read). CPU use is the
 * difference from the counter kept at the previous refresh, when it is the same process (the
 * same start time).
 *
 * Memory is what a big machine costs (10,000 processes): an entry is 40 bytes and the texts live
 * in 64 KiB chunks, compacted when more than half of them is garbage. The Slurm job of each
 * process (its cgroup, read once while it is the same process) lives in an array beside the
 * entries, made only on a machine that runs Slurm jobs; the stats in another (48 bytes an
 * entry), made only when a refresh asks for them, or a lookup asks for one process's (top reads
 * the stat files of the rows it shows only, unless it sorts by them). Its container (the same
 * read of its cgroup) is a pointer beside the entries, to a record made only for one in one. */
#include "machine/pid.h"
#include "machine/proc.h"
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
#include <time.h>
#include <unistd.h>

#define REREAD_AFTER 4000U     /* ms */
/* review 4: the bytes of a command line kept (the rest cut, "..." said). One user's GPU process
 * with a command line of megabytes (ARG_MAX allows 6 MiB) cost every refresh that much, and
 * in the daemon's snapshot a record over one message (64 KiB) failed every user's view. */
#define CMDLINE_MAX 4096
#define CHUNK (64 * 1024)
#define JOB_UNREAD 0xFFFFFFFFU

struct user_ent {
	uid_t uid;
	char *name;
};

struct proc_ent {            /* 40 bytes */
	unsigned pid;
	uid_t uid;
	char *text;             /* the command line, then argv[0] at name_off (0: the same) */
	uint32_t name_off, len; /* len: of the text, both strings with their NULs */
	uint64_t ident;         /* /proc/PID's inode and creation time (odd); 0: not in /proc */
	uint32_t reread_ms;     /* read the command line again after this (cache clock) */
	unsigned gen;           /* the last refresh that asked for it */
};

struct stat_ent {           /* beside a proc_ent: /proc/PID/stat when last read */
	unsigned long long start, cpu;  /* clock ticks; start 0: not read */
	unsigned long rss;      /* pages */
	int ppid;
	uint32_t cpu_ms;        /* when cpu was read (cache clock) */
	float cpu_pct;          /* since the reading before, when cpu_valid */
	unsigned gen;           /* the refresh it was read in (proc_lookup_stats reads it once) */
	bool cpu_valid;
	char state;
};

struct chunk {
	struct chunk *next;
	size_t used, cap;
	char data[];
};

struct proc_cache {
	int procfd;             /* /proc, so each path is looked up from there, not from /;
				 * -1: could not be opened, -2: not yet */
	struct proc_ent *ents;
	size_t n, cap;
	unsigned *slots;        /* open addressing: index+1 into ents, 0 = empty */
	size_t nslots;
	unsigned gen;           /* refreshes begun */
	size_t nseen;           /* distinct pids asked for in this refresh */
	double start;           /* monotonic seconds at creation */
	uint32_t now_ms;        /* this refresh's time, since start */
	struct chunk *chunks;   /* texts; the newest first */
	size_t live, garbage;   /* text bytes in use, and freed but not reclaimed */
	char *scratch;          /* for reading command lines; grows to the longest */
	size_t scratch_cap;
	struct user_ent *users;
	size_t nusers, users_cap;
	bool stats;             /* this refresh reads /proc/PID/stat */
	struct stat_ent *st;    /* beside ents, once any refresh wanted stats */
	size_t st_cap;
	double tick;            /* seconds per clock tick */
	uint64_t page;          /* bytes per page */
	double boot_now;        /* this refresh's time, in seconds since boot */
	bool want_jobs;         /* this refresh reads Slurm jobs */
	bool no_owner;          /* this refresh makes no stat of /proc/PID (proc_cache_want_owner) */
	uint32_t *jobs;         /* beside ents, once any refresh wanted them: JOB_UNREAD, 0, job */
	size_t jobs_cap;
	bool want_ctrs;         /* this refresh reads containers */
	struct ctr_ref **ctrs;  /* beside ents, once wanted: CTR_UNREAD, NULL (none), or owned */
	size_t ctrs_cap;
	struct exit_watch *ew;  /* a loop's: who is still the process read (exitwatch.c) */
};

static struct ctr_ref unread_ref;
#define CTR_UNREAD (&unread_ref)

static void ctr_drop(struct ctr_ref **r)
{
	if (*r != CTR_UNREAD)
		free(*r);
	*r = CTR_UNREAD;
}

struct proc_cache *proc_cache_new(void)
{
	struct proc_cache *pc = xcalloc(1, sizeof(struct proc_cache));
	pc->start = now_mono();
	pc->procfd = -2; /* opened by the first refresh that needs it */
	return pc;
}

static void free_chunks(struct chunk *c)
{
	while (c) {
		struct chunk *next = c->next;
		free(c);
		c = next;
	}
}

void proc_cache_free(struct proc_cache *pc)
{
	if (!pc)
		return;
	if (pc->procfd >= 0)
		close(pc->procfd);
	free(pc->ents);
	free(pc->slots);
	free_chunks(pc->chunks);
	free(pc->scratch);
	free(pc->jobs);
	for (size_t i = 0; pc->ctrs && i < pc->n; i++)
		ctr_drop(&pc->ctrs[i]);
	free(pc->ctrs);
	free(pc->st);
	exit_watch_free(pc->ew);
	for (size_t i = 0; i < pc->nusers; i++)
		free(pc->users[i].name);
	free(pc->users);
	free(pc);
}

static const char *proc_user_name(struct proc_cache *pc, uid_t uid)
{
	for (size_t i = 0; i < pc->nusers; i++)
		if (pc->users[i].uid == uid)
			return pc->users[i].name;
	char buf[256];
	char *name = xstrdup(user_name(uid, buf, sizeof buf)); /* pid.c: the one lookup */
	pc->users = grow_array(pc->users, &pc->users_cap, pc->nusers + 1, sizeof *pc->users);
	pc->users[pc->nusers++] = (struct user_ent){uid, name};
	return name;
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

static void text_drop(struct proc_cache *pc, struct proc_ent *e)
{
	if (e->text) {
		pc->live -= e->len;
		pc->garbage += e->len;
	}
	e->text = NULL;
	e->len = e->name_off = 0;
}

/* Called between refreshes, when no caller holds a text: moves the live ones together. */
static void text_compact(struct proc_cache *pc)
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
	free_chunks(old);
}

/* ---- the table ---- */

static uint32_t hash(unsigned pid)
{
	return pid * 2654435761U;
}

static void rehash(struct proc_cache *pc, size_t nslots)
{
	free(pc->slots);
	pc->nslots = nslots;
	pc->slots = xcalloc(pc->nslots, sizeof *pc->slots);
	for (size_t i = 0; i < pc->n; i++) {
		size_t h = hash(pc->ents[i].pid) & (pc->nslots - 1);
		while (pc->slots[h])
			h = (h + 1) & (pc->nslots - 1);
		pc->slots[h] = (unsigned)i + 1;
	}
}

/* This refresh's time since boot, what run times are reckoned from. */
static void boot_clock(struct proc_cache *pc)
{
	struct timespec ts;   /* start times count from boot, suspend included */
	clock_gettime(CLOCK_BOOTTIME, &ts);
	pc->boot_now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void proc_cache_begin(struct proc_cache *pc)
{
	if (pc->procfd == -2)
		pc->procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	text_compact(pc);
	if (pc->ew)
		exit_watch_begin(pc->ew);
	pc->gen++;
	pc->nseen = 0;
	pc->now_ms = (uint32_t)((now_mono() - pc->start) * 1000);
	if (pc->stats || pc->st)     /* pc->st: proc_lookup_stats may read some */
		boot_clock(pc);
}

/* Room for n entries before the lookups, so that a refresh that lists them grows the table and
 * its slots once instead of doubling its way there (and rehashing at each step). */
void proc_cache_expect(struct proc_cache *pc, size_t n)
{
	pc->ents = grow_array(pc->ents, &pc->cap, n, sizeof *pc->ents);
	size_t nslots = pc->nslots ? pc->nslots : 256;
	while (3 * nslots < 4 * (n + 1))
		nslots *= 2;
	if (nslots != pc->nslots)
		rehash(pc, nslots);
}

/* Processes no longer listed are forgotten, so the cache holds one refresh's worth. Their
 * texts stay where they are until the next proc_cache_begin. */
void proc_cache_end(struct proc_cache *pc)
{
	if (pc->nseen == pc->n)
		return;
	size_t k = 0;
	for (size_t i = 0; i < pc->n; i++) {
		if (pc->ents[i].gen == pc->gen) {
			if (pc->jobs)
				pc->jobs[k] = pc->jobs[i];
			if (pc->ctrs)
				pc->ctrs[k] = pc->ctrs[i];
			if (pc->st)
				pc->st[k] = pc->st[i];
			pc->ents[k++] = pc->ents[i];
		} else {
			text_drop(pc, &pc->ents[i]);
			if (pc->ctrs)
				ctr_drop(&pc->ctrs[i]);
		}
	}
	pc->n = k;
	size_t nslots = 256;
	while (3 * nslots < 4 * (pc->n + 1))
		nslots *= 2;
	rehash(pc, nslots);
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
	int fd = openat(pc->procfd >= 0 ? pc->procfd : AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
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
			close(fd);
			return -1;
		}
		len += (size_t)r;
		if ((size_t)r < want || len >= max)
			break;
	}
	close(fd);
	pc->scratch[len] = '\0';
	return (ssize_t)len;
}

/* The command line, its arguments joined by spaces, and argv[0], as one text. */
static void read_text(struct proc_cache *pc, struct proc_ent *e)
{
	char path[64];
	text_drop(pc, e);
	e->reread_ms = pc->now_ms + REREAD_AFTER / 2 + (uint32_t)((uint64_t)REREAD_AFTER * (hash(e->pid) >> 16) >> 16);
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
static void read_stats(struct proc_cache *pc, struct proc_ent *e, uint32_t now_ms)
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
			pc->ctrs[i] = CTR_UNREAD;
	}
}

void proc_cache_want_owner(struct proc_cache *pc, bool on)
{
	pc->no_owner = !on;
}

void proc_cache_watch_exits(struct proc_cache *pc)
{
	if (!pc->ew)
		pc->ew = exit_watch_new();
}

/* The Slurm job and the container of a process in /proc, those wanted and not yet read: one
 * read of its cgroup file, parsed by slurm.c and container.c. */
static void read_cgroup(struct proc_cache *pc, struct proc_ent *e)
{
	char path[64];
	size_t i = (size_t)(e - pc->ents);
	bool job = pc->want_jobs && pc->jobs[i] == JOB_UNREAD;
	bool ctr = pc->want_ctrs && pc->ctrs[i] == CTR_UNREAD;
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
static void refresh_ent(struct proc_cache *pc, struct proc_ent *e)
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
			read_stats(pc, e, pc->now_ms);
		return;
	}
	if (pc->ew)
		exit_watch_add(pc->ew, e->pid); /* before the stat: see exitwatch.c */
	if (fstatat(pc->procfd >= 0 ? pc->procfd : AT_FDCWD,
		    proc_path(pc, path, e->pid, NULL), &st, 0) != 0) {
		text_drop(pc, e);
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
		ctr_drop(&pc->ctrs[e - pc->ents]);
	if (!same || due)
		read_text(pc, e);
	if (pc->stats)
		read_stats(pc, e, pc->now_ms);
}

static struct proc_ent *find_ent(const struct proc_cache *pc, unsigned pid)
{
	for (size_t h = pc->nslots ? hash(pid) & (pc->nslots - 1) : 0; pc->nslots && pc->slots[h];
	     h = (h + 1) & (pc->nslots - 1))
		if (pc->ents[pc->slots[h] - 1].pid == pid)
			return &pc->ents[pc->slots[h] - 1];
	return NULL;
}

/* The stats part of a lookup's answer, when this refresh read them. */
static void stats_out(const struct proc_cache *pc, const struct proc_ent *e, struct proc_info *out)
{
	const struct stat_ent *s = pc->st ? &pc->st[e - pc->ents] : NULL;
	if (s && out->found && s->start && s->gen == pc->gen) {
		out->stat_valid = true;
		out->state = s->state;
		out->ppid = s->ppid;
		out->start = s->start;
		out->cpu_time = (double)s->cpu * pc->tick;
		out->rss = (uint64_t)s->rss * pc->page;
		out->elapsed = pc->boot_now - (double)s->start * pc->tick;
		if (out->elapsed < 0)
			out->elapsed = 0;
		out->cpu_valid = s->cpu_valid;
		out->cpu_pct = s->cpu_pct;
	}
}

void proc_lookup(struct proc_cache *pc, unsigned pid, struct proc_info *out)
{
	if (4 * (pc->n + 1) > 3 * pc->nslots) /* at most 3/4 full */
		rehash(pc, pc->nslots ? 2 * pc->nslots : 256);
	size_t h = hash(pid) & (pc->nslots - 1);
	struct proc_ent *e = NULL;
	for (; pc->slots[h]; h = (h + 1) & (pc->nslots - 1))
		if (pc->ents[pc->slots[h] - 1].pid == pid) {
			e = &pc->ents[pc->slots[h] - 1];
			break;
		}
	if (!e) {
		pc->ents = grow_array(pc->ents, &pc->cap, pc->n + 1, sizeof *pc->ents);
		if (pc->jobs) {
			size_t old = pc->jobs_cap;
			pc->jobs = grow_array(pc->jobs, &pc->jobs_cap, pc->cap, sizeof *pc->jobs);
			for (size_t i = old; i < pc->jobs_cap; i++)
				pc->jobs[i] = JOB_UNREAD;
			pc->jobs[pc->n] = JOB_UNREAD;
		}
		if (pc->ctrs) { /* slots from n on own nothing: a compaction copied them down */
			pc->ctrs = grow_array(pc->ctrs, &pc->ctrs_cap, pc->cap, sizeof *pc->ctrs);
			pc->ctrs[pc->n] = CTR_UNREAD;
		}
		if (pc->st) {
			pc->st = grow_array(pc->st, &pc->st_cap, pc->cap, sizeof *pc->st);
			pc->st[pc->n] = (struct stat_ent){0};
		}
		e = &pc->ents[pc->n];
		*e = (struct proc_ent){.pid = pid};
		pc->slots[h] = (unsigned)++pc->n;
	}
	if (e->gen != pc->gen) {
		e->gen = pc->gen;
		pc->nseen++;
		refresh_ent(pc, e);
	}
	bool found = pc->no_owner ? e->text != NULL : e->ident != 0;
	uint32_t job = 0;
	const struct ctr_ref *ctr = NULL;
	if ((pc->want_jobs || pc->want_ctrs) && found) {
		read_cgroup(pc, e);
		job = pc->want_jobs ? pc->jobs[e - pc->ents] : 0;
		ctr = pc->want_ctrs ? pc->ctrs[e - pc->ents] : NULL;
	}
	*out = (struct proc_info){.pid = pid, .found = found, .uid = e->uid, .slurm_job = job, .ctr = ctr,
				  .user = found && !pc->no_owner ? proc_user_name(pc, e->uid) : NULL,
				  .cmdline = e->text, .name = e->text ? e->text + e->name_off : NULL};
	stats_out(pc, e, out);
}

void proc_lookup_stats(struct proc_cache *pc, unsigned pid, struct proc_info *out)
{
	if (!pc->st) {
		bool on = pc->stats;
		proc_cache_stats(pc, true);   /* the array and the clock's units, not the mode */
		pc->stats = on;
		/* proc_cache_begin read no clock, there being no stats then: without it every run
		 * time of top's first frame was 0:00 (now minus a start, clamped). */
		boot_clock(pc);
	}
	proc_lookup(pc, pid, out);
	struct proc_ent *e = find_ent(pc, pid);
	if (!e || !out->found || pc->st[e - pc->ents].gen == pc->gen)
		return;
	/* Read now, perhaps well after the refresh began (a row scrolled into view): CPU use is
	 * reckoned from this moment. */
	read_stats(pc, e, (uint32_t)((now_mono() - pc->start) * 1000));
	stats_out(pc, e, out);
}
