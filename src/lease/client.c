/* client.c: connecting to the daemon, and starting this user's private daemon when no shared
 * one is installed (see client.h).
 *
 * Which daemon: the shared one at $GPUCTL_SOCKET or /run/gpuctl/gpuctl.sock. Only when no socket
 * exists there and the shared daemon is not installed (shared_installed) does gpuctl fall back
 * to a private daemon (state in $GPUCTL_STATE_DIR, $XDG_RUNTIME_DIR/gpuctl, or /tmp/gpuctl-UID
 * (~/.gpuctl-private where another user took that),
 * a directory that must be the user's own and private), and it says so, once per session:
 * private leases coordinate one user's jobs, not other users'. An installed daemon that is down
 * (its socket refuses or is gone: restarting, crashed) is waited for, never bypassed: leasing
 * around the shared daemon would let two jobs hold one GPU. */
#include "base/peer.h"
#include "lease/client.h"
#include "machine/pid.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#define CONNECT_RETRY_SECONDS 10   /* a shared daemon that is restarting */
#define SPAWN_SECONDS 10           /* a private daemon opening NVML */

const char *client_socket_path(void)
{
	const char *s = getenv("GPUCTL_SOCKET");
	return s && *s ? s : DEFAULT_SOCKET;
}

static double answer_timeout(void)
{
	static volatile int said;
	const char *s = getenv("GPUCTL_DAEMON_TIMEOUT");
	double t;
	if (!s)
		return 5.0;
	if (parse_duration(s, MAX_SECONDS, &t) && t > 0)
		return t;
	env_bad(&said, "GPUCTL_DAEMON_TIMEOUT", s, "a duration over 0 such as 5, 0.5, 30s or 2m",
		"the daemon's answers are waited for 5 s");
	return 5.0;
}

/* A directory for this user alone: made if missing, refused if anyone else owns or can write it
 * (another user could have made it first in /tmp). */
static bool own_dir(const char *dir, struct gpu_error *err)
{
	struct stat st;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "cannot create %s for your private leases: %s", dir,
			 strerror(errno));
		return false;
	}
	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "%s is not a private directory of yours (owner, mode "
			 "or a symbolic link); remove it or set GPUCTL_STATE_DIR", dir);
		return false;
	}
	return true;
}

/* Where this user's private daemon lives, made or not (caller frees). Without XDG_RUNTIME_DIR
 * it is /tmp/gpuctl-UID, unless another user made that first (a sticky /tmp: the user cannot
 * remove it, and every private lease failed): then ~/.gpuctl-private, which is kept from then
 * on while it is there, so that every command finds the same daemon. */
static char *private_dir_path(void)
{
	const char *s = getenv("GPUCTL_STATE_DIR"), *x = getenv("XDG_RUNTIME_DIR");
	if (s && *s)
		return xstrdup(s);
	if (x && *x == '/')
		return xasprintf("%s/gpuctl", x);
	const char *home = getenv("HOME");
	char *alt = home && *home == '/' ? xasprintf("%s/.gpuctl-private", home) : NULL;
	char *tmp = xasprintf("/tmp/gpuctl-%u", (unsigned)geteuid());
	struct stat st;
	bool taken = lstat(tmp, &st) == 0 && (!S_ISDIR(st.st_mode) || st.st_uid != geteuid());
	if (alt && (taken || (lstat(alt, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid()))) {
		free(tmp);
		return alt;
	}
	free(alt);
	return tmp;
}

/* Closes every descriptor from lowest up, so that nothing of the caller's passes to a server it
 * starts (a lease's descriptors would keep the lease past its holder). close_range is Linux
 * 5.9, and an old container runtime's seccomp profile refuses it: then the descriptors
 * /proc/self/fd lists, read with getdents64 (no allocation in a forked child), again until a
 * pass finds none; without /proc, every one below the limit. */
static void close_from(int lowest)
{
	if (syscall(SYS_close_range, (unsigned)lowest, ~0U, 0U) == 0)
		return;
	int dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		long max = sysconf(_SC_OPEN_MAX);
		for (long fd = lowest; fd < (max > 0 && max < (1L << 20) ? max : 1L << 20); fd++)
			close((int)fd);
		return;
	}
	for (bool closed = true; closed;) {
		closed = false;
		char buf[4096];
		ssize_t n;
		lseek(dfd, 0, SEEK_SET);
		while ((n = getdents64(dfd, buf, sizeof buf)) > 0)
			for (ssize_t off = 0; off < n;) {
				const struct dirent64 *e = (const struct dirent64 *)(void *)(buf + off);
				off += e->d_reclen;
				char *end;
				long fd = strtol(e->d_name, &end, 10);
				if (end == e->d_name || *end || fd < lowest || fd == dfd)
					continue;
				close((int)fd);
				closed = true;
			}
	}
	close(dfd);
}

