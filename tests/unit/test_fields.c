/* test_fields.c: the nvidia-smi fields beyond the basics, byte for byte as real captures print
 * them (header, unit, value format, [N/A] and the other tokens), the MiB rule, the refresh groups
 * each field needs, and the -L list. */
#include "machine/gpu.h"
#include "view/query.h"
#include "tap.h"
#include "base/util.h"

#include <stdlib.h>

static void valid(struct gpu *g, enum gpu_field f)
{
	g->valid |= 1ULL << f;
}

/* One H200 as the 590.48.01 captures show it, idle, and one GeForce-like GPU without the HBM and
 * server fields, whose power query was refused. */
static struct gpu_set *h200_set(const char *driver)
{
	struct gpu_set *s = xcalloc(1, sizeof *s);
	s->ngpus = 2;
	s->gpus = xcalloc(2, sizeof *s->gpus);
	snprintf(s->driver_version, sizeof s->driver_version, "%s", driver);
	s->has_driver_version = true;
	struct gpu *g = &s->gpus[0];
	g->selected = true;
	snprintf(g->name, sizeof g->name, "NVIDIA H200");
	snprintf(g->uuid, sizeof g->uuid, "GPU-00000000-0000-0000-0000-000000000000");
	snprintf(g->serial, sizeof g->serial, "0000000000000");
	snprintf(g->vbios, sizeof g->vbios, "96.00.A5.00.03");
	g->pstate = 0, g->events_active = 0x1, g->events_supported = 0x1FF;
	g->pcie_gen = g->pcie_gen_max = g->pcie_gen_gpu_max = 5, g->pcie_width = g->pcie_width_max = 16;
	g->power_mgmt_limit_mw = 700000, g->power_limit_mw = 690000, g->power_default_mw = 700000;
	g->power_min_mw = 200000, g->power_max_mw = 700000;
	g->clk_max_gfx = g->clk_max_sm = 1980, g->clk_max_mem = 3201, g->clk_video = 1545;
	g->util_enc = g->util_dec = 0, g->temp_mem = 32, g->display_mode = 0, g->display_active = 0;
	g->accounting = 0, g->pci_subsys_id = 0x18B010DE;
	g->mem_reserved = (613ULL << 20) + (1ULL << 18);          /* 613.25 MiB */
	g->mem_free = (110795ULL << 20) + (1ULL << 19);           /* 110795.5 MiB */
	static const enum gpu_field have[] = {
		GF_SERIAL, GF_VBIOS, GF_PSTATE, GF_EVENTS_ACTIVE, GF_EVENTS_SUPPORTED, GF_PCIE_GEN,
		GF_PCIE_GEN_MAX, GF_PCIE_GEN_GPU_MAX, GF_PCIE_WIDTH, GF_PCIE_WIDTH_MAX, GF_POWER_MGMT_LIMIT,
		GF_POWER_LIMIT, GF_POWER_DEFAULT_LIMIT, GF_POWER_MIN_LIMIT, GF_POWER_MAX_LIMIT,
		GF_CLK_MAX_GFX, GF_CLK_MAX_SM, GF_CLK_MAX_MEM, GF_CLK_VIDEO, GF_UTIL_ENC, GF_UTIL_DEC,
		GF_TEMP_MEM, GF_DISPLAY_MODE, GF_DISPLAY_ACTIVE, GF_ACCOUNTING, GF_PCI_SUBSYS_ID,
		GF_MEM_RESERVED, GF_MEM_FREE,
	};
	for (size_t i = 0; i < ARRAY_SIZE(have); i++)
		valid(g, have[i]);
	g = &s->gpus[1];
	g->index = 1;
	g->selected = true;
	snprintf(g->name, sizeof g->name, "NVIDIA GeForce RTX 4080 SUPER");
	g->pstate = 8, g->events_active = 0x4;
	valid(g, GF_PSTATE);
	valid(g, GF_EVENTS_ACTIVE);
	g->why[GF_POWER_MGMT_LIMIT] = "Insufficient Permissions";
	g->why[GF_FAN] = "Unknown Error";
	return s;
}

