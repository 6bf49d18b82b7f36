/* status-json.c: the document of `gpuctl status --json`, and the keys --details adds (see
 * status-json.h). A value the driver or /proc cannot give is null, never 0. */
#include "base/json.h"
#include "view/container.h"
#include "view/status-json.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A measured value, or null when the driver could not give it (its validity bit f is clear). */
static void measured(struct json *j, const struct gpu *g, enum gpu_field f, const char *key,
		     unsigned long long v)
{
	if (gpu_has(g, f))
		json_uint(j, key, v);
	else
		json_null(j, key);
}

static void json_watts(struct json *j, const struct gpu *g, enum gpu_field f, const char *key,
		       unsigned mw)
{
	if (gpu_has(g, f))
		json_num(j, key, mw / 1000.0, 3);
	else
		json_null(j, key);
}

static void json_mode(struct json *j, const struct gpu *g, enum gpu_field f, const char *key,
		      const char *name)
{
	json_str(j, key, gpu_has(g, f) ? name : NULL);
}

/* Per-process utilisation: NVML's newest sample from the last second; null without one. */
static void json_proc_util(struct json *j, const struct gpu_proc *p)
{
	static const char *const keys[] = {"utilization_sm_pct", "utilization_memory_pct",
					   "utilization_encoder_pct", "utilization_decoder_pct"};
	const unsigned v[] = {p->sm_util, p->mem_util, p->enc_util, p->dec_util};
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		if (p->util_valid)
			json_uint(j, keys[i], v[i]);
		else
			json_null(j, keys[i]);
	}
}

/* The clock event reasons as nvidia-smi's clocks_event_reasons.* fields name them. */
static const struct { uint64_t bit; const char *name; } reasons[] = {
	{GPU_EVENT_GPU_IDLE, "gpu_idle"},
	{GPU_EVENT_APPLICATIONS_CLOCKS, "applications_clocks_setting"},
	{GPU_EVENT_SW_POWER_CAP, "sw_power_cap"},
	{GPU_EVENT_HW_SLOWDOWN, "hw_slowdown"},
	{GPU_EVENT_SYNC_BOOST, "sync_boost"},
	{GPU_EVENT_SW_THERMAL, "sw_thermal_slowdown"},
	{GPU_EVENT_HW_THERMAL, "hw_thermal_slowdown"},
	{GPU_EVENT_HW_POWER_BRAKE, "hw_power_brake_slowdown"},
	{GPU_EVENT_DISPLAY_CLOCK, "display_clock_setting"},
};

static void gpu_details(struct json *j, const struct gpu *g)
{
	measured(j, g, GF_FAN, "fan_pct", g->fan);
	json_obj(j, "clocks_mhz");
	measured(j, g, GF_CLK_GFX, "graphics", g->clk_gfx);
	measured(j, g, GF_CLK_SM, "sm", g->clk_sm);
	measured(j, g, GF_CLK_MEM, "memory", g->clk_mem);
	measured(j, g, GF_CLK_VIDEO, "video", g->clk_video);
	json_end_obj(j);
	json_obj(j, "clocks_max_mhz");
	measured(j, g, GF_CLK_MAX_GFX, "graphics", g->clk_max_gfx);
	measured(j, g, GF_CLK_MAX_SM, "sm", g->clk_max_sm);
	measured(j, g, GF_CLK_MAX_MEM, "memory", g->clk_max_mem);
	measured(j, g, GF_CLK_MAX_VIDEO, "video", g->clk_max_video);
	json_end_obj(j);
	measured(j, g, GF_UTIL_ENC, "utilization_encoder_pct", g->util_enc);
	measured(j, g, GF_UTIL_DEC, "utilization_decoder_pct", g->util_dec);
	measured(j, g, GF_PCIE_GEN, "pcie_generation", g->pcie_gen);
	measured(j, g, GF_PCIE_WIDTH, "pcie_width", g->pcie_width);
	measured(j, g, GF_PCIE_RX, "pcie_rx_kb_s", g->pcie_rx_kbs);
	measured(j, g, GF_PCIE_TX, "pcie_tx_kb_s", g->pcie_tx_kbs);
	measured(j, g, GF_PSTATE, "performance_state", g->pstate);
	if (gpu_has(g, GF_EVENTS_ACTIVE)) {
		json_arr(j, "clocks_event_reasons");
		for (size_t i = 0; i < ARRAY_SIZE(reasons); i++)
			if (g->events_active & reasons[i].bit)
				json_str(j, NULL, reasons[i].name);
		json_end_arr(j);
	} else {
		json_null(j, "clocks_event_reasons");
	}
	measured(j, g, GF_TEMP_SLOWDOWN, "temperature_slowdown_c", g->temp_slowdown);
	measured(j, g, GF_TEMP_SHUTDOWN, "temperature_shutdown_c", g->temp_shutdown);
}

