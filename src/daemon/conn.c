/* conn.c: the daemon's connections, output side (design: daemon.h): a reply is sent at once or
 * queued, with the descriptors it carries, up to MAX_OUT_BYTES per connection; a client that
 * reads none of it is disconnected. Log lines about clients are rate-limited here. Below the
 * lease table, the queue and `list`, which all answer through conn_send and conn_error. */
#include "daemon/daemon.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_OUT_BYTES (1u << 20)   /* replies queued for a client that does not read */
#define LOG_BURST 20               /* log lines about misbehaving clients per 10 s */

static struct {
	double window;
	unsigned n, dropped;
} log_rate;

/* Log lines about clients are rate-limited: 10,000 bad clients must not flood the journal. */
void client_log(struct daemon *d, const char *fmt, ...)
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

size_t conns_of(const struct daemon *d, uid_t uid)
{
	size_t n = 0;
	for (size_t i = 0; i < d->nconns; i++)
		n += d->conns[i]->uid == uid && !d->conns[i]->dead;
	return n;
}

/* ---- output ---- */

static bool send_now(struct conn *c, const char *buf, size_t len, const int *fds, size_t nfds)
{
	return proto_send(c->fd, buf, len, fds, nfds, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0;
}

static void close_fds(const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static void want_out(struct daemon *d, struct conn *c, bool on)
{
	if (c->want_out == on || c->dead)
		return;
	struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
	epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &ev);
	c->want_out = on;
}

/* Sends msg with fds (which this takes over and closes once sent) now, or queues it. */
void conn_send(struct daemon *d, struct conn *c, struct strbuf *msg, const int *fds, size_t nfds)
{
	if (c->dead) {
		close_fds(fds, nfds);
		return;
	}
	if (!c->out) {
		if (send_now(c, msg->buf, msg->len, fds, nfds)) {
			close_fds(fds, nfds);
			return;
		}
		if (errno != EAGAIN && errno != ENOBUFS) {
			close_fds(fds, nfds);
			c->dead = true;
			return;
		}
	}
	if (c->out_bytes + msg->len > MAX_OUT_BYTES) {
		client_log(d, "uid %u (pid %d) does not read its replies; disconnected", (unsigned)c->uid,
			   (int)c->pid);
		close_fds(fds, nfds);
		c->dead = true;
		return;
	}
	struct outmsg *o = xcalloc(1, sizeof *o);
	o->buf = xmalloc(msg->len);
	memcpy(o->buf, msg->buf, msg->len);
	o->len = msg->len;
	if (nfds)
		memcpy(o->fds, fds, nfds * sizeof *fds);
	o->nfds = nfds;
	if (c->out_tail) {
		c->out_tail->next = o;
	} else {
		c->out = o;
		c->out_moved = d->now;
	}
	c->out_tail = o;
	c->out_bytes += o->len;
	want_out(d, c, true);
}

void flush_out(struct daemon *d, struct conn *c)
{
	while (c->out) {
		struct outmsg *o = c->out;
		if (!send_now(c, o->buf, o->len, o->fds, o->nfds)) {
			if (errno != EAGAIN && errno != ENOBUFS)
				c->dead = true;
			return;
		}
		close_fds(o->fds, o->nfds);
		c->out_moved = d->now;
		c->out = o->next;
		if (!c->out)
			c->out_tail = NULL;
		c->out_bytes -= o->len;
		free(o->buf);
		free(o);
	}
	want_out(d, c, false);
}

/* Forgets c's queued output, closing the descriptors it would have carried. */
void conn_drop_out(struct conn *c)
{
	for (struct outmsg *o = c->out, *n; o; o = n) {
		n = o->next;
		close_fds(o->fds, o->nfds);
		free(o->buf);
		free(o);
	}
	c->out = c->out_tail = NULL;
	c->out_bytes = 0;
}

void conn_error(struct daemon *d, struct conn *c, uint64_t id, int code, const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	struct strbuf sb = {0};
	msg_error(&sb, id, code, text);
	conn_send(d, c, &sb, NULL, 0);
	sb_free(&sb);
}

