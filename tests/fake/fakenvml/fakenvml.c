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
 * FAKENVML_STATS: at the last nvmlShutdown (or the exit, where none came), append call counts
 * to this file.
 * FAKENVML_DEV_DIR: the simulated device nodes (the device guard's tests, issue 25): nvmlInit
 * answers NO_PERMISSION when DIR/nvidiactl cannot be opened read-write by the caller, and a
 * GPU's handle (by index, UUID or bus id) when DIR/nvidia<minor> cannot; the plain
 * nvmlDeviceGetCount leaves such GPUs out. As the real library does (nvml.h: nvmlInit "NVML does
 * not have permission to talk to the driver", nvmlDeviceGetHandleByIndex_v2 "the user doesn't
 * have permission to talk to this device", nvmlDeviceGetCount_v2 counts them).
 *
 * This file: state, init, system queries, enumeration, PCI and memory. fake-telemetry.c has the
 * per-device readings, fake-procs.c the process lists and utilisation samples. */
#include "fake.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct fm_machine M;
int refcount;
static unsigned init_calls;
static struct timespec loaded_mtime;
static unsigned dev_calls[FM_MAX_GPUS];
/* Reads of each key per GPU, kept across reloads of the file so that lists keep advancing. */
static unsigned long reads[FM_MAX_GPUS][N_COUNT];
static unsigned long long t_init_us;

/* Call statistics by function (the __func__ pointer identifies it). */
static struct { const char *fn; unsigned long n; } stats[256];
static unsigned long total_calls;

void count_call(const char *fn)
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

static void stats_at_exit(void)
{
	if (refcount > 0)
		write_stats();
}

/* The workloads' processes: every file of FAKENVML_PROC_DIR adds [process] sections. */
static void load_dir(void)
{
	char err[512];
	const char *dir = getenv("FAKENVML_PROC_DIR");
	DIR *d = dir ? opendir(dir) : NULL;
	for (struct dirent *e; d && (e = readdir(d));) {
		/* A name ending in .tmp is a file still being written, to be renamed into place: read
		 * beside the file it replaces, one process would count twice. */
		size_t len = strlen(e->d_name);
		if (e->d_name[0] == '.' || (len > 4 && !strcmp(e->d_name + len - 4, ".tmp")))
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
}

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
	load_dir();
	procs_after_load();
	return 0;
}

/* Processes come and go while a client runs: re-read them before each process query. The
 * machine file only when it changed; the workloads' files each time (a big machine file parsed
 * at every query made each refresh of an ASan build take seconds). */
void reload_processes(void)
{
	struct stat st;
	const char *path = getenv("FAKENVML_MACHINE");
	bool changed = path && stat(path, &st) == 0 &&
		       (st.st_mtim.tv_sec != loaded_mtime.tv_sec ||
			st.st_mtim.tv_nsec != loaded_mtime.tv_nsec);
	if (changed) {
		load_machine();
	} else if (getenv("FAKENVML_PROC_DIR")) {
		size_t k = 0;   /* in order: the file's processes keep their places */
		for (size_t i = 0; i < M.nprocs; i++)
			if (!M.procs[i].dynamic)
				M.procs[k++] = M.procs[i];
		M.nprocs = k;
		load_dir();
	}
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

nvmlReturn_t enter(nvmlDevice_t h, const char *fn, struct dev *d)
{
	count_call(fn);
	if (!refcount)
		return NVML_ERROR_UNINITIALIZED;
	d->mg = as_mig(h);
	d->g = d->mg ? &M.gpus[d->mg->gpu] : as_gpu(h);
	if (!d->g)
		return NVML_ERROR_INVALID_ARGUMENT;
	d->idx = (int)(d->g - M.gpus);
	dev_calls[d->idx]++;
	if (d->g->num[N_LOST_AFTER].n && dev_calls[d->idx] > (unsigned long long)d->g->num[N_LOST_AFTER].v[0])
		return NVML_ERROR_GPU_IS_LOST;
	int r = injected(d->g->fails, d->g->nfails, fn);
	return r ? r : injected(M.fails, M.nfails, fn);
}

nvmlReturn_t enter_system(const char *fn)
{
	count_call(fn);
	if (!refcount)
		return NVML_ERROR_UNINITIALIZED;
	return injected(M.fails, M.nfails, fn);
}

unsigned long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000U;
}

unsigned long long init_us(void) { return t_init_us; }

bool has(const struct dev *d, enum fm_num k) { return k < N_COUNT && d->g->num[k].n > 0; }

long long val(const struct dev *d, enum fm_num k)
{
	unsigned long long ms = (now_us() - t_init_us) / 1000U;
	return fm_spec_at(&d->g->num[k], reads[d->idx][k]++, ms);
}

bool mig_on(const struct fm_gpu *g) { return g->num[N_MIG_MODE].n && g->num[N_MIG_MODE].v[0]; }

nvmlReturn_t get_uint(nvmlDevice_t h, const char *fn, enum fm_num k, unsigned *out)
{
	return get_uint_if(h, fn, true, k, out);
}

nvmlReturn_t get_uint_if(nvmlDevice_t h, const char *fn, bool arg_ok, enum fm_num k, unsigned *out)
{
	struct dev d;
	nvmlReturn_t r = enter(h, fn, &d);
	if (r)
		return r;
	if (!out || !arg_ok)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !has(&d, k))
		return NVML_ERROR_NOT_SUPPORTED;
	*out = (unsigned)val(&d, k);
	return NVML_SUCCESS;
}

nvmlReturn_t copy_str(char *dst, unsigned len, const char *src)
{
	if (!dst)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(src) + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, src, strlen(src) + 1);
	return NVML_SUCCESS;
}

