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

/* Where each function pointer of nvml lives, the group it is resolved with (nvml_need) and the
 * names that may fill it, preferred first, each ended by a NUL. The names are kept in the entry,
 * not pointed to: the tables hold no pointer, so the loader relocates nothing in them and they
 * stay read-only pages of the file (issue 22: start-up). */
struct sym {
	unsigned short off;
	unsigned char group;
	char names[92];
};

static const struct sym required[] = {
	{offsetof(struct nvml_lib, init), 0, "nvmlInit_v2\0nvmlInit"},
	{offsetof(struct nvml_lib, shutdown), 0, "nvmlShutdown"},
	{offsetof(struct nvml_lib, count), 0, "nvmlDeviceGetCount_v2\0nvmlDeviceGetCount"},
	{offsetof(struct nvml_lib, by_index), 0, "nvmlDeviceGetHandleByIndex_v2\0nvmlDeviceGetHandleByIndex"},
};

static const struct sym optional[] = {
	{offsetof(struct nvml_lib, error_string), NEED_BASE, "nvmlErrorString"},
	{offsetof(struct nvml_lib, driver_version), NEED_BASE, "nvmlSystemGetDriverVersion"},
	{offsetof(struct nvml_lib, cuda_version), NEED_BASE, "nvmlSystemGetCudaDriverVersion_v2\0nvmlSystemGetCudaDriverVersion"},
	{offsetof(struct nvml_lib, name), NEED_BASE, "nvmlDeviceGetName"},
	{offsetof(struct nvml_lib, uuid), NEED_BASE, "nvmlDeviceGetUUID"},
	{offsetof(struct nvml_lib, mem_v2), NEED_BASE, "nvmlDeviceGetMemoryInfo_v2"},
	{offsetof(struct nvml_lib, mem_v1), NEED_BASE, "nvmlDeviceGetMemoryInfo"},
	{offsetof(struct nvml_lib, util), NEED_BASE, "nvmlDeviceGetUtilizationRates"},
	{offsetof(struct nvml_lib, temp), NEED_BASE, "nvmlDeviceGetTemperature"},
	{offsetof(struct nvml_lib, power), NEED_BASE, "nvmlDeviceGetPowerUsage"},
	{offsetof(struct nvml_lib, power_limit), NEED_BASE, "nvmlDeviceGetEnforcedPowerLimit"},
	{offsetof(struct nvml_lib, fan), NEED_FIELDS, "nvmlDeviceGetFanSpeed"},
	{offsetof(struct nvml_lib, clock), NEED_FIELDS, "nvmlDeviceGetClockInfo"},
	{offsetof(struct nvml_lib, compute_mode), NEED_BASE, "nvmlDeviceGetComputeMode"},
	{offsetof(struct nvml_lib, persistence), NEED_FIELDS, "nvmlDeviceGetPersistenceMode"},
	{offsetof(struct nvml_lib, ecc), NEED_FIELDS, "nvmlDeviceGetEccMode"},
	{offsetof(struct nvml_lib, ecc_errors), NEED_FIELDS, "nvmlDeviceGetTotalEccErrors"},
	{offsetof(struct nvml_lib, cc), NEED_IDENT, "nvmlDeviceGetCudaComputeCapability"},
	{offsetof(struct nvml_lib, cores), NEED_IDENT, "nvmlDeviceGetNumGpuCores"},
	{offsetof(struct nvml_lib, mig_mode), NEED_BASE, "nvmlDeviceGetMigMode"},
	{offsetof(struct nvml_lib, max_mig), NEED_MIG, "nvmlDeviceGetMaxMigDeviceCount"},
	{offsetof(struct nvml_lib, mig_by_index), NEED_MIG, "nvmlDeviceGetMigDeviceHandleByIndex"},
	{offsetof(struct nvml_lib, gi_id), NEED_MIG, "nvmlDeviceGetGpuInstanceId"},
	{offsetof(struct nvml_lib, ci_id), NEED_MIG, "nvmlDeviceGetComputeInstanceId"},
	{offsetof(struct nvml_lib, cc_mem_size), NEED_PROCS, "nvmlDeviceGetConfComputeMemSizeInfo"},
	{offsetof(struct nvml_lib, detail_list), NEED_PROCS, "nvmlDeviceGetRunningProcessDetailList"},
	{offsetof(struct nvml_lib, pstate), NEED_FIELDS, "nvmlDeviceGetPerformanceState\0nvmlDeviceGetPowerState"},
	{offsetof(struct nvml_lib, mgmt_limit), NEED_FIELDS, "nvmlDeviceGetPowerManagementLimit"},
	{offsetof(struct nvml_lib, pcie_gen), NEED_FIELDS, "nvmlDeviceGetCurrPcieLinkGeneration"},
	{offsetof(struct nvml_lib, pcie_width), NEED_FIELDS, "nvmlDeviceGetCurrPcieLinkWidth"},
	{offsetof(struct nvml_lib, display_active), NEED_FIELDS, "nvmlDeviceGetDisplayActive"},
	{offsetof(struct nvml_lib, accounting), NEED_FIELDS, "nvmlDeviceGetAccountingMode"},
	/* The event names came with 535; the throttle names are the same calls, still exported. */
	{offsetof(struct nvml_lib, events), NEED_FIELDS,
	 "nvmlDeviceGetCurrentClocksEventReasons\0nvmlDeviceGetCurrentClocksThrottleReasons"},
	{offsetof(struct nvml_lib, pcie_throughput), NEED_FIELDS, "nvmlDeviceGetPcieThroughput"},
	{offsetof(struct nvml_lib, encoder), NEED_FIELDS, "nvmlDeviceGetEncoderUtilization"},
	{offsetof(struct nvml_lib, decoder), NEED_FIELDS, "nvmlDeviceGetDecoderUtilization"},
	{offsetof(struct nvml_lib, field_values), NEED_FIELDS, "nvmlDeviceGetFieldValues"},
	{offsetof(struct nvml_lib, proc_util_info), NEED_PROCS, "nvmlDeviceGetProcessesUtilizationInfo"},
	{offsetof(struct nvml_lib, proc_util), NEED_PROCS, "nvmlDeviceGetProcessUtilization"},
	{offsetof(struct nvml_lib, serial), NEED_FIELDS, "nvmlDeviceGetSerial"},
	{offsetof(struct nvml_lib, vbios), NEED_FIELDS, "nvmlDeviceGetVbiosVersion"},
	{offsetof(struct nvml_lib, events_supported), NEED_FIELDS,
	 "nvmlDeviceGetSupportedClocksEventReasons\0nvmlDeviceGetSupportedClocksThrottleReasons"},
	{offsetof(struct nvml_lib, limit_constraints), NEED_FIELDS, "nvmlDeviceGetPowerManagementLimitConstraints"},
	{offsetof(struct nvml_lib, default_limit), NEED_FIELDS, "nvmlDeviceGetPowerManagementDefaultLimit"},
	{offsetof(struct nvml_lib, pcie_gen_max), NEED_FIELDS, "nvmlDeviceGetMaxPcieLinkGeneration"},
	{offsetof(struct nvml_lib, pcie_gen_gpu_max), NEED_FIELDS, "nvmlDeviceGetGpuMaxPcieLinkGeneration"},
	{offsetof(struct nvml_lib, pcie_width_max), NEED_FIELDS, "nvmlDeviceGetMaxPcieLinkWidth"},
	{offsetof(struct nvml_lib, display_mode), NEED_FIELDS, "nvmlDeviceGetDisplayMode"},
	{offsetof(struct nvml_lib, max_clock), NEED_FIELDS, "nvmlDeviceGetMaxClockInfo"},
	{offsetof(struct nvml_lib, threshold), NEED_FIELDS, "nvmlDeviceGetTemperatureThreshold"},
	/* the device guard (issue 25) */
	{offsetof(struct nvml_lib, minor), NEED_IDENT, "nvmlDeviceGetMinorNumber"},
	/* smi (issue 27). The temperature's successor (nvml.h 12.6+) first: the plain call is
	 * deprecated in 13, kept as the fallback (backend.c). */
	{offsetof(struct nvml_lib, temp_v), NEED_BASE, "nvmlDeviceGetTemperatureV"},
	{offsetof(struct nvml_lib, mem_error_counter), NEED_FIELDS, "nvmlDeviceGetMemoryErrorCounter"},
	{offsetof(struct nvml_lib, sram_status), NEED_FIELDS, "nvmlDeviceGetSramEccErrorStatus"},
	{offsetof(struct nvml_lib, retired_pages), NEED_FIELDS, "nvmlDeviceGetRetiredPages"},
	{offsetof(struct nvml_lib, retired_pending), NEED_FIELDS, "nvmlDeviceGetRetiredPagesPendingStatus"},
	{offsetof(struct nvml_lib, remapped_rows), NEED_FIELDS, "nvmlDeviceGetRemappedRows"},
	{offsetof(struct nvml_lib, remap_histogram), NEED_FIELDS, "nvmlDeviceGetRowRemapperHistogram"},
	{offsetof(struct nvml_lib, app_clock), NEED_FIELDS, "nvmlDeviceGetApplicationsClock"},
	{offsetof(struct nvml_lib, default_app_clock), NEED_FIELDS, "nvmlDeviceGetDefaultApplicationsClock"},
	{offsetof(struct nvml_lib, power_mgmt_mode), NEED_FIELDS, "nvmlDeviceGetPowerManagementMode"},
	{offsetof(struct nvml_lib, accounting_buffer), NEED_FIELDS, "nvmlDeviceGetAccountingBufferSize"},
	{offsetof(struct nvml_lib, pci_ext), NEED_FIELDS, "nvmlDeviceGetPciInfoExt"},
	{offsetof(struct nvml_lib, gom), NEED_FIELDS, "nvmlDeviceGetGpuOperationMode"},
	{offsetof(struct nvml_lib, driver_model), NEED_FIELDS, "nvmlDeviceGetDriverModel_v2\0nvmlDeviceGetDriverModel"},
	{offsetof(struct nvml_lib, gsp), NEED_FIELDS, "nvmlDeviceGetGspFirmwareMode"},
	{offsetof(struct nvml_lib, encoder_stats), NEED_FIELDS, "nvmlDeviceGetEncoderStats"},
	{offsetof(struct nvml_lib, inforom_image), NEED_FIELDS, "nvmlDeviceGetInforomImageVersion"},
	{offsetof(struct nvml_lib, inforom), NEED_FIELDS, "nvmlDeviceGetInforomVersion"},
	{offsetof(struct nvml_lib, inforom_validate), NEED_FIELDS, "nvmlDeviceValidateInforom"},
	{offsetof(struct nvml_lib, jpg), NEED_FIELDS, "nvmlDeviceGetJpgUtilization"},
	{offsetof(struct nvml_lib, ofa), NEED_FIELDS, "nvmlDeviceGetOfaUtilization"},
	{offsetof(struct nvml_lib, addressing), NEED_FIELDS, "nvmlDeviceGetAddressingMode"},
	{offsetof(struct nvml_lib, c2c), NEED_FIELDS, "nvmlDeviceGetC2cModeInfoV"},
	{offsetof(struct nvml_lib, dram_encryption), NEED_FIELDS, "nvmlDeviceGetDramEncryptionMode"},
	{offsetof(struct nvml_lib, vgpu_driver_cap), NEED_FIELDS, "nvmlGetVgpuDriverCapabilities"},
	{offsetof(struct nvml_lib, vgpu_device_cap), NEED_FIELDS, "nvmlDeviceGetVgpuCapabilities"},
	{offsetof(struct nvml_lib, fabric), NEED_FIELDS, "nvmlDeviceGetGpuFabricInfoV"},
	{offsetof(struct nvml_lib, platform), NEED_FIELDS, "nvmlDeviceGetPlatformInfo"},
	{offsetof(struct nvml_lib, protected_mem), NEED_FIELDS, "nvmlDeviceGetConfComputeProtectedMemoryUsage"},
	{offsetof(struct nvml_lib, hostname), NEED_FIELDS, "nvmlDeviceGetHostname_v1"},
	/* end smi */
};

