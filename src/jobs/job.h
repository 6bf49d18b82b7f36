/* job.h: detached jobs (`gpuctl submit`, `jobs`, `logs`, `cancel`, `wait`): what a job is, the
 * files a user's jobs leave behind, and how commands reach the user's job runner.
 *
 * Each user has one job runner per machine (runner.h): it holds the jobs' requests in the shared
 * daemon's queue, starts each job when its GPUs are granted, and records how it ended. Everything
 * lives in the user's own directory, $XDG_STATE_HOME/gpuctl/jobs/HOST (~/.local/state/...; per
 * host, since home directories are often shared between machines), mode 0700, files 0600:
 *   ID.job       the record (proto.h format), replaced atomically (a temporary file renamed over
 *                it) at each change; the runner is its only writer once it exists
 *   ID.spec      what to run: arguments and environment, NUL-separated (spec_build), written once
 *   ID.log       stdout and stderr as written, unless --log named another file
 *   runner.lock  flock'ed by the live runner; runner.sock its socket; runner.log its messages
 *   .cache/records  a copy of every record, read by `jobs` while it is current (cache.c)
 * Nothing there is trusted unless it is a regular file of the user's own. Job ids come from the
 * daemon (`jobid`), so an id names one job on the machine, whoever asks about it. */
#ifndef GPUCTL_JOB_H
#define GPUCTL_JOB_H

#include "lease/client.h"
#include "machine/gpu.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* JOB_UNKNOWN: a Slurm job that slurmctld forgot (it keeps ended jobs for MinJobAge) before
 * gpuctl saw how it ended: it is over, how is not known. */
enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_FAILED, JOB_CANCELLED, JOB_LOST, JOB_UNKNOWN };

/* Where a job runs (backend.h): this machine's runner, or Slurm ("slurm:42"). */
enum job_kind { JOB_LOCAL, JOB_SLURM, JOB_NKINDS };

struct job {
	uint64_t id;
	enum job_kind kind;          /* not stored: the directory says it */
	uid_t uid;
	enum job_state state;
	char boot[40];               /* the boot it was last queued or run in */
	char *name;                  /* NULL: none given */
	char *command;               /* as shown (the arguments joined); the spec holds them exactly */
	char *cwd, *log;             /* absolute paths */
	bool own_log;                /* log is ID.log in the jobs directory */
	uint64_t *after;             /* runs once these jobs succeeded */
	size_t nafter;
	unsigned retries, attempt;   /* attempt 1 is the first run */
	unsigned umask;              /* the submitter's (job_log_mode) */
	/* The request: count GPUs among cand (UUIDs; none: any), as for `run`. */
	unsigned count;
	char (*cand)[96];
	size_t ncand;
	uint64_t min_free_mib;
	uint64_t mem_mib;            /* memory shares (issue 23): --mem, 0: whole GPUs */
	char *mig;                   /* MIG instances (issue 23): "uuid:MIG-...", "slot:0:1" or
				      * "profile:3g.71gb"; NULL: none */
	int max_util, prefer;        /* -1: the daemon's rule, the config's */
	bool ignore_usage, uuid;
	bool bind_cpus;              /* issue 26: --bind-cpus (the runner binds it before exec) */
	/* CLOCK_REALTIME nanoseconds; 0: not (yet) */
	uint64_t submitted, queued_at, started, ended;
	pid_t pid;                   /* the job's process; with pid_start it names that process */
	unsigned long long pid_start;
	int exit_code;               /* -1: none */
	int signal;                  /* 0: none */
	unsigned ngpus, gpus[GPU_MAX];   /* nvidia-smi indices it was given */
	char (*uuids)[96];           /* and their UUIDs */
	char lease[17];
	char ticket[33];             /* the daemon's: rejoining after its restart keeps the place */
	char *reason;                /* why it failed, was cancelled or lost */
	char *warning;               /* output may be incomplete, and why */
	uint64_t again_of;           /* `submit --again`: the job it repeats */
	uint64_t position;           /* in the daemon's queue (filled by readers; not stored) */
	/* Slurm's jobs only */
	char *node;                  /* the node it ran on (squeue's NodeList) */
	char *slurm_state;           /* Slurm's own word for its state (COMPLETED, TIMEOUT, ...) */
	bool never;                  /* pending, but will never start (DependencyNeverSatisfied) */
	uint64_t time_ms;            /* --time: the lease's limit (issue 24); 0: the daemon's */
	char *notify;                /* --notify: the hook run on its events (issue 24); NULL: none */
	bool cpu_only;               /* -n 0: run without a lease, no GPU (issue 24) */
};

