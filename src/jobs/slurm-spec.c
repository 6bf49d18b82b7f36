/* slurm-spec.c: the pure half of the Slurm job backend (see slurm-jobs.h): a tool's failure put
 * in words, squeue's rows and scontrol's job text read, Slurm's states put in gpuctl's terms, and
 * sbatch's arguments made from a request. No I/O, so tests/unit/test_slurmjobs.c reaches all of it. */
#include "base/escape.h"
#include "jobs/slurm-jobs.h"
#include "config/config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a tool's failure ---- */

/* Slurm's own words from a tool's stderr, one line, control bytes escaped. */
static void words(struct strbuf *dst, const struct strbuf *e)
{
	const char *s = e->buf ? e->buf : "";
	bool any = false;
	for (const char *line = s; *line;) {
		size_t len = strcspn(line, "\n");
		char *one = xstrndup(line, len);
		if (len) {
			if (any)
				sb_adds(dst, "; ");
			esc_printable(dst, one);
			any = true;
		}
		free(one);
		line += len + (line[len] == '\n');
	}
	if (!any)
		sb_adds(dst, "no reason given");
}

void slurm_fail(struct gpu_error *err, const char *what, const struct strbuf *e, const char *hint)
{
	struct strbuf sb = {0};
	words(&sb, e);
	err->code = EXIT_SLURM;
	snprintf(err->msg, sizeof err->msg, "%s: %s%s", what, sb.buf, hint ? hint : "");
	sb_free(&sb);
}

/* ---- squeue ---- */

uint64_t slurm_time_ns(const char *s)
{
	struct tm tm = {0};
	char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end || *end)
		return 0;
	tm.tm_isdst = -1;
	time_t t = mktime(&tm);
	return t > 0 ? (uint64_t)t * 1000000000ULL : 0;
}

bool slurm_field_u64(const char *s, size_t len, uint64_t max, uint64_t *v)
{
	char buf[24];
	if (!len || len >= sizeof buf)
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return word_u64(buf, max, v);
}

bool slurm_field_copy(char *dst, size_t cap, const char *s, size_t len)
{
	if (len >= cap)
		return false;
	memcpy(dst, s, len);
	dst[len] = '\0';
	return true;
}

bool squeue_parse_line(const char *line, size_t len, struct squeue_row *r)
{
	enum { FIXED = 8 };
	const char *f[FIXED], *p = line, *end = line + len;
	size_t flen[FIXED];
	*r = (struct squeue_row){.status = -1};
	/* Eight fields that hold no '|', then the Reason, which is all the rest (one '|' ends it). */
	for (int i = 0; i < FIXED; i++) {
		const char *bar = memchr(p, '|', (size_t)(end - p));
		if (!bar)
			return false;
		f[i] = p;
		flen[i] = (size_t)(bar - p);
		p = bar + 1;
	}
	size_t rlen = (size_t)(end - p);
	uint64_t v;
	char t[32];
	/* The job id, or ID_TASK / ID_[TASKS] for the tasks of a job array (all with the array's id). */
	const char *us = memchr(f[0], '_', flen[0]);
	size_t idlen = us ? (size_t)(us - f[0]) : flen[0];
	if (us) {
		if (us + 1 == f[0] + flen[0])
			return false;
		for (const char *c = us + 1; c < f[0] + flen[0]; c++)
			if (!isdigit((unsigned char)*c) && !strchr("[]-,%", *c))
				return false;
		r->array = true;
	}
	/* Every field ends with its '|', the Reason too: a line that does not is a part of a row. */
	if (!rlen || p[rlen - 1] != '|')
		return false;
	rlen--;
	if (!slurm_field_u64(f[0], idlen, UINT64_MAX, &r->id) || !r->id ||
	    !slurm_field_u64(f[1], flen[1], UINT32_MAX, &v) || !slurm_field_copy(r->state, sizeof r->state, f[2], flen[2]) ||
	    !r->state[0] || !slurm_field_copy(r->nodes, sizeof r->nodes, f[7], flen[7]) ||
	    !slurm_field_copy(r->reason, sizeof r->reason, p, rlen))
		return false;
	r->uid = (uint32_t)v;
	for (const char *s = r->state; *s; s++)
		if (!isupper((unsigned char)*s) && *s != '_')
			return false;
	if (slurm_field_u64(f[3], flen[3], 0xFFFF, &v))
		r->status = (long)v;
	uint64_t *times[] = {&r->submitted, &r->started, &r->ended};
	for (int i = 0; i < 3; i++)
		if (slurm_field_copy(t, sizeof t, f[4 + i], flen[4 + i]))
			*times[i] = slurm_time_ns(t);
	if (!strcmp(r->nodes, "(null)"))
		r->nodes[0] = '\0';
	return true;
}

