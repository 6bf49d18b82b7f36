/* nvml.c: the NVIDIA backend. Loads libnvidia-ml at run time (never linked), resolves each
 * function with its versioned fallbacks and reads every struct with the layout of the symbol that
 * was found. A symbol an older driver lacks leaves its fields unavailable; a GPU that answers
 * GPU_IS_LOST is marked lost and not queried again, while the others carry on. */
#include "gpu.h"
#include "nvml_abi.h"
#include "util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef nvmlReturn_t (*proc_fn)(nvmlDevice_t, unsigned *, void *);
enum { PK_COMPUTE, PK_GRAPHICS, PK_MPS, PK_N };
static const unsigned pk_type[PK_N] = {PROC_COMPUTE, PROC_GRAPHICS, PROC_MPS | PROC_COMPUTE};

/* One loaded library per process; gpuctl never opens two. */
static struct {
	void *dl;
	const char *path;
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	const char *(*error_string)(nvmlReturn_t);
	nvmlReturn_t (*driver_version)(char *, unsigned);
	nvmlReturn_t (*cuda_version)(int *);
	nvmlReturn_t (*count)(unsigned *);
	nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *);
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned);
	void *pci;
	int pci_ver;
	nvmlReturn_t (*mem_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
	nvmlReturn_t (*mem_v1)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *);
	nvmlReturn_t (*temp)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*power)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*fan)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*compute_mode)(nvmlDevice_t, int *);
	nvmlReturn_t (*persistence)(nvmlDevice_t, int *);
	nvmlReturn_t (*ecc)(nvmlDevice_t, int *, int *);
	nvmlReturn_t (*ecc_errors)(nvmlDevice_t, int, int, unsigned long long *);
	nvmlReturn_t (*cc)(nvmlDevice_t, int *, int *);
	nvmlReturn_t (*cores)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned *, unsigned *);
	nvmlReturn_t (*max_mig)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*mig_by_index)(nvmlDevice_t, unsigned, nvmlDevice_t *);
	nvmlReturn_t (*gi_id)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*ci_id)(nvmlDevice_t, unsigned *);
	proc_fn procs[PK_N];
	size_t proc_stride[PK_N];
	void *cc_mem_size, *detail_list;   /* only probed, for the r535 layout heuristic */
	/* Process entries, shared by every GPU (a list is used up before the next is asked for)
	 * and kept across refreshes: 10 KB, not 10 KB per GPU on a 64-GPU machine. */
	unsigned char *procbuf;
	size_t procbuf_cap;                /* in entries of the widest stride */
} L;

struct nvml_dev {
	nvmlDevice_t h;
	nvmlDevice_t *mig_h;
};

/* Resolve the first exported name of a NULL-terminated list (htop's resolve(), with fallbacks).
 * Returns its position in the list, or -1 when the library has none of them. */
static int resolve_first(void **slot, const char *const *names)
{
	for (int i = 0; names[i]; i++) {
		void *p = dlsym(L.dl, names[i]);
		if (p) {
			*slot = p;
			return i;
		}
	}
	*slot = NULL;
	return -1;
}
#define resolve(field, ...) resolve_first((void **)&L.field, (const char *const[]){__VA_ARGS__, NULL})

static const char *errstr(nvmlReturn_t r)
{
	static char buf[32];
	if (L.error_string) {
		const char *s = L.error_string(r);
		if (s)
			return s;
	}
	snprintf(buf, sizeof buf, "NVML error %d", (int)r);
	return buf;
}

static const char *init_hint(nvmlReturn_t r)
{
	switch (r) {
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "the NVIDIA kernel driver is not loaded: check `lsmod | grep nvidia` and `dmesg`";
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
		return "the NVML library and the kernel driver differ in version (driver upgraded without "
		       "a reboot?): reboot or reload the nvidia kernel modules";
	case NVML_ERROR_NO_PERMISSION:
		return "no permission to open the NVIDIA device files (/dev/nvidia*)";
	default:
		return "check that `nvidia-smi` works on this machine";
	}
}

