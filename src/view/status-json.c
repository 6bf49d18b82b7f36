/* status-json.c: the keys of `gpuctl status --json --details` (see status-json.h). A value the
 * driver or /proc cannot give is null, never 0. */
#include "view/status-json.h"

#include <unistd.h>

static void measured(struct json *j, const struct gpu *g, enum gpu_field f, const char *key,
		     unsigned long long v)
{
	if (gpu_has(g, f))
		json_uint(j, key, v);
	else
		json_null(j, key);
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

void status_json_gpu_details(struct json *j, const struct gpu *g)
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

void status_json_proc_details(struct json *j, const struct gpu_proc *p)
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

void status_json_queue(struct json *j, const struct leaseview *v)
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
}
