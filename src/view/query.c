/* query.c: nvidia-smi's --query-gpu, --query-compute-apps and -L, so that scripts written for
 * nvidia-smi work unchanged: the same field names and aliases, header text (the canonical name and
 * its unit in brackets, kept under nounits as nvidia-smi does), ", " separators, value formats and
 * units, and the tokens nvidia-smi prints for what the driver cannot give ("[N/A]", the driver's
 * own words in brackets, a bare "N/A" for temperature.memory). Formats follow real captures
 * (shared reference: nvidia-smi-fields.md). Process names are not quoted, like nvidia-smi's. */
#include "view/query.h"
#include "view/query-x.h"
#include "base/escape.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How a field's value is written. */
enum fmt {
	V_TIMESTAMP, V_DRIVER, V_COUNT, V_INDEX, V_UUID, V_NAME, V_BUS_ID,
	V_UINT,          /* unsigned at off */
	V_MIB,           /* bytes (uint64_t at off) in MiB, rounded up like nvidia-smi */
	V_WATTS,         /* milliwatts at off, as watts with 2 decimals */
	V_HEX32,         /* 0x%08X */
	V_HEX64,         /* 0x + 16 upper-case hex digits (uint64_t at off) */
	V_ENABLED,       /* Enabled / Disabled */
	V_PSTATE,        /* P0 .. P15 */
	V_EVENT,         /* Active / Not Active: bit `arg` of the active clock event reasons */
	V_STRING,        /* char array at off */
	V_COMPUTE_MODE, V_CC, V_TEMP_MEM, V_DISPLAY_MODE, V_DISPLAY_ATTACHED,
	V_PID, V_PROC_NAME, V_PROC_MEM,
};

enum { NO_BIT = -1 };

/* The texts are kept in the entry, not pointed to: a table without pointers is not relocated at
 * start-up, so its pages stay the file's, read-only and shared (issue 22). */
struct field {
	char names[104];         /* canonical first, then aliases; space separated */
	unsigned kinds;          /* 1 << Q_GPU | 1 << Q_APPS */
	char unit[8];            /* shown in the header and after values; "" for none */
	enum fmt fmt;
	int bit;                 /* the gpu_field that says whether the value is there, or NO_BIT */
	size_t off;              /* offsetof(struct gpu, ...) for the value formats */
	unsigned long long arg;
	unsigned needs;          /* REFRESH_* */
	char help[72];
};

