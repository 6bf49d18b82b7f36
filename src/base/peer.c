/* peer.c: the servers' event loop (see peer.h): listening, accepting with the kernel's word on
 * who connects, refusing at EMFILE, bounded output with descriptors, epoll, the wait's timeout
 * and the linger; the start handshake. One thread; nothing here blocks. */
#include "base/peer.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

void peer_loop_init(struct peer_loop *l)
{
	*l = (struct peer_loop){.epfd = -1, .sigfd = -1, .lfd = -1, .reserve = -1};
}

bool peer_loop_open(struct peer_loop *l)
{
	return (l->epfd = epoll_create1(EPOLL_CLOEXEC)) >= 0 && (l->sigfd = signals_fd()) >= 0;
}

void peer_loop_free(struct peer_loop *l)
{
	int fds[] = {l->lfd, l->sigfd, l->epfd, l->reserve};
	for (size_t k = 0; k < ARRAY_SIZE(fds); k++)
		if (fds[k] >= 0)
			close(fds[k]);
	sb_free(&l->refusal);
	peer_loop_init(l);
}

void peer_reserve(struct peer_loop *l, const struct strbuf *refusal)
{
	sb_reset(&l->refusal);
	sb_add(&l->refusal, refusal->buf, refusal->len);
	l->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* ---- listening and accepting ---- */

bool peer_path_fits(const char *path)
{
	return strlen(path) < sizeof ((struct sockaddr_un *)0)->sun_path;
}

bool peer_listen(struct peer_loop *l, const char *path, mode_t mask, int backlog)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (!peer_path_fits(path)) {
		errno = ENAMETOOLONG;
		return false;
	}
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	mode_t old = umask(mask);
	int r = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sa, sizeof sa);
	umask(old);
	if (r != 0 || listen(fd, backlog) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
		return false;
	}
	l->lfd = fd;
	return true;
}

void peer_unlisten(struct peer_loop *l)
{
	if (l->lfd >= 0)
		close(l->lfd);
	l->lfd = -1;
}

void peer_refuse(int fd, const struct strbuf *msg)
{
	(void)!send(fd, msg->buf, msg->len, MSG_DONTWAIT | MSG_NOSIGNAL);
	close(fd);
}

int peer_accept(struct peer_loop *l, int max, void (*admit)(void *arg, int fd, const struct ucred *cr),
		void *arg)
{
	for (int k = 0; k < max; k++) {
		int fd = accept4(l->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if ((errno != EMFILE && errno != ENFILE) || l->reserve < 0)
				return 0;
			/* Out of descriptors: take one back from the reserve to tell the client. */
			close(l->reserve);
			fd = accept4(l->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				peer_refuse(fd, &l->refusal);
			l->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
			return errno == 0 ? EMFILE : errno;
		}
		struct ucred cr;
		socklen_t len = sizeof cr;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) {
			close(fd);
			continue;
		}
		admit(arg, fd, &cr);
	}
	return 0;
}

bool peer_add(struct peer_loop *l, struct peer *p, int kind, int fd, const struct ucred *cr,
	      size_t out_max)
{
	*p = (struct peer){.kind = kind, .fd = fd, .uid = cr->uid, .gid = cr->gid, .pid = cr->pid,
			   .loop = l, .out_max = out_max};
	if (!peer_watch(l, fd, p)) {
		close(fd);
		p->fd = -1;
		return false;
	}
	return true;
}

/* ---- output ---- */

