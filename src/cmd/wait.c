/* wait.c: `gpuctl wait [--timeout S] ID...`: blocks until the jobs end and exits with the
 * status of the first that did not succeed (the job's exit status, 128+N for signal N, 15
 * cancelled or never to start, 16 lost or unknown), else 0. Jobs of this machine: the runner says
 * when each ends (no polling); Slurm's: squeue is asked on a timer that backs off to 5 s
 * (jobs/set.c). Ctrl-C or --timeout end the wait, and on a terminal it says what it waits for. */
#include "cmd/cmd.h"
#include "jobs/backend.h"
#include "jobs/local-conn.h"
#include "base/escape.h"
#include "lease/view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { W_TIMEOUT = 't' };

/* How a job ended, for stderr, when that was not success. */
static void tell(const struct job *j)
{
	char id[48];
	if (j->state == JOB_DONE)
		return;
	fprintf(stderr, "gpuctl wait: job %s %s", job_id_text(j->kind, j->id, id, sizeof id),
		j->never ? "will never start" : job_state_name(j->state));
	if (j->exit_code >= 0)
		fprintf(stderr, " with exit status %d", j->exit_code);
	else if (j->signal)
		fprintf(stderr, ", killed by signal %d (%s)", j->signal, strsignal(j->signal));
	if (j->reason)
		fprintf(stderr, ": %s", j->reason);
	fputc('\n', stderr);
}

static bool ended(const struct job *j)
{
	return job_final(j->state) || j->never;
}

/* ---- another user's job (issue 24): the daemon's list says only whether it is queued or
 * running (a waiter or a lease of kind job labelled "#ID"); its outcome is its owner's. ---- */

/* Whether id names one of the caller's own jobs (its record is there): looked at before the
 * daemon's list, whose "#ID" labels are any client's word. Asked after, a second user who
 * queued a waiter labelled with the caller's next job id made the caller's `wait` on its own
 * job wait for theirs, and return 0 when they let go, the job still running. */
static bool own_job(uint64_t id)
{
	char *dir;
	struct gpu_error err = {0};
	int dfd = job_dir_open(&dir, &err);
	if (dfd < 0)
		return false;
	struct job j = {0};
	bool own = job_read(dfd, id, &j);
	job_free(&j);
	close(dfd);
	free(dir);
	return own;
}

/* Waits for another user's job: the daemon's list looked at every second (nothing tells another
 * user when it ends), until it is neither queued nor running, --timeout, or a signal. Only the
 * entries of the user it was found to be (uid) count: a third user's waiter labelled with the
 * same id would have kept the wait going. */
static int wait_other(struct cmd *c, uint64_t id, const char *state, const char *owner, uid_t uid,
		      double until)
{
	char who[64];
	snprintf(who, sizeof who, "%s", owner);
	/* (said also off a terminal: whose job this is, since it is not the caller's) */
	fprintf(stderr, "gpuctl wait: waiting for job %llu of %s (%s) to end; Ctrl-C stops waiting\n",
		(unsigned long long)id, esc_str(who, 0), state);
	for (;;) {
		struct gpu_error err = {0};
		char o[64];
		const char *s;
		int r = job_others_state(id, &s, o, sizeof o, &uid, &err);
		if (r < 0)
			return cmd_fail(c, &err);
		if (!r) {
			fprintf(stderr, "gpuctl wait: job %llu of %s has ended (how is for its owner to "
				"see)\n", (unsigned long long)id, esc_str(who, 0));
			return EXIT_OK;
		}
		if (until && now_mono() >= until) {
			fprintf(stderr, "gpuctl wait: --timeout ran out; job %llu of %s is still %s\n",
				(unsigned long long)id, esc_str(who, 0), s);
			return EXIT_TIMEOUT;
		}
		struct timespec ts = {1, 0};
		nanosleep(&ts, NULL);
	}
}

