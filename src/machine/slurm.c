/* slurm.c: Slurm on a node: job attribution from cgroups, the allocation gpuctl runs in, and a
 * job's GPUs from scontrol (run through base/exec.c; see slurm.h). */
#include "machine/slurm.h"
#include "machine/container.h"
#include "base/exec.h"
#include "machine/gpu.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- attribution ---- */

/* "PREFIX<digits>" exactly, the number at least min and below 2^32 - 1 (Slurm's NO_VAL); len is
 * the component's. */
static bool numbered(const char *s, size_t len, const char *prefix, unsigned long min,
		     unsigned long *v)
{
	size_t n = strlen(prefix);
	if (len <= n || len > n + 10 || strncmp(s, prefix, n))
		return false;
	unsigned long x = 0;
	for (size_t i = n; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		x = x * 10 + (unsigned long)(s[i] - '0');
	}
	if (x < min || x > 0xFFFFFFFEUL)
		return false;
	*v = x;
	return true;
}

/* The job in one hierarchy's path (from its first '/'), or 0. */
static unsigned path_job(const char *path, size_t len)
{
	const char *comp[4];
	size_t clen[4], n = 0;
	const char *p = path, *end = path + len;
	if (p == end || *p != '/')
		return 0;
	while (p < end && n < 4) {
		p++;
		const char *q = memchr(p, '/', (size_t)(end - p));
		if (!q)
			q = end;
		comp[n] = p;
		clen[n++] = (size_t)(q - p);
		p = q;
	}
	unsigned long uid, job;
	/* v1: /slurm/uid_U/job_J or /slurm_NODE/uid_U/job_J */
	if (n >= 3 && clen[0] >= 5 && !strncmp(comp[0], "slurm", 5) &&
	    (clen[0] == 5 || comp[0][5] == '_') && numbered(comp[1], clen[1], "uid_", 0, &uid) &&
	    numbered(comp[2], clen[2], "job_", 1, &job))
		return (unsigned)job;
	/* v2: /system.slice/[NODE_]slurmstepd.scope/job_J */
	static const char scope[] = "slurmstepd.scope";
	size_t sl = sizeof scope - 1;
	if (n >= 3 && clen[0] == 12 && !strncmp(comp[0], "system.slice", 12) && clen[1] >= sl &&
	    !strncmp(comp[1] + clen[1] - sl, scope, sl) &&
	    (clen[1] == sl || comp[1][clen[1] - sl - 1] == '_') &&
	    numbered(comp[2], clen[2], "job_", 1, &job))
		return (unsigned)job;
	return 0;
}

unsigned slurm_cgroup_job(const char *text)
{
	/* The first hierarchy that places the process in a job wins (slurmstepd puts a step's
	 * processes in the same job in every hierarchy it uses). */
	const char *cur = text, *path;
	size_t len;
	while (cgroup_next_path(&cur, &path, &len)) {
		unsigned job = path_job(path, len);
		if (job)
			return job;
	}
	return 0;
}

bool slurm_node(void)
{
	static const char *const roots[] = {"freezer", "cpuset", "memory", "devices"};
	struct stat st;
	char path[320], host[256] = "";
	if (stat("/sys/fs/cgroup/system.slice/slurmstepd.scope", &st) == 0)
		return true;
	if (gethostname(host, sizeof host - 1) == 0)
		host[strcspn(host, ".")] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(roots); i++) {
		snprintf(path, sizeof path, "/sys/fs/cgroup/%s/slurm", roots[i]);
		if (stat(path, &st) == 0)
			return true;
		if (errno == ENOENT && host[0]) {
			snprintf(path, sizeof path, "/sys/fs/cgroup/%s/slurm_%s", roots[i], host);
			if (stat(path, &st) == 0)
				return true;
		}
	}
	return false;
}

/* ---- the allocation ---- */

void slurm_alloc_read(struct slurm_alloc *a, const char *(*lookup)(const char *name, void *arg),
		      void *arg)
{
	*a = (struct slurm_alloc){0};
	a->job_id = lookup("SLURM_JOB_ID", arg);
	a->step_id = lookup("SLURM_STEP_ID", arg);
	a->in_job = a->job_id && *a->job_id;
	if (!a->in_job)
		return;
	/* A step (srun) has its own GPUs, a subset of the job's: they are the ones it may use. */
	const char *step = lookup("SLURM_STEP_GPUS", arg), *job = lookup("SLURM_JOB_GPUS", arg);
	if (step && *step) {
		a->var = "SLURM_STEP_GPUS";
		a->gpus = step;
	} else if (job && *job) {
		a->var = "SLURM_JOB_GPUS";
		a->gpus = job;
	}
}

static const char *self_lookup(const char *name, void *arg)
{
	(void)arg;
	return getenv(name);
}

void slurm_alloc_self(struct slurm_alloc *a)
{
	slurm_alloc_read(a, self_lookup, NULL);
}

static bool add_id(const struct gpu_set *set, const char *id, uint64_t *m, char *err, size_t errlen)
{
	struct gpu_error ge;
	struct gpu *g = gpu_find((struct gpu_set *)set, id, &ge);
	if (!g) {
		snprintf(err, errlen, "%s", ge.msg);
		return false;
	}
	size_t pos = (size_t)(g - set->gpus);
	if (pos < GPU_MAX)
		*m |= 1ULL << pos;
	return true;
}

