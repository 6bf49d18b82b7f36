/* view.h: who holds which GPU and who waits, as the daemon tells it (`list`), for the
 * commands that show or act on leases (leases, release, status, doctor, exporter). Users are
 * named from their uid here, in the reader's own name service. */
#ifndef GPUCTL_LEASEVIEW_H
#define GPUCTL_LEASEVIEW_H

#include "base/util.h"

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

struct lease_info {
	char id[17];
	uid_t uid;
	char user[64];
	pid_t pid;                   /* the job (run) or the holder process (env) */
	unsigned long long start;    /* pid's start time in clock ticks; 0: unknown */
	pid_t bound;                 /* env: the process the lease ends with */
	char kind[8];                /* run, env or job */
	time_t since;
	char *name, *command;        /* NULL when not given */
	size_t ngpus;
	char (*uuids)[96];
	unsigned long long until_ns; /* its time limit, CLOCK_REALTIME ns; 0: none (issue 24) */
	/* -- idle leases (issue 24) -- */
	bool idle_known;             /* the daemon looks at its use (idle_since: 0 in use) */
	unsigned long long idle_since_ns;
	bool idle_warned, idle_released, idle_exempt;
	/* memory shares (issue 23) */
	uint64_t mem_mib;            /* a share's claim on each of its GPUs; 0: whole GPUs */
	bool over;                   /* its processes use more than it claims */
	uint64_t *used;              /* MiB its processes use, per GPU of uuids (NULL: none said) */
	size_t nused;
	char mig_uuid[96];           /* MIG instances: the instance leased ("": the whole GPU) */
};

/* memory shares (issue 23): a GPU with shares, as the daemon counts it (MiB). */
struct share_gpu {
	char uuid[96];
	unsigned count;
	uint64_t claimed, outside, room;
};

struct waiter_info {
	unsigned position;           /* 1: next in line */
	uid_t uid;
	char user[64];
	pid_t pid;
	unsigned count;
	time_t since;
	char state[12];              /* waiting, offered, stopped, returning */
	char kind[8];
	char note[20];               /* the daemon's word on it: "head" (served first until it
				      * runs, keeps the free GPUs it can use), "own-leases" (waits on
				      * its user's own leases, reserves nothing), "reserve-expired"
				      * (kept GPUs idle for head_reserve, reserves nothing now),
				      * "backed-off" (its user did not take offers); "": none */
	char *name, *command;        /* NULL when not given */
	size_t ncand;
	char (*cand)[96];
	/* -- time limits and backfill (issue 24) -- */
	double time_limit;           /* seconds its lease would last; 0: none */
	double past;                 /* its user's past use, decayed GPU-seconds; -1: not counted */
	int start;                   /* the head: 1 its start is estimated (start_ns), -1 not known;
				      * 0: not the head */
	unsigned long long start_ns;
};

/* Waiters the daemon counted instead of listing (another user's beyond the head of the queue,
 * or past its bound on one answer): per user, how many and the position of the first. */
struct waiter_sum {
	uid_t uid;
	char user[64];
	unsigned count;
	unsigned first;              /* the position of the first */
	time_t oldest;               /* since when the one waiting longest waits */
};

struct leaseview {
	bool present;                /* a daemon answered */
	bool private_mode;           /* it is this user's private daemon */
	pid_t daemon_pid;
	struct lease_info *leases;
	size_t nleases;
	char (*held)[96];            /* GPUs held by processes no record names */
	size_t nheld;
	struct waiter_info *queue;   /* in the order the daemon would serve them */
	size_t nqueue;
	struct waiter_sum *sums;     /* the waiters not in queue, counted per user */
	size_t nsums;
	size_t nsummed;              /* their number: nqueue + nsummed wait in all */
	char order[8];               /* the daemon's queue: "fair", "fifo", or "" (a daemon too old
				      * to say: first come, first served) */
	char unsaved[256];           /* the daemon's state cannot be saved: why ("": it is) */
	/* the device guard (issue 25): mode "acl" or "off" ("": a daemon too old to say), the
	 * directory of the nodes, its state ("binding", "not binding: ...", "advisory") and the
	 * first nodes it cannot guard, in the daemon's words */
	char guard[8];
	char guard_dir[256];
	char guard_state[96];
	char guard_errors[8][200];
	size_t nguard_errors;
	char fairrule[12];           /* issue 24: "past-use" or "held" (fair order); "": not said */
	struct share_gpu *shares;    /* memory shares (issue 23): the GPUs with shares */
	size_t nshares;
	/* the arrays' room (grow_array: doubled, not grown by one record each; a list of 1,000
	 * waiters was a thousand reallocs) */
	size_t leases_cap, queue_cap, sums_cap, shares_cap;
};
/* Leases bind on this machine: the daemon's guard is on and guards every node. */
bool leaseview_binding(const struct leaseview *v);
/* The guard's state in a sentence ("leases bind: ..."), the daemon's words not escaped. */
void leaseview_guard_text(const struct leaseview *v, char *buf, size_t len);