#define G (1U << Q_GPU)
#define A (1U << Q_APPS)
static const struct field fields[] = {
	{"timestamp", G | A, "", V_TIMESTAMP, NO_BIT, 0, 0, 0, "time of the query, YYYY/MM/DD HH:MM:SS.mmm"},
	{"driver_version", G, "", V_DRIVER, NO_BIT, 0, 0, 0, "version of the installed NVIDIA driver"},
	{"count", G, "", V_COUNT, NO_BIT, 0, 0, 0, "number of GPUs in the system"},
	{"index", G, "", V_INDEX, NO_BIT, 0, 0, 0, "NVML (nvidia-smi) index of the GPU"},
	{"uuid gpu_uuid", G, "", V_UUID, NO_BIT, 0, 0, 0, "globally unique GPU id"},
	{"gpu_uuid", A, "", V_UUID, NO_BIT, 0, 0, 0, "UUID of the GPU the process runs on"},
	{"name gpu_name", G, "", V_NAME, NO_BIT, 0, 0, 0, "product name"},
	{"gpu_name", A, "", V_NAME, NO_BIT, 0, 0, 0, "product name of the GPU the process runs on"},
	{"serial gpu_serial", G, "", V_STRING, GF_SERIAL, offsetof(struct gpu, serial), 0, REFRESH_STATIC,
	 "board serial number"},
	{"gpu_serial", A, "", V_STRING, GF_SERIAL, offsetof(struct gpu, serial), 0, REFRESH_STATIC,
	 "board serial number of the GPU the process runs on"},
	{"pci.bus_id gpu_bus_id", G, "", V_BUS_ID, NO_BIT, 0, 0, 0, "PCI bus id, domain:bus:device.function"},
	{"gpu_bus_id", A, "", V_BUS_ID, NO_BIT, 0, 0, 0, "PCI bus id of the GPU the process runs on"},
	{"pci.device_id", G, "", V_HEX32, GF_PCI_DEVICE_ID, offsetof(struct gpu, pci_device_id), 0, 0,
	 "PCI device and vendor id"},
	{"pci.sub_device_id", G, "", V_HEX32, GF_PCI_SUBSYS_ID, offsetof(struct gpu, pci_subsys_id), 0, 0,
	 "PCI subsystem id"},
	{"vbios_version", G, "", V_STRING, GF_VBIOS, offsetof(struct gpu, vbios), 0, REFRESH_STATIC,
	 "VBIOS version"},
	{"display_mode", G, "", V_DISPLAY_MODE, GF_DISPLAY_MODE, 0, 0, REFRESH_STATIC,
	 "whether a display is connected (deprecated by drivers 590 and later)"},
	{"display_attached", G, "", V_DISPLAY_ATTACHED, GF_DISPLAY_MODE, 0, 0, REFRESH_STATIC,
	 "Yes when a display is connected"},
	{"display_active", G, "", V_ENABLED, GF_DISPLAY_ACTIVE, offsetof(struct gpu, display_active), 0,
	 REFRESH_MODES, "whether a display is initialised on the GPU"},
	{"persistence_mode", G, "", V_ENABLED, GF_PERSISTENCE, offsetof(struct gpu, persistence), 0,
	 REFRESH_MODES, "Enabled or Disabled"},
	{"accounting.mode", G, "", V_ENABLED, GF_ACCOUNTING, offsetof(struct gpu, accounting), 0,
	 REFRESH_MODES, "process accounting, Enabled or Disabled"},
	{"pstate", G, "", V_PSTATE, GF_PSTATE, offsetof(struct gpu, pstate), 0, REFRESH_PERF,
	 "performance state, P0 (fastest) to P15 (slowest)"},
	{"compute_mode", G, "", V_COMPUTE_MODE, GF_COMPUTE_MODE, 0, 0, 0,
	 "Default, Exclusive_Process or Prohibited"},
	{"mig.mode.current", G, "", V_ENABLED, GF_MIG_MODE, offsetof(struct gpu, mig_mode), 0, 0, "current MIG mode"},
	{"compute_cap", G, "", V_CC, GF_CC, 0, 0, 0, "CUDA compute capability, major.minor"},
	{"memory.total", G, "MiB", V_MIB, GF_MEM_TOTAL, offsetof(struct gpu, mem_total), 0, 0, "total installed GPU memory"},
	{"memory.reserved", G, "MiB", V_MIB, GF_MEM_RESERVED, offsetof(struct gpu, mem_reserved), 0, 0,
	 "memory reserved by the driver"},
	{"memory.used", G, "MiB", V_MIB, GF_MEM_USED, offsetof(struct gpu, mem_used), 0, 0, "memory allocated by active contexts"},
	{"memory.free", G, "MiB", V_MIB, GF_MEM_FREE, offsetof(struct gpu, mem_free), 0, 0, "free memory"},
	{"utilization.gpu", G, "%", V_UINT, GF_UTIL_GPU, offsetof(struct gpu, util_gpu), 0, 0,
	 "percent of time a kernel was running"},
	{"utilization.memory", G, "%", V_UINT, GF_UTIL_MEM, offsetof(struct gpu, util_mem), 0, 0,
	 "percent of time memory was read or written"},
	{"utilization.encoder", G, "%", V_UINT, GF_UTIL_ENC, offsetof(struct gpu, util_enc), 0, REFRESH_ENGINES,
	 "video encoder use"},
	{"utilization.decoder", G, "%", V_UINT, GF_UTIL_DEC, offsetof(struct gpu, util_dec), 0, REFRESH_ENGINES,
	 "video decoder use"},
	{"temperature.gpu", G, "", V_UINT, GF_TEMP, offsetof(struct gpu, temp), 0, 0, "core temperature in degrees C"},
	{"temperature.memory", G, "", V_TEMP_MEM, GF_TEMP_MEM, offsetof(struct gpu, temp_mem), 0, REFRESH_MEM_TEMP,
	 "HBM memory temperature in degrees C (N/A on GDDR boards)"},
	{"fan.speed", G, "%", V_UINT, GF_FAN, offsetof(struct gpu, fan), 0, REFRESH_FAN, "intended fan speed"},
	{"power.draw", G, "W", V_WATTS, GF_POWER, offsetof(struct gpu, power_mw), 0, 0, "power draw of the board"},
	{"power.limit gpu.power.requested_limit", G, "W", V_WATTS, GF_POWER_MGMT_LIMIT,
	 offsetof(struct gpu, power_mgmt_limit_mw), 0, REFRESH_POWER_MGMT, "power limit requested by software"},
	{"enforced.power.limit gpu.power.current_limit", G, "W", V_WATTS, GF_POWER_LIMIT,
	 offsetof(struct gpu, power_limit_mw), 0, 0, "power limit in force, after every limiter"},
	{"power.default_limit gpu.power.default_limit", G, "W", V_WATTS, GF_POWER_DEFAULT_LIMIT,
	 offsetof(struct gpu, power_default_mw), 0, REFRESH_STATIC, "power limit the board boots with"},
	{"power.min_limit gpu.power.min_limit", G, "W", V_WATTS, GF_POWER_MIN_LIMIT,
	 offsetof(struct gpu, power_min_mw), 0, REFRESH_STATIC, "lowest power limit that can be set"},
	{"power.max_limit gpu.power.max_limit", G, "W", V_WATTS, GF_POWER_MAX_LIMIT,
	 offsetof(struct gpu, power_max_mw), 0, REFRESH_STATIC, "highest power limit that can be set"},
	{"clocks.current.graphics clocks.gr", G, "MHz", V_UINT, GF_CLK_GFX, offsetof(struct gpu, clk_gfx), 0,
	 REFRESH_CLOCKS, "graphics clock"},
	{"clocks.current.sm clocks.sm", G, "MHz", V_UINT, GF_CLK_SM, offsetof(struct gpu, clk_sm), 0,
	 REFRESH_CLOCKS, "SM clock"},
	{"clocks.current.memory clocks.mem", G, "MHz", V_UINT, GF_CLK_MEM, offsetof(struct gpu, clk_mem), 0,
	 REFRESH_CLOCKS, "memory clock"},
	{"clocks.current.video clocks.video", G, "MHz", V_UINT, GF_CLK_VIDEO, offsetof(struct gpu, clk_video), 0,
	 REFRESH_CLOCKS, "video encoder/decoder clock"},
	{"clocks.max.graphics clocks.max.gr", G, "MHz", V_UINT, GF_CLK_MAX_GFX, offsetof(struct gpu, clk_max_gfx), 0,
	 REFRESH_STATIC, "highest graphics clock"},
	{"clocks.max.sm", G, "MHz", V_UINT, GF_CLK_MAX_SM, offsetof(struct gpu, clk_max_sm), 0, REFRESH_STATIC,
	 "highest SM clock"},
	{"clocks.max.memory clocks.max.mem", G, "MHz", V_UINT, GF_CLK_MAX_MEM, offsetof(struct gpu, clk_max_mem), 0,
	 REFRESH_STATIC, "highest memory clock"},
	{"clocks_event_reasons.supported clocks_throttle_reasons.supported", G, "", V_HEX64,
	 GF_EVENTS_SUPPORTED, offsetof(struct gpu, events_supported), 0, REFRESH_STATIC,
	 "bit mask of the clock event reasons the GPU reports"},
	{"clocks_event_reasons.active clocks_throttle_reasons.active", G, "", V_HEX64, GF_EVENTS_ACTIVE,
	 offsetof(struct gpu, events_active), 0, REFRESH_PERF, "bit mask of why the clocks are held down now"},
	{"clocks_event_reasons.gpu_idle clocks_throttle_reasons.gpu_idle", G, "", V_EVENT,
	 GF_EVENTS_ACTIVE, 0, GPU_EVENT_GPU_IDLE, REFRESH_PERF, "nothing runs"},
	{"clocks_event_reasons.applications_clocks_setting clocks_throttle_reasons.applications_clocks_setting",
	 G, "", V_EVENT, GF_EVENTS_ACTIVE, 0, GPU_EVENT_APPLICATIONS_CLOCKS, REFRESH_PERF,
	 "held by the applications clocks setting"},
	{"clocks_event_reasons.sw_power_cap clocks_throttle_reasons.sw_power_cap", G, "", V_EVENT,
	 GF_EVENTS_ACTIVE, 0, GPU_EVENT_SW_POWER_CAP, REFRESH_PERF, "held under the power limit"},
	{"clocks_event_reasons.hw_slowdown clocks_throttle_reasons.hw_slowdown", G, "", V_EVENT,
	 GF_EVENTS_ACTIVE, 0, GPU_EVENT_HW_SLOWDOWN, REFRESH_PERF, "hardware slowdown (heat or power)"},
	{"clocks_event_reasons.hw_thermal_slowdown clocks_throttle_reasons.hw_thermal_slowdown", G, "",
	 V_EVENT, GF_EVENTS_ACTIVE, 0, GPU_EVENT_HW_THERMAL, REFRESH_PERF, "hardware slowdown: too hot"},
	{"clocks_event_reasons.hw_power_brake_slowdown clocks_throttle_reasons.hw_power_brake_slowdown", G,
	 "", V_EVENT, GF_EVENTS_ACTIVE, 0, GPU_EVENT_HW_POWER_BRAKE, REFRESH_PERF,
	 "hardware slowdown: external power brake"},
	{"clocks_event_reasons.sw_thermal_slowdown clocks_throttle_reasons.sw_thermal_slowdown", G, "",
	 V_EVENT, GF_EVENTS_ACTIVE, 0, GPU_EVENT_SW_THERMAL, REFRESH_PERF, "software slowdown: too hot"},
	{"clocks_event_reasons.sync_boost clocks_throttle_reasons.sync_boost", G, "", V_EVENT,
	 GF_EVENTS_ACTIVE, 0, GPU_EVENT_SYNC_BOOST, REFRESH_PERF, "held to match a sync-boost group"},
	{"pcie.link.gen.current", G, "", V_UINT, GF_PCIE_GEN, offsetof(struct gpu, pcie_gen), 0, REFRESH_PCIE,
	 "PCIe link generation now (lower when idle)"},
	{"pcie.link.gen.gpucurrent", G, "", V_UINT, GF_PCIE_GEN, offsetof(struct gpu, pcie_gen), 0, REFRESH_PCIE,
	 "the same as pcie.link.gen.current"},
	{"pcie.link.gen.max", G, "", V_UINT, GF_PCIE_GEN_MAX, offsetof(struct gpu, pcie_gen_max), 0,
	 REFRESH_STATIC, "highest PCIe generation of the GPU and the slot"},
	{"pcie.link.gen.gpumax", G, "", V_UINT, GF_PCIE_GEN_GPU_MAX, offsetof(struct gpu, pcie_gen_gpu_max), 0,
	 REFRESH_STATIC, "highest PCIe generation of the GPU"},
	{"pcie.link.width.current", G, "", V_UINT, GF_PCIE_WIDTH, offsetof(struct gpu, pcie_width), 0,
	 REFRESH_PCIE, "PCIe lanes now"},
	{"pcie.link.width.max", G, "", V_UINT, GF_PCIE_WIDTH_MAX, offsetof(struct gpu, pcie_width_max), 0,
	 REFRESH_STATIC, "most PCIe lanes"},
	{"ecc.mode.current", G, "", V_ENABLED, GF_ECC, offsetof(struct gpu, ecc), 0, REFRESH_MODES, "current ECC mode"},
	{"ecc.errors.uncorrected.volatile.total", G, "", V_UINT, GF_ECC_UNCORRECTED,
	 offsetof(struct gpu, ecc_uncorrected), 0, REFRESH_ECC_ERRORS, "uncorrectable ECC errors since the driver loaded"},
	{"pid", A, "", V_PID, NO_BIT, 0, 0, REFRESH_PROCS, "process id"},
	{"process_name name", A, "", V_PROC_NAME, NO_BIT, 0, 0, REFRESH_PROCS, "process name (argv[0])"},
	{"used_gpu_memory used_memory", A, "MiB", V_PROC_MEM, NO_BIT, 0, 0, REFRESH_PROCS,
	 "GPU memory used by the process"},
};
#undef G
#undef A

