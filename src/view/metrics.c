/* metrics.c: Prometheus text format (version 0.0.4). Each family is written whole (HELP, TYPE,
 * then its samples) and a value the driver cannot give is left out, never written as 0. Labels
 * that could grow without bound are capped: processes per GPU (the rest summed as pid="other")
 * and command names (the program's base name, 64 bytes at most). */
#include "view/metrics.h"
#include "view/metrics-text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gauge {
	const char *name, *help;
	enum gpu_field field;
};

static double gauge_value(const struct gpu *g, enum gpu_field f)
{
	switch (f) {
	case GF_UTIL_GPU: return g->util_gpu;
	case GF_UTIL_MEM: return g->util_mem;
	case GF_MEM_TOTAL: return (double)g->mem_total;
	case GF_MEM_USED: return (double)g->mem_used;
	case GF_MEM_FREE: return (double)g->mem_free;
	case GF_MEM_RESERVED: return (double)g->mem_reserved;
	case GF_TEMP: return g->temp;
	case GF_POWER: return g->power_mw / 1000.0;
	case GF_POWER_LIMIT: return g->power_limit_mw / 1000.0;
	case GF_FAN: return g->fan;
	case GF_MIG_MODE: return g->mig_mode;
	case GF_PERSISTENCE: return g->persistence;
	case GF_UTIL_ENC: return g->util_enc;
	case GF_UTIL_DEC: return g->util_dec;
	case GF_TEMP_MEM: return g->temp_mem;
	case GF_PSTATE: return g->pstate;
	case GF_EVENTS_ACTIVE: return (double)g->events_active;
	case GF_PCIE_GEN: return g->pcie_gen;
	case GF_PCIE_WIDTH: return g->pcie_width;
	default: return 0;
	}
}

static const struct gauge gauges[] = {
	{"gpuctl_gpu_utilization_percent", "Percent of time a kernel ran (DCGM_FI_DEV_GPU_UTIL).", GF_UTIL_GPU},
	{"gpuctl_gpu_memory_utilization_percent", "Percent of time memory was read or written (DCGM_FI_DEV_MEM_COPY_UTIL).", GF_UTIL_MEM},
	{"gpuctl_gpu_memory_total_bytes", "Total GPU memory (DCGM_FI_DEV_FB_TOTAL, there in MiB).", GF_MEM_TOTAL},
	{"gpuctl_gpu_memory_used_bytes", "GPU memory used (DCGM_FI_DEV_FB_USED, there in MiB).", GF_MEM_USED},
	{"gpuctl_gpu_memory_free_bytes", "GPU memory free (DCGM_FI_DEV_FB_FREE, there in MiB).", GF_MEM_FREE},
	{"gpuctl_gpu_memory_reserved_bytes", "GPU memory reserved by the driver (DCGM_FI_DEV_FB_RESERVED).", GF_MEM_RESERVED},
	{"gpuctl_gpu_temperature_celsius", "GPU core temperature (DCGM_FI_DEV_GPU_TEMP).", GF_TEMP},
	{"gpuctl_gpu_power_watts", "Power draw (DCGM_FI_DEV_POWER_USAGE).", GF_POWER},
	{"gpuctl_gpu_power_limit_watts", "Enforced power limit (DCGM_FI_DEV_ENFORCED_POWER_LIMIT).", GF_POWER_LIMIT},
	{"gpuctl_gpu_fan_speed_percent", "Intended fan speed (DCGM_FI_DEV_FAN_SPEED).", GF_FAN},
	{"gpuctl_gpu_mig_enabled", "1 when MIG mode is on.", GF_MIG_MODE},
	{"gpuctl_gpu_persistence_enabled", "1 when persistence mode is on.", GF_PERSISTENCE},
	{"gpuctl_gpu_encoder_utilization_percent", "Video encoder use (DCGM_FI_DEV_ENC_UTIL).", GF_UTIL_ENC},
	{"gpuctl_gpu_decoder_utilization_percent", "Video decoder use (DCGM_FI_DEV_DEC_UTIL).", GF_UTIL_DEC},
	{"gpuctl_gpu_memory_temperature_celsius", "HBM temperature (DCGM_FI_DEV_MEMORY_TEMP).", GF_TEMP_MEM},
	{"gpuctl_gpu_performance_state", "Performance state: 0 (P0, fastest) to 15.", GF_PSTATE},
	{"gpuctl_gpu_clocks_event_reasons", "Bit mask of why the clocks are held down (DCGM_FI_DEV_CLOCKS_EVENT_REASONS).", GF_EVENTS_ACTIVE},
	{"gpuctl_gpu_pcie_link_generation", "PCIe link generation now (DCGM_FI_DEV_PCIE_LINK_GEN).", GF_PCIE_GEN},
	{"gpuctl_gpu_pcie_link_width", "PCIe lanes now (DCGM_FI_DEV_PCIE_LINK_WIDTH).", GF_PCIE_WIDTH},
};

