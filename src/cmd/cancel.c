/* cancel.c: `gpuctl cancel [--grace S] ID... | --all`: a queued job leaves the queue; a
 * running one gets SIGTERM (its process group too), and SIGKILL if it is still running after
 * the grace period, through a pidfd as `gpuctl kill` does (the runner does the signalling); a
 * Slurm job (slurm:N) is scancel'ed, and Slurm's KillWait is its grace period. This waits,
 * bounded, until each has ended (jobs/set.c), then says what happened. Only the caller's own jobs:
 * every id is checked before anything is cancelled (and Slurm refuses another user's anyway). */
#include "cmd/cmd.h"
#include "jobs/backend.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { C_ALL = 'a', C_GRACE = 500 };

static void say(const struct job *j, bool was_running)
{
	char id[48];
	job_id_text(j->kind, j->id, id, sizeof id);
	if (j->state != JOB_CANCELLED) {
		printf("job %s had already ended (%s)\n", id, job_state_name(j->state));
		return;
	}
	printf("job %s cancelled", id);
	if (!was_running)
		printf(" (it was queued)\n");
	else if (j->signal == SIGKILL)
		printf(": killed with SIGKILL after the grace period\n");
	else if (j->signal)
		printf(": ended by signal %d (%s)\n", j->signal, strsignal(j->signal));
	else if (j->exit_code >= 0)
		printf(": exited with status %d after SIGTERM\n", j->exit_code);
	else
		printf("\n");
}

/* --all: the caller's queued and running jobs of every backend. */
static int all_refs(struct job_ref **refs, size_t *n)
{
	struct jobset js = {0};
	int rc = EXIT_OK;
	for (int k = 0; k < JOB_NKINDS && rc == EXIT_OK; k++) {
		struct job **rows;
		size_t m = 0;
		if (!jobset_of(&js, (enum job_kind)k, true, "gpuctl cancel", &rc))
			break;
		rc = job_backend((enum job_kind)k)->list(js.of[k], false, &rows, &m);
		for (size_t i = 0; rc == EXIT_OK && i < m; i++)
			if (!job_final(rows[i]->state) && rows[i]->uid == geteuid()) {
				*refs = xrealloc(*refs, (*n + 1) * sizeof **refs);
				(*refs)[(*n)++] = (struct job_ref){(enum job_kind)k, rows[i]->id};
			}
	}
	jobset_free(&js);
	return rc;
}

static int cancel(struct cmd *c)
{
	double grace = 10;
	bool all = args_has(&c->args, C_ALL);
	if (!args_seconds(&c->args, C_GRACE, 0, &grace))
		return cmd_args_error(c);
	if (all == (c->args.argc > 0))
		return cmd_bad_usage(c->entry, "give job ids, or --all (your queued and running jobs)");
	struct job_ref *refs;
	size_t n;
	struct gpu_error err = {0};
	if (!jobset_ids(c->args.argc, c->args.argv, &refs, &n, &err))
		return cmd_fail(c, &err);
	int rc = all ? all_refs(&refs, &n) : EXIT_OK;
	struct jobset js = {0};
	if (rc == EXIT_OK)
		rc = jobset_find(&js, refs, n, true, "gpuctl cancel");
	else
		free(refs);
	bool *running = xcalloc(n + 1, sizeof *running);
	size_t nrunning = 0, nslurm = 0;
	for (size_t i = 0; rc == EXIT_OK && i < n; i++) {
		running[i] = js.jobs[i]->state == JOB_RUNNING;
		nrunning += running[i];
		nslurm += js.jobs[i]->kind == JOB_SLURM && !job_final(js.jobs[i]->state);
	}
	if (rc == EXIT_OK && nslurm && args_has(&c->args, C_GRACE))
		fprintf(stderr, "gpuctl cancel: --grace is for jobs of this machine: Slurm gives its jobs "
			"the grace period of its KillWait\n");
	if (rc == EXIT_OK && nrunning && isatty(STDERR_FILENO))
		fprintf(stderr, "gpuctl cancel: SIGTERM sent to %zu running job%s; waiting for %s to end "
			"(SIGKILL after %.0f s%s)\n", nrunning, nrunning == 1 ? "" : "s",
			nrunning == 1 ? "it" : "them", grace, nslurm ? ", or Slurm's KillWait" : "");
	err = (struct gpu_error){0};
	int r = rc == EXIT_OK ? jobset_watch(&js, true, grace, 0, -1, &err) : 1;
	if (r == 0) {
		fprintf(stderr, "gpuctl cancel: the jobs did not end in time (see `gpuctl jobs`)\n");
		rc = EXIT_TIMEOUT;
	} else if (r < 0) {
		rc = cmd_fail(c, &err);
	}
	for (size_t i = 0; rc == EXIT_OK && i < n; i++)
		say(js.jobs[i], running[i]);
	if (rc == EXIT_OK && !n)
		fprintf(stderr, "gpuctl cancel: no job of yours is queued or running\n");
	free(running);
	jobset_free(&js);
	return rc;
}

static const struct option longopts[] = {
	{"all", no_argument, NULL, C_ALL}, {"grace", required_argument, NULL, C_GRACE}, {0},
};

const struct cmd_entry cmd_cancel_entry = {
	.name = "cancel",
	.summary = "cancel your queued or running jobs",
	.usage = "cancel [--grace SECONDS] ID... | --all\n\n"
		 "A queued job leaves the queue; a running one gets SIGTERM (its process group too)\n"
		 "and SIGKILL if it is still running after --grace seconds (default 10), each through a\n"
		 "pidfd. Returns once they have ended. Jobs that run after a cancelled one are\n"
		 "cancelled too. Only your own jobs (exit 12 for another user's, 17 for no such job).\n"
		 "A Slurm job (slurm:N) is cancelled with scancel; Slurm's KillWait is its grace\n"
		 "period (exit 18 when Slurm refuses).\n\n"
		 "  -a, --all                  all your queued and running jobs\n"
		 "      --grace SECONDS        before SIGTERM becomes SIGKILL (default 10)\n",
	.args = {.shorts = "a", .longs = longopts, .upper = -1},
	.flags = CMD_NO_PREFIX,
	.exec = cancel,
};
