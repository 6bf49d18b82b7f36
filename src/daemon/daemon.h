/* daemon/ (rank 2, a program entered from cmd/daemon.c only) and daemon.h: `gpuctl daemon`, the
 * one trusted writer of shared GPU state. Order of its files: share < alloc < order;
 * conn < share, mig, usage < lease < recover < timelimit; guard (after lease, before daemon);
 * both < sched < idle < queue < list < snapshot < daemon; no circle.
 *
 * Design (nq's lesson: let the kernel keep the state):
 * - Clients talk to the daemon over a SOCK_SEQPACKET Unix socket (one message per datagram, in
 *   the format of proto.h). Who they are comes from the kernel (SO_PEERCRED), never from what
 *   they say. Only the daemon writes its state directory (mode 0700): users can neither create,
 *   open, lock nor delete anything in it.
 * - A lease on a GPU is flock(LOCK_EX) on a fresh lock file per lease (STATE/GPU-<uuid>.lock,
 *   opened read-only, mode 0600), handed to the client with SCM_RIGHTS together with the write
 *   end of a FIFO (STATE/lease-<id>.fifo) whose read end the daemon keeps. The job inherits both,
 *   so the lease lasts exactly as long as the job and everything it started, survives the death
 *   of gpuctl and of the daemon, and ends when the last copy of the FIFO's write end closes: the
 *   daemon sees POLLHUP at once (a pipe end cannot fake it). A record STATE/lease-<id>, written
 *   by the daemon alone, says who holds what.
 * - The FIFO is the lease; the lock is its shadow. When the FIFO's last writer closes, the lease
 *   ends and its lock files are retired (unlinked): a holder that closed its FIFO but kept the
 *   lock descriptor holds an inode nobody looks at again, so it cannot keep half a lease (issue
 *   21: such a lock blocked a GPU after a restart, counted against nobody). The daemon cannot
 *   name a lock's holder from the kernel (/proc/locks shows the pid that took the lock, the
 *   daemon; another user's fds are not readable), so each lock file says whose lease it is.
 * - A restarted daemon re-learns held GPUs from the kernel (recover.c): a lease's FIFO,
 *   reopened, tells whether any writer is left (open and close one writer, then POLLHUP means
 *   none); a record with none left ended while no daemon ran, and its lock files are retired.
 *   A GPU no live record accounts for is still not free while its lock file is locked or NVML
 *   shows a process on it (the records or the whole directory removed): it becomes a "found"
 *   lease of the uid the lock file or the process names (max_gpus_per_user counts it, `leases`
 *   shows it) until both are gone; one locked by nobody anyone can name is held_unknown. A
 *   tmpfiles rule (contrib/gpuctl.tmpfiles) keeps systemd-tmpfiles off /run/gpuctl. The queue
 *   (arrival order, tickets) is kept in STATE/queue so waiters that reconnect with their ticket
 *   keep their place.
 * - The queue: arrival order by the daemon's counter; every event (a request, a lease ending, a
 *   waiter leaving, a usage change) runs one scheduling pass (alloc_schedule) over one shared
 *   NVML refresh. The pass takes the waiters fair-share (the user holding the fewest GPUs first,
 *   of those the one offered GPUs longest ago, each user's requests in arrival order;
 *   order.c) or, with `queue = fifo`, in arrival order; every position the daemon tells
 *   is that order. The first waiter that cannot run keeps the free GPUs it could use and stays
 *   first in later passes until it runs (no starvation), for head_reserve at most (then others
 *   may use them); a waiter that needs GPUs its own user holds reserves nothing. A grant is
 *   first offered; the client must take it within offer_timeout or it passes on (a stopped
 *   waiter keeps its place but holds nothing up), and its user is backed off for a while
 *   (sched.c, order.c).
 * - One daemon per socket and per state directory: SOCKET.lock and STATE/daemon.lock, each
 *   flock'ed for the daemon's life, the socket's first (before any state is read or removed). A
 *   second daemon, whatever its state directory, exits naming the one that serves instead of
 *   taking the socket over (two lease tables on one machine: one GPU leased twice).
 * - Part of a GPU (issue 23): a memory share (`mem`, share.c) or a MIG instance (mig.c) is a
 *   lease like any other (FIFO, record, a lock file of its own per GPU); its GPU's slot keeps no
 *   holder but counts its shares' claims and its leased instances, and whole leases and parts
 *   never share a GPU.
 * - Bounded: message size, connections per user and in all, queued requests per user, output
 *   queued per connection, idle connections, and every file descriptor accounted for; `list`
 *   answers per user (a rate; rendered once per change of the state; another user's waiters past
 *   the queue's head counted, not listed) and the job ids a user's asks take or skip (list.c). */
