/* slurm-sacct.c: Slurm's accounting asked and read (the parser pure; tests/unit/test_slurmjobs.c):
 * `sacct --parsable2 --noheader --format=SACCT_FORMAT`, asked (slurm_accounting, through
 * exec_run: an argv, a time limit) only about jobs that slurmctld has forgotten (slurm-jobs.c). Every field asked for is Slurm's own (no job
 * name or path), so a line that is not exactly eight of them is not sacct's answer to that
 * question, and no line of such an answer is taken. */
#include "jobs/slurm-jobs.h"
#include "base/exec.h"
#include "machine/slurm.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "COMPLETED", or "CANCELLED by 1000" (who cancelled it): the word alone. */
static bool sacct_state(const char *s, size_t len, char *dst, size_t cap)
{
	size_t w = 0;
	while (w < len && (isupper((unsigned char)s[w]) || s[w] == '_'))
		w++;
	if (!w || w >= cap)
		return false;
	if (w < len) {
		if (len - w < 5 || memcmp(s + w, " by ", 4))
			return false;
		for (size_t i = w + 4; i < len; i++)
			if (!isdigit((unsigned char)s[i]))
				return false;
	}
	memcpy(dst, s, w);
	dst[w] = '\0';
	return true;
}

/* "EXIT:SIGNAL" as a wait status (squeue's exit_code). */
static bool sacct_exit(const char *s, size_t len, long *status)
{
	const char *colon = memchr(s, ':', len);
	uint64_t e, sig;
	if (!colon || !slurm_field_u64(s, (size_t)(colon - s), 255, &e) ||
	    !slurm_field_u64(colon + 1, (size_t)(s + len - colon - 1), 127, &sig))
		return false;
	*status = (long)(e << 8 | sig);
	return true;
}

/* A time as Slurm prints it, or Unknown/None (0); anything else (SLURM_TIME_FORMAT) is not read. */
static bool sacct_time(const char *s, size_t len, uint64_t *t)
{
	char buf[32];
	if (!slurm_field_copy(buf, sizeof buf, s, len))
		return false;
	*t = 0;
	if (!strcmp(buf, "Unknown") || !strcmp(buf, "None"))
		return true;
	*t = slurm_time_ns(buf);
	return *t != 0;
}

struct sacct_line {
	struct squeue_row r;
	bool step, batch;
};

/* One line in SACCT_FORMAT: exactly eight fields, none of them free text. */
static bool sacct_parse_line(const char *line, size_t len, struct sacct_line *l)
{
	enum { NF = 8 };
	const char *f[NF], *p = line, *end = line + len;
	size_t flen[NF];
	*l = (struct sacct_line){.r = {.status = -1}};
	for (int i = 0; i < NF; i++) {
		const char *bar = memchr(p, '|', (size_t)(end - p));
		if ((i < NF - 1) != (bar != NULL))
			return false;
		f[i] = p;
		flen[i] = (size_t)((bar ? bar : end) - p);
		p = bar ? bar + 1 : end;
	}
	/* JobIDRaw: ID, or ID.STEP (batch, extern, 0, 0+1, ...) */
	const char *dot = memchr(f[0], '.', flen[0]);
	size_t idlen = dot ? (size_t)(dot - f[0]) : flen[0];
	if (dot) {
		size_t slen = flen[0] - idlen - 1;
		if (!slen)
			return false;
		for (size_t i = 0; i < slen; i++)
			if (!isalnum((unsigned char)dot[1 + i]) && dot[1 + i] != '+')
				return false;
		l->step = true;
		l->batch = slen == 5 && !memcmp(dot + 1, "batch", 5);
	}
	uint64_t v;
	if (!slurm_field_u64(f[0], idlen, UINT64_MAX, &l->r.id) || !l->r.id ||
	    !slurm_field_u64(f[1], flen[1], UINT32_MAX, &v) ||
	    !sacct_state(f[2], flen[2], l->r.state, sizeof l->r.state) ||
	    !sacct_exit(f[3], flen[3], &l->r.status) || !sacct_time(f[4], flen[4], &l->r.submitted) ||
	    !sacct_time(f[5], flen[5], &l->r.started) || !sacct_time(f[6], flen[6], &l->r.ended))
		return false;
	l->r.uid = (uint32_t)v;
	strcpy(l->r.reason, "None");
	/* NodeList: Slurm's host list, or "None assigned" (it never ran) */
	if (flen[7] == 13 && !memcmp(f[7], "None assigned", 13))
		return true;
	for (size_t i = 0; i < flen[7]; i++)
		if (!isalnum((unsigned char)f[7][i]) && !strchr("._-,[]", f[7][i]))
			return false;
	return slurm_field_copy(l->r.nodes, sizeof l->r.nodes, f[7], flen[7]);
}

