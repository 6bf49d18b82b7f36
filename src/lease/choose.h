/* choose.h: what a lease request starts from and what the job gets (choose.c): the request
 * (struct grant_req) and the grant (struct grant), the GPUs a request may choose among, why GPUs
 * were not free, and the job's environment. It stands below the exchange (request.c explains a
 * `busy` with it) and the wait (grant.c asks it for the candidates), and uses neither. */
#ifndef GPUCTL_CHOOSE_H
#define GPUCTL_CHOOSE_H

#include "config/config.h"
#include "machine/gpu.h"
#include "base/proto.h"

/* What a request asks: built by the commands (cmd/leaseopts.c) and the runner, sent by
 * request.c, and the start of the choice here. */
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
	bool keep_conn;          /* run: the grant's connection kept for the job's commit */
	char *const *env;        /* the job's environment, where it is not this process's (the
				  * runner's jobs): its CUDA_VISIBLE_DEVICES restricts the choice */
	char *const *profile_env;  /* the profile's NAME=VALUE for the job (env.NAME keys),
				   * NULL-terminated; or NULL */
	double time_limit;       /* --time: seconds the lease may last; 0: the daemon's default
				  * (issue 24) */
	uint64_t mem_mib;        /* memory shares (issue 23): --mem, a claim on each GPU; 0: whole */
	const char *mig_uuid;    /* MIG instances (issue 23): -g MIG-<uuid> */
	const char *mig_slot;    /* -g GPU:INSTANCE */
	const char *mig_profile; /* --mig PROFILE */
};

/* What a granted request holds: filled by request.c (lreq_on_message), freed there
 * (grant_free); the job's environment is made from it here. */
struct grant {
	struct gpu_set *set;
	size_t n;
	size_t pos[GPU_MAX];      /* chosen GPUs: positions in set, in nvidia-smi order */
	char id[17], token[33];
	int fds[PROTO_MAX_FDS];          /* the FIFO's write end, then one lock per GPU */
	size_t nfds;
	char *name;
	char *socket;                    /* the daemon's, for the holder's commit */
	bool self_ok;                    /* the daemon takes a commit on the grant's connection,
					  * with the sender's credentials (spawn.h) */
	bool has_conn;                   /* conn is the grant's connection, kept (grant_req's
					  * keep_conn): the job commits on it, then the lease is
					  * watched on it (lwatch_open) */
	bool conn_private;               /* to a private daemon */
	int conn;
	unsigned long long queued_at;    /* CLOCK_REALTIME ns it joined the queue; 0: did not wait */
	unsigned long long leased_at;    /* CLOCK_REALTIME ns the lease was granted */
	double waited;                   /* seconds spent in the queue */
	char **profile_env;              /* the profile's variables (grant_env adds them) */
	/* -- time limits (issue 24) -- */
	unsigned long long until_ns;     /* CLOCK_REALTIME ns the lease ends; 0: no limit */
	double grace;                    /* SIGTERM at until, SIGKILL this much later */
	uint64_t mem_mib, mem_total_mib; /* memory shares: the claim (0: whole GPUs) and the least
					  * memory of its GPUs (0: unknown) */
	bool stop_over;                  /* share_overuse = stop: the job is stopped over its claim */
	bool mps;                        /* its GPUs run MPS (the admin's share_mps) */
	char mig_uuid[96];               /* MIG instances: the instance leased ("": none) */
	/* issue 26: the daemon's words on the set (its offer's placement), the CPUs local to its
	 * GPUs and their NUMA nodes ("" where the daemon's topology does not say) */
	char placement[512], cpus[1024], numa[64];
};

/* The machine as the daemon's `gpus` answer describes it (index, UUID, PCI bus id, state,
 * compute capability, cores, MIG mode and devices, name), validated word by word: what -g,
 * CUDA_VISIBLE_DEVICES and the job's environment need, without loading NVML in this process
 * (a job forked from it inherits no driver library). Free with gpu_set_free. NULL: err says
 * why. */
struct gpu_set *grant_machine_read(const struct msg *m, struct gpu_error *err);
/* The GPUs rq may be given (cand: positions in set) and how many it wants. false: err says why
 * (no such GPU, fewer candidates than wanted). */
bool grant_candidates(struct gpu_set *set, const struct grant_req *rq, uint64_t *cand,
		      unsigned *count, struct gpu_error *err);
/* Whether rq may be given any of the machine's GPUs: no -g, no CUDA_VISIBLE_DEVICES in the
 * job's environment, not inside a Slurm job (grant_candidates then excludes only GPUs that
 * cannot be leased at all). */
bool grant_unrestricted(const struct grant_req *rq);
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