/* The first driver series whose nvidia-smi prints display_mode as deprecated is not known
 * exactly: 535 printed Enabled/Disabled, 590 and 610 the deprecation token (real captures). */
enum { DISPLAY_MODE_DEPRECATED_SINCE = 590 };
static const char display_mode_deprecated[] = "[Requested functionality has been deprecated]";

/* One column: a field of the table above, or (f NULL) one of query-x.c's. */
struct column {
	const struct field *f;
	const struct xfield *x;
};

struct query {
	enum query_kind kind;
	size_t n;
	struct column *f;
};

static bool name_matches(const char *names, const char *want, size_t wlen)
{
	for (const char *p = names; *p;) {
		size_t len = strcspn(p, " ");
		if (len == wlen && !strncmp(p, want, len))
			return true;
		p += len;
		p += *p == ' ';
	}
	return false;
}

struct query *query_parse(enum query_kind kind, const char *list, struct gpu_error *err)
{
	struct query *q = xcalloc(1, sizeof *q);
	q->kind = kind;
	size_t cap = 0;
	for (const char *p = list;;) {
		size_t len = strcspn(p, ",");
		const char *s = p;
		while (len && (*s == ' ')) /* nvidia-smi tolerates "a, b" */
			s++, len--;
		while (len && s[len - 1] == ' ')
			len--;
		const struct field *hit = NULL;
		for (size_t i = 0; i < ARRAY_SIZE(fields) && !hit; i++)
			if ((fields[i].kinds >> kind & 1) && name_matches(fields[i].names, s, len))
				hit = &fields[i];
		const struct xfield *xhit = !hit && kind == Q_GPU ? query_x_find(s, len) : NULL;
		if (!hit && !xhit) {
			/* nvidia-smi's words and exit status (2), which scripts match. */
			err->code = EXIT_USAGE;
			snprintf(err->msg, sizeof err->msg, "Field \"%.*s\" is not a valid field to query.",
				 (int)len, s);
			query_free(q);
			return NULL;
		}
		q->f = grow_array(q->f, &cap, q->n + 1, sizeof *q->f);
		q->f[q->n++] = (struct column){hit, xhit};
		p += strcspn(p, ",");
		if (!*p++)
			break;
	}
	return q;
}

