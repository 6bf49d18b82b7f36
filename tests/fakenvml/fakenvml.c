/* fakenvml.c: a stand-in libnvidia-ml.so.1 for tests. It exports NVML's C ABI (plain, _v2 and _v3
 * symbols, each with its own struct layout), follows the library's protocols (refcounted init,
 * UNINITIALIZED before it, the two-call INSUFFICIENT_SIZE pattern, NOT_FOUND for empty MIG
 * slots) and answers from a machine file named by FAKENVML_MACHINE. Test code only: gpuctl never
 * links it; tests point GPUCTL_NVML_LIBRARY at it.
 *
 * Build variants: -DFAKE_OLD_DRIVER exports no _v2/_v3 symbols; -DFAKE_R535 writes the 32-byte
 * _v3 process entries of drivers 535.43-535.86 and lacks nvmlDeviceGetRunningProcessDetailList.
 *
 * FAKENVML_PROC_DIR: every file in it adds [process] sections (the test workload's).
 * FAKENVML_STATS: at the last nvmlShutdown, append call counts to this file. */
#include "machine.h"
#include "nvml_abi.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define API __attribute__((visibility("default")))
#define MAGIC_GPU 0x47505521
#define MAGIC_MIG 0x4D494721

static struct fm_machine M;
static int refcount;
static unsigned init_calls;
static struct timespec loaded_mtime;
static unsigned dev_calls[FM_MAX_GPUS];
static bool raced[FM_MAX_GPUS];

/* Call statistics by function (the __func__ pointer identifies it). */
static struct { const char *fn; unsigned long n; } stats[128];
static unsigned long total_calls;

static void count_call(const char *fn)
{
	total_calls++;
	for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++) {
		if (stats[i].fn == fn || !stats[i].fn) {
			stats[i].fn = fn;
			stats[i].n++;
			return;
		}
	}
}

static void write_stats(void)
{
	const char *path = getenv("FAKENVML_STATS");
	FILE *f = path ? fopen(path, "a") : NULL;
	if (!f)
		return;
	fprintf(f, "init %u\ncalls %lu\n", init_calls, total_calls);
	for (size_t i = 0; i < sizeof stats / sizeof stats[0] && stats[i].fn; i++)
		fprintf(f, "%s %lu\n", stats[i].fn, stats[i].n);
	fclose(f);
}

static void add_race_procs(int idx);

static int load_machine(void)
{
	const char *path = getenv("FAKENVML_MACHINE");
	char err[512];
	if (!path) {
		fprintf(stderr, "fakenvml: FAKENVML_MACHINE is not set\n");
		return NVML_ERROR_DRIVER_NOT_LOADED;
	}
	struct stat st;
	if (stat(path, &st) == 0)
		loaded_mtime = st.st_mtim;
	if (fm_load(&M, path, err, sizeof err)) {
		fprintf(stderr, "fakenvml: %s\n", err);
		return NVML_ERROR_UNKNOWN;
	}
	const char *dir = getenv("FAKENVML_PROC_DIR");
	DIR *d = dir ? opendir(dir) : NULL;
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char p[4096];
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		/* A workload may be writing or removing its file right now: skip what fails. A
		 * workload killed with SIGKILL leaves its file: its dead pid is dropped, as the driver
		 * forgets an exited process. */
		size_t before = M.nprocs;
		fm_load_procs(&M, p, err, sizeof err);
		for (size_t i = before; i < M.nprocs;)
			if (kill((pid_t)M.procs[i].pid, 0) != 0 && errno == ESRCH)
				M.procs[i] = M.procs[--M.nprocs];
			else
				M.procs[i++].dynamic = true;
	}
	if (d)
		closedir(d);
	for (int i = 0; i < M.ngpus; i++)
		if (raced[i])
			add_race_procs(i);
	return 0;
}

/* Processes come and go while a client runs: re-read them before each process query. */
static void reload_processes(void)
{
	struct stat st;
	const char *path = getenv("FAKENVML_MACHINE");
	bool changed = path && stat(path, &st) == 0 &&
		       (st.st_mtim.tv_sec != loaded_mtime.tv_sec ||
			st.st_mtim.tv_nsec != loaded_mtime.tv_nsec);
	if (changed || getenv("FAKENVML_PROC_DIR"))
		load_machine();
}

/* ---- handles and the common prologue ---- */

