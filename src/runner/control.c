/* control.c: what the runner's clients and the daemon do to a job once it is in the table
 * (design: runner.h): `cancel` takes it out of the queue or signals it; `wait` and `logs -f`
 * wait for its end (or are answered from its record); `clean` forgets finished records; the
 * daemon's events about its lease (idle warnings, issue 24) and the time limits and share checks
 * (issues 23 and 24) signal it. The table itself, and a job's end, are job.c's. */
#include "machine/pid.h"
#include "runner/runner.h"
#include "lease/view.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* ---- cancel, wait, clean ---- */

static void add_waiter(struct rjob *rj, struct rclient *c, uint64_t id)
{
	rj->waiters = xrealloc(rj->waiters, (rj->nwaiters + 1) * sizeof *rj->waiters);
	rj->waiters[rj->nwaiters++] = (struct rwaiter){c, id};
}

/* A job not in memory: it ended (answer from its record), or there is no such job of ours. */
static void answer_from_record(struct runner *r, struct rclient *c, uint64_t id, uint64_t job)
{
	struct job j;
	if (!job_read(r->dirfd, job, &j)) {
		runner_error(r, c, id, EXIT_NO_SUCH_JOB, "no job %llu of yours", (unsigned long long)job);
		return;
	}
	struct strbuf sb = {0};
	rjob_ended_message(&sb, id, &j);
	runner_reply(r, c, &sb);
	sb_free(&sb);
	job_free(&j);
}

void rjob_wait(struct runner *r, struct rclient *c, const struct msg *m)
{
	uint64_t id = 0, job = 0;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	msg_get_u64(m, "job", UINT64_MAX, &job);
	struct rjob *rj = rjob_find(r, job);
	if (rj)
		add_waiter(rj, c, id);
	else
		answer_from_record(r, c, id, job);
}

/* The job's process, and its process group too while the group's number cannot name another:
 * ours until we reap it; one adopted from an earlier runner while its pidfd says it lives. */
static void rjob_signal(struct rjob *rj, int sig)
{
	if (rj->pidfd < 0)
		return;
	struct pollfd p = {.fd = rj->pidfd, .events = POLLIN};
	bool alive = rj->child || poll(&p, 1, 0) == 0;
	pid_signal(rj->pidfd, sig);
	if (alive && rj->j.pid > 0)
		kill(-rj->j.pid, sig);
}

void rjob_cancel(struct runner *r, struct rclient *c, const struct msg *m)
{
	uint64_t id = 0, job = 0, grace_ms = 10000;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	msg_get_u64(m, "job", UINT64_MAX, &job);
	msg_get_u64(m, "grace", 24ULL * 3600 * 1000, &grace_ms);
	struct rjob *rj = rjob_find(r, job);
	if (!rj) {
		answer_from_record(r, c, id, job);
		return;
	}
	add_waiter(rj, c, id);
	if (rj->j.state == JOB_QUEUED) {
		rj->j.state = JOB_CANCELLED;
		rjob_set_reason(&rj->j.reason, "cancelled while queued (`gpuctl cancel`)");
		rjob_finish(r, rj);
		return;
	}
	if (!rj->cancelling) {
		rj->cancelling = true;
		rj->kill_at = r->now + (double)grace_ms / 1000;
		fprintf(stderr, "gpuctl runner: job %llu: SIGTERM, SIGKILL in %.1f s if it is still "
			"running\n", (unsigned long long)rj->j.id, (double)grace_ms / 1000);
		rjob_signal(rj, SIGTERM);
	}
}

/* ---- idle leases (issue 24): the daemon's word on a running job's lease ---- */

void rjob_watch_message(const struct rjob *rj, struct strbuf *sb)
{
	msg_begin(sb, "watch");
	msg_add_u64(sb, "id", RUNNER_WATCH_BIT | rj->j.id);
	msg_add(sb, "lease", rj->j.lease, NULL);
	msg_add(sb, "token", rj->token, NULL);
}