static void gpu_info(struct strbuf *sb, const struct gpu_set *set, const struct gpu *g,
		     const struct metrics_opts *o)
{
	struct strbuf x = {0};
	sb_adds(&x, "pci_bus_id=\"");
	metrics_label(&x, g->pci_bus_id);
	sb_adds(&x, "\",driver_version=\"");
	metrics_label(&x, set->has_driver_version ? set->driver_version : "");
	sb_addc(&x, '"');
	metrics_gpu_sample(sb, "gpuctl_gpu_info", g, o, x.buf);
	sb_adds(sb, "1\n");
	sb_free(&x);
}

static void clocks(struct strbuf *sb, const struct gpu *g, const struct metrics_opts *o)
{
	static const struct {
		const char *label;
		enum gpu_field f;
	} clk[] = {{"clock=\"graphics\"", GF_CLK_GFX}, {"clock=\"sm\"", GF_CLK_SM},
		   {"clock=\"memory\"", GF_CLK_MEM}, {"clock=\"video\"", GF_CLK_VIDEO}};
	const unsigned mhz[] = {g->clk_gfx, g->clk_sm, g->clk_mem, g->clk_video};
	for (size_t c = 0; c < ARRAY_SIZE(clk); c++) {
		if (!gpu_has(g, clk[c].f))
			continue;
		metrics_gpu_sample(sb, "gpuctl_gpu_clock_hertz", g, o, clk[c].label);
		sb_addf(sb, "%llu\n", (unsigned long long)mhz[c] * 1000000ULL);
	}
}