static struct fm_gpu *as_gpu(nvmlDevice_t h)
{
	struct fm_gpu *g = (struct fm_gpu *)h;
	for (int i = 0; i < M.ngpus; i++)
		if (g == &M.gpus[i])
			return g;
	return NULL;
}

static struct fm_mig *as_mig(nvmlDevice_t h)
{
	for (int i = 0; i < M.ngpus; i++)
		for (int j = 0; j < M.gpus[i].nmigs; j++)
			if ((struct fm_mig *)h == &M.gpus[i].migs[j])
				return (struct fm_mig *)h;
	return NULL;
}

static bool fn_matches(const char *key, const char *fn)
{
	size_t n = strlen(key);
	return !strncmp(key, fn, n) && (!fn[n] || (fn[n] == '_' && fn[n + 1] == 'v'));
}

static int injected(const struct fm_fail *f, int n, const char *fn)
{
	for (int i = 0; i < n; i++)
		if (fn_matches(f[i].fn, fn))
			return f[i].code;
	return 0;
}

/* Every device call: counted, initialised, a valid handle, then injected failures. */
static nvmlReturn_t enter(nvmlDevice_t h, const char *fn, struct fm_gpu **g, struct fm_mig **mg)
{
	count_call(fn);
	if (!refcount)
		return NVML_ERROR_UNINITIALIZED;
	*mg = as_mig(h);
	*g = *mg ? &M.gpus[(*mg)->gpu] : as_gpu(h);
	if (!*g)
		return NVML_ERROR_INVALID_ARGUMENT;
	int idx = (int)(*g - M.gpus);
	dev_calls[idx]++;
	if ((*g)->has[N_LOST_AFTER] && dev_calls[idx] > (unsigned long long)(*g)->num[N_LOST_AFTER])
		return NVML_ERROR_GPU_IS_LOST;
	int r = injected((*g)->fails, (*g)->nfails, fn);
	return r ? r : injected(M.fails, M.nfails, fn);
}

#define DEVICE(h)                                                     \
	struct fm_gpu *g;                                             \
	struct fm_mig *mg;                                            \
	nvmlReturn_t r_ = enter(h, __func__, &g, &mg);                 \
	if (r_)                                                       \
		return r_;                                            \
	(void)mg
#define SYSTEM()                                                      \
	count_call(__func__);                                         \
	if (!refcount)                                                \
		return NVML_ERROR_UNINITIALIZED;                       \
	{                                                             \
		int r_ = injected(M.fails, M.nfails, __func__);       \
		if (r_)                                               \
			return r_;                                    \
	}
#define NUM(field, out)                                               \
	do {                                                          \
		if (!(out))                                           \
			return NVML_ERROR_INVALID_ARGUMENT;            \
		if (mg || !g->has[field])                             \
			return NVML_ERROR_NOT_SUPPORTED;               \
		*(out) = (unsigned)g->num[field];                     \
		return NVML_SUCCESS;                                  \
	} while (0)

static nvmlReturn_t copy_str(char *dst, unsigned len, const char *src)
{
	if (!dst)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(src) + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, src, strlen(src) + 1);
	return NVML_SUCCESS;
}

/* ---- init and system ---- */

