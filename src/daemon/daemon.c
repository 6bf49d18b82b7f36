/* daemon.c: the daemon's event loop (design: daemon.h). One thread, epoll, non-blocking
 * SOCK_SEQPACKET connections; the kernel says who each client is. Everything a client can make
 * the daemon hold is bounded: one message of PROTO_MAX_MSG at a time, connections per user and
 * in all, queued output per connection, idle time; file descriptors sent to the daemon are
 * closed by the kernel (no control buffer is offered). */
#include "lease/client.h"
#include "daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define PRIVATE_LINGER 2.0         /* a private daemon with nothing to do exits after this */

static const enum ev_kind listen_tag = EV_LISTEN, signal_tag = EV_SIGNAL;
static int reserve_fd = -1;        /* given up to accept (and refuse) a client at EMFILE */

/* ---- connections ---- */

static void conn_free(struct daemon *d, struct conn *c)
{
	queue_drop_conn(d, c);
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	conn_drop_out(c);
	free(c);
}

/* Refuses a client we will not serve: one reply saying why, then the door. */
static void refuse(int fd, const char *why)
{
	struct strbuf sb = {0};
	msg_error(&sb, 0, EXIT_BUSY, why);
	(void)!send(fd, sb.buf, sb.len, MSG_DONTWAIT | MSG_NOSIGNAL);
	sb_free(&sb);
	close(fd);
}

static void accept_one(struct daemon *d, int fd)
{
	struct ucred cr;
	socklen_t len = sizeof cr;
	char why[256];
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) {
		close(fd);
		return;
	}
	if (d->private_mode && cr.uid != geteuid() && cr.uid != 0) {
		refuse(fd, "this is a private gpuctl daemon; it serves only its own user");
		return;
	}
	if (d->nconns >= d->conf.max_conn) {
		snprintf(why, sizeof why, "the gpuctl daemon is serving its maximum of %u connections; "
			 "try again later", d->conf.max_conn);
		client_log(d, "refused uid %u (pid %d): %u connections in all", (unsigned)cr.uid,
			   (int)cr.pid, d->conf.max_conn);
		refuse(fd, why);
		return;
	}
	if (conns_of(d, cr.uid) >= d->conf.max_conn_per_user) {
		snprintf(why, sizeof why, "your user already has %u connections to the gpuctl daemon "
			 "(max_connections_per_user); close some and try again", d->conf.max_conn_per_user);
		client_log(d, "refused uid %u (pid %d): %u connections of that user", (unsigned)cr.uid,
			   (int)cr.pid, d->conf.max_conn_per_user);
		refuse(fd, why);
		return;
	}
	struct conn *c = xcalloc(1, sizeof *c);
	*c = (struct conn){.ev = EV_CONN, .fd = fd, .uid = cr.uid, .gid = cr.gid, .pid = cr.pid,
			   .last_active = d->now};
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		close(fd);
		free(c);
		return;
	}
	d->conns = grow_array(d->conns, &d->conns_cap, d->nconns + 1, sizeof *d->conns);
	d->conns[d->nconns++] = c;
}

