/* slurm-submit.c: `gpuctl submit` to Slurm (the Slurm job backend's submit: slurm-jobs.h): the
 * request checked (what only this machine can do is refused), its --after jobs checked (the
 * caller's, known to Slurm, not failed), one sbatch run with the command as the arguments of a
 * constant script (no user string is read by a shell), and the record written that lets `jobs`,
 * `logs` and `wait` know the job. Slurm's refusal reaches the user in its own words. */
#include "jobs/backend.h"
#include "jobs/slurm-jobs.h"
#include "base/exec.h"
#include "machine/slurm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

#define SBATCH_SECONDS 60.0

/* A usage error: the command prints it as one (cmd_bad_usage). */
static int refuse(struct gpu_error *err, const char *fmt, ...) PRINTF(2, 3);
static int refuse(struct gpu_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return err->code = EXIT_USAGE;
}

int slurm_submit_check(struct submit_req *rq, struct gpu_error *err)
{
	if (rq->o.cpu_only) { /* issue 24 */
		err->code = EXIT_USAGE;
		snprintf(err->msg, sizeof err->msg, "-n 0 (a CPU-only step) is for jobs of this machine; "
			 "a Slurm job without GPUs is a plain sbatch");
		return EXIT_USAGE;
	}
	if (rq->notify) { /* notifications (issue 24): run by this machine's job runner */
		err->code = EXIT_USAGE;
		snprintf(err->msg, sizeof err->msg, "--notify is for jobs of this machine (its job runner "
			 "runs the hook); Slurm mails with sbatch --mail-type");
		return EXIT_USAGE;
	}
	const struct grant_req *g = &rq->o.rq;
	const char *what = rq->backend_why;
	const struct profile *p = rq->o.profile ? config_profile(rq->cfg, rq->o.profile) : NULL;
	for (size_t i = 0; i < rq->nafter; i++)
		if (rq->after[i].kind != JOB_SLURM)
			return refuse(err, "--after %llu: a Slurm job (%s) runs after Slurm jobs only "
				      "(slurm:N, as `gpuctl submit --slurm` printed)",
				      (unsigned long long)rq->after[i].id, what);
	if (g->gpus || (p && p->gpus))
		return refuse(err, "Slurm chooses a job's GPUs (%s): %s names GPUs of this machine; "
			      "leave it out (--min-free-memory asks for GPUs with enough memory)",
			      what, g->gpus ? "-g" : "the profile's gpus");
	if (g->max_util >= 0 || g->prefer >= 0 || g->ignore_usage)
		return refuse(err, "Slurm gives each job GPUs of its own (%s): --max-util, --prefer "
			      "and --ignore-usage are for jobs of this machine", what);
	if (g->mig_uuid || g->mig_slot || g->mig_profile) /* MIG instances (issue 23) */
		return refuse(err, "-g GPU:INSTANCE, -g MIG-<uuid> and --mig name MIG instances of "
			      "this machine (%s): Slurm gives a job its GPUs (its MIG GRES is the "
			      "site's)", what);
	if (g->mem_mib) /* memory shares (issue 23) */
		return refuse(err, "--mem shares a GPU of this machine (%s): Slurm gives each job "
			      "GPUs of its own (its sharding GRES is the site's to set up)", what);
	if (rq->o.uuid || (p && p->uuid > 0))
		return refuse(err, "Slurm sets CUDA_VISIBLE_DEVICES itself (%s): --uuid is for jobs "
			      "of this machine", what);
	if (rq->o.bind_cpus)   /* issue 26 */
		return refuse(err, "Slurm binds a job's CPUs itself (%s: its cgroup's cpuset, "
			      "gres.conf Cores and --gres-flags=enforce-binding): --bind-cpus is for jobs "
			      "of this machine", what);
	if (rq->retries)
		return refuse(err, "--retries is for jobs of this machine: Slurm does not run a job "
			      "that failed again (%s)", what);
	if (rq->again)
		return refuse(err, "--again is for jobs of this machine (%s)", what);
	return EXIT_OK;
}