/* ---- init and system ---- */

/* ---- the simulated device nodes (FAKENVML_DEV_DIR) ---- */

/* Whether the caller may open DIR/name read-write, as the driver's open of the node decides:
 * the real access check (mode, owner, ACL), by the kernel. 0: yes (or no DIR), else the error. */
static int node_denied(const char *name)
{
	const char *dir = getenv("FAKENVML_DEV_DIR");
	if (!dir || !*dir)
		return 0;
	char p[4096];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	int fd = open(p, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_ERROR_NO_PERMISSION;
	close(fd);
	return 0;
}

static int gpu_denied(const struct fm_gpu *g)
{
	char name[32];
	snprintf(name, sizeof name, "nvidia%lld", g->num[N_MINOR].n ? g->num[N_MINOR].v[0] : 0LL);
	int r = node_denied(name);
	return r ? NVML_ERROR_NO_PERMISSION : 0; /* a node missing: no way to talk to it either */
}

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
		int denied = node_denied("nvidiactl");
		if (denied) {
			fm_free(&M);
			return denied;
		}
		/* A process that exits without nvmlShutdown (gpuctl's commands: the exit releases
		 * all) has its counts written at its exit. */
		static bool hooked;
		if (!hooked && getenv("FAKENVML_STATS"))
			hooked = atexit(stats_at_exit) == 0;
		memset(dev_calls, 0, sizeof dev_calls);
		memset(reads, 0, sizeof reads);
		t_init_us = now_us();
		procs_reset();
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
	nvmlReturn_t r = enter_system(__func__);
	if (r)
		return r;
	return M.driver[0] ? copy_str(v, len, M.driver) : NVML_ERROR_NOT_SUPPORTED;
}

/* Needs no init: before it, the machine file is read just for this. */
API nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned len)
{
	count_call(__func__);
	struct fm_machine *m = &M, *tmp = NULL;
	char err[512], buf[96];
	const char *path = getenv("FAKENVML_MACHINE");
	if (!refcount) {
		tmp = calloc(1, sizeof *tmp);
		if (!tmp || !path || fm_load(tmp, path, err, sizeof err)) {
			if (tmp)
				fm_free(tmp);
			free(tmp);
			return NVML_ERROR_UNKNOWN;
		}
		m = tmp;
	}
	/* Without the key: NVML's major version and the driver's, as real libraries answer. */
	snprintf(buf, sizeof buf, "%s%s", m->nvml[0] ? "" : "12.",
		 m->nvml[0] ? m->nvml : m->driver[0] ? m->driver : "550.54.15");
	if (tmp) {
		fm_free(tmp);
		free(tmp);
	}
	return copy_str(v, len, buf);
}

