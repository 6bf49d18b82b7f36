/* view.c: the cluster view shown (see cluster.h): a table grouped by host, the status
 * JSON contract with host and stale on each GPU, or the free GPUs. Another node's text (host
 * names, GPU names, users, commands, lease names, scrape errors) is escaped on the terminal
 * (escape.h) and written to JSON only through json.c. */
#include "cluster/model.h"
#include "base/escape.h"
#include "base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The free-GPU rule of the daemon's defaults (gpuctl-run(1)): no lease, no process, at most
 * 1 GiB used, at most 10% busy. A value the exporter did not give does not make a GPU busy. */
#define FREE_MAX_MIB 1024
#define FREE_MAX_UTIL 10

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_RED "\033[31m"
#define C_YELLOW "\033[33m"

static bool has(const struct cgpu *g, enum cfield f)
{
	return g->has >> f & 1;
}

static bool is_free(const struct cgpu *g)
{
	return !g->stale && !g->lease_unknown && !(has(g, CF_LOST) && g->v[CF_LOST] != 0) &&
	       !(has(g, CF_LEASED) && g->v[CF_LEASED] != 0) && !g->holder && !g->nprocs &&
	       !g->other_procs && (!has(g, CF_MEM_USED) || g->v[CF_MEM_USED] <= (double)FREE_MAX_MIB * 1048576) &&
	       (!has(g, CF_UTIL) || g->v[CF_UTIL] <= FREE_MAX_UTIL);
}

static unsigned long long mib_of(double bytes)
{
	return mib(bytes > 0 ? (uint64_t)bytes : 0);
}

/* GPUs in the order shown: by host, then target, then index. */
static const struct cluster *sort_ctx;

static int shown_cmp(const void *a, const void *b)
{
	const struct cgpu *x = *(const struct cgpu *const *)a, *y = *(const struct cgpu *const *)b;
	const struct ctarget *tx = &sort_ctx->t[x->target], *ty = &sort_ctx->t[y->target];
	int c = strcmp(tx->host, ty->host);
	if (!c)
		c = strcmp(tx->instance, ty->instance);
	if (!c)
		c = strcmp(tx->job, ty->job);
	return c ? c : x->index < y->index ? -1 : x->index > y->index;
}

static int target_host_cmp(const void *a, const void *b)
{
	const struct ctarget *x = *(const struct ctarget *const *)a, *y = *(const struct ctarget *const *)b;
	int c = strcmp(x->host, y->host);
	if (!c)
		c = strcmp(x->instance, y->instance);
	return c ? c : strcmp(x->job, y->job);
}

/* ---- table ---- */

static void table_gpu(struct strbuf *sb, const struct cluster_opts *o, const struct cgpu *g)
{
	char util[16] = "N/A", temp[16] = "N/A", pw[40] = "N/A";
	struct mib_text mem = {"N/A"};
	sb_addf(sb, "%3u ", g->index);
	sb_adds(sb, o->color ? C_BOLD : "");
	struct strbuf name = {0};
	esc_printable_n(&name, g->name ? g->name : "N/A", 22);
	sb_addf(sb, "%-22.22s", name.buf);
	sb_free(&name);
	sb_adds(sb, o->color ? C_RESET : "");
	if (has(g, CF_LOST) && g->v[CF_LOST] != 0) {
		sb_addf(sb, "  %sLOST%s\n", o->color ? C_RED : "", o->color ? C_RESET : "");
		return;
	}
	if (has(g, CF_UTIL))
		snprintf(util, sizeof util, "%.0f%%", g->v[CF_UTIL]);
	if (has(g, CF_MEM_USED) && has(g, CF_MEM_TOTAL))
		mem = mib_of_text((uint64_t)g->v[CF_MEM_USED], (uint64_t)g->v[CF_MEM_TOTAL]);
	if (has(g, CF_TEMP))
		snprintf(temp, sizeof temp, "%.0fC", g->v[CF_TEMP]);
	if (has(g, CF_POWER))
		snprintf(pw, sizeof pw, has(g, CF_POWER_LIMIT) ? "%.0f / %.0f W" : "%.0f W",
			 g->v[CF_POWER], g->v[CF_POWER_LIMIT]);
	const char *dim = g->stale && o->color ? C_DIM : "";
	sb_addf(sb, "  %s%4s  %18s  %4s  %13s%s%s\n", dim, util, mem.s, temp, pw,
		g->stale ? "  (stale)" : "", *dim ? C_RESET : "");
}