struct sconn {
	struct jobs_of *s;
	bool checked;
	uint64_t *after;             /* the --after jobs still to succeed */
	size_t nafter;
	char **env;
};

/* The --after jobs: the caller's, known to Slurm, and not failed (a job after one that failed
 * could never start); those that succeeded already are left out of the dependency. */
static int check_after(struct sconn *c, const struct submit_req *rq, struct gpu_error *err)
{
	uint64_t *ids = xcalloc(rq->nafter + 1, sizeof *ids);
	struct job **found = xcalloc(rq->nafter + 1, sizeof *found);
	for (size_t i = 0; i < rq->nafter; i++)
		ids[i] = rq->after[i].id;
	int rc = rq->nafter ? slurm_jobs_find(c->s, ids, rq->nafter, found, "gpuctl submit: --after") : EXIT_OK;
	for (size_t i = 0; rc == EXIT_OK && i < rq->nafter; i++) {
		const struct job *d = found[i];
		char how[200];
		if (d->state == JOB_DONE)
			continue;
		if (!job_final(d->state) && !d->never) {
			c->after = xrealloc(c->after, (c->nafter + 1) * sizeof *c->after);
			c->after[c->nafter++] = d->id;
			continue;
		}
		job_how(d, how, sizeof how);
		err->code = EXIT_USAGE;
		snprintf(err->msg, sizeof err->msg, "--after slurm:%llu: job slurm:%llu %s (%s), so this "
			 "job could never start; nothing was submitted", (unsigned long long)d->id,
			 (unsigned long long)d->id, d->never ? "will never start" :
			 d->state == JOB_UNKNOWN ? "ended, and Slurm no longer knows whether it succeeded"
			 : "did not succeed", d->never ? "its own --after failed" : how);
		rc = EXIT_USAGE;
	}
	if (rc != EXIT_OK && !err->msg[0]) {
		err->code = rc;
		snprintf(err->msg, sizeof err->msg, "nothing was submitted");
	}
	free(ids);
	free(found);
	return rc;
}

/* The submit's environment for the job, less what a lease of gpuctl's or another job would leave
 * in it: Slurm sets the GPU variables of its own allocation. sbatch also reads it:
 * SBATCH_ARRAY_INX (sbatch -a) left in a shell would make the job an array, which gpuctl's
 * commands refuse to follow. */
static char **job_env(void)
{
	static const char *const drop[] = {"CUDA_VISIBLE_DEVICES=", "NVIDIA_VISIBLE_DEVICES=",
					   "CUDA_DEVICE_ORDER=", "GPUCTL_LEASE_", "GPUCTL_LEASED_AT=",
					   "GPUCTL_QUEUED_AT=", "GPUCTL_JOB_ID=", "SBATCH_ARRAY_INX=", NULL};
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = xcalloc(n + 1, sizeof *env);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		bool keep = true;
		for (const char *const *d = drop; *d && keep; d++)
			keep = strncmp(environ[i], *d, strlen(*d)) != 0;
		if (keep)
			env[k++] = environ[i];
	}
	return env;
}

static bool mem_from(const char *text, struct mem_map *m)
{
	char why[256];
	return text && config_parse_mem_map(text, m, why, sizeof why);
}

