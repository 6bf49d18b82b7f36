/* exporter-guard.h: the exporter's connection guard: a bound on its connections that a
 * slowloris cannot turn against scrapers, and a deadline for a request to come in.
 *
 * Every connection is in one table, with its client's address and since when it has been
 * waiting for a request (since it was accepted, or since its last answer). A request not wholly
 * received within the deadline (--timeout) of that is dropped, however slowly its bytes trickle
 * in (a header deadline: libmicrohttpd's own timeout is reset by every byte). At most
 * HTTP_GUARD_PER_ADDR connections per client address and max in all; a new connection past either
 * bound is not refused but takes the place of the longest connected one still waiting (of its
 * own address at the per-address bound): one that never completed a request first, then an idle
 * keep-alive one. A scraper sends its request at once, so what is dropped is what holds a place
 * without asking: a slowloris churns its own connections and scrapers get in. Never the victim:
 * one whose whole request header waits unread in the kernel (peeked): on a starved machine a
 * scraper's request can wait there while a slowloris reconnects past the bound a thousand times.
 *
 * A connection whose client has closed its end counts against neither bound: libmicrohttpd
 * finishes such a one (its answer sent) only in a later pass over its connections, and a crowd
 * of scrapers that got their pages and reconnected at once counted twice, past the per-address
 * bound, which then dropped a newcomer whose request was in.
 *
 * Never dropped: a connection being answered (busy). Given one more deadline: one whose bytes
 * wait in the kernel unread, since it waits on the exporter, not the exporter on it (once, every
 * serving thread held by a slow refresh dropped a crowd of scrapers whose requests were all in).
 * Only one more: a client that streams a body as fast as it is read always has bytes unread.
 *
 * Dropping is shutdown(2) of the socket, which libmicrohttpd's thread then closes: it tells the
 * guard first (http_guard_close, under the guard's lock), so the guard never touches a descriptor
 * that is no longer the connection's. The guard knows sockets, not libmicrohttpd: the unit tests
 * drive it with socket pairs and a clock of their own. */
#ifndef GPUCTL_CMD_EXPORTER_GUARD_H
#define GPUCTL_CMD_EXPORTER_GUARD_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>

enum { HTTP_GUARD_MAX = 1024, HTTP_GUARD_PER_ADDR = 256 };

struct http_conn {
	struct http_conn *prev, *next;
	int fd;
	int family;
	unsigned char addr[16];         /* the client's address, without the port */
	double since;                   /* monotonic: waiting for a request since then */
	bool busy;                      /* its request is being answered */
	bool served;                    /* it has had an answer (an idle keep-alive connection) */
	bool dropped;                   /* shut down, not yet closed: no longer counted */
};

struct http_guard {
	pthread_mutex_t lock;
	struct http_conn *head;        /* in the order they connected */
	struct http_conn *tail;
	unsigned live;                  /* connections not dropped */
	unsigned max;                   /* at most HTTP_GUARD_MAX */
	double deadline;                /* seconds a request may take to arrive */
	unsigned long long evicted, expired;   /* for the log */
	double logged;                  /* when the log last said so */
};

/* A guard for at most max connections (HTTP_GUARD_MAX where more), whose requests must be in within
 * deadline seconds. Its connections are freed by http_guard_close, each. */
void http_guard_init(struct http_guard *gd, unsigned max, double deadline);
/* A new connection on fd from sa (NULL: unknown), accepted at now: in the table, and when a
 * bound is passed, another connection (or this one) dropped. */
struct http_conn *http_guard_open(struct http_guard *gd, int fd, const struct sockaddr *sa, double now);
/* The connection is closing (its descriptor not yet closed): out of the table, freed. */
void http_guard_close(struct http_guard *gd, struct http_conn *k);
/* busy: its request is wholly in, being answered; !busy: answered at now, waiting for the next.
 * False when the guard has dropped it (its request is not to be answered). */
bool http_guard_busy(struct http_guard *gd, struct http_conn *k, bool busy, double now);
/* The header deadline at now: drops every connection that has waited on its client past it, or
 * on the exporter past twice it. */
void http_guard_sweep(struct http_guard *gd, double now);
/* Says on stderr, at most once a minute (or now, when stopping), how many connections the
 * guard dropped and why. Under the guard's lock, or after the serving threads are gone. */
void http_guard_log(struct http_guard *gd, double now, bool stopping);

#endif