static void gpu_metrics(struct strbuf *sb, const struct gpu_set *set, const struct metrics_opts *o)
{
	const struct gpu *g, *end = set->gpus + set->ngpus;
	metrics_family(sb, "gpuctl_gpu_info", "gauge", "Always 1: the GPU's identity.");
	for (g = set->gpus; g < end; g++)
		gpu_info(sb, set, g, o);
	metrics_family(sb, "gpuctl_gpu_lost", "gauge", "1 when the GPU fell off the bus or stopped answering.");
	for (g = set->gpus; g < end; g++) {
		metrics_gpu_sample(sb, "gpuctl_gpu_lost", g, o, NULL);
		sb_addf(sb, "%d\n", g->lost || g->inaccessible);
	}
	for (size_t k = 0; k < ARRAY_SIZE(gauges); k++) {
		metrics_family(sb, gauges[k].name, "gauge", gauges[k].help);
		for (g = set->gpus; g < end; g++) {
			if (!gpu_has(g, gauges[k].field))
				continue;
			metrics_gpu_sample(sb, gauges[k].name, g, o, NULL);
			sb_addf(sb, "%.17g\n", gauge_value(g, gauges[k].field));
		}
	}
	metrics_family(sb, "gpuctl_gpu_clock_hertz", "gauge",
	       "Current clocks (DCGM_FI_DEV_SM_CLOCK, DCGM_FI_DEV_MEM_CLOCK, there in MHz).");
	for (g = set->gpus; g < end; g++)
		clocks(sb, g, o);
	metrics_family(sb, "gpuctl_gpu_compute_mode", "gauge", "1 for the GPU's compute mode.");
	for (g = set->gpus; g < end; g++) {
		if (!gpu_has(g, GF_COMPUTE_MODE))
			continue;
		char mode[48];
		snprintf(mode, sizeof mode, "mode=\"%s\"", compute_mode_name(g->compute_mode));
		metrics_gpu_sample(sb, "gpuctl_gpu_compute_mode", g, o, mode);
		sb_adds(sb, "1\n");
	}
	metrics_family(sb, "gpuctl_gpu_ecc_uncorrected_errors_total", "counter",
	       "Uncorrectable ECC errors since the driver loaded (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL).");
	for (g = set->gpus; g < end; g++) {
		if (!gpu_has(g, GF_ECC_UNCORRECTED))
			continue;
		metrics_gpu_sample(sb, "gpuctl_gpu_ecc_uncorrected_errors_total", g, o, NULL);
		sb_addf(sb, "%llu\n", (unsigned long long)g->ecc_uncorrected);
	}
	metrics_family(sb, "gpuctl_nvml_errors_total", "counter", "NVML queries that failed (other than not supported).");
	for (g = set->gpus; g < end; g++) {
		metrics_gpu_sample(sb, "gpuctl_nvml_errors_total", g, o, NULL);
		sb_addf(sb, "%u\n", g->errors);
	}
	metrics_family(sb, "gpuctl_mig_device_memory_used_bytes", "gauge", "Memory used on a MIG device.");
	for (g = set->gpus; g < end; g++)
		for (size_t m = 0; m < g->nmigs; m++)
			metrics_mig_sample(sb, "gpuctl_mig_device_memory_used_bytes", g, &g->migs[m], o,
				   g->migs[m].mem_used);
	metrics_family(sb, "gpuctl_mig_device_memory_total_bytes", "gauge", "Memory of a MIG device.");
	for (g = set->gpus; g < end; g++)
		for (size_t m = 0; m < g->nmigs; m++)
			metrics_mig_sample(sb, "gpuctl_mig_device_memory_total_bytes", g, &g->migs[m], o,
				   g->migs[m].mem_total);
}

/* The per-user sums; user NULL: the processes whose owner is not known, together. */
struct user_sum {
	const char *user;
	uint64_t mem;
	unsigned gpus;
	const struct gpu *last;   /* the last GPU counted in gpus */
};

