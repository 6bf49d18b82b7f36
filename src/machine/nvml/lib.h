/* lib.h: the loaded NVML library (lib.c) and the primitives both halves of the NVIDIA backend
 * read it with: backend.c (opening, the base refresh, process lists) and fields.c (the groups
 * read only when asked for). Not for other modules: they read struct gpu. */
#ifndef GPUCTL_NVML_LIB_H
#define GPUCTL_NVML_LIB_H

#include "machine/gpu.h"
#include "machine/nvml/abi.h"

typedef nvmlReturn_t (*proc_fn)(nvmlDevice_t, unsigned *, void *);
typedef nvmlReturn_t (*uint_fn)(nvmlDevice_t, unsigned *);
enum { PK_COMPUTE, PK_GRAPHICS, PK_MPS, PK_N };

/* The loaded library: one per process, gpuctl never opens two. Enumerations (compute mode,
 * enable states, performance state) are 4-byte enums, read through unsigned *. */
struct nvml_lib {
	void *dl;
	const char *path;
	unsigned resolved;       /* the NEED_* groups resolved so far (nvml_need) */
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	nvmlReturn_t (*count)(unsigned *);
	nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *);
	const char *(*error_string)(nvmlReturn_t);
	nvmlReturn_t (*driver_version)(char *, unsigned);
	nvmlReturn_t (*cuda_version)(int *);
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned);
	void *pci;
	int pci_ver;
	nvmlReturn_t (*mem_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
	nvmlReturn_t (*mem_v1)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *);
	nvmlReturn_t (*temp)(nvmlDevice_t, int, unsigned *);
	uint_fn power, power_limit, fan, compute_mode, persistence;
	nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*ecc)(nvmlDevice_t, unsigned *, unsigned *);
	nvmlReturn_t (*ecc_errors)(nvmlDevice_t, int, int, unsigned long long *);
	nvmlReturn_t (*cc)(nvmlDevice_t, int *, int *);
	uint_fn cores;
	nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned *, unsigned *);
	uint_fn max_mig;
	nvmlReturn_t (*mig_by_index)(nvmlDevice_t, unsigned, nvmlDevice_t *);
	uint_fn gi_id, ci_id;
	proc_fn procs[PK_N];
	size_t proc_stride[PK_N];
	void *cc_mem_size, *detail_list;   /* only probed, for the r535 layout heuristic */
	/* read when asked for */
	uint_fn pstate, mgmt_limit, pcie_gen, pcie_width, display_active, accounting;
	nvmlReturn_t (*events)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*pcie_throughput)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*encoder)(nvmlDevice_t, unsigned *, unsigned *);
	nvmlReturn_t (*decoder)(nvmlDevice_t, unsigned *, unsigned *);
	nvmlReturn_t (*field_values)(nvmlDevice_t, int, nvmlFieldValue_t *);
	nvmlReturn_t (*proc_util_info)(nvmlDevice_t, nvmlProcessesUtilizationInfo_v1_t *);
	nvmlReturn_t (*proc_util)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned *,
				  unsigned long long);
	/* static */
	nvmlReturn_t (*serial)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*vbios)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*events_supported)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*limit_constraints)(nvmlDevice_t, unsigned *, unsigned *);
	uint_fn default_limit, pcie_gen_max, pcie_gen_gpu_max, pcie_width_max, display_mode;
	nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*threshold)(nvmlDevice_t, int, unsigned *);
	/* the device guard (issue 25): N of /dev/nvidiaN, read at open */
	uint_fn minor;
	/* smi (issue 27): read only when a query names their fields (xread.c) */
	nvmlReturn_t (*temp_v)(nvmlDevice_t, nvmlTemperature_v1_t *);
	nvmlReturn_t (*mem_error_counter)(nvmlDevice_t, int, int, int, unsigned long long *);
	nvmlReturn_t (*sram_status)(nvmlDevice_t, nvmlEccSramErrorStatus_v1_t *);
	nvmlReturn_t (*retired_pages)(nvmlDevice_t, int, unsigned *, unsigned long long *);
	nvmlReturn_t (*retired_pending)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned *, unsigned *, unsigned *, unsigned *);
	nvmlReturn_t (*remap_histogram)(nvmlDevice_t, nvmlRowRemapperHistogramValues_t *);
	nvmlReturn_t (*app_clock)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*default_app_clock)(nvmlDevice_t, int, unsigned *);
	uint_fn power_mgmt_mode, accounting_buffer;
	nvmlReturn_t (*pci_ext)(nvmlDevice_t, nvmlPciInfoExt_v1_t *);
	nvmlReturn_t (*gom)(nvmlDevice_t, unsigned *, unsigned *);
	nvmlReturn_t (*driver_model)(nvmlDevice_t, unsigned *, unsigned *);
	nvmlReturn_t (*gsp)(nvmlDevice_t, unsigned *, unsigned *);
	nvmlReturn_t (*encoder_stats)(nvmlDevice_t, unsigned *, unsigned *, unsigned *);
	nvmlReturn_t (*inforom_image)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*inforom)(nvmlDevice_t, int, char *, unsigned);
	nvmlReturn_t (*inforom_validate)(nvmlDevice_t);
	nvmlReturn_t (*jpg)(nvmlDevice_t, unsigned *, unsigned *);
	nvmlReturn_t (*ofa)(nvmlDevice_t, unsigned *, unsigned *);
	nvmlReturn_t (*addressing)(nvmlDevice_t, nvmlDeviceAddressingMode_v1_t *);
	nvmlReturn_t (*c2c)(nvmlDevice_t, nvmlC2cModeInfo_v1_t *);
	nvmlReturn_t (*dram_encryption)(nvmlDevice_t, nvmlDramEncryptionInfo_v1_t *,
					nvmlDramEncryptionInfo_v1_t *);
	nvmlReturn_t (*vgpu_driver_cap)(int, unsigned *);
	nvmlReturn_t (*vgpu_device_cap)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*fabric)(nvmlDevice_t, nvmlGpuFabricInfo_v2_t *);
	nvmlReturn_t (*platform)(nvmlDevice_t, nvmlPlatformInfo_v2_t *);
	nvmlReturn_t (*protected_mem)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*hostname)(nvmlDevice_t, nvmlHostname_v1_t *);
	/* end smi */
	/* Process entries, shared by every GPU (a list is used up before the next is asked for)
	 * and kept across refreshes: 10 KB, not 10 KB per GPU on a 64-GPU machine. */
	unsigned char *procbuf;
	size_t procbuf_cap;      /* in entries of the widest stride */
};
extern struct nvml_lib nvml;