#ifndef GPUCTL_DAEMON_H
#define GPUCTL_DAEMON_H

#include "daemon/alloc.h"
#include "config/config.h"
#include "machine/gpu.h"
#include "base/peer.h"
#include "base/proto.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>


/* The bounds of what a client names its request (bytes, cut there as they enter the daemon):
 * every record `list` sends fits in one message (list.c). */
#define REQ_NAME_MAX 256
#define REQ_COMMAND_MAX 4096

/* What an epoll event is about: the kind (peer.h) everything registered starts with. */
enum ev_kind { EV_LISTEN, EV_SIGNAL, EV_CONN, EV_LEASE };

struct conn {
	struct peer p;            /* first: kind EV_CONN; the socket, who (the kernel's word), output */
	double last_active;       /* monotonic */
	unsigned nreqs;           /* requests of this connection in the queue */
	unsigned nwatch;          /* leases it watches (idle.c): kept open like a waiter's */
	struct snap_stream *snap; /* the shared snapshot being streamed to it (snapshot.c) */
	uint64_t frame_token;     /* the last frame's (snapshot.c): the next ask must say it */
	/* The sender of the message being handled, as the kernel attests it (SCM_CREDENTIALS: the
	 * daemon sets SO_PASSCRED on its socket): the process that sent it, which may be another
	 * than the one that connected (a job started by the client, before its exec). pid 0: the
	 * message carried none. */
	struct ucred cred;
};

/* Why a waiter holds no GPUs back for itself (the last pass's word; `leases` shows it). */
enum req_note {
	N_NONE,
	N_HEAD,                   /* the head: first until it runs, keeps the free GPUs it can use */
	N_OWN,                    /* needs GPUs its own user holds: reserves nothing, others go by */
	N_EXPIRED,                /* kept GPUs idle for head_reserve: reserves nothing now */
	N_BACKOFF,                /* its user did not take offers: served after the others */
};

enum req_state {
	R_WAITING,                /* in the queue (or, not queued, being evaluated) */
	R_OFFERED,                /* GPUs offered; the client must take them */
	R_SKIPPED,                /* did not take an offer in time: keeps its place, holds nothing */
	R_ORPHAN,                 /* from the queue file of a previous daemon: its client may return */
};

struct request {
	uint64_t seq;             /* arrival order */
	struct conn *conn;        /* NULL for an orphan */
	uint64_t id;              /* the client's request id */
	char ticket[33];          /* secret that lets a reconnecting waiter keep its place */
	uid_t uid;
	pid_t pid;
	struct alloc_req req;
	char kind[8];
	char *name, *command;
	time_t since;             /* wall clock at arrival, for display */
	double deadline;          /* monotonic: max_wait, or an orphan's return; 0: none */
	enum req_state state;
	uint64_t offer;           /* GPUs offered */
	uint64_t offer_serial;    /* which offer a `take` answers */
	double offer_until;
	uint64_t arrived_ns, offered_ns; /* CLOCK_REALTIME: the daemon's word on the order */
	bool dry;                 /* --dry-run: say what would be granted, grant nothing */
	double reserving_since;   /* monotonic: the head keeps free GPUs idle since then; 0: not */
	double defer_from;        /* monotonic: a request that does not wait has waited since then
				   * for GPUs offered to others to be taken or lapse; 0: not */
	enum req_note note;
	/* -- time limits and backfill (issue 24; timelimit.c) -- */
	double time_limit;        /* seconds the lease may last (--time, or default_time); 0: none */
	bool backfill;            /* the last pass ran it on GPUs kept for the head (backfill) */
	/* MIG instances (issue 23; mig.c) */
	char mig_profile[32];     /* req.mig_profile points here */
	int offer_mig;            /* the instance offered (its index in the GPU's migs); -1 */
};

