/* job.c: the runner's jobs once submitted (design: runner.h): a job asks the daemon for GPUs once
 * the jobs it runs after have succeeded; a cancel takes it out of the queue or signals it;
 * finished jobs leave memory, and dependents of a job that did not succeed are cancelled with
 * the reason; the spec files the records point to are read here. What clients and the daemon do
 * to a job (cancel, wait, clean, idle events, time limits) is control.c's; the daemon's answers
 * and the records read back on start are runner.c's; submits submit.c's; starting and reaping
 * exec.c's. */
#include "machine/pid.h"
#include "runner/runner.h"
#include "lease/view.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


#define SPEC_MAX (16u << 20)

/* ---- the table ---- */

struct rjob *rjob_find(struct runner *r, uint64_t id)
{
	size_t lo = 0, hi = r->njobs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->jobs[mid]->j.id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->njobs && r->jobs[lo]->j.id == id ? r->jobs[lo] : NULL;
}

struct rjob *rjob_insert(struct runner *r, struct job *j)
{
	struct rjob *rj = xcalloc(1, sizeof *rj);
	*rj = (struct rjob){.ev = REV_JOB, .j = *j, .pidfd = -1, .logfd = -1, .errpipe = -1};
	*j = (struct job){0};
	r->jobs = grow_array(r->jobs, &r->jobs_cap, r->njobs + 1, sizeof *r->jobs);
	size_t i = r->njobs;
	while (i > 0 && r->jobs[i - 1]->j.id > rj->j.id) {
		r->jobs[i] = r->jobs[i - 1];
		i--;
	}
	r->jobs[i] = rj;
	r->njobs++;
	if (rj->j.id > r->max_id)
		r->max_id = rj->j.id;
	return rj;
}

void rjob_free(struct rjob *rj)
{
	if (rj->req) {
		lreq_free(rj->req);
		free(rj->req);
	}
	int fds[] = {rj->pidfd, rj->logfd, rj->errpipe};
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	job_free(&rj->j);
	free(rj->waiters);
	free(rj);
}

bool rjob_pending(const struct runner *r)
{
	for (size_t i = 0; i < r->njobs; i++)
		if (r->jobs[i]->req)
			return true;
	return r->allocs != NULL;
}

/* A record the disk refused even over the old one (job_write: full, on a copy-on-write file
 * system such as btrfs or ZFS, where no block is rewritten in place) is kept here, encoded,
 * and written again every UNSAVED_RETRY seconds; the runner does not exit while one is kept
 * (rjob_unsaved), so that an outcome is not lost with it and then read back as "lost, its exit
 * status unknown". One entry per job, the latest record; bounded by the user's jobs. */
#define UNSAVED_RETRY 5.0

static void unsaved_drop(struct runner *r, size_t i)
{
	sb_free(&r->unsaved[i].rec);
	r->unsaved[i] = r->unsaved[--r->nunsaved];
}

static void unsaved_keep(struct runner *r, const struct job *j)
{
	size_t i = 0;
	while (i < r->nunsaved && r->unsaved[i].id != j->id)
		i++;
	if (i == r->nunsaved) {
		r->unsaved = grow_array(r->unsaved, &r->unsaved_cap, r->nunsaved + 1, sizeof *r->unsaved);
		r->unsaved[r->nunsaved++] = (struct unsaved_rec){.id = j->id};
	}
	sb_reset(&r->unsaved[i].rec);
	job_encode(j, &r->unsaved[i].rec);
	if (!r->unsaved_at)
		r->unsaved_at = r->now + UNSAVED_RETRY;
}

void rjob_save(struct runner *r, struct rjob *rj)
{
	struct gpu_error err = {0};
	for (size_t i = 0; i < r->nunsaved; i++)
		if (r->unsaved[i].id == rj->j.id)
			unsaved_drop(r, i); /* this record is the newer one: kept below if refused too */
	if (job_write_how(r->dirfd, &rj->j, true, &err))
		return;
	/* Kept only for a full disk, which frees up: a record refused for another reason (a
	 * read-only file system, an I/O error) is said, and not retried for ever. */
	if (errno == ENOSPC || errno == EDQUOT) {
		fprintf(stderr, "gpuctl runner: %s; kept, written again every %.0f s\n", err.msg,
			UNSAVED_RETRY);
		unsaved_keep(r, &rj->j);
	} else {
		fprintf(stderr, "gpuctl runner: %s\n", err.msg);
	}
}

