/* query.c: nvidia-smi's --query-gpu and --query-compute-apps, so that scripts written for
 * nvidia-smi work unchanged: the same field names and aliases, header text (the canonical name and
 * its unit in brackets, kept under nounits as nvidia-smi does), ", " separators, value units and
 * "[N/A]" for what the driver cannot give. Process names are not quoted, like nvidia-smi's. */
#include "query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum fid {
	F_TIMESTAMP, F_DRIVER, F_COUNT, F_INDEX, F_UUID, F_NAME, F_BUS_ID, F_PCI_DEVICE_ID,
	F_MEM_TOTAL, F_MEM_USED, F_MEM_FREE, F_MEM_RESERVED, F_UTIL_GPU, F_UTIL_MEM, F_TEMP,
	F_POWER, F_POWER_LIMIT, F_FAN, F_CLK_GFX, F_CLK_SM, F_CLK_MEM, F_COMPUTE_MODE,
	F_PERSISTENCE, F_ECC, F_ECC_ERR, F_MIG, F_CC,
	F_PID, F_PROC_NAME, F_USED_MEM,
};

struct field {
	enum fid id;
	unsigned kinds;          /* 1 << Q_GPU | 1 << Q_APPS */
	const char *names;       /* canonical first, then aliases; space separated */
	const char *unit;        /* shown in the header and after values; NULL for none */
	unsigned needs;          /* REFRESH_* */
	const char *help;
};

#define G (1U << Q_GPU)
#define A (1U << Q_APPS)
static const struct field fields[] = {
	{F_TIMESTAMP, G | A, "timestamp", NULL, 0, "time of the query, YYYY/MM/DD HH:MM:SS.mmm"},
	{F_DRIVER, G, "driver_version", NULL, 0, "version of the installed NVIDIA driver"},
	{F_COUNT, G, "count", NULL, 0, "number of GPUs in the system"},
	{F_INDEX, G, "index", NULL, 0, "NVML (nvidia-smi) index of the GPU"},
	{F_UUID, G, "uuid gpu_uuid", NULL, 0, "globally unique GPU id"},
	{F_UUID, A, "gpu_uuid", NULL, 0, "UUID of the GPU the process runs on"},
	{F_NAME, G, "name gpu_name", NULL, 0, "product name"},
	{F_NAME, A, "gpu_name", NULL, 0, "product name of the GPU the process runs on"},
	{F_BUS_ID, G, "pci.bus_id gpu_bus_id", NULL, 0, "PCI bus id, domain:bus:device.function"},
	{F_BUS_ID, A, "gpu_bus_id", NULL, 0, "PCI bus id of the GPU the process runs on"},
	{F_PCI_DEVICE_ID, G, "pci.device_id", NULL, 0, "PCI vendor and device id"},
	{F_MEM_TOTAL, G, "memory.total", "MiB", 0, "total installed GPU memory"},
	{F_MEM_USED, G, "memory.used", "MiB", 0, "memory allocated by active contexts"},
	{F_MEM_FREE, G, "memory.free", "MiB", 0, "free memory"},
	{F_MEM_RESERVED, G, "memory.reserved", "MiB", 0, "memory reserved by the driver"},
	{F_UTIL_GPU, G, "utilization.gpu", "%", 0, "percent of time a kernel was running"},
	{F_UTIL_MEM, G, "utilization.memory", "%", 0, "percent of time memory was read or written"},
	{F_TEMP, G, "temperature.gpu", NULL, 0, "core temperature in degrees C"},
	{F_POWER, G, "power.draw", "W", 0, "power draw of the board"},
	{F_POWER_LIMIT, G, "power.limit enforced.power.limit", "W", 0, "enforced power limit"},
	{F_FAN, G, "fan.speed", "%", REFRESH_EXTRA, "intended fan speed"},
	{F_CLK_GFX, G, "clocks.current.graphics clocks.gr", "MHz", REFRESH_EXTRA, "graphics clock"},
	{F_CLK_SM, G, "clocks.current.sm clocks.sm", "MHz", REFRESH_EXTRA, "SM clock"},
	{F_CLK_MEM, G, "clocks.current.memory clocks.mem", "MHz", REFRESH_EXTRA, "memory clock"},
	{F_COMPUTE_MODE, G, "compute_mode", NULL, 0, "Default, Exclusive_Process or Prohibited"},
	{F_PERSISTENCE, G, "persistence_mode", NULL, REFRESH_EXTRA, "Enabled or Disabled"},
	{F_ECC, G, "ecc.mode.current", NULL, REFRESH_EXTRA, "current ECC mode"},
	{F_ECC_ERR, G, "ecc.errors.uncorrected.volatile.total", NULL, REFRESH_EXTRA,
	 "uncorrectable ECC errors since the driver loaded"},
	{F_MIG, G, "mig.mode.current", NULL, 0, "current MIG mode"},
	{F_CC, G, "compute_cap", NULL, 0, "CUDA compute capability, major.minor"},
	{F_PID, A, "pid", NULL, REFRESH_PROCS, "process id"},
	{F_PROC_NAME, A, "process_name name", NULL, REFRESH_PROCS, "process name (argv[0])"},
	{F_USED_MEM, A, "used_gpu_memory used_memory", "MiB", REFRESH_PROCS,
	 "GPU memory used by the process"},
};
#undef G
#undef A

