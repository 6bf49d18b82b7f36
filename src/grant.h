/* grant.h: getting a lease: which GPUs may be chosen (-g, the caller's CUDA_VISIBLE_DEVICES,
 * admin reservations), the queue, waiting without spending CPU, and the job's environment.
 * Shared by `run` and `env`. */
#ifndef GPUCTL_GRANT_H
#define GPUCTL_GRANT_H

#include "config.h"
#include "gpu.h"
#include "lease.h"

struct grant_req {
	unsigned count;          /* 0: as many as -g names, else 1 */
	const char *gpus;        /* -g LIST */
	uint64_t min_free_mib;
	int max_util;            /* -1: the config's */
	bool ignore_usage;
	int prefer;              /* -1: the config's */
	double wait;             /* <0: do not wait; 0: forever; >0: seconds */
	const char *name;
	const char *kind;        /* "run" or "env" */
	const char *command;
	bool dry_run;
	const char *who;         /* "gpuctl run" for messages */
};

struct grant {
	struct state st;
	struct gpu_set *set;
	size_t n;
	size_t pos[LEASE_MAX_GPUS];      /* chosen GPUs: positions in set, by index */
	struct lease_lock locks[LEASE_MAX_GPUS];
	struct lease_rec rec;
	unsigned long long queued_at;    /* CLOCK_REALTIME ns it joined the queue; 0: did not wait */
	unsigned long long leased_at;    /* CLOCK_REALTIME ns the GPUs were locked */
};

/* EXIT_OK: the GPUs are locked and the global lock is still held (call grant_commit once the
 * holder's pid is known). Otherwise an EXIT_* code, with err (or, for dry runs, nothing held). */
int grant_acquire(struct gpu_set *set, const struct config *cfg, const struct grant_req *rq,
		  struct grant *g, struct gpu_error *err);
bool grant_commit(struct grant *g, pid_t pid, pid_t bound, struct gpu_error *err);
/* Release this process's hold; the record goes once no process holds the locks any more. */
void grant_end(struct grant *g);
/* Closes the state and frees what grant_acquire allocated, without touching locks or records
 * (a forked holder's parent, a dry run). */
void grant_free(struct grant *g);
/* NAME=VALUE strings for the job (caller frees each and the array). */
char **grant_env(const struct grant *g, bool uuid);
void grant_env_free(char **env);

#endif