void query_free(struct query *q)
{
	if (q)
		free(q->f);
	free(q);
}

unsigned query_refresh_needs(const struct query *q)
{
	/* Compute apps print no owner and none of the GPU's base fields (gpu.h). */
	unsigned need = q->kind == Q_APPS ? REFRESH_PROCS | REFRESH_COMPUTE_NAMES : 0;
	for (size_t i = 0; i < q->n; i++)
		if (q->f[i].f)
			need |= q->f[i].f->needs;
	return need;
}

bool query_needs_cc(const struct query *q)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->f[i].f && q->f[i].f->bit == GF_CC)
			return true;
	return false;
}

bool query_reads_driver(const struct query *q)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->f[i].x)
			return true;
	return false;
}

bool query_shows_time(const struct query *q)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->f[i].f && q->f[i].f->fmt == V_TIMESTAMP)
			return true;
	return false;
}

bool query_parse_format(const char *s, unsigned *flags)
{
	bool csv = false;
	*flags = 0;
	for (const char *p = s;;) {
		size_t len = strcspn(p, ",");
		if (len == 3 && !strncmp(p, "csv", 3))
			csv = true;
		else if (len == 8 && !strncmp(p, "noheader", 8))
			*flags |= QF_NOHEADER;
		else if (len == 7 && !strncmp(p, "nounits", 7))
			*flags |= QF_NOUNITS;
		else
			return false;
		p += len;
		if (!*p++)
			break;
	}
	return csv;
}