bool sacct_parse(const char *text, struct squeue_row **rows, size_t *nrows, char *why, size_t whylen)
{
	struct sacct_line *v = NULL;
	size_t n = 0, cap = 0, lineno = 0, njobs = 0;
	*rows = NULL;
	*nrows = 0;
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		lineno++;
		v = grow_array(v, &cap, n + 1, sizeof *v);
		if (!sacct_parse_line(line, len, &v[n])) {
			snprintf(why, whylen, "line %zu of sacct's answer is not a line of the format asked "
				 "for", lineno);
			free(v);
			return false;
		}
		/* A job, or its batch step, twice (a requeued job's records, another cluster's job of
		 * that id): which is meant cannot be told. */
		for (size_t i = 0; i < n; i++)
			if (v[i].r.id == v[n].r.id && ((!v[i].step && !v[n].step) || (v[i].batch && v[n].batch))) {
				snprintf(why, whylen, "sacct's answer has two lines for %s of job %llu",
					 v[n].step ? "the batch step" : "the allocation",
					 (unsigned long long)v[n].r.id);
				free(v);
				return false;
			}
		njobs += !v[n].step;
		n++;
		line = nl ? nl + 1 : NULL;
	}
	*rows = xcalloc(njobs + 1, sizeof **rows);
	for (size_t i = 0; i < n; i++) {
		bool job = false;
		for (size_t k = 0; k < n && !job; k++)
			job = !v[k].step && v[k].r.id == v[i].r.id;
		if (!job) {
			snprintf(why, whylen, "sacct's answer has a step of job %llu but not the job",
				 (unsigned long long)v[i].r.id);
			free(v);
			free(*rows);
			*rows = NULL;
			return false;
		}
		if (v[i].step)
			continue;
		struct squeue_row r = v[i].r;
		/* The rule: the job's own line says how the batch script ended. Where it says 0:0 of
		 * a job that did not complete and its batch step has a status, the batch step's is
		 * taken (Slurm puts a signalled batch script's signal on the step). */
		for (size_t k = 0; k < n; k++)
			if (v[k].batch && v[k].r.id == r.id && r.status == 0 && strcmp(r.state, "COMPLETED"))
				r.status = v[k].r.status;
		(*rows)[(*nrows)++] = r;
	}
	free(v);
	return true;
}

#define ACCT_SKEW 600e9 /* ns: sacct's Submit and gpuctl's record of it (clocks of two hosts) */

/* Slurm's accounting (sacct, which needs slurmdbd) on the jobs squeue no longer knows (slurmctld
 * forgets a job MinJobAge after it ends): its row of each that has ended, is the caller's and
 * was submitted when gpuctl's record says, into acct[i] (acct[i].id 0: none, *why says why not).
 * Without slurmdbd sacct fails or says nothing: none. false: the deadline ran out (err). */
bool slurm_accounting(const uint64_t *ids, const uint64_t *submitted, size_t n, double until,
		      double tool_seconds, struct squeue_row *acct, char *why, size_t whylen,
		      struct gpu_error *err)
{
	struct strbuf list = {0}, out = {0}, e = {0};
	for (size_t i = 0; i < n; i++)
		sb_addf(&list, "%s%llu", i ? "," : "", (unsigned long long)ids[i]);
	const char *const argv[] = {"sacct", "-j", list.buf, "--parsable2", "--noheader",
				    "--format=" SACCT_FORMAT, NULL};
	double limit = until && until - now_mono() < tool_seconds ? until - now_mono() : tool_seconds;
	int rc = limit > 0 ? exec_run(argv, limit, SLURM_LATE, &out, &e) : -1;
	bool ok = true;
	struct squeue_row *rows = NULL;
	size_t nrows = 0;
	snprintf(why, whylen, "sacct has no ended job of yours of this id");
	if (rc < 0 && until && now_mono() >= until) {
		err->code = EXIT_TIMEOUT;
		snprintf(err->msg, sizeof err->msg, "--timeout ran out while asking Slurm's accounting "
			 "about the jobs (sacct had not answered; is slurmdbd up?)");
		ok = false;
	} else if (rc != 0) {
		struct gpu_error f = {0};
		slurm_fail(&f, "sacct failed (is slurmdbd configured?)", &e, NULL);
		size_t len = strlen(f.msg) < whylen ? strlen(f.msg) : whylen - 1;
		memcpy(why, f.msg, len);
		why[len] = '\0';
	} else if (!sacct_parse(out.buf ? out.buf : "", &rows, &nrows, why, whylen)) {
		/* why: what cannot be read; nothing of it is taken */
	} else {
		for (size_t k = 0; k < nrows; k++) {
			bool asked = false;
			for (size_t i = 0; i < n && !asked; i++)
				asked = ids[i] == rows[k].id;
			if (!asked) {
				snprintf(why, whylen, "sacct's answer has job %llu, which was not asked about",
					 (unsigned long long)rows[k].id);
				nrows = 0;
			}
		}
		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; k < nrows; k++) {
				struct squeue_row *r = &rows[k];
				struct job t = {.exit_code = -1};
				if (r->id != ids[i] || r->uid != geteuid())
					continue;
				slurm_row_apply(r, &t);
				bool final = job_final(t.state);
				job_free(&t);
				uint64_t a = r->submitted, b = submitted[i];
				if (final && !(a && b && (a > b ? a - b : b - a) > ACCT_SKEW))
					acct[i] = *r;
			}
	}
	free(rows);
	sb_free(&list);
	sb_free(&out);
	sb_free(&e);
	return ok;
}
