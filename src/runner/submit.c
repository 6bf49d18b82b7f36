/* submit.c: a submit in the runner (design: runner.h): checked (what to run, the GPUs it
 * may have, --after, --log) before anything is written, then given an id (the daemon hands
 * the runner blocks of them, so most submits need no round trip to it; unused ones are gaps),
 * recorded (ID.spec, ID.job, an empty ID.log), queued, and answered. A submit that goes away
 * before its id comes leaves no job. */
#include "runner/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IDS_PER_ASK 32             /* job ids the runner takes from the daemon at a time */

/* The new job's fields from the submit message (or, for --again, from the job it repeats). */
static int fill(struct runner *r, const struct msg *m, int specfd, struct job *j, struct strbuf *spec,
		char *why, size_t n)
{
	uint64_t v;
	const char *s;
	*j = (struct job){.exit_code = -1, .max_util = -1, .prefer = -1, .uid = geteuid(), .attempt = 1,
			  .submitted = job_now_ns()};
	snprintf(j->boot, sizeof j->boot, "%s", job_boot_id());
	if (msg_get_u64(m, "again", UINT64_MAX, &v)) {
		struct job old;
		if (!job_read(r->dirfd, v, &old)) {
			snprintf(why, n, "no job %llu of yours to run again", (unsigned long long)v);
			return EXIT_NO_SUCH_JOB;
		}
		if (!job_final(old.state)) {
			snprintf(why, n, "job %llu is still %s; `gpuctl submit --again` repeats a job that "
				 "ended", (unsigned long long)v, job_state_name(old.state));
			job_free(&old);
			return EXIT_USAGE;
		}
		j->again_of = v;
		j->name = old.name;
		j->command = old.command;
		j->cwd = old.cwd;
		j->own_log = old.own_log;
		j->log = old.own_log ? NULL : old.log;
		j->retries = old.retries;
		j->umask = old.umask;
		j->count = old.count;
		j->cand = old.cand;
		j->ncand = old.ncand;
		j->min_free_mib = old.min_free_mib;
		j->mem_mib = old.mem_mib;
		j->mig = old.mig;
		old.mig = NULL;
		j->max_util = old.max_util;
		j->prefer = old.prefer;
		j->ignore_usage = old.ignore_usage;
		j->uuid = old.uuid;
		j->time_ms = old.time_ms; /* time limits (issue 24) */
		j->cpu_only = old.cpu_only;
		j->notify = old.notify; /* notifications (issue 24) */
		old.notify = NULL;
		j->bind_cpus = old.bind_cpus;   /* issue 26 */
		old.name = old.command = old.cwd = NULL;
		if (!old.own_log)
			old.log = NULL;
		old.cand = NULL;
		job_free(&old);
		if (!rjob_read_spec(r, v, spec)) {
			snprintf(why, n, "the spec of job %llu (%s/%llu.spec) is gone or unreadable",
				 (unsigned long long)v, r->dir, (unsigned long long)v);
			return EXIT_FAIL;
		}
		return EXIT_OK;
	}
	if (specfd < 0 || !rjob_read_spec_fd(specfd, spec)) {
		snprintf(why, n, "the submit came without a readable job spec");
		return EXIT_USAGE;
	}
	if ((s = msg_get(m, "name")))
		j->name = xstrdup(s);
	j->command = xstrdup((s = msg_get(m, "command")) ? s : "?");
	j->cwd = xstrdup((s = msg_get(m, "cwd")) ? s : "/");
	if ((s = msg_get(m, "log")))
		j->log = xstrdup(s);
	j->own_log = !j->log;
	if (msg_get_u64(m, "retries", 1000, &v))
		j->retries = (unsigned)v;
	if (msg_get_u64(m, "umask", 0777, &v))
		j->umask = (unsigned)v;
	if ((s = msg_get(m, "min_free")) && !word_u64(s, MAX_SIZE_MIB, &v)) {
		snprintf(why, n, "min_free is MiB, at most %llu (" MAX_SIZE_TEXT ")",
			 (unsigned long long)MAX_SIZE_MIB);
		return EXIT_USAGE; /* the daemon would refuse it when the job's turn came */
	}
	if (s)
		j->min_free_mib = v;
	if ((s = msg_get(m, "mem")) && (!word_u64(s, MAX_SIZE_MIB, &v) || !v)) {
		snprintf(why, n, "mem is MiB, 1 to %llu (" MAX_SIZE_TEXT ")",
			 (unsigned long long)MAX_SIZE_MIB);
		return EXIT_USAGE;
	}
	if (s) /* memory shares (issue 23) */
		j->mem_mib = v;
	if ((s = msg_get(m, "mig"))) { /* MIG instances (issue 23): the daemon checks the instance */
		if (strlen(s) > 128 || (strncmp(s, "uuid:", 5) && strncmp(s, "slot:", 5) &&
					strncmp(s, "profile:", 8))) {
			snprintf(why, n, "mig is uuid:, slot: or profile: and at most 128 bytes");
			return EXIT_USAGE;
		}
		j->mig = xstrdup(s);
	}
	if ((s = msg_get(m, "max_util")) && !word_u64(s, 100, &v)) {
		snprintf(why, n, "max_util is a percentage 0-100, not '%.20s'", s);
		return EXIT_USAGE; /* never read as no limit */
	}
	if (s)
		j->max_util = (int)v;
	if (msg_get_u64(m, "prefer", PREFER_TOPOLOGY, &v))
		j->prefer = (int)v;
	j->ignore_usage = msg_line(m, "ignore_usage") != NULL;
	if (msg_get_u64(m, "time_ms", (uint64_t)1e10, &v)) /* time limits (issue 24) */
		j->time_ms = v;
	if ((s = msg_get(m, "notify"))) /* notifications (issue 24): bounded as a command */
		j->notify = xstrndup(s, 4096);
	j->uuid = msg_line(m, "uuid") != NULL;
	j->bind_cpus = msg_line(m, "bind_cpus") != NULL;   /* issue 26 */
	for (size_t i = 1; i < m->nlines; i++)
		for (size_t w = 1; !strcmp(m->lines[i].w[0], "after") && w < m->lines[i].nwords; w++)
			if (word_u64(m->lines[i].w[w], UINT64_MAX, &v)) {
				j->after = xrealloc(j->after, (j->nafter + 1) * sizeof *j->after);
				j->after[j->nafter++] = v;
			}
	return EXIT_OK;
}