static void table_details(struct strbuf *sb, const struct cluster_opts *o, const struct cgpu *g)
{
	if (g->stale) /* processes and leases of a stale GPU are not known */
		return;
	if (g->lease_unknown)
		sb_addf(sb, "      %slease: unknown (the host's exporter could not ask its gpuctl daemon)%s\n",
			o->color ? C_YELLOW : "", o->color ? C_RESET : "");
	if (g->holder) {
		sb_addf(sb, "      %slease: ", o->color ? C_YELLOW : "");
		esc_printable(sb, g->holder);
		if (g->lease_name && *g->lease_name) {
			sb_adds(sb, " '");
			esc_printable(sb, g->lease_name);
			sb_addc(sb, '\'');
		}
		sb_adds(sb, " (");
		esc_printable(sb, g->kind ? g->kind : "?");
		sb_addf(sb, ")%s\n", o->color ? C_RESET : "");
	}
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct cproc *p = &g->procs[i];
		char job[24] = "";
		if (p->job)
			snprintf(job, sizeof job, "job %-8u ", p->job);
		struct strbuf user = {0};
		esc_printable_n(&user, p->user && *p->user ? p->user : "-", 10);
		sb_addf(sb, "      %-10.10s %s%7s %10s  ", user.buf, job, esc_str(p->pid ? p->pid : "-", 0),
			mib_text((uint64_t)(p->mem > 0 ? p->mem : 0)).s);
		esc_printable(sb, p->command ? p->command : "");
		sb_addc(sb, '\n');
		sb_free(&user);
	}
	if (g->other_procs)
		sb_adds(sb, "      (more processes: past the exporter's --max-processes)\n");
}

static void host_line(struct strbuf *sb, const struct cluster_opts *o, const struct ctarget *t,
		      const char *driver)
{
	sb_addf(sb, "%s== ", o->color ? C_BOLD : "");
	esc_printable(sb, t->host);
	if (strcmp(t->host, t->instance)) {
		sb_adds(sb, "  ");
		esc_printable(sb, t->instance);
	} else if (t->hostname && *t->hostname) { /* shared by several exporters */
		sb_adds(sb, "  (hostname ");
		esc_printable(sb, t->hostname);
		sb_addc(sb, ')');
	}
	sb_adds(sb, o->color ? C_RESET : "");
	if (driver) {
		sb_adds(sb, "  driver ");
		esc_printable(sb, driver);
	}
	if (t->stale) {
		sb_addf(sb, "  %sSTALE: ", o->color ? C_RED : "");
		esc_printable(sb, t->why);
		if (!isnan(t->last_scrape) && t->ngpus) {
			char when[32];
			time_t ls = (time_t)t->last_scrape;
			struct tm tm;
			strftime(when, sizeof when, "%H:%M:%S", localtime_r(&ls, &tm));
			sb_addf(sb, "; values as last scraped, at %s", when);
		}
		if (!t->ngpus)
			sb_adds(sb, "; no GPU seen in the last " "10 minutes");
		sb_adds(sb, o->color ? C_RESET : "");
	}
	sb_addc(sb, '\n');
}

static void render_table(struct strbuf *sb, const struct cluster_opts *o, const struct cluster *c,
			 const struct cgpu *const *gs, const struct ctarget *const *ts, size_t nts)
{
	size_t nstale = 0;
	for (size_t i = 0; i < c->ng; i++)
		nstale += c->g[i].stale;
	char head[600], when[16];
	time_t now = time(NULL);
	struct tm tm;
	strftime(when, sizeof when, "%H:%M:%S", localtime_r(&now, &tm));
	int n = snprintf(head, sizeof head, "prometheus %s  %zu host%s, %zu GPU%s", esc_str(o->url, 0),
			 nts, nts == 1 ? "" : "s", c->ng, c->ng == 1 ? "" : "s");
	if (nstale)
		snprintf(head + n, sizeof head - (size_t)n, " (%zu stale)", nstale);
	sb_addf(sb, "%-*s%s\n", o->width - (int)strlen(when) > 0 ? o->width - (int)strlen(when) : 0,
		head, when);
	if (!nts)
		sb_adds(sb, "  (Prometheus scrapes no gpuctl exporter)\n");
	/* gs and ts are in the same order (host, instance, job): a merge. */
	size_t k = 0;
	for (size_t i = 0; i < nts; i++) {
		const struct ctarget *t = ts[i];
		host_line(sb, o, t, k < c->ng && &c->t[gs[k]->target] == t ? gs[k]->driver : NULL);
		if (!t->ngpus)
			continue;
		sb_addf(sb, "%s%3s %-22s  %4s  %18s  %4s  %13s%s\n", o->color ? C_DIM : "", "GPU", "NAME",
			"UTIL", "MEMORY", "TEMP", "POWER", o->color ? C_RESET : "");
		for (; k < c->ng && &c->t[gs[k]->target] == t; k++) {
			table_gpu(sb, o, gs[k]);
			table_details(sb, o, gs[k]);
		}
	}
}