static void accept_all(struct daemon *d)
{
	for (int k = 0; k < 256; k++) {
		int fd = accept4(d->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			accept_one(d, fd);
			continue;
		}
		if ((errno == EMFILE || errno == ENFILE) && reserve_fd >= 0) {
			/* Out of descriptors: take one back from the reserve to tell the client. */
			close(reserve_fd);
			fd = accept4(d->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				refuse(fd, "the gpuctl daemon is out of file descriptors; try again later");
			reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
			client_log(d, "out of file descriptors (%s)", strerror(errno == 0 ? EMFILE : errno));
		}
		return;
	}
}

static void handle(struct daemon *d, struct conn *c, const char *buf, size_t len)
{
	struct msg m;
	char why[160];
	if (!msg_decode(&m, buf, len, why, sizeof why)) {
		client_log(d, "malformed message from uid %u (pid %d): %s; disconnected", (unsigned)c->uid,
			   (int)c->pid, why);
		conn_error(d, c, 0, EXIT_USAGE, "malformed message: %s", why);
		c->dead = true;
		return;
	}
	const char *verb = msg_verb(&m);
	if (!strcmp(verb, "acquire")) {
		queue_acquire(d, c, &m);
	} else if (!strcmp(verb, "take")) {
		queue_take(d, c, &m);
	} else if (!strcmp(verb, "leave")) {
		queue_leave(d, c, &m);
	} else if (!strcmp(verb, "where")) {
		queue_where(d, c, &m);
	} else if (!strcmp(verb, "commit")) {
		lease_commit(d, c, &m);
	} else if (!strcmp(verb, "list")) {
		queue_list(d, c, &m);
	} else if (!strcmp(verb, "jobid")) {
		queue_job_ids(d, c, &m);
	} else if (!strcmp(verb, "ping")) {
		struct strbuf sb = {0};
		uint64_t id = 0;
		msg_get_u64(&m, "id", UINT64_MAX, &id);
		msg_begin(&sb, "pong");
		msg_add_u64(&sb, "id", id);
		msg_add_u64(&sb, "pid", (uint64_t)getpid());
		conn_send(d, c, &sb, NULL, 0);
		sb_free(&sb);
	} else {
		conn_error(d, c, 0, EXIT_USAGE, "unknown request '%.40s' (is this gpuctl older than the "
			   "daemon?)", verb);
	}
	msg_free(&m);
}

static void conn_read(struct daemon *d, struct conn *c)
{
	static char buf[PROTO_MAX_MSG + 1];
	/* At most a few messages per wake-up, so one busy client cannot starve the others. */
	for (int k = 0; k < 16 && !c->dead; k++) {
		struct iovec iov = {buf, sizeof buf};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
		ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				c->dead = true;
			return;
		}
		if (n == 0) {
			c->dead = true; /* the client closed (an empty datagram is no request either) */
			return;
		}
		c->last_active = d->now;
		if (mh.msg_flags & MSG_TRUNC) {
			client_log(d, "uid %u (pid %d) sent a message over %d bytes; disconnected",
				   (unsigned)c->uid, (int)c->pid, PROTO_MAX_MSG);
			conn_error(d, c, 0, EXIT_USAGE, "message over %d bytes", PROTO_MAX_MSG);
			c->dead = true;
			return;
		}
		handle(d, c, buf, (size_t)n);
	}
}

/* ---- the loop ---- */