/* The directory of this user's private daemon (caller frees). */
static char *private_state_dir(struct gpu_error *err)
{
	char *dir = private_dir_path();
	if (!own_dir(dir, err)) {
		free(dir);
		return NULL;
	}
	return dir;
}

int client_connect(struct dclient *dc, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path)
		return ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		int e = errno;
		close(fd);
		return e;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	struct ucred cr;
	socklen_t len = sizeof cr;
	dc->daemon_pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 ? cr.pid : 0;
	dc->fd = fd;
	free(dc->path);
	dc->path = xstrdup(path);
	return 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

bool client_spawn(const char *dir, const char *logname, const char *const *args, const char *what,
		  struct gpu_error *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		die(EXIT_FAIL, "pipe: %s", strerror(errno));
	char *logp = xasprintf("%s/%s", dir, logname);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		die(EXIT_FAIL, "fork: %s", strerror(errno));
	if (pid == 0) {
		setsid();
		if (fork() != 0)
			_exit(0);
		struct stat st;
		int flags = O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC;
		if (stat(logp, &st) == 0 && st.st_size > (1 << 20))
			flags |= O_TRUNC;
		int log = open(logp, flags, 0600), null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(log >= 0 ? log : null, 1);
		dup2(log >= 0 ? log : null, 2);
		dup2(p[1], 3);
		close_from(4);
		setenv(PEER_READY_ENV, "3", 1); /* the server's peer_ready writes to it */
		/* Signals the caller ignored or blocked (nohup, a waiter's mask) are not ours. */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execv("/proc/self/exe", (char *const *)args);
		_exit(127);
	}
	close(p[1]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	struct pollfd pf = {.fd = p[0], .events = POLLIN};
	char c = 0;
	int r;
	while ((r = poll(&pf, 1, SPAWN_SECONDS * 1000)) < 0 && errno == EINTR)
		;
	bool ready = r == 1 && read(p[0], &c, 1) == 1;
	close(p[0]);
	if (!ready && r == 0) {
		err->code = EXIT_DAEMON;
		snprintf(err->msg, sizeof err->msg, "%s did not start within %d s (see %s)", what,
			 SPAWN_SECONDS, logp);
	}
	free(logp);
	return ready || r != 0; /* EOF: another one won the race, or it failed: try to connect */
}

/* Starts `gpuctl daemon --private` in its own session (it outlives this command while anyone
 * is connected) and waits until it listens, or says why it could not. */
static bool spawn_private(const char *dir, const char *sock, struct gpu_error *err)
{
	const char *args[] = {"gpuctl", "daemon", "--private", "--socket", sock, "--state-dir", dir,
			      NULL};
	return client_spawn(dir, "daemon.log", args, "your private gpuctl daemon", err);
}

/* The session a notice was given in: its id (the leader's pid) and the leader's start time, so
 * that a pid reused by a later session's leader names another session. */
static void session_key(char *buf, size_t len)
{
	pid_t sid = getsid(0);
	struct pid_stat st;
	unsigned long long start = sid > 0 && pid_stat((unsigned)sid, &st) ? st.start : 0;
	snprintf(buf, len, "notice-%d-%llu", (int)sid, start);
}

/* Whether the notice was given in this session already; if not, marks it given. The marker is
 * a file in the private state directory, checked again here to be the user's alone (another
 * user who could write it could silence the notice, or have us create files through a link);
 * markers of sessions that have ended are removed, so they do not pile up. Any doubt: not
 * given (the notice is said once more rather than never). */
static bool noticed_in_session(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (dfd < 0)
		return false;
	if (fstat(dfd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(dfd);
		return false;
	}
	char key[64];
	session_key(key, sizeof key);
	int fd = openat(dfd, key, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	bool given = fd < 0 && errno == EEXIST;
	if (fd >= 0) {
		close(fd);
		int d2 = dup(dfd);
		DIR *dp = d2 >= 0 ? fdopendir(d2) : NULL;
		if (!dp && d2 >= 0)
			close(d2);
		for (struct dirent *e; dp && (e = readdir(dp));) {
			int sid;
			unsigned long long start;
			char other[64];
			if (sscanf(e->d_name, "notice-%d-%llu", &sid, &start) != 2 || !strcmp(e->d_name, key))
				continue;
			struct pid_stat ps;
			snprintf(other, sizeof other, "notice-%d-%llu", sid, start);
			if (sid > 0 && (!pid_stat((unsigned)sid, &ps) || ps.start != start) &&
			    !strcmp(other, e->d_name))
				unlinkat(dfd, e->d_name, 0);
		}
		if (dp)
			closedir(dp);
	}
	close(dfd);
	return given;
}

void client_private_notice(const char *shared, const char *dir)
{
	static bool said;
	if (said)
		return;
	said = true;
	if (noticed_in_session(dir))
		return;
	fprintf(stderr, "gpuctl: note: no gpuctl daemon at %s, so leases coordinate only your own "
		"jobs (private state in %s); an administrator enables the shared one with `systemctl "
		"enable --now gpuctl` (gpuctl-daemon(8))\n", shared, dir);
}

/* Lease records in the private state directory: a private daemon exits when idle, and the leases
 * it granted live on in their holders; the next one recovers them from these. Read with
 * getdents64 into the stack, not opendir, whose buffer would be allocated at every refresh of a
 * long-running reader (the exporter) while no daemon runs. */
static bool has_records(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_Alignas(struct dirent64) char buf[4096];
	ssize_t n;
	bool found = false;
	while (fd >= 0 && !found && (n = getdents64(fd, buf, sizeof buf)) > 0)
		for (ssize_t off = 0; off < n && !found;) {
			const struct dirent64 *e = (const struct dirent64 *)(buf + off);
			found = !strncmp(e->d_name, "lease-", 6);
			off += e->d_reclen;
		}
	if (fd >= 0)
		close(fd);
	return found;
}

/* Whether the shared daemon is installed here, though its socket is gone (stopped, crashed,
 * restarting): its runtime directory (the socket's, /run/gpuctl, which systemd keeps across
 * restarts) still holds its state directory, or, at the default path, systemd starts its unit at
 * boot (one that failed to start has no socket yet). Then leases are never private: they would
 * not see the shared daemon's live leases, and two jobs would hold one GPU. The state directory
 * of this user's own private daemon is no sign of it (its socket may sit beside it). What says
 * so goes into why. */
static bool shared_installed(const char *sock, char *why, size_t whylen)
{
	const char *slash = strrchr(sock, '/');
	char *state = xasprintf("%.*s/state", slash ? (int)(slash - sock) : 1, slash ? sock : ".");
	char *priv = private_dir_path();
	struct stat st, pst;
	bool installed = stat(state, &st) == 0 && S_ISDIR(st.st_mode) &&
			 !(stat(priv, &pst) == 0 && pst.st_dev == st.st_dev && pst.st_ino == st.st_ino);
	if (installed)
		snprintf(why, whylen, "its state directory %s is there", state);
	static const char unit[] = "/etc/systemd/system/multi-user.target.wants/gpuctl.service";
	if (!installed && !strcmp(sock, DEFAULT_SOCKET) && access(unit, F_OK) == 0) {
		installed = true;
		snprintf(why, whylen, "systemd starts it at boot (%s)", unit);
	}
	free(state);
	free(priv);
	return installed;
}

static bool open_private(struct dclient *dc, enum dclient_mode mode, const char *shared,
			 struct gpu_error *err)
{
	char *dir = private_state_dir(err);
	if (!dir)
		return false;
	char *sock = xasprintf("%s/gpuctl.sock", dir);
	bool ok = false;
	int e = client_connect(dc, sock);
	if (e == 0) {
		ok = true;
	} else if (mode == DC_READ && !has_records(dir)) {
		err->code = EXIT_OK; /* no daemon of any kind, no lease it left: nothing is leased */
	} else if (spawn_private(dir, sock, err)) {
		for (int i = 0; i < 50 && (e = client_connect(dc, sock)) != 0; i++)
			sleep_ms(20);
		ok = e == 0;
		if (!ok) {
			err->code = EXIT_DAEMON;
			snprintf(err->msg, sizeof err->msg, "cannot reach your private gpuctl daemon at %s: "
				 "%s (see %s/daemon.log)", sock, strerror(e), dir);
		}
	}
	if (ok) {
		dc->private_mode = true;
		if (mode == DC_LEASE)
			client_private_notice(shared, dir);
	}
	free(sock);
	free(dir);
	return ok;
}

/* A signal that ends a wait came while it is blocked (a waiter blocks them outside ppoll): the
 * wait for a daemon ends, and the caller sees it pending. Unblocked, it has ended us already. */
static bool signal_pending(void)
{
	sigset_t p;
	return sigpending(&p) == 0 && (sigismember(&p, SIGINT) || sigismember(&p, SIGTERM) ||
					sigismember(&p, SIGHUP));
}

bool dclient_open(struct dclient *dc, enum dclient_mode mode, struct gpu_error *err)
{
	*dc = (struct dclient){.fd = -1, .timeout = answer_timeout(), .next_id = 1};
	const char *path = client_socket_path();
	/* A shared daemon restarting comes back in a moment: wait for it, twice the answer timeout
	 * (10 s by default), before saying it is not there. */
	double wait = 2 * dc->timeout < CONNECT_RETRY_SECONDS ? 2 * dc->timeout : CONNECT_RETRY_SECONDS;
	double until = now_mono() + (mode == DC_LEASE ? wait : 0);
	if (mode == DC_LEASE_NOW)
		mode = DC_LEASE;
	bool told = false;
	char installed[300] = "";
	for (;;) {
		int e = client_connect(dc, path);
		if (e == 0)
			return true;
		if (e == ENOENT && !installed[0] && !shared_installed(path, installed, sizeof installed))
			return open_private(dc, mode, path, err);
		if ((e == ECONNREFUSED || e == EAGAIN || e == ENOENT) && now_mono() < until) {
			if (!told)
				fprintf(stderr, "gpuctl: waiting up to %g s for the gpuctl daemon at %s (%s)\n",
					wait, path, e == ENOENT ? "installed, but its socket is not there yet"
					: strerror(e));
			told = true;
			sleep_ms(100);
			if (!signal_pending())
				continue;
			err->code = EXIT_DAEMON;
			snprintf(err->msg, sizeof err->msg, "interrupted while waiting for the gpuctl daemon "
				 "at %s", path);
			return false;
		}
		err->code = EXIT_DAEMON;
		if (e == ENOENT)
			snprintf(err->msg, sizeof err->msg, "the gpuctl daemon is installed (%s) but not "
				 "running: no socket at %s; leases are not made around it (they would not "
				 "see its leases). An administrator can start it: `systemctl start gpuctl`",
				 installed, path);
		else
			snprintf(err->msg, sizeof err->msg, "cannot reach the gpuctl daemon at %s: %s; %s",
				 path, strerror(e), e == ECONNREFUSED ? "it is not running (an administrator "
				 "can start it: `systemctl start gpuctl`)" : e == EAGAIN ? "it is not accepting "
				 "connections (stopped or overloaded?)" : "check GPUCTL_SOCKET");
		return false;
	}
}

bool dclient_open_at(struct dclient *dc, const char *path, struct gpu_error *err)
{
	*dc = (struct dclient){.fd = -1, .timeout = answer_timeout(), .next_id = 1};
	int e = client_connect(dc, path);
	if (e) {
		err->code = EXIT_DAEMON;
		snprintf(err->msg, sizeof err->msg, "cannot reach the gpuctl daemon at %s: %s", path,
			 strerror(e));
	}
	return e == 0;
}

void dclient_close(struct dclient *dc)
{
	if (dc->fd >= 0)
		close(dc->fd);
	free(dc->path);
	*dc = (struct dclient){.fd = -1};
}

static void lost(const struct dclient *dc, struct gpu_error *err, const char *what)
{
	err->code = EXIT_DAEMON;
	snprintf(err->msg, sizeof err->msg, "%s (pid %d, %.200s) %.300s",
		 dc->peer ? dc->peer : "the gpuctl daemon", (int)dc->daemon_pid, dc->path ? dc->path : "?",
		 what);
}

bool dclient_send(struct dclient *dc, const struct strbuf *msg, struct gpu_error *err)
{
	return dclient_send_fds(dc, msg, NULL, 0, err);
}

bool dclient_send_fds(struct dclient *dc, const struct strbuf *msg, const int *fds, size_t nfds,
		      struct gpu_error *err)
{
	/* Sent at once where the socket has room (nearly always: a syscall less per request,
	 * issue 22); a full one is waited on, within the timeout. */
	dc->more = false;
	ssize_t n = proto_send(dc->fd, msg->buf, msg->len, fds, nfds, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == ENOBUFS)) {
		struct pollfd p = {.fd = dc->fd, .events = POLLOUT};
		if (poll(&p, 1, (int)(dc->timeout * 1000)) != 1) {
			lost(dc, err, "does not take requests (stopped or overloaded?)");
			return false;
		}
		n = proto_send(dc->fd, msg->buf, msg->len, fds, nfds, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	if (n != (ssize_t)msg->len) {
		char why[128];
		snprintf(why, sizeof why, "closed the connection (%s): it stopped or restarted",
			 strerror(errno));
		lost(dc, err, why);
		return false;
	}
	return true;
}


int dclient_recv(struct dclient *dc, struct msg *m, int *fds, size_t *nfds, int timeout_ms,
		 const sigset_t *sigmask, struct gpu_error *err)
{
	static char buf[PROTO_MAX_MSG + 1];
	static bool buf_hot;
	if (!buf_hot && heap_prefaulting()) {   /* a big view's parts fill it: one call, not 16 faults */
		mem_prefault(buf, sizeof buf);
		buf_hot = true;
	}
	*nfds = 0;
	bool cut, tried = dc->more;
	dc->more = false;
	/* A reply's later part is usually there already: read without a wait first. */
	ssize_t n = tried ? proto_recv(dc->fd, buf, sizeof buf, fds, PROTO_MAX_FDS, nfds, &cut) : -1;
	if (!tried || (n < 0 && errno == EAGAIN)) {
		struct pollfd p = {.fd = dc->fd, .events = POLLIN};
		struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
		int r = ppoll(&p, 1, timeout_ms < 0 ? NULL : &ts, sigmask);
		if (r < 0 && errno != EINTR) {
			lost(dc, err, strerror(errno));
			return -1;
		}
		if (r <= 0)
			return 0;
		n = proto_recv(dc->fd, buf, sizeof buf, fds, PROTO_MAX_FDS, nfds, &cut);
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	char why[200];
	if (n <= 0 || cut) {
		for (size_t i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		lost(dc, err, n <= 0 ? "closed the connection: it stopped or restarted"
				     : "sent a message gpuctl cannot read (is the daemon newer?)");
		return -1;
	}
	if (!msg_decode(m, buf, (size_t)n, why, sizeof why)) {
		for (size_t i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		char what[300];
		snprintf(what, sizeof what, "sent a malformed message (%s)", why);
		lost(dc, err, what);
		return -1;
	}
	dc->more = true;
	return 1;
}

bool dclient_call(struct dclient *dc, const struct strbuf *req, struct msg *reply,
		  struct gpu_error *err)
{
	/* The answer is the one that carries the request's id: on a connection that another
	 * request shares (run's, where the job's own commit, id 0, may be answered late: spawn.c),
	 * an earlier answer must not pass for this one's (a watch that took the commit's "ok" left
	 * its lease unwatched, and the daemon released it under a running job). */
	uint64_t want = 0, got;
	struct msg rq;
	bool has_id = msg_decode(&rq, req->buf, req->len, NULL, 0);
	if (has_id) {
		has_id = msg_get_u64(&rq, "id", UINT64_MAX, &want);
		msg_free(&rq);
	}
	if (!dclient_send(dc, req, err))
		return false;
	int fds[PROTO_MAX_FDS];
	size_t nfds;
	double until = now_mono() + dc->timeout;
	for (;;) {
		double left = until - now_mono();
		int r = left > 0 ? dclient_recv(dc, reply, fds, &nfds, (int)(left * 1000) + 1, NULL, err) : 0;
		for (size_t i = 0; r == 1 && i < nfds; i++)
			close(fds[i]); /* none expected here */
		if (r < 0)
			return false;
		if (r == 0 && now_mono() >= until) {
			char why[160];
			snprintf(why, sizeof why, "did not answer within %g s: it may be stopped or "
				 "overloaded%s", dc->timeout, dc->peer ? "" : " (an administrator can check "
				 "`systemctl status gpuctl`)");
			lost(dc, err, why);
			return false;
		}
		if (r == 1 && has_id && !(msg_get_u64(reply, "id", UINT64_MAX, &got) && got == want)) {
			msg_free(reply);   /* an earlier request's answer: not this one's */
			continue;
		}
		if (r == 1) {
			if (!strcmp(msg_verb(reply), "error")) {
				msg_error_read(reply, "the daemon refused the request", err);
				msg_free(reply);
				return false;
			}
			return true;
		}
	}
}