static nvmlReturn_t do_init(const char *fn)
{
	count_call(fn);
	init_calls++;
	if (refcount == 0) {
		int r = load_machine();
		if (r)
			return r;
		if (M.init_error)
			return M.init_error;
		memset(dev_calls, 0, sizeof dev_calls);
		memset(raced, 0, sizeof raced);
	}
	refcount++;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlInit(void) { return do_init(__func__); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlInit_v2(void) { return do_init(__func__); }
API nvmlReturn_t nvmlInitWithFlags(unsigned flags) { (void)flags; return do_init(__func__); }
#endif

API nvmlReturn_t nvmlShutdown(void)
{
	count_call(__func__);
	if (refcount == 0)
		return NVML_SUCCESS; /* extra shutdowns report no error, as the real library's do */
	if (--refcount == 0) {
		write_stats();
		fm_free(&M);
	}
	return NVML_SUCCESS;
}

API const char *nvmlErrorString(nvmlReturn_t r)
{
	static const struct { int code; const char *s; } t[] = {
		{0, "Success"}, {1, "Uninitialized"}, {2, "Invalid Argument"}, {3, "Not Supported"},
		{4, "Insufficient Permissions"}, {5, "Already Initialized"}, {6, "Not Found"},
		{7, "Insufficient Size"}, {8, "Insufficient External Power"},
		{9, "Driver Not Loaded"}, {10, "Timeout"}, {12, "NVML Shared Library Not Found"},
		{13, "Function Not Found"}, {14, "Corrupted infoROM"}, {15, "GPU is lost"},
		{16, "GPU requires restart"}, {17, "The operating system has blocked the request."},
		{18, "RM has detected an NVML/RM version mismatch."}, {20, "Insufficient Memory"},
		{25, "Version mismatch between passed in struct and driver's struct"},
		{28, "GPU not found"},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (t[i].code == (int)r)
			return t[i].s;
	return "Unknown Error";
}

API nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned len)
{
	SYSTEM();
	return M.driver[0] ? copy_str(v, len, M.driver) : NVML_ERROR_NOT_SUPPORTED;
}

API nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned len)
{
	count_call(__func__); /* needs no init */
	return copy_str(v, len, M.nvml[0] ? M.nvml : "12.550.54.15");
}

static nvmlReturn_t cuda_version(int *v)
{
	if (!v)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!M.cuda)
		return NVML_ERROR_LIBRARY_NOT_FOUND;
	*v = M.cuda;
	return NVML_SUCCESS;
}
API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) { SYSTEM(); return cuda_version(v); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { SYSTEM(); return cuda_version(v); }
#endif

/* ---- enumeration ---- */

static nvmlReturn_t get_count(unsigned *n, bool all)
{
	if (!n)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* The plain call leaves out devices the caller may not open. */
	*n = 0;
	for (int i = 0; i < M.ngpus; i++)
		if (all || M.gpus[i].handle_error != NVML_ERROR_NO_PERMISSION)
			(*n)++;
	return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetCount(unsigned *n) { SYSTEM(); return get_count(n, false); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n) { SYSTEM(); return get_count(n, true); }
#endif

static nvmlReturn_t by_index(unsigned i, nvmlDevice_t *h)
{
	if (!h || i >= (unsigned)M.ngpus)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (M.gpus[i].handle_error)
		return M.gpus[i].handle_error;
	*h = (nvmlDevice_t)&M.gpus[i];
	return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned i, nvmlDevice_t *h) { SYSTEM(); return by_index(i, h); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *h) { SYSTEM(); return by_index(i, h); }
#endif

API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *h)
{
	SYSTEM();
	if (!uuid || !h)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < M.ngpus; i++) {
		struct fm_gpu *g = &M.gpus[i];
		if (!strcmp(g->uuid, uuid)) {
			*h = (nvmlDevice_t)g;
			return NVML_SUCCESS;
		}
		for (int j = 0; j < g->nmigs; j++) {
			char old[160];
			snprintf(old, sizeof old, "MIG-%s/%u/%u", g->uuid, g->migs[j].gi, g->migs[j].ci);
			if (!strcmp(g->migs[j].uuid, uuid) || !strcmp(old, uuid)) {
				*h = (nvmlDevice_t)&g->migs[j];
				return NVML_SUCCESS;
			}
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t by_pci(const char *id, nvmlDevice_t *h)
{
	unsigned d = 0, b, dv, f = 0;
	char end;
	if (!id || !h)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (sscanf(id, "%x:%x:%x.%x%c", &d, &b, &dv, &f, &end) != 4 &&
	    sscanf(id, "%x:%x:%x%c", &d, &b, &dv, &end) != 3 &&
	    (d = 0, sscanf(id, "%x:%x.%x%c", &b, &dv, &f, &end) != 3))
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < M.ngpus; i++) {
		struct fm_gpu *g = &M.gpus[i];
		if (g->dom == d && g->bus == b && g->dev == dv && g->fn == f) {
			*h = (nvmlDevice_t)g;
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}
API nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *id, nvmlDevice_t *h) { SYSTEM(); return by_pci(id, h); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvmlDevice_t *h) { SYSTEM(); return by_pci(id, h); }
#endif

API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *name, unsigned len)
{
	DEVICE(h);
	return copy_str(name, len, mg ? mg->name : g->name);
}

API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *uuid, unsigned len)
{
	DEVICE(h);
	return copy_str(uuid, len, mg ? mg->uuid : g->uuid);
}

API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t h, unsigned *i)
{
	DEVICE(h);
	if (!i)
		return NVML_ERROR_INVALID_ARGUMENT;
	*i = mg ? mg->slot : (unsigned)(g - M.gpus);
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t h, unsigned *v) { DEVICE(h); NUM(N_MINOR, v); }

/* ---- PCI: v3 and the older 52-byte layout ---- */