static int open_socket(struct daemon *d, struct gpu_error *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(d->socket_path) >= sizeof sa.sun_path) {
		snprintf(err->msg, sizeof err->msg, "socket path %s is too long", d->socket_path);
		return -1;
	}
	strcpy(sa.sun_path, d->socket_path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct stat st;
	/* A stale socket from a previous run is replaced; anything else at the path is not ours. */
	if (lstat(d->socket_path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(d->socket_path);
	mode_t old = umask(d->private_mode ? 0177 : 0111);
	int r = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sa, sizeof sa);
	umask(old);
	if (r != 0 || listen(fd, 4096) != 0) {
		snprintf(err->msg, sizeof err->msg, "cannot listen on %s: %s%s", d->socket_path,
			 strerror(errno), errno == ENOENT ? " (create its directory first: systemd does "
			 "with RuntimeDirectory=gpuctl)" : "");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* Every user may connect to the shared daemon: the kernel tells it who they are. */
	chmod(d->socket_path, d->private_mode ? 0600 : 0666);
	return fd;
}

static int loop_timeout(struct daemon *d)
{
	double next = 0;
	queue_timers(d, &next);
	for (size_t i = 0; i < d->nconns; i++) {
		const struct conn *c = d->conns[i];
		if (!c->nreqs) {
			double t = (c->out ? c->out_moved : c->last_active) + d->conf.idle_timeout;
			if (!next || t < next)
				next = t;
		}
	}
	if (d->usage_due && (!next || d->usage_due < next))
		next = d->usage_due;
	if (d->probe_due && (!next || d->probe_due < next))
		next = d->probe_due;
	if (d->private_mode && !d->nconns && !d->nreqs) {
		double t = d->idle_since + PRIVATE_LINGER;
		if (!next || t < next)
			next = t;
	}
	if (d->sched_due)
		return 0;
	if (!next)
		return -1;
	double ms = (next - d->now) * 1000;
	return ms <= 0 ? 0 : ms > 3600000 ? 3600000 : (int)ms + 1;
}

static void expire(struct daemon *d)
{
	double ignored = 0;
	queue_timers(d, &ignored);
	for (size_t i = 0; i < d->nconns; i++) {
		struct conn *c = d->conns[i];
		if (c->nreqs || c->dead)
			continue;
		if (!c->out && d->now - c->last_active >= d->conf.idle_timeout) {
			c->dead = true;
		} else if (c->out && d->now - c->out_moved >= d->conf.idle_timeout) {
			/* Replies it does not read, under the size bound: idle all the same, or a client
			 * could hold its connections (and their queued replies) for ever. Waiters are
			 * kept: a stopped one keeps its place. */
			client_log(d, "uid %u (pid %d) has not read its replies for %g s; disconnected",
				   (unsigned)c->uid, (int)c->pid, d->conf.idle_timeout);
			c->dead = true;
		}
	}
	if (d->probe_due && d->now >= d->probe_due)
		probe_unknown(d);
	if (d->usage_due && d->now >= d->usage_due) {
		d->usage_due = 0;
		d->usage_at = 0;     /* force a fresh look */
		d->sched_due = true;
	}
}

static void reap_conns(struct daemon *d)
{
	size_t k = 0;
	for (size_t i = 0; i < d->nconns; i++) {
		struct conn *c = d->conns[i];
		if (c->dead)
			conn_free(d, c);
		else
			d->conns[k++] = c;
	}
	if (k != d->nconns)
		d->sched_due = true;
	d->nconns = k;
}

static void serve(struct daemon *d)
{
	struct epoll_event evs[256];
	d->idle_since = now_mono();
	while (!d->stop) {
		d->now = now_mono();
		expire(d);
		if (d->sched_due)
			queue_schedule(d);
		reap_conns(d);
		if (d->sched_due)
			queue_schedule(d);
		if (d->queue_dirty)
			queue_save(d);
		if (d->private_mode) {
			if (d->nconns || d->nreqs)
				d->idle_since = d->now;
			else if (d->now - d->idle_since >= PRIVATE_LINGER)
				break;
		}
		int n = epoll_wait(d->epfd, evs, (int)ARRAY_SIZE(evs), loop_timeout(d));
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "gpuctl daemon: epoll_wait: %s\n", strerror(errno));
			break;
		}
		d->now = now_mono();
		/* Leases first: a job that ended before a request arrived must be seen as ended.
		 * Kinds are read up front: handling a request may end (and free) a lease. */
		enum ev_kind kinds[ARRAY_SIZE(evs)];
		for (int i = 0; i < n; i++)
			kinds[i] = *(const enum ev_kind *)evs[i].data.ptr;
		for (int pass = 0; pass < 2; pass++)
			for (int i = 0; i < n; i++) {
				enum ev_kind k = kinds[i];
				if (pass == 0 && k == EV_LEASE) {
					lease_fifo_event(d, evs[i].data.ptr, evs[i].events);
				} else if (pass == 0 && k == EV_SIGNAL) {
					struct signalfd_siginfo si;
					while (read(d->sigfd, &si, sizeof si) == sizeof si)
						if (si.ssi_signo != SIGHUP)
							d->stop = true;
				} else if (pass == 1 && k == EV_LISTEN) {
					accept_all(d);
				} else if (pass == 1 && k == EV_CONN) {
					struct conn *c = evs[i].data.ptr;
					if (evs[i].events & EPOLLOUT)
						flush_out(d, c);
					if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
						conn_read(d, c);
				}
			}
	}
}