static int row_by_id(const void *a, const void *b)
{
	const struct squeue_row *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

bool squeue_parse(const char *text, struct squeue_row **rows, size_t *nrows, char *why, size_t whylen)
{
	size_t n = 0, cap = 0, lineno = 0;
	*rows = NULL;
	*nrows = 0;
	/* Every line must be one row, and each job one row (the tasks of an array share its id):
	 * Slurm's Reason is free text and may hold a newline, after which a line could look like a
	 * row of another job. Such an answer is not read at all: no row of it can be trusted. */
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		struct squeue_row r;
		lineno++;
		if (!squeue_parse_line(line, len, &r)) {
			snprintf(why, whylen, "line %zu of squeue's answer is not a row of the format asked "
				 "for (a Reason holding a newline?)", lineno);
			free(*rows);
			*rows = NULL;
			return false;
		}
		*rows = grow_array(*rows, &cap, n + 1, sizeof **rows);
		(*rows)[n++] = r;
		line = nl ? nl + 1 : NULL;
	}
	if (n)
		qsort(*rows, n, sizeof **rows, row_by_id);
	for (size_t i = 1; i < n; i++)
		if ((*rows)[i].id == (*rows)[i - 1].id && !((*rows)[i].array && (*rows)[i - 1].array)) {
			snprintf(why, whylen, "squeue's answer has two rows for job %llu (a Reason holding a "
				 "newline?)", (unsigned long long)(*rows)[i].id);
			free(*rows);
			*rows = NULL;
			return false;
		}
	*nrows = n;
	return true;
}

static bool one_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

static void set_reason(struct job *j, char *text)
{
	free(j->reason);
	j->reason = text;
}

void slurm_row_apply(const struct squeue_row *r, struct job *j)
{
	static const char *const queued[] = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
					     "RESV_DEL_HOLD", "SPECIAL_EXIT", NULL};
	/* Requeued and held: they start again only once released. SPECIAL_EXIT is a job that
	 * ended with a status the site's EpilogSlurmctld asked to requeue it for, held. */
	static const char *const held[] = {"REQUEUE_HOLD", "SPECIAL_EXIT", NULL};
	static const char *const failed[] = {"FAILED", "TIMEOUT", "OUT_OF_MEMORY", "BOOT_FAIL",
					     "DEADLINE", "PREEMPTED", "REVOKED", NULL};
	static const struct {
		const char *state, *why;
	} words[] = {
		{"TIMEOUT", "its time limit ran out"}, {"OUT_OF_MEMORY", "it ran out of memory"},
		{"BOOT_FAIL", "its node could not be booted"}, {"DEADLINE", "its deadline passed"},
		{"PREEMPTED", "it was preempted"}, {"NODE_FAIL", "its node failed while it ran, so how "
		 "it ended is not known"},
	};
	bool never = !strcmp(r->reason, "DependencyNeverSatisfied");
	bool ran = r->nodes[0] != '\0';
	j->uid = r->uid;
	free(j->slurm_state);
	j->slurm_state = xstrdup(r->state);
	j->never = false;
	if (r->submitted)
		j->submitted = r->submitted;
	j->exit_code = -1;
	j->signal = 0;
	if (one_of(r->state, queued)) {
		j->state = JOB_QUEUED;
		j->never = never;
		j->started = j->ended = 0;
		if (never)
			set_reason(j, xstrdup("it will never start: a job it runs after did not succeed "
					      "(Slurm: DependencyNeverSatisfied); cancel it"));
		else if (one_of(r->state, held))
			set_reason(j, xasprintf("requeued and held by Slurm (Slurm: %s, %s): `scontrol "
						"release %llu` lets it start again", r->state, r->reason,
						(unsigned long long)r->id));
		else
			set_reason(j, strcmp(r->reason, "None") ? xasprintf("Slurm: %s", r->reason) : NULL);
		return;
	}
	free(j->node);
	j->node = ran ? xstrdup(r->nodes) : NULL;
	j->started = ran ? r->started : 0;
	if (!strcmp(r->state, "COMPLETED"))
		j->state = JOB_DONE;
	else if (!strcmp(r->state, "CANCELLED"))
		j->state = JOB_CANCELLED;
	else if (!strcmp(r->state, "NODE_FAIL"))
		j->state = JOB_LOST;
	else if (one_of(r->state, failed))
		j->state = JOB_FAILED;
	else
		j->state = JOB_RUNNING; /* RUNNING, COMPLETING, SUSPENDED, CONFIGURING, ... */
	if (j->state == JOB_RUNNING) {
		j->ended = 0;
		set_reason(j, strcmp(r->state, "RUNNING") ? xasprintf("Slurm: %s", r->state) : NULL);
		return;
	}
	j->ended = r->ended;
	/* The wait status of the batch script: an exit status, or the signal that ended it. */
	if (r->status > 0 && (r->status & 0x7f))
		j->signal = (int)(r->status & 0x7f);
	else if (r->status >= 0 && (j->state == JOB_DONE || (r->status >> 8) != 0))
		j->exit_code = (int)((r->status >> 8) & 0xff);
	const char *why = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		if (!strcmp(r->state, words[i].state))
			why = words[i].why;
	if (j->state == JOB_CANCELLED && never)
		set_reason(j, xstrdup("a job it was to run after did not succeed (Slurm: "
				      "DependencyNeverSatisfied)"));
	else if (j->state == JOB_CANCELLED)
		set_reason(j, xstrdup(ran ? "cancelled in Slurm while it ran" : "cancelled in Slurm "
				      "before it started"));
	else if (why)
		set_reason(j, xasprintf("%s (Slurm: %s)", why, r->state));
	/* Slurm 22.05 gives a batch script ended by a signal the Reason JobLaunchFailure, though it
	 * ran: the signal says it all. */
	else if (j->state == JOB_FAILED && strcmp(r->reason, "None") && strcmp(r->reason, "NonZeroExitCode") &&
		 !(j->signal && !strcmp(r->reason, "JobLaunchFailure")))
		set_reason(j, xasprintf("Slurm: %s (%s)", r->state, r->reason));
	else
		set_reason(j, NULL);
}