static void proc_details(struct json *j, const struct gpu_proc *p)
{
	if (!p->stat_valid) {
		const char *const keys[] = {"parent_pid", "elapsed_s", "cpu_time_s", "cpu_pct", "rss_mib"};
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
			json_null(j, keys[i]);
		return;
	}
	json_int(j, "parent_pid", p->ppid);
	json_num(j, "elapsed_s", p->elapsed, 2);
	json_num(j, "cpu_time_s", p->cpu_time, 2);
	if (p->cpu_valid)
		json_num(j, "cpu_pct", p->cpu_pct, 1);
	else
		json_null(j, "cpu_pct");
	json_uint(j, "rss_mib", mib(p->rss));
}

/* Who holds a lease, the same keys wherever status's JSON names one (a GPU's, a MIG device's, a
 * share's). */
static void json_holder(struct json *j, const struct lease_info *h)
{
	json_str(j, "id", h->id);
	json_str(j, "user", h->user);
	json_uint(j, "uid", h->uid);
	json_int(j, "pid", h->pid);
	json_str(j, "kind", h->kind);
	json_str(j, "name", h->name);
}

/* MIG instances (issue 23): "lease" of a MIG device, when a daemon answered: null, or its
 * holder. */
static void json_mig_lease(struct json *j, const struct lease_info *h)
{
	if (!h) {
		json_null(j, "lease");
		return;
	}
	json_obj(j, "lease");
	json_holder(j, h);
	json_end_obj(j);
}

/* memory shares (issue 23): "shares": null, or the GPU's shares as the daemon counts them (MiB:
 * claimed, used outside them, left to claim) and each share (who, its claim, its use). */
static void json_shares(struct json *j, const struct status_json_opts *o, const struct gpu *g)
{
	if (!o->leases || !o->leases->present)
		return; /* (no daemon answered: no key, as for mig_devices[].lease) */
	const struct share_gpu *s = leaseview_share_gpu(o->leases, g->uuid);
	if (!s) {
		json_null(j, "shares");
		return;
	}
	json_obj(j, "shares");
	json_uint(j, "count", s->count);
	json_uint(j, "claimed_mib", s->claimed);
	json_uint(j, "outside_mib", s->outside);
	json_uint(j, "room_mib", s->room);
	json_arr(j, "leases");
	const struct lease_info *l;
	for (size_t k = 0; (l = leaseview_share(o->leases, g->uuid, k)); k++) {
		json_obj(j, NULL);
		json_holder(j, l);
		json_uint(j, "mem_mib", l->mem_mib);
		json_uint(j, "used_mib", leaseview_share_used(l, g->uuid));
		json_bool(j, "over_claim", l->over);
		json_end_obj(j);
	}
	json_end_arr(j);
	json_end_obj(j);
}