void rjob_event(struct runner *r, const struct msg *m)
{
	const char *lease = msg_get(m, "lease"), *what = msg_get(m, "what");
	struct rjob *rj = NULL;
	for (size_t i = 0; lease && i < r->njobs && !rj; i++)
		if (r->jobs[i]->pidfd >= 0 && !strcmp(r->jobs[i]->j.lease, lease))
			rj = r->jobs[i];
	if (!rj || !what)
		return;
	uint64_t idle = 0, left = 0, grace_ms = 10000;
	msg_get_u64(m, "idle", UINT32_MAX, &idle);
	msg_get_u64(m, "release_in", UINT32_MAX, &left);
	msg_get_u64(m, "grace_ms", 86400000ULL, &grace_ms);
	if (!strcmp(what, "idle-warn")) {
		char in[80] = "";
		if (left)
			snprintf(in, sizeof in, "; it will be released in %llu s unless used",
				 (unsigned long long)left);
		fprintf(stderr, "gpuctl runner: job %llu: its lease %s is idle (%llu s)%s\n",
			(unsigned long long)rj->j.id, lease, (unsigned long long)idle, in);
		rhook_run(r, &rj->j, "idle-warn"); /* notifications (issue 24) */
		if (rj->logfd >= 0)
			dprintf(rj->logfd, "gpuctl: job %llu: its lease %s has been idle for %llu s (no "
				"process of yours uses its GPUs)%s\n", (unsigned long long)rj->j.id, lease,
				(unsigned long long)idle, in);
	} else if (!strcmp(what, "idle-release") && !rj->timed_out && !rj->cancelling) {
		rj->timed_out = rj->idle_released = true;
		rj->grace = (double)grace_ms / 1000;
		rj->kill_at = r->now + rj->grace;
		fprintf(stderr, "gpuctl runner: job %llu: its lease was released for idleness: SIGTERM, "
			"SIGKILL in %.1f s if it is still running\n", (unsigned long long)rj->j.id, rj->grace);
		if (rj->logfd >= 0)
			dprintf(rj->logfd, "gpuctl: job %llu: its lease %s was idle for %llu s and is released "
				"(the daemon's idle_release): SIGTERM, SIGKILL in %.1f s if it is still "
				"running\n", (unsigned long long)rj->j.id, lease, (unsigned long long)idle,
				rj->grace);
		rjob_signal(rj, SIGTERM);
	}
}

/* memory shares (issue 23): under share_overuse = stop a running share over its claim is
 * stopped as a cancel stops a job (SIGTERM, SIGKILL 10 s later), by this runner, the job's own
 * user: the daemon is asked (one `list` for all of them) every second while such jobs run. */
#define SHARE_CHECK_SECONDS 1.0
static void share_check(struct runner *r, double *next)
{
	bool any = false;
	for (size_t i = 0; i < r->njobs && !any; i++)
		any = r->jobs[i]->share_stop && r->jobs[i]->pidfd >= 0 && !r->jobs[i]->cancelling;
	if (!any)
		return;
	if (r->now >= r->share_check_at) {
		r->share_check_at = r->now + SHARE_CHECK_SECONDS;
		struct leaseview v;
		struct gpu_error err = {0};
		if (leaseview_load_within(&v, 1, &err)) {
			for (size_t i = 0; i < r->njobs; i++) {
				struct rjob *rj = r->jobs[i];
				if (!rj->share_stop || rj->pidfd < 0 || rj->cancelling)
					continue;
				for (size_t k = 0; k < v.nleases; k++)
					if (v.leases[k].over && !strcmp(v.leases[k].id, rj->j.lease)) {
						fprintf(stderr, "gpuctl runner: job %llu is over its memory "
							"share of %llu MiB: SIGTERM (share_overuse = stop)\n",
							(unsigned long long)rj->j.id,
							(unsigned long long)v.leases[k].mem_mib);
						rj->share_over = rj->cancelling = true;
						rj->kill_at = r->now + 10;
						rjob_signal(rj, SIGTERM);
					}
			}
			leaseview_free(&v);
		}
	}
	if (!*next || r->share_check_at < *next)
		*next = r->share_check_at;
}

