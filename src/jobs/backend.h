/* jobs/: rank 4, detached jobs as the CLI sees them (the runner that runs local ones is runner/,
 * above). The design is this header's.
 *
 * backend.h: where a detached job runs, behind one table of functions (as machine/gpu.h puts the
 * GPUs behind one): this machine, through the user's job runner and the shared daemon
 * (local.c), or Slurm, through sbatch, squeue, scontrol and scancel (slurm-jobs.c). The
 * commands (submit, jobs, logs, cancel, wait) read their options, then work through this table
 * only: they branch to a backend in one place, the kind of each id ("17" is this machine's,
 * "slurm:42" Slurm's; set.c) or, for submit, --slurm/--local, the profile or the config's
 * `backend` key.
 *
 * A backend's view of the user's jobs (struct jobs_of, its own) hands out struct job rows it
 * owns, kept current from the backend's source of truth, and can watch jobs end: watch_fd becomes
 * readable when there is news (the runner's answer; for Slurm, a timer for the next look), and
 * watch_step takes it in. So one loop (set.c) serves `wait`, `cancel` and `logs -f` for both,
 * and for a mix of both. */
#ifndef GPUCTL_JOBBACKEND_H
#define GPUCTL_JOBBACKEND_H

#include "config/config.h"
#include "jobs/job.h"
#include "lease/grant.h"

/* A job named on the command line. */
struct job_ref {
	enum job_kind kind;
	uint64_t id;
};

/* "17", "slurm:42" and lists of them ("3,5,slurm:7"), added to *refs (each once). false: why. */
bool parse_job_refs(const char *s, struct job_ref **refs, size_t *n, char *why, size_t whylen);
/* The id as the commands print and take it: "17", "slurm:42". */
const char *job_id_text(enum job_kind kind, uint64_t id, char *buf, size_t len);

/* What every job of one `gpuctl submit` shares. */
struct submit_req {
	struct lease_opts o;
	const struct config *cfg;
	const char *backend_why;     /* what chose the backend, for messages ("--slurm", ...) */
	struct job_ref *after;
	size_t nafter;
	unsigned long retries;
	char *log, *cwd;             /* absolute */
	unsigned umask;
	uint64_t again;              /* --again ID (this machine's jobs) */
	void *conn;                  /* the backend's, from one job to the next */
	const char *notify;          /* --notify, or [defaults] notify (issue 24); NULL: none */
};

struct jobs_of;

