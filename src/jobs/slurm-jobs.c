/* slurm-jobs.c: the Slurm job backend (backend.h, slurm-jobs.h): `submit --slurm` is one
 * sbatch, and jobs, logs, cancel and wait ask squeue, scontrol and scancel, each run with an argv
 * (exec_run: no shell) and a time limit. Slurm decides who may do what to a job (scancel refuses
 * another user's); gpuctl checks the owner first too, to say so plainly.
 *
 * What gpuctl submitted is recorded in $XDG_STATE_HOME/gpuctl/slurm/ID.job (job.c's format), so
 * `jobs` lists those jobs beside this machine's, knows their names, commands and logs, and
 * remembers how each ended after slurmctld forgets it (MinJobAge after its end). A job that
 * slurmctld forgot before gpuctl saw it end is asked of Slurm's accounting (sacct, once, when
 * squeue first does not know it); where that cannot say, it is `unknown`, never done. Slurm tells no
 * one when a job ends: a watch looks again on a timer (timerfd) whose period grows from 0.2 s to
 * 5 s, so a long wait costs slurmctld one small query every 5 s. The table over it and
 * slurm-submit.c is slurm.c. */
#include "base/escape.h"
#include "jobs/backend.h"
#include "machine/pid.h"
#include "jobs/slurm-jobs.h"
#include "base/exec.h"
#include "machine/slurm.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

extern char **environ;

#define TOOL_SECONDS 30.0    /* squeue, scontrol, scancel: Slurm's clients retry for a while */
#define CANCEL_SECONDS 90.0  /* Slurm's KillWait (30 s by default) and its clean-up */
#define POLL_FIRST 0.2
#define POLL_MAX 5.0
#define POLL_FAILURES 5      /* squeue failing this many times in a row ends a watch */

struct sjob {
	struct job j;                /* first: a struct job * of ours is a struct sjob * */
	bool recorded;               /* submitted by gpuctl: ID.job holds it */
	bool missing;                /* squeue does not know it */
	uint32_t owner;              /* squeue's UserID (valid when seen) */
	bool seen, gpus_asked, cancel;
	bool array;                  /* a job array, or a task of one: not followed (gpuctl-jobs(1)) */
};

struct jobs_of {
	int dirfd;
	char *dir;
	struct sjob **v;
	size_t n, cap;
	struct job **rows;
	struct sjob **watched;
	size_t nwatched, wcap;
	int tfd;
	double period;
	int failures;
	double until;                /* no tool runs past it (monotonic; 0: none) */
	const char *who;             /* the command, for what a watch tells ("gpuctl wait") */
};

int slurm_jobs_dirfd(const struct jobs_of *s)
{
	return s->dirfd;
}

static struct sjob *add(struct jobs_of *s, uint64_t id)
{
	struct sjob *x = xcalloc(1, sizeof *x);
	x->j = (struct job){.id = id, .kind = JOB_SLURM, .uid = geteuid(), .exit_code = -1,
			    .max_util = -1, .prefer = -1};
	s->v = grow_array(s->v, &s->cap, s->n + 1, sizeof *s->v);
	s->v[s->n++] = x;
	return x;
}

static struct sjob *lookup(struct jobs_of *s, uint64_t id)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i]->j.id == id)
			return s->v[i];
	return NULL;
}

struct jobs_of *slurm_jobs_open(bool resume, struct gpu_error *err)
{
	(void)resume;
	struct jobs_of *s = xcalloc(1, sizeof *s);
	s->tfd = -1;
	s->dirfd = job_slurm_dir_open(&s->dir, err);
	if (s->dirfd < 0) {
		free(s);
		return NULL;
	}
	struct job *recs;
	size_t n = job_load_all(s->dirfd, &recs, JOB_LOAD_FILES);
	for (size_t i = 0; i < n; i++) {
		struct sjob *x = add(s, recs[i].id);
		x->j = recs[i];
		x->j.kind = JOB_SLURM;
		x->recorded = true;
	}
	free(recs);
	return s;
}

void slurm_jobs_close(struct jobs_of *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		job_free(&s->v[i]->j);
		free(s->v[i]);
	}
	free(s->v);
	free(s->rows);
	free(s->watched);
	if (s->tfd >= 0)
		close(s->tfd);
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s->dir);
	free(s);
}

/* The job's GPUs (gres indices on its node) and, for a job gpuctl did not submit, its name,
 * command, directory and output, from `scontrol show job -d`. Asked once; its failure leaves them
 * unknown (the state is squeue's business). */
