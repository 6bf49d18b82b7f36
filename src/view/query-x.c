/* query-x.c: the --query-gpu fields of nvidia-smi 590 that the GPU model (machine/gpu.h) does not
 * hold: ECC counters by location and the SRAM status, retired pages and remapped rows, the average
 * and instant power draw and the module's power, T.Limit, InfoROM versions, encoder statistics,
 * operation and driver modes, power smoothing, vGPU capabilities... Each row names its source once
 * (a GX_* of gpu.h and its argument, which the backend maps to one NVML call), its unit and how its
 * value is printed; a cell reads its value when it is printed (gpu_read_x), so a query reads only
 * the calls its fields need and no refresh of any other view pays for them.
 *
 * Values that cannot be had print what nvidia-smi 590 prints (real H200 captures, shared
 * reference nvidia-smi-fields.md): "[N/A]" for not supported (590 prints no "[Not Supported]"),
 * "[Function Not Found]" where the driver's library lacks the call, the driver's own words in
 * brackets for other failures, a bare "N/A" for the fabric fields, and the deprecation token for
 * the applications clocks and power management from driver 590 on. Sources gpuctl does not read
 * yet (GX_NONE: the fabric health bits, the host's PCIe maximum) print the
 * not-available token, never a guess; so does a value a name table below has no name for. */
#include "view/query-x.h"
#include "view/query.h"
#include "base/escape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/nvml/abi.h"

enum xfmt {
	XF_NUM,          /* decimal */
	XF_FIELDNUM,     /* a field value: decimal, or 2 decimals when the driver answers a double */
	XF_HEX,          /* 0x3 */
	XF_HEX2,         /* 0x83 */
	XF_HEX4,         /* 0x0000 */
	XF_ENABLED,      /* Enabled / Disabled */
	XF_YESNO,        /* Yes / No */
	XF_VALID,        /* valid / invalid */
	XF_STR,
	XF_MILLIWATTS,   /* milliwatts as watts with 2 decimals */
	XF_DOUBLE2,      /* 2 decimals */
	XF_NAMES,        /* a name from the row's table */
	XF_FABRIC,       /* the string when there is one, else decimal; a bare N/A when not available */
	XF_FABRIC_NAMES, /* a name from the row's table; a bare N/A when not available */
	XF_MIB,          /* bytes in MiB, rounded up as nvidia-smi rounds */
	XF_HEX16,        /* 0x and 16 upper-case hex digits */
};

/* The texts are kept in the entry and the value names are named by their place in name_sets: a
 * table without pointers is not relocated at start-up, so its pages stay the file's, read-only
 * and shared (issue 22). */
struct xfield {
	char names[72];             /* canonical first, then aliases; space separated */
	char unit[8];               /* "" for none */
	enum gpu_xsrc src;
	unsigned arg;
	enum xfmt fmt;
	unsigned char enames;       /* XF_NAMES, XF_FABRIC_NAMES: an EN_*, its names in name_sets */
	bool deprecated;            /* drivers 590 and later print the deprecation token */
	char help[72];
};

/* GX_ECC_COUNTER and GX_ECC_TOTAL arguments (gpu.h). */
#define ECC_AT(type, counter, loc) ((type) << 8 | (counter) << 4 | (loc))
#define ECC_TOTAL(type, counter) ((type) << 4 | (counter))

static const char *const addressing_names[] = {"None", "HMM", "ATS", NULL};
static const char *const driver_model_names[] = {"WDDM", "TCC", "MCDM", NULL};
static const char *const gom_names[] = {"All On", "Compute", "Low Double Precision", NULL};
static const char *const recovery_names[] = {"None", "Reset", "Reboot", "Drain P2P",
					     "Drain and Reset", "Recover IMEX Domain", NULL};
/* nvidia-smi's manual (367.38): power management is "Supported" or "N/A" ("": no name). */
static const char *const supported_names[] = {"", "Supported", NULL};
/* Only "Completed" is in a capture; the others are nvml.h's states in nvidia-smi's words. */
static const char *const fabric_state_names[] = {"Not Supported", "Not Started", "In Progress",
						 "Completed", NULL};
/* Only 0 is known (an H200 capture); another type prints [N/A], never a guess. */
static const char *const peer_type_names[] = {"Direct Connected", NULL};
enum { EN_NONE, EN_ADDRESSING, EN_DRIVER_MODEL, EN_GOM, EN_RECOVERY, EN_SUPPORTED, EN_FABRIC_STATE,
       EN_PEER_TYPE };
static const char *const *const name_sets[] = {
	[EN_ADDRESSING] = addressing_names, [EN_DRIVER_MODEL] = driver_model_names,
	[EN_GOM] = gom_names, [EN_RECOVERY] = recovery_names, [EN_SUPPORTED] = supported_names,
	[EN_FABRIC_STATE] = fabric_state_names, [EN_PEER_TYPE] = peer_type_names,
};