void query_header(struct strbuf *sb, const struct query *q)
{
	for (size_t i = 0; i < q->n; i++) {
		const struct field *f = q->f[i].f;
		if (i)
			sb_adds(sb, ", ");
		if (!f) {
			query_x_header(sb, q->f[i].x);
			continue;
		}
		sb_add(sb, f->names, strcspn(f->names, " "));
		if (f->unit[0])
			sb_addf(sb, " [%s]", f->unit);
	}
	sb_addc(sb, '\n');
}

static unsigned uint_at(const struct gpu *g, size_t off)
{
	unsigned v;
	memcpy(&v, (const char *)g + off, sizeof v);
	return v;
}

static uint64_t u64_at(const struct gpu *g, size_t off)
{
	uint64_t v;
	memcpy(&v, (const char *)g + off, sizeof v);
	return v;
}

static unsigned driver_major(const struct gpu_set *set)
{
	return set->has_driver_version ? (unsigned)strtoul(set->driver_version, NULL, 10) : 0;
}

/* The text of a GPU field that is there (its unit is added by the caller). */
static void gpu_value(char *buf, size_t n, const struct field *f, const struct gpu *g)
{
	switch (f->fmt) {
	case V_UINT: snprintf(buf, n, "%u", uint_at(g, f->off)); break;
	case V_TEMP_MEM: snprintf(buf, n, "%u", uint_at(g, f->off)); break;
	case V_MIB: snprintf(buf, n, "%llu", mib(u64_at(g, f->off))); break;
	case V_WATTS: snprintf(buf, n, "%.2f", uint_at(g, f->off) / 1000.0); break;
	case V_HEX32: snprintf(buf, n, "0x%08X", uint_at(g, f->off)); break;
	case V_HEX64: snprintf(buf, n, "0x%016llX", (unsigned long long)u64_at(g, f->off)); break;
	case V_ENABLED: snprintf(buf, n, "%s", uint_at(g, f->off) ? "Enabled" : "Disabled"); break;
	case V_PSTATE: snprintf(buf, n, "P%u", uint_at(g, f->off)); break;
	case V_EVENT: snprintf(buf, n, "%s", g->events_active & f->arg ? "Active" : "Not Active"); break;
	case V_STRING: snprintf(buf, n, "%s", (const char *)g + f->off); break;
	case V_COMPUTE_MODE: snprintf(buf, n, "%s", compute_mode_name(g->compute_mode)); break;
	case V_CC: snprintf(buf, n, "%d.%d", g->cc_major, g->cc_minor); break;
	case V_DISPLAY_MODE: snprintf(buf, n, "%s", g->display_mode ? "Enabled" : "Disabled"); break;
	case V_DISPLAY_ATTACHED: snprintf(buf, n, "%s", g->display_mode ? "Yes" : "No"); break;
	default: buf[0] = '\0'; break;   /* identity and process formats: written by cell() */
	}
}