bool rjob_unsaved(struct runner *r, double *next)
{
	if (r->nunsaved && r->now >= r->unsaved_at) {
		for (size_t i = r->nunsaved; i-- > 0;) {
			struct job j = {0};
			char why[160];
			struct gpu_error err = {0};
			bool ok = job_decode(&j, r->unsaved[i].rec.buf, r->unsaved[i].rec.len, why, sizeof why) &&
				  job_write_how(r->dirfd, &j, true, &err);
			if (ok)
				fprintf(stderr, "gpuctl runner: the record of job %llu is written now\n",
					(unsigned long long)j.id);
			job_free(&j);
			if (ok)
				unsaved_drop(r, i);
		}
		r->unsaved_at = r->nunsaved ? r->now + UNSAVED_RETRY : 0;
	}
	if (r->unsaved_at && (!*next || r->unsaved_at < *next))
		*next = r->unsaved_at;
	return r->nunsaved != 0;
}

void rjob_unsaved_free(struct runner *r)
{
	for (size_t i = 0; i < r->nunsaved; i++) {
		fprintf(stderr, "gpuctl runner: the record of job %llu could not be written, and is "
			"lost as the runner stops\n", (unsigned long long)r->unsaved[i].id);
		sb_free(&r->unsaved[i].rec);
	}
	free(r->unsaved);
	r->unsaved = NULL;
	r->nunsaved = r->unsaved_cap = 0;
}

void rjob_set_reason(char **dst, const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	free(*dst);
	*dst = xstrdup(text);
}

/* How a finished job ended, in words: "exit status 1", "signal 9", "cancelled". */
void rjob_ended_message(struct strbuf *sb, uint64_t id, const struct job *j)
{
	msg_begin(sb, "ended");
	msg_add_u64(sb, "id", id);
	msg_add_u64(sb, "job", j->id);
	msg_add(sb, "state", job_state_name(j->state), NULL);
	if (j->exit_code >= 0)
		msg_add_u64(sb, "exit", (uint64_t)j->exit_code);
	if (j->signal)
		msg_add_u64(sb, "signal", (uint64_t)j->signal);
	if (j->reason)
		msg_add(sb, "reason", j->reason, NULL);
}

static void remove_job(struct runner *r, struct rjob *rj)
{
	size_t k = 0;
	for (size_t i = 0; i < r->njobs; i++)
		if (r->jobs[i] != rj)
			r->jobs[k++] = r->jobs[i];
	r->njobs = k;
	rjob_free(rj);
}

/* Whether the jobs rj runs after let it go: 1 all succeeded, 0 some still to end, -1 one did
 * not succeed (why says which). */
static int deps(struct runner *r, const struct rjob *rj, char *why, size_t n)
{
	int st = 1;
	for (size_t i = 0; i < rj->j.nafter; i++) {
		uint64_t id = rj->j.after[i];
		struct job d;
		if (rjob_find(r, id)) {
			st = 0;
			continue;
		}
		if (!job_read(r->dirfd, id, &d)) {
			snprintf(why, n, "job %llu, which it was to run after, is gone (forgotten with "
				 "`gpuctl jobs --clean`?)", (unsigned long long)id);
			return -1;
		}
		bool ok = d.state == JOB_DONE;
		if (!ok) {
			char h[160];
			job_how(&d, h, sizeof h);
			snprintf(why, n, "job %llu, which it was to run after, did not succeed (%s)",
				 (unsigned long long)id, h);
		}
		job_free(&d);
		if (!ok)
			return -1;
	}
	return st;
}

/* Dependents of jobs that ended: asked for or cancelled, until nothing changes. */
void rjob_resolve(struct runner *r)
{
	for (bool changed = true; changed;) {
		changed = false;
		for (size_t i = 0; i < r->njobs && !changed; i++) {
			struct rjob *rj = r->jobs[i];
			char why[512];
			int st = rj->held ? deps(r, rj, why, sizeof why) : 0;
			if (st > 0) {
				rj->held = false;
				rjob_request(r, rj);
			} else if (st < 0) {
				rj->held = false;
				rj->j.state = JOB_CANCELLED;
				rjob_set_reason(&rj->j.reason, "%s", why);
				rjob_finish(r, rj);
				changed = true;
			}
		}
	}
}

void rjob_finish(struct runner *r, struct rjob *rj)
{
	char h[200];
	if (!rj->j.ended)
		rj->j.ended = job_now_ns();
	rj->j.ticket[0] = '\0';
	rjob_save(r, rj);
	job_how(&rj->j, h, sizeof h);
	fprintf(stderr, "gpuctl runner: job %llu ended: %s%s%s\n", (unsigned long long)rj->j.id, h,
		rj->j.reason ? "; " : "", rj->j.reason ? rj->j.reason : "");
	/* notifications (issue 24) */
	rhook_run(r, &rj->j, rj->j.state == JOB_DONE ? "done" : rj->j.state == JOB_CANCELLED ? "stopped"
			     : "failed");
	for (size_t i = 0; i < rj->nwaiters; i++) {
		struct strbuf sb = {0};
		rjob_ended_message(&sb, rj->waiters[i].id, &rj->j);
		runner_reply(r, rj->waiters[i].c, &sb);
		sb_free(&sb);
	}
	if (rj->req) {
		struct strbuf sb = {0};
		msg_begin(&sb, "leave");
		msg_add_u64(&sb, "id", rj->j.id);
		if (r->up)
			runner_daemon_send(r, &sb);
		sb_free(&sb);
	}
	remove_job(r, rj);
	if (!r->loading)
		rjob_resolve(r);
}