struct job_backend {
	const char *name;            /* as the configuration spells it */
	enum job_kind kind;
	/* The user's jobs of this kind (resume: records a stopped runner left are handed to a new
	 * one first). NULL: err. */
	struct jobs_of *(*open)(bool resume, struct gpu_error *err);
	void (*close)(struct jobs_of *s);
	/* Every job of the user's, current (`jobs` without ids); all: other users' queued and
	 * running ones too, where the backend knows them. *rows belong to s. EXIT_OK, or a code
	 * with the message printed (the rows still listed, with their last known state). */
	int (*list)(struct jobs_of *s, bool all, struct job ***rows, size_t *n);
	/* The caller's jobs with these ids, current, into out[] (they belong to s); otherwise the
	 * message is printed, prefixed with who, and its code returned: EXIT_DENIED (another
	 * user's), EXIT_NO_SUCH_JOB, or the backend's failure. */
	int (*find)(struct jobs_of *s, const uint64_t *ids, size_t n, struct job **out, const char *who);
	/* The job's output, open for reading, and its path for messages; -1 with errno (EPERM: a
	 * file another user owns, EINVAL: not a regular file, neither of which is read). */
	int (*log_open)(struct jobs_of *s, const struct job *j, char **path);
	/* Asks to be told when j (one of s's) ends; cancel: end it first (a queued job leaves its
	 * queue, a running one gets SIGTERM and later SIGKILL: after grace seconds here, Slurm's
	 * KillWait there) and *bound is raised to when it should have ended. false: err. */
	bool (*watch)(struct jobs_of *s, struct job *j, bool cancel, double grace, double *bound,
		      struct gpu_error *err);
	int (*watch_fd)(struct jobs_of *s);       /* poll it for news; -1: none */
	size_t (*watching)(struct jobs_of *s);    /* jobs watched that have not ended yet */
	/* Takes in the news: the watched jobs are updated. false: err, and the watch is over. */
	bool (*watch_step)(struct jobs_of *s, struct gpu_error *err);
	/* Forgets the user's finished jobs (their records and their own logs): how many, and how
	 * many were kept (jobs still queued run after them). */
	bool (*clean)(struct jobs_of *s, uint64_t *gone, uint64_t *kept, struct gpu_error *err);
	/* Refuses what this backend cannot do with the request: EXIT_USAGE and err's message,
	 * which the command prints as a usage error. */
	int (*submit_check)(struct submit_req *rq, struct gpu_error *err);
	/* Submits one job (argv; command: as shown); its id in *id. The code and err on failure. */
	int (*submit)(struct submit_req *rq, char **argv, const char *command, uint64_t *id,
		      struct gpu_error *err);
	void (*submit_end)(struct submit_req *rq);
	/* No question to the backend's source of truth lasts past until (monotonic; wait
	 * --timeout): one cut short by it fails with EXIT_TIMEOUT. NULL: the backend's answers are
	 * bounded otherwise (the runner's by GPUCTL_DAEMON_TIMEOUT). */
	void (*deadline)(struct jobs_of *s, double until);
};

extern const struct job_backend job_backend_local, job_backend_slurm;
/* `gpuctl jobs` (issue 22): the local backend, when opened, asks the daemon for the places of
 * the user's jobs in the queue before it reads their records, and takes the answer when it
 * lists them (the daemon's round trip hidden behind the reading). */
void job_local_prefetch_places(void);
/* `gpuctl jobs`: the local backend, when opened, makes a new copy of the records where the one
 * there is not current (cache.c); other commands only use a current one. */
void job_local_make_copy(void);
const struct job_backend *job_backend(enum job_kind kind);

/* ---- set.c: the jobs a command names, across backends ---- */

struct jobset {
	struct jobs_of *of[JOB_NKINDS];  /* opened as needed */
	struct job **jobs;               /* in the order named */
	struct job_ref *refs;
	size_t n;
	bool asked;                      /* jobset_watch has asked the backends */
	double until;                    /* set before jobset_find: the backends' deadline (0: none) */
};

/* The ids n words give ("17", "slurm:42", "3-5"); false: err says why (EXIT_USAGE). */
bool jobset_ids(int nwords, char *const *words, struct job_ref **refs, size_t *n,
		struct gpu_error *err);
/* The backend's view, opened once. NULL: err printed (prefixed with who). */
struct jobs_of *jobset_of(struct jobset *js, enum job_kind kind, bool resume, const char *who,
			  int *rc);
/* Finds every job the refs name (taken over by js); EXIT_OK, or the first failure's code (the
 * message printed). */
int jobset_find(struct jobset *js, struct job_ref *refs, size_t n, bool resume, const char *who);
/* Watches (wait, or cancel first) every job of js not ended yet, until all have ended or until
 * (monotonic; 0: no limit). 1: all ended; 0: time ran out; -1: err. extra_fd (>= 0) is polled
 * too and ends the wait with 2 when readable (logs -f: the log grew). The backends are asked
 * once; a second call only waits. */
int jobset_watch(struct jobset *js, bool cancel, double grace, double until, int extra_fd,
		 struct gpu_error *err);
/* Only the watching, after jobset_watch asked: the same return values. */
int jobset_wait(struct jobset *js, double until, int extra_fd, struct gpu_error *err);
void jobset_free(struct jobset *js);

#endif
