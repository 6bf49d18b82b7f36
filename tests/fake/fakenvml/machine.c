/* machine.c: reads a simulated machine description (tests/fake/machines/README.md). Test code only. */
#include "machine.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { const char *name; int code; } codes[] = {
	{"SUCCESS", 0}, {"UNINITIALIZED", 1}, {"INVALID_ARGUMENT", 2}, {"NOT_SUPPORTED", 3},
	{"NO_PERMISSION", 4}, {"ALREADY_INITIALIZED", 5}, {"NOT_FOUND", 6},
	{"INSUFFICIENT_SIZE", 7}, {"INSUFFICIENT_POWER", 8}, {"DRIVER_NOT_LOADED", 9},
	{"TIMEOUT", 10}, {"IRQ_ISSUE", 11}, {"LIBRARY_NOT_FOUND", 12}, {"FUNCTION_NOT_FOUND", 13},
	{"CORRUPTED_INFOROM", 14}, {"GPU_IS_LOST", 15}, {"RESET_REQUIRED", 16},
	{"OPERATING_SYSTEM", 17}, {"LIB_RM_VERSION_MISMATCH", 18}, {"IN_USE", 19}, {"MEMORY", 20},
	{"NO_DATA", 21}, {"INSUFFICIENT_RESOURCES", 23}, {"ARGUMENT_VERSION_MISMATCH", 25},
	{"NOT_READY", 27}, {"GPU_NOT_FOUND", 28}, {"INVALID_STATE", 29}, {"UNKNOWN", 999},
};

int fm_code(const char *name)
{
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
		if (!strcmp(codes[i].name, name))
			return codes[i].code;
	return -1;
}

const char *fm_code_name(int code)
{
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
		if (codes[i].code == code)
			return codes[i].name;
	return "UNKNOWN";
}

