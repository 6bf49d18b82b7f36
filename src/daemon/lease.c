/* lease.c: the daemon's lease table (design: daemon.h): a lease granted (a fresh lock inode per
 * GPU, flock'ed and handed over, its FIFO), committed by the process that holds it, ended, and
 * reaped; the files behind it are statedir.c's, what a starting daemon recovers of them
 * recover.c's. A fresh lock inode per lease means a process that kept an old lock descriptor
 * after its lease ended holds nothing that matters; the current file is always the current
 * lease's. */
#include "daemon/daemon.h"
#include "machine/pid.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void lease_free(struct lease *l)
{
	if (!l)
		return;
	if (l->bound_fd >= 0)
		close(l->bound_fd);
	free(l->name);
	free(l->command);
	free(l->used);
	free(l);
}

void lease_add(struct daemon *d, struct lease *l)
{
	usage_advance(d); /* fair share by past use (issue 24): credited up to now */
	if (l->fifo >= 0)
		peer_watch(&d->loop, l->fifo, l);
	d->leases = grow_array(d->leases, &d->leases_cap, d->nleases + 1, sizeof *d->leases);
	d->leases[d->nleases++] = l;
	for (size_t i = 0; i < d->nslots; i++)
		if ((l->gpus >> i & 1) && !l->mem_mib && !l->mig) {
			d->slots[i].holder = l;
			d->slots[i].held_unknown = false;
		}
	if (l->mem_mib || l->mig)
		share_account(d);
	/* Before the grant's descriptors are sent: the job may open its GPU at once. */
	guard_sync(d);
}

/* memory shares (issue 23): each share's own lock file per GPU, STATE/<uuid>.lock.share-<id>:
 * shares of one GPU do not lock each other out, and the job holds what a whole lease's does. */
static void share_lock_suffix(const struct lease *l, char *buf, size_t n)
{
	snprintf(buf, n, ".share-%s", l->id);
}

void share_retire_locks(struct daemon *d, const struct lease *l)
{
	char suffix[32], name[160];
	share_lock_suffix(l, suffix, sizeof suffix);
	for (size_t i = 0; i < d->nslots; i++)
		if (l->gpus >> i & 1) {
			lease_lock_name(&d->slots[i], name, sizeof name, suffix);
			unlinkat(d->dirfd, name, 0);
		}
}

static void gpu_list(const struct daemon *d, uint64_t mask, char *buf, size_t n)
{
	size_t k = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < d->nslots && k + 8 < n; i++)
		if (mask >> i & 1)
			k += (size_t)snprintf(buf + k, n - k, "%s%u", k ? "," : "", d->slots[i].index);
}

/* What a lock file says of its lease (the daemon's words, in the proto.h format): who holds it,
 * so that a lock found held with no record (the records removed, the lock files not) is
 * accounted to its holder's uid. No token: the holder can read its lock file. */
static void lock_content(const struct lease *l, struct strbuf *sb)
{
	msg_begin(sb, "lock");
	msg_add(sb, "id", l->id, NULL);
	msg_add_u64(sb, "uid", l->uid);
	msg_add_u64(sb, "pid", (uint64_t)l->pid);
	msg_add(sb, "kind", l->kind, NULL);
	msg_add_i64(sb, "since", (int64_t)l->since);
}

/* One lock file per GPU of the lease, each a fresh inode locked before it takes the name. */
static int fresh_lock(struct daemon *d, const struct slot *s, const struct lease *l,
		      struct gpu_error *err)
{
	char name[160], tmp[160], suffix[40] = "";
	if (l->mem_mib || l->mig)
		share_lock_suffix(l, suffix, sizeof suffix);
	lease_lock_name(s, name, sizeof name, suffix);
	strcat(suffix, ".new");
	lease_lock_name(s, tmp, sizeof tmp, suffix);
	unlinkat(d->dirfd, tmp, 0);
	struct strbuf sb = {0};
	lock_content(l, &sb);
	int w = openat(d->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	bool wrote = w >= 0 && write(w, sb.buf, sb.len) == (ssize_t)sb.len;
	sb_free(&sb);
	/* The holder gets a read-only descriptor: it cannot rewrite what the file says. */
	int fd = wrote ? openat(d->dirfd, tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (w >= 0)
		close(w);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0 || renameat(d->dirfd, tmp, d->dirfd, name) != 0) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "the daemon cannot create %s/%s: %s", d->state_dir,
			 name, strerror(errno));
		if (fd >= 0)
			close(fd);
		unlinkat(d->dirfd, tmp, 0);
		return -1;
	}
	return fd;
}

