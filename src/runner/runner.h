/* runner/ (rank 5, a program entered from cmd/runner.c only) and runner.h: the job runner,
 * `gpuctl runner` (internal; its files in the order conn < notify < job < exec, submit < runner): one
 * process per user and machine that looks after that user's detached jobs (jobs/job.h), started
 * on demand by `gpuctl submit` in a session of its own, so it survives logout and a dropped SSH
 * connection.
 *
 * Design:
 * - The shared daemon stays the only arbiter of GPUs. The runner holds one connection to it
 *   with one request (lease/request.h) per queued job, in the same fair queue as `run --wait`; a job
 *   waiting for others (--after) asks only once they have succeeded.
 * - A grant starts the job at once: its own session, stdin /dev/null, stdout and stderr to its
 *   log, the directory, umask and environment of its submit plus the lease's variables; it
 *   commits the lease itself (grant_hold) before exec, so it holds its GPUs whatever becomes of
 *   the runner. The runner waits on pidfds and records the exit status or signal.
 * - Records are written before every step that cannot be undone (a job is marked running
 *   before it is forked), so a job runs at most once; a runner that dies leaves records that
 *   the next one reads back: queued jobs are queued again, a job still running is watched again
 *   (its exit status is then unknown: `lost`), a job of an earlier boot is `lost`.
 * - Clients (submit, cancel, wait, logs -f, jobs --clean) talk to it over a SEQPACKET socket in
 *   the jobs directory (0700), checked by SO_PEERCRED to be the user's own, in proto.h's format.
 * - No polling: epoll on the listening socket, clients, the daemon, pidfds and a signalfd; the
 *   only timers are a cancel's grace period, reconnecting to a restarting daemon, and the short
 *   linger before the runner exits when it has nothing left to do.
 * - Memory: a queued job costs its record and its request (about 1 KiB); finished jobs leave
 *   memory (their records stay on disk). */
#ifndef GPUCTL_RUNNER_H
#define GPUCTL_RUNNER_H

#include "base/peer.h"
#include "config/config.h"
#include "jobs/job.h"
#include "lease/grant.h"

#define RUNNER_ALLOC_BIT (1ULL << 63) /* ids of `jobid` asks on the daemon connection */
#define RUNNER_WATCH_BIT (1ULL << 62) /* ids of `watch` asks (idle leases, issue 24) */

/* What an epoll event is about: the kind (peer.h) everything registered starts with. */
enum rev_kind { REV_LISTEN, REV_SIGNAL, REV_DAEMON, REV_CLIENT, REV_JOB,
	REV_HOOK, /* notifications (issue 24): notify.c */
};

struct rclient {
	struct peer p;               /* kind REV_CLIENT; its answers are never queued */
};

/* A client waiting for a job's end: `wait`, `logs -f`, `cancel`. */
struct rwaiter {
	struct rclient *c;
	uint64_t id;                 /* the client's request id */
};

struct rjob {
	int ev;                      /* REV_JOB: the epoll tag of pidfd */
	struct job j;                /* the record, as last written */
	struct lreq *req;            /* in the daemon's queue */
	bool held;                   /* waits for its --after jobs before it asks */
	int pidfd, logfd, errpipe;   /* while it runs; -1 otherwise */
	bool child;                  /* ours to reap (not adopted from an earlier runner) */
	bool cancelling;
	double kill_at;              /* monotonic: SIGKILL then, unless it ended */
	/* -- time limits (issue 24) -- */
	double limit_at, grace;      /* monotonic: SIGTERM then (its lease's limit); 0: none */
	bool timed_out;              /* it was signalled at its limit, or released for idleness */
	bool idle_released;          /* idle leases (issue 24): the daemon released its lease */
	bool near_said;              /* notifications (issue 24): time-near told */
	char token[33];              /* its lease's, to watch it (idle.c's `watch`) */
	struct rwaiter *waiters;
	size_t nwaiters;
	/* memory shares (issue 23): a share granted under share_overuse = stop, and whether it was
	 * stopped for going over its claim */
	bool share_stop, share_over;
};

/* A submit waiting for its job id from the daemon. */
struct ralloc {
	struct rclient *c;
	uint64_t id;                 /* the client's request id */
	struct job j;                /* the job, id still 0 */
	struct strbuf spec;
	struct ralloc *next;
};

struct runner {
	struct peer_loop loop;       /* epoll, the socket, signals, the linger */
	int dirfd, lockfd;
	char *dir, *sock;
	struct gpu_set *set;         /* opened when first needed */
	struct config cfg;
	struct dclient dc;
	char *shared;                /* the shared daemon's socket, once it served us */
	bool up;                     /* dc is connected */
	double share_check_at;       /* memory shares: when the daemon is next asked about claims */
	double reconnect_at, backoff;
	struct rjob **jobs;          /* queued and running, by id */
	size_t njobs, jobs_cap;
	struct unsaved_rec { uint64_t id; struct strbuf rec; } *unsaved; /* records the disk refused */
	size_t nunsaved, unsaved_cap;
	double unsaved_at;           /* when they are written again (0: none kept) */
	struct rclient **clients;
	size_t nclients, clients_cap;
	struct ralloc *allocs, *allocs_tail;
	uint64_t pool_next, pool_end; /* job ids the daemon gave and no job has yet */
	uint64_t ids_req;            /* the ask for more in flight (0: none) */
	bool ids_clamped;            /* the daemon's ids were below our records (logged once) */
	uint64_t next_alloc;
	uint64_t max_id;             /* the highest id of the user's records */
	double now;
	bool stop, loading;
	char link_err[512];          /* why the daemon cannot be reached, while it cannot */
	/* Called on every new connection to the daemon: everything it should know, again. false:
	 * a send failed (err); the link is dropped. */
	bool (*on_link)(struct runner *r, struct gpu_error *err);
	/* Starts a job (exec.c's rjob_start): job.c starts a CPU-only step (-n 0, issue 24) with it,
	 * below exec.c. */
	void (*start)(struct runner *r, struct rjob *rj, struct grant *g);
};