/* ---- scontrol show job ---- */

static void take(char **dst, const char *v, size_t len)
{
	free(*dst);
	*dst = len && strncmp(v, "(null)", len) ? xstrndup(v, len) : NULL;
}

void scontrol_parse_job(const char *text, const char *node, struct scontrol_job *sj)
{
	static const char *const keys[] = {"Command=", "WorkDir=", "StdOut="};
	char **dst[] = {&sj->command, &sj->workdir, &sj->stdout_path};
	*sj = (struct scontrol_job){0};
	bool first = true;
	for (const char *line = text; line && *line; first = false) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *p = line, *end = line + len;
		while (p < end && *p == ' ')
			p++;
		if (first && !strncmp(p, "JobId=", 6)) {
			const char *name = strstr(p, " JobName=");
			if (name && name < end)
				take(&sj->name, name + 9, (size_t)(end - name - 9));
		} else if (p > line) { /* Slurm's own lines are indented; a name's newline is not */
			for (size_t k = 0; k < ARRAY_SIZE(keys); k++)
				if (!strncmp(p, keys[k], strlen(keys[k])))
					take(dst[k], p + strlen(keys[k]), (size_t)(end - p) - strlen(keys[k]));
			/* "     Nodes=vm CPU_IDs=0 Mem=0 GRES=gpu:2(IDX:0-1)" */
			size_t nl2 = node ? strlen(node) : 0;
			const char *idx = strstr(p, "(IDX:");
			if (!strncmp(p, "Nodes=", 6) && idx && idx < end && node &&
			    !strncmp(p + 6, node, nl2) && p[6 + nl2] == ' ') {
				const char *close = memchr(idx, ')', (size_t)(end - idx));
				if (close && (size_t)(close - idx - 5) < sizeof sj->gpus)
					snprintf(sj->gpus, sizeof sj->gpus, "%.*s", (int)(close - idx - 5), idx + 5);
			}
		}
		line = nl ? nl + 1 : NULL;
	}
}

void scontrol_job_free(struct scontrol_job *sj)
{
	free(sj->name);
	free(sj->command);
	free(sj->workdir);
	free(sj->stdout_path);
	*sj = (struct scontrol_job){0};
}

bool slurm_idx_list(const char *s, unsigned *gpus, unsigned *n, unsigned max)
{
	*n = 0;
	while (*s) {
		char *end;
		if (!isdigit((unsigned char)*s))
			return false;
		unsigned long lo = strtoul(s, &end, 10), hi = lo;
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				return false;
			hi = strtoul(end + 1, &end, 10);
		}
		if (hi < lo || hi > 65535)
			return false;
		for (unsigned long i = lo; i <= hi && *n < max; i++)
			gpus[(*n)++] = (unsigned)i;
		if (*end == ',' && end[1])
			end++;
		else if (*end)
			return false;
		s = end;
	}
	return true;
}

/* ---- sbatch ---- */

const char sbatch_script[] = "#!/bin/sh\n"
			     "# gpuctl submit --slurm: the command is this script's arguments\n"
			     "CUDA_DEVICE_ORDER=PCI_BUS_ID\n"
			     "GPUCTL_JOB_ID=slurm:$SLURM_JOB_ID\n"
			     "export CUDA_DEVICE_ORDER GPUCTL_JOB_ID\n"
			     "exec \"$@\"\n";