/* -- time limits (issue 24; timelimit.c): the lease ends until_ns (CLOCK_REALTIME), granted
 * for limit seconds (0: no limit) -- */
void lease_set_limit(struct daemon *d, struct lease *l, double limit, uint64_t until_ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	if (!until_ns && limit > 0)
		until_ns = now + (uint64_t)(limit * 1e9);
	if (!until_ns)
		return;
	if (limit <= 0) /* read back from a record: the limit it was granted, from its start */
		limit = until_ns > (uint64_t)l->since * 1000000000ULL ?
			(double)(until_ns - (uint64_t)l->since * 1000000000ULL) / 1e9 : 1;
	l->limit = limit;
	l->until_ns = until_ns;
	l->until = d->now + (until_ns > now ? (double)(until_ns - now) / 1e9 : 0);
}

struct lease *lease_grant(struct daemon *d, struct request *r, int *fds, size_t *nfds,
			  struct gpu_error *err)
{
	*nfds = 0;
	if (!lease_state_dir_check(d)) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "the daemon's state directory %s is gone and cannot "
			 "be made again", d->state_dir);
		return NULL;
	}
	struct lease *l = xcalloc(1, sizeof *l);
	l->ev = EV_LEASE;
	l->bound_fd = -1;
	lease_random_hex(l->id, 8);
	lease_random_hex(l->token, 16);
	l->uid = r->uid;
	l->pid = r->pid;
	snprintf(l->kind, sizeof l->kind, "%s", r->kind);
	l->since = time(NULL);
	l->seq = r->seq;
	l->name = r->name ? xstrdup(r->name) : NULL;
	l->command = r->command ? xstrdup(r->command) : NULL;
	l->gpus = r->offer;
	l->mem_mib = r->req.mem_mib;
	l->mig = r->req.mig && r->offer_mig >= 0 ? r->offer_mig + 1 : 0;
	if (r->req.mig && !l->mig) {
		err->code = EXIT_BUSY;
		snprintf(err->msg, sizeof err->msg, "the MIG instance offered is gone");
		lease_free(l);
		return NULL;
	}
	if (l->mig) { /* its UUID, what the job is given and the record keeps */
		const char *u = mig_uuid_of(d, l);
		snprintf(l->mig_uuid, sizeof l->mig_uuid, "%s", u ? u : "");
	}
	l->fifo = -1;
	lease_set_limit(d, l, r->time_limit, 0); /* time limits (issue 24) */
	char fifo[64];
	snprintf(fifo, sizeof fifo, "lease-%s.fifo", l->id);
	int w = -1;
	if (mkfifoat(d->dirfd, fifo, 0600) != 0 ||
	    (l->fifo = openat(d->dirfd, fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW)) < 0 ||
	    (w = openat(d->dirfd, fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW)) < 0) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "the daemon cannot create %s/%s: %s", d->state_dir,
			 fifo, strerror(errno));
		goto fail;
	}
	fds[(*nfds)++] = w;
	for (size_t i = 0; i < d->nslots; i++) {
		if (!(l->gpus >> i & 1))
			continue;
		int fd = fresh_lock(d, &d->slots[i], l, err);
		if (fd < 0)
			goto fail;
		fds[(*nfds)++] = fd;
	}
	if (!lease_record_save(d, l)) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "the daemon cannot write its lease record in %s",
			 d->state_dir);
		goto fail;
	}
	lease_add(d, l);
	char gpus[256];
	gpu_list(d, l->gpus, gpus, sizeof gpus);
	if (l->mem_mib)
		fprintf(stderr, "gpuctl daemon: lease %s: uid %u pid %d, GPU %s (%s), share of %llu MiB\n",
			l->id, (unsigned)l->uid, (int)l->pid, gpus, l->kind,
			(unsigned long long)l->mem_mib);
	else
		fprintf(stderr, "gpuctl daemon: lease %s: uid %u pid %d, GPU %s (%s)\n", l->id,
			(unsigned)l->uid, (int)l->pid, gpus, l->kind);
	return l;
