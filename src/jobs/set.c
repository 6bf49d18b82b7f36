/* set.c: the jobs a command names, whichever backend runs them (backend.h): the ids read
 * ("17", "slurm:42"), each backend opened once and asked for its own ids, and the one watch loop
 * of `wait`, `cancel` and `logs -f`: it polls every backend's news descriptor (and the caller's
 * own, for logs -f) until the jobs have ended or the deadline passes. No job is polled for
 * without a deadline: a Slurm backend's descriptor is a timer whose period backs off. */
#include "jobs/backend.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct job_backend *job_backend(enum job_kind kind)
{
	return kind == JOB_SLURM ? &job_backend_slurm : &job_backend_local;
}

bool jobset_ids(int nwords, char *const *words, struct job_ref **refs, size_t *n,
		struct gpu_error *err)
{
	*refs = NULL;
	*n = 0;
	for (int i = 0; i < nwords; i++) {
		if (!parse_job_refs(words[i], refs, n, err->msg, sizeof err->msg)) {
			err->code = EXIT_USAGE;
			free(*refs);
			*refs = NULL;
			*n = 0;
			return false;
		}
	}
	return true;
}

struct jobs_of *jobset_of(struct jobset *js, enum job_kind kind, bool resume, const char *who,
			  int *rc)
{
	if (!js->of[kind]) {
		struct gpu_error err = {0};
		js->of[kind] = job_backend(kind)->open(resume, &err);
		if (!js->of[kind]) {
			fprintf(stderr, "%s: %s\n", who, err.msg);
			*rc = err.code ? err.code : EXIT_FAIL;
		} else if (js->until && job_backend(kind)->deadline) {
			job_backend(kind)->deadline(js->of[kind], js->until);
		}
	}
	return js->of[kind];
}

int jobset_find(struct jobset *js, struct job_ref *refs, size_t n, bool resume, const char *who)
{
	js->refs = refs;
	js->n = n;
	js->jobs = xcalloc(n + 1, sizeof *js->jobs);
	uint64_t *ids = xcalloc(n + 1, sizeof *ids);
	struct job **found = xcalloc(n + 1, sizeof *found);
	int rc = EXIT_OK;
	for (int k = 0; k < JOB_NKINDS && rc == EXIT_OK; k++) {
		size_t m = 0;
		for (size_t i = 0; i < n; i++)
			if (refs[i].kind == (enum job_kind)k)
				ids[m++] = refs[i].id;
		if (!m || !jobset_of(js, (enum job_kind)k, resume, who, &rc))
			continue;
		rc = job_backend((enum job_kind)k)->find(js->of[k], ids, m, found, who);
		for (size_t i = 0, f = 0; rc == EXIT_OK && i < n; i++)
			if (refs[i].kind == (enum job_kind)k)
				js->jobs[i] = found[f++];
	}
	free(ids);
	free(found);
	return rc;
}

static int fail(struct gpu_error *err, const char *what)
{
	if (!err->msg[0]) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "%s: %s", what, strerror(errno));
	}
	return -1;
}

int jobset_wait(struct jobset *js, double until, int extra_fd, struct gpu_error *err)
{
	for (;;) {
		struct pollfd p[JOB_NKINDS + 1];
		int kind[JOB_NKINDS + 1];
		nfds_t np = 0;
		size_t left = 0;
		for (int k = 0; k < JOB_NKINDS; k++) {
			const struct job_backend *be = job_backend((enum job_kind)k);
			size_t w = js->of[k] ? be->watching(js->of[k]) : 0;
			int fd = w ? be->watch_fd(js->of[k]) : -1;
			left += w;
			if (fd >= 0) {
				p[np] = (struct pollfd){.fd = fd, .events = POLLIN};
				kind[np++] = k;
			}
		}
		if (!left)
			return 1;
		if (extra_fd >= 0) {
			p[np] = (struct pollfd){.fd = extra_fd, .events = POLLIN};
			kind[np++] = -1;
		}
		if (np == 0 || (extra_fd >= 0 && np == 1))
			return fail(err, "nothing to wait on for the jobs (a backend without news)");
		double now = now_mono();
		if (until && now >= until)
			return 0;
		int ms = until ? (int)((until - now) * 1000) + 1 : -1;
		int r = poll(p, np, ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return fail(err, "poll");
		for (nfds_t i = 0; i < np; i++) {
			if (!p[i].revents)
				continue;
			if (kind[i] < 0)
				return 2;
			if (!job_backend((enum job_kind)kind[i])->watch_step(js->of[kind[i]], err))
				return -1;
		}
	}
}

int jobset_watch(struct jobset *js, bool cancel, double grace, double until, int extra_fd,
		 struct gpu_error *err)
{
	double bound = 0;
	if (js->asked)
		return jobset_wait(js, until, extra_fd, err);
	js->asked = true;
	for (size_t i = 0; i < js->n; i++) {
		struct job *j = js->jobs[i];
		if (!j || job_final(j->state) || (j->never && !cancel))
			continue;
		/* A job named twice (one found twice): watched once. */
		bool seen = false;
		for (size_t k = 0; k < i && !seen; k++)
			seen = js->jobs[k] == j;
		if (seen)
			continue;
		enum job_kind kind = js->refs[i].kind;
		if (!job_backend(kind)->watch(js->of[kind], j, cancel, grace, &bound, err))
			return -1;
	}
	if (cancel && bound && (!until || bound < until))
		until = bound;
	return jobset_wait(js, until, extra_fd, err);
}

void jobset_free(struct jobset *js)
{
	for (int k = 0; k < JOB_NKINDS; k++)
		if (js->of[k])
			job_backend((enum job_kind)k)->close(js->of[k]);
	free(js->jobs);
	free(js->refs);
	*js = (struct jobset){0};
}