static void fill_pci_common(const struct fm_gpu *g, unsigned *dom, unsigned *bus, unsigned *dev,
			    unsigned *devid)
{
	*dom = g->dom, *bus = g->bus, *dev = g->dev;
	*devid = g->has[N_PCI_DEVICE_ID] ? (unsigned)g->num[N_PCI_DEVICE_ID] : 0;
}

static nvmlReturn_t pci_v1(nvmlDevice_t h, nvmlPciInfo_v1_t *p, const char *fn)
{
	struct fm_gpu *g;
	struct fm_mig *mg;
	nvmlReturn_t r = enter(h, fn, &g, &mg);
	if (r)
		return r;
	if (!p)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(p, 0, sizeof *p);
	snprintf(p->busId, sizeof p->busId, "%04X:%02X:%02X.%X", g->dom & 0xFFFF, g->bus, g->dev, g->fn);
	fill_pci_common(g, &p->domain, &p->bus, &p->device, &p->pciDeviceId);
	return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t h, nvmlPciInfo_v1_t *p) { return pci_v1(h, p, __func__); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t h, nvmlPciInfo_v1_t *p) { return pci_v1(h, p, __func__); }

API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t *p)
{
	DEVICE(h);
	if (!p)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(p, 0, sizeof *p);
	snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04X:%02X:%02X.%X", g->dom & 0xFFFF, g->bus,
		 g->dev, g->fn);
	snprintf(p->busId, sizeof p->busId, "%08X:%02X:%02X.%X", g->dom, g->bus, g->dev, g->fn);
	fill_pci_common(g, &p->domain, &p->bus, &p->device, &p->pciDeviceId);
	return NVML_SUCCESS;
}
#endif

/* ---- memory ---- */

static nvmlReturn_t mem_values(struct fm_gpu *g, struct fm_mig *mg, unsigned long long *total,
			       unsigned long long *reserved, unsigned long long *used)
{
	const unsigned long long MiB = 1ULL << 20;
	if (mg) {
		*total = (unsigned long long)mg->mem_total_mib * MiB;
		*used = (unsigned long long)mg->mem_used_mib * MiB;
		*reserved = 0;
		return NVML_SUCCESS;
	}
	if (!g->has[N_MEM_TOTAL] || !g->has[N_MEM_USED])
		return NVML_ERROR_NOT_SUPPORTED;
	*total = (unsigned long long)g->num[N_MEM_TOTAL] * MiB;
	*used = (unsigned long long)g->num[N_MEM_USED] * MiB;
	/* A workload's allocation shows in the GPU's memory, as a real one would. */
	for (size_t i = 0; i < M.nprocs; i++)
		if (M.procs[i].dynamic && M.procs[i].gpu == (int)(g - M.gpus) && M.procs[i].used_mib > 0)
			*used += (unsigned long long)M.procs[i].used_mib * MiB;
	if (*used > *total)
		*used = *total;
	*reserved = g->has[N_MEM_RESERVED] ? (unsigned long long)g->num[N_MEM_RESERVED] * MiB : 0;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m)
{
	if (refcount)
		reload_processes();
	DEVICE(h);
	unsigned long long total, reserved, used;
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	nvmlReturn_t r = mem_values(g, mg, &total, &reserved, &used);
	if (r)
		return r;
	/* v1's used includes what the driver reserves. */
	m->total = total;
	m->used = used + reserved;
	m->free = total - used - reserved;
	return NVML_SUCCESS;
}

#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t h, nvmlMemory_v2_t *m)
{
	if (refcount)
		reload_processes();
	DEVICE(h);
	unsigned long long total, reserved, used;
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* The real library answers FUNCTION_NOT_FOUND to a wrong version word (e.g. a bare 2). */
	if (m->version != nvmlMemory_v2)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	nvmlReturn_t r = mem_values(g, mg, &total, &reserved, &used);
	if (r)
		return r;
	m->total = total;
	m->reserved = reserved;
	m->used = used;
	m->free = total - reserved - used;
	return NVML_SUCCESS;
}
#endif

/* ---- telemetry and modes ---- */

API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u)
{
	DEVICE(h);
	if (!u)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (mg || (g->has[N_MIG_MODE] && g->num[N_MIG_MODE]) || !g->has[N_UTIL_GPU])
		return NVML_ERROR_NOT_SUPPORTED;
	u->gpu = (unsigned)g->num[N_UTIL_GPU];
	u->memory = g->has[N_UTIL_MEM] ? (unsigned)g->num[N_UTIL_MEM] : 0;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int sensor, unsigned *t)
{
	DEVICE(h);
	if (sensor != NVML_TEMPERATURE_GPU)
		return NVML_ERROR_INVALID_ARGUMENT;
	NUM(N_TEMP, t);
}