/* Loads the library (GPUCTL_NVML_LIBRARY, else the driver's libnvidia-ml.so.1) and resolves the
 * required functions and NEED_BASE (every group under GPUCTL_NVML_REPORT), each with its
 * versioned fallbacks; false with err set when it is missing or is not NVML. */
bool nvml_load(struct gpu_error *err);

/* The function slots are resolved by group, each the first time a caller needs it (issue 22: a
 * --query-gpu resolves some 20 symbols, not 90): NEED_BASE at load (the base refresh, open and
 * errors), NEED_IDENT (compute capability, cores, minor number: open, unless lean), NEED_MIG (an
 * instance's handles and ids), NEED_PROCS (the process lists, with what picks their layout, and
 * per-process utilisation), NEED_FIELDS (fields.c and xread.c: read when asked for). A caller
 * names the groups of the slots it reads before it reads them; a slot of a group not resolved is
 * NULL and reads as a missing function, so the call comes first in each entry point. */
enum {
	NEED_BASE = 1 << 0,
	NEED_IDENT = 1 << 1,
	NEED_MIG = 1 << 2,
	NEED_PROCS = 1 << 3,
	NEED_FIELDS = 1 << 4,
	NEED_ALL = (1 << 5) - 1,
};
void nvml_need(unsigned groups);

const char *nvml_errstr(nvmlReturn_t r);
/* A call given up for its fallback at run time, recorded where GPUCTL_NVML_REPORT asks. */
void nvml_report_fallback(const char *from, const char *to, nvmlReturn_t why);
/* Record the outcome of the query behind field f (NVML_SUCCESS: the caller sets the value).
 * GPU_IS_LOST marks the GPU lost; a failure other than "not supported" is counted and its text
 * kept in g->why[f]. Returns whether the query succeeded. */
bool nvml_got(struct gpu *g, enum gpu_field f, nvmlReturn_t r);
void nvml_set(struct gpu *g, enum gpu_field f);
/* Whether the library has fn, the function behind field f; when it lacks it, the field says so
 * ("Function Not Found", as nvidia-smi prints it) rather than "not supported". */
bool nvml_have(struct gpu *g, enum gpu_field f, const void *fn);
extern const char nvml_no_function[];
/* One unsigned reading into *dst (skipped when the symbol is missing or the GPU lost). */
void nvml_read_uint(struct gpu *g, enum gpu_field f, unsigned *dst, uint_fn fn, nvmlDevice_t h);

#endif