fail:
	for (size_t i = 0; i < *nfds; i++)
		close(fds[i]);
	*nfds = 0;
	if (l->fifo >= 0)
		close(l->fifo);
	unlinkat(d->dirfd, fifo, 0);
	lease_free(l);
	return NULL;
}

/* Its start time (clock ticks after boot), read by machine/pid.c; 0 when it cannot be read. */
unsigned long long lease_proc_start(pid_t pid)
{
	struct pid_stat st;
	return pid > 0 && pid_stat((unsigned)pid, &st) ? st.start : 0;
}

pid_t lease_bound_now(const struct lease *l)
{
	/* A poll of its pidfd, not a read of /proc: `list`'s fingerprint asks at every answer. */
	struct pollfd p = {.fd = l->bound_fd, .events = POLLIN};
	if (l->bound <= 0 || (l->bound_fd >= 0 && poll(&p, 1, 0) != 0))
		return 0;
	return l->bound_fd >= 0 || !l->bound_start || lease_proc_start(l->bound) == l->bound_start
	       ? l->bound : 0;
}

void lease_bind(struct lease *l, pid_t pid, unsigned long long start)
{
	if (l->bound_fd >= 0)
		close(l->bound_fd);
	l->bound = pid;
	l->bound_start = start;
	l->bound_fd = pid > 0 ? pid_open((unsigned)pid, start) : -1;
	if (l->bound_fd < 0 && errno == ESRCH)
		l->bound = 0; /* gone already, or its pid another's now */
}

/* review 2: whether a process that started at start (clock ticks after boot; 0: unknown, never
 * before) started more than 2 s before when (ticks and seconds rounded, a little clock skew). */
