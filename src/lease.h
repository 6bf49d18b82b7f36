/* lease.h: kernel-backed GPU leases. A lease on a GPU is flock(LOCK_EX) on the never-unlinked file
 * STATE/UUID.lock; it lasts while any process holds a descriptor of it (the job inherits it),
 * so a crash can never leave a GPU locked. A record file STATE/lease-ID says who holds what; its
 * owner is the holder's uid, which nobody can forge for another user. */
#ifndef GPUCTL_LEASE_H
#define GPUCTL_LEASE_H

#include "gpu.h"
#include "util.h"

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#define LEASE_MAX_GPUS GPU_MAX

struct lease_lock {
	char uuid[96];
	dev_t dev;
	ino_t ino;
	int fd;                  /* -1 in records read from disk */
};

struct lease_rec {
	char id[40];
	char kind[8];            /* "run" or "env" */
	uid_t uid;
	char user[64];
	pid_t pid;               /* the job (run) or the holder process (env) */
	pid_t gpuctl_pid;
	pid_t bound_pid;         /* env: the shell the lease is bound to */
	time_t since;
	char *name, *command;
	size_t nlocks;
	struct lease_lock locks[LEASE_MAX_GPUS];
	bool live;
};

struct lease_list {
	struct lease_rec *recs;
	size_t n;
};

/* The set of flock'ed inodes, from /proc/locks. */
struct lockset {
	struct lockkey { unsigned major, minor; unsigned long ino; } *keys;
	size_t n;
	bool usable;             /* /proc/locks names our own lock: trust it (not on every fs) */
};

struct state {
	char *dir;
	int global_fd;           /* -1 unless held */
};

/* Creates the state directory (sticky, world-writable, like /tmp) when missing. */
bool state_open(struct state *st, const char *dir, struct gpu_error *err);
void state_close(struct state *st);
/* The global lock serialises choosing and acquiring: all or nothing, and fair. */
bool state_lock(struct state *st, bool exclusive, struct gpu_error *err);
void state_unlock(struct state *st);

void lockset_load(struct lockset *ls, const struct state *st);
void lockset_free(struct lockset *ls);
bool lockset_has(const struct lockset *ls, dev_t dev, ino_t ino);

/* Reads every record and decides which are live (needs the global lock for the self-test). */
void lease_list_load(struct lease_list *l, const struct state *st, const struct lockset *ls);
void lease_list_free(struct lease_list *l);
/* The live record that holds GPU uuid, or NULL. */
const struct lease_rec *lease_holder(const struct lease_list *l, const char *uuid);
/* GPU uuid is leased: its lock file is locked or a live record claims it. Global lock held. */
bool lease_gpu_busy(const struct state *st, const char *uuid, const struct lease_list *l,
		    const struct lockset *ls);

/* Under the global lock: lock every GPU or none. Returns false with err when one is busy. */
bool lease_acquire(const struct state *st, const char *const *uuids, size_t n,
		   const struct lease_list *l, struct lease_lock *out, struct gpu_error *err);
void lease_release(struct lease_lock *locks, size_t n);
/* Writes the record (atomically, by rename); fills rec->id. */
bool lease_record_write(const struct state *st, struct lease_rec *rec, struct gpu_error *err);
void lease_record_remove(const struct state *st, const char *id);
/* Removes the caller's own records that are no longer live. */
void lease_gc(const struct state *st, const struct lease_list *l);
void lease_new_id(char id[40]);

#endif
