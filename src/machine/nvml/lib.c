/* lib.c: libnvidia-ml loaded at run time (never linked): each function resolved with its versioned
 * fallbacks into the one table `nvml`, and the primitives that record a query's outcome in a
 * struct gpu's validity bits. backend.c and fields.c both stand on it (see lib.h). */
#include "machine/nvml/lib.h"
#include "base/dl.h"
#include "base/util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	/* the device guard (issue 25) */
	{offsetof(struct nvml_lib, minor), {"nvmlDeviceGetMinorNumber"}},
	/* smi (issue 27). The temperature's successor (nvml.h 12.6+) first: the plain call is
	 * deprecated in 13, kept as the fallback (backend.c). */
	{offsetof(struct nvml_lib, temp_v), {"nvmlDeviceGetTemperatureV"}},
	{offsetof(struct nvml_lib, mem_error_counter), {"nvmlDeviceGetMemoryErrorCounter"}},
	{offsetof(struct nvml_lib, sram_status), {"nvmlDeviceGetSramEccErrorStatus"}},
	{offsetof(struct nvml_lib, retired_pages), {"nvmlDeviceGetRetiredPages"}},
	{offsetof(struct nvml_lib, retired_pending), {"nvmlDeviceGetRetiredPagesPendingStatus"}},
	{offsetof(struct nvml_lib, remapped_rows), {"nvmlDeviceGetRemappedRows"}},
	{offsetof(struct nvml_lib, remap_histogram), {"nvmlDeviceGetRowRemapperHistogram"}},
	{offsetof(struct nvml_lib, app_clock), {"nvmlDeviceGetApplicationsClock"}},
	{offsetof(struct nvml_lib, default_app_clock), {"nvmlDeviceGetDefaultApplicationsClock"}},
	{offsetof(struct nvml_lib, power_mgmt_mode), {"nvmlDeviceGetPowerManagementMode"}},
	{offsetof(struct nvml_lib, accounting_buffer), {"nvmlDeviceGetAccountingBufferSize"}},
	{offsetof(struct nvml_lib, pci_ext), {"nvmlDeviceGetPciInfoExt"}},
	{offsetof(struct nvml_lib, gom), {"nvmlDeviceGetGpuOperationMode"}},
	{offsetof(struct nvml_lib, driver_model), {"nvmlDeviceGetDriverModel_v2", "nvmlDeviceGetDriverModel"}},
	{offsetof(struct nvml_lib, gsp), {"nvmlDeviceGetGspFirmwareMode"}},
	{offsetof(struct nvml_lib, encoder_stats), {"nvmlDeviceGetEncoderStats"}},
	{offsetof(struct nvml_lib, inforom_image), {"nvmlDeviceGetInforomImageVersion"}},
	{offsetof(struct nvml_lib, inforom), {"nvmlDeviceGetInforomVersion"}},
	{offsetof(struct nvml_lib, inforom_validate), {"nvmlDeviceValidateInforom"}},
	{offsetof(struct nvml_lib, jpg), {"nvmlDeviceGetJpgUtilization"}},
	{offsetof(struct nvml_lib, ofa), {"nvmlDeviceGetOfaUtilization"}},
	{offsetof(struct nvml_lib, addressing), {"nvmlDeviceGetAddressingMode"}},
	{offsetof(struct nvml_lib, c2c), {"nvmlDeviceGetC2cModeInfoV"}},
	{offsetof(struct nvml_lib, dram_encryption), {"nvmlDeviceGetDramEncryptionMode"}},
	{offsetof(struct nvml_lib, vgpu_driver_cap), {"nvmlGetVgpuDriverCapabilities"}},
	{offsetof(struct nvml_lib, vgpu_device_cap), {"nvmlDeviceGetVgpuCapabilities"}},
	{offsetof(struct nvml_lib, fabric), {"nvmlDeviceGetGpuFabricInfoV"}},
	{offsetof(struct nvml_lib, platform), {"nvmlDeviceGetPlatformInfo"}},
	{offsetof(struct nvml_lib, protected_mem), {"nvmlDeviceGetConfComputeProtectedMemoryUsage"}},
	{offsetof(struct nvml_lib, hostname), {"nvmlDeviceGetHostname_v1"}},
	/* end smi */
};

/* htop's resolve(), with fallbacks: the first of the names the library exports fills the slot
 * at offset off in nvml. Returns its position in the list, or -1 (slot NULL) when it has none. */
/* GPUCTL_NVML_REPORT=FILE (smi, issue 27; tests/device/check.sh): each function slot and the
 * name that filled it, or "missing", then the fallbacks taken at run time, appended to FILE: what
 * a real driver's library gave gpuctl. */
static FILE *report;

static int resolve(size_t off, const char *const *names, size_t nnames)
{
	const char *list[8] = {0}; /* NULL-terminated, as dl_resolve wants: a list may fill its four */
	for (size_t i = 0; i < nnames && i < ARRAY_SIZE(list) - 1; i++)
		list[i] = names[i];
	int at = dl_resolve(nvml.dl, (char *)&nvml + off, list);
	if (report) {
		fprintf(report, "resolve %s:", at >= 0 ? list[at] : "missing");
		for (size_t i = 0; list[i]; i++)
			fprintf(report, " %s", list[i]);
		fputc('\n', report);
	}
	return at;
}

void nvml_report_fallback(const char *from, const char *to, nvmlReturn_t why)
{
	if (report) {
		fprintf(report, "fallback %s -> %s: %s\n", from, to, nvml_errstr(why));
		fflush(report);
	}
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

bool nvml_load(struct gpu_error *err)
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
	const char *rep = getenv("GPUCTL_NVML_REPORT");
	if (!report && rep && *rep && (report = fopen(rep, "ae")))
		fprintf(report, "library %s\n", nvml.path);
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
	if (report)
		fflush(report);
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

bool nvml_have(struct gpu *g, enum gpu_field f, const void *fn)
{
	if (!fn)
		g->why[f] = nvml_no_function;
	return fn != NULL;
}

const char nvml_no_function[] = "Function Not Found";

void nvml_read_uint(struct gpu *g, enum gpu_field f, unsigned *dst, uint_fn fn, nvmlDevice_t h)
{
	unsigned v;
	if (nvml_have(g, f, (const void *)fn) && !g->lost && nvml_got(g, f, fn(h, &v))) {
		*dst = v;
		nvml_set(g, f);
	}
}