void rjob_timers(struct runner *r, double *next)
{
	share_check(r, next); /* memory shares (issue 23) */
	for (size_t i = 0; i < r->njobs; i++) {
		struct rjob *rj = r->jobs[i];
		/* time limits (issue 24): the lease ends, the job is signalled as for a cancel */
		if (rj->limit_at && rj->pidfd >= 0 && !rj->timed_out && !rj->cancelling) {
			/* notifications (issue 24): near its limit, a tenth of it before (5 min at most) */
			double limit = (double)rj->j.time_ms / 1000, near = limit / 10 < 300 ? limit / 10 : 300;
			if (rj->j.notify && !rj->near_said && limit > 0) {
				if (r->now >= rj->limit_at - near) {
					rj->near_said = true;
					rhook_run(r, &rj->j, "time-near");
				} else if (!*next || rj->limit_at - near < *next) {
					*next = rj->limit_at - near;
				}
			}
			if (r->now >= rj->limit_at) {
				rj->timed_out = true;
				rj->kill_at = r->now + rj->grace;
				fprintf(stderr, "gpuctl runner: job %llu reached its time limit: SIGTERM, "
					"SIGKILL in %.1f s if it is still running\n",
					(unsigned long long)rj->j.id, rj->grace);
				if (rj->logfd >= 0)
					dprintf(rj->logfd, "gpuctl: job %llu reached its time limit (lease %s): "
						"SIGTERM, SIGKILL in %.1f s if it is still running\n",
						(unsigned long long)rj->j.id, rj->j.lease, rj->grace);
				rjob_signal(rj, SIGTERM);
			} else if (!*next || rj->limit_at < *next) {
				*next = rj->limit_at;
			}
		}
		if (rj->timed_out && rj->kill_at) {
			if (r->now >= rj->kill_at) {
				rjob_signal(rj, SIGKILL);
				rj->kill_at = 0;
			} else if (!*next || rj->kill_at < *next) {
				*next = rj->kill_at;
			}
			continue;
		}
		if (!rj->cancelling || !rj->kill_at)
			continue;
		if (r->now >= rj->kill_at) {
			fprintf(stderr, "gpuctl runner: job %llu outlived its grace period: SIGKILL\n",
				(unsigned long long)rj->j.id);
			rjob_signal(rj, SIGKILL);
			rj->kill_at = 0;
		} else if (!*next || rj->kill_at < *next) {
			*next = rj->kill_at;
		}
	}
}

static bool needed(const struct runner *r, uint64_t id)
{
	for (size_t i = 0; i < r->njobs; i++)
		for (size_t k = 0; k < r->jobs[i]->j.nafter; k++)
			if (r->jobs[i]->j.after[k] == id)
				return true;
	return false;
}

void rjob_clean(struct runner *r, struct rclient *c, const struct msg *m)
{
	uint64_t id = 0;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	struct job *all;
	size_t n = job_load_all(r->dirfd, &all, JOB_LOAD_FILES), gone = 0, kept = 0;
	for (size_t i = 0; i < n; i++) {
		const struct job *j = &all[i];
		if (!job_final(j->state) || rjob_find(r, j->id))
			continue;
		if (needed(r, j->id)) {
			kept++;
			continue;
		}
		char name[40];
		snprintf(name, sizeof name, "%llu.log", (unsigned long long)j->id);
		if (j->own_log)
			unlinkat(r->dirfd, name, 0);
		snprintf(name, sizeof name, "%llu.spec", (unsigned long long)j->id);
		unlinkat(r->dirfd, name, 0);
		snprintf(name, sizeof name, "%llu.job", (unsigned long long)j->id);
		gone += unlinkat(r->dirfd, name, 0) == 0;
	}
	jobs_free(all, n);
	struct strbuf sb = {0};
	msg_begin(&sb, "cleaned");
	msg_add_u64(&sb, "id", id);
	msg_add_u64(&sb, "count", gone);
	msg_add_u64(&sb, "kept", kept);
	runner_reply(r, c, &sb);
	sb_free(&sb);
}

void rjob_drop_client(struct runner *r, struct rclient *c)
{
	for (size_t i = 0; i < r->njobs; i++) {
		struct rjob *rj = r->jobs[i];
		size_t k = 0;
		for (size_t w = 0; w < rj->nwaiters; w++)
			if (rj->waiters[w].c != c)
				rj->waiters[k++] = rj->waiters[w];
		rj->nwaiters = k;
	}
	for (struct ralloc *a = r->allocs; a; a = a->next)
		if (a->c == c)
			a->c = NULL;
}

/* ---- the spec: what to run, as submitted ---- */