static nvmlReturn_t cuda_version(const char *fn, int *v)
{
	nvmlReturn_t r = enter_system(fn);
	if (r)
		return r;
	if (!v)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!M.cuda)
		return NVML_ERROR_LIBRARY_NOT_FOUND;
	*v = M.cuda;
	return NVML_SUCCESS;
}
API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) { return cuda_version(__func__, v); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return cuda_version(__func__, v); }
#endif

/* ---- enumeration ---- */

static nvmlReturn_t get_count(const char *fn, unsigned *n, bool all)
{
	nvmlReturn_t r = enter_system(fn);
	if (r)
		return r;
	if (!n)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* The plain call leaves out devices the caller may not open. */
	*n = 0;
	for (int i = 0; i < M.ngpus; i++)
		if (all || (M.gpus[i].handle_error != NVML_ERROR_NO_PERMISSION && !gpu_denied(&M.gpus[i])))
			(*n)++;
	return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetCount(unsigned *n) { return get_count(__func__, n, false); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n) { return get_count(__func__, n, true); }
#endif

static nvmlReturn_t by_index(const char *fn, unsigned i, nvmlDevice_t *h)
{
	nvmlReturn_t r = enter_system(fn);
	if (r)
		return r;
	if (!h || i >= (unsigned)M.ngpus)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (M.gpus[i].handle_error)
		return M.gpus[i].handle_error;
	if (gpu_denied(&M.gpus[i]))
		return NVML_ERROR_NO_PERMISSION;
	*h = (nvmlDevice_t)&M.gpus[i];
	return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned i, nvmlDevice_t *h) { return by_index(__func__, i, h); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *h) { return by_index(__func__, i, h); }
#endif

API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *h)
{
	nvmlReturn_t r = enter_system(__func__);
	if (r)
		return r;
	if (!uuid || !h)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < M.ngpus; i++) {
		struct fm_gpu *g = &M.gpus[i];
		if (!strcmp(g->uuid, uuid)) {
			if (gpu_denied(g))
				return NVML_ERROR_NO_PERMISSION;
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

static nvmlReturn_t by_pci(const char *fn, const char *id, nvmlDevice_t *h)
{
	unsigned d = 0, b, dv, f = 0;
	char end;
	nvmlReturn_t r = enter_system(fn);
	if (r)
		return r;
	if (!id || !h)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (sscanf(id, "%x:%x:%x.%x%c", &d, &b, &dv, &f, &end) != 4 &&
	    sscanf(id, "%x:%x:%x%c", &d, &b, &dv, &end) != 3 &&
	    (d = 0, sscanf(id, "%x:%x.%x%c", &b, &dv, &f, &end) != 3))
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < M.ngpus; i++) {
		struct fm_gpu *g = &M.gpus[i];
		if (g->dom == d && g->bus == b && g->dev == dv && g->fn == f) {
			if (gpu_denied(g))
				return NVML_ERROR_NO_PERMISSION;
			*h = (nvmlDevice_t)g;
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}
API nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *id, nvmlDevice_t *h) { return by_pci(__func__, id, h); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvmlDevice_t *h) { return by_pci(__func__, id, h); }
#endif

API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *name, unsigned len)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	return r ? r : copy_str(name, len, d.mg ? d.mg->name : d.g->name);
}

API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *uuid, unsigned len)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	return r ? r : copy_str(uuid, len, d.mg ? d.mg->uuid : d.g->uuid);
}

API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t h, unsigned *i)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!i)
		return NVML_ERROR_INVALID_ARGUMENT;
	*i = d.mg ? d.mg->slot : (unsigned)d.idx;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t h, unsigned *v) { return get_uint(h, __func__, N_MINOR, v); }

/* ---- PCI: v3 and the older 52-byte layout ---- */