/* NULL (not known) is a user of its own. */
static bool same_user(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

static void user_sample(struct strbuf *sb, const char *metric, const struct user_sum *u,
			const struct metrics_opts *o)
{
	sb_addf(sb, "%s{user=\"", metric);
	metrics_label(sb, u->user);
	sb_adds(sb, "\",hostname=\"");
	metrics_label(sb, o->hostname);
	sb_adds(sb, "\"} ");
}

static void process_metrics(struct strbuf *sb, const struct gpu_set *set, const struct metrics_opts *o)
{
	struct user_sum *users = NULL;
	size_t nusers = 0, cap = 0;
	metrics_family(sb, "gpuctl_process_gpu_memory_bytes", "gauge",
	       "GPU memory used by a process (at most --max-processes per GPU; the rest under "
	       "pid=\"other\"); user=\"\" when its owner is not known (gone, or in another PID namespace); "
	       "container, pod, namespace: its container's (named by its runtime, else its short id).");
	for (const struct gpu *g = set->gpus; g < set->gpus + set->ngpus; g++) {
		uint64_t other = 0;
		bool any_other = false;
		for (size_t j = 0; j < g->nprocs; j++) {
			const struct gpu_proc *p = &g->procs[j];
			if (!p->mem_valid)
				continue;
			size_t u = 0;
			while (u < nusers && !same_user(users[u].user, p->user))
				u++;
			if (u == nusers) {
				users = grow_array(users, &cap, nusers + 1, sizeof *users);
				users[nusers++] = (struct user_sum){p->user, 0, 0, NULL};
			}
			users[u].mem += p->used_mem;
			if (users[u].last != g) { /* count the GPU once per user */
				users[u].last = g;
				users[u].gpus++;
			}
			if (j >= o->max_procs) {
				other += p->used_mem;
				any_other = true;
				continue;
			}
			char cmd[MAX_COMMAND_LABEL + 1];
			struct strbuf x = {0};
			sb_addf(&x, "pid=\"%u\",", p->pid);
			metrics_owner_label(&x, p);
			sb_adds(&x, ",command=\"");
			metrics_label(&x, metrics_base_name(p->cmdline, cmd));
			sb_addc(&x, '"');
			if (p->slurm_job)
				sb_addf(&x, ",hpc_job=\"%u\"", p->slurm_job);
			metrics_ctr_labels(&x, p);
			metrics_sample_head(sb, "gpuctl_process_gpu_memory_bytes", g, o, x.buf, false);
			sb_addf(sb, "%llu\n", (unsigned long long)p->used_mem);
			sb_free(&x);
		}
		if (any_other) {
			metrics_gpu_sample(sb, "gpuctl_process_gpu_memory_bytes", g, o, "pid=\"other\",user=\"\",command=\"\"");
			sb_addf(sb, "%llu\n", (unsigned long long)other);
		}
	}
	metrics_family(sb, "gpuctl_user_gpu_memory_bytes", "gauge", "GPU memory used by a user's processes, all GPUs "
	       "(user=\"\": the processes whose owner is not known).");
	for (size_t u = 0; u < nusers; u++) {
		user_sample(sb, "gpuctl_user_gpu_memory_bytes", &users[u], o);
		sb_addf(sb, "%llu\n", (unsigned long long)users[u].mem);
	}
	metrics_family(sb, "gpuctl_user_gpus", "gauge", "GPUs on which a user has processes (user=\"\" as above).");
	for (size_t u = 0; u < nusers; u++) {
		user_sample(sb, "gpuctl_user_gpus", &users[u], o);
		sb_addf(sb, "%u\n", users[u].gpus);
	}
	free(users);
}

/* Who holds the GPU's lease: the one place the exporter asks the lease layer about a GPU. */
static const struct lease_info *holder(const struct leaseview *lv, const struct gpu *g)
{
	return leaseview_holder(lv, g->uuid);
}

/* The labels that name a lease's holder on every lease series (gpuctl_gpu_lease_info,
 * gpuctl_mig_device_lease_info, gpuctl_lease_idle_seconds): one spelling for all of them. */
static void holder_labels(struct strbuf *x, const struct lease_info *h)
{
	sb_adds(x, "holder=\"");
	metrics_label(x, h->user);
	sb_adds(x, "\",lease_name=\"");
	metrics_label(x, h->name ? h->name : "");
	sb_addf(x, "\",kind=\"%s\"", h->kind);
}

/* Per-process utilisation by engine, for the processes that have a sample (an idle one has none). */
static void process_util_metrics(struct strbuf *sb, const struct gpu_set *set, const struct metrics_opts *o)
{
	static const char *const engines[] = {"sm", "memory", "encoder", "decoder"};
	metrics_family(sb, "gpuctl_process_utilization_percent", "gauge",
	       "A process's share of the GPU's engines in NVML's newest sample of the last second "
	       "(the processes of gpuctl_process_gpu_memory_bytes, labelled as there).");
	for (const struct gpu *g = set->gpus; g < set->gpus + set->ngpus; g++)
		for (size_t j = 0; j < g->nprocs && j < o->max_procs; j++) {
			const struct gpu_proc *p = &g->procs[j];
			if (!p->util_valid)
				continue;
			const unsigned v[] = {p->sm_util, p->mem_util, p->enc_util, p->dec_util};
			char cmd[MAX_COMMAND_LABEL + 1];
			for (size_t e = 0; e < ARRAY_SIZE(engines); e++) {
				struct strbuf x = {0};
				sb_addf(&x, "pid=\"%u\",", p->pid);
				metrics_owner_label(&x, p);
				sb_adds(&x, ",command=\"");
				metrics_label(&x, metrics_base_name(p->cmdline, cmd));
				sb_addf(&x, "\",engine=\"%s\"", engines[e]);
				if (p->slurm_job)
					sb_addf(&x, ",hpc_job=\"%u\"", p->slurm_job);
				metrics_ctr_labels(&x, p);
				metrics_sample_head(sb, "gpuctl_process_utilization_percent", g, o, x.buf, false);
				sb_addf(sb, "%u\n", v[e]);
				sb_free(&x);
			}
		}
}

/* One sample with only the hostname label: NAME{hostname="..."} VALUE. */
static void host_sample(struct strbuf *sb, const char *metric, const struct metrics_opts *o)
{
	sb_addf(sb, "%s{hostname=\"", metric);
	metrics_label(sb, o->hostname);
	sb_adds(sb, "\"} ");
}

#define IDLE_HELP "Seconds the lease has been idle: no process of its own using its GPUs (0: in use)."
/* ---- memory shares and MIG instances (issue 23) ---- */
/* Whether a share or a MIG instance lease holds part of g (gpuctl_gpu_leased counts it). */
static bool part_leased(const struct leaseview *lv, const struct gpu *g)
{
	if (leaseview_share_gpu(lv, g->uuid))
		return true;
	for (size_t k = 0; k < g->nmigs; k++)
		if (leaseview_mig_holder(lv, g->migs[k].uuid))
			return true;
	return false;
}

/* Per GPU with shares: how many, their claims, the use outside them and the room left; per
 * share: who holds it, its claim, its processes' use, and whether that is over the claim. */
static void share_metrics(struct strbuf *sb, const struct gpu_set *set, const struct leaseview *lv,
			  const struct metrics_opts *o)
{
	static const char *const fam[][2] = {
		{"gpuctl_gpu_shares", "Memory shares (leases of part of the GPU's memory) on the GPU."},
		{"gpuctl_gpu_share_claimed_bytes",
		 "Memory the GPU's shares claim (each its claim, or its use if more)."},
		{"gpuctl_gpu_share_outside_bytes", "Memory used on a shared GPU by processes of no share."},
		{"gpuctl_gpu_share_room_bytes",
		 "Memory left to claim on a shared GPU (after the daemon's share_margin)."},
	};
	const struct gpu *g, *end = set->gpus + set->ngpus;
	/* MIG instances as lease units: who holds each instance */
	metrics_family(sb, "gpuctl_mig_device_lease_info", "gauge",
	       "Always 1: who holds a MIG instance's lease (one series per leased instance).");
	for (g = set->gpus; g < end; g++)
		for (size_t k = 0; k < g->nmigs; k++) {
			const struct lease_info *h = leaseview_mig_holder(lv, g->migs[k].uuid);
			if (!h)
				continue;
			struct strbuf x = {0};
			sb_adds(&x, "mig_uuid=\"");
			metrics_label(&x, g->migs[k].uuid);
			sb_adds(&x, "\",");
			holder_labels(&x, h);
			metrics_gpu_sample(sb, "gpuctl_mig_device_lease_info", g, o, x.buf);
			sb_adds(sb, "1\n");
			sb_free(&x);
		}
	for (size_t f = 0; f < ARRAY_SIZE(fam); f++) {
		metrics_family(sb, fam[f][0], "gauge", fam[f][1]);
		for (g = set->gpus; g < end; g++) {
			const struct share_gpu *s = leaseview_share_gpu(lv, g->uuid);
			uint64_t v[] = {s ? s->count : 0, s ? s->claimed << 20 : 0, s ? s->outside << 20 : 0,
					s ? s->room << 20 : 0};
			if (!s && f > 0)
				continue;
			metrics_gpu_sample(sb, fam[f][0], g, o, NULL);
			sb_addf(sb, "%llu\n", (unsigned long long)v[f]);
		}
	}
	static const char *const lfam[][2] = {
		{"gpuctl_share_claim_bytes", "A share's claim on the GPU (labels: who holds it)."},
		{"gpuctl_share_used_bytes", "What a share's processes use on the GPU."},
		{"gpuctl_share_over_claim", "1 when a share's processes use more than it claims."},
	};
	for (size_t f = 0; f < ARRAY_SIZE(lfam); f++) {
		metrics_family(sb, lfam[f][0], "gauge", lfam[f][1]);
		for (g = set->gpus; g < end; g++) {
			const struct lease_info *l;
			for (size_t k = 0; (l = leaseview_share(lv, g->uuid, k)); k++) {
				size_t at = 0;
				while (at < l->ngpus && strcmp(l->uuids[at], g->uuid))
					at++;
				uint64_t used = at < l->nused ? l->used[at] : 0;
				uint64_t v[] = {l->mem_mib << 20, used << 20, l->over};
				struct strbuf x = {0};
				sb_addf(&x, "lease=\"%s\",holder=\"", l->id);
				metrics_label(&x, l->user);
				sb_adds(&x, "\",lease_name=\"");
				metrics_label(&x, l->name ? l->name : "");
				sb_adds(&x, "\"");
				metrics_gpu_sample(sb, lfam[f][0], g, o, x.buf);
				sb_addf(sb, "%llu\n", (unsigned long long)v[f]);
				sb_free(&x);
			}
		}
	}
}
/* ---- end of memory shares ---- */

/* Leases and the queue, as the daemon told them. When no daemon answered (none running, or it
 * did not answer), who holds what is unknown: the families are written without samples, never
 * as "nothing leased, nobody waiting", and gpuctl_daemon_up is 0 (as a Prometheus target's up). */
static void lease_metrics(struct strbuf *sb, const struct gpu_set *set, const struct leaseview *lv,
			  const struct metrics_opts *o)
{
	const struct gpu *g, *end = set->gpus + set->ngpus;
	metrics_family(sb, "gpuctl_daemon_up", "gauge",
	       "1 when the gpuctl daemon answered this refresh; 0: the lease series are left out (unknown).");
	host_sample(sb, "gpuctl_daemon_up", o);
	sb_addf(sb, "%d\n", lv->present);
	if (!lv->present) {
		metrics_family(sb, "gpuctl_gpu_leased", "gauge", "1 when a gpuctl lease holds the GPU.");
		metrics_family(sb, "gpuctl_gpu_lease_info", "gauge", "Always 1: who holds the GPU's lease.");
		metrics_family(sb, "gpuctl_lease_queue_length", "gauge", "Requests waiting for GPUs.");
		metrics_family(sb, "gpuctl_lease_queue_oldest_wait_seconds", "gauge", "How long the oldest waiter has waited.");
		metrics_family(sb, "gpuctl_lease_idle_seconds", "gauge", IDLE_HELP); /* issue 24 */
		return;
	}
	metrics_family(sb, "gpuctl_gpu_leased", "gauge", "1 when a gpuctl lease holds the GPU.");
	for (g = set->gpus; g < end; g++) {
		metrics_gpu_sample(sb, "gpuctl_gpu_leased", g, o, NULL);
		sb_addf(sb, "%d\n", holder(lv, g) || leaseview_held(lv, g->uuid) || part_leased(lv, g));
	}
	metrics_family(sb, "gpuctl_gpu_lease_info", "gauge", "Always 1: who holds the GPU's lease.");
	for (g = set->gpus; g < end; g++) {
		const struct lease_info *h = holder(lv, g);
		if (!h)
			continue;
		struct strbuf x = {0};
		holder_labels(&x, h);
		metrics_gpu_sample(sb, "gpuctl_gpu_lease_info", g, o, x.buf);
		sb_adds(sb, "1\n");
		sb_free(&x);
	}
	/* -- idle leases (issue 24): per GPU of a lease the daemon looks at, labelled as
	 * gpuctl_gpu_lease_info -- */
	metrics_family(sb, "gpuctl_lease_idle_seconds", "gauge", IDLE_HELP);
	for (g = set->gpus; g < end; g++) {
		const struct lease_info *h = holder(lv, g);
		long long idle = h ? leaseview_idle_seconds(h) : -1;
		if (idle < 0)
			continue;
		struct strbuf x = {0};
		holder_labels(&x, h);
		metrics_gpu_sample(sb, "gpuctl_lease_idle_seconds", g, o, x.buf);
		sb_addf(sb, "%lld\n", idle);
		sb_free(&x);
	}
	/* -- end of idle leases -- */
	time_t now = time(NULL), oldest = 0;
	for (size_t i = 0; i < lv->nqueue; i++)
		if (!oldest || lv->queue[i].since < oldest)
			oldest = lv->queue[i].since;
	for (size_t i = 0; i < lv->nsums; i++) /* waiters the daemon counted, not listed */
		if (!oldest || lv->sums[i].oldest < oldest)
			oldest = lv->sums[i].oldest;
	metrics_family(sb, "gpuctl_lease_queue_length", "gauge", "Requests waiting for GPUs.");
	host_sample(sb, "gpuctl_lease_queue_length", o);
	sb_addf(sb, "%zu\n", lv->nqueue + lv->nsummed);
	metrics_family(sb, "gpuctl_lease_queue_oldest_wait_seconds", "gauge", "How long the oldest waiter has waited.");
	host_sample(sb, "gpuctl_lease_queue_oldest_wait_seconds", o);
	sb_addf(sb, "%lld\n", oldest ? (long long)(now - oldest) : 0LL);
	share_metrics(sb, set, lv, o); /* memory shares (issue 23) */
	if (!strcmp(lv->guard, "acl")) { /* the device guard (issue 25): only where it is on */
		metrics_family(sb, "gpuctl_guard_binding", "gauge", "1 when leases bind: the daemon's device guard "
		       "guards every device node; 0: it is on but cannot guard some (gpuctl doctor says which).");
		host_sample(sb, "gpuctl_guard_binding", o);
		sb_addf(sb, "%d\n", leaseview_binding(lv));
	}
}

void metrics_render(struct strbuf *sb, const struct gpu_set *set, const struct leaseview *lv,
		    const struct metrics_opts *o)
{
	gpu_metrics(sb, set, o);
	process_metrics(sb, set, o);
	process_util_metrics(sb, set, o);
	lease_metrics(sb, set, lv, o);
	metrics_family(sb, "gpuctl_exporter_refreshes_total", "counter", "NVML refreshes (shared by the scrapes of a cache period).");
	sb_addf(sb, "gpuctl_exporter_refreshes_total %llu\n", o->refreshes);
	metrics_family(sb, "gpuctl_exporter_refresh_seconds", "gauge", "How long the last refresh took.");
	sb_addf(sb, "gpuctl_exporter_refresh_seconds %.6f\n", o->refresh_seconds);
	metrics_family(sb, "gpuctl_exporter_scrape_errors_total", "counter",
	       "Refreshes that left a collector's series out: leases when no gpuctl daemon answered.");
	sb_addf(sb, "gpuctl_exporter_scrape_errors_total{collector=\"leases\"} %llu\n", o->lease_errors);
}
