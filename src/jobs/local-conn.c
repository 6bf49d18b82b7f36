/* local-conn.c: what the job commands (submit, jobs, logs, cancel, wait) share: reaching the user's
 * job runner (started on demand, like the private daemon), reading the user's records, telling
 * an id of another user's job from one that does not exist, and a job's exit status for `wait`.
 * Records are read directly (the runner keeps them current); the runner is asked only to change
 * something or to say when a job ends. */
#include "jobs/local-conn.h"
#include "base/peer.h"
#include "lease/view.h"
#include "machine/pid.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define RUNNER_ANSWER_SECONDS 30.0 /* a first submit may wait for NVML and a private daemon */

bool jobs_runner_open(struct dclient *dc, enum runner_mode mode, struct gpu_error *err)
{
	char *dir;
	int dfd = job_dir_open(&dir, err);
	*dc = (struct dclient){.fd = -1, .timeout = RUNNER_ANSWER_SECONDS, .next_id = 1,
			       .peer = "your job runner"};
	if (dfd < 0)
		return false;
	close(dfd);
	char *sock = xasprintf("%s/runner.sock", dir);
	bool ok = false;
	if (!peer_path_fits(sock)) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "the path %s is too long for a socket; set "
			 "XDG_STATE_HOME to a shorter directory", sock);
	}
	for (int attempt = 0; !ok && !err->msg[0]; attempt++) {
		int e = client_connect(dc, sock);
		if (e == 0) {
			ok = true;
		} else if (mode == RUNNER_FIND) {
			err->code = EXIT_OK; /* not running */
			break;
		} else if (attempt == 3) {
			err->code = EXIT_DAEMON;
			snprintf(err->msg, sizeof err->msg, "cannot reach your job runner at %s: %s (see "
				 "%s/runner.log)", sock, strerror(e), dir);
		} else if (!pid_pidfds()) {
			/* Said here, not only in runner.log: without pidfds the runner could not see
			 * its jobs end, and they would look like they ran forever. */
			err->code = EXIT_FAIL;
			snprintf(err->msg, sizeof err->msg, "detached jobs need pidfds, so that the "
				 "runner watches its jobs and never a reused pid: " PID_NONE_HERE
				 ". `gpuctl run` works without them");
		} else {
			const char *args[] = {"gpuctl", "runner", NULL};
			if (!client_spawn(dir, "runner.log", args, "your job runner", err))
				break;
		}
	}
	if (ok) {
		dc->timeout = RUNNER_ANSWER_SECONDS;
		dc->peer = "your job runner";
	}
	free(sock);
	free(dir);
	return ok;
}

int jobs_runner_recv(struct dclient *dc, struct msg *m, double until, struct gpu_error *err)
{
	int fds[PROTO_MAX_FDS];
	size_t nfds;
	for (;;) {
		double left = until ? until - now_mono() : -1;
		int r = dclient_recv(dc, m, fds, &nfds, !until ? -1 : left > 0 ? (int)(left * 1000) + 1 : 0,
				     NULL, err);
		for (size_t i = 0; r == 1 && i < nfds; i++)
			close(fds[i]);
		if (r != 0 || (until && now_mono() >= until))
			return r;
	}
}

bool jobs_runner_call(struct dclient *dc, struct strbuf *req, const int *fds, size_t nfds,
		 struct msg *reply, struct gpu_error *err)
{
	for (int attempt = 0;; attempt++) {
		if (dc->fd < 0 && !jobs_runner_open(dc, RUNNER_START, err))
			return false;
		int r = dclient_send_fds(dc, req, fds, nfds, err) ? jobs_runner_recv(dc, reply, now_mono() +
									       dc->timeout, err) : -1;
		if (r == 1) {
			if (strcmp(msg_verb(reply), "error"))
				return true;
			msg_error_read(reply, "the job runner refused the request", err);
			msg_free(reply);
			return false;
		}
		if (r == 0) {
			err->code = EXIT_DAEMON;
			snprintf(err->msg, sizeof err->msg, "your job runner (pid %d) did not answer within "
				 "%.0f s (see its log, runner.log in your jobs directory)",
				 (int)dc->daemon_pid, dc->timeout);
			return false;
		}
		/* It went away before answering (it was just exiting): a new one takes the request. */
		dclient_close(dc);
		if (attempt == 2)
			return false;
	}
}

/* ---- the records ---- */

static bool pending(const struct jobctx *x)
{
	for (size_t i = 0; i < x->n; i++)
		if (!job_final(x->jobs[i].state))
			return true;
	return false;
}