static bool started_before(unsigned long long start, time_t when)
{
	FILE *f = start ? fopen("/proc/uptime", "r") : NULL;
	double up = 0;
	bool ok = f && fscanf(f, "%lf", &up) == 1;
	if (f)
		fclose(f);
	double at = (double)time(NULL) - up + (double)start / (double)sysconf(_SC_CLK_TCK);
	return ok && at < (double)when - 2;
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

/* Whether the very process that connected still runs: SO_PEERPIDFD names it exactly, where
 * SO_PEERCRED's pid may name another process once it exited. 1 yes, 0 no, -1 cannot tell (an
 * older kernel: ENOPROTOOPT). Linux 6.5 to 6.14 refuse a pidfd for a peer that has exited with
 * EINVAL (its pid has no task left), later ones give one that cannot be signalled (ESRCH). */
static int peer_alive(const struct conn *c)
{
	int pfd = -1;
	socklen_t len = sizeof pfd;
	if (getsockopt(c->p.fd, SOL_SOCKET, SO_PEERPIDFD, &pfd, &len) != 0)
		return errno == ESRCH || errno == EINVAL ? 0 : -1;
	int alive = pid_signal(pfd, 0) ? 1 : errno == ESRCH ? 0 : -1;
	close(pfd);
	return alive;
}

/* The process that will hold the lease (the job, or env's holder) says so itself: its pid is
 * the kernel's word (SO_PEERCRED on a connection of its own; with `self`, SCM_CREDENTIALS on
 * the message it sent on its client's), and the token proves it got the lease from the
 * grantee. */
void lease_commit(struct daemon *d, struct conn *c, const struct msg *m)
{
	const char *id = msg_get(m, "lease"), *token = msg_get(m, "token");
	struct lease *l = NULL;
	for (size_t i = 0; id && i < d->nleases; i++)
		if (!strcmp(d->leases[i]->id, id))
			l = d->leases[i];
	if (!l || !token || strcmp(l->token, token) || l->uid != c->p.uid) {
		conn_error(d, c, 0, EXIT_DENIED, "no such lease of yours to commit");
		return;
	}
	uint64_t v;
	pid_t pid = c->p.pid;
	if (msg_get_u64(m, "self", 1, &v) && v) {
		/* `run`'s job, before its exec, on its client's connection: the holder is the
		 * process that sent this message, as the kernel attests it (SCM_CREDENTIALS; only a
		 * privileged sender can name another pid), never a pid the message names. It must
		 * be the connection's user's, and still run as that user. */
		pid = c->cred.pid;
		/* /proc hidden from the daemon (hidepid, a daemon not run as root): the process is
		 * known to exist by kill(0) and its uid is the kernel's word at the send; the old
		 * commit (a connection of its own) is taken under hidepid too. */
		bool seen = pid > 0 && lease_proc_start(pid);
		bool exists = seen || (pid > 0 && (kill(pid, 0) == 0 || errno == EPERM));
		if (pid <= 0 || c->cred.uid != c->p.uid || !exists ||
		    (seen && !pid_runs_as((unsigned)pid, c->p.uid))) {
			conn_log(d, "uid %u: self commit of lease %s from pid %d (uid %u): refused",
				 (unsigned)c->p.uid, l->id, (int)pid, (unsigned)c->cred.uid);
			conn_error(d, c, 0, EXIT_DENIED, "a self commit must come from a live process "
				   "of the connection's user, with its credentials attached "
				   "(SCM_CREDENTIALS; pid %d, uid %u on a connection of uid %u)",
				   (int)pid, (unsigned)c->cred.uid, (unsigned)c->p.uid);
			return;
		}
	} else if (peer_alive(c) == 0 ||
	    (c->p.pid > 0 && lease_proc_start(c->p.pid) && !pid_runs_as((unsigned)c->p.pid, c->p.uid))) {
		conn_log(d, "uid %u: commit of lease %s from pid %d, which has exited or now runs as "
			 "another user: refused", (unsigned)c->p.uid,
			 l->id, (int)c->p.pid);
		conn_error(d, c, 0, EXIT_DENIED, "the process that connected (pid %d) has exited or "
			   "changed user: commit from the process that holds the lease", (int)c->p.pid);
		return;
	}
	l->pid = pid;
	l->start = lease_proc_start(pid);
	if (!l->start && msg_get_u64(m, "start", UINT64_MAX, &v))
		l->start = v; /* /proc hidden from the daemon (hidepid): the process's own word */
	if (msg_get_u64(m, "bound", INT32_MAX, &v) && v) {
		/* review 2: the bound process is the client's word. Another user's that started
		 * before the lease was granted is not a container this lease started (a user naming
		 * root's long-running container's pid had `leases` say their lease was held by it);
		 * the lease is committed, bound to nothing. The user's own (env's shell, a notebook's
		 * kernel) is theirs to name. */
		unsigned long long bs = lease_proc_start((pid_t)v);
		if (!bs && kill((pid_t)v, 0) != 0 && errno == ESRCH) {
			/* No such process (yet): a pid named ahead would be whoever's gets it next. */
			conn_log(d, "uid %u: lease %s bound to pid %llu, which does not exist: not named",
				 (unsigned)c->p.uid, l->id, (unsigned long long)v);
		} else if (started_before(bs, l->since) && !pid_runs_as((unsigned)v, c->p.uid)) {
			conn_log(d, "uid %u: lease %s bound to pid %llu, another user's, which started "
				 "before the lease: not named", (unsigned)c->p.uid, l->id, (unsigned long long)v);
		} else {
			lease_bind(l, (pid_t)v, bs);
		}
	}
	lease_record_save(d, l);
	struct strbuf sb = {0};
	msg_begin(&sb, "ok");
	msg_add_u64(&sb, "id", 0);
	conn_send(d, c, &sb, NULL, 0);
	sb_free(&sb);
}

/* The lock files of GPUs in mask are retired: a descriptor kept on one locks an inode that no
 * daemon looks at again, so half a lease (the lock without the FIFO) holds nothing. */
void lease_retire_locks(struct daemon *d, uint64_t mask)
{
	char name[128];
	for (size_t i = 0; i < d->nslots; i++)
		if (mask >> i & 1) {
			lease_lock_name(&d->slots[i], name, sizeof name, "");
			unlinkat(d->dirfd, name, 0);
		}
}

void lease_end(struct daemon *d, struct lease *l)
{
	usage_advance(d); /* fair share by past use (issue 24): credited up to its end */
	char name[64];
	if (l->fifo >= 0) {
		peer_unwatch(&d->loop, l->fifo);
		close(l->fifo);
	}
	l->fifo = -1;
	if (lease_state_dir_check(d)) {
		snprintf(name, sizeof name, "lease-%s.fifo", l->id);
		unlinkat(d->dirfd, name, 0);
		snprintf(name, sizeof name, "lease-%s", l->id);
		unlinkat(d->dirfd, name, 0);
		if (!strcmp(d->state_error_file, name)) /* the record that could not be saved is moot */
			d->state_error[0] = d->state_error_file[0] = '\0';
		/* The FIFO is the lease: once its last writer closed, the lease is over even if a
		 * holder kept the lock descriptor (issue 21: a kept lock blocked the GPU after a
		 * restart, counted against nobody). */
		if (l->mem_mib || l->mig)
			share_retire_locks(d, l);
		else
			lease_retire_locks(d, l->gpus);
	}
	for (size_t i = 0; i < d->nslots; i++)
		if (d->slots[i].holder == l)
			d->slots[i].holder = NULL;
	if (l->watch) /* idle leases (issue 24): its holder's connection watches one lease fewer */
		l->watch->nwatch--;
	size_t k = 0;
	for (size_t i = 0; i < d->nleases; i++)
		if (d->leases[i] != l)
			d->leases[k++] = d->leases[i];
	d->nleases = k;
	bool share = l->mem_mib || l->mig;
	guard_sync(d); /* its user's access ends with it, before the end is told */
	if (l->limit && d->now >= l->until - 0.5) /* time limits (issue 24): say why */
		fprintf(stderr, "gpuctl daemon: lease %s ended at its time limit (%.0f s)\n", l->id,
			l->limit);
	else
		fprintf(stderr, "gpuctl daemon: lease %s ended\n", l->id);
	lease_free(l);
	if (share)
		share_account(d);
	/* The job's memory may linger in the driver for a moment: look again before judging. */
	d->usage_at = 0;
	d->last_end = d->now;
	d->sched_due = true;
}

void lease_fifo_event(struct daemon *d, struct lease *l, unsigned events)
{
	if (events & EPOLLIN) {
		/* A holder writing into its FIFO gets nothing for it: drain and ignore. */
		char buf[4096];
		for (int k = 0; k < 16 && read(l->fifo, buf, sizeof buf) > 0; k++)
			;
	}
	if (events & (EPOLLHUP | EPOLLERR)) {
		struct pollfd p = {.fd = l->fifo, .events = POLLIN};
		if (poll(&p, 1, 0) == 1 && (p.revents & POLLHUP))
			lease_end(d, l);
	}
}

void leases_reap(struct daemon *d)
{
	for (size_t i = 0; i < d->nleases;) {
		struct lease *l = d->leases[i];
		struct pollfd p = {.fd = l->fifo, .events = POLLIN};
		if (poll(&p, 1, 0) == 1 && (p.revents & POLLHUP))
			lease_end(d, l); /* removes it from the array */
		else
			i++;
	}
}

/* Whether the current lock file of slot s is locked by someone (true) or not (false). */
static bool lock_file_held(struct daemon *d, const char *name)
{
	int fd = openat(d->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	close(fd); /* drops our probe's lock when we got it */
	return held;
}

/* The GPU's own lock, or (review) a share's or MIG lease's of it (STATE/<uuid>.lock.share-<id>):
 * a share whose record is gone holds its GPU as a whole lease's lock does. */
bool lease_lock_held(struct daemon *d, const struct slot *s)
{
	char name[128], prefix[160];
	lease_lock_name(s, name, sizeof name, "");
	if (lock_file_held(d, name))
		return true;
	lease_lock_name(s, prefix, sizeof prefix, ".share-");
	size_t plen = strlen(prefix);
	bool held = false;
	int dfd = dup(d->dirfd);
	DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (dir) /* (a dup shares the offset another scan of the directory left) */
		rewinddir(dir);
	for (struct dirent *e; !held && dir && (e = readdir(dir));) {
		size_t len = strlen(e->d_name);
		if (len > plen && !strncmp(e->d_name, prefix, plen) &&
		    !(len > 4 && !strcmp(e->d_name + len - 4, ".new")))
			held = lock_file_held(d, e->d_name);
	}
	if (dir)
		closedir(dir);
	else if (dfd >= 0)
		close(dfd);
	return held;
}