static const char *const num_keys[N_COUNT] = {
	[N_MEM_TOTAL] = "memory_total_mib", [N_MEM_USED] = "memory_used_mib",
	[N_MEM_RESERVED] = "memory_reserved_mib", [N_UTIL_GPU] = "util_gpu",
	[N_UTIL_MEM] = "util_memory", [N_TEMP] = "temperature", [N_POWER] = "power_mw",
	[N_POWER_LIMIT] = "power_limit_mw", [N_FAN] = "fan", [N_CLK_GFX] = "clock_graphics",
	[N_CLK_SM] = "clock_sm", [N_CLK_MEM] = "clock_memory", [N_COMPUTE_MODE] = "compute_mode",
	[N_PERSISTENCE] = "persistence", [N_ECC] = "ecc", [N_CC] = "cc", [N_CORES] = "cores",
	[N_ARCH] = "architecture", [N_MIG_MODE] = "mig_mode", [N_MAX_MIG] = "max_mig",
	[N_PCI_DEVICE_ID] = "pci_device_id", [N_LOST_AFTER] = "lost_after", [N_MINOR] = "minor",
	[N_ECC_UNCORRECTED] = "ecc_uncorrected",
	[N_CLK_VIDEO] = "clock_video", [N_MAX_CLK_GFX] = "max_clock_graphics",
	[N_MAX_CLK_SM] = "max_clock_sm", [N_MAX_CLK_MEM] = "max_clock_memory",
	[N_MAX_CLK_VIDEO] = "max_clock_video",
	[N_POWER_MGMT_LIMIT] = "power_management_limit_mw",
	[N_POWER_DEFAULT_LIMIT] = "power_default_limit_mw",
	[N_POWER_MIN_LIMIT] = "power_min_limit_mw", [N_POWER_MAX_LIMIT] = "power_max_limit_mw",
	[N_PSTATE] = "pstate", [N_EVENTS] = "clocks_event_reasons",
	[N_EVENTS_SUPPORTED] = "clocks_event_reasons_supported",
	[N_PCIE_GEN] = "pcie_gen", [N_PCIE_GEN_MAX] = "pcie_gen_max",
	[N_PCIE_GEN_GPU_MAX] = "pcie_gen_gpu_max", [N_PCIE_WIDTH] = "pcie_width",
	[N_PCIE_WIDTH_MAX] = "pcie_width_max", [N_PCIE_TX] = "pcie_tx_kbs",
	[N_PCIE_RX] = "pcie_rx_kbs", [N_UTIL_ENC] = "util_encoder", [N_UTIL_DEC] = "util_decoder",
	[N_TEMP_MEM] = "temperature_memory", [N_TEMP_SHUTDOWN] = "temp_shutdown",
	[N_TEMP_SLOWDOWN] = "temp_slowdown", [N_TEMP_MEM_MAX] = "temp_mem_max",
	[N_TEMP_GPU_MAX] = "temp_gpu_max", [N_DISPLAY_MODE] = "display_mode",
	[N_DISPLAY_ACTIVE] = "display_active", [N_ACCOUNTING] = "accounting_mode",
	[N_PCI_SUBSYS_ID] = "pci_subsystem_id",
	/* smi (issue 27) */
	[N_ECC_LOCATIONS] = "ecc_location_mask",
	[N_ECC_CORR_VOL] = "ecc_corrected_volatile",
	[N_ECC_CORR_AGG] = "ecc_corrected_aggregate",
	[N_ECC_UNC_AGG] = "ecc_uncorrected_aggregate",
	[N_ECC_PENDING] = "ecc_pending",
	[N_SRAM_THRESHOLD] = "sram_threshold_exceeded",
	[N_RETIRED_SBE] = "retired_pages_sbe",
	[N_RETIRED_DBE] = "retired_pages_dbe",
	[N_RETIRED_PENDING] = "retired_pages_pending",
	[N_REMAP_CORR] = "remapped_correctable",
	[N_REMAP_UNC] = "remapped_uncorrectable",
	[N_REMAP_PENDING] = "remapped_pending",
	[N_REMAP_FAILURE] = "remapped_failure",
	[N_REMAP_HIST_MAX] = "remap_histogram_max",
	[N_REMAP_HIST_HIGH] = "remap_histogram_high",
	[N_REMAP_HIST_PARTIAL] = "remap_histogram_partial",
	[N_REMAP_HIST_LOW] = "remap_histogram_low",
	[N_REMAP_HIST_NONE] = "remap_histogram_none",
	[N_POWER_AVERAGE] = "power_average_mw",
	[N_POWER_INSTANT] = "power_instant_mw",
	[N_TEMP_TLIMIT] = "temp_tlimit",
	[N_RECOVERY_ACTION] = "gpu_recovery_action",
	[N_EVENT_COUNTERS] = "clocks_event_counters_us",
	[N_EDPP] = "edpp_multiplier",
	[N_ACCT_BUFFER] = "accounting_buffer_size",
	[N_UTIL_JPG] = "util_jpeg",
	[N_UTIL_OFA] = "util_ofa",
	[N_ENC_SESSIONS] = "encoder_sessions",
	[N_ENC_FPS] = "encoder_fps",
	[N_ENC_LATENCY] = "encoder_latency",
	[N_GSP] = "gsp_mode",
	[N_GSP_DEFAULT] = "gsp_default",
	[N_C2C] = "c2c_mode",
	[N_ADDRESSING] = "addressing_mode",
	[N_PCI_BASE_CLASS] = "pci_base_class",
	[N_PCI_SUB_CLASS] = "pci_sub_class",
	[N_MIG_PENDING] = "mig_pending",
	[N_INFOROM_VALID] = "inforom_valid",
	[N_FABRIC_STATE] = "fabric_state",
	[N_FABRIC_CLIQUE] = "fabric_clique_id",
	[N_PLATFORM_SLOT] = "platform_slot",
	[N_PLATFORM_TRAY] = "platform_tray",
	[N_PLATFORM_HOST] = "platform_host_id",
	[N_PLATFORM_PEER] = "platform_peer_type",
	[N_PLATFORM_MODULE] = "platform_module_id",
	[N_PROTECTED_MEM] = "protected_memory_mib",
};

static const char *const util_keys[U_COUNT] = {"sm_util", "mem_util", "enc_util", "dec_util"};

long long fm_spec_at(const struct fm_spec *s, unsigned long reads, unsigned long long ms)
{
	if (s->n <= 1)
		return s->n ? s->v[0] : 0;
	unsigned long long step = s->period_ms ? ms / s->period_ms : reads;
	return s->v[step % (unsigned long long)s->n];
}

enum section { S_TOP, S_GPU, S_MIG, S_PROC };

struct parser {
	struct fm_machine *m;
	const char *path;
	int line;
	enum section sec;
	struct fm_proc *proc;
	struct fm_mig mig;
	int mig_gpu;
	char *err;
	size_t errlen;
};

static int fail(struct parser *p, const char *fmt, const char *a, const char *b)
{
	char msg[256];
	snprintf(msg, sizeof msg, fmt, a, b);
	snprintf(p->err, p->errlen, "%s:%d: %s", p->path, p->line, msg);
	return -1;
}

static bool num(const char *v, long long *out)
{
	char *end;
	errno = 0;
	if (!*v)
		return false;
	*out = strtoll(v, &end, 0);
	return !errno && !*end;
}