static void fill_pci_common(const struct dev *d, unsigned *dom, unsigned *bus, unsigned *dev,
			    unsigned *devid, unsigned *subsys)
{
	*dom = d->g->dom, *bus = d->g->bus, *dev = d->g->dev;
	*devid = has(d, N_PCI_DEVICE_ID) ? (unsigned)val(d, N_PCI_DEVICE_ID) : 0;
	*subsys = has(d, N_PCI_SUBSYS_ID) ? (unsigned)val(d, N_PCI_SUBSYS_ID) : 0;
}

static nvmlReturn_t pci_v1(nvmlDevice_t h, nvmlPciInfo_v1_t *p, const char *fn)
{
	struct dev d;
	nvmlReturn_t r = enter(h, fn, &d);
	if (r)
		return r;
	if (!p)
		return NVML_ERROR_INVALID_ARGUMENT;
	struct fm_gpu *g = d.g;
	memset(p, 0, sizeof *p);
	snprintf(p->busId, sizeof p->busId, "%04X:%02X:%02X.%X", g->dom & 0xFFFF, g->bus, g->dev, g->fn);
	fill_pci_common(&d, &p->domain, &p->bus, &p->device, &p->pciDeviceId, &p->pciSubSystemId);
	return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t h, nvmlPciInfo_v1_t *p) { return pci_v1(h, p, __func__); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t h, nvmlPciInfo_v1_t *p) { return pci_v1(h, p, __func__); }

API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t *p)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!p)
		return NVML_ERROR_INVALID_ARGUMENT;
	struct fm_gpu *g = d.g;
	memset(p, 0, sizeof *p);
	snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04X:%02X:%02X.%X", g->dom & 0xFFFF, g->bus,
		 g->dev, g->fn);
	snprintf(p->busId, sizeof p->busId, "%08X:%02X:%02X.%X", g->dom, g->bus, g->dev, g->fn);
	fill_pci_common(&d, &p->domain, &p->bus, &p->device, &p->pciDeviceId, &p->pciSubSystemId);
	return NVML_SUCCESS;
}
#endif

/* ---- memory ---- */

static nvmlReturn_t mem_values(const struct dev *d, unsigned long long *total,
			       unsigned long long *reserved, unsigned long long *used)
{
	const unsigned long long MiB = 1ULL << 20;
	if (d->mg) {
		*total = (unsigned long long)d->mg->mem_total_mib * MiB;
		*used = (unsigned long long)d->mg->mem_used_mib * MiB;
		*reserved = 0;
		return NVML_SUCCESS;
	}
	if (!has(d, N_MEM_TOTAL) || !has(d, N_MEM_USED))
		return NVML_ERROR_NOT_SUPPORTED;
	*total = (unsigned long long)val(d, N_MEM_TOTAL);
	*used = (unsigned long long)val(d, N_MEM_USED);
	/* A workload's allocation shows in the GPU's memory, as a real one would. */
	for (size_t i = 0; i < M.nprocs; i++)
		if (M.procs[i].dynamic && M.procs[i].gpu == d->idx && M.procs[i].used_mib > 0)
			*used += (unsigned long long)M.procs[i].used_mib * MiB;
	*reserved = has(d, N_MEM_RESERVED) ? (unsigned long long)val(d, N_MEM_RESERVED) : 0;
	if (*reserved > *total)
		*reserved = *total;
	if (*used > *total - *reserved)
		*used = *total - *reserved;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m)
{
	if (refcount)
		reload_processes();
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	unsigned long long total, reserved, used;
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((r = mem_values(&d, &total, &reserved, &used)))
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
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	unsigned long long total, reserved, used;
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* The real library answers FUNCTION_NOT_FOUND to a wrong version word (e.g. a bare 2). */
	if (m->version != nvmlMemory_v2)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	if ((r = mem_values(&d, &total, &reserved, &used)))
		return r;
	m->total = total;
	m->reserved = reserved;
	m->used = used;
	m->free = total - reserved - used;
	return NVML_SUCCESS;
}
#endif