int slurm_submit(struct submit_req *rq, char **argv, const char *command, uint64_t *id,
		     struct gpu_error *err)
{
	struct sconn *c = rq->conn;
	if (!c) {
		c = rq->conn = xcalloc(1, sizeof *c);
		if (!(c->s = slurm_jobs_open(false, err)))
			return err->code;
		char **base = job_env();
		/* The profile's variables (env.NAME) travel in the job's environment. */
		c->env = grant_env_profile(base, rq->o.rq.profile_env);
		free(base);
	}
	if (!c->checked) {
		int rc = check_after(c, rq, err);
		if (rc != EXIT_OK)
			return rc;
		c->checked = true;
		if (rq->log) {
			/* The user's own file, as for jobs of this machine: it must take output before the
			 * job is accepted (from here; Slurm's node writes it). */
			int fd = job_log_create(rq->log, rq->umask);
			if (fd < 0) {
				err->code = EXIT_USAGE;
				snprintf(err->msg, sizeof err->msg, "cannot write the log %s: %s; nothing was "
					 "submitted", rq->log, job_log_error(errno));
				return EXIT_USAGE;
			}
			close(fd);
		}
	}
	struct mem_map gres, feat;
	struct sbatch_req sr = {
		.count = rq->o.rq.count ? rq->o.rq.count : 1, .name = rq->o.rq.name, .log = rq->log,
		.cwd = rq->cwd, .after = c->after, .nafter = c->nafter, .min_free_mib = rq->o.rq.min_free_mib,
		.gres_mem = mem_from(rq->cfg->slurm_gres_memory, &gres) ? &gres : NULL,
		.feature_mem = mem_from(rq->cfg->slurm_feature_memory, &feat) ? &feat : NULL,
	};
	char why[512];
	char **sargv = sbatch_argv(&sr, argv, why, sizeof why);
	if (!sargv) {
		err->code = EXIT_USAGE;
		snprintf(err->msg, sizeof err->msg, "--min-free-memory: %s", why);
		return EXIT_USAGE;
	}
	struct strbuf out = {0}, e = {0};
	int rc = exec_run_full((const char *const *)sargv, c->env, sbatch_script, SBATCH_SECONDS,
			       SLURM_LATE, &out, &e);
	slurm_argv_free(sargv);
	if (rc != 0 || !sbatch_parse_id(out.buf ? out.buf : "", id)) {
		if (rc == 0)
			sb_adds(&e, "sbatch printed no job id");
		/* slurmctld's refusal of the request, or sbatch that could not ask it (no
		 * configuration, no controller): each with what to do. */
		bool refused = rc > 0 && e.buf && strstr(e.buf, "Batch job submission failed");
		slurm_fail(err, refused ? "Slurm refused the job" : "cannot submit to Slurm", &e,
			   refused ? "; nothing was submitted (`sinfo -o '%N %G'` lists what each node has)"
			   : rc > 0 ? "; nothing was submitted (is this machine a Slurm client, slurmctld "
				      "up? `scontrol ping` says)"
			   : strstr(e.buf ? e.buf : "", "did not answer") ? " (it may have been submitted "
				     "all the same: `squeue --me` shows)"
			   : " (is Slurm's client installed? Debian: slurm-client)");
		sb_free(&out);
		sb_free(&e);
		return EXIT_SLURM;
	}
	sb_free(&out);
	sb_free(&e);
	struct job r = {.id = *id, .kind = JOB_SLURM, .uid = geteuid(), .state = JOB_QUEUED,
			.exit_code = -1, .max_util = -1, .prefer = -1, .count = sr.count,
			.min_free_mib = sr.min_free_mib, .submitted = job_now_ns(), .umask = rq->umask};
	snprintf(r.boot, sizeof r.boot, "%s", job_boot_id());
	r.name = rq->o.rq.name ? xstrdup(rq->o.rq.name) : NULL;
	r.command = xstrdup(command);
	r.cwd = xstrdup(rq->cwd);
	r.log = rq->log ? xstrdup(rq->log) : xasprintf("%s/slurm-%llu.out", rq->cwd, (unsigned long long)*id);
	for (size_t i = 0; i < rq->nafter; i++) {
		r.after = xrealloc(r.after, (r.nafter + 1) * sizeof *r.after);
		r.after[r.nafter++] = rq->after[i].id;
	}
	struct gpu_error werr = {0};
	if (!job_write(slurm_jobs_dirfd(c->s), &r, &werr))
		fprintf(stderr, "gpuctl submit: warning: job slurm:%llu was submitted, but %s: `gpuctl "
			"jobs` will not list it (`gpuctl jobs slurm:%llu` still shows it)\n",
			(unsigned long long)*id, werr.msg, (unsigned long long)*id);
	job_free(&r);
	return EXIT_OK;
}

void slurm_submit_end(struct submit_req *rq)
{
	struct sconn *c = rq->conn;
	if (!c)
		return;
	slurm_jobs_close(c->s);
	free(c->after);
	free(c->env);
	free(c);
	rq->conn = NULL;
}

