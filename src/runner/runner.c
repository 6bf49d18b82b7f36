/* runner.c: the job runner's event loop (design: runner.h): one runner per user and machine
 * (flock on runner.lock), its socket, its clients, and the daemon's messages (job ids, answers
 * to each job's request), which drive the jobs; on start it reads back the records of the last
 * runner. Its one connection to the daemon (conn.c) is made again when the daemon restarts,
 * asking for every queued job again with its ticket. */
#include "runner/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINGER_SECONDS 2.0         /* nothing left to do for this long: the runner exits */
#define LOCK_SECONDS 3             /* a runner that is exiting lets go of runner.lock by then */

static const int listen_tag = REV_LISTEN, signal_tag = REV_SIGNAL;

static void on_alarm(int sig)
{
	(void)sig;
}

/* ---- the daemon ---- */

static bool resend(struct runner *r, struct gpu_error *err)
{
	struct strbuf sb = {0};
	bool ok = true;
	for (size_t i = 0; ok && i < r->njobs; i++)
		if (r->jobs[i]->req) {
			sb_reset(&sb);
			lreq_message(r->jobs[i]->req, &sb);
			ok = dclient_send(&r->dc, &sb, err);
		}
	for (size_t i = 0; ok && i < r->njobs; i++) /* idle leases (issue 24): watched again */
		if (r->jobs[i]->token[0] && r->jobs[i]->pidfd >= 0) {
			sb_reset(&sb);
			rjob_watch_message(r->jobs[i], &sb);
			ok = dclient_send(&r->dc, &sb, err);
		}
	if (ok && r->ids_req) { /* the ask for job ids went with the old connection */
		sb_reset(&sb);
		rjob_ids_message(r, &sb);
		ok = dclient_send(&r->dc, &sb, err);
	}
	sb_free(&sb);
	return ok;
}

static void daemon_msg(struct runner *r, const struct msg *m, const int *fds, size_t nfds)
{
	uint64_t id = 0;
	struct gpu_error err = {0};
	msg_get_u64(m, "id", UINT64_MAX, &id);
	if (id & RUNNER_WATCH_BIT) { /* idle leases (issue 24): a watch answered (or refused) */
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		return;
	}
	if (id & RUNNER_ALLOC_BIT) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		if (!strcmp(msg_verb(m), "error"))
			rjob_ids_failed(r, m);
		return;
	}
	struct rjob *rj = rjob_find(r, id);
	if (!rj || !rj->req) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]); /* a grant for a job cancelled meanwhile: closing releases it */
		return;
	}
	struct strbuf out = {0};
	int res = lreq_on_message(rj->req, m, fds, nfds, &out, &err);
	if (out.len)
		runner_daemon_send(r, &out);
	sb_free(&out);
	if (rj->req->ticket[0])
		snprintf(rj->j.ticket, sizeof rj->j.ticket, "%s", rj->req->ticket);
	if (res > 0) {
		struct grant g;
		lreq_take_grant(rj->req, &g);
		lreq_free(rj->req);
		free(rj->req);
		rj->req = NULL;
		g.socket = xstrdup(r->dc.path);
		rjob_start(r, rj, &g);
	} else if (res < 0) {
		lreq_free(rj->req);
		free(rj->req);
		rj->req = NULL;
		rjob_end(r, rj, JOB_FAILED, "the gpuctl daemon refused it: %s", err.msg);
	}
}

static void daemon_read(struct runner *r)
{
	for (int k = 0; k < 64 && r->up; k++) {
		struct msg m;
		int fds[PROTO_MAX_FDS];
		size_t nfds;
		struct gpu_error err = {0};
		int got = dclient_recv(&r->dc, &m, fds, &nfds, 0, NULL, &err);
		if (got < 0)
			runner_link_down(r, err.msg);
		if (got <= 0)
			return;
		if (!strcmp(msg_verb(&m), "jobid"))
			rjob_ids(r, &m);
		else if (!strcmp(msg_verb(&m), "event")) /* idle leases (issue 24) */
			rjob_event(r, &m);
		else
			daemon_msg(r, &m, fds, nfds);
		msg_free(&m);
	}
}

/* ---- clients ---- */

static void admit(void *arg, int fd, const struct ucred *cr)
{
	struct runner *r = arg;
	if (cr->uid != geteuid()) {
		close(fd); /* the socket is the user's alone: this cannot be anyone else */
		return;
	}
	struct rclient *c = xcalloc(1, sizeof *c);
	/* No output is queued: a client that does not read its answers is dropped. */
	if (!peer_add(&r->loop, &c->p, REV_CLIENT, fd, cr, 0)) {
		free(c);
		return;
	}
	r->clients = grow_array(r->clients, &r->clients_cap, r->nclients + 1, sizeof *r->clients);
	r->clients[r->nclients++] = c;
}