void rjob_end(struct runner *r, struct rjob *rj, enum job_state state, const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	rj->j.state = state;
	rjob_set_reason(&rj->j.reason, "%s", text);
	rjob_finish(r, rj);
}

void rjob_add_new(struct runner *r, struct job *j)
{
	struct rjob *rj = rjob_insert(r, j);
	rj->held = rj->j.nafter > 0;
	if (rj->held)
		rjob_resolve(r);
	else
		rjob_request(r, rj);
}

/* ---- asking the daemon ---- */

void rjob_request(struct runner *r, struct rjob *rj)
{
	struct gpu_error err = {0};
	if (!runner_set(r, &err)) {
		rj->j.state = JOB_FAILED;
		rjob_set_reason(&rj->j.reason, "the runner cannot see the GPUs: %s", err.msg);
		rjob_finish(r, rj);
		return;
	}
	if (rj->j.cpu_only) { /* -n 0 (issue 24): started at once, no lease, no GPU visible */
		struct grant g = {.set = r->set};
		for (size_t i = 0; i < ARRAY_SIZE(g.fds); i++)
			g.fds[i] = -1;
		r->start(r, rj, &g);
		return;
	}
	uint64_t cand = 0;
	size_t known = 0;
	for (size_t i = 0; i < r->set->ngpus && i < GPU_MAX; i++) {
		bool want = !rj->j.ncand;
		for (size_t k = 0; k < rj->j.ncand && !want; k++)
			want = !strcmp(rj->j.cand[k], r->set->gpus[i].uuid);
		if (want && !r->set->gpus[i].lost) {
			cand |= 1ULL << i;
			known++;
		}
	}
	if (known < rj->j.count) {
		rj->j.state = JOB_FAILED;
		rjob_set_reason(&rj->j.reason, "%u GPU%s wanted, but only %zu of those it may use are on this "
			   "machine now", rj->j.count, rj->j.count == 1 ? "" : "s", known);
		rjob_finish(r, rj);
		return;
	}
	char *label = xasprintf("#%llu%s%s", (unsigned long long)rj->j.id, rj->j.name ? " " : "",
				rj->j.name ? rj->j.name : "");
	struct grant_req rq = {
		.count = rj->j.count, .min_free_mib = rj->j.min_free_mib, .max_util = rj->j.max_util,
		.ignore_usage = rj->j.ignore_usage, .prefer = rj->j.prefer, .wait = 0,
		.name = rj->j.name, .label = label, .kind = "job", .command = rj->j.command,
		.time_limit = (double)rj->j.time_ms / 1000, /* time limits (issue 24) */
		.mem_mib = rj->j.mem_mib,
	};
	const char *mig = rj->j.mig; /* MIG instances (issue 23) */
	if (mig && !strncmp(mig, "uuid:", 5))
		rq.mig_uuid = mig + 5;
	else if (mig && !strncmp(mig, "slot:", 5))
		rq.mig_slot = mig + 5;
	else if (mig && !strncmp(mig, "profile:", 8))
		rq.mig_profile = mig + 8;
	rj->req = xcalloc(1, sizeof *rj->req);
	lreq_init(rj->req, rj->j.id, r->set, &r->cfg, &rq, cand, rj->j.count);
	free(label);
	snprintf(rj->req->ticket, sizeof rj->req->ticket, "%s", rj->j.ticket);
	struct strbuf sb = {0};
	lreq_message(rj->req, &sb);
	runner_daemon_send(r, &sb); /* not reachable now: sent again once it is */
	sb_free(&sb);
}

bool rjob_read_spec_fd(int fd, struct strbuf *sb)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > SPEC_MAX)
		return false;
	sb_reset(sb);
	sb_add(sb, "", 0);
	for (off_t off = 0;;) {
		char buf[65536];
		ssize_t n = pread(fd, buf, sizeof buf, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return false;
		if (n == 0)
			return true;
		sb_add(sb, buf, (size_t)n);
		off += n;
		if (sb->len > SPEC_MAX)
			return false;
	}
}

bool rjob_read_spec(struct runner *r, uint64_t id, struct strbuf *sb)
{
	char name[40];
	snprintf(name, sizeof name, "%llu.spec", (unsigned long long)id);
	int fd = openat(r->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	bool ok = fd >= 0 && rjob_read_spec_fd(fd, sb);
	if (fd >= 0)
		close(fd);
	return ok;
}