static void details(struct sjob *x)
{
	char id[24];
	struct strbuf out = {0}, e = {0};
	x->gpus_asked = true;
	snprintf(id, sizeof id, "%llu", (unsigned long long)x->j.id);
	const char *const argv[] = {"scontrol", "show", "job", "-d", id, NULL};
	bool one_node = x->j.node && !strpbrk(x->j.node, ",[");
	if (exec_run(argv, TOOL_SECONDS, SLURM_LATE, &out, &e) == 0 && out.buf) {
		struct scontrol_job sj;
		scontrol_parse_job(out.buf, one_node ? x->j.node : NULL, &sj);
		if (sj.gpus[0])
			slurm_idx_list(sj.gpus, x->j.gpus, &x->j.ngpus, GPU_MAX);
		if (!x->recorded) {
			x->j.name = sj.name ? xstrdup(sj.name) : NULL;
			x->j.command = xstrdup(sj.command ? sj.command : "");
			x->j.cwd = sj.workdir ? xstrdup(sj.workdir) : NULL;
			x->j.log = sj.stdout_path ? xstrdup(sj.stdout_path) : NULL;
		}
		scontrol_job_free(&sj);
	}
	sb_free(&out);
	sb_free(&e);
}

/* A record's job that slurmctld no longer knows: over, and how is not known. acct: why Slurm's
 * accounting did not tell either. */
static void forgotten(struct sjob *x, const char *why, const char *acct)
{
	const char *last = job_state_name(x->j.state);
	char *reason = acct ? xasprintf("%s (gpuctl last saw it %s); Slurm's accounting could not say "
					"how it ended: %s", why, last, acct)
			    : xasprintf("%s (gpuctl last saw it %s)", why, last);
	free(x->j.reason);
	x->j.reason = reason;
	x->j.state = JOB_UNKNOWN;
	x->j.exit_code = -1;
	x->j.signal = 0;
}

/* Asks squeue about these jobs and updates them (records that changed are written). false: Slurm
 * could not be asked (err). */
