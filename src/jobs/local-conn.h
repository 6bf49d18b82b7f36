/* local-conn.h: what the job commands share (local-conn.c): the user's job runner reached
 * (started on demand), the user's records read, ids checked (another user's job is refused by
 * name, an id nobody has is said to be unknown), and a finished job's exit status as `wait`
 * returns it. */
#ifndef GPUCTL_JOBCONN_H
#define GPUCTL_JOBCONN_H

#include "jobs/job.h"

enum runner_mode {
	RUNNER_FIND,      /* connect if it runs */
	RUNNER_START,     /* start it when it does not */
};
/* Connects to this user's job runner. false with err->code EXIT_OK: it does not run
 * (RUNNER_FIND); otherwise false means err. */
bool jobs_runner_open(struct dclient *dc, enum runner_mode mode, struct gpu_error *err);
/* One message from the runner by until (monotonic; 0: no limit). 1, 0 (time is up), -1 (it
 * went away: err). */
int jobs_runner_recv(struct dclient *dc, struct msg *m, double until, struct gpu_error *err);
/* A request and its answer, on dc (opened, with the runner started, when dc->fd < 0), sent
 * again to a new runner if the one that had it exited first. An `error` answer is err. */
bool jobs_runner_call(struct dclient *dc, struct strbuf *req, const int *fds, size_t nfds,
		 struct msg *reply, struct gpu_error *err);

struct jobctx {
	int dirfd;
	char *dir;
	struct job *jobs;            /* the user's records, by id */
	size_t n;
};
/* Reads the records. resume: records that say queued or running while no runner runs are
 * handed to a new runner first (it queues them again, or finds them lost), then read again. */
bool jobctx_load(struct jobctx *x, bool resume, enum job_load how, struct gpu_error *err);
void jobctx_free(struct jobctx *x);
struct job *jobctx_find(struct jobctx *x, uint64_t id);
/* Every id one of the user's jobs? Otherwise the message (another user's: EXIT_DENIED; nobody's:
 * EXIT_NO_SUCH_JOB) is printed, prefixed with who, and its code returned. */
int jobctx_check(struct jobctx *x, const uint64_t *ids, size_t n, const char *who);
/* Another user's job with this id, queued or running, as the daemon lists it (issue 24): 1
 * (*state "queued" or "running", user its user, *owner its uid), 0 none, -1 the daemon cannot
 * be asked (err). *owner (uid_t)-1: anyone's; else only that user's (a wait keeps to the owner
 * it found first). The label "#ID" is the word of whoever queued it (the kernel says only who
 * that was): asked only for an id that is none of the caller's own jobs. */
int job_others_state(uint64_t id, const char **state, char *user, size_t n, uid_t *owner,
		     struct gpu_error *err);
/* The id in a job's label in the daemon's lists ("#17 train" -> 17). */
bool job_label_id(const char *label, uint64_t *id);
/* `wait`'s status for a finished job: its exit status, 128+N for signal N, EXIT_CANCELLED,
 * EXIT_LOST (lost, or unknown), EXIT_CANNOT_RUN (it never started). */
int job_exit_status(const struct job *j);
/* The state, exit status, signal and reason of the runner's `ended` answer, into j. */
bool job_from_ended(struct job *j, const struct msg *m);

#endif