static int compute_mode(const char *v)
{
	const char *names[] = {"Default", "Exclusive_Thread", "Prohibited", "Exclusive_Process"};
	for (int i = 0; i < 4; i++)
		if (!strcasecmp(v, names[i]))
			return i;
	return -1;
}

/* One element of a value: a number, or what the key allows instead (9.0, Default). */
static bool element(int key, const char *v, long long *out)
{
	int mode;
	if (key == N_COMPUTE_MODE && (mode = compute_mode(v)) >= 0)
		*out = mode;
	else if (key == N_CC && strchr(v, '.'))
		*out = atoi(v) * 10 + atoi(strchr(v, '.') + 1);
	else
		return num(v, out);
	return true;
}

/* "N", "A B C" (the next at every read), "A B C / 500ms" (the next every 500 ms since init). */
static int parse_spec(struct parser *p, const char *k, const char *v, int key, long long scale,
		      struct fm_spec *s)
{
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", v);
	memset(s, 0, sizeof *s);
	char *slash = strchr(buf, '/');
	if (slash) {
		*slash = '\0';
		char *per = slash + 1, *end;
		while (isspace((unsigned char)*per))
			per++;
		if (strcmp(per, "read")) {
			unsigned long ms = strtoul(per, &end, 10);
			if (end == per || strcmp(end, "ms") || ms == 0)
				return fail(p, "%s: the period after '/' is Nms or read, not '%s'", k, per);
			s->period_ms = (unsigned)ms;
		}
	}
	for (char *save = NULL, *t = strtok_r(buf, " \t,", &save); t; t = strtok_r(NULL, " \t,", &save)) {
		if (s->n >= FM_MAX_SEQ)
			return fail(p, "%s: at most 16 values, not '%s'", k, v);
		if (!element(key, t, &s->v[s->n]))
			return fail(p, "%s wants a number or NA, not '%s'", k, v);
		s->v[s->n++] *= scale;
	}
	if (!s->n)
		return fail(p, "%s wants a number or NA, not '%s'", k, v);
	return 0;
}

static int set_fail(struct parser *p, struct fm_fail *fails, int *n, const char *fn, const char *v)
{
	int code = fm_code(v);
	if (code < 0)
		return fail(p, "unknown NVML error '%s'%s", v, "");
	if (*n >= FM_MAX_FAILS)
		return fail(p, "too many fail.* keys%s%s", "", "");
	snprintf(fails[*n].fn, sizeof fails[*n].fn, "%s", fn);
	fails[(*n)++].code = code;
	return 0;
}

static int gpu_key(struct parser *p, struct fm_gpu *g, const char *k, const char *v)
{
	if (!strcmp(k, "name"))
		snprintf(g->name, sizeof g->name, "%s", v);
	else if (!strcmp(k, "uuid"))
		snprintf(g->uuid, sizeof g->uuid, "%s", v);
	else if (!strcmp(k, "pci_bus_id")) {
		if (sscanf(v, "%x:%x:%x.%x", &g->dom, &g->bus, &g->dev, &g->fn) != 4)
			return fail(p, "pci_bus_id '%s' is not domain:bus:device.function%s", v, "");
	} else if (!strcmp(k, "handle_error")) {
		if ((g->handle_error = fm_code(v)) < 0)
			return fail(p, "unknown NVML error '%s'%s", v, "");
	} else if (!strncmp(k, "fail.", 5))
		return set_fail(p, g->fails, &g->nfails, k + 5, v);
	else if (!strcmp(k, "serial"))
		snprintf(g->serial, sizeof g->serial, "%s", v);
	else if (!strcmp(k, "vbios_version"))
		snprintf(g->vbios, sizeof g->vbios, "%s", v);
	else if (!strncmp(k, "inforom_", 8) && (!strcmp(k + 8, "image") || !strcmp(k + 8, "oem") ||
						 !strcmp(k + 8, "ecc") || !strcmp(k + 8, "power"))) {
		/* smi (issue 27) */
		int i = !strcmp(k + 8, "image") ? 0 : !strcmp(k + 8, "oem") ? 1 : !strcmp(k + 8, "ecc") ? 2 : 3;
		snprintf(g->inforom[i], sizeof g->inforom[i], "%s", v);
	}
	else {
		static const struct { const char *key; int num; } bytes[] = {
			{"memory_total_bytes", N_MEM_TOTAL}, {"memory_used_bytes", N_MEM_USED},
			{"memory_reserved_bytes", N_MEM_RESERVED},
		};
		for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++)
			if (!strcmp(k, bytes[i].key))
				return strcmp(v, "NA") ? parse_spec(p, k, v, bytes[i].num, 1, &g->num[bytes[i].num])
						       : (g->num[bytes[i].num].n = 0);
		for (int i = 0; i < N_COUNT; i++) {
			if (strcmp(k, num_keys[i]))
				continue;
			if (!strcmp(v, "NA")) {
				g->num[i].n = 0;
				return 0;
			}
			long long scale = i == N_MEM_TOTAL || i == N_MEM_USED || i == N_MEM_RESERVED ? 1LL << 20 : 1;
			return parse_spec(p, k, v, i, scale, &g->num[i]);
		}
		char why[200];   /* issue 26: the topology keys (fake-topo.c) */
		int t = fm_topo_key(&g->topo, k, v, why, sizeof why);
		if (t < 0)
			return fail(p, "%s%s", why, "");
		if (t == 0)
			return 0;
		return fail(p, "unknown gpu key '%s'%s", k, "");
	}
	return 0;
}