struct query {
	enum query_kind kind;
	size_t n;
	const struct field **f;
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
		if (!hit) {
			err->code = EXIT_USAGE;
			snprintf(err->msg, sizeof err->msg,
				 "Field \"%.*s\" is not a valid field to query; see `gpuctl status "
				 "--help-query-%s`", (int)len, s, kind == Q_GPU ? "gpu" : "compute-apps");
			query_free(q);
			return NULL;
		}
		q->f = grow_array(q->f, &cap, q->n + 1, sizeof *q->f);
		q->f[q->n++] = hit;
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
	unsigned need = q->kind == Q_APPS ? REFRESH_PROCS : 0;
	for (size_t i = 0; i < q->n; i++)
		need |= q->f[i]->needs;
	return need;
}

bool query_shows_time(const struct query *q)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->f[i]->id == F_TIMESTAMP)
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
		const struct field *f = q->f[i];
		if (i)
			sb_adds(sb, ", ");
		sb_add(sb, f->names, strcspn(f->names, " "));
		if (f->unit)
			sb_addf(sb, " [%s]", f->unit);
	}
	sb_addc(sb, '\n');
}

#define NA "[N/A]"

static void value(struct strbuf *sb, const struct field *f, bool units, const char *fmt, ...)
	PRINTF(4, 5);
static void value(struct strbuf *sb, const struct field *f, bool units, const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	sb_adds(sb, buf);
	if (units && f->unit)
		sb_addf(sb, " %s", f->unit);
}

#define MIB(x) ((unsigned long long)((x) >> 20))
#define FIELD(bit, ...) (GPU_HAS(g, bit) ? value(sb, f, units, __VA_ARGS__) : sb_adds(sb, NA))