bool jobctx_load(struct jobctx *x, bool resume, enum job_load how, struct gpu_error *err)
{
	*x = (struct jobctx){0};
	x->dirfd = job_dir_open(&x->dir, err);
	if (x->dirfd < 0)
		return false;
	x->n = job_load_all(x->dirfd, &x->jobs, how);
	if (!resume || !pending(x))
		return true;
	/* Records that say queued or running, and no runner: the last one stopped (or the machine
	 * restarted). A runner starting reads them back: queued again, watched, or lost. */
	struct dclient dc;
	struct gpu_error e = {0};
	if (jobs_runner_open(&dc, RUNNER_FIND, &e)) {
		dclient_close(&dc);
		return true;
	}
	if (!jobs_runner_open(&dc, RUNNER_START, err))
		return false;
	dclient_close(&dc);
	jobs_free(x->jobs, x->n);
	x->n = job_load_all(x->dirfd, &x->jobs, how);
	return true;
}

void jobctx_free(struct jobctx *x)
{
	jobs_free(x->jobs, x->n);
	if (x->dirfd >= 0)
		close(x->dirfd);
	free(x->dir);
	*x = (struct jobctx){.dirfd = -1};
}

/* The records are by id (job_load_all sorts them): halving, since `jobs` looks up every queued
 * job the daemon lists (a scan made that quadratic in the records). */
struct job *jobctx_find(struct jobctx *x, uint64_t id)
{
	size_t lo = 0, hi = x->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (x->jobs[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < x->n && x->jobs[lo].id == id ? &x->jobs[lo] : NULL;
}

bool job_label_id(const char *label, uint64_t *id)
{
	char num[24];
	if (!label || label[0] != '#')
		return false;
	size_t n = strspn(label + 1, "0123456789");
	if (!n || n >= sizeof num || (label[1 + n] && label[1 + n] != ' '))
		return false;
	memcpy(num, label + 1, n);
	num[n] = '\0';
	return word_u64(num, UINT64_MAX, id);
}

int job_others_state(uint64_t id, const char **state, char *user, size_t n, uid_t *owner,
		     struct gpu_error *err)
{
	struct leaseview v;
	uint64_t got;
	uid_t me = geteuid();
	if (!leaseview_load(&v, err))
		return -1;
	int r = 0;
	for (size_t i = 0; !r && i < v.nleases; i++)
		if (!strcmp(v.leases[i].kind, "job") && v.leases[i].uid != me &&
		    (*owner == (uid_t)-1 || v.leases[i].uid == *owner) &&
		    job_label_id(v.leases[i].name, &got) && got == id) {
			*state = "running";
			snprintf(user, n, "%s", v.leases[i].user);
			*owner = v.leases[i].uid;
			r = 1;
		}
	for (size_t i = 0; !r && i < v.nqueue; i++)
		if (!strcmp(v.queue[i].kind, "job") && v.queue[i].uid != me &&
		    (*owner == (uid_t)-1 || v.queue[i].uid == *owner) &&
		    job_label_id(v.queue[i].name, &got) && got == id) {
			*state = "queued";
			snprintf(user, n, "%s", v.queue[i].user);
			*owner = v.queue[i].uid;
			r = 1;
		}
	leaseview_free(&v);
	return r;
}

int jobctx_check(struct jobctx *x, const uint64_t *ids, size_t n, const char *who)
{
	for (size_t i = 0; i < n; i++) {
		if (jobctx_find(x, ids[i]))
			continue;
		char user[64];
		const char *state;
		struct gpu_error err = {0};
		uid_t owner = (uid_t)-1;
		if (job_others_state(ids[i], &state, user, sizeof user, &owner, &err) == 1) {
			fprintf(stderr, "%s: job %llu is %s's, not yours: you can see it (`gpuctl jobs "
				"--all`) but not read its log, wait for it or cancel it\n", who,
				(unsigned long long)ids[i], user);
			return EXIT_DENIED;
		}
		fprintf(stderr, "%s: no job %llu of yours (`gpuctl jobs` lists them)\n", who,
			(unsigned long long)ids[i]);
		return EXIT_NO_SUCH_JOB;
	}
	return EXIT_OK;
}

int job_exit_status(const struct job *j)
{
	switch (j->state) {
	case JOB_DONE:
		return EXIT_OK;
	case JOB_CANCELLED:
		return EXIT_CANCELLED;
	case JOB_LOST:
	case JOB_UNKNOWN:
		return EXIT_LOST;
	case JOB_FAILED:
		return j->exit_code >= 0 ? j->exit_code : j->signal ? 128 + j->signal : EXIT_CANNOT_RUN;
	default:
		return EXIT_FAIL;
	}
}

bool job_from_ended(struct job *j, const struct msg *m)
{
	uint64_t v;
	const char *s = msg_get(m, "state"), *why = msg_get(m, "reason");
	if (!s || !job_state_parse(s, &j->state))
		return false;
	j->exit_code = msg_get_u64(m, "exit", 255, &v) ? (int)v : -1;
	j->signal = msg_get_u64(m, "signal", 64, &v) ? (int)v : 0;
	if (why) {
		free(j->reason);
		j->reason = xstrdup(why);
	}
	return true;
}