char *slurm_path_pattern(const char *path)
{
	struct strbuf sb = {0};
	bool literal = strchr(path, '\\') != NULL;
	for (const char *p = path; *p; p++)
		if (*p == '%' && !literal)
			sb_adds(&sb, "%%");
		else
			sb_addc(&sb, *p);
	if (!sb.buf)
		sb_adds(&sb, "");
	return sb.buf;
}

bool sbatch_parse_id(const char *out, uint64_t *id)
{
	char num[24];
	size_t n = strspn(out, "0123456789");
	if (!n || n >= sizeof num || (out[n] && out[n] != ';' && out[n] != '\n'))
		return false;
	memcpy(num, out, n);
	num[n] = '\0';
	return word_u64(num, UINT64_MAX, id) && *id;
}

void slurm_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

/* --min-free-memory as a GRES type (the smallest that has enough) or node features (every one
 * that has enough, any of them will do). */
static bool memory_args(const struct sbatch_req *rq, char **gres_type, char **constraint, char *why,
			size_t whylen)
{
	if (!rq->min_free_mib)
		return true;
	const struct mem_map *m = rq->feature_mem ? rq->feature_mem : rq->gres_mem;
	if (!m) {
		snprintf(why, whylen, "this site has not said which Slurm GPU types or node features "
			 "have how much memory, so --min-free-memory cannot be asked of Slurm: set "
			 "gres_by_memory or features_by_memory in [slurm] of the configuration (see "
			 "`gpuctl submit --help`), or leave --min-free-memory out");
		return false;
	}
	struct strbuf sb = {0};
	size_t best = m->n;
	for (size_t i = 0; i < m->n; i++) {
		if (m->e[i].mib < rq->min_free_mib)
			continue;
		if (m == rq->feature_mem)
			sb_addf(&sb, "%s%s", sb.len ? "|" : "", m->e[i].name);
		else if (best == m->n || m->e[i].mib < m->e[best].mib)
			best = i;
	}
	if (m == rq->gres_mem && best < m->n)
		*gres_type = xstrdup(m->e[best].name);
	*constraint = sb.buf;
	if (*gres_type || *constraint)
		return true;
	uint64_t most = 0;
	for (size_t i = 0; i < m->n; i++)
		most = m->e[i].mib > most ? m->e[i].mib : most;
	snprintf(why, whylen, "no GPU %s of this site has %llu MiB (the most is %llu MiB, by [slurm] "
		 "%s)", m == rq->feature_mem ? "node feature" : "type",
		 (unsigned long long)rq->min_free_mib, (unsigned long long)most,
		 m == rq->feature_mem ? "features_by_memory" : "gres_by_memory");
	return false;
}

char **sbatch_argv(const struct sbatch_req *rq, char *const *command, char *why, size_t whylen)
{
	char *gres_type = NULL, *constraint = NULL;
	if (!memory_args(rq, &gres_type, &constraint, why, whylen))
		return NULL;
	size_t nargs = 0;
	while (command[nargs])
		nargs++;
	char **v = xcalloc(nargs + 16, sizeof *v);
	size_t n = 0;
	v[n++] = xstrdup("sbatch");
	v[n++] = xstrdup("--parsable");
	v[n++] = xstrdup("--nodes=1");
	v[n++] = xstrdup("--ntasks=1");
	v[n++] = gres_type ? xasprintf("--gres=gpu:%s:%u", gres_type, rq->count)
			   : xasprintf("--gres=gpu:%u", rq->count);
	if (constraint)
		v[n++] = xasprintf("--constraint=%s", constraint);
	const char *base = strrchr(command[0], '/');
	v[n++] = xasprintf("--job-name=%s", rq->name ? rq->name : base && base[1] ? base + 1 : command[0]);
	v[n++] = xasprintf("--chdir=%s", rq->cwd);
	/* The environment of the submit, whatever SBATCH_EXPORT in it says. */
	v[n++] = xstrdup("--export=ALL");
	char *pat = rq->log ? slurm_path_pattern(rq->log) : NULL;
	v[n++] = xasprintf("--output=%s", pat ? pat : "slurm-%j.out");
	free(pat);
	v[n++] = xstrdup("--open-mode=append");
	if (rq->nafter) {
		struct strbuf dep = {0};
		sb_adds(&dep, "--dependency=afterok");
		for (size_t i = 0; i < rq->nafter; i++)
			sb_addf(&dep, ":%llu", (unsigned long long)rq->after[i]);
		v[n++] = dep.buf;
		/* Slurm would keep it pending for ever (DependencyNeverSatisfied); gpuctl's rule is
		 * that a job after one that failed is cancelled. */
		v[n++] = xstrdup("--kill-on-invalid-dep=yes");
	}
	v[n++] = xstrdup("/dev/stdin");
	for (size_t i = 0; i < nargs; i++)
		v[n++] = xstrdup(command[i]);
	v[n] = NULL;
	free(gres_type);
	free(constraint);
	return v;
}
