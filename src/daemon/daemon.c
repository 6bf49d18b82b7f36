/* daemon.c: the daemon's event loop and dispatch (design: daemon.h), on the servers' loop
 * (peer.h). One thread, epoll, non-blocking SOCK_SEQPACKET connections; the kernel says who each
 * client is. Everything a client can make the daemon hold is bounded: one message of
 * PROTO_MAX_MSG at a time, connections per user and in all, queued output per connection, idle
 * time; file descriptors sent to the daemon are closed (the control buffer offered has room
 * for the sender's credentials only). */
#include "daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define PRIVATE_LINGER 2.0         /* a private daemon with nothing to do exits after this */

static const int listen_tag = EV_LISTEN, signal_tag = EV_SIGNAL;

/* ---- connections ---- */

static void conn_free(struct daemon *d, struct conn *c)
{
	queue_drop_conn(d, c);
	idle_conn_gone(d, c); /* idle leases (issue 24) */
	snap_drop_conn(d, c);
	peer_close(&c->p);
	free(c);
}

static void handle(struct daemon *d, struct conn *c, const char *buf, size_t len)
{
	struct msg m;
	char why[160];
	if (!msg_decode(&m, buf, len, why, sizeof why)) {
		conn_log(d, "malformed message from uid %u (pid %d): %s; disconnected", (unsigned)c->p.uid,
			   (int)c->p.pid, why);
		conn_error(d, c, 0, EXIT_USAGE, "malformed message: %s", why);
		c->p.dead = true;
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
	} else if (!strcmp(verb, "gpus")) {
		queue_gpus(d, c, &m);
	} else if (!strcmp(verb, "watch")) { /* idle leases (issue 24) */
		idle_watch(d, c, &m);
	} else if (!strcmp(verb, "snapshot")) { /* issue 22: the shared snapshot */
		queue_snapshot(d, c, &m);
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

/* Reads and handles at most max of c's messages; returns how many it read. */
static int conn_read(struct daemon *d, struct conn *c, int max)
{
	static char buf[PROTO_MAX_MSG + 1];
	int k = 0;
	for (; k < max && !c->p.dead; k++) {
		struct iovec iov = {buf, sizeof buf};
		/* Room for the sender's credentials only: they come first, and descriptors that do
		 * not fit are closed by the kernel (any that did are closed below). */
		union {
			char buf[CMSG_SPACE(sizeof(struct ucred))];
			struct cmsghdr align;
		} u;
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
				    .msg_controllen = sizeof u.buf};
		ssize_t n = recvmsg(c->p.fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		c->cred = (struct ucred){.pid = 0};
		for (struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_CREDENTIALS &&
			    cm->cmsg_len == CMSG_LEN(sizeof(struct ucred)))
				memcpy(&c->cred, CMSG_DATA(cm), sizeof c->cred);
			else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
				for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
					int fd;
					memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
					close(fd);
				}
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				c->p.dead = true;
			return k;
		}
		if (n == 0) {
			c->p.dead = true; /* the client closed (an empty datagram is no request either) */
			return k;
		}
		c->last_active = d->now;
		if (mh.msg_flags & MSG_TRUNC) {
			conn_log(d, "uid %u (pid %d) sent a message over %d bytes; disconnected",
				   (unsigned)c->p.uid, (int)c->p.pid, PROTO_MAX_MSG);
			conn_error(d, c, 0, EXIT_USAGE, "message over %d bytes", PROTO_MAX_MSG);
			c->p.dead = true;
			return k + 1;
		}
		handle(d, c, buf, (size_t)n);
	}
	return k;
}

/* Messages read per wake-up: at most CONN_BURST from one connection, and USER_BURST from all of
 * one user's connections together, so that a user with hundreds of connections gets no more of
 * the daemon per wake-up than a user with one, and another user's `take` is read within a
 * wake-up or two however much the first sends (the rest stay readable for the next wake-up). */
#define CONN_BURST 16
#define USER_BURST 32

struct budget {
	uid_t uid;
	int left;
};

