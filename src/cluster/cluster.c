/* cluster.c: the cluster view's model (see cluster.h), built from three answers of Prometheus:
 *   1. /api/v1/targets: each scrape target's health, last scrape, interval and error;
 *   2. the newest sample within LOOKBACK of each GPU series, last_over_time() (which skips the
 *      staleness markers Prometheus writes when a scrape fails): every GPU seen lately, with its
 *      last values, so a host that stopped answering is still listed, as stale;
 *   3. an instant query of the same series plus processes and leases: what is current (a
 *      series that is no longer scraped has no instant value).
 * A GPU is current only when it is in answer 3 and its target is up and was scraped within two
 * scrape intervals. Processes and leases are shown only for current GPUs: for a stale one they
 * are unknown (null), never an empty list. A current GPU's lease is unknown too when its exporter
 * says gpuctl_daemon_up 0 (it left the lease series out): never "no lease", never free. The
 * rendering is in view.c. */
#include "cluster/model.h"
#include "cluster/promapi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOOKBACK "10m"

static const char *const field_metric[CF_N] = {
	[CF_MEM_TOTAL] = "gpuctl_gpu_memory_total_bytes", [CF_MEM_USED] = "gpuctl_gpu_memory_used_bytes",
	[CF_MEM_FREE] = "gpuctl_gpu_memory_free_bytes", [CF_UTIL] = "gpuctl_gpu_utilization_percent",
	[CF_UTIL_MEM] = "gpuctl_gpu_memory_utilization_percent",
	[CF_TEMP] = "gpuctl_gpu_temperature_celsius", [CF_POWER] = "gpuctl_gpu_power_watts",
	[CF_POWER_LIMIT] = "gpuctl_gpu_power_limit_watts", [CF_LOST] = "gpuctl_gpu_lost",
	[CF_LEASED] = "gpuctl_gpu_leased", [CF_MIG] = "gpuctl_gpu_mig_enabled",
};

/* ---- small parsers of Prometheus's answers ---- */

