/* slurm-jobs.h: Slurm as a backend of detached jobs (`gpuctl submit --slurm`): the request turned
 * into sbatch's arguments, and Slurm's answers (squeue, scontrol) turned into gpuctl's job states.
 * The parsers and the argument builder are pure (slurm-spec.c, unit-tested in
 * tests/unit/test_slurmjobs.c); slurm-jobs.c runs the tools (exec_run: an argv, never a shell)
 * and keeps the records.
 *
 * What is read, and why so: sacct needs slurmdbd, which many sites (and the tests) do not run, so
 * the job's state comes from slurmctld, through `squeue -t all`, which lists ended jobs too until
 * slurmctld forgets them (MinJobAge, 300 s by default); only then is sacct asked (slurm-sacct.c),
 * and where it fails the job is `unknown`. squeue is asked only for fields that hold
 * no free text (no job name, command or path), separated by '|', with Slurm's Reason last, so a
 * job name, even another user's, cannot fake a field. Names, commands and log paths come from
 * gpuctl's own record of what it submitted; for a job gpuctl did not submit, from `scontrol show
 * job`, once its owner is known to be the caller. */
#ifndef GPUCTL_SLURM_JOBS_H
#define GPUCTL_SLURM_JOBS_H

#include "config/config.h"
#include "jobs/job.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* ---- a tool's failure (slurm-spec.c) ---- */

/* err: what failed, then the tool's own words (one line, escaped), then hint. EXIT_SLURM. */
void slurm_fail(struct gpu_error *err, const char *what, const struct strbuf *e, const char *hint);

/* ---- squeue ---- */

/* The -O format gpuctl asks squeue for, one job a line. */
#define SQUEUE_FORMAT "JobID:|,UserID:|,State:|,exit_code:|,SubmitTime:|,StartTime:|,EndTime:|," \
		      "NodeList:|,Reason:|"

struct squeue_row {
	uint64_t id;                 /* of an array's task (ID_TASK): the array's */
	bool array;                  /* a task, or tasks, of job array id */
	uint32_t uid;
	char state[32];              /* PENDING, RUNNING, COMPLETED, ... */
	long status;                 /* the wait status (exit << 8 | signal); -1: none */
	uint64_t submitted, started, ended;   /* CLOCK_REALTIME ns; 0: none */
	char nodes[256];             /* empty: it never had an allocation */
	char reason[128];            /* Slurm's Reason (None, Resources, Dependency, ...) */
};

/* One line of squeue's output in SQUEUE_FORMAT; false when it is not one. */
bool squeue_parse_line(const char *line, size_t len, struct squeue_row *r);
/* Every line of text, as rows by id into *rows (*nrows of them). false (why) when a line is not a
 * row or two rows have one id (other than an array's tasks): the answer is not to be read. */
bool squeue_parse(const char *text, struct squeue_row **rows, size_t *nrows, char *why, size_t whylen);
/* A field of len bytes as a number (no more than max) / a string (shorter than cap). */
bool slurm_field_u64(const char *s, size_t len, uint64_t max, uint64_t *v);
bool slurm_field_copy(char *dst, size_t cap, const char *s, size_t len);
/* "2025-06-01T14:03:00" (local time, as Slurm prints it) in ns; 0 for N/A, Unknown, NONE. */
uint64_t slurm_time_ns(const char *s);
/* What the row means in gpuctl's terms, into j: state, exit status or signal, times, node,
 * Slurm's state word, and a reason where Slurm gave one worth showing. */
void slurm_row_apply(const struct squeue_row *r, struct job *j);

/* ---- sacct (Slurm's accounting, through slurmdbd; slurm-sacct.c) ---- */

/* The --format gpuctl asks `sacct --parsable2 --noheader` for: no free text (no job name). */
#define SACCT_FORMAT "JobIDRaw,UID,State,ExitCode,Submit,Start,End,NodeList"
/* sacct's answer as one row per job (its steps' lines folded in: a signalled batch script's
 * status from its .batch line where the job's own line says 0:0), by squeue_row's fields (Reason
 * None). false (why) when a line is not of the format, a job or its batch step has two lines, or a
 * step has no job line: no row of such an answer is to be taken. */
bool sacct_parse(const char *text, struct squeue_row **rows, size_t *nrows, char *why, size_t whylen);
/* Asks sacct about jobs ids[n] (that squeue no longer knows), each no longer than tool_seconds
 * nor past until (monotonic; 0: none): acct[i] is Slurm's row of ids[i] when it has ended, is the
 * caller's and was submitted within 10 minutes of submitted[i] (0: not known); else acct[i].id is
 * 0 and why says why (sacct failed, as it does without slurmdbd; its answer odd; no such job).
 * false: until passed (err, EXIT_TIMEOUT). */