bool slurm_gpu_mask(const struct gpu_set *set, const char *ids, uint64_t *mask, char *err,
		    size_t errlen)
{
	uint64_t m = 0;
	size_t count = 0;
	char *copy = xstrdup(ids), *save = NULL;
	bool ok = true;
	*mask = 0;
	/* Counted first: under a device cgroup the ids are not NVML's indices (see slurm.h). */
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned long lo, hi;
		char *dash = strchr(t, '-');
		if (dash && strncasecmp(t, "GPU-", 4)) {
			*dash = '\0';
			if (!parse_uint(t, &lo) || !parse_uint(dash + 1, &hi) || hi < lo || hi - lo > GPU_MAX) {
				snprintf(err, errlen, "'%s-%s' is not a range of GPU ids", t, dash + 1);
				ok = false;
				break;
			}
			count += hi - lo + 1;
		} else {
			count++;
		}
	}
	free(copy);
	if (!ok)
		return false;
	if (count && count == set->ngpus) {
		for (size_t i = 0; i < set->ngpus && i < GPU_MAX; i++)
			m |= 1ULL << i;
		*mask = m;
		return true;
	}
	copy = xstrdup(ids);
	save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t && ok; t = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(t, '-');
		if (dash && strncasecmp(t, "GPU-", 4)) {
			unsigned long lo, hi;
			*dash = '\0';
			parse_uint(t, &lo);
			parse_uint(dash + 1, &hi);
			for (unsigned long i = lo; i <= hi && ok; i++) {
				char one[24];
				snprintf(one, sizeof one, "%lu", i);
				ok = add_id(set, one, &m, err, errlen);
			}
		} else {
			ok = add_id(set, t, &m, err, errlen);
		}
	}
	free(copy);
	*mask = m;
	return ok;
}

/* ---- a job's GPUs, from Slurm's controller ---- */

/* Whether host is named by a Slurm hostlist: "vm", "a,b", "node[01-04,07]". */
static bool hostlist_has(const char *list, size_t len, const char *host)
{
	size_t hl = strlen(host);
	const char *p = list, *end = list + len;
	while (p < end) {
		const char *br = NULL, *q = p;
		while (q < end && *q != ',') {      /* one name or one bracketed name */
			if (*q == '[' && !br)
				br = q;
			if (*q == '[')
				while (q < end && *q != ']')
					q++;
			if (q < end)
				q++;
		}
		if (!br && (size_t)(q - p) == hl && !strncmp(p, host, hl))
			return true;
		unsigned long v;
		const char *num = br ? host + (br - p) : host;
		if (br && (size_t)(br - p) < hl && !strncmp(p, host, (size_t)(br - p)) &&
		    parse_uint(num, &v)) {
			const char *r = br + 1;
			while (r < q && isdigit((unsigned char)*r)) {
				char *x;
				unsigned long lo = strtoul(r, &x, 10), hi = lo;
				size_t width = (size_t)(x - r);
				if (*x == '-' && isdigit((unsigned char)x[1]))
					hi = strtoul(x + 1, &x, 10);
				/* node[01-04] names node01, not node1; node[1-10] names node7 */
				if (v >= lo && v <= hi && (width == strlen(num) || (num[0] != '0' && r[0] != '0')))
					return true;
				if (*x != ',')
					break;
				r = x + 1;
			}
		}
		p = q + 1;
	}
	return false;
}

bool slurm_parse_job_gpus(const char *text, const char *node, char *ids, size_t idslen)
{
	for (const char *p = text; (p = strstr(p, "Nodes=")) != NULL;) {
		p += 6;
		size_t len = strcspn(p, " \n");
		if (p > text + 6 && !isspace((unsigned char)p[-7])) /* "ReqNodes=", "ExcNodes=" */
			continue;
		if (!hostlist_has(p, len, node))
			continue;
		const char *nl = strchr(p, '\n'), *g = strstr(p, "GRES=");
		if (!g || (nl && g > nl))
			return false;
		const char *gpu = strstr(g, "gpu");
		const char *idx = gpu ? strstr(gpu, "(IDX:") : NULL;
		idx = idx ? idx + 1 : NULL;
		const char *close = idx ? strchr(idx, ')') : NULL;
		if (!idx || !close || (nl && close > nl) || (size_t)(close - idx - 4) >= idslen)
			return false;
		snprintf(ids, idslen, "%.*s", (int)(close - idx - 4), idx + 4);
		return true;
	}
	return false;
}

bool slurm_job_gpus(unsigned job, char *ids, size_t idslen, char *err, size_t errlen)
{
	char jobs[16], host[256] = "";
	snprintf(jobs, sizeof jobs, "%u", job);
	const char *const argv[] = {"scontrol", "show", "job", "-d", jobs, NULL};
	struct strbuf out = {0}, errt = {0};
	int rc = exec_run(argv, 10, SLURM_LATE, &out, &errt);
	const char *nodename = getenv("SLURMD_NODENAME");
	if (nodename && *nodename && getenv("SLURM_JOB_ID"))
		snprintf(host, sizeof host, "%s", nodename);
	else if (gethostname(host, sizeof host - 1) == 0)
		host[strcspn(host, ".")] = '\0';
	bool ok = rc == 0 && slurm_parse_job_gpus(out.buf ? out.buf : "", host, ids, idslen);
	if (!ok) {
		char *e = errt.buf ? errt.buf : "";
		size_t n = strlen(e);
		while (n && isspace((unsigned char)e[n - 1]))
			e[--n] = '\0';
		if (rc == 0)
			snprintf(err, errlen, "`scontrol show job -d %u` names no GPUs of job %u on %s", job,
				 job, host);
		else
			snprintf(err, errlen, "`scontrol show job -d %u` failed: %s", job,
				 *e ? e : "no reason given");
	}
	sb_free(&out);
	sb_free(&errt);
	return ok;
}