static int proc_key(struct parser *p, struct fm_proc *pr, const char *k, const char *v)
{
	long long n;
	if (!strcmp(k, "type")) {
		pr->type = !strcmp(v, "compute") ? FP_COMPUTE : !strcmp(v, "graphics") ? FP_GRAPHICS
			 : !strcmp(v, "both") ? FP_COMPUTE | FP_GRAPHICS : !strcmp(v, "mps") ? FP_MPS
			 : !strcmp(v, "gone") ? FP_GONE : 0;
		if (!pr->type)
			return fail(p, "type is compute, graphics, both, mps or gone, not '%s'%s", v, "");
		return 0;
	}
	for (int u = 0; u < U_COUNT; u++)
		if (!strcmp(k, util_keys[u]))
			return parse_spec(p, k, v, -1, 1, &pr->util[u]);
	if (!strcmp(k, "used_memory_mib") && !strcmp(v, "NA")) {
		pr->used_mib = -1;
		return 0;
	}
	if (!num(v, &n) || n < 0)
		return fail(p, "%s wants a number, not '%s'", k, v);
	if (!strcmp(k, "gpu"))
		pr->gpu = (int)n;
	else if (!strcmp(k, "pid"))
		pr->pid = (unsigned)n;
	else if (!strcmp(k, "used_memory_mib"))
		pr->used_mib = n;
	else if (!strcmp(k, "gi"))
		pr->gi = (unsigned)n;
	else if (!strcmp(k, "ci"))
		pr->ci = (unsigned)n;
	else
		return fail(p, "unknown process key '%s'%s", k, "");
	return 0;
}

static int mig_key(struct parser *p, struct fm_mig *mg, const char *k, const char *v)
{
	long long n;
	if (!strcmp(k, "uuid"))
		snprintf(mg->uuid, sizeof mg->uuid, "%s", v);
	else if (!strcmp(k, "name"))
		snprintf(mg->name, sizeof mg->name, "%s", v);
	else if (!num(v, &n) || n < 0)
		return fail(p, "%s wants a number, not '%s'", k, v);
	else if (!strcmp(k, "gpu"))
		mg->gpu = (int)n;
	else if (!strcmp(k, "slot"))
		mg->slot = (unsigned)n;
	else if (!strcmp(k, "gi"))
		mg->gi = (unsigned)n;
	else if (!strcmp(k, "ci"))
		mg->ci = (unsigned)n;
	else if (!strcmp(k, "memory_total_mib"))
		mg->mem_total_mib = n;
	else if (!strcmp(k, "memory_used_mib"))
		mg->mem_used_mib = n;
	else
		return fail(p, "unknown mig key '%s'%s", k, "");
	return 0;
}

static int top_key(struct parser *p, const char *k, const char *v)
{
	struct fm_machine *m = p->m;
	long long n;
	if (!strcmp(k, "driver_version"))
		snprintf(m->driver, sizeof m->driver, "%s", v);
	else if (!strcmp(k, "nvml_version"))
		snprintf(m->nvml, sizeof m->nvml, "%s", v);
	else if (!strcmp(k, "cuda_driver_version"))
		m->cuda = num(v, &n) ? (int)n : 0;
	else if (!strcmp(k, "init_error")) {
		if ((m->init_error = fm_code(v)) < 0)
			return fail(p, "unknown NVML error '%s'%s", v, "");
	} else if (!strcmp(k, "race_grow") && num(v, &n))
		m->race_grow = (int)n;
	else if (!strcmp(k, "unprivileged") && num(v, &n))
		m->unprivileged = (int)n;
	else if (!strcmp(k, "proc_sample_period")) {
		char *end;
		unsigned long ms = strtoul(v, &end, 10);
		if (!strcmp(v, "read"))
			m->sample_period_ms = 0;
		else if (end != v && !strcmp(end, "ms") && ms > 0)
			m->sample_period_ms = (unsigned)ms;
		else
			return fail(p, "proc_sample_period is Nms or read, not '%s'%s", v, "");
	} else if (!strcmp(k, "proc_sample_buffer") && num(v, &n) && n > 0)
		m->sample_buffer = (unsigned)n;
	else if (!strcmp(k, "proc_util_count_quirk") && num(v, &n))
		m->util_count_quirk = n != 0;
	else if (!strncmp(k, "fail.", 5))
		return set_fail(p, m->fails, &m->nfails, k + 5, v);
	else if (!strcmp(k, "nvswitch") && num(v, &n))   /* issue 26 */
		m->nvswitch = n != 0;
	else
		return fail(p, "unknown key '%s'%s", k, "");
	return 0;
}

