/* proc-cache.h: the process cache's own structures, shared by its two halves only (machine/:
 * proc.c, the design, the table and the lookups; proc-read.c, the texts and the reading of
 * /proc). Callers use proc.h. */
#ifndef GPUCTL_PROC_CACHE_H
#define GPUCTL_PROC_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ctr_ref;
struct exit_watch;

#define REREAD_AFTER 4000U     /* ms */
/* review 4: the bytes of a command line kept (the rest cut, "..." said). One user's GPU process
 * with a command line of megabytes (ARG_MAX allows 6 MiB) cost every refresh that much, and
 * in the daemon's snapshot a record over one message (64 KiB) failed every user's view. */
#define CMDLINE_MAX 4096
#define CHUNK (64 * 1024)
#define JOB_UNREAD 0xFFFFFFFFU

/* The directory asked again for at most this many uids a refresh, the longest overdue first (the
 * rest next time): a refresh of a daemon's view, in its event loop, is not held up by a slow
 * LDAP for every uid at once, and no uid waits for good behind others. */
#define NAME_ASKS 8

struct user_ent {
	uid_t uid;
	bool retry;             /* its number stood in, or the ask failed: asked after NAME_TTL_MISS */
	bool ask;               /* due, and among this refresh's NAME_ASKS (users_due) */
	uint32_t at_ms;         /* the refresh's now_ms when the directory was asked */
	unsigned used;          /* the refresh that last asked for it (pruned 65-128 refreshes on) */
	char *name;
};

struct old_name {            /* a name replaced (a user renamed, or named at last) */
	char *name;
	unsigned gen;           /* the refresh that replaced it: freed two refreshes on */
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

/* The /proc files read, closed together: a close_range() over each run of consecutive
 * descriptors costs about 10% less than a close() of each (16 x 1,000: 2,000 files a refresh).
 * Only where RLIMIT_NOFILE is at least PROC_CLOSE_MIN_NOFILE (each closed at once below it), and
 * the batch is closed before NSS is asked for a name (it opens files of its own). */
#define PROC_CLOSE_BATCH 32
#define PROC_CLOSE_MIN_NOFILE 256

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
	struct old_name *old_names;
	size_t nold, old_cap;
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
	int closing[PROC_CLOSE_BATCH]; /* files read, to be closed together (proc_close_flush) */
	unsigned nclosing;
	bool batch_closes;      /* this refresh batches them (the limit leaves room) */
};

/* The table's hash; it also spreads the command lines' rereads over refreshes. */
static inline uint32_t proc_hash(unsigned pid)
{
	return pid * 2654435761U;
}

/* proc-read.c */
extern struct ctr_ref proc_ctr_unread;   /* a container not yet read: compared by address */
#define PROC_CTR_UNREAD (&proc_ctr_unread)
void proc_ctr_drop(struct ctr_ref **r);
void proc_texts_free(struct chunk *c);
void proc_text_drop(struct proc_cache *pc, struct proc_ent *e);
/* Closes the files read and not yet closed: at a refresh's end, when the batch is full, when
 * an open fails with EMFILE, before NSS is asked for a name, and before the cache is freed. */
void proc_close_flush(struct proc_cache *pc);
/* Between refreshes, when no caller holds a text: moves the live ones together. */
void proc_text_compact(struct proc_cache *pc);
/* Parent, start, CPU and memory from /proc/PID/stat, at now_ms (cache clock). */
void proc_read_stats(struct proc_cache *pc, struct proc_ent *e, uint32_t now_ms);
/* The Slurm job and container of a process in /proc, those wanted and not yet read. */
void proc_read_cgroup(struct proc_cache *pc, struct proc_ent *e);
/* One stat per process and refresh: owner, identity, the command line when new or due. */
void proc_refresh_ent(struct proc_cache *pc, struct proc_ent *e);

#endif
