/* local.c: the job backend of this machine (backend.h): jobs run by the user's job runner
 * once the shared daemon grants their GPUs. The records are read directly (the runner keeps them
 * current, local-conn.c); the runner is asked to submit, cancel and clean, and says when a job ends
 * (no polling). Other users' queued and running jobs come from the daemon's list. */
#include "jobs/backend.h"
#include "jobs/local-conn.h"
#include "lease/view.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern char **environ;

struct jobs_of {
	struct jobctx x;
	struct job *others;          /* other users' jobs, as the daemon lists them (list --all) */
	size_t nothers;
	struct job **rows;
	/* watching: one request to the runner per job (its id: the place in watched + 1) */
	struct dclient dc;
	struct job **watched;
	bool *pending, *cancel;
	size_t nwatched, cap, cap2, cap3;
	int tries;                   /* runners lost while waiting */
	/* job_local_prefetch_places: the question asked at open */
	enum { PQ_NONE, PQ_ASKED, PQ_ANSWERED, PQ_FAILED } pq_state;
	struct leaseview_query pq;
	struct leaseview pv;         /* PQ_ANSWERED: no daemon, nothing queued */
	struct gpu_error pq_err;     /* PQ_FAILED */
};

static bool prefetch, make_copy;

void job_local_prefetch_places(void)
{
	prefetch = true;
}

void job_local_make_copy(void)
{
	make_copy = true;
}

static struct jobs_of *local_open(bool resume, struct gpu_error *err)
{
	struct jobs_of *s = xcalloc(1, sizeof *s);
	s->dc.fd = -1;
	if (prefetch) {
		int r = leaseview_query_places(&s->pq, &s->pv, &s->pq_err);
		s->pq_state = r > 0 ? PQ_ASKED : r == 0 ? PQ_ANSWERED : PQ_FAILED;
	}
	if (!jobctx_load(&s->x, resume, make_copy ? JOB_LOAD_MAKE : JOB_LOAD_COPY, err)) {
		if (s->pq_state == PQ_ASKED)
			leaseview_query_cancel(&s->pq);
		free(s);
		return NULL;
	}
	return s;
}

/* The answer to the question asked at open, waited for (at most the client's timeout). */
static bool prefetched(struct jobs_of *s, struct leaseview *v, struct gpu_error *err)
{
	int state = s->pq_state;
	s->pq_state = PQ_NONE;
	if (state == PQ_FAILED)
		*err = s->pq_err;
	if (state != PQ_ASKED) {
		*v = s->pv;
		return state == PQ_ANSWERED;
	}
	return leaseview_query_wait(&s->pq, v, err) == 1;
}

static void local_close(struct jobs_of *s)
{
	if (!s)
		return;
	dclient_close(&s->dc);
	if (s->pq_state == PQ_ASKED)
		leaseview_query_cancel(&s->pq);
	jobctx_free(&s->x);
	jobs_free(s->others, s->nothers);
	free(s->rows);
	free(s->watched);
	free(s->pending);
	free(s->cancel);
	free(s);
}

/* Other users' jobs, as the daemon lists them (kind job; the id from the label "#ID NAME"), and
 * the places of ours in the queue. false: err says why the daemon could not be asked. */
static bool from_daemon(struct jobs_of *s, bool all, struct gpu_error *err)
{
	struct leaseview v;
	struct gpu_set *set = NULL;
	uint64_t id;
	uid_t me = geteuid();
	if (!(all ? leaseview_load(&v, err) : s->pq_state != PQ_NONE ? prefetched(s, &v, err)
							  : leaseview_load_places(&v, err)))
		return false;
	for (size_t i = 0; i < v.nqueue; i++) {
		const struct waiter_info *w = &v.queue[i];
		if (strcmp(w->kind, "job") || !job_label_id(w->name, &id))
			continue;
		struct job *mine = w->uid == me ? jobctx_find(&s->x, id) : NULL;
		if (mine) {
			mine->position = w->position;
		} else if (all && w->uid != me) {
			s->others = xrealloc(s->others, (s->nothers + 1) * sizeof *s->others);
			struct job *j = &s->others[s->nothers++];
			const char *sp = strchr(w->name, ' ');
			*j = (struct job){.id = id, .uid = w->uid, .state = JOB_QUEUED, .exit_code = -1,
					  .position = w->position, .count = w->count,
					  .submitted = (uint64_t)w->since * 1000000000ULL,
					  .name = sp ? xstrdup(sp + 1) : NULL,
					  .command = xstrdup(w->command ? w->command : "")};
		}
	}
	for (size_t i = 0; all && i < v.nleases; i++) {
		const struct lease_info *l = &v.leases[i];
		if (strcmp(l->kind, "job") || l->uid == me || !job_label_id(l->name, &id))
			continue;
		struct gpu_error nvml = {0};
		if (!set)
			set = gpu_set_open(&nvml); /* indices are a courtesy: UUIDs say it otherwise */
		s->others = xrealloc(s->others, (s->nothers + 1) * sizeof *s->others);
		struct job *j = &s->others[s->nothers++];
		const char *sp = strchr(l->name, ' ');
		*j = (struct job){.id = id, .uid = l->uid, .state = JOB_RUNNING, .exit_code = -1,
				  .pid = l->pid, .started = (uint64_t)l->since * 1000000000ULL,
				  .name = sp ? xstrdup(sp + 1) : NULL,
				  .command = xstrdup(l->command ? l->command : "")};
		for (size_t k = 0; k < l->ngpus && j->ngpus < GPU_MAX; k++)
			for (size_t g = 0; set && g < set->ngpus; g++)
				if (!strcmp(set->gpus[g].uuid, l->uuids[k]))
					j->gpus[j->ngpus++] = set->gpus[g].index;
	}
	gpu_set_free(set);
	leaseview_free(&v);
	return true;
}