static void gpu_json(struct json *j, const struct status_json_opts *o, const struct gpu *g)
{
	json_obj(j, NULL);
	json_uint(j, "index", g->index);
	json_str(j, "uuid", g->uuid[0] ? g->uuid : NULL);
	json_str(j, "name", g->name[0] ? g->name : NULL);
	json_str(j, "pci_bus_id", g->pci_bus_id[0] ? g->pci_bus_id : NULL);
	measured(j, g, GF_MEM_TOTAL, "memory_total_mib", mib(g->mem_total));
	measured(j, g, GF_MEM_USED, "memory_used_mib", mib(g->mem_used));
	measured(j, g, GF_MEM_FREE, "memory_free_mib", mib(g->mem_free));
	measured(j, g, GF_MEM_RESERVED, "memory_reserved_mib", mib(g->mem_reserved));
	measured(j, g, GF_UTIL_GPU, "utilization_gpu_pct", g->util_gpu);
	measured(j, g, GF_UTIL_MEM, "utilization_memory_pct", g->util_mem);
	measured(j, g, GF_TEMP, "temperature_c", g->temp);
	json_watts(j, g, GF_POWER, "power_w", g->power_mw);
	json_watts(j, g, GF_POWER_LIMIT, "power_limit_w", g->power_limit_mw);
	json_mode(j, g, GF_COMPUTE_MODE, "compute_mode", compute_mode_name(g->compute_mode));
	json_mode(j, g, GF_MIG_MODE, "mig_mode", g->mig_mode ? "Enabled" : "Disabled");
	json_bool(j, "lost", g->lost);
	json_str(j, "error", g->error);
	if (g->guarded) /* the device guard (issue 25): not this user's to open (values: the daemon's) */
		json_str(j, "no_access", "guard");
	if (o->details)
		gpu_details(j, g);
	const struct lease_info *h = leaseview_holder(o->leases, g->uuid);
	if (h) {
		json_obj(j, "lease");
		json_holder(j, h);
		json_int(j, "since", (long long)h->since);
		long long idle = leaseview_idle_seconds(h); /* idle leases (issue 24) */
		if (idle >= 0)
			json_int(j, "idle_seconds", idle);
		else
			json_null(j, "idle_seconds");
		json_end_obj(j);
	} else {
		json_null(j, "lease");
	}
	json_shares(j, o, g); /* memory shares (issue 23) */
	if (!o->no_procs) {
		if (gpu_has(g, GF_PROCESSES)) {
			json_arr(j, "processes");
			for (size_t i = 0; i < g->nprocs; i++) {
				const struct gpu_proc *p = &g->procs[i];
				json_obj(j, NULL);
				json_uint(j, "pid", p->pid);
				json_str(j, "user", p->user);
				if (p->uid_valid)
					json_uint(j, "uid", p->uid);
				else
					json_null(j, "uid");
				json_str(j, "command", p->cmdline);
				if (p->slurm_job)
					json_uint(j, "slurm_job_id", p->slurm_job);
				else
					json_null(j, "slurm_job_id");
				ctr_json(j, p);
				if (p->mem_valid)
					json_uint(j, "used_memory_mib", mib(p->used_mem));
				else
					json_null(j, "used_memory_mib");
				json_proc_util(j, p);
				json_str(j, "type", proc_type_name(p->type));
				if (p->gi != NO_INSTANCE) {
					json_uint(j, "gpu_instance_id", p->gi);
					json_uint(j, "compute_instance_id", p->ci);
				}
				if (o->details)
					proc_details(j, p);
				json_end_obj(j);
			}
			json_end_arr(j);
		} else {
			json_null(j, "processes");
		}
	}
	if (gpu_has(g, GF_MIG_MODE) && g->mig_mode) {
		json_arr(j, "mig_devices");
		for (size_t i = 0; i < g->nmigs; i++) {
			const struct mig_dev *m = &g->migs[i];
			json_obj(j, NULL);
			json_uint(j, "index", m->slot);
			json_str(j, "uuid", m->uuid[0] ? m->uuid : NULL);
			if (o->leases && o->leases->present) /* MIG instances as lease units (issue 23) */
				json_mig_lease(j, leaseview_mig_holder(o->leases, m->uuid));
			json_str(j, "name", m->name[0] ? m->name : NULL);
			if (m->gi != NO_INSTANCE)
				json_uint(j, "gpu_instance_id", m->gi);
			else
				json_null(j, "gpu_instance_id");
			if (m->ci != NO_INSTANCE)
				json_uint(j, "compute_instance_id", m->ci);
			else
				json_null(j, "compute_instance_id");
			if (m->mem_valid) {
				json_uint(j, "memory_total_mib", mib(m->mem_total));
				json_uint(j, "memory_used_mib", mib(m->mem_used));
			} else {
				json_null(j, "memory_total_mib");
				json_null(j, "memory_used_mib");
			}
			json_end_obj(j);
		}
		json_end_arr(j);
	}
	json_end_obj(j);
}

