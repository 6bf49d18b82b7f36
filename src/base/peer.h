/* peer.h: the event loop both servers stand on, `gpuctl daemon` and the job runner (as tmux's
 * proc.c serves its server and its client). It knows sockets, not gpuctl:
 * - one listening SOCK_SEQPACKET Unix socket; clients accepted non-blocking and close-on-exec,
 *   each known by the kernel's word on who it is (SO_PEERCRED), never by what it says; the
 *   program admits or refuses each (its policy, its words);
 * - out of descriptors (EMFILE), a reserve descriptor given up to accept one waiting client and
 *   tell it so, then taken again (without it the client would wait in the backlog, unanswered);
 * - per peer, output sent at once or queued with the descriptors it carries, up to a byte bound
 *   (none: a peer that cannot take a message now is dropped); a peer over it, or gone, is marked
 *   dead for its owner to close at the end of the loop iteration;
 * - epoll: everything watched starts with its kind (an int, the program's own numbering), read
 *   for a whole batch of events before any is handled; the objects themselves stay the owner's
 *   to keep alive: none is freed before the batch is handled (both servers free theirs only at
 *   the top of the next iteration);
 * - a loop step with a timeout for the soonest deadline, and a linger: a server with nothing to
 *   do exits after it;
 * - the start handshake of a server started on demand (the private daemon, the job runner):
 *   the starter (lease/client.c) passes the write end of a pipe and names it in PEER_READY_ENV;
 *   the server writes a byte to it once it listens (peer_ready). */
#ifndef GPUCTL_PEER_H
#define GPUCTL_PEER_H

#include "base/proto.h"
#include "base/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define PEER_MAX_EVENTS 256       /* events one peer_wait returns at most */
#define PEER_READY_ENV "GPUCTL_READY_FD"

struct peer_loop {
	int epfd, sigfd;          /* sigfd: TERM, INT and HUP (signals_fd) */
	int lfd;                  /* the listening socket; -1: none (yet, or any more) */
	int reserve;              /* /dev/null, given up at EMFILE to refuse a client; -1: none */
	struct strbuf refusal;    /* what that client is told */
	double linger;            /* seconds with nothing to do before the server exits; 0: never */
	double idle_since;        /* monotonic */
	bool idle;                /* nothing to do at the last peer_linger */
};

/* A message queued for a peer, with the descriptors it carries (closed once sent). */
struct peer_msg {
	struct peer_msg *next;
	size_t len, nfds;
	int *fds;                 /* the descriptors it carries (NULL: none), freed with it */
	char buf[];               /* its bytes, in the same allocation */
};

/* What a queued message costs: its bytes and its record (a queue of 19-byte replies counted by
 * their bytes alone, each in a 312-byte record that had room for 70 descriptors, held 17 times
 * its bound). The record is small now, so that a bound counted so still queues the answers to a
 * runner's 4,096 queued jobs resent at once. */
#define PEER_MSG_COST(len) ((len) + sizeof(struct peer_msg))

/* A connected client; programs embed it first in their own connection. */
struct peer {
	int kind;                 /* first: the epoll tag */
	int fd;
	uid_t uid;                /* the kernel's word (SO_PEERCRED) */
	gid_t gid;
	pid_t pid;
	struct peer_loop *loop;
	struct peer_msg *out, *out_tail;
	size_t out_bytes;         /* queued: what the queue costs in memory (PEER_MSG_COST each) */
	size_t out_max;           /* the bound on out_bytes; 0: nothing is queued */
	double out_moved;         /* monotonic: when its queued output last moved (or began) */
	bool dead;                /* to be closed by its owner at the end of this loop iteration */
	bool want_out;            /* EPOLLOUT registered */
};

/* One event, its kind read when the wait returned. */
struct peer_event {
	int kind;
	void *ptr;                /* what was watched (it starts with kind) */
	uint32_t events;          /* EPOLLIN, EPOLLOUT, EPOLLHUP, EPOLLERR */
};