struct lease {
	int ev;                   /* EV_LEASE: the epoll tag of fifo */
	char id[17];
	char token[33];           /* lets the job's process commit its pid */
	uid_t uid;
	pid_t pid, bound;
	unsigned long long start; /* pid's start time (clock ticks since boot); 0: unknown */
	unsigned long long bound_start; /* bound's, read at commit (0: unknown, /proc hidden) */
	int bound_fd;             /* a pidfd on bound, readable once it exited (-1: none) */
	char kind[8];
	time_t since;
	uint64_t seq;             /* the request it granted: that request's queue entry is stale */
	char *name, *command;
	uint64_t gpus;            /* bit i: slot i */
	int fifo;                 /* read end; -1 once ended, and for a found one */
	bool found;               /* not granted: found held at start with no record (kind
				   * "found"); ends when neither its lock nor a process of its
				   * uid holds the GPU any more (lease_probe_unknown) */
	/* -- time limits (issue 24; timelimit.c) -- */
	double limit;             /* seconds it was granted for; 0: no limit */
	uint64_t until_ns;        /* CLOCK_REALTIME: when it ends (its holder signals the job then) */
	double until;             /* monotonic: the same; the daemon ends it kill_grace later */
	/* -- idle leases (issue 24; idle.c) -- */
	double busy_at;           /* monotonic: last seen in use (0: not looked at yet) */
	uint64_t idle_since_ns;   /* CLOCK_REALTIME of busy_at: idle since then; 0: in use */
	bool idle_warned, idle_released;
	signed char exempt;       /* [daemon] idle_exempt: -1 not asked yet, 0 no, 1 yes */
	double idle_end;          /* monotonic: released for idleness, ended then (kill_grace) */
	struct conn *watch;       /* its holder's connection, told of warnings and release */
	/* memory shares (issue 23; share.c) */
	uint64_t mem_mib;         /* a share: claims this much of each of its GPUs (0: whole) */
	uint64_t *used;           /* a share's: per slot, MiB its processes use (NULL: none) */
	bool over;                /* its processes use more than it claims on one of its GPUs */
	int mig;                  /* MIG instances: 1 + the instance's index in its GPU's migs (the
				   * one GPU of gpus); 0: none (mig.c) */
	char mig_uuid[96];        /* ... and that instance's UUID, what its job was given and what
				   * its record keeps: a restart finds the instance by it (the
				   * index may name another once instances were remade) */
};

struct slot {
	char uuid[96];
	unsigned index;
	struct lease *holder;
	bool held_unknown;        /* locked by a process no live lease accounts for */
	bool reserved;            /* the admin keeps it out of leasing */
	struct alloc_gpu use;     /* observed at the last refresh */
	/* memory shares (issue 23; share.c): the shares on it (holder stays NULL) */
	unsigned nshares;
	uint64_t claimed_mib;     /* their claims, or their use where more */
	uint64_t outside_mib;     /* used by processes that belong to no share */
	bool mps;                 /* memory shares: the admin runs MPS on it ([daemon] share_mps) */
	uint64_t mig_busy;        /* MIG instances (mig.c): bit j, migs[j] leased */
	uint64_t mig_inuse;       /* bit j: a compute process runs on migs[j] */
};

