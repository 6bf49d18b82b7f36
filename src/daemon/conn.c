/* conn.c: the daemon's connections (design: daemon.h) on the servers' loop (peer.h): who may
 * connect (a private daemon serves only its own user; connections are capped in all and per
 * user) and what they are sent: a reply goes at once or is queued, with the descriptors it
 * carries, up to MAX_OUT_BYTES per connection and USER_OUT_BYTES for all of a user's; a client
 * that reads none of it is disconnected.
 * Log lines about clients are rate-limited here. Below the lease table, the queue and `list`,
 * which all answer through conn_send and conn_error. */
#include "daemon/daemon.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_OUT_BYTES (1u << 20)   /* replies queued for a client that does not read */
#define LOG_BURST 20               /* log lines about misbehaving clients per 10 s */

static struct {
	double window;
	unsigned n, dropped;
} log_rate;

/* Log lines about clients are rate-limited: 10,000 bad clients must not flood the journal. */
void conn_log(struct daemon *d, const char *fmt, ...)
{
	if (d->now - log_rate.window > 10) {
		if (log_rate.dropped)
			fprintf(stderr, "gpuctl daemon: %u more such messages suppressed\n", log_rate.dropped);
		log_rate.window = d->now;
		log_rate.n = log_rate.dropped = 0;
	}
	if (log_rate.n++ >= LOG_BURST) {
		log_rate.dropped++;
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	fputs("gpuctl daemon: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Connections of uid not yet closing. */
static size_t conns_of(const struct daemon *d, uid_t uid)
{
	size_t n = 0;
	for (size_t i = 0; i < d->nconns; i++)
		n += d->conns[i]->p.uid == uid && !d->conns[i]->p.dead;
	return n;
}

/* ---- who may connect ---- */

/* Refuses a client we will not serve: one reply saying why, then the door. */
static void refuse(int fd, const char *why)
{
	struct strbuf sb = {0};
	msg_error(&sb, 0, EXIT_BUSY, why);
	peer_refuse(fd, &sb);
	sb_free(&sb);
}

static void admit(void *arg, int fd, const struct ucred *cr)
{
	struct daemon *d = arg;
	char why[256];
	if (d->private_mode && cr->uid != geteuid() && cr->uid != 0) {
		refuse(fd, "this is a private gpuctl daemon; it serves only its own user");
		return;
	}
	if (d->nconns >= d->conf.max_conn) {
		snprintf(why, sizeof why, "the gpuctl daemon is serving its maximum of %u connections; "
			 "try again later", d->conf.max_conn);
		conn_log(d, "refused uid %u (pid %d): %u connections in all", (unsigned)cr->uid,
			   (int)cr->pid, d->conf.max_conn);
		refuse(fd, why);
		return;
	}
	if (conns_of(d, cr->uid) >= d->conf.max_conn_per_user) {
		snprintf(why, sizeof why, "your user already has %u connections to the gpuctl daemon "
			 "(max_connections_per_user); close some and try again", d->conf.max_conn_per_user);
		conn_log(d, "refused uid %u (pid %d): %u connections of that user", (unsigned)cr->uid,
			   (int)cr->pid, d->conf.max_conn_per_user);
		refuse(fd, why);
		return;
	}
	struct conn *c = xcalloc(1, sizeof *c);
	if (!peer_add(&d->loop, &c->p, EV_CONN, fd, cr, MAX_OUT_BYTES)) {
		free(c);
		return;
	}
	c->last_active = d->now;
	d->conns = grow_array(d->conns, &d->conns_cap, d->nconns + 1, sizeof *d->conns);
	d->conns[d->nconns++] = c;
}

void conn_accept(struct daemon *d)
{
	int e = peer_accept(&d->loop, 256, admit, d);
	if (e)
		conn_log(d, "out of file descriptors (%s)", strerror(e));
}

/* ---- output ---- */

/* Replies queued unread, per connection (MAX_OUT_BYTES) and for all of a user's connections
 * together: past USER_OUT_BYTES the user's connection with the most unread is closed. A user's 1,024
 * connections that sent pings and read none of the pongs held 1 MiB each (17 counted by bytes
 * alone): 2.6 GB of the daemon from 150 of them. `list` and `snapshot` bound their own answers
 * per user lower than this (4 MiB each), so what a user reads slowly is never refused here. */
#define USER_OUT_BYTES (16u << 20)

/* What uid's connections hold unread, and the one that holds the most (*most). */
static size_t queued_of(const struct daemon *d, uid_t uid, struct conn **most)
{
	size_t n = 0;
	*most = NULL;
	for (size_t i = 0; i < d->nconns; i++) {
		struct conn *k = d->conns[i];
		if (k->p.uid != uid || k->p.dead)
			continue;
		n += k->p.out_bytes;
		if (!*most || k->p.out_bytes > (*most)->p.out_bytes)
			*most = k;
	}
	return n;
}

size_t conn_user_unread(const struct daemon *d, uid_t uid)
{
	struct conn *most;
	return queued_of(d, uid, &most);
}

void conn_send(struct daemon *d, struct conn *c, struct strbuf *msg, const int *fds, size_t nfds)
{
	enum peer_sent r = peer_send(&c->p, msg, fds, nfds, d->now);
	struct conn *most;
	if (r == PEER_OVER) {
		conn_log(d, "uid %u (pid %d) does not read its replies; disconnected", (unsigned)c->p.uid,
			   (int)c->p.pid);
	/* Summed only when a reply had to wait: a client that reads sends them at once. The one
	 * closed is the user's that reads least (the most left unread), not whichever asked
	 * last: that may be the user's job runner, reading, with every queued job on it. */
	} else if (r == PEER_QUEUED && queued_of(d, c->p.uid, &most) > USER_OUT_BYTES && most) {
		conn_log(d, "uid %u (pid %d): its connections leave over %u MiB of replies unread; "
			 "the one with the most (pid %d) is closed", (unsigned)c->p.uid, (int)c->p.pid,
			 USER_OUT_BYTES >> 20, (int)most->p.pid);
		most->p.dead = true;
	}
}

void conn_error(struct daemon *d, struct conn *c, uint64_t id, int code, const char *fmt, ...)
{
	struct strbuf sb = {0};
	va_list ap;
	va_start(ap, fmt);
	msg_verrorf(&sb, id, code, fmt, ap);
	va_end(ap);
	conn_send(d, c, &sb, NULL, 0);
	sb_free(&sb);
}