/* RFC 3339 as Go writes it: 2024-05-01T12:00:00.123456789+02:00 or ...Z. NAN when not. */
double cl_parse_time(const char *s)
{
	struct tm tm = {0};
	int off = 0, n = 0;
	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			 &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
		return NAN;
	if (tm.tm_year < 1970)
		return NAN; /* Go's zero time: never */
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	double frac = 0;
	const char *p = s + n;
	if (*p == '.') {
		char *end;
		frac = strtod(p, &end);
		p = end;
	}
	int hh, mm;
	if (*p == 'Z')
		off = 0;
	else if ((*p == '+' || *p == '-') && sscanf(p + 1, "%2d:%2d", &hh, &mm) == 2)
		off = (*p == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
	else
		return NAN;
	return (double)timegm(&tm) + frac - off;
}

/* A target's scrape interval or timeout, a Prometheus duration ("15s", "1m30s", "500ms"): gpuctl's
 * one reader of durations, unbounded here. NAN when it is not one. */
static double prom_duration(const char *s)
{
	double d;
	return parse_duration(s, HUGE_VAL, &d) ? d : NAN;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* ---- targets ---- */

static int target_cmp(const void *a, const void *b)
{
	const struct ctarget *x = a, *y = b;
	int c = strcmp(x->job, y->job);
	return c ? c : strcmp(x->instance, y->instance);
}

static struct ctarget *cl_target(struct cluster *c, const char *job, const char *instance)
{
	struct ctarget key = {.job = (char *)job, .instance = (char *)instance};
	return job && instance && c->nt ? bsearch(&key, c->t, c->nt, sizeof *c->t, target_cmp) : NULL;
}

static bool load_targets(struct cluster *c, struct prom *p, struct gpu_error *err)
{
	const struct pj *data = prom_get(p, "/api/v1/targets?state=active", PROM_TARGETS_MAX, err);
	if (!data)
		return false;
	const struct pj *arr = pj_get(data, "activeTargets");
	for (size_t i = 0; i < pj_len(arr); i++) {
		const struct pj *t = pj_at(arr, i), *labels = pj_get(t, "labels");
		const char *job = pj_str(pj_get(labels, "job")), *inst = pj_str(pj_get(labels, "instance"));
		if (!job || !inst)
			continue;
		c->t = grow_array(c->t, &c->tcap, c->nt + 1, sizeof *c->t);
		const char *health = pj_str(pj_get(t, "health")), *e = pj_str(pj_get(t, "lastError"));
		c->t[c->nt++] = (struct ctarget){
			.job = xstrdup(job), .instance = xstrdup(inst),
			.health = xstrdup(health ? health : "unknown"),
			.error = e && *e ? xstrdup(e) : NULL,
			.last_scrape = cl_parse_time(pj_str(pj_get(t, "lastScrape"))),
			.interval = prom_duration(pj_str(pj_get(t, "scrapeInterval"))),
			.timeout = prom_duration(pj_str(pj_get(t, "scrapeTimeout"))),
			.daemon_up = -1,
		};
	}
	if (c->nt)
		qsort(c->t, c->nt, sizeof *c->t, target_cmp);
	return true;
}

/* ---- GPUs ---- */

static int gpu_cmp(const void *a, const void *b)
{
	const struct cgpu *x = a, *y = b;
	if (x->target != y->target)
		return x->target < y->target ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* The target of a series: one Prometheus knows of, or one made up for a series whose target is
 * gone from its configuration (its GPUs are then stale). */
static size_t series_target(struct cluster *c, const struct pj *m)
{
	const char *job = pj_str(pj_get(m, "job")), *inst = pj_str(pj_get(m, "instance"));
	job = job ? job : "";
	inst = inst ? inst : "";
	struct ctarget *t = cl_target(c, job, inst);
	if (t)
		return (size_t)(t - c->t);
	c->t = grow_array(c->t, &c->tcap, c->nt + 1, sizeof *c->t);
	c->t[c->nt] = (struct ctarget){.job = xstrdup(job), .instance = xstrdup(inst),
				       .health = xstrdup("gone"), .last_scrape = NAN, .interval = NAN,
				       .timeout = NAN, .daemon_up = -1};
	qsort(c->t, ++c->nt, sizeof *c->t, target_cmp);
	/* Sorting moved the targets: the GPUs' positions must follow. */
	for (size_t i = 0; i < c->ng; i++)
		c->g[i].target = (size_t)(cl_target(c, c->g[i].tjob, c->g[i].tinst) - c->t);
	if (c->ng)
		qsort(c->g, c->ng, sizeof *c->g, gpu_cmp);
	return (size_t)(cl_target(c, job, inst) - c->t);
}

static struct cgpu *find_gpu(struct cluster *c, size_t target, unsigned index)
{
	struct cgpu key = {.target = target, .index = index};
	if (!c->ng)
		return NULL;
	return bsearch(&key, c->g, c->ng, sizeof *c->g, gpu_cmp);
}

/* The metric a series is of: __name__ (instant) or the label the lookback query gave it. */
static const char *series_metric(const struct pj *m)
{
	const char *f = pj_str(pj_get(m, "gpuctl_field"));
	return f ? f : pj_str(pj_get(m, "__name__"));
}

static bool series_gpu(const struct pj *m, unsigned *index)
{
	unsigned long v;
	if (!parse_uint(pj_str(pj_get(m, "gpu")), &v) || v > 1000000)
		return false;
	*index = (unsigned)v;
	return true;
}

static bool series_value(const struct pj *r, double *v, double *ts)
{
	const struct pj *val = pj_get(r, "value");
	const char *s = pj_str(pj_at(val, 1));
	char *end;
	if (!s || !pj_num(pj_at(val, 0), ts))
		return false;
	*v = strtod(s, &end);
	return end != s && !*end;
}

/* Pass 1 of an answer: its gpuctl_gpu_info series make (or mark current) the GPUs. */
static void add_gpus(struct cluster *c, const struct pj *result, bool current)
{
	size_t before = c->ng;
	for (size_t i = 0; i < pj_len(result); i++) {
		const struct pj *m = pj_get(pj_at(result, i), "metric");
		const char *metric = series_metric(m);
		unsigned index;
		if (!metric || strcmp(metric, "gpuctl_gpu_info") || !series_gpu(m, &index))
			continue;
		size_t t = series_target(c, m);
		struct cgpu *g = find_gpu(c, t, index);
		if (!g) {
			c->g = grow_array(c->g, &c->gcap, c->ng + 1, sizeof *c->g);
			g = &c->g[c->ng++];
			*g = (struct cgpu){.target = t, .index = index, .tjob = c->t[t].job,
					   .tinst = c->t[t].instance};
			g->uuid = dup_or_null(pj_str(pj_get(m, "uuid")));
			g->name = dup_or_null(pj_str(pj_get(m, "name")));
			g->pci = dup_or_null(pj_str(pj_get(m, "pci_bus_id")));
			g->driver = dup_or_null(pj_str(pj_get(m, "driver_version")));
			g->hostname = dup_or_null(pj_str(pj_get(m, "hostname")));
		}
		if (current) {
			/* What the lookback gave is replaced by what is current. */
			g->current = true;
			g->has = 0;
			free(g->mode);
			g->mode = NULL;
		}
		if (c->ng != before) /* keep the array sorted for the lookups that follow */
			qsort(c->g, c->ng, sizeof *c->g, gpu_cmp), before = c->ng;
	}
}

static void add_proc(struct cgpu *g, const struct pj *m, double v)
{
	const char *pid = pj_str(pj_get(m, "pid"));
	if (pid && !strcmp(pid, "other")) {   /* past the exporter's --max-processes */
		g->other_procs = true;
		return;
	}
	g->procs = grow_array(g->procs, &g->pcap, g->nprocs + 1, sizeof *g->procs);
	unsigned long job = 0;
	parse_uint(pj_str(pj_get(m, "hpc_job")), &job);
	g->procs[g->nprocs++] = (struct cproc){
		.pid = dup_or_null(pid), .user = dup_or_null(pj_str(pj_get(m, "user"))),
		.command = dup_or_null(pj_str(pj_get(m, "command"))), .job = (unsigned)job, .mem = v,
	};
}

/* Pass 2: the values. current: the instant answer (processes and leases come only from it). */
static void add_values(struct cluster *c, const struct pj *result, bool current)
{
	for (size_t i = 0; i < pj_len(result); i++) {
		const struct pj *r = pj_at(result, i), *m = pj_get(r, "metric");
		const char *metric = series_metric(m);
		unsigned index;
		double v, ts;
		if (current && metric && !strcmp(metric, "gpuctl_daemon_up") && series_value(r, &v, &ts)) {
			c->t[series_target(c, m)].daemon_up = v != 0; /* a target's, not a GPU's */
			continue;
		}
		if (!metric || !series_gpu(m, &index) || !series_value(r, &v, &ts))
			continue;
		if (current && !c->now_known) {
			c->now = ts;
			c->now_known = true;
		}
		size_t t = series_target(c, m);
		struct cgpu *g = find_gpu(c, t, index);
		if (!g || g->current != current)
			continue;
		for (int f = 0; f < CF_N; f++)
			if (!strcmp(metric, field_metric[f])) {
				g->v[f] = v;
				g->has |= 1U << f;
			}
		if (!strcmp(metric, "gpuctl_gpu_compute_mode") && v == 1) {
			free(g->mode);
			g->mode = dup_or_null(pj_str(pj_get(m, "mode")));
		} else if (current && !strcmp(metric, "gpuctl_gpu_lease_info")) {
			free(g->holder);
			free(g->lease_name);
			free(g->kind);
			g->holder = dup_or_null(pj_str(pj_get(m, "holder")));
			g->lease_name = dup_or_null(pj_str(pj_get(m, "lease_name")));
			g->kind = dup_or_null(pj_str(pj_get(m, "kind")));
		} else if (current && !strcmp(metric, "gpuctl_process_gpu_memory_bytes")) {
			add_proc(g, m, v);
		}
	}
}

static char *lookback_query(void)
{
	struct strbuf q = {0};
	static const char *const extra[] = {"gpuctl_gpu_info", "gpuctl_gpu_compute_mode"};
	for (size_t i = 0; i < CF_N + ARRAY_SIZE(extra); i++) {
		const char *m = i < CF_N ? field_metric[i] : extra[i - CF_N];
		sb_addf(&q, "%slabel_replace(last_over_time(%s[" LOOKBACK "]), \"gpuctl_field\", \"%s\", "
			"\"\", \"\")", i ? " or " : "", m, m);
	}
	return q.buf;
}

static const char instant_query[] =
	"{__name__=~\"gpuctl_gpu_(info|memory_(total|used|free)_bytes|utilization_percent|"
	"memory_utilization_percent|temperature_celsius|power_watts|power_limit_watts|lost|leased|"
	"mig_enabled|compute_mode|lease_info)|gpuctl_process_gpu_memory_bytes|gpuctl_daemon_up\"}";

/* ---- staleness and hosts ---- */

static void judge_targets(struct cluster *c)
{
	for (size_t i = 0; i < c->nt; i++) {
		struct ctarget *t = &c->t[i];
		double age = c->now - t->last_scrape;
		if (strcmp(t->health, "up")) {
			t->stale = true;
			snprintf(t->why, sizeof t->why, "%s%s%s", !strcmp(t->health, "down") ? "down"
				 : !strcmp(t->health, "gone") ? "no longer a target of Prometheus"
				 : "not scraped yet", t->error ? ": " : "", t->error ? t->error : "");
		} else if (isnan(t->last_scrape) || (!isnan(t->interval) && age > 2 * t->interval)) {
			t->stale = true;
			snprintf(t->why, sizeof t->why, "last scraped %.0f s ago (every %.0f s)", age,
				 t->interval);
		}
	}
	for (size_t i = 0; i < c->ng; i++) {
		struct cgpu *g = &c->g[i];
		g->stale = !g->current || c->t[g->target].stale;
		g->lease_unknown = !g->stale && c->t[g->target].daemon_up == 0;
		c->t[g->target].ngpus++;
		c->t[g->target].gpuctl = true;
		if (!c->t[g->target].hostname && g->hostname)
			c->t[g->target].hostname = g->hostname;
	}
	/* A target of a scrape job that has gpuctl exporters is one too, even with no GPU seen
	 * within the lookback (down for long). */
	for (size_t i = 0; i < c->nt; i++)
		for (size_t k = 0; k < c->nt && !c->t[i].gpuctl; k++)
			if (c->t[k].ngpus && !strcmp(c->t[k].job, c->t[i].job))
				c->t[i].gpuctl = true;
	/* The host: the exporter's hostname label, unless another target has it too (two
	 * exporters on one host, or copies of one machine): then the target. */
	for (size_t i = 0; i < c->nt; i++) {
		struct ctarget *t = &c->t[i];
		bool shared = false;
		for (size_t k = 0; k < c->nt && t->hostname && !shared; k++)
			shared = k != i && c->t[k].gpuctl && c->t[k].hostname &&
				 !strcmp(c->t[k].hostname, t->hostname);
		t->host = t->hostname && *t->hostname && !shared ? t->hostname : t->instance;
	}
}

static void gpu_free(struct cgpu *g)
{
	free(g->uuid);
	free(g->name);
	free(g->pci);
	free(g->driver);
	free(g->hostname);
	free(g->mode);
	free(g->holder);
	free(g->lease_name);
	free(g->kind);
	for (size_t i = 0; i < g->nprocs; i++) {
		free(g->procs[i].pid);
		free(g->procs[i].user);
		free(g->procs[i].command);
	}
	free(g->procs);
}

void cluster_free(struct cluster *c)
{
	for (size_t i = 0; i < c->ng; i++)
		gpu_free(&c->g[i]);
	for (size_t i = 0; i < c->nt; i++) {
		free(c->t[i].job);
		free(c->t[i].instance);
		free(c->t[i].health);
		free(c->t[i].error);
	}
	free(c->g);
	free(c->t);
	*c = (struct cluster){0};
}

bool cluster_load(struct cluster *c, const char *url, struct gpu_error *err)
{
	*c = (struct cluster){0};
	struct prom *p = prom_open(url, err);
	if (!p)
		return false;
	char *lq = lookback_query();
	const struct pj *d;
	bool ok = load_targets(c, p, err);
	if (ok && (ok = (d = prom_query(p, lq, prom_query_max(c->nt), err)) != NULL)) {
		add_gpus(c, pj_get(d, "result"), false);
		add_values(c, pj_get(d, "result"), false);
	}
	if (ok && (ok = (d = prom_query(p, instant_query, prom_query_max(c->nt), err)) != NULL)) {
		add_gpus(c, pj_get(d, "result"), true);
		add_values(c, pj_get(d, "result"), true);
	}
	free(lq);
	prom_close(p);
	if (!ok) {
		cluster_free(c);
		return false;
	}
	if (!c->now_known) { /* no current series at all: the local clock */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		c->now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	}
	judge_targets(c);
	return true;
}