/* uid's messages left in this wake-up (b has room for one entry per event). */
static int *budget_of(struct budget *b, size_t *nb, uid_t uid)
{
	for (size_t i = 0; i < *nb; i++)
		if (b[i].uid == uid)
			return &b[i].left;
	b[*nb] = (struct budget){.uid = uid, .left = USER_BURST};
	return &b[(*nb)++].left;
}

/* ---- the loop ---- */

/* The pid of whoever listens on the socket at path (SO_PEERCRED), 0 when nobody does: connect()
 * refused means a stale socket. A full backlog (a stopped daemon's) still counts as listening. */
static pid_t socket_listener(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return 0;
	pid_t pid = 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
		struct ucred cr;
		socklen_t len = sizeof cr;
		pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.pid > 0 ? cr.pid : -1;
	} else if (errno == EAGAIN) {
		pid = -1;
	}
	close(fd);
	return pid;
}

/* One daemon per socket, as daemon.lock is one per state directory: SOCKET.lock, flock'ed for
 * the daemon's life, taken before anything in the state is touched. Without it a second daemon
 * (another --state-dir) unlinked the live socket and listened in its place: clients of each saw
 * a different lease table, and two users held one GPU. A socket that still answers is refused
 * too (a daemon of a version without the lock). The lock file is never removed: unlinking it
 * on exit would let a third daemon lock a new inode while a second waits on the old one. */