static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void daemon_free(struct daemon *d)
{
	for (size_t i = 0; i < d->nconns; i++)
		conn_free(d, d->conns[i]);
	free(d->conns);
	for (size_t i = 0; i < d->nreqs; i++) {
		free(d->reqs[i]->name);
		free(d->reqs[i]->command);
		free(d->reqs[i]);
	}
	free(d->reqs);
	for (size_t i = 0; i < d->nleases; i++) {
		if (d->leases[i]->fifo >= 0)
			close(d->leases[i]->fifo);
		lease_free(d->leases[i]);
	}
	free(d->leases);
	free(d->served);
	gpu_set_free(d->set);
	dconf_free(&d->conf);
	int fds[] = {d->lfd, d->sigfd, d->dirfd, d->epfd, d->lockfd};
	for (size_t k = 0; k < ARRAY_SIZE(fds); k++)
		if (fds[k] >= 0)
			close(fds[k]);
}

static bool take_slots(struct daemon *d, struct gpu_error *err)
{
	if (!(d->set = gpu_set_open(err)))
		return false;
	if (d->set->ngpus > GPU_MAX) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "this machine has %zu GPUs; the daemon handles %d",
			 d->set->ngpus, GPU_MAX);
		return false;
	}
	d->nslots = d->set->ngpus;
	uint64_t reserved = 0;
	if (d->conf.reserved) {
		if (!gpu_set_select(d->set, d->conf.reserved, err)) {
			char why[sizeof err->msg];
			snprintf(why, sizeof why, "%s", err->msg);
			err->code = EXIT_USAGE;
			snprintf(err->msg, sizeof err->msg, "reserved_gpus: %.3000s", why);
			return false;
		}
		for (size_t i = 0; i < d->nslots; i++)
			reserved |= (uint64_t)d->set->gpus[i].selected << i;
	}
	for (size_t i = 0; i < d->nslots; i++) {
		struct slot *s = &d->slots[i];
		d->set->gpus[i].selected = true;
		snprintf(s->uuid, sizeof s->uuid, "%s", d->set->gpus[i].uuid);
		s->index = d->set->gpus[i].index;
		s->reserved = reserved >> i & 1;
	}
	return true;
}

int daemon_main(const char *socket_path, const char *state_dir, const char *config_path,
		bool private_mode)
{
	struct daemon d = {.lfd = -1, .sigfd = -1, .dirfd = -1, .epfd = -1, .lockfd = -1,
			   .next_seq = 1, .private_mode = private_mode};
	struct gpu_error err = {.code = EXIT_FAIL};
	d.socket_path = xstrdup(socket_path);
	d.state_dir = xstrdup(state_dir);
	int rc = EXIT_FAIL;
	if (!dconf_load(&d.conf, config_path)) {
		rc = EXIT_USAGE;
		goto out;
	}
	raise_nofile();
	reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	d.now = now_mono();
	if (!take_slots(&d, &err) || !state_dir_open(&d, &err)) {
		rc = err.code;
		fprintf(stderr, "gpuctl daemon: %s\n", err.msg);
		goto out;
	}
	if ((d.epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 || (d.sigfd = signals_fd()) < 0) {
		fprintf(stderr, "gpuctl daemon: %s\n", strerror(errno));
		goto out;
	}
	leases_recover(&d);
	queue_load(&d);
	if ((d.lfd = open_socket(&d, &err)) < 0) {
		fprintf(stderr, "gpuctl daemon: %s\n", err.msg);
		goto out;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = (void *)&listen_tag};
	epoll_ctl(d.epfd, EPOLL_CTL_ADD, d.lfd, &ev);
	ev.data.ptr = (void *)&signal_tag;
	epoll_ctl(d.epfd, EPOLL_CTL_ADD, d.sigfd, &ev);
	fprintf(stderr, "gpuctl daemon: pid %d serving %zu GPU%s on %s (state in %s%s)\n", (int)getpid(),
		d.nslots, d.nslots == 1 ? "" : "s", d.socket_path, d.state_dir,
		private_mode ? "; private: this user only" : "");
	client_ready();
	d.sched_due = true;
	serve(&d);
	queue_save(&d);
	fprintf(stderr, "gpuctl daemon: stopped; %zu lease%s held on (they end with their jobs)\n",
		d.nleases, d.nleases == 1 ? "" : "s");
	rc = EXIT_OK;
out:
	daemon_free(&d);
	free(d.socket_path);
	free(d.state_dir);
	if (reserve_fd >= 0)
		close(reserve_fd);
	return rc;
}