static int end_section(struct parser *p)
{
	if (p->sec == S_MIG) {
		struct fm_mig *mg = &p->mig;
		if (mg->gpu < 0 || mg->gpu >= p->m->ngpus)
			return fail(p, "[mig] names gpu %s, which is not defined above%s", "?", "");
		struct fm_gpu *g = &p->m->gpus[mg->gpu];
		if (g->nmigs >= FM_MAX_MIGS)
			return fail(p, "too many [mig] sections for one gpu%s%s", "", "");
		g->migs[g->nmigs++] = *mg;
	}
	return 0;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int parse(struct parser *p, FILE *f, bool procs_only)
{
	char buf[1024];
	while (fgets(buf, sizeof buf, f)) {
		p->line++;
		char *hash = strstr(buf, " #");
		if (hash)
			*hash = '\0';
		char *s = trim(buf);
		if (!*s || *s == '#')
			continue;
		if (*s == '[') {
			if (end_section(p))
				return -1;
			struct fm_machine *m = p->m;
			if (!strcmp(s, "[process]")) {
				m->procs = realloc(m->procs, (m->nprocs + 1) * sizeof *m->procs);
				p->proc = &m->procs[m->nprocs++];
				*p->proc = (struct fm_proc){.type = FP_COMPUTE, .gi = 0xFFFFFFFFU,
							    .ci = 0xFFFFFFFFU};
				p->sec = S_PROC;
			} else if (procs_only) {
				return fail(p, "only [process] sections belong here, not %s%s", s, "");
			} else if (!strcmp(s, "[gpu]")) {
				if (m->ngpus >= FM_MAX_GPUS)
					return fail(p, "too many GPUs%s%s", "", "");
				struct fm_gpu *g = &m->gpus[m->ngpus];
				memset(g, 0, sizeof *g);
				g->topo.numa = g->topo.gpu_numa = -1;
				g->num[N_MINOR] = (struct fm_spec){.v = {m->ngpus++}, .n = 1};
				g->bus = (unsigned)m->ngpus;
				p->sec = S_GPU;
			} else if (!strcmp(s, "[mig]")) {
				p->mig = (struct fm_mig){.gpu = m->ngpus - 1};
				p->sec = S_MIG;
			} else {
				return fail(p, "unknown section %s%s", s, "");
			}
			continue;
		}
		char *eq = strchr(s, '=');
		if (!eq)
			return fail(p, "expected key = value, got '%s'%s", s, "");
		*eq = '\0';
		char *k = trim(s), *v = trim(eq + 1);
		int r = p->sec == S_TOP ? top_key(p, k, v)
		      : p->sec == S_GPU ? gpu_key(p, &p->m->gpus[p->m->ngpus - 1], k, v)
		      : p->sec == S_MIG ? mig_key(p, &p->mig, k, v)
					: proc_key(p, p->proc, k, v);
		if (r)
			return -1;
	}
	return end_section(p);
}

static int load(struct fm_machine *m, const char *path, char *err, size_t errlen, bool procs_only)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	struct parser p = {.m = m, .path = path, .sec = S_TOP, .err = err, .errlen = errlen};
	int r = parse(&p, f, procs_only);
	fclose(f);
	return r;
}

int fm_load(struct fm_machine *m, const char *path, char *err, size_t errlen)
{
	fm_free(m);
	m->sample_period_ms = 167;   /* about what drivers show: six samples a second */
	m->sample_buffer = 100;
	return load(m, path, err, errlen, false);
}

int fm_load_procs(struct fm_machine *m, const char *path, char *err, size_t errlen)
{
	return load(m, path, err, errlen, true);
}

void fm_free(struct fm_machine *m)
{
	free(m->procs);
	memset(m, 0, sizeof *m);
}