/* Nothing open; peer_loop_free is then safe. */
void peer_loop_init(struct peer_loop *l);
/* The epoll set and the signalfd. false: errno. */
bool peer_loop_open(struct peer_loop *l);
void peer_loop_free(struct peer_loop *l);
/* Keeps a descriptor in reserve to tell one client refusal (a copy is kept) when out of them. */
void peer_reserve(struct peer_loop *l, const struct strbuf *refusal);

/* Whether path fits a Unix socket's address. */
bool peer_path_fits(const char *path);
/* Listens on path (l->lfd) with the given backlog, the socket created under umask mask. false:
 * errno (ENAMETOOLONG: path does not fit), nothing left open. */
bool peer_listen(struct peer_loop *l, const char *path, mode_t mask, int backlog);
/* Closes the listening socket: nobody new can connect. */
void peer_unlisten(struct peer_loop *l);
/* Takes up to max clients waiting on l->lfd, each with the kernel's word on who it is (one whose
 * word cannot be had is closed), to admit, which adds it (peer_add) or refuses it (peer_refuse).
 * Out of descriptors, the reserve is given up to refuse one waiting client with l->refusal and
 * opened again. Returns 0, or then the errno it was left with (for the log). */
int peer_accept(struct peer_loop *l, int max, void (*admit)(void *arg, int fd, const struct ucred *cr),
		void *arg);
/* Sets up p (kind, fd, who, the bound on its queued output) and watches it. false: fd closed. */
bool peer_add(struct peer_loop *l, struct peer *p, int kind, int fd, const struct ucred *cr,
	      size_t out_max);
/* One message to a client we will not serve, without waiting, then the door. */
void peer_refuse(int fd, const struct strbuf *msg);
/* Unwatches and closes p, and drops its queued output (closing the descriptors it carries); the
 * owner frees p. */
void peer_close(struct peer *p);

enum peer_sent {
	PEER_SENT,                /* sent now */
	PEER_QUEUED,              /* sent as the peer reads (peer_flush) */
	PEER_LOST,                /* the peer is dead, or died now */
	PEER_OVER,                /* it died now: it does not read, and the message is over its bound */
};
/* Sends msg with fds (which this takes over and closes once sent) now, or queues it. */
enum peer_sent peer_send(struct peer *p, const struct strbuf *msg, const int *fds, size_t nfds,
			 double now);
/* Sends what is queued, as far as the peer reads it (on EPOLLOUT). */
void peer_flush(struct peer *p, double now);

/* Whether p has input waiting unread (a message the loop has not reached yet). */
bool peer_pending(const struct peer *p);

/* Watches fd for input; its events carry obj, which starts with its kind (an int). */
bool peer_watch(struct peer_loop *l, int fd, void *obj);
void peer_unwatch(struct peer_loop *l, int fd);
/* Waits up to timeout_ms (-1: no limit) for at most max (up to PEER_MAX_EVENTS) events. Their
 * number, or -1 (errno; EINTR: a signal). */
int peer_wait(struct peer_loop *l, struct peer_event *evs, int max, int timeout_ms);
/* Reads the signals that came; true if one asks the server to stop (any but SIGHUP). */
bool peer_signalled(struct peer_loop *l);

/* The linger: a server with nothing to do for seconds exits; counted from now. */
void peer_linger_start(struct peer_loop *l, double seconds, double now);
/* Once per loop iteration, before the wait: whether there is something to do; true once there
 * has been nothing for the linger's length. */
bool peer_linger(struct peer_loop *l, bool busy, double now);
/* The wait's timeout, in ms, for the soonest deadline next (monotonic; 0: none) and, while idle,
 * the linger's end: -1 for none, at most an hour. */
int peer_timeout(const struct peer_loop *l, double next, double now);

/* In a server started on demand, once it serves: tells whoever started it (PEER_READY_ENV). */
void peer_ready(void);

#endif