static char *run(struct gpu_set *s, const char *fields, unsigned flags)
{
	struct gpu_error err;
	struct query *q = query_parse(Q_GPU, fields, &err);
	if (!q)
		return xstrdup(err.msg);
	struct strbuf sb = {0};
	if (!(flags & QF_NOHEADER))
		query_header(&sb, q);
	query_rows(&sb, q, s, flags, "2026/07/03 22:11:09.916");
	query_free(q);
	return sb.buf;
}

void test_mib(void)
{
	static const struct { uint64_t bytes, mib; } c[] = {
		{0, 0}, {1, 1}, {1ULL << 20, 1}, {(1ULL << 20) + 1, 2}, {(2ULL << 20) - 1, 2},
		{501481472, 479},                         /* 478.25 MiB: nvidia-smi prints 479 MiB */
		{(613ULL << 20) + (1ULL << 18), 614},     /* the H200's reserved memory */
		{81559ULL << 20, 81559}, {~0ULL, (~0ULL >> 20) + 1},
	};
	for (size_t i = 0; i < ARRAY_SIZE(c); i++)
		CHECK(mib(c[i].bytes) == c[i].mib);
}

void test_fields(void)
{
	struct gpu_set *s = h200_set("590.48.01");
	static const struct { const char *fields; unsigned flags; const char *want; } c[] = {
		{"pstate,clocks_event_reasons.supported,clocks_event_reasons.active", 0,
		 "pstate, clocks_event_reasons.supported, clocks_event_reasons.active\n"
		 "P0, 0x00000000000001FF, 0x0000000000000001\n"
		 "P8, [N/A], 0x0000000000000004\n"},
		{"clocks_event_reasons.gpu_idle,clocks_event_reasons.applications_clocks_setting,"
		 "clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,"
		 "clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown,"
		 "clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.sync_boost", QF_NOHEADER,
		 "Active, Not Active, Not Active, Not Active, Not Active, Not Active, Not Active, Not Active\n"
		 "Not Active, Not Active, Active, Not Active, Not Active, Not Active, Not Active, Not Active\n"},
		/* The old names are accepted; the header prints the new ones, as 535.113+ does. */
		{"clocks_throttle_reasons.supported,clocks_throttle_reasons.sw_power_cap", 0,
		 "clocks_event_reasons.supported, clocks_event_reasons.sw_power_cap\n"
		 "0x00000000000001FF, Not Active\n[N/A], Active\n"},
		{"pcie.link.gen.current,pcie.link.gen.gpucurrent,pcie.link.gen.max,pcie.link.gen.gpumax,"
		 "pcie.link.width.current,pcie.link.width.max", 0,
		 "pcie.link.gen.current, pcie.link.gen.gpucurrent, pcie.link.gen.max, pcie.link.gen.gpumax, "
		 "pcie.link.width.current, pcie.link.width.max\n5, 5, 5, 5, 16, 16\n"
		 "[N/A], [N/A], [N/A], [N/A], [N/A], [N/A]\n"},
		/* power.limit is the requested limit, enforced.power.limit the one in force. */
		{"power.limit,enforced.power.limit,power.default_limit,power.min_limit,power.max_limit", 0,
		 "power.limit [W], enforced.power.limit [W], power.default_limit [W], power.min_limit [W], "
		 "power.max_limit [W]\n700.00 W, 690.00 W, 700.00 W, 200.00 W, 700.00 W\n"
		 "[Insufficient Permissions], [N/A], [N/A], [N/A], [N/A]\n"},
		{"gpu.power.requested_limit,gpu.power.current_limit,gpu.power.default_limit,"
		 "gpu.power.min_limit,gpu.power.max_limit", QF_NOUNITS,
		 "power.limit [W], enforced.power.limit [W], power.default_limit [W], power.min_limit [W], "
		 "power.max_limit [W]\n700.00, 690.00, 700.00, 200.00, 700.00\n"
		 "[Insufficient Permissions], [N/A], [N/A], [N/A], [N/A]\n"},
		{"clocks.max.sm,clocks.max.gr,clocks.max.mem,clocks.video", 0,
		 "clocks.max.sm [MHz], clocks.max.graphics [MHz], clocks.max.memory [MHz], "
		 "clocks.current.video [MHz]\n1980 MHz, 1980 MHz, 3201 MHz, 1545 MHz\n"
		 "[N/A], [N/A], [N/A], [N/A]\n"},
		{"utilization.encoder,utilization.decoder,temperature.memory,fan.speed", 0,
		 "utilization.encoder [%], utilization.decoder [%], temperature.memory, fan.speed [%]\n"
		 "0 %, 0 %, 32, [N/A]\n[N/A], [N/A], N/A, [Unknown Error]\n"},
		{"serial,gpu_serial,vbios_version,pci.sub_device_id", 0,
		 "serial, serial, vbios_version, pci.sub_device_id\n"
		 "0000000000000, 0000000000000, 96.00.A5.00.03, 0x18B010DE\n[N/A], [N/A], [N/A], [N/A]\n"},
		{"display_mode,display_attached,display_active,accounting.mode", QF_NOHEADER,
		 "[Requested functionality has been deprecated], No, Disabled, Disabled\n"
		 "[Requested functionality has been deprecated], [N/A], [N/A], [N/A]\n"},
		{"memory.reserved,memory.free", QF_NOUNITS | QF_NOHEADER, "614, 110796\n[N/A], [N/A]\n"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		char *got = run(s, c[i].fields, c[i].flags);
		CHECK_STR(got, c[i].want);
		free(got);
	}
	/* Before 590, display_mode is the driver's answer. */
	snprintf(s->driver_version, sizeof s->driver_version, "535.154.05");
	char *got = run(s, "display_mode", QF_NOHEADER);
	CHECK_STR(got, "Disabled\n[N/A]\n");
	free(got);

	/* Each field asks only for the NVML calls behind it. */
	static const struct { const char *fields; unsigned need; } n[] = {
		{"index,memory.used,utilization.gpu,power.draw,enforced.power.limit", 0},
		{"power.limit", REFRESH_POWER_MGMT},
		{"serial,clocks.max.sm,power.max_limit,pcie.link.gen.max", REFRESH_STATIC},
		{"pstate,clocks_throttle_reasons.hw_slowdown", REFRESH_PERF},
		{"utilization.encoder", REFRESH_ENGINES},
		{"temperature.memory", REFRESH_MEM_TEMP},
		{"pcie.link.width.current", REFRESH_PCIE},
		{"accounting.mode,display_active", REFRESH_MODES},
		{"clocks.video,fan.speed", REFRESH_CLOCKS | REFRESH_FAN},
	};
	for (size_t i = 0; i < ARRAY_SIZE(n); i++) {
		struct gpu_error err;
		struct query *q = query_parse(Q_GPU, n[i].fields, &err);
		CHECK(q && query_refresh_needs(q) == n[i].need);
		query_free(q);
	}
	free(s->gpus);
	free(s);
}

void test_list_gpus(void)
{
	struct gpu_set *s = h200_set("590.48.01");
	struct gpu *g = &s->gpus[0];
	g->nmigs = 3;
	g->migs = xcalloc(3, sizeof *g->migs);
	static const char *const names[] = {"NVIDIA H200 MIG 3g.71gb", "NVIDIA H200 MIG 1c.3g.71gb",
					    "NVIDIA H200 MIG 1g.18gb"};
	for (unsigned i = 0; i < 3; i++) {
		g->migs[i].slot = i;
		snprintf(g->migs[i].name, sizeof g->migs[i].name, "%s", names[i]);
		snprintf(g->migs[i].uuid, sizeof g->migs[i].uuid, "MIG-%08u-0000-0000-0000-000000000000", i);
	}
	snprintf(s->gpus[1].uuid, sizeof s->gpus[1].uuid, "GPU-11111111-0000-0000-0000-000000000000");
	struct strbuf sb = {0};
	query_list_gpus(&sb, s);
	CHECK_STR(sb.buf,
		  "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
		  "  MIG 3g.71gb     Device  0: (UUID: MIG-00000000-0000-0000-0000-000000000000)\n"
		  "  MIG 1c.3g.71gb  Device  1: (UUID: MIG-00000001-0000-0000-0000-000000000000)\n"
		  "  MIG 1g.18gb     Device  2: (UUID: MIG-00000002-0000-0000-0000-000000000000)\n"
		  "GPU 1: NVIDIA GeForce RTX 4080 SUPER (UUID: GPU-11111111-0000-0000-0000-000000000000)\n");
	sb_free(&sb);
	free(g->migs);
	free(s->gpus);
	free(s);
}