static void render_free(struct strbuf *sb, const struct cgpu *const *gs, size_t n,
			const struct cluster *c)
{
	sb_addf(sb, "%-20s %3s  %-40s  %-22s  %s\n", "HOST", "GPU", "UUID", "NAME", "MEMORY FREE");
	for (size_t i = 0; i < n; i++) {
		const struct cgpu *g = gs[i];
		if (!is_free(g))
			continue;
		char freem[32] = "N/A";
		if (has(g, CF_MEM_FREE))
			snprintf(freem, sizeof freem, "%llu MiB", mib_of(g->v[CF_MEM_FREE]));
		struct strbuf host = {0}, name = {0};
		esc_printable_n(&host, c->t[g->target].host, 20);
		esc_printable_n(&name, g->name ? g->name : "N/A", 22);
		sb_addf(sb, "%-20s %3u  %-40.40s  %-22.22s  %s\n", host.buf, g->index,
			esc_str(g->uuid ? g->uuid : "N/A", 0), name.buf, freem);
		sb_free(&host);
		sb_free(&name);
	}
}

/* ---- JSON: the status contract, with host and stale ---- */

static void json_val(struct json *j, const struct cgpu *g, enum cfield f, const char *key, bool bytes)
{
	if (!has(g, f))
		json_null(j, key);
	else if (bytes)
		json_uint(j, key, mib_of(g->v[f]));
	else
		json_uint(j, key, (unsigned long long)(g->v[f] > 0 ? g->v[f] + 0.5 : 0));
}

static void json_gpu(struct json *j, const struct cluster *c, const struct cgpu *g)
{
	const struct ctarget *t = &c->t[g->target];
	json_obj(j, NULL);
	json_str(j, "host", t->host);
	json_bool(j, "stale", g->stale);
	json_str(j, "instance", t->instance);
	json_uint(j, "index", g->index);
	json_str(j, "uuid", g->uuid);
	json_str(j, "name", g->name);
	json_str(j, "pci_bus_id", g->pci);
	json_str(j, "driver_version", g->driver);
	json_val(j, g, CF_MEM_TOTAL, "memory_total_mib", true);
	json_val(j, g, CF_MEM_USED, "memory_used_mib", true);
	json_val(j, g, CF_MEM_FREE, "memory_free_mib", true);
	json_null(j, "memory_reserved_mib");
	json_val(j, g, CF_UTIL, "utilization_gpu_pct", false);
	json_val(j, g, CF_UTIL_MEM, "utilization_memory_pct", false);
	json_val(j, g, CF_TEMP, "temperature_c", false);
	for (int f = CF_POWER; f <= CF_POWER_LIMIT; f++)
		if (has(g, (enum cfield)f))
			json_num(j, f == CF_POWER ? "power_w" : "power_limit_w", g->v[f], 3);
		else
			json_null(j, f == CF_POWER ? "power_w" : "power_limit_w");
	json_str(j, "compute_mode", g->mode);
	json_str(j, "mig_mode", has(g, CF_MIG) ? (g->v[CF_MIG] != 0 ? "Enabled" : "Disabled") : NULL);
	bool lost = has(g, CF_LOST) && g->v[CF_LOST] != 0;
	json_bool(j, "lost", lost);
	json_str(j, "error", g->stale ? t->why : lost ? "GPU is lost" : NULL);
	if (!g->stale && g->holder) {
		json_obj(j, "lease");
		json_null(j, "id");
		json_str(j, "user", g->holder);
		json_null(j, "uid");
		json_null(j, "pid");
		json_str(j, "kind", g->kind);
		json_str(j, "name", g->lease_name && *g->lease_name ? g->lease_name : NULL);
		json_null(j, "since");
		json_end_obj(j);
	} else {
		json_null(j, "lease");
	}
	if (g->stale) {
		json_null(j, "processes");
	} else {
		json_arr(j, "processes");
		for (size_t i = 0; i < g->nprocs; i++) {
			const struct cproc *p = &g->procs[i];
			unsigned long pid;
			json_obj(j, NULL);
			if (parse_uint(p->pid, &pid))
				json_uint(j, "pid", pid);
			else
				json_null(j, "pid");
			json_str(j, "user", p->user && *p->user ? p->user : NULL); /* "": owner not known */
			json_null(j, "uid");
			json_str(j, "command", p->command && *p->command ? p->command : NULL);
			json_uint(j, "used_memory_mib", mib_of(p->mem));
			if (p->job)
				json_uint(j, "slurm_job_id", p->job);
			else
				json_null(j, "slurm_job_id");
			json_end_obj(j);
		}
		json_end_arr(j);
	}
	json_end_obj(j);
}

