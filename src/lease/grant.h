/* grant.h: getting a lease from the daemon: which GPUs may be chosen (-g, the caller's
 * CUDA_VISIBLE_DEVICES), for `run` and `env` the one request and the wait in the queue (no CPU,
 * signals honoured, a progress line on a terminal, a daemon restart survived; lreq.h holds the
 * exchange itself, which the job runner shares), the descriptors that are the lease, and the
 * job's environment. */
#ifndef GPUCTL_GRANT_H
#define GPUCTL_GRANT_H

#include "config/config.h"
#include "machine/gpu.h"
#include "base/proto.h"


struct grant_req {
	unsigned count;          /* 0: as many as -g names, else 1 */
	const char *gpus;        /* -g LIST */
	uint64_t min_free_mib;
	int max_util;            /* -1: the daemon's rule */
	bool ignore_usage;
	int prefer;              /* -1: the config's */
	double wait;             /* <0: do not wait; 0: forever; >0: seconds */
	const char *name;
	const char *label;       /* what the daemon shows for it (NULL: the name) */
	const char *kind;        /* "run", "env" or "job" */
	const char *command;
	bool dry_run;
	const char *who;         /* "gpuctl run" for messages */
	char *const *env;        /* the job's environment, where it is not this process's (the
				  * runner's jobs): its CUDA_VISIBLE_DEVICES restricts the choice */
	char *const *profile_env;  /* the profile's NAME=VALUE for the job (env.NAME keys),
				   * NULL-terminated; or NULL */
};

struct grant {
	struct gpu_set *set;
	size_t n;
	size_t pos[GPU_MAX];      /* chosen GPUs: positions in set, in nvidia-smi order */
	char id[17], token[33];
	int fds[PROTO_MAX_FDS];          /* the FIFO's write end, then one lock per GPU */
	size_t nfds;
	char *name;
	char *socket;                    /* the daemon's, for the holder's commit */
	unsigned long long queued_at;    /* CLOCK_REALTIME ns it joined the queue; 0: did not wait */
	unsigned long long leased_at;    /* CLOCK_REALTIME ns the lease was granted */
	double waited;                   /* seconds spent in the queue */
	char **profile_env;              /* the profile's variables (grant_env adds them) */
};

/* The GPUs rq may be given (cand: positions in set) and how many it wants. false: err says why
 * (no such GPU, fewer candidates than wanted). */
bool grant_candidates(struct gpu_set *set, const struct grant_req *rq, uint64_t *cand,
		      unsigned *count, struct gpu_error *err);
/* The daemon's `busy` answer, told the way a person reads it, into err (EXIT_BUSY). */
void grant_explain_busy(const struct gpu_set *set, bool ignore_usage, unsigned count,
			const struct msg *m, struct gpu_error *err);
/* EXIT_OK: the lease is held in g->fds (for dry runs: g->pos says what would be chosen).
 * Otherwise an EXIT_* code with err, and nothing held. */
int grant_acquire(struct gpu_set *set, const struct config *cfg, const struct grant_req *rq,
		  struct grant *g, struct gpu_error *err);
/* In the process that will hold the lease (the job just before exec, env's holder): keep the
 * lease's descriptors across exec, and tell the daemon this process holds it. */
void grant_hold(const struct grant *g, pid_t bound);
/* Closes this process's copies of the lease (the lease lives on in the holder) and frees g. */
void grant_free(struct grant *g);
/* NAME=VALUE strings for the job (free with grant_env_free): the lease's variables, then the
 * profile's (env.NAME keys). The one place a job's environment is made: run, env (every
 * format) and whatever starts a job later get the same. */
char **grant_env(const struct grant *g, bool uuid);
/* base (an environment) with the profile's variables merged in, as grant_env gives them: for a
 * job started elsewhere from this environment (submit's). The array is new (free it alone);
 * its strings are base's and profile's. */
char **grant_env_profile(char *const *base, char *const *profile);
void grant_env_free(char **env);

#endif