static bool lock_socket(struct daemon *d, struct gpu_error *err)
{
	err->code = EXIT_FAIL;
	if (!peer_path_fits(d->socket_path)) {
		snprintf(err->msg, sizeof err->msg, "socket path %s is too long", d->socket_path);
		return false;
	}
	char *lock = xasprintf("%s.lock", d->socket_path);
	d->socket_used = access(lock, F_OK) == 0;
	d->socklockfd = open(lock, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	bool locked = d->socklockfd >= 0 && flock(d->socklockfd, LOCK_EX | LOCK_NB) == 0;
	int e = errno;
	pid_t other = socket_listener(d->socket_path);
	if (locked && !other) {
		free(lock);
		return true;
	}
	char who[64] = "another gpuctl daemon";
	if (other > 0)
		snprintf(who, sizeof who, "another gpuctl daemon (pid %d)", (int)other);
	if (d->socklockfd < 0)
		snprintf(err->msg, sizeof err->msg, "cannot open %s: %s (it keeps one daemon per "
			 "socket)", lock, strerror(e));
	else
		snprintf(err->msg, sizeof err->msg, "%s already serves %s (%s); stop it first "
			 "(`systemctl stop gpuctl`, or end that process), or give this one another "
			 "--socket", who, d->socket_path, locked ? "it answers there" : "its lock file "
			 "is locked");
	free(lock);
	return false;
}

static bool open_socket(struct daemon *d, struct gpu_error *err)
{
	struct stat st;
	/* A stale socket from a previous run is replaced (lock_socket made sure nobody listens on
	 * it); anything else at the path is not ours. */
	if (lstat(d->socket_path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(d->socket_path);
	if (!peer_listen(&d->loop, d->socket_path, d->private_mode ? 0177 : 0111, 4096)) {
		snprintf(err->msg, sizeof err->msg, "cannot listen on %s: %s%s", d->socket_path,
			 strerror(errno), errno == ENOENT ? " (create its directory first: systemd does "
			 "with RuntimeDirectory=gpuctl)" : "");
		return false;
	}
	/* Each message carries its sender as the kernel attests it (inherited by the accepted
	 * connections): a job commits its lease on its client's connection (lease_commit). */
	int on = 1;
	if (setsockopt(d->loop.lfd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0)
		fprintf(stderr, "gpuctl daemon: SO_PASSCRED: %s (jobs commit their leases on a "
			"connection of their own)\n", strerror(errno));
	/* Every user may connect to the shared daemon: the kernel tells it who they are. */
	chmod(d->socket_path, d->private_mode ? 0600 : 0666);
	return true;
}

/* Fair share by past use (issue 24): STATE/usage written (a failure is kept, said and retried). */
static void save_usage(struct daemon *d)
{
	if (!d->past_dirty || d->past_keep || d->dirfd < 0)
		return;
	/* Another state file cannot be written (a full disk): that is the error users are told;
	 * past use waits for it (kept in memory meanwhile). */
	if (d->state_error[0] && strcmp(d->state_error_file, "usage")) {
		d->past_saved = d->now;
		return;
	}
	struct strbuf sb = {0};
	usage_render(d, &sb);
	if (daemon_write_state(d, "usage", sb.buf, sb.len))
		d->past_dirty = false;
	d->past_saved = d->now;
	sb_free(&sb);
}

static int loop_timeout(struct daemon *d)
{
	double next = 0;
	if (usage_save_due(d, &next)) /* issue 24 */
		save_usage(d);
	queue_timers(d, &next);
	idle_timers(d, &next); /* idle leases (issue 24) */
	for (size_t i = 0; i < d->nconns; i++) {
		const struct conn *c = d->conns[i];
		if (!c->nreqs && !c->nwatch) {
			double t = (c->p.out ? c->p.out_moved : c->last_active) + d->conf.idle_timeout;
			if (!next || t < next)
				next = t;
		}
	}
	if (d->usage_due && (!next || d->usage_due < next))
		next = d->usage_due;
	if (d->probe_due && (!next || d->probe_due < next))
		next = d->probe_due;
	guard_timers(d, &next);
	if (d->sched_due)
		return 0;
	return peer_timeout(&d->loop, next, d->now); /* the private daemon's linger included */
}

static void expire(struct daemon *d)
{
	double ignored = 0;
	queue_timers(d, &ignored);
	idle_timers(d, &ignored); /* idle leases (issue 24) */
	for (size_t i = 0; i < d->nconns; i++) {
		struct conn *c = d->conns[i];
		if (c->nreqs || c->nwatch || c->p.dead)
			continue;
		if (!c->p.out && d->now - c->last_active >= d->conf.idle_timeout) {
			c->p.dead = true;
		} else if (c->p.out && d->now - c->p.out_moved >= d->conf.idle_timeout) {
			/* Replies it does not read, under the size bound: idle all the same, or a client
			 * could hold its connections (and their queued replies) for ever. Waiters are
			 * kept: a stopped one keeps its place. */
			conn_log(d, "uid %u (pid %d) has not read its replies for %g s; disconnected",
				   (unsigned)c->p.uid, (int)c->p.pid, d->conf.idle_timeout);
			c->p.dead = true;
		}
	}
	if (d->probe_due && d->now >= d->probe_due)
		lease_probe_unknown(d);
	guard_expire(d);
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
		if (c->p.dead)
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
	struct peer_event evs[PEER_MAX_EVENTS];
	peer_linger_start(&d->loop, d->private_mode ? PRIVATE_LINGER : 0, now_mono());
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
		if (peer_linger(&d->loop, d->nconns || d->nreqs, d->now))
			break;
		int n = peer_wait(&d->loop, evs, (int)ARRAY_SIZE(evs), loop_timeout(d));
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "gpuctl daemon: epoll_wait: %s\n", strerror(errno));
			break;
		}
		d->now = now_mono();
		/* Leases first: a job that ended before a request arrived must be seen as ended.
		 * Kinds were read up front (peer_wait): handling a request may end (and free) a
		 * lease. */
		struct budget bud[PEER_MAX_EVENTS];
		size_t nbud = 0;
		for (int pass = 0; pass < 2; pass++)
			for (int i = 0; i < n; i++) {
				int k = evs[i].kind;
				if (pass == 0 && k == EV_LEASE) {
					lease_fifo_event(d, evs[i].ptr, evs[i].events);
				} else if (pass == 0 && k == EV_SIGNAL) {
					if (peer_signalled(&d->loop))
						d->stop = true;
				} else if (pass == 1 && k == EV_LISTEN) {
					conn_accept(d);
				} else if (pass == 1 && k == EV_CONN) {
					struct conn *c = evs[i].ptr;
					if (evs[i].events & EPOLLOUT) {
						peer_flush(&c->p, d->now);
						snap_pump(d, c);
					}
					int *left = budget_of(bud, &nbud, c->p.uid);
					if ((evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && *left > 0)
						*left -= conn_read(d, c, *left < CONN_BURST ? *left
								   : CONN_BURST);
				}
			}
	}
}

#define WATCH_MIN_NOFILE 8192   /* descriptors allowed, for the exit watch (take_slots) */

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
	free(d->past); /* fair share by past use (issue 24) */
	list_state_free(d->list);
	guard_free(d->guard);
	snap_state_free(d->snap);
	placement_free(d);
	gpu_set_free(d->set);
	dconf_free(&d->conf);
	peer_loop_free(&d->loop);
	int fds[] = {d->dirfd, d->lockfd, d->socklockfd};
	for (size_t k = 0; k < ARRAY_SIZE(fds); k++)
		if (fds[k] >= 0)
			close(fds[k]);
}

static bool take_slots(struct daemon *d, struct gpu_error *err)
{
	if (!(d->set = gpu_set_open(err)))
		return false;
	/* Its views are refreshed again and again (snapshot.c): the processes are watched for
	 * their exit, not stat'd each time (issue 22), with a quarter of the descriptors, the rest
	 * the connections', and only where the limit (raise_nofile) leaves thousands: under a
	 * low hard limit every descriptor is the connections' and the state's. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= WATCH_MIN_NOFILE)
		gpu_set_watch_exits(d->set, 4);
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
	if (!share_mps_init(d, err)) /* memory shares (issue 23) */
		return false;
	return placement_open(d, err);   /* issue 26 */
}

int daemon_main(const char *socket_path, const char *state_dir, const char *config_path,
		bool private_mode, const char *dev_dir, const char *proc_dir)
{
	struct daemon d = {.dirfd = -1, .lockfd = -1, .socklockfd = -1, .next_seq = 1,
			   .private_mode = private_mode};
	peer_loop_init(&d.loop);
	struct gpu_error err = {.code = EXIT_FAIL};
	d.socket_path = xstrdup(socket_path);
	d.state_dir = xstrdup(state_dir);
	int rc = EXIT_FAIL;
	if (!dconf_load(&d.conf, config_path)) {
		rc = EXIT_USAGE;
		goto out;
	}
	raise_nofile();
	struct strbuf full = {0};
	msg_error(&full, 0, EXIT_BUSY, "the gpuctl daemon is out of file descriptors; try again later");
	peer_reserve(&d.loop, &full);
	sb_free(&full);
	d.now = now_mono();
	if (!lock_socket(&d, &err) || !take_slots(&d, &err) || !lease_state_dir_open(&d, &err)) {
		rc = err.code;
		fprintf(stderr, "gpuctl daemon: %s\n", err.msg);
		goto out;
	}
	if (!peer_loop_open(&d.loop)) {
		fprintf(stderr, "gpuctl daemon: %s\n", strerror(errno));
		goto out;
	}
	usage_load(&d); /* fair share by past use (issue 24): before leases are added */
	leases_recover(&d);
	/* After the recovery: the nodes made what the live leases say, ended ones' access gone. */
	if (!guard_open(&d, dev_dir, proc_dir, &err)) {
		rc = err.code;
		fprintf(stderr, "gpuctl daemon: %s\n", err.msg);
		goto out;
	}
	queue_load(&d);
	if (!open_socket(&d, &err)) {
		fprintf(stderr, "gpuctl daemon: %s\n", err.msg);
		goto out;
	}
	peer_watch(&d.loop, d.loop.lfd, (void *)&listen_tag);
	peer_watch(&d.loop, d.loop.sigfd, (void *)&signal_tag);
	fprintf(stderr, "gpuctl daemon: pid %d serving %zu GPU%s on %s (state in %s%s)\n", (int)getpid(),
		d.nslots, d.nslots == 1 ? "" : "s", d.socket_path, d.state_dir,
		private_mode ? "; private: this user only" : "");
	peer_ready();
	d.sched_due = true;
	serve(&d);
	queue_save(&d);
	save_usage(&d); /* issue 24 */
	fprintf(stderr, "gpuctl daemon: stopped; %zu lease%s held on (they end with their jobs)\n",
		d.nleases, d.nleases == 1 ? "" : "s");
	rc = EXIT_OK;
out:
	daemon_free(&d);
	free(d.socket_path);
	free(d.state_dir);
	return rc;
}