static bool refresh(struct jobs_of *s, struct sjob **v, size_t n, struct gpu_error *err)
{
	if (!n)
		return true;
	struct strbuf ids = {0}, out = {0}, e = {0};
	/* Freed at one exit, whichever way the answer turned out. */
	struct squeue_row *rows = NULL, *acct = NULL;
	struct sjob **gone = NULL;
	size_t nrows = 0;
	bool ok = false;
	for (size_t i = 0; i < n; i++)
		sb_addf(&ids, "%s%llu", i ? "," : "", (unsigned long long)v[i]->j.id);
	const char *const argv[] = {"squeue", "-h", "-t", "all", "-j", ids.buf, "-O", SQUEUE_FORMAT, NULL};
	double limit = s->until && s->until - now_mono() < TOOL_SECONDS ? s->until - now_mono() : TOOL_SECONDS;
	int rc = limit > 0 ? exec_run(argv, limit, SLURM_LATE, &out, &e) : -1;
	if (rc < 0 && s->until && now_mono() >= s->until) {
		err->code = EXIT_TIMEOUT;
		snprintf(err->msg, sizeof err->msg, "--timeout ran out while asking Slurm about the jobs "
			 "(squeue had not answered; is slurmctld up? `scontrol ping` says)");
		goto done;
	}
	/* One id, or none of several, that slurmctld does not know: "Invalid job id specified". */
	bool none = rc == 1 && e.buf && strstr(e.buf, "Invalid job id");
	if (rc != 0 && !none) {
		/* exec_run's own failures (not run, no answer in time) say what to check */
		slurm_fail(err, rc < 0 ? "cannot ask Slurm about the jobs" : "squeue failed", &e,
			   rc < 0 ? NULL : " (is slurmctld up? `scontrol ping` says)");
		goto done;
	}
	char why[160];
	bool parsed = squeue_parse(out.buf ? out.buf : "", &rows, &nrows, why, sizeof why);
	/* A row of a job not asked about is as wrong as a malformed one, unless it is an array's
	 * task (asked by the raw id of one of its tasks, squeue shows ARRAY_TASK). */
	bool tasks = false;
	for (size_t k = 0; parsed && k < nrows; k++) {
		bool asked = false;
		for (size_t i = 0; i < n && !asked; i++)
			asked = v[i]->j.id == rows[k].id;
		tasks |= rows[k].array && !asked;
		if (!asked && !rows[k].array) {
			snprintf(why, sizeof why, "squeue's answer has a row for job %llu, which was not "
				 "asked about (a Reason holding a newline?)", (unsigned long long)rows[k].id);
			parsed = false;
		}
	}
	if (!parsed) {
		err->code = EXIT_SLURM;
		snprintf(err->msg, sizeof err->msg, "squeue's answer cannot be read: %s; nothing of it "
			 "was taken (`squeue -j %s` shows it)", why, ids.buf);
		goto done;
	}
	/* The jobs squeue does not know: Slurm's accounting, where there is one. */
	gone = xcalloc(n + 1, sizeof *gone);
	acct = xcalloc(n + 1, sizeof *acct);
	size_t ngone = 0;
	char awhy[512] = "";
	for (size_t i = 0; i < n && !tasks; i++) {
		bool known = false;
		for (size_t k = 0; k < nrows && !known; k++)
			known = rows[k].id == v[i]->j.id;
		if (!known)
			gone[ngone++] = v[i];
	}
	uint64_t *gid = xcalloc(2 * ngone + 1, sizeof *gid);
	for (size_t i = 0; i < ngone; i++) {
		gid[i] = gone[i]->j.id;
		gid[ngone + i] = gone[i]->j.submitted;
	}
	bool acct_ok = !ngone || slurm_accounting(gid, gid + ngone, ngone, s->until, TOOL_SECONDS, acct,
						  awhy, sizeof awhy, err);
	free(gid);
	if (!acct_ok)
		goto done;
	for (size_t i = 0; i < n; i++) {
		struct sjob *x = v[i];
		struct squeue_row *r = NULL, *a = NULL;
		for (size_t k = 0; k < nrows && !r; k++)
			if (rows[k].id == x->j.id)
				r = &rows[k];
		for (size_t k = 0; k < ngone && !r && !a; k++)
			if (gone[k] == x && acct[k].id)
				a = &acct[k];
		if ((r && r->array) || (!r && tasks)) {
			/* A job array (one id, many tasks each with its own state): not followed. */
			x->array = true;
			x->seen = r != NULL;
			x->missing = false;
			if (r)
				x->owner = r->uid;
			else
				x->owner = geteuid();
			continue;
		}
		struct strbuf before = {0}, after = {0};
		if (x->recorded)
			job_encode(&x->j, &before);
		x->missing = !r && !a;
		x->seen = r != NULL;
		if (r)
			x->owner = r->uid;
		if (a) {
			/* ended, by Slurm's accounting: the caller's (slurm_accounting() checked) */
			x->owner = a->uid;
			slurm_row_apply(a, &x->j);
		} else if (r && r->uid == geteuid()) {
			slurm_row_apply(r, &x->j);
			if (!x->gpus_asked && !x->j.ngpus && x->j.node && (x->j.count || !x->recorded))
				details(x);
		} else if (x->recorded && !r) {
			forgotten(x, "Slurm no longer knows it: slurmctld forgets a job MinJobAge "
				  "(300 s by default) after it ends", awhy);
		} else if (x->recorded) {
			forgotten(x, "Slurm's job of this id is now another user's (were its ids started "
				  "again?)", NULL);
		}
		if (x->recorded) {
			job_encode(&x->j, &after);
			struct gpu_error werr = {0};
			if ((before.len != after.len || memcmp(before.buf, after.buf, after.len)) &&
			    !job_write(s->dirfd, &x->j, &werr))
				fprintf(stderr, "gpuctl: warning: %s\n", werr.msg);
		}
		sb_free(&before);
		sb_free(&after);
	}
	ok = true;
done:
	free(gone);
	free(acct);
	free(rows);
	sb_free(&ids);
	sb_free(&out);
	sb_free(&e);
	return ok;
}

/* Every record not known to have ended. */
static size_t unfinished(struct jobs_of *s, struct sjob ***v)
{
	size_t k = 0;
	*v = xcalloc(s->n + 1, sizeof **v);
	for (size_t i = 0; i < s->n; i++)
		if (!job_final(s->v[i]->j.state))
			(*v)[k++] = s->v[i];
	return k;
}