/* GPUCTL_NVML_REPORT=FILE (smi, issue 27; tests/device/check.sh): each function slot and the
 * name that filled it, or "missing", then the fallbacks taken at run time, appended to FILE: what
 * a real driver's library gave gpuctl. With it every group is resolved at load, so the report
 * lists every slot. */
static FILE *report;

/* htop's resolve(), with fallbacks: the first of names (NUL-ended names, ended by an empty one or
 * the end of the array) that the library exports fills the slot at offset off in nvml. Returns
 * its position in the list, or -1 (slot NULL) when it has none. */
static int resolve(size_t off, const char *names, size_t size)
{
	const char *list[8] = {0}; /* NULL-terminated, as dl_resolve wants */
	size_t n = 0;
	for (const char *p = names; p < names + size && *p && n < ARRAY_SIZE(list) - 1;
	     p += strnlen(p, (size_t)(names + size - p)) + 1)
		list[n++] = p;
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

void nvml_need(unsigned groups)
{
	unsigned want = groups & ~nvml.resolved;
	if (!want || !nvml.dl)
		return;
	nvml.resolved |= want;
	for (size_t i = 0; i < ARRAY_SIZE(optional); i++)
		if (optional[i].group & want)
			resolve(optional[i].off, optional[i].names, sizeof optional[i].names);
	if (want & NEED_BASE) {
		static const char pci[] = "nvmlDeviceGetPciInfo_v3\0nvmlDeviceGetPciInfo_v2\0"
					  "nvmlDeviceGetPciInfo";
		nvml.pci_ver = 3 - resolve(offsetof(struct nvml_lib, pci), pci, sizeof pci);
	}
	if (want & NEED_PROCS) {
		static const char names[PK_N][128] = {
			"nvmlDeviceGetComputeRunningProcesses_v3\0nvmlDeviceGetComputeRunningProcesses_v2\0"
			"nvmlDeviceGetComputeRunningProcesses",
			"nvmlDeviceGetGraphicsRunningProcesses_v3\0nvmlDeviceGetGraphicsRunningProcesses_v2\0"
			"nvmlDeviceGetGraphicsRunningProcesses",
			"nvmlDeviceGetMPSComputeRunningProcesses_v3\0"
			"nvmlDeviceGetMPSComputeRunningProcesses_v2\0nvmlDeviceGetMPSComputeRunningProcesses",
		};
		for (int k = 0; k < PK_N; k++) {
			int at = resolve(offsetof(struct nvml_lib, procs) + (size_t)k * sizeof(proc_fn),
					 names[k], sizeof names[k]);
			/* Drivers 535.43-535.86 wrote 32-byte _v3 entries with no version bump; they
			 * are the ones with the confidential-computing query but without the detail
			 * list (nvitop's rule): both resolved with this group, above. */
			if (at == 0 && nvml.cc_mem_size && !nvml.detail_list)
				nvml.proc_stride[k] = sizeof(nvmlProcessInfo_r535_t);
			else if (at == 0 || at == 1)
				nvml.proc_stride[k] = sizeof(nvmlProcessInfo_v2_t);
			else
				nvml.proc_stride[k] = sizeof(nvmlProcessInfo_v1_t);
		}
	}
	if (report)
		fflush(report);
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
		if (resolve(s->off, s->names, sizeof s->names) < 0) {
			const char *plain = s->names + strlen(s->names) + 1; /* the second, if any */
			missing = *plain ? plain : s->names;
		}
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
	nvml.resolved = 0;
	nvml_need(report ? NEED_ALL : NEED_BASE);
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