API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned *p) { DEVICE(h); NUM(N_POWER, p); }
API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned *p) { DEVICE(h); NUM(N_POWER_LIMIT, p); }
API nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t h, unsigned *p) { DEVICE(h); NUM(N_FAN, p); }
API nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t h, unsigned *p) { DEVICE(h); NUM(N_CORES, p); }
API nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t h, unsigned *p) { DEVICE(h); NUM(N_ARCH, p); }
API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t h, unsigned *p)
{
	DEVICE(h);
	if (!p)
		return NVML_ERROR_INVALID_ARGUMENT;
	*p = g->has[N_MIG_MODE] && g->num[N_MIG_MODE] && g->has[N_MAX_MIG] ? (unsigned)g->num[N_MAX_MIG] : 0;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned *c)
{
	DEVICE(h);
	switch (type) {
	case NVML_CLOCK_GRAPHICS: NUM(N_CLK_GFX, c);
	case NVML_CLOCK_SM: NUM(N_CLK_SM, c);
	case NVML_CLOCK_MEM: NUM(N_CLK_MEM, c);
	default: return NVML_ERROR_INVALID_ARGUMENT;
	}
}

API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t h, int *m) { DEVICE(h); NUM(N_COMPUTE_MODE, m); }
API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t h, int *m) { DEVICE(h); NUM(N_PERSISTENCE, m); }

API nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t h, int *cur, int *pending)
{
	DEVICE(h);
	if (!pending)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (g->has[N_ECC])
		*pending = (int)g->num[N_ECC];
	NUM(N_ECC, cur);
}

API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t h, int type, int counter,
					      unsigned long long *n)
{
	DEVICE(h);
	if (!n || type < 0 || type > 1 || counter < 0 || counter > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (mg || !g->has[N_ECC] || !g->num[N_ECC])
		return NVML_ERROR_NOT_SUPPORTED;   /* no counts with ECC off */
	/* The machine file gives the uncorrected volatile count; the others are 0. */
	*n = type == 1 && counter == 0 && g->has[N_ECC_UNCORRECTED] ? (unsigned long long)g->num[N_ECC_UNCORRECTED] : 0;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t h, int *major, int *minor)
{
	DEVICE(h);
	if (!major || !minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!g->has[N_CC])
		return NVML_ERROR_NOT_SUPPORTED;
	*major = (int)(g->num[N_CC] / 10);
	*minor = (int)(g->num[N_CC] % 10);
	return NVML_SUCCESS;
}

/* ---- MIG ---- */

API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t h, unsigned *cur, unsigned *pending)
{
	DEVICE(h);
	if (!pending)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (g->has[N_MIG_MODE])
		*pending = (unsigned)g->num[N_MIG_MODE];
	NUM(N_MIG_MODE, cur);
}

API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t h, unsigned i, nvmlDevice_t *out)
{
	DEVICE(h);
	if (mg || !out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!g->has[N_MIG_MODE] || !g->num[N_MIG_MODE])
		return NVML_ERROR_NOT_SUPPORTED;
	for (int j = 0; j < g->nmigs; j++)
		if (g->migs[j].slot == i) {
			*out = (nvmlDevice_t)&g->migs[j];
			return NVML_SUCCESS;
		}
	return NVML_ERROR_NOT_FOUND;
}

API nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t h, unsigned *is)
{
	DEVICE(h);
	if (!is)
		return NVML_ERROR_INVALID_ARGUMENT;
	*is = mg != NULL;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t h, nvmlDevice_t *out)
{
	DEVICE(h);
	if (!mg || !out)
		return NVML_ERROR_INVALID_ARGUMENT;
	*out = (nvmlDevice_t)g;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t h, unsigned *id)
{
	DEVICE(h);
	if (!id)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mg)
		return NVML_ERROR_NOT_SUPPORTED;
	*id = mg->gi;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t h, unsigned *id)
{
	DEVICE(h);
	if (!id)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mg)
		return NVML_ERROR_NOT_SUPPORTED;
	*id = mg->ci;
	return NVML_SUCCESS;
}

/* ---- processes ---- */

