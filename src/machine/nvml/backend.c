/* backend.c: the NVIDIA backend (nvml_backend). NVML is loaded at run time, never linked
 * (lib.c), and every struct is read with the layout of the symbol that was found. A symbol an
 * older driver lacks leaves its fields unavailable; a GPU that answers GPU_IS_LOST is marked lost
 * and not queried again, while the others carry on. This file: opening, the base refresh and the
 * process lists; fields.c reads what is asked for besides. */
#include "machine/nvml/lib.h"
#include "machine/nvml/fields.h"
#include "machine/nvml/topo.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned pk_type[PK_N] = {PROC_COMPUTE, PROC_GRAPHICS, PROC_MPS | PROC_COMPUTE};

static const char *init_hint(nvmlReturn_t r)
{
	switch (r) {
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "the NVIDIA kernel driver is not loaded: check `lsmod | grep nvidia` and `dmesg`";
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
		return "the NVML library and the kernel driver differ in version (driver upgraded without "
		       "a reboot?): reboot or reload the nvidia kernel modules";
	case NVML_ERROR_NO_PERMISSION:
		return "no permission to open the NVIDIA device files (/dev/nvidia*); where gpuctl's "
		       "device guard is on, a lease opens them (gpuctl run, gpuctl env)";
	default:
		return "check that `nvidia-smi` works on this machine";
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
	nvml_need(NEED_MIG);
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

static bool lean; /* gpu_open_lean (issue 22) */

void gpu_open_lean(bool on)
{
	lean = on;
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
	if (!lean)
		nvml_need(NEED_IDENT);
	int major, minor;
	if (!lean && nvml.cc && nvml_got(g, GF_CC, nvml.cc(d->h, &major, &minor))) {
		g->cc_major = major;
		g->cc_minor = minor;
		nvml_set(g, GF_CC);
	}
	if (!lean)
		nvml_read_uint(g, GF_CORES, &g->cores, nvml.cores, d->h);
	/* The device guard (issue 25) names GPU N's node /dev/nvidia<minor>. */
	if (!lean && nvml.minor && nvml.minor(d->h, &g->minor) == NVML_SUCCESS)
		g->minor_valid = true;
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
	if (!nvml.dl && !nvml_load(err))
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

static void refresh_base(struct gpu *g, struct nvml_dev *d);

/* The list is valid only when every list that exists was read: a compute list that failed next
 * to a graphics list that worked would pass a partial list off as complete. A query of compute
 * processes (REFRESH_COMPUTE_NAMES) reads the compute and MPS lists only, as nvidia-smi's
 * --query-compute-apps does: a graphics-only process is not one it shows, and the list is one
 * NVML call a GPU that the floor does not make (issue 22). */
static void refresh_procs(struct gpu *g, struct nvml_dev *d, unsigned what)
{
	bool complete = true;
	g->nprocs = 0;
	for (int k = 0; k < PK_N && !g->lost; k++) {
		if (!nvml.procs[k] || (k == PK_GRAPHICS && (what & REFRESH_COMPUTE_NAMES)))
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
		nvml_report_fallback("nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetMemoryInfo", r);
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
	if (what & REFRESH_PROCS)
		nvml_need(NEED_PROCS);
	g->valid &= static_fields;
	for (enum gpu_field f = 0; f < GF_N; f++)
		if (!(static_fields >> f & 1))
			g->why[f] = NULL;
	if ((what & REFRESH_STATIC) && !d->static_read)
		nvml_read_static(g, d);
	/* A query of compute processes prints none of the base: the memory call alone, which is
	 * what tells a lost GPU (GPU_IS_LOST) whose driver may still list processes. */
	if (what & REFRESH_COMPUTE_NAMES)
		refresh_mem(g, d);
	else
		refresh_base(g, d);
	nvml_refresh_extra(g, d, what);
	if (g->nmigs)
		refresh_migs(g, d);
	if (what & REFRESH_PROCS) {
		if (!g->lost)
			refresh_procs(g, d, what);
		if (what & REFRESH_PROC_UTIL)
			nvml_refresh_proc_util(g, d);
	}
}

/* Memory, utilisation, temperature, power and its limit, compute mode: every refresh's. */
static void refresh_base(struct gpu *g, struct nvml_dev *d)
{
	refresh_mem(g, d);
	nvmlUtilization_t u;
	if (nvml.util && !g->lost && got_all(g, GF_UTIL_GPU, GF_UTIL_MEM, nvml.util(d->h, &u))) {
		g->util_gpu = u.gpu;
		g->util_mem = u.memory;
		nvml_set(g, GF_UTIL_GPU);
		nvml_set(g, GF_UTIL_MEM);
	}
	unsigned v;
	/* The current call (nvml.h 12.6+) first; a driver without it, or one that refuses its
	 * version word, is read through the call nvml.h 13 deprecates from then on. */
	if (nvml.temp_v && !g->lost) {
		nvmlTemperature_v1_t t = {.version = nvmlTemperature_v1, .sensorType = NVML_TEMPERATURE_GPU};
		nvmlReturn_t r = nvml.temp_v(d->h, &t);
		if (r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
			nvml_report_fallback("nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature", r);
			nvml.temp_v = NULL;
		} else if (nvml_got(g, GF_TEMP, r) && t.temperature >= 0) {
			g->temp = (unsigned)t.temperature;
			nvml_set(g, GF_TEMP);
		}
	}
	if (!nvml.temp_v && nvml.temp && !g->lost &&
	    nvml_got(g, GF_TEMP, nvml.temp(d->h, NVML_TEMPERATURE_GPU, &v))) {
		g->temp = v;
		nvml_set(g, GF_TEMP);
	}
	nvml_read_uint(g, GF_POWER, &g->power_mw, nvml.power, d->h);
	nvml_read_uint(g, GF_POWER_LIMIT, &g->power_limit_mw, nvml.power_limit, d->h);
	nvml_read_uint(g, GF_COMPUTE_MODE, &g->compute_mode, nvml.compute_mode, d->h);
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
	/* A command about to exit makes no nvmlShutdown (issue 22): the exit closes the driver's
	 * descriptors and frees its memory anyway, and the shutdown was a one-shot's work that
	 * showed nothing. */
	if (nvml.dl && !set->at_exit)
		nvml.shutdown();
}

static void nvml_read_static_one(struct gpu_set *set, struct gpu *g)
{
	(void)set;
	struct nvml_dev *d = g->priv;
	if (d && !g->lost && !g->inaccessible && !d->static_read)
		nvml_read_static(g, d);
}

const struct gpu_backend nvml_backend = {
	.open = nvml_open,
	.refresh = nvml_refresh,
	.close = nvml_close,
	.read_x = nvml_read_x,                 /* smi (issue 27) */
	.read_static = nvml_read_static_one,
	.topo = nvml_topo_read,   /* topo.c (issue 26) */
};