int slurm_jobs_list(struct jobs_of *s, bool all, struct job ***rows, size_t *n)
{
	(void)all; /* other users' Slurm jobs are squeue's to show */
	struct sjob **v;
	struct gpu_error err = {0};
	size_t k = unfinished(s, &v);
	int rc = EXIT_OK;
	if (!refresh(s, v, k, &err)) {
		fprintf(stderr, "gpuctl jobs: %s; your Slurm jobs are shown as gpuctl last saw them\n",
			err.msg);
		rc = err.code;
	}
	free(v);
	free(s->rows);
	s->rows = xcalloc(s->n + 1, sizeof *s->rows);
	for (size_t i = 0; i < s->n; i++)
		s->rows[i] = &s->v[i]->j;
	*rows = s->rows;
	*n = s->n;
	return rc;
}

int slurm_jobs_find(struct jobs_of *s, const uint64_t *ids, size_t n, struct job **out, const char *who)
{
	s->who = who;
	struct sjob **ask = xcalloc(n + 1, sizeof *ask);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		struct sjob *x = lookup(s, ids[i]);
		if (!x)
			x = add(s, ids[i]);
		if (!job_final(x->j.state) && (!k || ask[k - 1] != x))
			ask[k++] = x;
	}
	struct gpu_error err = {0};
	int rc = EXIT_OK;
	if (!refresh(s, ask, k, &err)) {
		fprintf(stderr, "%s: %s\n", who, err.msg);
		rc = err.code;
	}
	for (size_t i = 0; rc == EXIT_OK && i < n; i++) {
		struct sjob *x = lookup(s, ids[i]);
		char user[64];
		if (!x->recorded && x->missing) {
			fprintf(stderr, "%s: no job slurm:%llu of yours: Slurm does not know it (it never "
				"existed, or ended more than MinJobAge, 300 s by default, ago; `gpuctl jobs` "
				"lists the jobs gpuctl submitted)\n", who, (unsigned long long)ids[i]);
			rc = EXIT_NO_SUCH_JOB;
		} else if (x->array) {
			fprintf(stderr, "%s: slurm:%llu is a Slurm job array, or a task of one: gpuctl does "
				"not follow job arrays (their tasks share one id, each with its own state and "
				"log); `squeue -j %llu` and `scontrol show job %llu` show them\n", who,
				(unsigned long long)ids[i], (unsigned long long)ids[i], (unsigned long long)ids[i]);
			rc = EXIT_USAGE;
		} else if (!x->recorded && x->owner != geteuid()) {
			user_name(x->owner, user, sizeof user);
			fprintf(stderr, "%s: job slurm:%llu is %s's, not yours: `squeue` shows it, but "
				"gpuctl does not read its log, wait for it or cancel it\n", who,
				(unsigned long long)ids[i], esc_str(user, 0));
			rc = EXIT_DENIED;
		} else {
			if (!x->recorded && !x->gpus_asked)
				details(x);
			out[i] = &x->j;
		}
	}
	free(ask);
	return rc;
}

int slurm_jobs_log_open(struct jobs_of *s, const struct job *j, char **path)
{
	(void)s;
	if (!j->log) {
		*path = xstrdup("(Slurm names no output file)");
		errno = ENOENT;
		return -1;
	}
	*path = xstrdup(j->log);
	/* slurm-N.out is named by a predictable id, often in a shared directory: what is there may
	 * have been put there by another user before Slurm's node wrote it (slurmstepd makes it as
	 * the job's owner). */
	return job_log_open(j->log);
}

/* ---- watching: squeue on a timer that backs off ---- */

static bool arm(struct jobs_of *s, struct gpu_error *err)
{
	struct itimerspec it = {0};
	it.it_value.tv_sec = (time_t)s->period;
	it.it_value.tv_nsec = (long)((s->period - (double)(time_t)s->period) * 1e9) + 1;
	if (timerfd_settime(s->tfd, 0, &it, NULL) == 0)
		return true;
	err->code = EXIT_FAIL;
	snprintf(err->msg, sizeof err->msg, "cannot set a timer to ask Slurm again: %s", strerror(errno));
	return false;
}