/* The GPUs it may be given: -g and the CUDA_VISIBLE_DEVICES of its environment, as for `run`. */
static int choose(struct runner *r, const struct msg *m, struct job *j, char **env, char *why,
		  size_t n)
{
	struct gpu_error err = {0};
	uint64_t v = 0, cand;
	unsigned count;
	if (!runner_set(r, &err)) {
		snprintf(why, n, "%.1000s", err.msg);
		return err.code;
	}
	if (j->again_of)
		return EXIT_OK; /* as chosen the first time; rjob_request checks they are still here */
	if ((j->cpu_only = msg_line(m, "cpu") != NULL)) { /* -n 0: no GPU, no lease (issue 24) */
		j->count = 0;
		return EXIT_OK;
	}
	struct grant_req rq = {.gpus = msg_get(m, "gpus"), .env = env, .max_util = -1, .prefer = -1};
	if (msg_get_u64(m, "count", GPU_MAX, &v))
		rq.count = (unsigned)v;
	if (!grant_candidates(r->set, &rq, &cand, &count, &err)) {
		snprintf(why, n, "%.1000s", err.msg);
		return err.code;
	}
	j->count = count;
	uint64_t all = r->set->ngpus >= 64 ? ~0ULL : (1ULL << r->set->ngpus) - 1;
	for (size_t i = 0; cand != all && i < r->set->ngpus; i++)
		if (cand >> i & 1) {
			j->cand = xrealloc(j->cand, (j->ncand + 1) * sizeof *j->cand);
			snprintf(j->cand[j->ncand++], sizeof *j->cand, "%s", r->set->gpus[i].uuid);
		}
	return EXIT_OK;
}