static int wait_cmd(struct cmd *c)
{
	double timeout = 0;
	if (!args_seconds(&c->args, W_TIMEOUT, 0, &timeout))
		return cmd_args_error(c);
	struct job_ref *refs;
	size_t n;
	struct gpu_error err = {0};
	if (!jobset_ids(c->args.argc, c->args.argv, &refs, &n, &err))
		return cmd_fail(c, &err);
	double until = timeout > 0 ? now_mono() + timeout : 0;
	if (n == 1 && refs[0].kind == JOB_LOCAL) { /* another user's job? (issue 24) */
		const char *state;
		char owner[64];
		struct gpu_error oerr = {0};
		uint64_t id = refs[0].id;
		uid_t uid = (uid_t)-1;
		if (!own_job(id) && job_others_state(id, &state, owner, sizeof owner, &uid, &oerr) == 1) {
			free(refs);
			return wait_other(c, id, state, owner, uid, until);
		}
	}
	struct jobset js = {.until = until};
	int rc = jobset_find(&js, refs, n, true, "gpuctl wait");
	size_t left = 0;
	const struct job *first = NULL;
	for (size_t i = 0; rc == EXIT_OK && i < n; i++)
		if (!ended(js.jobs[i])) {
			left++;
			first = first ? first : js.jobs[i];
		}
	if (left && isatty(STDERR_FILENO)) {
		char id[48];
		fprintf(stderr, "gpuctl wait: waiting for job %s (%s)", job_id_text(first->kind, first->id,
			id, sizeof id), job_state_name(first->state));
		if (left > 1)
			fprintf(stderr, " and %zu more", left - 1);
		fprintf(stderr, " to end; Ctrl-C stops waiting (the jobs go on)\n");
	}
	if (left) {
		err = (struct gpu_error){0};
		int r = jobset_watch(&js, false, 0, until, -1, &err);
		if (r == 0) {
			left = 0;
			for (size_t i = 0; i < n; i++)
				left += !ended(js.jobs[i]);
			fprintf(stderr, "gpuctl wait: --timeout ran out; %zu job%s not ended yet\n", left,
				left == 1 ? "" : "s");
			rc = EXIT_TIMEOUT;
		} else if (r < 0) {
			rc = cmd_fail(c, &err);
		}
	}
	if (rc == EXIT_OK) {
		int status = EXIT_OK;
		for (size_t i = 0; i < n; i++) {
			tell(js.jobs[i]);
			if (status == EXIT_OK)
				status = js.jobs[i]->never ? EXIT_CANCELLED : job_exit_status(js.jobs[i]);
		}
		rc = status;
	}
	jobset_free(&js);
	return rc;
}

static const struct option longopts[] = {{"timeout", required_argument, NULL, W_TIMEOUT}, {0}};

const struct cmd_entry cmd_wait_entry = {
	.name = "wait",
	.summary = "wait for jobs to end; exits with the first failure's status",
	.usage = "wait [--timeout DURATION] ID...\n\n"
		 "Block until these jobs of yours have ended. The exit status is that of the first job\n"
		 "(in the order given) that did not succeed: its own exit status, 128+N when signal N\n"
		 "ended it, 15 cancelled (or a job it was to run after failed), 16 lost, 126 it could\n"
		 "not be started; 0 when all succeeded. 11: --timeout ran out first (the jobs go on).\n"
		 "Slurm's jobs (slurm:N) too: squeue is asked at growing intervals (at most 5 s);\n"
		 "one that will never start (a job it runs after failed) is 15, one that slurmctld\n"
		 "forgot before its end was seen is 16 (unknown), and 18 when Slurm cannot be asked.\n"
		 "Ctrl-C stops waiting at once (the shell sees 130); the jobs go on.\n"
		 "Another user's job (one ID) is waited for as the daemon lists it: it tells only\n"
		 "that the job is queued, running or over (exit 0 once it is; its outcome is its\n"
		 "owner's to see).\n\n"
		 "  -t, --timeout DURATION     wait at most this long (90, 30s, 5m, 2h): then exit 11\n",
	.args = {.shorts = "t:", .longs = longopts, .lower = 1, .upper = -1},
	.exec = wait_cmd,
};