bool slurm_jobs_watch(struct jobs_of *s, struct job *j, bool cancel, double grace, double *bound,
		     struct gpu_error *err)
{
	(void)grace; /* Slurm's KillWait is the grace period of its jobs */
	struct sjob *x = (struct sjob *)j;
	if (cancel) {
		char id[24];
		struct strbuf out = {0}, e = {0};
		snprintf(id, sizeof id, "%llu", (unsigned long long)j->id);
		const char *const argv[] = {"scancel", id, NULL};
		int rc = exec_run(argv, TOOL_SECONDS, SLURM_LATE, &out, &e);
		if (rc != 0) {
			char what[80];
			snprintf(what, sizeof what, "Slurm did not cancel job slurm:%s (scancel)", id);
			slurm_fail(err, what, &e, NULL);
		}
		sb_free(&out);
		sb_free(&e);
		if (rc != 0)
			return false;
		if (*bound < now_mono() + CANCEL_SECONDS)
			*bound = now_mono() + CANCEL_SECONDS;
	}
	x->cancel = cancel;
	s->watched = grow_array(s->watched, &s->wcap, s->nwatched + 1, sizeof *s->watched);
	s->watched[s->nwatched++] = x;
	if (s->tfd < 0) {
		s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		s->period = POLL_FIRST;
		if (s->tfd < 0) {
			err->code = EXIT_FAIL;
			snprintf(err->msg, sizeof err->msg, "cannot make a timer (timerfd): %s", strerror(errno));
			return false;
		}
		return arm(s, err);
	}
	return true;
}

int slurm_jobs_watch_fd(struct jobs_of *s)
{
	return s->tfd;
}

/* A job waited for is over when it has ended or will never start; one cancelled, when it ended. */
static bool over(const struct sjob *x)
{
	return job_final(x->j.state) || (!x->cancel && x->j.never);
}

size_t slurm_jobs_watching(struct jobs_of *s)
{
	size_t k = 0;
	for (size_t i = 0; i < s->nwatched; i++)
		k += !over(s->watched[i]);
	return k;
}

bool slurm_jobs_watch_step(struct jobs_of *s, struct gpu_error *err)
{
	uint64_t ticks;
	if (read(s->tfd, &ticks, sizeof ticks) < 0 && errno == EAGAIN)
		return true;
	struct sjob **v = xcalloc(s->nwatched + 1, sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < s->nwatched; i++)
		if (!over(s->watched[i]))
			v[k++] = s->watched[i];
	struct gpu_error e = {0};
	bool ok = refresh(s, v, k, &e);
	free(v);
	if (!ok && ++s->failures >= POLL_FAILURES) {
		*err = e;
		snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
			 "; asked %d times in a row, so gpuctl stopped waiting (the jobs go on: ask again "
			 "once `scontrol ping` says slurmctld is up)", s->failures);
		return false;
	}
	/* A hung slurmctld costs up to TOOL_SECONDS a look: on a terminal, each failed look is
	 * told, so that the wait is not silent for minutes. */
	if (!ok && e.code != EXIT_TIMEOUT && isatty(STDERR_FILENO))
		fprintf(stderr, "%s: %s; asking again (%d of %d)\n", s->who ? s->who : "gpuctl", e.msg,
			s->failures + 1, POLL_FAILURES);
	if (ok)
		s->failures = 0;
	/* A job that slurmctld forgot between two looks, without a record, is over too. */
	for (size_t i = 0; i < s->nwatched; i++)
		if (s->watched[i]->missing && !s->watched[i]->recorded && !job_final(s->watched[i]->j.state))
			forgotten(s->watched[i], "Slurm no longer knows it", "sacct has no ended job of "
				  "yours of this id");
	s->period = s->period * 1.5 < POLL_MAX ? s->period * 1.5 : POLL_MAX;
	return arm(s, err);
}

bool slurm_jobs_clean(struct jobs_of *s, uint64_t *gone, uint64_t *kept, struct gpu_error *err)
{
	struct sjob **v;
	size_t k = unfinished(s, &v);
	struct gpu_error e = {0};
	refresh(s, v, k, &e); /* what cannot be asked now stays, as not finished */
	free(v);
	*gone = *kept = 0;
	for (size_t i = 0; i < s->n; i++) {
		char name[40];
		if (!s->v[i]->recorded || !job_final(s->v[i]->j.state))
			continue;
		snprintf(name, sizeof name, "%llu.job", (unsigned long long)s->v[i]->j.id);
		if (unlinkat(s->dirfd, name, 0) == 0) {
			(*gone)++;
		} else if (errno != ENOENT) {
			err->code = EXIT_FAIL;
			snprintf(err->msg, sizeof err->msg, "cannot remove %s/%s: %s", s->dir, name,
				 strerror(errno));
			return false;
		}
	}
	return true;
}

void slurm_jobs_deadline(struct jobs_of *s, double until)
{
	s->until = until;
}