static void resolve_all(void)
{
	resolve(error_string, "nvmlErrorString");
	resolve(driver_version, "nvmlSystemGetDriverVersion");
	resolve(cuda_version, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion");
	resolve(name, "nvmlDeviceGetName");
	resolve(uuid, "nvmlDeviceGetUUID");
	L.pci_ver = 3 - resolve(pci, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2",
				"nvmlDeviceGetPciInfo");
	resolve(mem_v2, "nvmlDeviceGetMemoryInfo_v2");
	resolve(mem_v1, "nvmlDeviceGetMemoryInfo");
	resolve(util, "nvmlDeviceGetUtilizationRates");
	resolve(temp, "nvmlDeviceGetTemperature");
	resolve(power, "nvmlDeviceGetPowerUsage");
	resolve(power_limit, "nvmlDeviceGetEnforcedPowerLimit");
	resolve(fan, "nvmlDeviceGetFanSpeed");
	resolve(clock, "nvmlDeviceGetClockInfo");
	resolve(compute_mode, "nvmlDeviceGetComputeMode");
	resolve(persistence, "nvmlDeviceGetPersistenceMode");
	resolve(ecc, "nvmlDeviceGetEccMode");
	resolve(ecc_errors, "nvmlDeviceGetTotalEccErrors");
	resolve(cc, "nvmlDeviceGetCudaComputeCapability");
	resolve(cores, "nvmlDeviceGetNumGpuCores");
	resolve(mig_mode, "nvmlDeviceGetMigMode");
	resolve(max_mig, "nvmlDeviceGetMaxMigDeviceCount");
	resolve(mig_by_index, "nvmlDeviceGetMigDeviceHandleByIndex");
	resolve(gi_id, "nvmlDeviceGetGpuInstanceId");
	resolve(ci_id, "nvmlDeviceGetComputeInstanceId");
	resolve(cc_mem_size, "nvmlDeviceGetConfComputeMemSizeInfo");
	resolve(detail_list, "nvmlDeviceGetRunningProcessDetailList");

	static const char *const names[PK_N][3] = {
		{"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
		 "nvmlDeviceGetComputeRunningProcesses"},
		{"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2",
		 "nvmlDeviceGetGraphicsRunningProcesses"},
		{"nvmlDeviceGetMPSComputeRunningProcesses_v3",
		 "nvmlDeviceGetMPSComputeRunningProcesses_v2", "nvmlDeviceGetMPSComputeRunningProcesses"},
	};
	for (int k = 0; k < PK_N; k++) {
		int at = resolve(procs[k], names[k][0], names[k][1], names[k][2]);
		/* Drivers 535.43-535.86 wrote 32-byte _v3 entries with no version bump; they are the
		 * ones with the confidential-computing query but without the detail list (nvitop's rule). */
		if (at == 0 && L.cc_mem_size && !L.detail_list)
			L.proc_stride[k] = sizeof(nvmlProcessInfo_r535_t);
		else if (at == 0 || at == 1)
			L.proc_stride[k] = sizeof(nvmlProcessInfo_v2_t);
		else
			L.proc_stride[k] = sizeof(nvmlProcessInfo_v1_t);
	}
}

static bool load(struct gpu_error *err)
{
	const char *env = getenv("GPUCTL_NVML_LIBRARY");
	const char *const defaults[] = {"libnvidia-ml.so.1", "libnvidia-ml.so", NULL};
	const char *const only_env[] = {env, NULL};
	const char *const *try = env && *env ? only_env : defaults;
	char why[512] = "";
	for (int i = 0; try[i] && !L.dl; i++) {
		L.dl = dlopen(try[i], RTLD_NOW | RTLD_LOCAL);
		L.path = try[i];
		if (!L.dl && !why[0]) /* the first name's reason: the fallback's would only confuse */
			snprintf(why, sizeof why, "%s", dlerror());
	}
	if (!L.dl) {
		err->code = EXIT_NO_NVML;
		if (env && *env)
			snprintf(err->msg, sizeof err->msg,
				 "cannot load NVML from GPUCTL_NVML_LIBRARY=%s: %s", env, why);
		else
			snprintf(err->msg, sizeof err->msg,
				 "cannot load libnvidia-ml.so.1 (%s).\nIt looks like no NVIDIA driver is "
				 "installed. If NVML is installed elsewhere, set "
				 "GPUCTL_NVML_LIBRARY=/path/to/libnvidia-ml.so.1", why);
		return false;
	}
	const char *missing = NULL;
	if (resolve(init, "nvmlInit_v2", "nvmlInit") < 0)
		missing = "nvmlInit";
	else if (resolve(shutdown, "nvmlShutdown") < 0)
		missing = "nvmlShutdown";
	else if (resolve(count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount") < 0)
		missing = "nvmlDeviceGetCount";
	else if (resolve(by_index, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex") < 0)
		missing = "nvmlDeviceGetHandleByIndex";
	if (missing) {
		err->code = EXIT_NO_NVML;
		snprintf(err->msg, sizeof err->msg,
			 "%s does not look like NVML: it has no %s; point GPUCTL_NVML_LIBRARY at the "
			 "driver's libnvidia-ml.so.1", L.path, missing);
		dlclose(L.dl);
		L.dl = NULL;
		return false;
	}
	resolve_all();
	return true;
}

/* Record a failed query. Only GPU_IS_LOST ends a GPU; other failures leave one field unavailable. */
static bool ok(struct gpu *g, nvmlReturn_t r)
{
	if (r == NVML_SUCCESS)
		return true;
	if (r == NVML_ERROR_GPU_IS_LOST)
		gpu_mark_lost(g, errstr(r));
	else if (r != NVML_ERROR_NOT_SUPPORTED && r != NVML_ERROR_FUNCTION_NOT_FOUND)
		g->errors++;
	return false;
}

static void read_pci(struct gpu *g, nvmlDevice_t h)
{
	const char *s = NULL;
	nvmlPciInfo_t v3;
	nvmlPciInfo_v1_t v1;
	if (!L.pci)
		return;
	if (L.pci_ver == 3) {
		if (!ok(g, ((nvmlReturn_t(*)(nvmlDevice_t, nvmlPciInfo_t *))L.pci)(h, &v3)))
			return;
		v3.busId[sizeof v3.busId - 1] = '\0';
		s = v3.busId;
		GPU_SET(g, GF_PCI_DEVICE_ID, pci_device_id, v3.pciDeviceId);
	} else {
		if (!ok(g, ((nvmlReturn_t(*)(nvmlDevice_t, nvmlPciInfo_v1_t *))L.pci)(h, &v1)))
			return;
		v1.busId[sizeof v1.busId - 1] = '\0';
		s = v1.busId;
		GPU_SET(g, GF_PCI_DEVICE_ID, pci_device_id, v1.pciDeviceId);
	}
	/* Old layouts give "0000:3B:00.0"; show every bus id in nvidia-smi's 8-digit form. */
	if (parse_pci_bus_id(s, &g->pci_domain, &g->pci_bus, &g->pci_dev, &g->pci_fn))
		snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%08X:%02X:%02X.%X", g->pci_domain,
			 g->pci_bus, g->pci_dev, g->pci_fn);
}

static void open_migs(struct gpu *g, struct nvml_dev *d)
{
	unsigned max = 0;
	if (!L.max_mig || !L.mig_by_index || !ok(g, L.max_mig(d->h, &max)) || max == 0)
		return;
	g->migs = xcalloc(max, sizeof *g->migs);
	d->mig_h = xcalloc(max, sizeof *d->mig_h);
	for (unsigned i = 0; i < max; i++) {
		nvmlDevice_t mh;
		/* Empty slots answer NOT_FOUND: skip them. */
		if (L.mig_by_index(d->h, i, &mh) != NVML_SUCCESS)
			continue;
		struct mig_dev *m = &g->migs[g->nmigs];
		m->slot = i;
		m->gi = m->ci = NO_INSTANCE;
		if (L.uuid)
			L.uuid(mh, m->uuid, sizeof m->uuid);
		if (L.name)
			L.name(mh, m->name, sizeof m->name);
		if (L.gi_id)
			L.gi_id(mh, &m->gi);
		if (L.ci_id)
			L.ci_id(mh, &m->ci);
		d->mig_h[g->nmigs++] = mh;
	}
}

static void open_gpu(struct gpu *g, struct nvml_dev *d)
{
	nvmlReturn_t r = L.by_index(g->index, &d->h);
	if (r != NVML_SUCCESS) {
		if (r == NVML_ERROR_GPU_IS_LOST)
			gpu_mark_lost(g, errstr(r));
		else {
			g->inaccessible = true;
			g->error = xstrdup(errstr(r));
		}
		return;
	}
	if (L.name)
		ok(g, L.name(d->h, g->name, sizeof g->name));
	if (L.uuid)
		ok(g, L.uuid(d->h, g->uuid, sizeof g->uuid));
	read_pci(g, d->h);
	int major, minor;
	if (L.cc && ok(g, L.cc(d->h, &major, &minor))) {
		GPU_SET(g, GF_CC, cc_major, major);
		g->cc_minor = minor;
	}
	unsigned v, pending;
	if (L.cores && ok(g, L.cores(d->h, &v)))
		GPU_SET(g, GF_CORES, cores, v);
	if (L.mig_mode && ok(g, L.mig_mode(d->h, &v, &pending))) {
		GPU_SET(g, GF_MIG_MODE, mig_mode, v);
		if (v == 1)
			open_migs(g, d);
	}
}

static bool nvml_open(struct gpu_set *set, struct gpu_error *err)
{
	if (!L.dl && !load(err))
		return false;
	nvmlReturn_t r = L.init();
	if (r != NVML_SUCCESS) {
		err->code = EXIT_NVML_INIT;
		snprintf(err->msg, sizeof err->msg, "NVML failed to initialise: %s (%s)", errstr(r),
			 init_hint(r));
		return false;
	}
	unsigned n = 0;
	r = L.count(&n);
	if (r != NVML_SUCCESS) {
		err->code = EXIT_NVML_INIT;
		snprintf(err->msg, sizeof err->msg, "NVML could not count the GPUs: %s (%s)", errstr(r),
			 init_hint(r));
		L.shutdown();
		return false;
	}
	if (L.driver_version &&
	    L.driver_version(set->driver_version, sizeof set->driver_version) == NVML_SUCCESS)
		set->has_driver_version = true;
	int cv;
	if (L.cuda_version && L.cuda_version(&cv) == NVML_SUCCESS)
		set->cuda_version = cv;
	set->ngpus = n;
	set->gpus = xcalloc(n, sizeof *set->gpus);
	for (unsigned i = 0; i < n; i++) {
		struct gpu *g = &set->gpus[i];
		struct nvml_dev *d = xcalloc(1, sizeof *d);
		g->index = i;
		g->selected = true;
		g->priv = d;
		open_gpu(g, d);
	}
	return true;
}

/* The two-call protocol: ask with the buffer we have (empty at first); on INSUFFICIENT_SIZE grow
 * to 2n+5 entries and ask again, since processes may start between the two calls. The buffer is
 * kept, so a steady machine costs one call per list per refresh. */
static nvmlReturn_t query_procs(nvmlDevice_t h, int k, unsigned *count)
{
	for (int tries = 0; tries < 10; tries++) {
		unsigned n = (unsigned)L.procbuf_cap;
		nvmlReturn_t r = L.procs[k](h, &n, L.procbuf_cap ? L.procbuf : NULL);
		if (r != NVML_ERROR_INSUFFICIENT_SIZE) {
			*count = r == NVML_SUCCESS ? (n < L.procbuf_cap ? n : (unsigned)L.procbuf_cap) : 0;
			return r;
		}
		size_t want = 2 * (size_t)n + 5;
		if (want <= L.procbuf_cap)
			want = 2 * L.procbuf_cap;
		/* Sized for the widest layout so the buffer serves every list kind. */
		L.procbuf = xrealloc(L.procbuf, want * sizeof(nvmlProcessInfo_r535_t));
		L.procbuf_cap = want;
	}
	return NVML_ERROR_INSUFFICIENT_SIZE;
}

static struct gpu_proc *proc_slot(struct gpu *g, unsigned pid, bool merge)
{
	/* Graphics and MPS entries merge into an existing entry for the same pid; the first list
	 * needs no search, as NVML lists a pid once per list. */
	for (size_t i = 0; merge && i < g->nprocs; i++)
		if (g->procs[i].pid == pid)
			return &g->procs[i];
	g->procs = grow_array(g->procs, &g->procs_cap, g->nprocs + 1, sizeof *g->procs);
	struct gpu_proc *p = &g->procs[g->nprocs++];
	*p = (struct gpu_proc){.pid = pid, .gi = NO_INSTANCE, .ci = NO_INSTANCE};
	return p;
}

static void add_procs(struct gpu *g, int k, unsigned n, const struct mig_dev *m, bool merge)
{
	size_t stride = L.proc_stride[k];
	if (g->nprocs + n > g->procs_cap) { /* exactly: 10,000 entries are 640 KB */
		g->procs_cap = g->nprocs + n;
		g->procs = xrealloc(g->procs, g->procs_cap * sizeof *g->procs);
	}
	for (unsigned i = 0; i < n; i++) {
		const unsigned char *e = L.procbuf + i * stride;
		unsigned pid;
		unsigned long long mem;
		memcpy(&pid, e, sizeof pid);
		memcpy(&mem, e + offsetof(nvmlProcessInfo_v1_t, usedGpuMemory), sizeof mem);
		struct gpu_proc *p = proc_slot(g, pid, merge);
		p->type |= pk_type[k];
		if (mem != NVML_VALUE_NOT_AVAILABLE_ULL && (!p->mem_valid || mem > p->used_mem)) {
			p->mem_valid = true;
			p->used_mem = mem;
		}
		if (stride >= sizeof(nvmlProcessInfo_v2_t)) {
			memcpy(&p->gi, e + offsetof(nvmlProcessInfo_v2_t, gpuInstanceId), sizeof p->gi);
			memcpy(&p->ci, e + offsetof(nvmlProcessInfo_v2_t, computeInstanceId), sizeof p->ci);
		}
		if (m) {
			p->gi = m->gi;
			p->ci = m->ci;
		}
	}
}

/* The list is valid only when every list that exists was read: a compute list that failed next
 * to a graphics list that worked would pass a partial list off as complete. */
static void refresh_procs(struct gpu *g, struct nvml_dev *d)
{
	bool complete = true;
	g->nprocs = 0;
	for (int k = 0; k < PK_N; k++) {
		if (!L.procs[k])
			continue;
		bool merge = g->nprocs > 0;
		unsigned n;
		nvmlReturn_t r = query_procs(d->h, k, &n);
		if (r == NVML_SUCCESS) {
			add_procs(g, k, n, NULL, merge);
		} else if (r == NVML_ERROR_NO_PERMISSION && g->nmigs) {
			/* Under MIG only privileged callers get the parent's aggregate: ask each instance. */
			for (size_t m = 0; m < g->nmigs; m++) {
				r = query_procs(d->mig_h[m], k, &n);
				if (r == NVML_SUCCESS)
					add_procs(g, k, n, &g->migs[m], merge);
				else if (k != PK_MPS && r != NVML_ERROR_NOT_SUPPORTED)
					complete = false;
			}
		} else if (k != PK_MPS && r != NVML_ERROR_NOT_SUPPORTED) {
			ok(g, r);
			complete = false;
		}
	}
	if (complete)
		g->valid |= 1ULL << GF_PROCESSES;
	else
		g->nprocs = 0;
}

static void refresh_mem(struct gpu *g, struct nvml_dev *d)
{
	if (L.mem_v2) {
		nvmlMemory_v2_t m = {.version = nvmlMemory_v2};
		nvmlReturn_t r = L.mem_v2(d->h, &m);
		if (r == NVML_SUCCESS) {
			GPU_SET(g, GF_MEM_TOTAL, mem_total, m.total);
			GPU_SET(g, GF_MEM_USED, mem_used, m.used);
			GPU_SET(g, GF_MEM_FREE, mem_free, m.free);
			GPU_SET(g, GF_MEM_RESERVED, mem_reserved, m.reserved);
			return;
		}
		/* A driver that rejects the version word answers FUNCTION_NOT_FOUND or
		 * ARGUMENT_VERSION_MISMATCH: use the plain call from now on. */
		if (r != NVML_ERROR_FUNCTION_NOT_FOUND && r != NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
			ok(g, r);
			return;
		}
		L.mem_v2 = NULL;
	}
	nvmlMemory_t m;
	if (L.mem_v1 && ok(g, L.mem_v1(d->h, &m))) {
		GPU_SET(g, GF_MEM_TOTAL, mem_total, m.total);
		GPU_SET(g, GF_MEM_USED, mem_used, m.used);
		GPU_SET(g, GF_MEM_FREE, mem_free, m.free);
	}
}

static void refresh_migs(struct gpu *g, struct nvml_dev *d)
{
	for (size_t i = 0; i < g->nmigs; i++) {
		struct mig_dev *m = &g->migs[i];
		nvmlMemory_t mm;
		nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
		m->mem_valid = false;
		if (L.mem_v2 && L.mem_v2(d->mig_h[i], &m2) == NVML_SUCCESS) {
			m->mem_total = m2.total;
			m->mem_used = m2.used;
			m->mem_valid = true;
		} else if (L.mem_v1 && L.mem_v1(d->mig_h[i], &mm) == NVML_SUCCESS) {
			m->mem_total = mm.total;
			m->mem_used = mm.used;
			m->mem_valid = true;
		}
	}
}

static void refresh_gpu(struct gpu *g, struct nvml_dev *d, unsigned what)
{
	const uint64_t static_fields = 1ULL << GF_CC | 1ULL << GF_PCI_DEVICE_ID | 1ULL << GF_CORES |
				       1ULL << GF_MIG_MODE;
	unsigned v;
	int iv, iv2;
	g->valid &= static_fields;
	refresh_mem(g, d);
	nvmlUtilization_t u;
	if (L.util && ok(g, L.util(d->h, &u))) {
		GPU_SET(g, GF_UTIL_GPU, util_gpu, u.gpu);
		GPU_SET(g, GF_UTIL_MEM, util_mem, u.memory);
	}
	if (L.temp && ok(g, L.temp(d->h, NVML_TEMPERATURE_GPU, &v)))
		GPU_SET(g, GF_TEMP, temp, v);
	if (L.power && ok(g, L.power(d->h, &v)))
		GPU_SET(g, GF_POWER, power_mw, v);
	if (L.power_limit && ok(g, L.power_limit(d->h, &v)))
		GPU_SET(g, GF_POWER_LIMIT, power_limit_mw, v);
	if (L.compute_mode && ok(g, L.compute_mode(d->h, &iv)))
		GPU_SET(g, GF_COMPUTE_MODE, compute_mode, (unsigned)iv);
	if (what & REFRESH_EXTRA) {
		if (L.fan && ok(g, L.fan(d->h, &v)))
			GPU_SET(g, GF_FAN, fan, v);
		if (L.clock && ok(g, L.clock(d->h, NVML_CLOCK_GRAPHICS, &v)))
			GPU_SET(g, GF_CLK_GFX, clk_gfx, v);
		if (L.clock && ok(g, L.clock(d->h, NVML_CLOCK_SM, &v)))
			GPU_SET(g, GF_CLK_SM, clk_sm, v);
		if (L.clock && ok(g, L.clock(d->h, NVML_CLOCK_MEM, &v)))
			GPU_SET(g, GF_CLK_MEM, clk_mem, v);
		if (L.persistence && ok(g, L.persistence(d->h, &iv)))
			GPU_SET(g, GF_PERSISTENCE, persistence, (unsigned)iv);
		if (L.ecc && ok(g, L.ecc(d->h, &iv, &iv2)))
			GPU_SET(g, GF_ECC, ecc, (unsigned)iv);
		unsigned long long n;
		if (L.ecc_errors && ok(g, L.ecc_errors(d->h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
						       NVML_VOLATILE_ECC, &n)))
			GPU_SET(g, GF_ECC_UNCORRECTED, ecc_uncorrected, n);
	}
	if (g->nmigs)
		refresh_migs(g, d);
	if (what & REFRESH_PROCS)
		refresh_procs(g, d);
}

static void nvml_refresh(struct gpu_set *set, unsigned what)
{
	for (size_t i = 0; i < set->ngpus; i++) {
		struct gpu *g = &set->gpus[i];
		if (g->selected && !g->lost && !g->inaccessible)
			refresh_gpu(g, g->priv, what);
	}
}

static void nvml_close(struct gpu_set *set)
{
	for (size_t i = 0; i < set->ngpus; i++) {
		struct nvml_dev *d = set->gpus[i].priv;
		if (d) {
			free(d->mig_h);
			free(d);
		}
	}
	free(L.procbuf);
	L.procbuf = NULL;
	L.procbuf_cap = 0;
	if (L.dl)
		L.shutdown();
}

const struct gpu_backend nvml_backend = {
	.name = "nvidia",
	.open = nvml_open,
	.refresh = nvml_refresh,
	.close = nvml_close,
};