static void dispatch(struct runner *r, struct rclient *c, const struct msg *m, int fd)
{
	const char *verb = msg_verb(m);
	uint64_t id = 0;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	if (!strcmp(verb, "submit")) {
		rjob_submit(r, c, m, fd);
		return;
	}
	if (fd >= 0)
		close(fd);
	if (!strcmp(verb, "cancel")) {
		rjob_cancel(r, c, m);
	} else if (!strcmp(verb, "wait")) {
		rjob_wait(r, c, m);
	} else if (!strcmp(verb, "clean")) {
		rjob_clean(r, c, m);
	} else if (!strcmp(verb, "ping")) {
		struct strbuf sb = {0};
		msg_begin(&sb, "pong");
		msg_add_u64(&sb, "id", id);
		msg_add_u64(&sb, "pid", (uint64_t)getpid());
		runner_reply(r, c, &sb);
		sb_free(&sb);
	} else {
		runner_error(r, c, id, EXIT_USAGE, "unknown request '%.40s' (a newer gpuctl started "
			     "this runner?)", verb);
	}
}

static void client_read(struct runner *r, struct rclient *c)
{
	static char buf[PROTO_MAX_MSG + 1];
	for (int k = 0; k < 16 && !c->p.dead; k++) {
		/* One descriptor at most (a job's log or terminal); proto_recv closes the rest. */
		int fd = -1;
		size_t nfds;
		bool cut;
		ssize_t n = proto_recv(c->p.fd, buf, sizeof buf, &fd, 1, &nfds, &cut);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		struct msg m;
		char why[160];
		if (n <= 0 || cut || !msg_decode(&m, buf, (size_t)n, why, sizeof why)) {
			if (fd >= 0)
				close(fd);
			c->p.dead = true;
			return;
		}
		dispatch(r, c, &m, fd);
		msg_free(&m);
	}
}

static void reap_clients(struct runner *r)
{
	size_t k = 0;
	for (size_t i = 0; i < r->nclients; i++) {
		struct rclient *c = r->clients[i];
		if (!c->p.dead) {
			r->clients[k++] = c;
			continue;
		}
		rjob_drop_client(r, c);
		peer_close(&c->p);
		free(c);
	}
	r->nclients = k;
}

/* ---- a runner starting: the records of the last one ---- */

static void load_records(struct runner *r)
{
	struct job *all;
	size_t n = job_load_all(r->dirfd, &all, JOB_LOAD_FILES);
	const char *boot = job_boot_id();
	r->loading = true; /* dependents are looked at once every record is in */
	for (size_t i = 0; i < n; i++) {
		struct job *j = &all[i];
		if (j->id > r->max_id)
			r->max_id = j->id;
		if (job_final(j->state))
			continue;
		struct rjob *rj = rjob_insert(r, j);
		if (strcmp(rj->j.boot, boot)) {
			const char *was = rj->j.state == JOB_RUNNING ? "running" : "queued";
			rjob_end(r, rj, JOB_LOST, "the machine restarted while it was %s (`gpuctl submit "
				 "--again %llu` runs it again)", was, (unsigned long long)rj->j.id);
		} else if (rj->j.state == JOB_RUNNING) {
			rjob_adopt(r, rj);
		} else {
			rj->held = rj->j.nafter > 0;
			if (!rj->held)
				rjob_request(r, rj);
		}
	}
	jobs_free(all, n); /* those not moved into the table */
	r->loading = false;
	rjob_resolve(r);
}

/* ---- start and the loop ---- */

static bool take_lock(struct runner *r)
{
	r->lockfd = openat(r->dirfd, "runner.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (r->lockfd < 0) {
		fprintf(stderr, "gpuctl runner: cannot open %s/runner.lock: %s\n", r->dir, strerror(errno));
		return false;
	}
	/* Bounded: a runner that is exiting lets go at once; one that serves keeps it, and then
	 * whoever started us connects to it instead. */
	struct sigaction sa = {.sa_handler = on_alarm}, old;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, &old);
	alarm(LOCK_SECONDS);
	int rc = flock(r->lockfd, LOCK_EX);
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	if (rc != 0)
		fprintf(stderr, "gpuctl runner: another job runner serves %s; leaving it to that one\n",
			r->dir);
	return rc == 0;
}

static bool listen_on(struct runner *r)
{
	r->sock = xasprintf("%s/runner.sock", r->dir);
	if (!peer_path_fits(r->sock)) {
		fprintf(stderr, "gpuctl runner: the socket path %s is too long; set XDG_STATE_HOME to a "
			"shorter directory\n", r->sock);
		return false;
	}
	unlinkat(r->dirfd, "runner.sock", 0); /* a stale one: the lock says no runner owns it */
	if (!peer_listen(&r->loop, r->sock, 0177, 128)) {
		fprintf(stderr, "gpuctl runner: cannot listen on %s: %s\n", r->sock, strerror(errno));
		return false;
	}
	return true;
}