/* What nvidia-smi prints for a value the driver could not give: the driver's words in brackets
 * (nvmlErrorString's), "[N/A]" for "not supported". A GPU fallen off the bus said "[N/A]" for
 * every field, as if each were unsupported. */
static void unavailable(struct strbuf *sb, const struct field *f, const struct gpu *g)
{
	if (g->lost)
		sb_adds(sb, QUERY_LOST);
	else if (f->fmt == V_TEMP_MEM)
		sb_adds(sb, "N/A");
	else if (f->bit != NO_BIT && g->why[f->bit])
		sb_addf(sb, "[%s]", g->why[f->bit]);
	else
		sb_adds(sb, "[N/A]");
}

/* A number in decimal without sb_addf: --query-compute-apps prints two a process (issue 22:
 * the printf machinery was a sixth of what a 1,000-process query cost). */
static void add_uint(struct strbuf *sb, unsigned long long v)
{
	char buf[24];
	size_t i = sizeof buf;
	do
		buf[--i] = (char)('0' + v % 10);
	while (v /= 10);
	sb_add(sb, buf + i, sizeof buf - i);
}

static void cell(struct strbuf *sb, const struct field *f, const struct gpu_set *set,
		 const struct gpu *g, const struct gpu_proc *p, bool units, const char *ts)
{
	const char *s = NULL;
	char buf[128];
	switch (f->fmt) {
	case V_TIMESTAMP: s = ts; break;
	case V_DRIVER: s = set->has_driver_version ? set->driver_version : NULL; break;
	case V_COUNT: add_uint(sb, set->ngpus); return;
	case V_INDEX: add_uint(sb, g->index); return;
	case V_UUID: s = g->uuid[0] ? g->uuid : NULL; break;
	case V_NAME: s = g->name[0] ? g->name : NULL; break;
	case V_BUS_ID: s = g->pci_bus_id[0] ? g->pci_bus_id : NULL; break;
	case V_PID: add_uint(sb, p->pid); return;
	case V_PROC_NAME:
		/* Unquoted, as nvidia-smi prints it (commas and all), but another user's text: a
		 * newline would forge a row and an ESC reach the terminal, so control bytes are
		 * escaped as on the terminal (\n, \e; a backslash doubled). */
		if (!p->name)
			break;
		esc_printable(sb, p->name);
		return;
	case V_PROC_MEM:
		if (!p->mem_valid)
			break;
		add_uint(sb, mib(p->used_mem));
		if (units) {
			sb_addc(sb, ' ');
			sb_adds(sb, f->unit);
		}
		return;
	case V_DISPLAY_MODE:
		if (driver_major(set) >= DISPLAY_MODE_DEPRECATED_SINCE) {
			sb_adds(sb, display_mode_deprecated);
			return;
		}
		/* fall through */
	default:
		if (!gpu_has(g, (enum gpu_field)f->bit)) {
			unavailable(sb, f, g);
			return;
		}
		gpu_value(buf, sizeof buf, f, g);
		sb_adds(sb, buf);
		if (units && f->unit[0]) {
			sb_addc(sb, ' ');
			sb_adds(sb, f->unit);
		}
		return;
	}
	sb_adds(sb, s ? s : "[N/A]");
}