/* runner.c: the loop, clients, the daemon's messages, the records read back on start. */
int runner_main(void);

/* conn.c: answers to clients; the daemon connection, made again when lost. */
/* Sends msg to the daemon, connecting first if need be (then on_link sends it with the rest).
 * false: the daemon cannot be reached now. */
bool runner_daemon_send(struct runner *r, const struct strbuf *msg);
/* Connects to the daemon unless connected, or it is too soon to try again; true: connected. */
bool runner_link_up(struct runner *r);
/* The connection is lost (why, for the log): the next send or runner_link_up connects again. */
void runner_link_down(struct runner *r, const char *why);
void runner_reply(struct runner *r, struct rclient *c, struct strbuf *msg);
void runner_error(struct runner *r, struct rclient *c, uint64_t id, int code, const char *fmt, ...)
	PRINTF(5, 6);
/* The GPUs, opened when first needed. */
bool runner_set(struct runner *r, struct gpu_error *err);

/* submit.c: a submit checked, given its id, recorded and queued. */
void rjob_submit(struct runner *r, struct rclient *c, const struct msg *m, int specfd);
void rjob_ids(struct runner *r, const struct msg *m);
void rjob_ids_failed(struct runner *r, const struct msg *m);
void rjob_ids_message(const struct runner *r, struct strbuf *sb);

/* job.c: the jobs: requested, ended, forgotten; their spec files. */
struct rjob *rjob_find(struct runner *r, uint64_t id);
/* Into the table (moved from j), in id order. */
struct rjob *rjob_insert(struct runner *r, struct job *j);
/* A new job (moved from j): asks the daemon, or waits for its --after jobs. */
void rjob_add_new(struct runner *r, struct job *j);
void rjob_request(struct runner *r, struct rjob *rj);
/* The job reached a final state: recorded, waiters told, forgotten, dependents looked at. */
void rjob_finish(struct runner *r, struct rjob *rj);
/* The job ends in state with the reason fmt (rjob_finish). */
void rjob_end(struct runner *r, struct rjob *rj, enum job_state state, const char *fmt, ...)
	PRINTF(4, 5);
/* Dependents of jobs that ended: asked for or cancelled, until nothing changes. */
void rjob_resolve(struct runner *r);
/* Writes its record; one the disk refuses is kept and written again (rjob_unsaved). */
void rjob_save(struct runner *r, struct rjob *rj);
/* Writes the kept records again when it is time (*next: the next time); whether any is kept. */
bool rjob_unsaved(struct runner *r, double *next);
/* Says which kept records are lost as the runner exits, and frees them. */
void rjob_unsaved_free(struct runner *r);
/* *dst becomes the formatted reason (the old one freed). */
void rjob_set_reason(char **dst, const char *fmt, ...) PRINTF(2, 3);
/* How a finished job ended, as the `ended` message to a waiter (id: the waiter's request). */
void rjob_ended_message(struct strbuf *sb, uint64_t id, const struct job *j);
/* control.c: cancel, wait, clean, the daemon's events and the timers of the jobs in the table. */
void rjob_cancel(struct runner *r, struct rclient *c, const struct msg *m);
void rjob_wait(struct runner *r, struct rclient *c, const struct msg *m);
void rjob_clean(struct runner *r, struct rclient *c, const struct msg *m);
void rjob_timers(struct runner *r, double *next);
/* Idle leases (issue 24): the daemon's `event` about a running job's lease; the `watch` that
 * asks for them (appended to sb). */
void rjob_event(struct runner *r, const struct msg *m);
void rjob_watch_message(const struct rjob *rj, struct strbuf *sb);
void rjob_drop_client(struct runner *r, struct rclient *c);
void rjob_free(struct rjob *rj);
bool rjob_pending(const struct runner *r);
/* The spec of job id (ID.spec), or one sent by a submit: a regular file of at most 16 MiB. */
bool rjob_read_spec(struct runner *r, uint64_t id, struct strbuf *sb);
bool rjob_read_spec_fd(int fd, struct strbuf *sb);

/* notify.c: a job's notify hook (issue 24), run on an event ("done", "failed", "stopped",
 * "idle-warn", "time-near"); its end read; those past their timeout killed. */
void rhook_run(struct runner *r, const struct job *j, const char *event);
void rhook_exited(struct runner *r, void *ptr);
void rhook_timers(struct runner *r, double *next);
bool rhook_pending(void);

/* exec.c: a granted job started; its end read. */
void rjob_start(struct runner *r, struct rjob *rj, struct grant *g);
void rjob_exited(struct runner *r, struct rjob *rj);
/* A job an earlier runner started and that still runs: watched till it ends. */
void rjob_adopt(struct runner *r, struct rjob *rj);

#endif