static const struct xfield xfields[] = {
	{"vgpu_driver_capability.heterogenous_multivGPU", "", GX_VGPU_DRIVER_CAP, NVML_VGPU_DRIVER_CAP_HETEROGENEOUS_MULTI_VGPU, XF_YESNO, EN_NONE, 0,
	 "vGPU host driver mixes vGPU profiles in one VM"},
	{"pci.domain", "", GX_PCI_MODEL, 0, XF_HEX4, EN_NONE, 0,
	 "PCI domain"},
	{"pci.bus", "", GX_PCI_MODEL, 1, XF_HEX2, EN_NONE, 0,
	 "PCI bus"},
	{"pci.device", "", GX_PCI_MODEL, 2, XF_HEX2, EN_NONE, 0,
	 "PCI device"},
	{"pci.baseClass", "", GX_PCI_EXT, 0, XF_HEX, EN_NONE, 0,
	 "PCI base class"},
	{"pci.subClass", "", GX_PCI_EXT, 1, XF_HEX, EN_NONE, 0,
	 "PCI sub class"},
	{"vgpu_device_capability.fractional_multiVgpu", "", GX_VGPU_DEVICE_CAP, NVML_DEVICE_VGPU_CAP_FRACTIONAL_MULTI_VGPU, XF_YESNO, EN_NONE, 0,
	 "fractional vGPU profiles usable in multi-vGPU VMs"},
	{"vgpu_device_capability.heterogeneous_timeSlice_profile", "", GX_VGPU_DEVICE_CAP, NVML_DEVICE_VGPU_CAP_HETEROGENEOUS_TIMESLICE_PROFILES, XF_YESNO, EN_NONE, 0,
	 "time-sliced vGPU profiles of differing types at once"},
	{"vgpu_device_capability.heterogeneous_timeSlice_sizes", "", GX_VGPU_DEVICE_CAP, NVML_DEVICE_VGPU_CAP_HETEROGENEOUS_TIMESLICE_SIZES, XF_YESNO, EN_NONE, 0,
	 "time-sliced vGPU profiles of differing sizes at once"},
	{"vgpu_device_capability.homogeneous_placements", "", GX_VGPU_DEVICE_CAP, NVML_DEVICE_VGPU_CAP_HOMOGENEOUS_PLACEMENTS, XF_YESNO, EN_NONE, 0,
	 "placements of same-size time-sliced vGPU profiles"},
	{"vgpu_device_capability.mig_timeSlicing", "", GX_VGPU_DEVICE_CAP, NVML_DEVICE_VGPU_CAP_MIG_TIMESLICING_SUPPORTED, XF_YESNO, EN_NONE, 0,
	 "time-sliced vGPU on MIG supported"},
	{"vgpu_device_capability.mig_timeSlicing_mode", "", GX_VGPU_DEVICE_CAP, NVML_DEVICE_VGPU_CAP_MIG_TIMESLICING_ENABLED, XF_YESNO, EN_NONE, 0,
	 "time-sliced vGPU on MIG enabled"},
	{"pcie.link.gen.hostmax", "", GX_NONE, 0, XF_NUM, EN_NONE, 0,
	 "highest PCIe generation of the host (no NVML call gives it: [N/A])"},
	{"addressing_mode", "", GX_ADDRESSING_MODE, 0, XF_NAMES, EN_ADDRESSING, 0,
	 "None, HMM or ATS"},
	{"accounting.buffer_size", "", GX_ACCOUNTING_BUFFER, 0, XF_NUM, EN_NONE, 0,
	 "processes the accounting buffer holds"},
	{"driver_model.current", "", GX_DRIVER_MODEL, 0, XF_NAMES, EN_DRIVER_MODEL, 0,
	 "Windows driver model (WDDM, TCC, MCDM)"},
	{"driver_model.pending", "", GX_DRIVER_MODEL, 1, XF_NAMES, EN_DRIVER_MODEL, 0,
	 "driver model after the next reboot"},
	{"inforom.img inforom.image", "", GX_INFOROM_IMAGE, 0, XF_STR, EN_NONE, 0,
	 "InfoROM image version"},
	{"inforom.oem", "", GX_INFOROM, NVML_INFOROM_OEM, XF_STR, EN_NONE, 0,
	 "InfoROM OEM object version"},
	{"inforom.ecc", "", GX_INFOROM, NVML_INFOROM_ECC, XF_STR, EN_NONE, 0,
	 "InfoROM ECC object version"},
	{"inforom.pwr inforom.power", "", GX_INFOROM, NVML_INFOROM_POWER, XF_STR, EN_NONE, 0,
	 "InfoROM power object version"},
	{"inforom.checksum_validation", "", GX_INFOROM_VALID, 0, XF_VALID, EN_NONE, 0,
	 "InfoROM checksum: valid or invalid"},
	{"gpu_recovery_action", "", GX_FIELD, NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, XF_NAMES, EN_RECOVERY, 0,
	 "what the GPU needs to recover (None, Reset, Reboot, ...)"},
	{"gom.current gpu_operation_mode.current", "", GX_GOM, 0, XF_NAMES, EN_GOM, 0,
	 "GPU operation mode"},
	{"gom.pending gpu_operation_mode.pending", "", GX_GOM, 1, XF_NAMES, EN_GOM, 0,
	 "GPU operation mode after the next reboot"},
	{"clocks_event_reasons_counters.sw_power_cap", "us", GX_FIELD, NVML_FI_DEV_PERF_POLICY_POWER, XF_NUM, EN_NONE, 0,
	 "time the clocks were held down by sw power cap"},
	{"clocks_event_reasons_counters.sync_boost", "us", GX_FIELD, NVML_FI_DEV_PERF_POLICY_SYNC_BOOST, XF_NUM, EN_NONE, 0,
	 "time the clocks were held down by sync boost"},
	{"clocks_event_reasons_counters.sw_thermal_slowdown", "us", GX_FIELD, NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN, XF_NUM, EN_NONE, 0,
	 "time the clocks were held down by sw thermal slowdown"},
	{"clocks_event_reasons_counters.hw_thermal_slowdown", "us", GX_FIELD, NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN, XF_NUM, EN_NONE, 0,
	 "time the clocks were held down by hw thermal slowdown"},
	{"clocks_event_reasons_counters.hw_power_brake_slowdown", "us", GX_FIELD, NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN, XF_NUM, EN_NONE, 0,
	 "time the clocks were held down by hw power brake slowdown"},
	{"utilization.jpeg", "%", GX_JPG_UTIL, 0, XF_NUM, EN_NONE, 0,
	 "JPEG decoder use"},
	{"utilization.ofa", "%", GX_OFA_UTIL, 0, XF_NUM, EN_NONE, 0,
	 "optical flow accelerator use"},
	{"encoder.stats.sessionCount", "", GX_ENCODER_STATS, 0, XF_NUM, EN_NONE, 0,
	 "encoder sessions"},
	{"encoder.stats.averageFps", "", GX_ENCODER_STATS, 1, XF_NUM, EN_NONE, 0,
	 "average frames per second of the encoder sessions"},
	{"encoder.stats.averageLatency", "", GX_ENCODER_STATS, 2, XF_NUM, EN_NONE, 0,
	 "average latency of the encoder sessions, us"},
	{"dramEncryption.mode.current", "", GX_DRAM_ENCRYPTION, 0, XF_ENABLED, EN_NONE, 0,
	 "DRAM encryption"},
	{"dramEncryption.mode.pending", "", GX_DRAM_ENCRYPTION, 1, XF_ENABLED, EN_NONE, 0,
	 "DRAM encryption after the next reboot"},
	{"ecc.mode.pending", "", GX_ECC_MODE, 1, XF_ENABLED, EN_NONE, 0,
	 "ECC mode after the next reboot"},
	{"ecc.errors.corrected.volatile.device_memory", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_DEVICE_MEMORY), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in device memory, since the driver loaded"},
	{"ecc.errors.corrected.volatile.dram", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_DRAM), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in DRAM, since the driver loaded"},
	{"ecc.errors.corrected.volatile.register_file", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_REGISTER_FILE), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in the register file, since the driver loaded"},
	{"ecc.errors.corrected.volatile.l1_cache", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_L1_CACHE), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in the L1 cache, since the driver loaded"},
	{"ecc.errors.corrected.volatile.l2_cache", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_L2_CACHE), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in the L2 cache, since the driver loaded"},
	{"ecc.errors.corrected.volatile.texture_memory", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_TEXTURE_MEMORY), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in texture memory, since the driver loaded"},
	{"ecc.errors.corrected.volatile.cbu", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_CBU), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in the CBU, since the driver loaded"},
	{"ecc.errors.corrected.volatile.sram", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_SRAM), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in SRAM, since the driver loaded"},
	{"ecc.errors.corrected.volatile.total", "", GX_ECC_TOTAL, ECC_TOTAL(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors, all locations, since the driver loaded"},
	{"ecc.errors.corrected.aggregate.device_memory", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_DEVICE_MEMORY), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in device memory, over the life of the GPU"},
	{"ecc.errors.corrected.aggregate.dram", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_DRAM), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in DRAM, over the life of the GPU"},
	{"ecc.errors.corrected.aggregate.register_file", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_REGISTER_FILE), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in the register file, over the life of the GPU"},
	{"ecc.errors.corrected.aggregate.l1_cache", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_L1_CACHE), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in the L1 cache, over the life of the GPU"},
	{"ecc.errors.corrected.aggregate.l2_cache", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_L2_CACHE), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in the L2 cache, over the life of the GPU"},
	{"ecc.errors.corrected.aggregate.texture_memory", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_TEXTURE_MEMORY), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in texture memory, over the life of the GPU"},
	{"ecc.errors.corrected.aggregate.cbu", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_CBU), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in the CBU, over the life of the GPU"},
	{"ecc.errors.corrected.aggregate.sram", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_SRAM), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors in SRAM, over the life of the GPU"},
	{"ecc.errors.corrected.aggregate.total", "", GX_ECC_TOTAL, ECC_TOTAL(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC), XF_NUM, EN_NONE, 0,
	 "corrected ECC errors, all locations, over the life of the GPU"},
	{"ecc.errors.uncorrected.volatile.device_memory", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_DEVICE_MEMORY), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in device memory, since the driver loaded"},
	{"ecc.errors.uncorrected.volatile.dram", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_DRAM), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in DRAM, since the driver loaded"},
	{"ecc.errors.uncorrected.volatile.register_file", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_REGISTER_FILE), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in the register file, since the driver loaded"},
	{"ecc.errors.uncorrected.volatile.l1_cache", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_L1_CACHE), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in the L1 cache, since the driver loaded"},
	{"ecc.errors.uncorrected.volatile.l2_cache", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_L2_CACHE), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in the L2 cache, since the driver loaded"},
	{"ecc.errors.uncorrected.volatile.texture_memory", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_TEXTURE_MEMORY), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in texture memory, since the driver loaded"},
	{"ecc.errors.uncorrected.volatile.cbu", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_CBU), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in the CBU, since the driver loaded"},
	{"ecc.errors.uncorrected.volatile.sram", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_SRAM), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in SRAM, since the driver loaded"},
	{"ecc.errors.uncorrected.aggregate.device_memory", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_DEVICE_MEMORY), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in device memory, over the life of the GPU"},
	{"ecc.errors.uncorrected.aggregate.dram", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_DRAM), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in DRAM, over the life of the GPU"},
	{"ecc.errors.uncorrected.aggregate.register_file", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_REGISTER_FILE), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in the register file, over the life of the GPU"},
	{"ecc.errors.uncorrected.aggregate.l1_cache", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_L1_CACHE), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in the L1 cache, over the life of the GPU"},
	{"ecc.errors.uncorrected.aggregate.l2_cache", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_L2_CACHE), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in the L2 cache, over the life of the GPU"},
	{"ecc.errors.uncorrected.aggregate.texture_memory", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_TEXTURE_MEMORY), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in texture memory, over the life of the GPU"},
	{"ecc.errors.uncorrected.aggregate.cbu", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_CBU), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in the CBU, over the life of the GPU"},
	{"ecc.errors.uncorrected.aggregate.sram", "", GX_ECC_COUNTER, ECC_AT(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, NVML_MEMORY_LOCATION_SRAM), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors in SRAM, over the life of the GPU"},
	{"ecc.errors.uncorrected.aggregate.total", "", GX_ECC_TOTAL, ECC_TOTAL(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC), XF_NUM, EN_NONE, 0,
	 "uncorrected ECC errors, all locations, over the life of the GPU"},
	{"ecc.errors.uncorrected.volatile.sram.parity", "", GX_SRAM, 3, XF_NUM, EN_NONE, 0,
	 "uncorrectable SRAM parity errors since the driver loaded"},
	{"ecc.errors.uncorrected.volatile.sram.secded", "", GX_SRAM, 4, XF_NUM, EN_NONE, 0,
	 "uncorrectable SRAM SEC-DED errors since the driver loaded"},
	{"ecc.errors.uncorrected.aggregate.sram.parity", "", GX_SRAM, 0, XF_NUM, EN_NONE, 0,
	 "uncorrectable SRAM parity errors, lifetime"},
	{"ecc.errors.uncorrected.aggregate.sram.secded", "", GX_SRAM, 1, XF_NUM, EN_NONE, 0,
	 "uncorrectable SRAM SEC-DED errors, lifetime"},
	{"ecc.errors.uncorrected.aggregate.sram.thresholdExceeded", "", GX_SRAM, 11, XF_YESNO, EN_NONE, 0,
	 "whether SRAM errors passed the field diagnostic's threshold"},
	{"ecc.errors.uncorrected.aggregate.sram.l2", "", GX_SRAM, 6, XF_NUM, EN_NONE, 0,
	 "uncorrectable SRAM errors in the L2 cache bucket"},
	{"ecc.errors.uncorrected.aggregate.sram.sm", "", GX_SRAM, 7, XF_NUM, EN_NONE, 0,
	 "uncorrectable SRAM errors in the SM bucket"},
	{"ecc.errors.uncorrected.aggregate.sram.mcu", "", GX_SRAM, 9, XF_NUM, EN_NONE, 0,
	 "uncorrectable SRAM errors in the microcontroller bucket"},
	{"ecc.errors.uncorrected.aggregate.sram.pcie", "", GX_SRAM, 8, XF_NUM, EN_NONE, 0,
	 "uncorrectable SRAM errors in the PCIe bucket"},
	{"ecc.errors.uncorrected.aggregate.sram.other", "", GX_SRAM, 10, XF_NUM, EN_NONE, 0,
	 "uncorrectable SRAM errors in other units"},
	{"retired_pages.single_bit_ecc.count retired_pages.sbe", "", GX_RETIRED, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, XF_NUM, EN_NONE, 0,
	 "pages retired for multiple single-bit ECC errors"},
	{"retired_pages.double_bit.count retired_pages.dbe", "", GX_RETIRED, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, XF_NUM, EN_NONE, 0,
	 "pages retired for a double-bit ECC error"},
	{"retired_pages.pending", "", GX_RETIRED_PENDING, 0, XF_YESNO, EN_NONE, 0,
	 "pages waiting to be retired at the next reboot"},
	{"remapped_rows.correctable remapped_rows.sbe", "", GX_REMAPPED, 0, XF_NUM, EN_NONE, 0,
	 "rows remapped for correctable errors"},
	{"remapped_rows.uncorrectable remapped_rows.dbe", "", GX_REMAPPED, 1, XF_NUM, EN_NONE, 0,
	 "rows remapped for uncorrectable errors"},
	{"remapped_rows.pending", "", GX_REMAPPED, 2, XF_YESNO, EN_NONE, 0,
	 "a remapping waits for a GPU reset"},
	{"remapped_rows.failure", "", GX_REMAPPED, 3, XF_YESNO, EN_NONE, 0,
	 "a remapping failed"},
	{"remapped_rows.histogram.max", "", GX_REMAP_HISTOGRAM, 0, XF_NUM, EN_NONE, 0,
	 "memory banks with all of their spare rows left"},
	{"remapped_rows.histogram.high", "", GX_REMAP_HISTOGRAM, 1, XF_NUM, EN_NONE, 0,
	 "memory banks with most of their spare rows left"},
	{"remapped_rows.histogram.partial", "", GX_REMAP_HISTOGRAM, 2, XF_NUM, EN_NONE, 0,
	 "memory banks with some of their spare rows left"},
	{"remapped_rows.histogram.low", "", GX_REMAP_HISTOGRAM, 3, XF_NUM, EN_NONE, 0,
	 "memory banks with few of their spare rows left"},
	{"remapped_rows.histogram.none", "", GX_REMAP_HISTOGRAM, 4, XF_NUM, EN_NONE, 0,
	 "memory banks with none of their spare rows left"},
	{"temperature.gpu.tlimit", "", GX_FIELD, NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT, XF_NUM, EN_NONE, 0,
	 "degrees C below the slowdown temperature (T.Limit)"},
	{"power.management", "", GX_POWER_MGMT_MODE, 0, XF_NAMES, EN_SUPPORTED, 1,
	 "power management (deprecated by drivers 590 and later)"},
	{"power.draw.average gpu.power.draw.average", "W", GX_FIELD, NVML_FI_DEV_POWER_AVERAGE, XF_MILLIWATTS, EN_NONE, 0,
	 "power draw averaged over one second"},
	{"power.draw.instant gpu.power.draw.instant", "W", GX_FIELD, NVML_FI_DEV_POWER_INSTANT, XF_MILLIWATTS, EN_NONE, 0,
	 "power draw now"},
	{"module.power.draw.average", "W", GX_FIELD, NVML_POWER_SCOPE_MODULE << 16 | NVML_FI_DEV_POWER_AVERAGE, XF_MILLIWATTS, EN_NONE, 0,
	 "module (Grace Hopper) power draw averaged over one second"},
	{"module.power.draw.instant", "W", GX_FIELD, NVML_POWER_SCOPE_MODULE << 16 | NVML_FI_DEV_POWER_INSTANT, XF_MILLIWATTS, EN_NONE, 0,
	 "module power draw now"},
	{"module.power.limit module.power.requested_limit", "W", GX_FIELD, NVML_POWER_SCOPE_MODULE << 16 | NVML_FI_DEV_POWER_REQUESTED_LIMIT, XF_MILLIWATTS, EN_NONE, 0,
	 "module power limit requested by software"},
	{"module.enforced.power.limit module.power.current_limit", "W", GX_FIELD, NVML_POWER_SCOPE_MODULE << 16 | NVML_FI_DEV_POWER_CURRENT_LIMIT, XF_MILLIWATTS, EN_NONE, 0,
	 "module power limit in force"},
	{"module.power.default_limit", "W", GX_FIELD, NVML_POWER_SCOPE_MODULE << 16 | NVML_FI_DEV_POWER_DEFAULT_LIMIT, XF_MILLIWATTS, EN_NONE, 0,
	 "module default power limit"},
	{"module.power.min_limit", "W", GX_FIELD, NVML_POWER_SCOPE_MODULE << 16 | NVML_FI_DEV_POWER_MIN_LIMIT, XF_MILLIWATTS, EN_NONE, 0,
	 "lowest module power limit"},
	{"module.power.max_limit", "W", GX_FIELD, NVML_POWER_SCOPE_MODULE << 16 | NVML_FI_DEV_POWER_MAX_LIMIT, XF_MILLIWATTS, EN_NONE, 0,
	 "highest module power limit"},
	{"power_smoothing.delayed_power_smoothing_supported", "", GX_FIELD, NVML_FI_PWR_SMOOTHING_DELAYED_PWR_SMOOTHING_SUPPORTED, XF_YESNO, EN_NONE, 0,
	 "power smoothing: delayed power smoothing supported"},
	{"power_smoothing.primary_power_floor", "W", GX_FIELD, NVML_FI_PWR_SMOOTHING_PRIMARY_POWER_FLOOR, XF_FIELDNUM, EN_NONE, 0,
	 "power smoothing: primary power floor"},
	{"power_smoothing.secondary_power_floor", "W", GX_FIELD, NVML_FI_PWR_SMOOTHING_SECONDARY_POWER_FLOOR, XF_FIELDNUM, EN_NONE, 0,
	 "power smoothing: secondary power floor"},
	{"power_smoothing.min_primary_floor_activation_offset", "W", GX_FIELD, NVML_FI_PWR_SMOOTHING_MIN_PRIMARY_FLOOR_ACT_OFFSET, XF_FIELDNUM, EN_NONE, 0,
	 "power smoothing: min primary floor activation offset"},
	{"power_smoothing.min_primary_floor_activation_point", "W", GX_FIELD, NVML_FI_PWR_SMOOTHING_MIN_PRIMARY_FLOOR_ACT_POINT, XF_FIELDNUM, EN_NONE, 0,
	 "power smoothing: min primary floor activation point"},
	{"power_smoothing.window_multiplier", "ms", GX_FIELD, NVML_FI_PWR_SMOOTHING_WINDOW_MULTIPLIER, XF_FIELDNUM, EN_NONE, 0,
	 "power smoothing: window multiplier"},
	{"power_smoothing.curr_profile.secondary_power_floor", "W", GX_FIELD, NVML_FI_PWR_SMOOTHING_PROFILE_SECONDARY_POWER_FLOOR, XF_FIELDNUM, EN_NONE, 0,
	 "power smoothing: curr profile, secondary power floor"},
	{"power_smoothing.curr_profile.primary_floor_act_window_multiplier", "", GX_FIELD, NVML_FI_PWR_SMOOTHING_PROFILE_PRIMARY_FLOOR_ACT_WIN_MULT, XF_FIELDNUM, EN_NONE, 0,
	 "power smoothing: curr profile, primary floor act window multiplier"},
	{"power_smoothing.curr_profile.primary_floor_tar_window_multiplier", "", GX_FIELD, NVML_FI_PWR_SMOOTHING_PROFILE_PRIMARY_FLOOR_TAR_WIN_MULT, XF_FIELDNUM, EN_NONE, 0,
	 "power smoothing: curr profile, primary floor tar window multiplier"},
	{"power_smoothing.curr_profile.primary_floor_act_offset", "W", GX_FIELD, NVML_FI_PWR_SMOOTHING_PROFILE_PRIMARY_FLOOR_ACT_OFFSET, XF_FIELDNUM, EN_NONE, 0,
	 "power smoothing: curr profile, primary floor act offset"},
	{"power_smoothing.admin_override.secondary_power_floor", "W", GX_FIELD, NVML_FI_PWR_SMOOTHING_ADMIN_OVERRIDE_SECONDARY_POWER_FLOOR, XF_FIELDNUM, EN_NONE, 0,
	 "power smoothing: admin override, secondary power floor"},
	{"power_smoothing.admin_override.primary_floor_act_window_multiplier", "", GX_FIELD, NVML_FI_PWR_SMOOTHING_ADMIN_OVERRIDE_PRIMARY_FLOOR_ACT_WIN_MULT, XF_FIELDNUM, EN_NONE, 0,
	 "power smoothing: admin override, primary floor act window multiplier"},
	{"power_smoothing.admin_override.primary_floor_tar_window_multiplier", "", GX_FIELD, NVML_FI_PWR_SMOOTHING_ADMIN_OVERRIDE_PRIMARY_FLOOR_TAR_WIN_MULT, XF_FIELDNUM, EN_NONE, 0,
	 "power smoothing: admin override, primary floor tar window multiplier"},
	{"power_smoothing.admin_override.primary_floor_act_offset", "W", GX_FIELD, NVML_FI_PWR_SMOOTHING_ADMIN_OVERRIDE_PRIMARY_FLOOR_ACT_OFFSET, XF_FIELDNUM, EN_NONE, 0,
	 "power smoothing: admin override, primary floor act offset"},
	{"edpp_multiplier", "%", GX_FIELD, NVML_FI_DEV_EDPP_MULTIPLIER, XF_DOUBLE2, EN_NONE, 0,
	 "EDPp multiplier, percent"},
	{"clocks.applications.graphics clocks.applications.gr", "MHz", GX_APP_CLOCK, NVML_CLOCK_GRAPHICS, XF_NUM, EN_NONE, 1,
	 "applications graphics clock (deprecated by drivers 590 and later)"},
	{"clocks.applications.memory clocks.applications.mem", "MHz", GX_APP_CLOCK, NVML_CLOCK_MEM, XF_NUM, EN_NONE, 1,
	 "applications memory clock (deprecated)"},
	{"clocks.default_applications.graphics clocks.default_applications.gr", "MHz", GX_DEFAULT_APP_CLOCK, NVML_CLOCK_GRAPHICS, XF_NUM, EN_NONE, 1,
	 "default applications graphics clock (deprecated)"},
	{"clocks.default_applications.memory clocks.default_applications.mem", "MHz", GX_DEFAULT_APP_CLOCK, NVML_CLOCK_MEM, XF_NUM, EN_NONE, 1,
	 "default applications memory clock (deprecated)"},
	{"mig.mode.pending", "", GX_MIG_MODE, 1, XF_ENABLED, EN_NONE, 0,
	 "MIG mode after the next GPU reset"},
	{"gsp.mode.current", "", GX_GSP, 0, XF_ENABLED, EN_NONE, 0,
	 "GSP firmware in use"},
	{"gsp.mode.default", "", GX_GSP, 1, XF_ENABLED, EN_NONE, 0,
	 "GSP firmware by default"},
	{"c2c.mode", "", GX_C2C_MODE, 0, XF_ENABLED, EN_NONE, 0,
	 "chip-to-chip link (Grace Hopper)"},
	{"protected_memory.total", "MiB", GX_PROTECTED_MEM, 0, XF_MIB, EN_NONE, 0,
	 "confidential-computing protected memory, total"},
	{"protected_memory.used", "MiB", GX_PROTECTED_MEM, 1, XF_MIB, EN_NONE, 0,
	 "confidential-computing protected memory, used"},
	{"protected_memory.free", "MiB", GX_PROTECTED_MEM, 2, XF_MIB, EN_NONE, 0,
	 "confidential-computing protected memory, free"},
	{"fabric.state", "", GX_FABRIC, 0, XF_FABRIC_NAMES, EN_FABRIC_STATE, 0,
	 "NVLink fabric probe state"},
	{"fabric.status", "", GX_FABRIC, 1, XF_FABRIC, EN_NONE, 0,
	 "NVLink fabric probe result"},
	{"fabric.cliqueId", "", GX_FABRIC, 2, XF_FABRIC, EN_NONE, 0,
	 "NVLink fabric clique id"},
	{"fabric.clusterUuid", "", GX_FABRIC, 3, XF_FABRIC, EN_NONE, 0,
	 "NVLink fabric cluster UUID"},
	{"fabric.health.summary", "", GX_NONE, 0, XF_FABRIC, EN_NONE, 0,
	 "NVLink fabric health summary (not read yet: N/A)"},
	{"fabric.health.bandwidth", "", GX_NONE, 0, XF_FABRIC, EN_NONE, 0,
	 "NVLink fabric health bandwidth (not read yet: N/A)"},
	{"fabric.health.route_recovery_in_progress", "", GX_NONE, 0, XF_FABRIC, EN_NONE, 0,
	 "NVLink fabric health route_recovery_in_progress (not read yet: N/A)"},
	{"fabric.health.route_unhealthy", "", GX_NONE, 0, XF_FABRIC, EN_NONE, 0,
	 "NVLink fabric health route_unhealthy (not read yet: N/A)"},
	{"fabric.health.access_timeout_recovery", "", GX_NONE, 0, XF_FABRIC, EN_NONE, 0,
	 "NVLink fabric health access_timeout_recovery (not read yet: N/A)"},
	{"fabric.health.incorrect_configuration", "", GX_NONE, 0, XF_FABRIC, EN_NONE, 0,
	 "NVLink fabric health incorrect_configuration (not read yet: N/A)"},
	{"platform.chassis_serial_number", "", GX_PLATFORM, 0, XF_STR, EN_NONE, 0,
	 "platform: serial number of the chassis"},
	{"platform.slot_number", "", GX_PLATFORM, 1, XF_NUM, EN_NONE, 0,
	 "platform: slot in the chassis"},
	{"platform.tray_index", "", GX_PLATFORM, 2, XF_NUM, EN_NONE, 0,
	 "platform: tray in the chassis"},
	{"platform.host_id", "", GX_PLATFORM, 3, XF_NUM, EN_NONE, 0,
	 "platform: node within the slot"},
	{"platform.peer_type", "", GX_PLATFORM, 4, XF_NAMES, EN_PEER_TYPE, 0,
	 "platform: NVLink peer type"},
	{"platform.module_id", "", GX_PLATFORM, 5, XF_NUM, EN_NONE, 0,
	 "platform: GPU within the node"},
	{"platform.gpu_fabric_guid", "", GX_PLATFORM, 6, XF_HEX16, EN_NONE, 0,
	 "platform: the GPU's fabric GUID"},
	{"hostname", "", GX_HOSTNAME, 0, XF_STR, EN_NONE, 0,
	 "host name set on the GPU (Blackwell and later)"},
};

static const char deprecated_token[] = "[Requested functionality has been deprecated]";
/* The first driver series whose nvidia-smi prints the deprecation token is not known exactly:
 * 535 printed values, 590 and 610 the token (real captures). */
enum { DEPRECATED_SINCE = 590 };

bool query_driver_deprecates(const struct gpu_set *set)
{
	return set->has_driver_version && strtoul(set->driver_version, NULL, 10) >= DEPRECATED_SINCE;
}

static bool matches(const char *names, const char *want, size_t wlen)
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

const struct xfield *query_x_find(const char *s, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(xfields); i++)
		if (matches(xfields[i].names, s, len))
			return &xfields[i];
	return NULL;
}

void query_x_header(struct strbuf *sb, const struct xfield *x)
{
	sb_add(sb, x->names, strcspn(x->names, " "));
	if (x->unit[0])
		sb_addf(sb, " [%s]", x->unit);
}

static const char *name_of(const char *const *names, unsigned long long v)
{
	for (unsigned long long i = 0; names[i]; i++)
		if (i == v)
			return names[i][0] ? names[i] : NULL;
	return NULL;
}

void query_x_cell(struct strbuf *sb, const struct xfield *x, const struct gpu_set *set,
		  const struct gpu *g, bool units)
{
	if (x->deprecated && query_driver_deprecates(set)) {
		sb_adds(sb, deprecated_token);
		return;
	}
	if (g->lost) { /* (as query.c's fields) */
		sb_adds(sb, QUERY_LOST);
		return;
	}
	struct gpu_xval v;
	gpu_read_x(set, g, x->src, x->arg, &v);
	const char *name = NULL;
	if (v.st == GX_OK && (x->fmt == XF_NAMES || x->fmt == XF_FABRIC_NAMES) &&
	    !(name = name_of(name_sets[x->enames], v.u)))
		v.st = GX_NA;   /* a value this table has no name for: not a guess */
	switch (v.st) {
	case GX_OK: break;
	case GX_NA: sb_adds(sb, x->fmt == XF_FABRIC || x->fmt == XF_FABRIC_NAMES ? "N/A" : "[N/A]"); return;
	case GX_NO_FUNCTION: sb_adds(sb, "[Function Not Found]"); return;
	case GX_ERROR: sb_addf(sb, "[%s]", v.why ? v.why : "Unknown Error"); return;
	}
	switch (x->fmt) {
	case XF_NUM: sb_addf(sb, "%llu", v.u); break;
	case XF_FABRIC:
		if (v.s[0])
			esc_printable(sb, v.s);
		else
			sb_addf(sb, "%llu", v.u);
		break;
	case XF_MIB: sb_addf(sb, "%llu", (v.u + (1ULL << 20) - 1) >> 20); break;
	case XF_HEX16: sb_addf(sb, "0x%016llX", v.u); break;
	case XF_FIELDNUM:
		if (v.is_double)
			sb_addf(sb, "%.2f", v.d);
		else
			sb_addf(sb, "%llu", v.u);
		break;
	case XF_HEX: sb_addf(sb, "0x%llX", v.u); break;
	case XF_HEX2: sb_addf(sb, "0x%02llX", v.u); break;
	case XF_HEX4: sb_addf(sb, "0x%04llX", v.u); break;
	case XF_ENABLED: sb_adds(sb, v.u ? "Enabled" : "Disabled"); break;
	case XF_YESNO: sb_adds(sb, v.u ? "Yes" : "No"); break;
	case XF_VALID: sb_adds(sb, v.u ? "valid" : "invalid"); break;
	case XF_STR: esc_printable(sb, v.s); break;
	case XF_MILLIWATTS: sb_addf(sb, "%.2f", (v.is_double ? v.d : (double)v.u) / 1000.0); break;
	case XF_DOUBLE2: sb_addf(sb, "%.2f", v.is_double ? v.d : (double)v.u); break;
	case XF_NAMES: case XF_FABRIC_NAMES: sb_adds(sb, name); break;
	}
	if (units && x->unit[0])
		sb_addf(sb, " %s", x->unit);
}

void query_x_help(struct strbuf *sb)
{
	for (size_t i = 0; i < ARRAY_SIZE(xfields); i++) {
		const struct xfield *x = &xfields[i];
		char names[160];
		snprintf(names, sizeof names, "%s", x->names);
		for (char *c = names; *c; c++)
			if (*c == ' ')
				*c = '|';
		bool wide = strlen(names) > 42;
		sb_addf(sb, "  %-42s%s%*s", names, wide ? "\n" : " ", wide ? 45 : 0, "");
		sb_addf(sb, "%s%s%s%s\n", x->help, x->unit[0] ? " [" : "", x->unit,
			x->unit[0] ? "]" : "");
	}
}