static int local_list(struct jobs_of *s, bool all, struct job ***rows, size_t *n)
{
	bool queued = false;
	int rc = EXIT_OK;
	for (size_t i = 0; i < s->x.n; i++)
		queued |= s->x.jobs[i].state == JOB_QUEUED;
	struct gpu_error err = {0};
	/* The daemon down is said, never shown as no one else's jobs: --all asked for them. */
	if ((queued || all) && !from_daemon(s, all, &err)) {
		fprintf(stderr, "gpuctl jobs: %s could not be had: %s\n", all ? "other users' jobs "
			"and the queue" : "places in the queue", err.msg);
		rc = all ? err.code : EXIT_OK;
	}
	free(s->rows);
	s->rows = xcalloc(s->x.n + s->nothers + 1, sizeof *s->rows);
	for (size_t i = 0; i < s->x.n + s->nothers; i++)
		s->rows[i] = i < s->x.n ? &s->x.jobs[i] : &s->others[i - s->x.n];
	*rows = s->rows;
	*n = s->x.n + s->nothers;
	return rc;
}

static int local_find(struct jobs_of *s, const uint64_t *ids, size_t n, struct job **out, const char *who)
{
	int rc = jobctx_check(&s->x, ids, n, who);
	for (size_t i = 0; rc == EXIT_OK && i < n; i++)
		out[i] = jobctx_find(&s->x, ids[i]);
	/* Only a job waiting for its GPUs needs the daemon's word: its place in the queue. */
	bool queued = false;
	for (size_t i = 0; rc == EXIT_OK && i < n; i++)
		queued |= out[i]->state == JOB_QUEUED;
	struct gpu_error err = {0};
	if (queued) /* without the daemon: no place shown (wait, cancel and logs need none) */
		from_daemon(s, false, &err);
	return rc;
}