static int check_after(struct runner *r, const struct job *j, char *why, size_t n)
{
	for (size_t i = 0; i < j->nafter; i++) {
		struct job d;
		uint64_t id = j->after[i];
		if (rjob_find(r, id))
			continue;
		if (!job_read(r->dirfd, id, &d)) {
			snprintf(why, n, "--after %llu: no job %llu of yours (--after takes your own jobs, "
				 "see `gpuctl jobs`)", (unsigned long long)id, (unsigned long long)id);
			return EXIT_NO_SUCH_JOB;
		}
		bool ok = d.state == JOB_DONE;
		char h[160];
		job_how(&d, h, sizeof h);
		job_free(&d);
		if (!ok) {
			snprintf(why, n, "--after %llu: job %llu did not succeed (%s), so this job could "
				 "never start; nothing was submitted", (unsigned long long)id,
				 (unsigned long long)id, h);
			return EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

static bool write_file(struct runner *r, const char *name, const struct strbuf *sb)
{
	char tmp[64];
	snprintf(tmp, sizeof tmp, ".%s.tmp", name);
	int fd = openat(r->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	bool ok = fd >= 0 && write(fd, sb->buf, sb->len) == (ssize_t)sb->len;
	if (fd >= 0 && close(fd) != 0)
		ok = false;
	if (ok && renameat(r->dirfd, tmp, r->dirfd, name) != 0)
		ok = false;
	if (!ok && fd >= 0)
		unlinkat(r->dirfd, tmp, 0);
	return ok;
}

static void alloc_free(struct ralloc *a)
{
	job_free(&a->j);
	sb_free(&a->spec);
	free(a);
}

/* The submit has its id: record the job, queue it, answer. */
static void create(struct runner *r, struct ralloc *a, uint64_t id)
{
	char name[40];
	struct gpu_error err = {0};
	if (!a->c || a->c->p.dead) {
		alloc_free(a); /* the submit went away without its answer: no job */
		return;
	}
	a->j.id = id;
	snprintf(name, sizeof name, "%llu.spec", (unsigned long long)id);
	if (!write_file(r, name, &a->spec)) {
		runner_error(r, a->c, a->id, EXIT_FAIL, "cannot write %s/%s: %s; nothing was submitted",
			     r->dir, name, strerror(errno));
		alloc_free(a);
		return;
	}
	if (a->j.own_log) {
		snprintf(name, sizeof name, "%llu.log", (unsigned long long)id);
		int fd = openat(r->dirfd, name, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
				0600);
		if (fd >= 0)
			close(fd);
		a->j.log = xasprintf("%s/%s", r->dir, name);
	}
	if (!job_write(r->dirfd, &a->j, &err)) {
		snprintf(name, sizeof name, "%llu.spec", (unsigned long long)id);
		unlinkat(r->dirfd, name, 0);
		runner_error(r, a->c, a->id, err.code, "%s; nothing was submitted", err.msg);
		alloc_free(a);
		return;
	}
	fprintf(stderr, "gpuctl runner: job %llu submitted: %s\n", (unsigned long long)id, a->j.command);
	struct rclient *c = a->c;
	uint64_t cid = a->id;
	rjob_add_new(r, &a->j); /* in the queue before the submit hears of it */
	alloc_free(a);
	struct strbuf sb = {0};
	msg_begin(&sb, "submitted");
	msg_add_u64(&sb, "id", cid);
	msg_add_u64(&sb, "job", id);
	if (r->up && r->dc.private_mode) { /* the submit says so, as `run` would */
		char *dir = xstrdup(r->dc.path), *slash = strrchr(dir, '/');
		if (slash && slash != dir)
			*slash = '\0';
		msg_add(&sb, "private", dir, NULL);
		free(dir);
	}
	runner_reply(r, c, &sb);
	sb_free(&sb);
}

/* Every waiting submit fails with why. */
static void fail_allocs(struct runner *r, int code, const char *why)
{
	for (struct ralloc *a = r->allocs, *next; a; a = next) {
		next = a->next;
		if (a->c)
			runner_error(r, a->c, a->id, code, "%s", why);
		alloc_free(a);
	}
	r->allocs = r->allocs_tail = NULL;
	r->ids_req = 0;
}

void rjob_ids_message(const struct runner *r, struct strbuf *sb)
{
	uint64_t high = r->pool_end > r->max_id + 1 ? r->pool_end - 1 : r->max_id;
	msg_begin(sb, "jobid");
	msg_add_u64(sb, "id", r->ids_req);
	msg_add_u64(sb, "count", IDS_PER_ASK);
	msg_add_u64(sb, "min", high + 1);
}

/* Waiting submits get ids from the pool, in the order they came; an empty pool is refilled by
 * the daemon (one ask at a time), so most submits need no round trip to it. */
static void serve_allocs(struct runner *r)
{
	while (r->allocs) {
		if (r->pool_next <= r->max_id)
			r->pool_next = r->max_id + 1; /* never an id a record of ours holds */
		if (r->pool_next >= r->pool_end)
			break;
		struct ralloc *a = r->allocs;
		r->allocs = a->next;
		if (!r->allocs)
			r->allocs_tail = NULL;
		create(r, a, r->pool_next++);
	}
	if (!r->allocs || r->ids_req)
		return;
	r->ids_req = RUNNER_ALLOC_BIT | r->next_alloc++;
	struct strbuf sb = {0};
	rjob_ids_message(r, &sb);
	if (!runner_daemon_send(r, &sb) && !r->up) {
		char why[700];
		snprintf(why, sizeof why, "cannot reach the gpuctl daemon to queue the job (%s); nothing "
			 "was submitted", r->link_err[0] ? r->link_err : "see runner.log");
		fail_allocs(r, EXIT_DAEMON, why);
	}
	sb_free(&sb);
}

void rjob_submit(struct runner *r, struct rclient *c, const struct msg *m, int specfd)
{
	uint64_t id = 0;
	char why[1024] = "";
	struct ralloc *a = xcalloc(1, sizeof *a);
	msg_get_u64(m, "id", UINT64_MAX, &id);
	int rc = fill(r, m, specfd, &a->j, &a->spec, why, sizeof why);
	if (specfd >= 0)
		close(specfd);
	char **argv = NULL, **env = NULL;
	if (rc == EXIT_OK && !spec_parse(a->spec.buf, a->spec.len, &argv, &env, why, sizeof why))
		rc = EXIT_USAGE;
	if (rc == EXIT_OK)
		rc = choose(r, m, &a->j, env, why, sizeof why);
	if (rc == EXIT_OK)
		rc = check_after(r, &a->j, why, sizeof why);
	if (rc == EXIT_OK && a->j.log) {
		/* The user's own file: it must take output before the job is accepted. */
		int fd = job_log_create(a->j.log, a->j.umask);
		if (fd < 0) {
			snprintf(why, sizeof why, "cannot write the log %s: %s; nothing was submitted",
				 a->j.log, job_log_error(errno));
			rc = EXIT_USAGE;
		} else {
			close(fd);
		}
	}
	free(argv);
	free(env);
	if (rc != EXIT_OK) {
		runner_error(r, c, id, rc, "%s", why);
		alloc_free(a);
		return;
	}
	a->c = c;
	a->id = id;
	if (r->allocs_tail)
		r->allocs_tail->next = a;
	else
		r->allocs = a;
	r->allocs_tail = a;
	serve_allocs(r);
}

/* The daemon's `jobid` answer: a block of ids for the pool. */
void rjob_ids(struct runner *r, const struct msg *m)
{
	uint64_t id = 0, first = 0, count = 0;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	if (!r->ids_req || id != r->ids_req || !msg_get_u64(m, "first", UINT64_MAX, &first) || !first ||
	    !msg_get_u64(m, "count", IDS_PER_ASK, &count) || !count)
		return;
	r->ids_req = 0;
	/* A block below what we asked for (the daemon bounds how far one user's `min` moves the
	 * machine's counter, and its counter may be behind our records after it lost its state):
	 * our ids continue above our own records all the same, so a submit never fails for it. */
	if (first <= r->max_id && r->max_id < UINT64_MAX - count) {
		if (!r->ids_clamped)
			fprintf(stderr, "gpuctl runner: the daemon's job ids (from %llu) are below this "
				"user's records (up to %llu); ids continue from there\n",
				(unsigned long long)first, (unsigned long long)r->max_id);
		r->ids_clamped = true;
		first = r->max_id + 1;
	}
	r->pool_next = first;
	r->pool_end = first + count;
	serve_allocs(r);
}

/* The daemon refused to give ids. */
void rjob_ids_failed(struct runner *r, const struct msg *m)
{
	uint64_t id = 0;
	struct gpu_error err = {0};
	msg_get_u64(m, "id", UINT64_MAX, &id);
	if (!r->ids_req || id != r->ids_req)
		return;
	msg_error_read(m, "the daemon refused the request", &err);
	char why[700];
	snprintf(why, sizeof why, "the gpuctl daemon gave no job id: %.600s", err.msg);
	fail_allocs(r, err.code, why);
}