static bool send_now(struct peer *p, const char *buf, size_t len, const int *fds, size_t nfds)
{
	return proto_send(p->fd, buf, len, fds, nfds, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0;
}

static void close_fds(const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static void want_out(struct peer *p, bool on)
{
	if (p->want_out == on || p->dead)
		return;
	struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = p};
	epoll_ctl(p->loop->epfd, EPOLL_CTL_MOD, p->fd, &ev);
	p->want_out = on;
}

enum peer_sent peer_send(struct peer *p, const struct strbuf *msg, const int *fds, size_t nfds,
			 double now)
{
	if (p->dead || nfds > PROTO_MAX_FDS) { /* more than a message can carry: a caller's bug */
		close_fds(fds, nfds);
		p->dead = true;
		return PEER_LOST;
	}
	if (!p->out) {
		if (send_now(p, msg->buf, msg->len, fds, nfds)) {
			close_fds(fds, nfds);
			return PEER_SENT;
		}
		if (errno != EAGAIN && errno != ENOBUFS) {
			close_fds(fds, nfds);
			p->dead = true;
			return PEER_LOST;
		}
	}
	if (!p->out_max || p->out_bytes + PEER_MSG_COST(msg->len) > p->out_max) {
		close_fds(fds, nfds);
		p->dead = true;
		return PEER_OVER;
	}
	struct peer_msg *o = xmalloc(sizeof *o + msg->len);
	*o = (struct peer_msg){.len = msg->len, .nfds = nfds};
	memcpy(o->buf, msg->buf, msg->len);
	if (nfds) {
		o->fds = xmalloc(nfds * sizeof *fds);
		memcpy(o->fds, fds, nfds * sizeof *fds);
	}
	if (p->out_tail) {
		p->out_tail->next = o;
	} else {
		p->out = o;
		p->out_moved = now;
	}
	p->out_tail = o;
	p->out_bytes += PEER_MSG_COST(o->len);
	want_out(p, true);
	return PEER_QUEUED;
}

bool peer_pending(const struct peer *p)
{
	struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
	return !p->dead && p->fd >= 0 && poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

void peer_flush(struct peer *p, double now)
{
	while (p->out) {
		struct peer_msg *o = p->out;
		if (!send_now(p, o->buf, o->len, o->fds, o->nfds)) {
			if (errno != EAGAIN && errno != ENOBUFS)
				p->dead = true;
			return;
		}
		close_fds(o->fds, o->nfds);
		p->out_moved = now;
		p->out = o->next;
		if (!p->out)
			p->out_tail = NULL;
		p->out_bytes -= PEER_MSG_COST(o->len);
		free(o->fds);
		free(o);
	}
	want_out(p, false);
}

void peer_close(struct peer *p)
{
	if (p->fd >= 0) {
		peer_unwatch(p->loop, p->fd);
		close(p->fd);
		p->fd = -1;
	}
	for (struct peer_msg *o = p->out, *n; o; o = n) {
		n = o->next;
		close_fds(o->fds, o->nfds);
		free(o->fds);
		free(o);
	}
	p->out = p->out_tail = NULL;
	p->out_bytes = 0;
}

/* ---- the loop ---- */

bool peer_watch(struct peer_loop *l, int fd, void *obj)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = obj};
	return epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

void peer_unwatch(struct peer_loop *l, int fd)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
}

int peer_wait(struct peer_loop *l, struct peer_event *evs, int max, int timeout_ms)
{
	struct epoll_event ev[PEER_MAX_EVENTS];
	int n = epoll_wait(l->epfd, ev, max < PEER_MAX_EVENTS ? max : PEER_MAX_EVENTS, timeout_ms);
	for (int i = 0; i < n; i++)
		evs[i] = (struct peer_event){.kind = *(const int *)ev[i].data.ptr, .ptr = ev[i].data.ptr,
					     .events = ev[i].events};
	return n;
}

bool peer_signalled(struct peer_loop *l)
{
	struct signalfd_siginfo si;
	bool stop = false;
	while (read(l->sigfd, &si, sizeof si) == sizeof si)
		if (si.ssi_signo != SIGHUP)
			stop = true;
	return stop;
}

void peer_linger_start(struct peer_loop *l, double seconds, double now)
{
	l->linger = seconds;
	l->idle_since = now;
	l->idle = false;
}

bool peer_linger(struct peer_loop *l, bool busy, double now)
{
	if (!l->linger)
		return false;
	l->idle = !busy;
	if (busy)
		l->idle_since = now;
	return !busy && now - l->idle_since >= l->linger;
}

int peer_timeout(const struct peer_loop *l, double next, double now)
{
	if (l->linger && l->idle) {
		double t = l->idle_since + l->linger;
		if (!next || t < next)
			next = t;
	}
	if (!next)
		return -1;
	double ms = (next - now) * 1000;
	return ms <= 0 ? 0 : ms > 3600000 ? 3600000 : (int)ms + 1;
}

/* ---- started on demand ---- */

void peer_ready(void)
{
	const char *s = getenv(PEER_READY_ENV);
	unsigned long fd;
	if (s && parse_uint(s, &fd) && fd > 2 && fd < 1024) {
		(void)!write((int)fd, "1", 1);
		close((int)fd);
	}
	unsetenv(PEER_READY_ENV);
}