/* Processes that start between a client's size query and its fetch (race_grow). */
static void add_race_procs(int idx)
{
	for (int i = 0; i < M.race_grow; i++) {
		M.procs = realloc(M.procs, (M.nprocs + 1) * sizeof *M.procs);
		M.procs[M.nprocs++] = (struct fm_proc){.gpu = idx, .pid = 3900000U + (unsigned)idx * 1000U + (unsigned)i,
						       .used_mib = 100, .type = FP_COMPUTE,
						       .gi = 0xFFFFFFFFU, .ci = 0xFFFFFFFFU};
	}
}

static void grow_race(struct fm_gpu *g)
{
	int idx = (int)(g - M.gpus);
	if (!M.race_grow || raced[idx])
		return;
	raced[idx] = true;
	add_race_procs(idx);
}

static nvmlReturn_t list_procs(nvmlDevice_t h, unsigned *count, void *buf, unsigned kind,
			       size_t stride, const char *fn)
{
	struct fm_gpu *g;
	struct fm_mig *mg;
	if (refcount)
		reload_processes();
	nvmlReturn_t r = enter(h, fn, &g, &mg);
	if (r)
		return r;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	int idx = (int)(g - M.gpus);
	bool mig_on = g->has[N_MIG_MODE] && g->num[N_MIG_MODE];
	/* Only privileged callers get a MIG parent's aggregate list. */
	if (mig_on && !mg && M.unprivileged)
		return NVML_ERROR_NO_PERMISSION;
	/* The size query sees the list before it grows; the fetch after it finds more. */
	if (*count > 0 && buf)
		grow_race(g);
	unsigned n = 0;
	for (size_t i = 0; i < M.nprocs; i++) {
		const struct fm_proc *p = &M.procs[i];
		if (p->gpu != idx || !(p->type & kind) || (mg && (p->gi != mg->gi || p->ci != mg->ci)))
			continue;
		if (n < *count && buf) {
			unsigned char *e = (unsigned char *)buf + n * stride;
			unsigned long long used = p->used_mib < 0 ? NVML_VALUE_NOT_AVAILABLE_ULL
					      : (unsigned long long)p->used_mib << 20;
			unsigned gi = mig_on ? p->gi : 0xFFFFFFFFU, ci = mig_on ? p->ci : 0xFFFFFFFFU;
			memset(e, 0, stride);
			memcpy(e, &p->pid, 4);
			memcpy(e + 8, &used, 8);
			if (stride >= 24) {
				memcpy(e + 16, &gi, 4);
				memcpy(e + 20, &ci, 4);
			}
		}
		n++;
	}
	if (n > *count) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	if (n && !buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = n;
	return NVML_SUCCESS;
}

#ifdef FAKE_R535
#define V3_STRIDE 32
#else
#define V3_STRIDE 24
#endif

#define PROC_API(Name, kind)                                                                    \
	API nvmlReturn_t nvmlDeviceGet##Name##RunningProcesses(nvmlDevice_t h, unsigned *c, void *b) \
	{ return list_procs(h, c, b, kind, 16, __func__); }
#define PROC_API_V(Name, kind)                                                                  \
	API nvmlReturn_t nvmlDeviceGet##Name##RunningProcesses_v2(nvmlDevice_t h, unsigned *c, void *b) \
	{ return list_procs(h, c, b, kind, 24, __func__); }                                     \
	API nvmlReturn_t nvmlDeviceGet##Name##RunningProcesses_v3(nvmlDevice_t h, unsigned *c, void *b) \
	{ return list_procs(h, c, b, kind, V3_STRIDE, __func__); }

PROC_API(Compute, FP_COMPUTE)
PROC_API(Graphics, FP_GRAPHICS)
PROC_API(MPSCompute, FP_MPS)
#ifndef FAKE_OLD_DRIVER
PROC_API_V(Compute, FP_COMPUTE)
PROC_API_V(Graphics, FP_GRAPHICS)
PROC_API_V(MPSCompute, FP_MPS)

/* Present in 535 and later; clients use it only as a driver-generation marker. */
API nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t h, void *info)
{
	DEVICE(h);
	(void)info;
	return NVML_ERROR_NOT_SUPPORTED;
}
#endif

#if !defined(FAKE_OLD_DRIVER) && !defined(FAKE_R535)
/* Added after 535.86, together with the revert to 24-byte _v3 entries. */
API nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t h, void *list)
{
	DEVICE(h);
	(void)list;
	return NVML_ERROR_NOT_SUPPORTED;
}
#endif