static void render_json(struct strbuf *sb, const struct cluster_opts *o, const struct cluster *c,
			const struct cgpu *const *gs, const struct ctarget *const *ts, size_t nts)
{
	struct json j;
	json_init(&j, sb, true);
	json_obj(&j, NULL);
	json_str(&j, "prometheus", o->url);
	json_null(&j, "driver_version");
	json_null(&j, "cuda_driver_version");
	json_arr(&j, "hosts");
	for (size_t i = 0; i < nts; i++) {
		const struct ctarget *t = ts[i];
		json_obj(&j, NULL);
		json_str(&j, "host", t->host);
		json_str(&j, "instance", t->instance);
		json_str(&j, "job", t->job);
		json_bool(&j, "stale", t->stale);
		json_str(&j, "health", t->health);
		json_str(&j, "error", t->stale ? t->why : NULL);
		if (isnan(t->last_scrape))
			json_null(&j, "last_scrape");
		else
			json_num(&j, "last_scrape", t->last_scrape, 3);
		if (t->daemon_up < 0 || t->stale)
			json_null(&j, "daemon_up");
		else
			json_bool(&j, "daemon_up", t->daemon_up);
		json_uint(&j, "gpus", t->ngpus);
		json_end_obj(&j);
	}
	json_end_arr(&j);
	json_arr(&j, "gpus");
	for (size_t i = 0; i < c->ng; i++)
		if (!o->free || is_free(gs[i]))
			json_gpu(&j, c, gs[i]);
	json_end_arr(&j);
	json_end_obj(&j);
	sb_addc(sb, '\n');
}

int cluster_status(const struct cluster_opts *o)
{
	struct cluster c;
	struct gpu_error err = {0};
	if (!cluster_load(&c, o->url, &err)) {
		fprintf(stderr, "gpuctl status: %s\n", err.msg);
		return err.code;
	}
	const struct cgpu **gs = xcalloc(c.ng + 1, sizeof *gs);
	const struct ctarget **ts = xcalloc(c.nt + 1, sizeof *ts);
	size_t nts = 0, nfree = 0, nstale = 0;
	for (size_t i = 0; i < c.ng; i++) {
		gs[i] = &c.g[i];
		nfree += is_free(&c.g[i]);
		nstale += c.g[i].stale;
	}
	for (size_t i = 0; i < c.nt; i++)
		if (c.t[i].gpuctl)
			ts[nts++] = &c.t[i];
	sort_ctx = &c;
	if (c.ng)
		qsort(gs, c.ng, sizeof *gs, shown_cmp);
	if (nts)
		qsort(ts, nts, sizeof *ts, target_host_cmp);
	struct strbuf sb = {.sink = stdout};
	if (o->json)
		render_json(&sb, o, &c, gs, ts, nts);
	else if (o->free)
		render_free(&sb, gs, c.ng, &c);
	else
		render_table(&sb, o, &c, gs, ts, nts);
	fwrite(sb.buf, 1, sb.len, stdout);
	fflush(stdout);
	sb_free(&sb);
	int rc = EXIT_OK;
	if (o->free && !nfree) {
		fprintf(stderr, "gpuctl status: no free GPU on the %zu host%s Prometheus scrapes%s\n", nts,
			nts == 1 ? "" : "s", nstale ? " (stale GPUs do not count)" : "");
		rc = EXIT_BUSY;
	}
	free(gs);
	free(ts);
	cluster_free(&c);
	return rc;
}