bool slurm_accounting(const uint64_t *ids, const uint64_t *submitted, size_t n, double until,
		      double tool_seconds, struct squeue_row *acct, char *why, size_t whylen,
		      struct gpu_error *err);

/* ---- scontrol show job [-d] ID ---- */

struct scontrol_job {
	char *name, *command, *workdir, *stdout_path;   /* NULL: not shown */
	char gpus[128];              /* GRES IDX on node ("0-1,3"), "" when none */
};
/* The multi-line form of one job (the last of a key wins: what a name or path could fake comes
 * before Slurm's own line). */
void scontrol_parse_job(const char *text, const char *node, struct scontrol_job *sj);
void scontrol_job_free(struct scontrol_job *sj);
/* Slurm's index list ("0-1,3") into gpus[]; false when it is not one. */
bool slurm_idx_list(const char *s, unsigned *gpus, unsigned *n, unsigned max);

/* ---- sbatch ---- */

/* --min-free-memory on Slurm: the site's GPU types or node features with their memory per GPU,
 * struct mem_map (config.h: [slurm] gres_by_memory / features_by_memory). Slurm gives a job
 * whole GPUs of its own, so the memory free to it is the GPU's. */
struct sbatch_req {
	unsigned count;              /* GPUs */
	const char *name;            /* NULL: the program's base name */
	const char *log;             /* absolute path, or NULL: slurm-%j.out in cwd */
	const char *cwd;
	const uint64_t *after;       /* Slurm job ids */
	size_t nafter;
	uint64_t min_free_mib;       /* 0: none */
	const struct mem_map *gres_mem, *feature_mem;   /* the site's mappings, or NULL */
};
/* The script sbatch runs (given on its stdin, named /dev/stdin): constant, so no user string is
 * ever read by a shell; the command is its arguments, run with exec "$@". */
extern const char sbatch_script[];
/* sbatch's argv for rq and the command (NULL-terminated; free each string and the array with
 * slurm_argv_free), or NULL with why set (--min-free-memory that the site's mapping cannot meet). */
char **sbatch_argv(const struct sbatch_req *rq, char *const *command, char *why, size_t whylen);
void slurm_argv_free(char **argv);
/* A path as sbatch's --output takes it: its '%' doubled (the path is meant as written), unless it
 * holds a backslash, which turns Slurm's patterns off. */
char *slurm_path_pattern(const char *path);
/* The job id of `sbatch --parsable` ("42" or "42;cluster"); false when there is none. */
bool sbatch_parse_id(const char *out, uint64_t *id);

/* ---- the backend's halves: slurm-jobs.c (the user's jobs, watching them) and slurm-submit.c ---- */

/* Each is the table's entry of that name (backend.h says what it does); slurm.c is the table. */
struct jobs_of;
struct submit_req;
struct jobs_of *slurm_jobs_open(bool resume, struct gpu_error *err);
void slurm_jobs_close(struct jobs_of *s);
int slurm_jobs_list(struct jobs_of *s, bool all, struct job ***rows, size_t *n);
int slurm_jobs_find(struct jobs_of *s, const uint64_t *ids, size_t n, struct job **out, const char *who);
int slurm_jobs_log_open(struct jobs_of *s, const struct job *j, char **path);
bool slurm_jobs_watch(struct jobs_of *s, struct job *j, bool cancel, double grace, double *bound,
		      struct gpu_error *err);
int slurm_jobs_watch_fd(struct jobs_of *s);
size_t slurm_jobs_watching(struct jobs_of *s);
bool slurm_jobs_watch_step(struct jobs_of *s, struct gpu_error *err);
bool slurm_jobs_clean(struct jobs_of *s, uint64_t *gone, uint64_t *kept, struct gpu_error *err);
void slurm_jobs_deadline(struct jobs_of *s, double until);
/* The directory of gpuctl's records of Slurm jobs (submit writes one). */
int slurm_jobs_dirfd(const struct jobs_of *s);
int slurm_submit_check(struct submit_req *rq, struct gpu_error *err);
int slurm_submit(struct submit_req *rq, char **argv, const char *command, uint64_t *id,
		 struct gpu_error *err);
void slurm_submit_end(struct submit_req *rq);

#endif