/* "hostname", and "queue": the lease requests waiting, in order (empty without a daemon). */
static void queue(struct json *j, const struct leaseview *v)
{
	char host[256];
	json_str(j, "hostname", gethostname(host, sizeof host) == 0 ? host : NULL);
	json_arr(j, "queue");
	for (size_t i = 0; i < v->nqueue; i++) {
		const struct waiter_info *w = &v->queue[i];
		json_obj(j, NULL);
		json_uint(j, "position", w->position);
		json_str(j, "user", w->user);
		json_uint(j, "uid", w->uid);
		json_int(j, "pid", w->pid);
		json_uint(j, "count", w->count);
		json_int(j, "since", (long long)w->since);
		json_str(j, "state", w->state);
		json_str(j, "name", w->name);
		json_end_obj(j);
	}
	json_end_arr(j);
	/* Waiters the daemon counted instead of listing: another user's beyond the queue's head. */
	json_arr(j, "queue_counted");
	for (size_t i = 0; i < v->nsums; i++) {
		json_obj(j, NULL);
		json_str(j, "user", v->sums[i].user);
		json_uint(j, "uid", v->sums[i].uid);
		json_uint(j, "count", v->sums[i].count);
		json_uint(j, "first_position", v->sums[i].first);
		json_int(j, "oldest_since", (long long)v->sums[i].oldest);
		json_end_obj(j);
	}
	json_end_arr(j);
}

void status_json(struct strbuf *sb, const struct gpu_set *set, const struct status_json_opts *o)
{
	struct json j;
	json_init(&j, sb, o->pretty);
	json_obj(&j, NULL);
	json_str(&j, "driver_version", set->has_driver_version ? set->driver_version : NULL);
	if (set->cuda_version) {
		char v[32];
		snprintf(v, sizeof v, "%d.%d", set->cuda_version / 1000, set->cuda_version % 1000 / 10);
		json_str(&j, "cuda_driver_version", v);
	} else {
		json_null(&j, "cuda_driver_version");
	}
	json_arr(&j, "gpus");
	for (size_t i = 0; i < set->ngpus; i++)
		if (set->gpus[i].selected)
			gpu_json(&j, o, &set->gpus[i]);
	json_end_arr(&j);
	if (o->details)
		queue(&j, o->leases);
	char note[320];
	json_str(&j, "processes_unmapped", ctr_pidns_note(set, note, sizeof note));
	if (o->leases_missing) /* then each "lease": null means unknown, not free */
		json_str(&j, "leases_error", o->leases_missing);
	if (o->leases && !strcmp(o->leases->guard, "acl")) { /* the device guard (issue 25) */
		json_obj(&j, "guard");
		json_str(&j, "mode", o->leases->guard);
		json_bool(&j, "binding", leaseview_binding(o->leases));
		json_str(&j, "state", o->leases->guard_state);
		json_end_obj(&j);
	}
	json_end_obj(&j);
	sb_addc(sb, '\n');
}