static void row(struct strbuf *sb, const struct query *q, const struct gpu_set *set,
		const struct gpu *g, const struct gpu_proc *p, bool units, const char *ts)
{
	for (size_t i = 0; i < q->n; i++) {
		if (i)
			sb_adds(sb, ", ");
		if (q->f[i].f)
			cell(sb, q->f[i].f, set, g, p, units, ts);
		else
			query_x_cell(sb, q->f[i].x, set, g, units);
	}
	sb_addc(sb, '\n');
}

void query_rows(struct strbuf *sb, const struct query *q, const struct gpu_set *set, unsigned flags,
		const char *ts)
{
	bool units = !(flags & QF_NOUNITS);
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		if (!g->selected)
			continue;
		if (q->kind == Q_GPU) {
			row(sb, q, set, g, NULL, units, ts);
			continue;
		}
		for (size_t j = 0; j < g->nprocs; j++)
			if (g->procs[j].type & PROC_COMPUTE)
				row(sb, q, set, g, &g->procs[j], units, ts);
	}
}

/* nvidia-smi -L: "GPU 0: NAME (UUID: GPU-...)", then each MIG device under its GPU as
 * "  MIG 3g.40gb     Device  0: (UUID: MIG-...)" (profile padded to 12 columns, index to 2). */
void query_list_gpus(struct strbuf *sb, const struct gpu_set *set)
{
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		if (!g->selected)
			continue;
		sb_addf(sb, "GPU %u: %s (UUID: %s)\n", g->index, g->name[0] ? g->name : "N/A",
			g->uuid[0] ? g->uuid : "N/A");
		for (size_t m = 0; m < g->nmigs; m++) {
			const struct mig_dev *d = &g->migs[m];
			/* NVML names a MIG device "<GPU name> MIG <profile>". Profiles of 12 characters or
			 * more are not in any capture: they get one space, to stay readable. */
			const char *profile = strstr(d->name, "MIG ");
			profile = profile ? profile + 4 : d->name;
			sb_addf(sb, "  MIG %-12s%sDevice %2u: (UUID: %s)\n", profile,
				strlen(profile) >= 12 ? " " : "", d->slot, d->uuid[0] ? d->uuid : "N/A");
		}
	}
}

void query_help(struct strbuf *sb, enum query_kind kind)
{
	sb_addf(sb, "Fields for --query-%s (names separated by commas; aliases after '|'):\n",
		kind == Q_GPU ? "gpu" : "compute-apps");
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		const struct field *f = &fields[i];
		if (!(f->kinds >> kind & 1))
			continue;
		char names[160];
		snprintf(names, sizeof names, "%s", f->names);
		for (char *c = names; *c; c++)
			if (*c == ' ')
				*c = '|';
		/* Long names (the event reasons with their old spelling) get the text on a line below. */
		bool wide = strlen(names) > 42;
		sb_addf(sb, "  %-42s%s%*s", names, wide ? "\n" : " ", wide ? 45 : 0, "");
		sb_addf(sb, "%s%s%s%s\n", f->help, f->unit[0] ? " [" : "", f->unit,
			f->unit[0] ? "]" : "");
	}
	if (kind == Q_GPU)
		query_x_help(sb);
}