static int loop_timeout(struct runner *r)
{
	double next = 0;
	rjob_timers(r, &next);
	rhook_timers(r, &next); /* issue 24 */
	rjob_unsaved(r, &next);
	if (!r->up && r->reconnect_at && rjob_pending(r) && (!next || r->reconnect_at < next))
		next = r->reconnect_at;
	return peer_timeout(&r->loop, next, now_mono()); /* the linger included */
}

static void serve(struct runner *r)
{
	struct peer_event evs[64];
	peer_linger_start(&r->loop, LINGER_SECONDS, now_mono());
	while (!r->stop) {
		r->now = now_mono();
		double ignored = 0;
		rjob_timers(r, &ignored);
		rhook_timers(r, &ignored); /* issue 24 */
		if (!r->up && r->reconnect_at && r->now >= r->reconnect_at && rjob_pending(r))
			runner_link_up(r);
		reap_clients(r);
		struct stat st;
		if (fstat(r->dirfd, &st) == 0 && st.st_nlink == 0) {
			/* Its records are gone (rm -r): nothing is left to keep or to resume. */
			fprintf(stderr, "gpuctl runner: %s was removed; exiting\n", r->dir);
			break;
		}
		bool unsaved = rjob_unsaved(r, &ignored); /* records the disk refused: not lost */
		if (peer_linger(&r->loop, r->njobs || r->nclients || r->allocs || rhook_pending() || unsaved,
				r->now))
			break;
		int n = peer_wait(&r->loop, evs, (int)ARRAY_SIZE(evs), loop_timeout(r));
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "gpuctl runner: epoll_wait: %s\n", strerror(errno));
			break;
		}
		r->now = now_mono();
		for (int i = 0; i < n; i++) {
			int k = evs[i].kind;
			if (k == REV_LISTEN) {
				peer_accept(&r->loop, INT_MAX, admit, r);
			} else if (k == REV_SIGNAL) {
				if (peer_signalled(&r->loop))
					r->stop = true;
			} else if (k == REV_DAEMON) {
				daemon_read(r);
			} else if (k == REV_CLIENT) {
				client_read(r, evs[i].ptr);
			} else if (k == REV_JOB) {
				rjob_exited(r, evs[i].ptr);
			} else if (k == REV_HOOK) { /* issue 24 */
				rhook_exited(r, evs[i].ptr);
			}
		}
	}
}

int runner_main(void)
{
	struct runner r = {.lockfd = -1, .next_alloc = 1, .on_link = resend, .start = rjob_start};
	peer_loop_init(&r.loop);
	struct gpu_error err = {0};
	r.dc.fd = -1;
	int rc = EXIT_FAIL;
	r.dirfd = job_dir_open(&r.dir, &err);
	if (r.dirfd < 0) {
		fprintf(stderr, "gpuctl runner: %s\n", err.msg);
		return err.code;
	}
	if (!take_lock(&r)) {
		rc = EXIT_OK;
		goto out;
	}
	if (!config_load(&r.cfg))
		goto out;
	if (!listen_on(&r))
		goto out;
	if (!peer_loop_open(&r.loop)) {
		fprintf(stderr, "gpuctl runner: %s\n", strerror(errno));
		goto out;
	}
	peer_watch(&r.loop, r.loop.lfd, (void *)&listen_tag);
	peer_watch(&r.loop, r.loop.sigfd, (void *)&signal_tag);
	r.now = now_mono();
	load_records(&r);
	fprintf(stderr, "gpuctl runner: pid %d serving %s (%zu job%s queued or running)\n",
		(int)getpid(), r.dir, r.njobs, r.njobs == 1 ? "" : "s");
	peer_ready();
	serve(&r);
	/* Nobody new can reach us from here on; a client caught in the backlog sees the socket
	 * reset and starts another runner (which waits for our lock). */
	unlinkat(r.dirfd, "runner.sock", 0);
	peer_unlisten(&r.loop);
	fprintf(stderr, "gpuctl runner: pid %d exits (%zu job%s queued or running%s)\n", (int)getpid(),
		r.njobs, r.njobs == 1 ? "" : "s", r.njobs ? "; the next gpuctl job command resumes them"
							    : "");
	rc = EXIT_OK;
out:
	for (size_t i = 0; i < r.nclients; i++) {
		r.clients[i]->p.dead = true;
	}
	reap_clients(&r);
	free(r.clients);
	for (size_t i = 0; i < r.njobs; i++)
		rjob_free(r.jobs[i]);
	free(r.jobs);
	rjob_unsaved_free(&r);
	for (struct ralloc *a = r.allocs, *next; a; a = next) {
		next = a->next;
		job_free(&a->j);
		sb_free(&a->spec);
		free(a);
	}
	dclient_close(&r.dc);
	gpu_set_free(r.set);
	config_free(&r.cfg);
	peer_loop_free(&r.loop);
	int fds[] = {r.lockfd, r.dirfd};
	for (size_t k = 0; k < ARRAY_SIZE(fds); k++)
		if (fds[k] >= 0)
			close(fds[k]);
	free(r.sock);
	free(r.dir);
	free(r.shared);
	return rc;
}
