/* spec.c: the parsers of detached jobs (see job.h), free of I/O so the unit tests reach them:
 * the spec file (what to run), a list of job ids (--after, and the ids commands take), and the
 * lines of `submit --file`. */
#include "jobs/backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_MAGIC "gpuctl-spec-1"

/* NUL-separated: the magic, the number of arguments, the arguments, then the environment. */
void spec_build(struct strbuf *out, char *const *argv, char *const *env)
{
	size_t argc = 0;
	while (argv[argc])
		argc++;
	sb_add(out, SPEC_MAGIC, sizeof SPEC_MAGIC);
	sb_addf(out, "%zu", argc);
	sb_addc(out, '\0');
	for (size_t i = 0; i < argc; i++)
		sb_add(out, argv[i], strlen(argv[i]) + 1);
	for (char *const *e = env; e && *e; e++)
		if (strchr(*e, '='))
			sb_add(out, *e, strlen(*e) + 1);
}

static bool bad(char *why, size_t whylen, const char *what)
{
	snprintf(why, whylen, "%s", what);
	return false;
}

bool spec_parse(char *buf, size_t len, char ***argv, char ***env, char *why, size_t whylen)
{
	*argv = *env = NULL;
	if (len < sizeof SPEC_MAGIC || memcmp(buf, SPEC_MAGIC, sizeof SPEC_MAGIC))
		return bad(why, whylen, "not a job spec (no " SPEC_MAGIC " header)");
	if (buf[len - 1] != '\0')
		return bad(why, whylen, "truncated (no NUL at the end)");
	size_t nstr = 0;
	for (size_t i = 0; i < len; i++)
		nstr += buf[i] == '\0';
	char *p = buf + sizeof SPEC_MAGIC, *end = buf + len;
	unsigned long argc;
	if (p >= end || !parse_uint(p, &argc) || argc == 0 || argc > nstr)
		return bad(why, whylen, "bad argument count");
	p += strlen(p) + 1;
	char **a = xcalloc(argc + 1, sizeof *a), **e = xcalloc(nstr + 1, sizeof *e);
	size_t k = 0;
	for (; k < argc && p < end; k++, p += strlen(p) + 1)
		a[k] = p;
	size_t ne = 0;
	for (; p < end; p += strlen(p) + 1)
		if (strchr(p, '='))
			e[ne++] = p;
	if (k < argc) {
		free(a);
		free(e);
		return bad(why, whylen, "fewer arguments than its count");
	}
	*argv = a;
	*env = e;
	return true;
}

#define SLURM_PREFIX "slurm:"

bool parse_job_refs(const char *s, struct job_ref **refs, size_t *n, char *why, size_t whylen)
{
	const char *p = s;
	if (!*p) {
		snprintf(why, whylen, "an empty list of job ids");
		return false;
	}
	for (;;) {
		size_t len = strcspn(p, ",");
		char word[48];
		struct job_ref r = {.kind = JOB_LOCAL};
		if (len == 0 || len >= sizeof word) {
			snprintf(why, whylen, "'%s' is not a list of job ids such as 3,5,7 or slurm:42", s);
			return false;
		}
		memcpy(word, p, len);
		word[len] = '\0';
		const char *num = word;
		if (!strncmp(word, SLURM_PREFIX, strlen(SLURM_PREFIX))) {
			r.kind = JOB_SLURM;
			num += strlen(SLURM_PREFIX);
		}
		const char *us = r.kind == JOB_SLURM ? strchr(num, '_') : NULL;
		if (us && us > num) {
			/* 123_4: a task of Slurm's job array 123. Its tasks share one job id and each
			 * has its own state: gpuctl does not follow arrays (gpuctl-jobs(1), SLURM JOBS). */
			snprintf(why, whylen, "'%s' is a task of Slurm's job array %.*s: gpuctl does not follow "
				 "job arrays (`squeue -j %.*s` and `scontrol show job %s` show it)", word,
				 (int)(us - num), num, (int)(us - num), num, num);
			return false;
		}
		if (!word_u64(num, UINT64_MAX, &r.id) || r.id == 0) {
			snprintf(why, whylen, "'%s' is not a job id (a number from `gpuctl jobs`, or slurm:N "
				 "for Slurm's job N)", word);
			return false;
		}
		size_t k = 0;
		while (k < *n && ((*refs)[k].id != r.id || (*refs)[k].kind != r.kind))
			k++;
		if (k == *n) {
			*refs = xrealloc(*refs, (*n + 1) * sizeof **refs);
			(*refs)[(*n)++] = r;
		}
		if (!p[len])
			return true;
		p += len + 1;
	}
}

const char *job_id_text(enum job_kind kind, uint64_t id, char *buf, size_t len)
{
	/* By hand: `jobs` writes one a record (issue 22: snprintf was 2% of a 1,001-record list). */
	char digits[24];
	size_t k = sizeof digits, p = kind == JOB_SLURM ? strlen(SLURM_PREFIX) : 0;
	do
		digits[--k] = (char)('0' + id % 10);
	while (id /= 10);
	if (!len)
		return buf;
	size_t n = p + sizeof digits - k < len ? p + sizeof digits - k : len - 1;
	size_t np = p < n ? p : n;
	memcpy(buf, SLURM_PREFIX, np);
	memcpy(buf + np, digits + k, n - np);
	buf[n] = '\0';
	return buf;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

bool jobfile_parse(char *text, size_t len, char ***lines, unsigned **linenos, size_t *n,
		   char *why, size_t whylen)
{
	*lines = NULL;
	*linenos = NULL;
	*n = 0;
	size_t cap = 0, cap2 = 0;
	unsigned lineno = 0;
	for (size_t pos = 0; pos < len;) {
		char *line = text + pos;
		char *nl = memchr(line, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - line) : len - pos;
		lineno++;
		if (memchr(line, '\0', l)) {
			snprintf(why, whylen, "line %u holds a NUL byte (is this a text file?)", lineno);
			free(*lines);
			free(*linenos);
			*lines = NULL;
			*linenos = NULL;
			*n = 0;
			return false;
		}
		pos += l + (nl != NULL);
		while (l && blank(line[l - 1]))
			l--;
		line[l] = '\0';
		while (blank(*line))
			line++;
		if (!*line || *line == '#')
			continue;
		*lines = grow_array(*lines, &cap, *n + 1, sizeof **lines);
		*linenos = grow_array(*linenos, &cap2, *n + 1, sizeof **linenos);
		(*lines)[*n] = line;
		(*linenos)[(*n)++] = lineno;
	}
	return true;
}