static void cell(struct strbuf *sb, const struct field *f, const struct gpu_set *set,
		 const struct gpu *g, const struct gpu_proc *p, bool units, const char *ts)
{
	switch (f->id) {
	case F_TIMESTAMP: sb_adds(sb, ts); break;
	case F_DRIVER: sb_adds(sb, set->has_driver_version ? set->driver_version : NA); break;
	case F_COUNT: sb_addf(sb, "%zu", set->ngpus); break;
	case F_INDEX: sb_addf(sb, "%u", g->index); break;
	case F_UUID: sb_adds(sb, g->uuid[0] ? g->uuid : NA); break;
	case F_NAME: sb_adds(sb, g->name[0] ? g->name : NA); break;
	case F_BUS_ID: sb_adds(sb, g->pci_bus_id[0] ? g->pci_bus_id : NA); break;
	case F_PCI_DEVICE_ID: FIELD(GF_PCI_DEVICE_ID, "0x%08X", g->pci_device_id); break;
	case F_MEM_TOTAL: FIELD(GF_MEM_TOTAL, "%llu", MIB(g->mem_total)); break;
	case F_MEM_USED: FIELD(GF_MEM_USED, "%llu", MIB(g->mem_used)); break;
	case F_MEM_FREE: FIELD(GF_MEM_FREE, "%llu", MIB(g->mem_free)); break;
	case F_MEM_RESERVED: FIELD(GF_MEM_RESERVED, "%llu", MIB(g->mem_reserved)); break;
	case F_UTIL_GPU: FIELD(GF_UTIL_GPU, "%u", g->util_gpu); break;
	case F_UTIL_MEM: FIELD(GF_UTIL_MEM, "%u", g->util_mem); break;
	case F_TEMP: FIELD(GF_TEMP, "%u", g->temp); break;
	case F_POWER: FIELD(GF_POWER, "%.2f", g->power_mw / 1000.0); break;
	case F_POWER_LIMIT: FIELD(GF_POWER_LIMIT, "%.2f", g->power_limit_mw / 1000.0); break;
	case F_FAN: FIELD(GF_FAN, "%u", g->fan); break;
	case F_CLK_GFX: FIELD(GF_CLK_GFX, "%u", g->clk_gfx); break;
	case F_CLK_SM: FIELD(GF_CLK_SM, "%u", g->clk_sm); break;
	case F_CLK_MEM: FIELD(GF_CLK_MEM, "%u", g->clk_mem); break;
	case F_COMPUTE_MODE: FIELD(GF_COMPUTE_MODE, "%s", compute_mode_name(g->compute_mode)); break;
	case F_PERSISTENCE: FIELD(GF_PERSISTENCE, "%s", g->persistence ? "Enabled" : "Disabled"); break;
	case F_ECC: FIELD(GF_ECC, "%s", g->ecc ? "Enabled" : "Disabled"); break;
	case F_ECC_ERR: FIELD(GF_ECC_UNCORRECTED, "%llu", (unsigned long long)g->ecc_uncorrected); break;
	case F_MIG: FIELD(GF_MIG_MODE, "%s", g->mig_mode ? "Enabled" : "Disabled"); break;
	case F_CC: FIELD(GF_CC, "%d.%d", g->cc_major, g->cc_minor); break;
	case F_PID: sb_addf(sb, "%u", p->pid); break;
	case F_PROC_NAME: sb_adds(sb, p->name ? p->name : NA); break;
	case F_USED_MEM:
		if (p->mem_valid)
			value(sb, f, units, "%llu", MIB(p->used_mem));
		else
			sb_adds(sb, NA);
		break;
	}
}

static void row(struct strbuf *sb, const struct query *q, const struct gpu_set *set,
		const struct gpu *g, const struct gpu_proc *p, bool units, const char *ts)
{
	for (size_t i = 0; i < q->n; i++) {
		if (i)
			sb_adds(sb, ", ");
		cell(sb, q->f[i], set, g, p, units, ts);
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

void query_help(struct strbuf *sb, enum query_kind kind)
{
	sb_addf(sb, "Fields for --query-%s (names separated by commas; aliases after '|'):\n",
		kind == Q_GPU ? "gpu" : "compute-apps");
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		const struct field *f = &fields[i];
		if (!(f->kinds >> kind & 1))
			continue;
		char names[96];
		snprintf(names, sizeof names, "%s", f->names);
		for (char *c = names; *c; c++)
			if (*c == ' ')
				*c = '|';
		sb_addf(sb, "  %-42s %s%s%s%s\n", names, f->help, f->unit ? " [" : "",
			f->unit ? f->unit : "", f->unit ? "]" : "");
	}
}