const char *job_state_name(enum job_state s);
bool job_state_parse(const char *s, enum job_state *out);
/* How j ended, for messages of both backends: "done, exit status 1", "failed, killed by signal
 * 9 (Killed)", "cancelled". */
void job_how(const struct job *j, char *buf, size_t n);
static inline bool job_final(enum job_state s)
{
	return s >= JOB_DONE;
}
void job_free(struct job *j);
void jobs_free(struct job *jobs, size_t n);

/* The record as text, and back. decode: false (why) on anything malformed; j is then empty. */
void job_encode(const struct job *j, struct strbuf *out);
bool job_decode(struct job *j, const char *buf, size_t len, char *why, size_t whylen);

/* The jobs directory (made if missing, refused if it is not the user's own and private), open. */
int job_dir_open(char **path, struct gpu_error *err);
/* The records of the user's Slurm jobs (slurm-jobs.c): $XDG_STATE_HOME/gpuctl/slurm, not per
 * host, since a cluster's hosts share its job ids (and usually the home directory). */
int job_slurm_dir_open(char **path, struct gpu_error *err);
/* Reads ID.job. false: no such record of this user's (errno ENOENT), or it is unreadable. */
bool job_read(int dirfd, uint64_t id, struct job *j);
/* Writes ID.job atomically. */
bool job_write(int dirfd, const struct job *j, struct gpu_error *err);
/* The same; in_place: where the disk (or quota) is full, the record is written over the old one
 * in its block (the runner's records: one writer). false with errno (ENOSPC: full). */
bool job_write_how(int dirfd, const struct job *j, bool in_place, struct gpu_error *err);
/* Every record, by id: from their files, or through the copy of them all in one file where it
 * is current (cache.c; only in the per-host jobs directory, whose writers are all on this host),
 * making a new copy where it is not (`jobs`, the shell's completion: not every submit, cancel
 * or wait, which would write the whole copy at each change). */
enum job_load { JOB_LOAD_FILES, JOB_LOAD_COPY, JOB_LOAD_MAKE };
size_t job_load_all(int dirfd, struct job **jobs, enum job_load how);
/* A job's log named by a path (--log, Slurm's StdOut), open for reading: only a regular file of
 * the caller's. A path another user could have put there (slurm-N.out in a shared directory) is
 * refused, and so is a FIFO or a device, without blocking on it (opened O_NONBLOCK, then made
 * blocking again). -1 with errno: the open's, EPERM another user's file, EINVAL not a regular
 * file. */
int job_log_open(const char *path);
/* The same, to write the job's output to (--log FILE, by the runner and the Slurm submit),
 * created if need be (job_log_mode): a FIFO another user planted at the path blocked the
 * runner's open (and every job of the user's with it) and, with a reader, gave them the job's
 * output; another user's world-writable file did the latter. /dev/null and the user's own
 * terminal are taken. */
int job_log_create(const char *path, unsigned umask);
/* What job_log_open's and job_log_create's errno means, in words. */
const char *job_log_error(int e);
/* This boot's id (/proc/sys/kernel/random/boot_id). */
const char *job_boot_id(void);
/* CLOCK_REALTIME in nanoseconds. */
uint64_t job_now_ns(void);

/* ---- spec.c: the parsers (unit-tested) ---- */

/* ID.spec: the arguments and the environment, NUL-separated after a header. */
void spec_build(struct strbuf *out, char *const *argv, char *const *env);
/* Parses buf[0..len) in place: argv and env point into buf (free the two arrays only). */
bool spec_parse(char *buf, size_t len, char ***argv, char ***env, char *why, size_t whylen);
/* `submit --file`: one command per line; blank lines and lines starting with '#' are skipped,
 * surrounding blanks and a CR before the newline removed. lines[i] points into text (modified);
 * linenos[i] is its line number. false (why) on a NUL byte. */
bool jobfile_parse(char *text, size_t len, char ***lines, unsigned **linenos, size_t *n,
		   char *why, size_t whylen);

/* The mode a log the user named (`submit --log FILE`) is created with: their umask's, but never
 * writable by another user, whatever the umask (`gpuctl logs` shows it as the job's output). */
static inline unsigned job_log_mode(unsigned umask)
{
	return 0644 & ~umask;
}

#endif
