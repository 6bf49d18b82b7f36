/* choose.h: what a lease request starts from and what the job gets (choose.c): the GPUs a
 * request may choose among, why GPUs were not free, and the job's environment. It stands below
 * the exchange (request.c explains a `busy` with it) and the wait (grant.c asks it for the
 * candidates), and calls neither. */
#ifndef GPUCTL_CHOOSE_H
#define GPUCTL_CHOOSE_H

#include "lease/request.h"

/* The GPUs rq may be given (cand: positions in set) and how many it wants. false: err says why
 * (no such GPU, fewer candidates than wanted). */
bool grant_candidates(struct gpu_set *set, const struct grant_req *rq, uint64_t *cand,
		      unsigned *count, struct gpu_error *err);
/* The daemon's `busy` answer, told the way a person reads it, into err (EXIT_BUSY). */
void grant_explain_busy(const struct gpu_set *set, bool ignore_usage, unsigned count,
			const struct msg *m, struct gpu_error *err);
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
