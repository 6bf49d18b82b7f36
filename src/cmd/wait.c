/* wait.c: `gpuctl wait [--timeout S] ID...`: blocks until the jobs end and exits with the
 * status of the first that did not succeed (the job's exit status, 128+N for signal N, 15
 * cancelled or never to start, 16 lost or unknown), else 0. Jobs of this machine: the runner says
 * when each ends (no polling); Slurm's: squeue is asked on a timer that backs off to 5 s
 * (jobs/set.c). Ctrl-C or --timeout end the wait, and on a terminal it says what it waits for. */
#include "cmd/cmd.h"
#include "jobs/backend.h"
#include "jobs/local-conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
		 "Ctrl-C stops waiting at once (the shell sees 130); the jobs go on.\n\n"
		 "  -t, --timeout DURATION     wait at most this long (90, 30s, 5m, 2h): then exit 11\n",
	.args = {.shorts = "t:", .longs = longopts, .lower = 1, .upper = -1},
	.exec = wait_cmd,
};
