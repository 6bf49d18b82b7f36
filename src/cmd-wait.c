/* cmd-wait.c: `gpuctl wait [--timeout S] ID...`: blocks until the jobs end and exits with the
 * status of the first that did not succeed (the job's exit status, 128+N for signal N, 15
 * cancelled, 16 lost), else 0. The runner says when each ends: no polling; Ctrl-C or --timeout
 * end the wait, and on a terminal it says what it waits for. */
#include "gpuctl.h"
#include "jobconn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { W_TIMEOUT = 't' };

/* How a job ended, for stderr, when that was not success. */
static void tell(const struct job *j)
{
	if (j->state == JOB_DONE)
		return;
	fprintf(stderr, "gpuctl wait: job %llu %s", (unsigned long long)j->id, job_state_name(j->state));
	if (j->exit_code >= 0)
		fprintf(stderr, " with exit status %d", j->exit_code);
	else if (j->signal)
		fprintf(stderr, ", killed by signal %d (%s)", j->signal, strsignal(j->signal));
	if (j->reason)
		fprintf(stderr, ": %s", j->reason);
	fputc('\n', stderr);
}

/* Asks the runner to say when each unfinished job ends (request id: its place + 1). */
static bool ask(struct dclient *dc, struct job **jobs, size_t n, struct gpu_error *err)
{
	if (!runner_open(dc, RUNNER_START, err))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (job_final(jobs[i]->state))
			continue;
		struct strbuf req = {0};
		msg_begin(&req, "wait");
		msg_add_u64(&req, "id", i + 1);
		msg_add_u64(&req, "job", jobs[i]->id);
		bool ok = dclient_send(dc, &req, err);
		sb_free(&req);
		if (!ok)
			return false;
	}
	return true;
}

static size_t unfinished(struct job **jobs, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += !job_final(jobs[i]->state);
	return k;
}

static int wait_cmd(struct cmd *c)
{
	double timeout = 0;
	if (!args_seconds(&c->args, W_TIMEOUT, 0, &timeout))
		return cmd_args_error(c);
	uint64_t *ids;
	size_t n;
	if (!jobctx_ids(c->args.argc, c->args.argv, &ids, &n, "gpuctl wait"))
		return EXIT_USAGE;
	struct jobctx x;
	struct gpu_error err = {0};
	if (!jobctx_load(&x, true, &err)) {
		fprintf(stderr, "gpuctl wait: %s\n", err.msg);
		free(ids);
		return err.code;
	}
	int rc = jobctx_check(&x, ids, n, "gpuctl wait");
	struct job **jobs = xcalloc(n + 1, sizeof *jobs);
	for (size_t i = 0; rc == EXIT_OK && i < n; i++)
		jobs[i] = jobctx_find(&x, ids[i]);
	double until = timeout > 0 ? now_mono() + timeout : 0;
	struct dclient dc = {.fd = -1};
	if (rc == EXIT_OK && unfinished(jobs, n) && isatty(STDERR_FILENO)) {
		size_t k = unfinished(jobs, n);
		const struct job *first = NULL;
		for (size_t i = 0; i < n && !first; i++)
			if (!job_final(jobs[i]->state))
				first = jobs[i];
		fprintf(stderr, "gpuctl wait: waiting for job %llu (%s)", (unsigned long long)first->id,
			job_state_name(first->state));
		if (k > 1)
			fprintf(stderr, " and %zu more", k - 1);
		fprintf(stderr, " to end; Ctrl-C stops waiting (the jobs go on)\n");
	}
	for (int tries = 0; rc == EXIT_OK && unfinished(jobs, n); tries++) {
		if (tries == 4 || !ask(&dc, jobs, n, &err)) {
			fprintf(stderr, "gpuctl wait: %s\n", err.msg[0] ? err.msg : "your job runner keeps going away");
			rc = err.code ? err.code : EXIT_DAEMON;
			break;
		}
		while (unfinished(jobs, n)) {
			struct msg m;
			int r = runner_recv(&dc, &m, until, &err);
			uint64_t id = 0;
			if (r == 0) {
				fprintf(stderr, "gpuctl wait: --timeout ran out; %zu job%s not ended yet\n",
					unfinished(jobs, n), unfinished(jobs, n) == 1 ? "" : "s");
				rc = EXIT_TIMEOUT;
				break;
			}
			if (r < 0)
				break;
			if (!strcmp(msg_verb(&m), "ended") && msg_get_u64(&m, "id", n, &id) && id)
				job_from_ended(jobs[id - 1], &m);
			msg_free(&m);
		}
		dclient_close(&dc);
		/* The runner went away (or time ran out): the records say what ended meanwhile. */
		for (size_t i = 0; i < n; i++) {
			struct job now;
			if (!job_final(jobs[i]->state) && job_read(x.dirfd, jobs[i]->id, &now)) {
				job_free(jobs[i]);
				*jobs[i] = now;
			}
		}
	}
	if (rc == EXIT_OK) {
		int first = EXIT_OK;
		for (size_t i = 0; i < n; i++) {
			tell(jobs[i]);
			if (first == EXIT_OK)
				first = job_exit_status(jobs[i]);
		}
		rc = first;
	}
	free(jobs);
	jobctx_free(&x);
	free(ids);
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
		 "not be started; 0 when all succeeded. 11: --timeout ran out first (the jobs go on).\n",
	.args = {.shorts = "t:", .longs = longopts, .lower = 1, .upper = -1},
	.exec = wait_cmd,
};