struct daemon {
	struct dconf conf;
	char *socket_path, *state_dir;
	bool private_mode;              /* a user's own daemon: only that user, exits when idle */
	struct peer_loop loop;          /* epoll, the socket, signals, the private daemon's linger */
	int dirfd;
	int lockfd;                     /* flock on STATE/daemon.lock: one daemon per state */
	int socklockfd;                 /* flock on SOCKET.lock: one daemon per socket */
	bool socket_used;               /* SOCKET.lock was there: a daemon served this socket before */
	bool state_lost;                /* ... and STATE/daemon.lock was not: its state was removed
					 * (recover.c then trusts NVML's processes as leases) */
	struct gpu_set *set;
	size_t nslots;
	struct slot slots[GPU_MAX];

	struct conn **conns;
	size_t nconns, conns_cap;
	struct request **reqs;          /* in arrival order */
	size_t nreqs, reqs_cap;
	struct lease **leases;
	size_t nleases, leases_cap;

	uint64_t next_seq;
	uint64_t next_job;              /* job ids handed out (`jobid`): unique on this machine */
	uint64_t jobs_saved;            /* where the queue file says ids continue (>= next_job) */
	struct served {                 /* when each user was last offered GPUs: of users holding */
		uid_t uid;              /* as many, the fair queue serves the one served longest */
		uint64_t at;            /* ago (a counter); one entry per user ever served */
		unsigned lapses;        /* offers not taken in time, forgotten after LAPSE_MEMORY */
		double lapsed_at;       /* monotonic: the last one */
		double backoff_until;   /* monotonic: until then served after the others, one open
					 * offer at a time, reserving nothing (order.c) */
		double reserved;        /* seconds its heads kept free GPUs idle (head_reserve) */
		double reserve_end;     /* monotonic: when the last of them stopped */
	} *served;
	size_t nserved, served_cap;
	uint64_t serve_clock;
	double now;                     /* monotonic, at the top of the loop iteration */
	double usage_at;                /* when the usage was last refreshed */
	double usage_due;               /* next refresh for waiters blocked by usage; 0: none */
	double probe_due;               /* next look at GPUs held by unknown processes; 0: none */
	double backoff_due;             /* a waiting user's back-off ends (order.c); 0: none */
	double last_end;                /* when a lease last ended */
	double settle_until;            /* after a restart: waiters of the old queue coming back */
	bool queue_dirty, sched_due, stop;
	char state_error[256];          /* why a write to the state directory failed, until that
					 * file is written again ("": none): `list` tells clients */
	char state_error_file[48];      /* which file */
	struct list_state *list;        /* `list`'s rendered answers, per-user rates (list.c) */
	/* the device guard (issue 25, guard.c): NULL when [daemon] guard is off */
	struct guard *guard;
	unsigned guard_no_minor;        /* GPUs whose node NVML could not name */
	/* -- time limits and backfill (issue 24) -- */
	double head_start;              /* the last pass's estimate for its head: seconds from
					 * head_start_at; <0 not known */
	double head_start_at;
	uint64_t head_seq;              /* that head's request (0: none) */
	double idle_due;                /* idle leases (issue 24): the next look at the GPUs */
	/* -- fair share by past use (issue 24; usage.c) -- */
	struct past { uid_t uid; double gpu_seconds; } *past; /* decayed, as of past_at */
	size_t npast, past_cap;
	uint64_t past_at;               /* CLOCK_REALTIME ns */
	bool past_dirty;                /* changed since STATE/usage was last written */
	bool past_keep;                 /* STATE/usage was unreadable and could not be moved aside:
					 * never written over */
	double past_saved;              /* monotonic: the last write */
	struct snap_state *snap;        /* the shared snapshot, per-user bounds (snapshot.c) */
	/* issue 26: placement (placement.c) */
	struct topo *topo;              /* from the daemon's NVML view; NULL: none */
	struct place_state *place;      /* preferred GPUs resolved, each user's struct place */
	/* issue 22 (run's round trips): the request whose acquire is being answered, when it said
	 * `take 1`: an offer made to it in that pass is taken at once (queue.c) */
	const struct request *take_now;
};