static int local_log_open(struct jobs_of *s, const struct job *j, char **path)
{
	if (j->own_log) {
		char name[40];
		snprintf(name, sizeof name, "%llu.log", (unsigned long long)j->id);
		*path = xasprintf("%s/%s", s->x.dir, name);
		return openat(s->x.dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	}
	/* --log PATH: the user's word at submit, but what is there now may have been replaced
	 * (a FIFO would block the open; another user's file is not shown). */
	*path = xstrdup(j->log);
	return job_log_open(j->log);
}

/* The request for watched job i: wait, or cancel (the runner answers when it has ended). */
static bool ask(struct jobs_of *s, size_t i, double grace, struct gpu_error *err)
{
	struct strbuf req = {0};
	msg_begin(&req, s->cancel[i] ? "cancel" : "wait");
	msg_add_u64(&req, "id", i + 1);
	msg_add_u64(&req, "job", s->watched[i]->id);
	if (s->cancel[i])
		msg_add_u64(&req, "grace", (uint64_t)(grace * 1000));
	bool ok = (s->dc.fd >= 0 || jobs_runner_open(&s->dc, RUNNER_START, err)) && dclient_send(&s->dc, &req, err);
	sb_free(&req);
	return ok;
}

static bool local_watch(struct jobs_of *s, struct job *j, bool cancel, double grace, double *bound,
			struct gpu_error *err)
{
	size_t i = s->nwatched;
	s->watched = grow_array(s->watched, &s->cap, i + 1, sizeof *s->watched);
	s->pending = grow_array(s->pending, &s->cap2, i + 1, sizeof *s->pending);
	s->cancel = grow_array(s->cancel, &s->cap3, i + 1, sizeof *s->cancel);
	s->watched[i] = j;
	s->pending[i] = true;
	s->cancel[i] = cancel;
	s->nwatched++;
	/* The runner answers a cancel once the job has ended: a queued one at once, a running one
	 * within the grace period and a moment for SIGKILL to land. */
	if (cancel && *bound < now_mono() + grace + 15)
		*bound = now_mono() + grace + 15;
	return ask(s, i, grace, err);
}

static int local_watch_fd(struct jobs_of *s)
{
	return s->dc.fd;
}

static size_t local_watching(struct jobs_of *s)
{
	size_t k = 0;
	for (size_t i = 0; i < s->nwatched; i++)
		k += s->pending[i];
	return k;
}

/* The runner went away (it was exiting, or was killed): the records say what ended meanwhile; a
 * new runner is asked about the rest. A cancel is not sent twice. */
static bool runner_lost(struct jobs_of *s, struct gpu_error *err)
{
	dclient_close(&s->dc);
	bool cancelling = false;
	for (size_t i = 0; i < s->nwatched; i++) {
		struct job now;
		if (s->pending[i] && job_read(s->x.dirfd, s->watched[i]->id, &now)) {
			job_free(s->watched[i]);
			*s->watched[i] = now;
			s->pending[i] = !job_final(now.state);
		}
		cancelling |= s->pending[i] && s->cancel[i];
	}
	if (cancelling) {
		if (!err->msg[0]) {
			err->code = EXIT_DAEMON;
			snprintf(err->msg, sizeof err->msg, "your job runner went away while it cancelled "
				 "(see `gpuctl jobs`)");
		}
		return false;
	}
	if (!local_watching(s))
		return true;
	if (++s->tries == 4) {
		err->code = EXIT_DAEMON;
		snprintf(err->msg, sizeof err->msg, "your job runner keeps going away");
		return false;
	}
	for (size_t i = 0; i < s->nwatched; i++)
		if (s->pending[i] && !ask(s, i, 0, err))
			return false;
	return true;
}

static bool local_watch_step(struct jobs_of *s, struct gpu_error *err)
{
	for (;;) {
		struct msg m;
		uint64_t id = 0;
		int r = jobs_runner_recv(&s->dc, &m, now_mono(), err);
		if (r == 0)
			return true;
		if (r < 0)
			return runner_lost(s, err);
		if (msg_get_u64(&m, "id", s->nwatched, &id) && id && s->pending[id - 1]) {
			if (!strcmp(msg_verb(&m), "ended"))
				job_from_ended(s->watched[id - 1], &m);
			s->pending[id - 1] = false; /* an error answer too: nothing more will come */
		}
		msg_free(&m);
	}
}

static bool local_clean(struct jobs_of *s, uint64_t *gone, uint64_t *kept, struct gpu_error *err)
{
	struct dclient dc = {.fd = -1};
	struct strbuf req = {0};
	struct msg reply;
	(void)s;
	msg_begin(&req, "clean");
	msg_add_u64(&req, "id", 1);
	bool ok = jobs_runner_call(&dc, &req, NULL, 0, &reply, err);
	sb_free(&req);
	dclient_close(&dc);
	if (!ok)
		return false;
	msg_get_u64(&reply, "count", UINT64_MAX, gone);
	msg_get_u64(&reply, "kept", UINT64_MAX, kept);
	msg_free(&reply);
	return true;
}

/* ---- submit ---- */

static int local_submit_check(struct submit_req *rq, struct gpu_error *err)
{
	for (size_t i = 0; i < rq->nafter; i++)
		if (rq->after[i].kind != JOB_LOCAL) {
			err->code = EXIT_USAGE;
			snprintf(err->msg, sizeof err->msg, "--after slurm:%llu: a job of this machine "
				 "cannot run after a Slurm job (submit it with --slurm)",
				 (unsigned long long)rq->after[i].id);
			return EXIT_USAGE;
		}
	return EXIT_OK;
}

static void add_common(struct strbuf *sb, const struct submit_req *rq)
{
	const struct grant_req *g = &rq->o.rq;
	if (g->count)
		msg_add_u64(sb, "count", g->count);
	if (g->gpus)
		msg_add(sb, "gpus", g->gpus, NULL);
	if (g->min_free_mib)
		msg_add_u64(sb, "min_free", g->min_free_mib);
	if (g->mem_mib) /* memory shares (issue 23) */
		msg_add_u64(sb, "mem", g->mem_mib);
	if (g->mig_uuid || g->mig_slot || g->mig_profile) { /* MIG instances (issue 23) */
		char *mig = xasprintf("%s:%s", g->mig_uuid ? "uuid" : g->mig_slot ? "slot" : "profile",
				      g->mig_uuid ? g->mig_uuid : g->mig_slot ? g->mig_slot : g->mig_profile);
		msg_add(sb, "mig", mig, NULL);
		free(mig);
	}
	if (g->max_util >= 0)
		msg_add_u64(sb, "max_util", (uint64_t)g->max_util);
	if (g->prefer >= 0)
		msg_add_u64(sb, "prefer", (uint64_t)g->prefer);
	if (g->ignore_usage)
		msg_add_u64(sb, "ignore_usage", 1);
	if (rq->o.uuid)
		msg_add_u64(sb, "uuid", 1);
	if (rq->o.cpu_only) /* a CPU-only step (issue 24) */
		msg_add_u64(sb, "cpu", 1);
	if (rq->notify) /* notifications (issue 24) */
		msg_add(sb, "notify", rq->notify, NULL);
	if (g->time_limit > 0) /* time limits (issue 24) */
		msg_add_u64(sb, "time_ms", (uint64_t)(g->time_limit * 1000 + 0.5));
	if (rq->o.bind_cpus || (rq->cfg && rq->cfg->bind_cpus && !rq->o.no_bind))   /* issue 26 */
		msg_add_u64(sb, "bind_cpus", 1);
	if (g->name)
		msg_add(sb, "name", g->name, NULL);
	for (size_t i = 0; i < rq->nafter; i++) {
		if (i % 15 == 0)
			msg_key(sb, "after");
		msg_word_u64(sb, rq->after[i].id);
	}
	if (rq->retries)
		msg_add_u64(sb, "retries", rq->retries);
	if (rq->log)
		msg_add(sb, "log", rq->log, NULL);
	msg_add(sb, "cwd", rq->cwd, NULL);
	msg_add_u64(sb, "umask", rq->umask);
}

/* One job to the runner (started on demand). What to run travels whole (arguments and
 * environment, in a memfd, so no size limit of the message format applies). */
static int local_submit(struct submit_req *rq, char **argv, const char *command, uint64_t *id,
			struct gpu_error *err)
{
	struct dclient *dc = rq->conn;
	if (!dc) {
		dc = rq->conn = xcalloc(1, sizeof *dc);
		*dc = (struct dclient){.fd = -1, .next_id = 1};
	}
	struct strbuf sb = {0}, spec = {0};
	struct msg reply;
	int fd = -1;
	msg_begin(&sb, "submit");
	msg_add_u64(&sb, "id", dc->next_id++);
	if (rq->again) {
		msg_add_u64(&sb, "again", rq->again);
	} else {
		add_common(&sb, rq);
		msg_add(&sb, "command", command, NULL);
		/* The profile's variables (env.NAME) travel in the job's environment. */
		char **env = grant_env_profile(environ, rq->o.rq.profile_env);
		spec_build(&spec, argv, env);
		free(env);
		fd = memfd_create("gpuctl-job", MFD_CLOEXEC);
		if (fd < 0 || write(fd, spec.buf, spec.len) != (ssize_t)spec.len) {
			err->code = EXIT_FAIL;
			snprintf(err->msg, sizeof err->msg, "cannot hold the job's environment in memory "
				 "(memfd): %s", strerror(errno));
			if (fd >= 0)
				close(fd);
			sb_free(&sb);
			sb_free(&spec);
			return EXIT_FAIL;
		}
	}
	bool ok = jobs_runner_call(dc, &sb, &fd, fd >= 0, &reply, err);
	if (ok) {
		ok = msg_get_u64(&reply, "job", UINT64_MAX, id);
		const char *priv = msg_get(&reply, "private");
		if (priv)
			client_private_notice(client_socket_path(), priv);
		msg_free(&reply);
		if (!ok) {
			err->code = EXIT_DAEMON;
			snprintf(err->msg, sizeof err->msg, "your job runner answered without a job id");
		}
	}
	if (fd >= 0)
		close(fd);
	sb_free(&sb);
	sb_free(&spec);
	return ok ? EXIT_OK : err->code ? err->code : EXIT_FAIL;
}

static void local_submit_end(struct submit_req *rq)
{
	if (rq->conn) {
		dclient_close(rq->conn);
		free(rq->conn);
		rq->conn = NULL;
	}
}

const struct job_backend job_backend_local = {
	.name = "local",
	.kind = JOB_LOCAL,
	.open = local_open,
	.close = local_close,
	.list = local_list,
	.find = local_find,
	.log_open = local_log_open,
	.watch = local_watch,
	.watch_fd = local_watch_fd,
	.watching = local_watching,
	.watch_step = local_watch_step,
	.clean = local_clean,
	.submit_check = local_submit_check,
	.submit = local_submit,
	.submit_end = local_submit_end,
};
