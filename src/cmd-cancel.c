/* cmd-cancel.c: `gpuctl cancel [--grace S] ID... | --all`: a queued job leaves the queue; a
 * running one gets SIGTERM (its process group too), and SIGKILL if it is still running after
 * the grace period, through a pidfd as `gpuctl kill` does. The runner does the signalling and
 * says when each job has ended; this waits for that (bounded), then says what happened. Only
 * the caller's own jobs: every id is checked before anything is cancelled. */
#include "gpuctl.h"
#include "jobconn.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { C_ALL = 'a', C_GRACE = 500 };

static void say(const struct job *j, bool was_running)
{
	if (j->state != JOB_CANCELLED) {
		printf("job %llu had already ended (%s)\n", (unsigned long long)j->id, job_state_name(j->state));
		return;
	}
	printf("job %llu cancelled", (unsigned long long)j->id);
	if (!was_running)
		printf(" (it was queued)\n");
	else if (j->signal == SIGKILL)
		printf(": killed with SIGKILL after the grace period\n");
	else if (j->signal)
		printf(": ended by signal %d (%s)\n", j->signal, strsignal(j->signal));
	else
		printf(": exited with status %d after SIGTERM\n", j->exit_code);
}

static int cancel(struct cmd *c)
{
	double grace = 10;
	bool all = args_has(&c->args, C_ALL);
	if (!args_seconds(&c->args, C_GRACE, 0, &grace))
		return cmd_args_error(c);
	if (all == (c->args.argc > 0))
		return cmd_bad_usage(c->entry, "give job ids, or --all (your queued and running jobs)");
	uint64_t *ids;
	size_t n;
	if (!jobctx_ids(c->args.argc, c->args.argv, &ids, &n, "gpuctl cancel"))
		return EXIT_USAGE;
	struct jobctx x;
	struct gpu_error err = {0};
	if (!jobctx_load(&x, true, &err)) {
		fprintf(stderr, "gpuctl cancel: %s\n", err.msg);
		free(ids);
		return err.code;
	}
	for (size_t i = 0; all && i < x.n; i++)
		if (!job_final(x.jobs[i].state)) {
			ids = xrealloc(ids, (n + 1) * sizeof *ids);
			ids[n++] = x.jobs[i].id;
		}
	int rc = jobctx_check(&x, ids, n, "gpuctl cancel");
	struct job **jobs = xcalloc(n + 1, sizeof *jobs);
	bool *running = xcalloc(n + 1, sizeof *running), *asked = xcalloc(n + 1, sizeof *asked);
	struct dclient dc = {.fd = -1};
	size_t left = 0;
	for (size_t i = 0; rc == EXIT_OK && i < n; i++) {
		jobs[i] = jobctx_find(&x, ids[i]);
		running[i] = jobs[i]->state == JOB_RUNNING;
		if (job_final(jobs[i]->state))
			continue;
		struct strbuf req = {0};
		msg_begin(&req, "cancel");
		msg_add_u64(&req, "id", i + 1);
		msg_add_u64(&req, "job", ids[i]);
		msg_add_u64(&req, "grace", (uint64_t)(grace * 1000));
		bool ok = (dc.fd >= 0 || runner_open(&dc, RUNNER_START, &err)) && dclient_send(&dc, &req, &err);
		sb_free(&req);
		if (!ok) {
			fprintf(stderr, "gpuctl cancel: %s\n", err.msg);
			rc = err.code;
			break;
		}
		asked[i] = true;
		left++;
	}
	/* The runner answers each once it has ended: a queued job at once, a running one within
	 * the grace period and a moment for SIGKILL to land. */
	double until = now_mono() + grace + 15;
	size_t nrunning = 0;
	for (size_t i = 0; i < n; i++)
		nrunning += asked[i] && running[i];
	if (rc == EXIT_OK && nrunning && isatty(STDERR_FILENO))
		fprintf(stderr, "gpuctl cancel: SIGTERM sent to %zu running job%s; waiting for %s to end "
			"(SIGKILL after %.0f s)\n", nrunning, nrunning == 1 ? "" : "s",
			nrunning == 1 ? "it" : "them", grace);
	while (rc == EXIT_OK && left) {
		struct msg m;
		uint64_t id = 0;
		int r = runner_recv(&dc, &m, until, &err);
		if (r <= 0) {
			fprintf(stderr, "gpuctl cancel: %s\n", r < 0 ? err.msg : "the jobs did not end in time "
				"(see `gpuctl jobs`)");
			rc = r < 0 ? err.code : EXIT_TIMEOUT;
			break;
		}
		if (msg_get_u64(&m, "id", n, &id) && id && asked[id - 1]) {
			asked[id - 1] = false;
			left--;
			if (!strcmp(msg_verb(&m), "ended"))
				job_from_ended(jobs[id - 1], &m);
		}
		msg_free(&m);
	}
	dclient_close(&dc);
	for (size_t i = 0; rc == EXIT_OK && i < n; i++)
		say(jobs[i], running[i]);
	if (rc == EXIT_OK && !n)
		fprintf(stderr, "gpuctl cancel: no job of yours is queued or running\n");
	free(jobs);
	free(running);
	free(asked);
	jobctx_free(&x);
	free(ids);
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
		 "cancelled too. Only your own jobs (exit 12 for another user's, 17 for no such job).\n\n"
		 "  -a, --all                  all your queued and running jobs\n"
		 "      --grace SECONDS        before SIGTERM becomes SIGKILL (default 10)\n",
	.args = {.shorts = "a", .longs = longopts, .upper = -1},
	.flags = CMD_NO_PREFIX,
	.exec = cancel,
};