/* placement.c (issue 26): the topology and preferred GPUs opened with the machine (false: err
 * says which preferred_gpus list names no GPU here), each user's struct place (kept; NULL
 * before placement_open), the offer's placement, cpus and numa keys. */
bool placement_open(struct daemon *d, struct gpu_error *err);
void placement_free(struct daemon *d);
const struct place *placement_for(struct daemon *d, uid_t uid);
void placement_offer(struct daemon *d, const struct request *r, uint64_t mask, struct strbuf *sb);

/* daemon.c. dev_dir: where the device guard finds the NVIDIA device nodes (/dev); proc_dir:
 * the driver's /proc/driver/nvidia, where it reads the MIG capabilities' minor numbers. */
int daemon_main(const char *socket_path, const char *state_dir, const char *config_path,
		bool private_mode, const char *dev_dir, const char *proc_dir);

/* conn.c: who may connect, and what connections are sent; below everything that answers. */
/* Accepts the clients waiting, or refuses them with the reason (private, connection caps). */
void conn_accept(struct daemon *d);
/* Sends msg with fds (which this takes over and closes once sent) now, or queues it. */
void conn_send(struct daemon *d, struct conn *c, struct strbuf *msg, const int *fds, size_t nfds);
void conn_error(struct daemon *d, struct conn *c, uint64_t id, int code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* What uid's live connections hold unread, in all (the per-user bounds of list and snapshot). */
size_t conn_user_unread(const struct daemon *d, uid_t uid);
/* Log lines about clients are rate-limited: 10,000 bad clients must not flood the journal. */
void conn_log(struct daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* statedir.c: the state directory and its files. */
bool lease_state_dir_open(struct daemon *d, struct gpu_error *err);
/* The state directory removed under us is made again, its leases' records written back; false:
 * it cannot be. */
bool lease_state_dir_check(struct daemon *d);
/* Writes STATE/name atomically (making the directory again if it was removed). */
bool daemon_write_state(struct daemon *d, const char *name, const char *buf, size_t len);
/* A lease's record written (again: review 4b, a recovered lease's, its MIG instance found by
 * position); a GPU's lock file's name; a random id. */
bool lease_record_save(struct daemon *d, const struct lease *l);
void lease_lock_name(const struct slot *s, char *buf, size_t n, const char *suffix);
void lease_random_hex(char *out, size_t bytes);
/* lease.c: the lease table. */
struct lease *lease_grant(struct daemon *d, struct request *r, int *fds, size_t *nfds,
			  struct gpu_error *err);
void lease_commit(struct daemon *d, struct conn *c, const struct msg *m);
void lease_fifo_event(struct daemon *d, struct lease *l, unsigned events);
void leases_reap(struct daemon *d);
void lease_free(struct lease *l);
/* For recover.c: into the table (its GPUs' holder), out of it (its files removed, its lock files
 * retired), whether its lock file is locked, retiring the lock files of GPUs in mask, a
 * process's start time (0: unknown). */
void lease_add(struct daemon *d, struct lease *l);
void lease_end(struct daemon *d, struct lease *l);
bool lease_lock_held(struct daemon *d, const struct slot *s);
void lease_retire_locks(struct daemon *d, uint64_t mask);
void share_retire_locks(struct daemon *d, const struct lease *l); /* a share's or MIG lease's own locks */
unsigned long long lease_proc_start(pid_t pid);
/* The process the lease is bound to while it is still the one named at commit (its pidfd,
 * else its start time): 0 once it exited, whoever has its pid now. */
pid_t lease_bound_now(const struct lease *l);
/* Binds l to pid, which started at start (0: unknown), pinned by a pidfd. */
void lease_bind(struct lease *l, pid_t pid, unsigned long long start);
/* Time limits (issue 24): l is granted limit seconds (until_ns 0: from now), or ends at until_ns
 * (limit 0: read back from a record). */
void lease_set_limit(struct daemon *d, struct lease *l, double limit, uint64_t until_ns);

/* recover.c: what a starting daemon learns from the records, the kernel and NVML. */
void leases_recover(struct daemon *d);
/* Looks again at GPUs held with no lease granted (found leases, held_unknown): ends what is free. */
void lease_probe_unknown(struct daemon *d);

/* queue.c: requests as they come and go (the pass runs after each: sched.c). */
void queue_acquire(struct daemon *d, struct conn *c, const struct msg *m);
void queue_take(struct daemon *d, struct conn *c, const struct msg *m);
void queue_leave(struct daemon *d, struct conn *c, const struct msg *m);
void queue_where(struct daemon *d, struct conn *c, const struct msg *m);
void queue_drop_conn(struct daemon *d, struct conn *c);

/* qtable.c: the queue table. */
void queue_request_free(struct request *r);
/* Takes r out of the queue and frees it. */
void queue_remove(struct daemon *d, struct request *r);
uint64_t queue_realtime_ns(void);
/* Every slot, as a mask. */
uint64_t queue_all_slots(const struct daemon *d);
/* `KEY uuid` lines for the slots in mask. */
void queue_add_gpus(struct strbuf *sb, const struct daemon *d, const char *key, uint64_t mask);
/* Answers `gpus`: the machine's GPUs, for clients that load no NVML. */
void queue_gpus(struct daemon *d, struct conn *c, const struct msg *m);
/* sched.c: the scheduling pass, offers, and the queue's timers. */
void queue_schedule(struct daemon *d);
void queue_timers(struct daemon *d, double *next);

/* list.c: `list` (with `places 1`: only the asker's own waiters' places, for `gpuctl jobs`),
 * job ids. */
void queue_list(struct daemon *d, struct conn *c, const struct msg *m);
/* issue 22: `list`'s answer to c (its bounds: rate, unread bytes), c's out-queue empty: what
 * queue_list sends once it has checked that, and the snapshot after its view. */
void list_answer(struct daemon *d, struct conn *c, uint64_t id);
/* The answer list_answer would send uid, made now (and kept, as list_answer keeps it) but not
 * sent: a sender of something before it (snapshot.c) makes it first, so its own last message
 * and the list leave back to back, and the asker wakes once for both, not once for each. */
void list_warm(struct daemon *d, const struct conn *c);
/* `list`'s answer as it is sent to anyone with no waiter (what every user is shown: the leases
 * of a table's frame, snapshot.c), its parts without their first line, and its fingerprint
 * (the same answer while it holds). */
const struct strbuf *list_public(struct daemon *d, size_t *nparts, uint64_t *fp);
void queue_job_ids(struct daemon *d, struct conn *c, const struct msg *m);
void list_state_free(struct list_state *ls);
/* Continuation lines of a record: `KEY uuid uuid ...` for the slots in mask; how many lines. */
size_t list_gpu_lines(struct strbuf *sb, const struct daemon *d, const char *key, uint64_t mask);
/* queuefile.c: the queue file, written (waiters only) and read back at start. */
void queue_save(struct daemon *d);
void queue_load(struct daemon *d);

/* snapshot.c: the machine's view shared by status, top, doctor and the exporter (issue 22). */
void queue_snapshot(struct daemon *d, struct conn *c, const struct msg *m);
/* More of a connection's snapshot, as its out-queue drains (after peer_flush). */
void snap_pump(struct daemon *d, struct conn *c);
void snap_drop_conn(struct daemon *d, struct conn *c);
void snap_state_free(struct snap_state *s);
/* Frames (machine/snap.h): the table laid out of a view, by the program's renderer (the table
 * is the view layer's, above this one: cmd/daemon.c sets it; none set, no frames). view: a full
 * encoding; list: list_public's parts. *timed: it shows times counted to now (a lease's idle
 * time), so it holds for this second only. false with why: no frame (the client lays out the
 * view itself). */
struct snap_parts;
struct snap_frame_ask;
typedef bool (*snap_frame_fn)(const struct snap_parts *view, const struct strbuf *list,
			      size_t nlist, const struct snap_frame_ask *a, struct strbuf *out,
			      bool *timed, char *why, size_t whylen);
void snap_frame_renderer(snap_frame_fn fn);

/* order.c: the queue's order (fair or fifo) and the positions it gives. */
/* Sets rq[i].user for reqs[0..n) (users as indices from 0), *held (xmalloc'd): the GPUs each
 * of those users holds now, leases and open offers, and *served (xmalloc'd): when each was last
 * offered GPUs. Returns how many users. */
size_t queue_users(const struct daemon *d, struct request *const *reqs, size_t n,
		   struct alloc_req *rq, unsigned **held, uint64_t **served);
/* Notes that uid was offered GPUs now (the fair queue's tie-break). */
void queue_served(struct daemon *d, uid_t uid);
/* Notes that an offer to uid lapsed untaken: uid is backed off for offer_timeout times 2, 4,
 * ... 64 as lapses repeat (forgotten after 10 minutes without one). */
void queue_lapsed(struct daemon *d, uid_t uid);
/* The seconds uid's heads have kept free GPUs idle, bounded by head_reserve: a user's, not a
 * request's (a request cancelled and made again, or the user's next one, would start afresh and
 * keep them idle for ever). Forgotten once a head of uid's runs, or after three times
 * head_reserve (30 s at least) in which none of uid's kept any. queue_reserve_add adds secs; ran: a
 * head of uid's got the GPUs it kept. */
double queue_reserved(struct daemon *d, uid_t uid);
void queue_reserve_add(struct daemon *d, uid_t uid, double secs, bool ran);
/* uid is backed off now; *until (may be NULL) says till when. */
bool queue_backed_off(const struct daemon *d, uid_t uid, double *until);
/* The waiters (queued requests) in the order they would be served; *out is xmalloc'd. */
size_t queue_in_order(const struct daemon *d, struct request ***out);
/* r's place in that order, from 1. */
size_t queue_position(const struct daemon *d, const struct request *r);

/* guard.c: the device guard ([daemon] guard = acl): each node's ACL made what the leases say. */
/* Loads libacl and finds the nodes under dev_dir, MIG instances' capability nodes by what
 * proc_dir says (nothing when the guard is off); false on a configuration it cannot serve
 * (libacl missing, an unknown admin group). */
bool guard_open(struct daemon *d, const char *dev_dir, const char *proc_dir, struct gpu_error *err);
void guard_free(struct guard *g);
/* Every node's ACL made exactly what the lease table says (a no-op with the guard off). */
void guard_sync(struct daemon *d);
/* The periodic check: its deadline into *next; the check when it is due. */
void guard_timers(struct daemon *d, double *next);
void guard_expire(struct daemon *d);
/* `list`'s guard lines, and a fingerprint of them. */
void guard_describe(const struct daemon *d, struct strbuf *sb);
uint64_t guard_fingerprint(const struct daemon *d);
/* -- time limits and backfill (issue 24): timelimit.c -- */
/* The request's `time_ms` against [daemon] default_time and max_time into r->time_limit; false:
 * refused (answered with the reason). */
bool limit_request(struct daemon *d, struct conn *c, const struct msg *m, struct request *r);
/* What the `granted` answer says of the lease's end. */
void limit_granted_msg(const struct daemon *d, const struct lease *l, struct strbuf *sb);
/* Leases past their limit and kill_grace are ended (their holders signalled the jobs at the
 * limit); *next: the next such moment. */
void limit_timers(struct daemon *d, double *next);
/* Seconds from now until request head could start, judged by the limits of the leases on the
 * GPUs it may use; a negative value: not known (a lease it needs has no limit). */
double limit_head_start(const struct daemon *d, const struct alloc_gpu *g, const struct request *head,
			uint64_t avail);
/* Backfill: requests with a time limit that ends before the head could start run on the GPUs
 * kept for it (picks filled; kept reduced). Returns the head's estimate (limit_head_start). */
double limit_backfill(struct daemon *d, const struct alloc_gpu *g, struct alloc_req *rq,
		      const size_t *order, size_t nreqs, size_t head, uint64_t *kept, uint64_t *picks,
		      uint64_t avail, const unsigned *held);
/* -- end of time limits -- */

/* -- fair share by past use (issue 24): usage.c, below lease.c -- */
/* Credits each user the GPUs its leases held since the last call, decayed (before leases
 * change, and before the values are read). */
void usage_advance(struct daemon *d);
/* uid's decayed GPU-seconds. */
double usage_of(const struct daemon *d, uid_t uid);
/* Per user index of rq (nusers, as queue_users made them) its past use, xmalloc'd; NULL when
 * the queue does not count it (fair-held, fifo). */
double *usage_users(struct daemon *d, struct request *const *reqs, size_t n,
		    const struct alloc_req *rq, size_t nusers);
void usage_render(struct daemon *d, struct strbuf *sb);
void usage_load(struct daemon *d);
/* Whether STATE/usage is due to be written now; else *next: when. */
bool usage_save_due(struct daemon *d, double *next);

/* -- idle leases (issue 24): idle.c, above sched.c -- */
/* `watch lease= token=`: the holder's connection is told when its lease is warned idle or
 * released (`event` messages). */
void idle_watch(struct daemon *d, struct conn *c, const struct msg *m);
/* c is closing: the leases it watched are watched by nobody. */
void idle_conn_gone(struct daemon *d, struct conn *c);
/* Looks at the leased GPUs every usage_poll, warns and releases; *next: the next look. */
void idle_timers(struct daemon *d, double *next);
/* What `list` (list.c) tells of a lease's limit and idleness, and of a waiter's limit, its
 * user's past use and the head's estimated start: lines appended to rec, their number. */
size_t idle_list_lease(const struct daemon *d, const struct lease *l, struct strbuf *rec);
size_t idle_list_waiter(const struct daemon *d, const struct request *r, struct strbuf *rec);
/* qtable.c: the GPUs' use read again (one NVML refresh). */
void queue_usage_refresh(struct daemon *d);
/* -- end of idle leases -- */
/* share.c: memory shares (issue 23): placement (pure, alloc.h), accounting and attribution;
 * uses no other file here (lease.c calls share_account as shares start and end). */
/* The slots' share counts and claims from the lease table (after a share starts or ends). */
void share_account(struct daemon *d);
/* After a usage refresh: each process on a GPU with shares attributed to its share (its process
 * tree: the job's, the env shell's descendants), the rest counted as used outside them. */
void share_usage(struct daemon *d);
/* [daemon] share_mps: which slots run MPS; false: err says why (a bad list). */
bool share_mps_init(struct daemon *d, struct gpu_error *err);
/* The pass's GPUs get the shares' state (g[i] for slot i). */
void share_fill(const struct daemon *d, struct alloc_gpu *g);

/* mig.c: MIG instances as lease units (issue 23), beside share.c. */
/* A request's mig_uuid, mig_slot or mig_profile; false: why says what is wrong. */
bool mig_parse(struct daemon *d, struct request *r, const struct msg *m, char *why, size_t n);
/* The pass's GPUs get their instances (leased, offered, in use). */
void mig_fill(const struct daemon *d, struct alloc_gpu *g);
/* After a usage refresh: which instances run compute processes. */
void mig_usage(struct daemon *d);
/* The instance r is offered on the GPU of mask (-1: none). */
int mig_choose(const struct daemon *d, const struct request *r, uint64_t mask);
/* The MIG UUID of lease l's instance; NULL: not a MIG lease. */
const char *mig_uuid_of(const struct daemon *d, const struct lease *l);
/* A recovered lease's instance found again by its UUID (l->mig set); false: it is gone. */
bool mig_recover(const struct daemon *d, struct lease *l);

/* The daemon's policy, struct dconf, is read by config/daemon.c: dconf_load, dconf_free
 * (config.h). */

#endif