/* Asks the daemon. No daemon running: true with v->present false (nothing is leased). */
bool leaseview_load(struct leaseview *v, struct gpu_error *err);
/* memory shares (issue 23): the GPU's shares as the daemon counts them (NULL: none), and the
 * k-th share on it (NULL past the last). */
const struct share_gpu *leaseview_share_gpu(const struct leaseview *v, const char *uuid);
const struct lease_info *leaseview_share(const struct leaseview *v, const char *uuid, size_t k);
/* MIG instances (issue 23): the lease of the instance mig_uuid (NULL: none). */
const struct lease_info *leaseview_mig_holder(const struct leaseview *v, const char *mig_uuid);
/* What share l's processes use on the GPU uuid (MiB, 0: nothing seen). */
uint64_t leaseview_share_used(const struct lease_info *l, const char *uuid);
/* The same, waiting at most timeout seconds for the answer (never longer than the client's own
 * timeout): for a view whose leases are extra (status), which must not wait 5 s for them. */
bool leaseview_load_within(struct leaseview *v, double timeout, struct gpu_error *err);
/* Only the places of the caller's own named waiters in the queue (v->queue: position, uid,
 * kind, name; nothing else filled), for `gpuctl jobs`: the daemon renders and this process
 * decodes a line per waiter, not the whole list. An older daemon's full list is read alike. */
bool leaseview_load_places(struct leaseview *v, struct gpu_error *err);
void leaseview_free(struct leaseview *v);
/* issue 22: one message of `list`'s answer into v (v zeroed before the first), as
 * leaseview_load reads them; true when it was the last (its "end"). The daemon's snapshot
 * carries the answer after its view (lease/snapshot.h). */
struct msg;
bool leaseview_take_part(struct leaseview *v, const struct msg *m);
/* Idle leases (issue 24): seconds the lease has been idle now; -1 not known, 0 in use. */
long long leaseview_idle_seconds(const struct lease_info *li);
/* What a waiter's note (waiter_info.note) means, in words; NULL for a note not known. */
const char *leaseview_note_text(const char *note);
/* The lease holding GPU uuid, or NULL. */
const struct lease_info *leaseview_holder(const struct leaseview *v, const char *uuid);
/* GPU uuid is held by a process the daemon cannot name. */
bool leaseview_held(const struct leaseview *v, const char *uuid);
/* Whether the process that committed the lease (the job, env's holder) still runs: its pid with
 * the start time recorded (none recorded: the pid alone). */
bool leaseview_holder_alive(const struct lease_info *l);
/* When it does not: the processes that hold the lease now (its FIFO's write end, inherited from
 * it: a background child of a job's shell), those of the lease's user this reader may look at
 * (its own; root: all). Up to max pids into out; how many there are. */
size_t leaseview_live_holders(const struct lease_info *l, pid_t *out, size_t max);
/* Ends a lease by sending SIGTERM to its holder, the very process the daemon recorded (a pidfd
 * checked against the start time it recorded, so a reused pid is never hit): returns the pidfd,
 * readable once the holder has gone (release and top wait on it), or -1 with why set. Whether
 * the caller may end this lease is the caller's to decide first. */
int leaseview_end_holder(const struct lease_info *l, char *why, size_t whylen);

/* The same question asked without waiting, for a loop that must stay responsive (top): a daemon
 * that accepts but never answers must not freeze the screen or keep Ctrl-C waiting. */
struct leaseview_query {
	void *dc;                    /* the connection (struct dclient), NULL when none is open */
	struct leaseview v;          /* the parts received so far */
	double deadline;             /* monotonic: give up on the answer then */
	double timeout;              /* the client's answer timeout, seconds */
};
/* Sends the request. 1: asked (poll leaseview_query_fd, then leaseview_query_step); 0: answered
 * already (no daemon running: *out empty, not present); -1: failed (err). */
int leaseview_query_start(struct leaseview_query *q, struct leaseview *out, struct gpu_error *err);
/* The same for leaseview_load_places's question. */
int leaseview_query_places(struct leaseview_query *q, struct leaseview *out, struct gpu_error *err);
int leaseview_query_fd(const struct leaseview_query *q);
/* Takes what has arrived, without waiting. 1: complete, *out holds the list (the caller frees);
 * 0: not yet; -1: failed or past the deadline (err; EXIT_TIMEOUT when it did not answer in time).
 * The query is closed after 1 or -1. */
int leaseview_query_step(struct leaseview_query *q, struct leaseview *out, struct gpu_error *err);
/* Waits for the rest of the answer (its deadline bounds the wait): 1 or -1 as above. */
int leaseview_query_wait(struct leaseview_query *q, struct leaseview *out, struct gpu_error *err);
void leaseview_query_cancel(struct leaseview_query *q);

#endif
