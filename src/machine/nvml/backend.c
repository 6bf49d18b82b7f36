/* nvml.c: the NVIDIA backend. Loads libnvidia-ml at run time (never linked), resolves each
 * function with its versioned fallbacks and reads every struct with the layout of the symbol that
 * was found. A symbol an older driver lacks leaves its fields unavailable; a GPU that answers
 * GPU_IS_LOST is marked lost and not queried again, while the others carry on. This file: loading,
 * opening, the base refresh and the process lists; nvml_extra.c reads what is asked for besides. */
#include "base/dl.h"
#include "machine/nvml/backend.h"
#include "base/util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned pk_type[PK_N] = {PROC_COMPUTE, PROC_GRAPHICS, PROC_MPS | PROC_COMPUTE};

struct nvml_lib nvml;

/* Where each function pointer of nvml lives and the names that may fill it, preferred first. */
struct sym {
	size_t off;
	const char *names[4];
};

static const struct sym required[] = {
	{offsetof(struct nvml_lib, init), {"nvmlInit_v2", "nvmlInit"}},
	{offsetof(struct nvml_lib, shutdown), {"nvmlShutdown"}},
	{offsetof(struct nvml_lib, count), {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}},
	{offsetof(struct nvml_lib, by_index), {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}},
};

static const struct sym optional[] = {
	{offsetof(struct nvml_lib, error_string), {"nvmlErrorString"}},
	{offsetof(struct nvml_lib, driver_version), {"nvmlSystemGetDriverVersion"}},
	{offsetof(struct nvml_lib, cuda_version), {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"}},
	{offsetof(struct nvml_lib, name), {"nvmlDeviceGetName"}},
	{offsetof(struct nvml_lib, uuid), {"nvmlDeviceGetUUID"}},
	{offsetof(struct nvml_lib, mem_v2), {"nvmlDeviceGetMemoryInfo_v2"}},
	{offsetof(struct nvml_lib, mem_v1), {"nvmlDeviceGetMemoryInfo"}},
	{offsetof(struct nvml_lib, util), {"nvmlDeviceGetUtilizationRates"}},
	{offsetof(struct nvml_lib, temp), {"nvmlDeviceGetTemperature"}},
	{offsetof(struct nvml_lib, power), {"nvmlDeviceGetPowerUsage"}},
	{offsetof(struct nvml_lib, power_limit), {"nvmlDeviceGetEnforcedPowerLimit"}},
	{offsetof(struct nvml_lib, fan), {"nvmlDeviceGetFanSpeed"}},
	{offsetof(struct nvml_lib, clock), {"nvmlDeviceGetClockInfo"}},
	{offsetof(struct nvml_lib, compute_mode), {"nvmlDeviceGetComputeMode"}},
	{offsetof(struct nvml_lib, persistence), {"nvmlDeviceGetPersistenceMode"}},
	{offsetof(struct nvml_lib, ecc), {"nvmlDeviceGetEccMode"}},
	{offsetof(struct nvml_lib, ecc_errors), {"nvmlDeviceGetTotalEccErrors"}},
	{offsetof(struct nvml_lib, cc), {"nvmlDeviceGetCudaComputeCapability"}},
	{offsetof(struct nvml_lib, cores), {"nvmlDeviceGetNumGpuCores"}},
	{offsetof(struct nvml_lib, mig_mode), {"nvmlDeviceGetMigMode"}},
	{offsetof(struct nvml_lib, max_mig), {"nvmlDeviceGetMaxMigDeviceCount"}},
	{offsetof(struct nvml_lib, mig_by_index), {"nvmlDeviceGetMigDeviceHandleByIndex"}},
	{offsetof(struct nvml_lib, gi_id), {"nvmlDeviceGetGpuInstanceId"}},
	{offsetof(struct nvml_lib, ci_id), {"nvmlDeviceGetComputeInstanceId"}},
	{offsetof(struct nvml_lib, cc_mem_size), {"nvmlDeviceGetConfComputeMemSizeInfo"}},
	{offsetof(struct nvml_lib, detail_list), {"nvmlDeviceGetRunningProcessDetailList"}},
	{offsetof(struct nvml_lib, pstate), {"nvmlDeviceGetPerformanceState", "nvmlDeviceGetPowerState"}},
	{offsetof(struct nvml_lib, mgmt_limit), {"nvmlDeviceGetPowerManagementLimit"}},
	{offsetof(struct nvml_lib, pcie_gen), {"nvmlDeviceGetCurrPcieLinkGeneration"}},
	{offsetof(struct nvml_lib, pcie_width), {"nvmlDeviceGetCurrPcieLinkWidth"}},
	{offsetof(struct nvml_lib, display_active), {"nvmlDeviceGetDisplayActive"}},
	{offsetof(struct nvml_lib, accounting), {"nvmlDeviceGetAccountingMode"}},
	/* The event names came with 535; the throttle names are the same calls, still exported. */
	{offsetof(struct nvml_lib, events), {"nvmlDeviceGetCurrentClocksEventReasons",
					     "nvmlDeviceGetCurrentClocksThrottleReasons"}},
	{offsetof(struct nvml_lib, pcie_throughput), {"nvmlDeviceGetPcieThroughput"}},
	{offsetof(struct nvml_lib, encoder), {"nvmlDeviceGetEncoderUtilization"}},
	{offsetof(struct nvml_lib, decoder), {"nvmlDeviceGetDecoderUtilization"}},
	{offsetof(struct nvml_lib, field_values), {"nvmlDeviceGetFieldValues"}},
	{offsetof(struct nvml_lib, proc_util_info), {"nvmlDeviceGetProcessesUtilizationInfo"}},
	{offsetof(struct nvml_lib, proc_util), {"nvmlDeviceGetProcessUtilization"}},
	{offsetof(struct nvml_lib, serial), {"nvmlDeviceGetSerial"}},
	{offsetof(struct nvml_lib, vbios), {"nvmlDeviceGetVbiosVersion"}},
	{offsetof(struct nvml_lib, events_supported), {"nvmlDeviceGetSupportedClocksEventReasons",
						       "nvmlDeviceGetSupportedClocksThrottleReasons"}},
	{offsetof(struct nvml_lib, limit_constraints), {"nvmlDeviceGetPowerManagementLimitConstraints"}},
	{offsetof(struct nvml_lib, default_limit), {"nvmlDeviceGetPowerManagementDefaultLimit"}},
	{offsetof(struct nvml_lib, pcie_gen_max), {"nvmlDeviceGetMaxPcieLinkGeneration"}},
	{offsetof(struct nvml_lib, pcie_gen_gpu_max), {"nvmlDeviceGetGpuMaxPcieLinkGeneration"}},
	{offsetof(struct nvml_lib, pcie_width_max), {"nvmlDeviceGetMaxPcieLinkWidth"}},
	{offsetof(struct nvml_lib, display_mode), {"nvmlDeviceGetDisplayMode"}},
	{offsetof(struct nvml_lib, max_clock), {"nvmlDeviceGetMaxClockInfo"}},
	{offsetof(struct nvml_lib, threshold), {"nvmlDeviceGetTemperatureThreshold"}},
};

/* htop's resolve(), with fallbacks: the first of the names the library exports fills the slot
 * at offset off in nvml. Returns its position in the list, or -1 (slot NULL) when it has none. */
static int resolve(size_t off, const char *const *names, size_t nnames)
{
	const char *list[8] = {0}; /* NULL-terminated, as dl_resolve wants: a list may fill its four */
	for (size_t i = 0; i < nnames && i < ARRAY_SIZE(list) - 1; i++)
		list[i] = names[i];
	return dl_resolve(nvml.dl, (char *)&nvml + off, list);
}

const char *nvml_errstr(nvmlReturn_t r)
{
	static char buf[32];
	if (nvml.error_string) {
		const char *s = nvml.error_string(r);
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
	for (size_t i = 0; i < ARRAY_SIZE(optional); i++)
		resolve(optional[i].off, optional[i].names, ARRAY_SIZE(optional[i].names));
	static const char *const pci[] = {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2",
					  "nvmlDeviceGetPciInfo"};
	nvml.pci_ver = 3 - resolve(offsetof(struct nvml_lib, pci), pci, ARRAY_SIZE(pci));

	static const char *const names[PK_N][3] = {
		{"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
		 "nvmlDeviceGetComputeRunningProcesses"},
		{"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2",
		 "nvmlDeviceGetGraphicsRunningProcesses"},
		{"nvmlDeviceGetMPSComputeRunningProcesses_v3",
		 "nvmlDeviceGetMPSComputeRunningProcesses_v2", "nvmlDeviceGetMPSComputeRunningProcesses"},
	};
	for (int k = 0; k < PK_N; k++) {
		int at = resolve(offsetof(struct nvml_lib, procs) + (size_t)k * sizeof(proc_fn), names[k], 3);
		/* Drivers 535.43-535.86 wrote 32-byte _v3 entries with no version bump; they are the
		 * ones with the confidential-computing query but without the detail list (nvitop's rule). */
		if (at == 0 && nvml.cc_mem_size && !nvml.detail_list)
			nvml.proc_stride[k] = sizeof(nvmlProcessInfo_r535_t);
		else if (at == 0 || at == 1)
			nvml.proc_stride[k] = sizeof(nvmlProcessInfo_v2_t);
		else
			nvml.proc_stride[k] = sizeof(nvmlProcessInfo_v1_t);
	}
}

static bool load(struct gpu_error *err)
{
	const char *env = getenv("GPUCTL_NVML_LIBRARY");
	const char *const defaults[] = {"libnvidia-ml.so.1", "libnvidia-ml.so", NULL};
	const char *const only_env[] = {env, NULL};
	const char *const *try = env && *env ? only_env : defaults;
	char why[512];
	nvml.dl = dl_open(try, &nvml.path, why, sizeof why);
	if (!nvml.dl) {
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
	for (size_t i = 0; i < ARRAY_SIZE(required) && !missing; i++) {
		const struct sym *s = &required[i];
		if (resolve(s->off, s->names, ARRAY_SIZE(s->names)) < 0)
			missing = s->names[s->names[1] ? 1 : 0];   /* the plain name */
	}
	if (missing) {
		err->code = EXIT_NO_NVML;
		snprintf(err->msg, sizeof err->msg,
			 "%s does not look like NVML: it has no %s; point GPUCTL_NVML_LIBRARY at the "
			 "driver's libnvidia-ml.so.1", nvml.path, missing);
		dlclose(nvml.dl);
		nvml.dl = NULL;
		return false;
	}
	resolve_all();
	return true;
}

bool nvml_got(struct gpu *g, enum gpu_field f, nvmlReturn_t r)
{
	g->why[f] = NULL;
	if (r == NVML_SUCCESS)
		return true;
	if (r == NVML_ERROR_GPU_IS_LOST) {
		gpu_mark_lost(g, nvml_errstr(r));
	} else if (r != NVML_ERROR_NOT_SUPPORTED && r != NVML_ERROR_FUNCTION_NOT_FOUND) {
		g->errors++;
		g->why[f] = nvml_errstr(r);
	}
	return false;
}

void nvml_set(struct gpu *g, enum gpu_field f)
{
	g->valid |= 1ULL << f;
}

void nvml_read_uint(struct gpu *g, enum gpu_field f, unsigned *dst, uint_fn fn, nvmlDevice_t h)
{
	unsigned v;
	if (fn && !g->lost && nvml_got(g, f, fn(h, &v))) {
		*dst = v;
		nvml_set(g, f);
	}
}

/* A query that feeds no field: only GPU_IS_LOST and the error count matter. */
static bool ok(struct gpu *g, nvmlReturn_t r)
{
	if (r == NVML_SUCCESS)
		return true;
	if (r == NVML_ERROR_GPU_IS_LOST)
		gpu_mark_lost(g, nvml_errstr(r));
	else if (r != NVML_ERROR_NOT_SUPPORTED && r != NVML_ERROR_FUNCTION_NOT_FOUND)
		g->errors++;
	return false;
}

static void read_pci(struct gpu *g, nvmlDevice_t h)
{
	const char *s = NULL;
	nvmlPciInfo_t v3;
	nvmlPciInfo_v1_t v1;
	if (!nvml.pci)
		return;
	if (nvml.pci_ver == 3) {
		if (!ok(g, ((nvmlReturn_t(*)(nvmlDevice_t, nvmlPciInfo_t *))nvml.pci)(h, &v3)))
			return;
		v3.busId[sizeof v3.busId - 1] = '\0';
		s = v3.busId;
		g->pci_device_id = v3.pciDeviceId;
		g->pci_subsys_id = v3.pciSubSystemId;
	} else {
		if (!ok(g, ((nvmlReturn_t(*)(nvmlDevice_t, nvmlPciInfo_v1_t *))nvml.pci)(h, &v1)))
			return;
		v1.busId[sizeof v1.busId - 1] = '\0';
		s = v1.busId;
		g->pci_device_id = v1.pciDeviceId;
		g->pci_subsys_id = v1.pciSubSystemId;
	}
	nvml_set(g, GF_PCI_DEVICE_ID);
	nvml_set(g, GF_PCI_SUBSYS_ID);
	/* Old layouts give "0000:3B:00.0"; show every bus id in nvidia-smi's 8-digit form. */
	if (parse_pci_bus_id(s, &g->pci_domain, &g->pci_bus, &g->pci_dev, &g->pci_fn))
		snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%08X:%02X:%02X.%X", g->pci_domain,
			 g->pci_bus, g->pci_dev, g->pci_fn);
}

static void open_migs(struct gpu *g, struct nvml_dev *d)
{
	unsigned max = 0;
	if (!nvml.max_mig || !nvml.mig_by_index || !ok(g, nvml.max_mig(d->h, &max)) || max == 0)
		return;
	g->migs = xcalloc(max, sizeof *g->migs);
	d->mig_h = xcalloc(max, sizeof *d->mig_h);
	for (unsigned i = 0; i < max; i++) {
		nvmlDevice_t mh;
		/* Empty slots answer NOT_FOUND: skip them. */
		if (nvml.mig_by_index(d->h, i, &mh) != NVML_SUCCESS)
			continue;
		struct mig_dev *m = &g->migs[g->nmigs];
		m->slot = i;
		m->gi = m->ci = NO_INSTANCE;
		if (nvml.uuid)
			nvml.uuid(mh, m->uuid, sizeof m->uuid);
		if (nvml.name)
			nvml.name(mh, m->name, sizeof m->name);
		if (nvml.gi_id)
			nvml.gi_id(mh, &m->gi);
		if (nvml.ci_id)
			nvml.ci_id(mh, &m->ci);
		d->mig_h[g->nmigs++] = mh;
	}
}

static void open_gpu(struct gpu *g, struct nvml_dev *d)
{
	nvmlReturn_t r = nvml.by_index(g->index, &d->h);
	if (r != NVML_SUCCESS) {
		if (r == NVML_ERROR_GPU_IS_LOST)
			gpu_mark_lost(g, nvml_errstr(r));
		else {
			g->inaccessible = true;
			g->error = xstrdup(nvml_errstr(r));
		}
		return;
	}
	if (nvml.name)
		ok(g, nvml.name(d->h, g->name, sizeof g->name));
	if (nvml.uuid)
		ok(g, nvml.uuid(d->h, g->uuid, sizeof g->uuid));
	read_pci(g, d->h);
	int major, minor;
	if (nvml.cc && nvml_got(g, GF_CC, nvml.cc(d->h, &major, &minor))) {
		g->cc_major = major;
		g->cc_minor = minor;
		nvml_set(g, GF_CC);
	}
	nvml_read_uint(g, GF_CORES, &g->cores, nvml.cores, d->h);
	unsigned v, pending;
	if (nvml.mig_mode && nvml_got(g, GF_MIG_MODE, nvml.mig_mode(d->h, &v, &pending))) {
		g->mig_mode = v;
		nvml_set(g, GF_MIG_MODE);
		if (v == 1)
			open_migs(g, d);
	}
}

static bool nvml_open(struct gpu_set *set, struct gpu_error *err)
{
	if (!nvml.dl && !load(err))
		return false;
	nvmlReturn_t r = nvml.init();
	if (r != NVML_SUCCESS) {
		err->code = EXIT_NVML_INIT;
		snprintf(err->msg, sizeof err->msg, "NVML failed to initialise: %s (%s)", nvml_errstr(r),
			 init_hint(r));
		return false;
	}
	unsigned n = 0;
	r = nvml.count(&n);
	if (r != NVML_SUCCESS) {
		err->code = EXIT_NVML_INIT;
		snprintf(err->msg, sizeof err->msg, "NVML could not count the GPUs: %s (%s)",
			 nvml_errstr(r), init_hint(r));
		nvml.shutdown();
		return false;
	}
	if (nvml.driver_version &&
	    nvml.driver_version(set->driver_version, sizeof set->driver_version) == NVML_SUCCESS)
		set->has_driver_version = true;
	int cv;
	if (nvml.cuda_version && nvml.cuda_version(&cv) == NVML_SUCCESS)
		set->cuda_version = cv;
	if (n > GPU_MAX) {
		warn("this machine has %u GPUs; gpuctl handles the first %d", n, GPU_MAX);
		n = GPU_MAX;
	}
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
		unsigned n = (unsigned)nvml.procbuf_cap;
		nvmlReturn_t r = nvml.procs[k](h, &n, nvml.procbuf_cap ? nvml.procbuf : NULL);
		if (r != NVML_ERROR_INSUFFICIENT_SIZE) {
			*count = r == NVML_SUCCESS ? (n < nvml.procbuf_cap ? n : (unsigned)nvml.procbuf_cap) : 0;
			return r;
		}
		size_t want = 2 * (size_t)n + 5;
		if (want <= nvml.procbuf_cap)
			want = 2 * nvml.procbuf_cap;
		/* Sized for the widest layout so the buffer serves every list kind. */
		nvml.procbuf = xrealloc(nvml.procbuf, want * sizeof(nvmlProcessInfo_r535_t));
		nvml.procbuf_cap = want;
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
	size_t stride = nvml.proc_stride[k];
	if (g->nprocs + n > g->procs_cap) { /* exactly: 10,000 entries are 640 KB */
		g->procs_cap = g->nprocs + n;
		g->procs = xrealloc(g->procs, g->procs_cap * sizeof *g->procs);
	}
	for (unsigned i = 0; i < n; i++) {
		const unsigned char *e = nvml.procbuf + i * stride;
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
	for (int k = 0; k < PK_N && !g->lost; k++) {
		if (!nvml.procs[k])
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
			nvml_got(g, GF_PROCESSES, r);
			complete = false;
		}
	}
	if (complete && !g->lost)
		nvml_set(g, GF_PROCESSES);
	else
		g->nprocs = 0;
}

/* One query behind fields first..last: one outcome, one error counted. */
static bool got_all(struct gpu *g, enum gpu_field first, enum gpu_field last, nvmlReturn_t r)
{
	bool got = nvml_got(g, first, r);
	for (enum gpu_field f = first + 1; f <= last; f++)
		g->why[f] = g->why[first];
	return got;
}

static void set_mem(struct gpu *g, uint64_t total, uint64_t used, uint64_t freemem)
{
	g->mem_total = total;
	g->mem_used = used;
	g->mem_free = freemem;
	nvml_set(g, GF_MEM_TOTAL);
	nvml_set(g, GF_MEM_USED);
	nvml_set(g, GF_MEM_FREE);
}

static void refresh_mem(struct gpu *g, struct nvml_dev *d)
{
	nvmlReturn_t r;
	if (nvml.mem_v2) {
		nvmlMemory_v2_t m = {.version = nvmlMemory_v2};
		r = nvml.mem_v2(d->h, &m);
		if (r == NVML_SUCCESS) {
			set_mem(g, m.total, m.used, m.free);
			g->mem_reserved = m.reserved;
			nvml_set(g, GF_MEM_RESERVED);
			return;
		}
		/* A driver that rejects the version word answers FUNCTION_NOT_FOUND or
		 * ARGUMENT_VERSION_MISMATCH: use the plain call from now on. */
		if (r != NVML_ERROR_FUNCTION_NOT_FOUND && r != NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
			got_all(g, GF_MEM_TOTAL, GF_MEM_RESERVED, r);
			return;
		}
		nvml.mem_v2 = NULL;
	}
	nvmlMemory_t m;
	if (!nvml.mem_v1)
		return;
	r = nvml.mem_v1(d->h, &m);
	if (got_all(g, GF_MEM_TOTAL, GF_MEM_FREE, r))
		set_mem(g, m.total, m.used, m.free);
}

static void refresh_migs(struct gpu *g, struct nvml_dev *d)
{
	for (size_t i = 0; i < g->nmigs && !g->lost; i++) {
		struct mig_dev *m = &g->migs[i];
		nvmlMemory_t mm;
		nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
		m->mem_valid = false;
		if (nvml.mem_v2 && nvml.mem_v2(d->mig_h[i], &m2) == NVML_SUCCESS) {
			m->mem_total = m2.total;
			m->mem_used = m2.used;
			m->mem_valid = true;
		} else if (nvml.mem_v1 && nvml.mem_v1(d->mig_h[i], &mm) == NVML_SUCCESS) {
			m->mem_total = mm.total;
			m->mem_used = mm.used;
			m->mem_valid = true;
		}
	}
}

/* Fields read once (at open, or the first time a refresh asks for them) and kept. */
static const uint64_t static_fields =
	1ULL << GF_CC | 1ULL << GF_PCI_DEVICE_ID | 1ULL << GF_PCI_SUBSYS_ID | 1ULL << GF_CORES |
	1ULL << GF_MIG_MODE | ~0ULL << GF_SERIAL;

static void refresh_gpu(struct gpu *g, struct nvml_dev *d, unsigned what)
{
	g->valid &= static_fields;
	for (enum gpu_field f = 0; f < GF_N; f++)
		if (!(static_fields >> f & 1))
			g->why[f] = NULL;
	if ((what & REFRESH_STATIC) && !d->static_read)
		nvml_read_static(g, d);
	refresh_mem(g, d);
	nvmlUtilization_t u;
	if (nvml.util && !g->lost && got_all(g, GF_UTIL_GPU, GF_UTIL_MEM, nvml.util(d->h, &u))) {
		g->util_gpu = u.gpu;
		g->util_mem = u.memory;
		nvml_set(g, GF_UTIL_GPU);
		nvml_set(g, GF_UTIL_MEM);
	}
	unsigned v;
	if (nvml.temp && !g->lost && nvml_got(g, GF_TEMP, nvml.temp(d->h, NVML_TEMPERATURE_GPU, &v))) {
		g->temp = v;
		nvml_set(g, GF_TEMP);
	}
	nvml_read_uint(g, GF_POWER, &g->power_mw, nvml.power, d->h);
	nvml_read_uint(g, GF_POWER_LIMIT, &g->power_limit_mw, nvml.power_limit, d->h);
	nvml_read_uint(g, GF_COMPUTE_MODE, &g->compute_mode, nvml.compute_mode, d->h);
	nvml_refresh_extra(g, d, what);
	if (g->nmigs)
		refresh_migs(g, d);
	if (what & REFRESH_PROCS) {
		if (!g->lost)
			refresh_procs(g, d);
		if (what & REFRESH_PROC_UTIL)
			nvml_refresh_proc_util(g, d);
	}
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
	for (size_t i = 0; i < set->ngpus; i++)
		nvml_dev_free(set->gpus[i].priv);
	free(nvml.procbuf);
	nvml.procbuf = NULL;
	nvml.procbuf_cap = 0;
	if (nvml.dl)
		nvml.shutdown();
}

const struct gpu_backend nvml_backend = {
	.open = nvml_open,
	.refresh = nvml_refresh,
	.close = nvml_close,
};
