/* abi.h: the part of NVIDIA's NVML C ABI that gpuctl uses, declared by us (nvtop-style) so
 * that nothing NVIDIA is needed to build. Sizes and offsets follow NVIDIA's published header; the
 * static asserts pin them. The test stand-in library under tests/ shares these declarations, and
 * tests/helper/nvml_client.py checks both against layouts written independently with ctypes. */
#ifndef GPUCTL_NVML_ABI_H
#define GPUCTL_NVML_ABI_H

#include <stddef.h>

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_INSUFFICIENT_POWER = 8,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_IRQ_ISSUE = 11,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_CORRUPTED_INFOROM = 14,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_OPERATING_SYSTEM = 17,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_MEMORY = 20,
	NVML_ERROR_NO_DATA = 21,
	NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
	NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
	NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_ERROR_DEPRECATED = 26,
	NVML_ERROR_NOT_READY = 27,
	NVML_ERROR_GPU_NOT_FOUND = 28,
	NVML_ERROR_INVALID_STATE = 29,
	NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
	NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

#define NVML_VALUE_NOT_AVAILABLE_ULL 0xFFFFFFFFFFFFFFFFULL
#define NVML_VALUE_NOT_AVAILABLE_UINT 0xFFFFFFFFU

#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned int version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
/* Version words, NVIDIA's NVML_STRUCT_VERSION: the struct's size | version << 24. */
#define nvmlMemory_v2 ((unsigned)(sizeof(nvmlMemory_v2_t) | 2U << 24))

typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;

/* _v3 layout. */
typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

/* plain and _v2 layout. */
typedef struct {
	char busId[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	unsigned int reserved0, reserved1, reserved2, reserved3;
} nvmlPciInfo_v1_t;

/* Process entries: plain = v1 (16 B), _v2 and _v3 = v2 (24 B); drivers 535.43-535.86 wrote 32 B
 * _v3 entries without a version bump. */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
	unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessInfo_r535_t;

/* Per-process utilisation, old API: one sample per entry, pid first (32 B). */
typedef struct {
	unsigned int pid;
	unsigned long long timeStamp;   /* CPU time, microseconds since the epoch */
	unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

/* Per-process utilisation, versioned API (R550+): timestamp first (40 B). */
typedef struct {
	unsigned long long timeStamp;
	unsigned int pid;
	unsigned int smUtil, memUtil, encUtil, decUtil, jpgUtil, ofaUtil;
} nvmlProcessUtilizationInfo_v1_t;

typedef struct {
	unsigned int version;
	unsigned int processSamplesCount;       /* in: capacity; out: needed or written */
	unsigned long long lastSeenTimeStamp;   /* in */
	nvmlProcessUtilizationInfo_v1_t *procUtilArray;
} nvmlProcessesUtilizationInfo_v1_t;
#define nvmlProcessesUtilizationInfo_v1 ((unsigned)(sizeof(nvmlProcessesUtilizationInfo_v1_t) | 1U << 24))

/* nvmlDeviceGetFieldValues: one entry per field asked for; each has its own return code. */
typedef union {
	double dVal;
	unsigned int uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	signed long long sllVal;
	signed int siVal;
	unsigned short usVal;
} nvmlValue_t;

typedef struct {
	unsigned int fieldId;
	unsigned int scopeId;
	long long timestamp;
	long long latencyUsec;
	unsigned int valueType;   /* NVML_VALUE_TYPE_* */
	nvmlReturn_t nvmlReturn;
	nvmlValue_t value;
} nvmlFieldValue_t;

enum {
	NVML_VALUE_TYPE_DOUBLE = 0, NVML_VALUE_TYPE_UNSIGNED_INT = 1,
	NVML_VALUE_TYPE_UNSIGNED_LONG = 2, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
	NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4, NVML_VALUE_TYPE_SIGNED_INT = 5,
	NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};
enum {
	NVML_FI_DEV_MEMORY_TEMP = 82,
	NVML_FI_DEV_POWER_MIN_LIMIT = 187, NVML_FI_DEV_POWER_MAX_LIMIT = 188,
	NVML_FI_DEV_POWER_DEFAULT_LIMIT = 189, NVML_FI_DEV_POWER_CURRENT_LIMIT = 190,
	NVML_FI_DEV_POWER_REQUESTED_LIMIT = 192,
};

/* nvmlDeviceGetTemperatureV (565+). */
typedef struct {
	unsigned int version;
	int sensorType;
	int temperature;
} nvmlTemperature_v1_t;
#define nvmlTemperature_v1 ((unsigned)(sizeof(nvmlTemperature_v1_t) | 1U << 24))

#define NVML_DEVICE_SERIAL_BUFFER_SIZE 30
#define NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE 32

enum { NVML_TEMPERATURE_GPU = 0 };
enum {
	NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
	NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2, NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,
	NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MIN = 4, NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR = 5,
	NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MAX = 6, NVML_TEMPERATURE_THRESHOLD_GPS_CURR = 7,
	NVML_TEMPERATURE_THRESHOLD_COUNT = 8,
};
enum { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };
enum { NVML_PSTATE_UNKNOWN = 32 };
/* Clock event (formerly throttle) reasons: bits of nvmlDeviceGetCurrentClocksEventReasons. */
enum {
	NVML_CLOCKS_EVENT_GPU_IDLE = 0x1, NVML_CLOCKS_EVENT_APPLICATIONS_CLOCKS_SETTING = 0x2,
	NVML_CLOCKS_EVENT_SW_POWER_CAP = 0x4, NVML_CLOCKS_EVENT_HW_SLOWDOWN = 0x8,
	NVML_CLOCKS_EVENT_SYNC_BOOST = 0x10, NVML_CLOCKS_EVENT_SW_THERMAL_SLOWDOWN = 0x20,
	NVML_CLOCKS_EVENT_HW_THERMAL_SLOWDOWN = 0x40, NVML_CLOCKS_EVENT_HW_POWER_BRAKE_SLOWDOWN = 0x80,
	NVML_CLOCKS_EVENT_DISPLAY_CLOCK_SETTING = 0x100,
};
enum { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum {
	NVML_COMPUTEMODE_DEFAULT = 0,
	NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
	NVML_COMPUTEMODE_PROHIBITED = 2,
	NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};

_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t");
_Static_assert(offsetof(nvmlMemory_v2_t, used) == 32, "nvmlMemory_v2_t.used");
_Static_assert(nvmlMemory_v2 == 0x02000028, "nvmlMemory_v2 version word");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t");
_Static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t.busId");
_Static_assert(sizeof(nvmlPciInfo_v1_t) == 52, "nvmlPciInfo_v1_t");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t");
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t");
_Static_assert(sizeof(nvmlProcessInfo_r535_t) == 32, "nvmlProcessInfo_r535_t");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "nvmlProcessUtilizationSample_t");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8, "sample.timeStamp");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16, "sample.smUtil");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, decUtil) == 28, "sample.decUtil");
_Static_assert(sizeof(nvmlProcessUtilizationInfo_v1_t) == 40, "nvmlProcessUtilizationInfo_v1_t");
_Static_assert(offsetof(nvmlProcessUtilizationInfo_v1_t, pid) == 8, "info.pid");
_Static_assert(offsetof(nvmlProcessUtilizationInfo_v1_t, ofaUtil) == 32, "info.ofaUtil");
_Static_assert(sizeof(nvmlProcessesUtilizationInfo_v1_t) == 24, "nvmlProcessesUtilizationInfo_v1_t");
_Static_assert(offsetof(nvmlProcessesUtilizationInfo_v1_t, lastSeenTimeStamp) == 8, "lastSeen");
_Static_assert(offsetof(nvmlProcessesUtilizationInfo_v1_t, procUtilArray) == 16, "procUtilArray");
_Static_assert(nvmlProcessesUtilizationInfo_v1 == 0x01000018, "utilization info version word");
_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t");
_Static_assert(offsetof(nvmlFieldValue_t, timestamp) == 8, "nvmlFieldValue_t.timestamp");
_Static_assert(offsetof(nvmlFieldValue_t, valueType) == 24, "nvmlFieldValue_t.valueType");
_Static_assert(offsetof(nvmlFieldValue_t, nvmlReturn) == 28, "nvmlFieldValue_t.nvmlReturn");
_Static_assert(offsetof(nvmlFieldValue_t, value) == 32, "nvmlFieldValue_t.value");
_Static_assert(sizeof(nvmlTemperature_v1_t) == 12, "nvmlTemperature_v1_t");
_Static_assert(nvmlTemperature_v1 == 0x0100000C, "temperature version word");

/* ---- topology, NVLink and affinity (issue 26: `gpuctl topo`, placement, --bind-cpus) ---- */
typedef enum nvmlGpuLevel_enum {
	NVML_TOPOLOGY_INTERNAL = 0,
	NVML_TOPOLOGY_SINGLE = 10,
	NVML_TOPOLOGY_MULTIPLE = 20,
	NVML_TOPOLOGY_HOSTBRIDGE = 30,
	NVML_TOPOLOGY_NODE = 40,
	NVML_TOPOLOGY_SYSTEM = 50,
} nvmlGpuTopologyLevel_t;

typedef enum nvmlGpuP2PStatus_enum {
	NVML_P2P_STATUS_OK = 0,
	NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED,
	NVML_P2P_STATUS_GPU_NOT_SUPPORTED,
	NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED,
	NVML_P2P_STATUS_DISABLED_BY_REGKEY,
	NVML_P2P_STATUS_NOT_SUPPORTED,
	NVML_P2P_STATUS_UNKNOWN
} nvmlGpuP2PStatus_t;

typedef enum nvmlGpuP2PCapsIndex_enum {
	NVML_P2P_CAPS_INDEX_READ = 0, NVML_P2P_CAPS_INDEX_WRITE, NVML_P2P_CAPS_INDEX_NVLINK,
	NVML_P2P_CAPS_INDEX_ATOMICS, NVML_P2P_CAPS_INDEX_PROP, NVML_P2P_CAPS_INDEX_UNKNOWN
} nvmlGpuP2PCapsIndex_t;

typedef enum nvmlEnableState_enum {
	NVML_FEATURE_DISABLED = 0,
	NVML_FEATURE_ENABLED = 1,
} nvmlEnableState_t;

typedef enum nvmlIntNvLinkDeviceType_enum {
	NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
	NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
	NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
	NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF,
} nvmlIntNvLinkDeviceType_t;

#define NVML_NVLINK_MAX_LINKS 18

typedef unsigned int nvmlAffinityScope_t;
#define NVML_AFFINITY_SCOPE_NODE 0
#define NVML_AFFINITY_SCOPE_SOCKET 1

_Static_assert(sizeof(nvmlGpuTopologyLevel_t) == 4, "nvmlGpuTopologyLevel_t");
_Static_assert(sizeof(nvmlGpuP2PStatus_t) == 4, "nvmlGpuP2PStatus_t");
_Static_assert(sizeof(nvmlIntNvLinkDeviceType_t) == 4, "nvmlIntNvLinkDeviceType_t");
/* ---- end of topology (issue 26) ---- */

/* ---- smi (issue 27): what the --query-gpu fields beyond the base read, as in nvml.h 13 ---- */
enum {
	NVML_MEMORY_LOCATION_L1_CACHE = 0, NVML_MEMORY_LOCATION_L2_CACHE = 1,
	NVML_MEMORY_LOCATION_DRAM = 2, NVML_MEMORY_LOCATION_DEVICE_MEMORY = 2,
	NVML_MEMORY_LOCATION_REGISTER_FILE = 3, NVML_MEMORY_LOCATION_TEXTURE_MEMORY = 4,
	NVML_MEMORY_LOCATION_TEXTURE_SHM = 5, NVML_MEMORY_LOCATION_CBU = 6,
	NVML_MEMORY_LOCATION_SRAM = 7,
};
enum {
	NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
	NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
};
enum { NVML_INFOROM_OEM = 0, NVML_INFOROM_ECC = 1, NVML_INFOROM_POWER = 2, NVML_INFOROM_DEN = 3 };
enum { NVML_GOM_ALL_ON = 0, NVML_GOM_COMPUTE = 1, NVML_GOM_LOW_DP = 2 };
enum { NVML_DRIVER_WDDM = 0, NVML_DRIVER_WDM = 1, NVML_DRIVER_MCDM = 2 };
enum {
	NVML_DEVICE_ADDRESSING_MODE_NONE = 0, NVML_DEVICE_ADDRESSING_MODE_HMM = 1,
	NVML_DEVICE_ADDRESSING_MODE_ATS = 2,
};
enum { NVML_VGPU_DRIVER_CAP_HETEROGENEOUS_MULTI_VGPU = 0 };
enum {
	NVML_DEVICE_VGPU_CAP_FRACTIONAL_MULTI_VGPU = 0,
	NVML_DEVICE_VGPU_CAP_HETEROGENEOUS_TIMESLICE_PROFILES = 1,
	NVML_DEVICE_VGPU_CAP_HETEROGENEOUS_TIMESLICE_SIZES = 2,
	NVML_DEVICE_VGPU_CAP_HOMOGENEOUS_PLACEMENTS = 9,
	NVML_DEVICE_VGPU_CAP_MIG_TIMESLICING_SUPPORTED = 10,
	NVML_DEVICE_VGPU_CAP_MIG_TIMESLICING_ENABLED = 11,
};
#define NVML_POWER_SCOPE_GPU 0U
#define NVML_POWER_SCOPE_MODULE 1U
enum {
	NVML_FI_DEV_PERF_POLICY_POWER = 74, NVML_FI_DEV_PERF_POLICY_SYNC_BOOST = 76,
	NVML_FI_DEV_POWER_AVERAGE = 185, NVML_FI_DEV_POWER_INSTANT = 186,
	NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT = 196,
	NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = 230,
	NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN = 269,
	NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN = 270,
	NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN = 271,
	NVML_FI_DEV_EDPP_MULTIPLIER = 274,
	NVML_FI_PWR_SMOOTHING_PRIMARY_POWER_FLOOR = 275, NVML_FI_PWR_SMOOTHING_SECONDARY_POWER_FLOOR = 276,
	NVML_FI_PWR_SMOOTHING_MIN_PRIMARY_FLOOR_ACT_OFFSET = 277,
	NVML_FI_PWR_SMOOTHING_MIN_PRIMARY_FLOOR_ACT_POINT = 278,
	NVML_FI_PWR_SMOOTHING_WINDOW_MULTIPLIER = 279,
	NVML_FI_PWR_SMOOTHING_DELAYED_PWR_SMOOTHING_SUPPORTED = 280,
	NVML_FI_PWR_SMOOTHING_PROFILE_SECONDARY_POWER_FLOOR = 281,
	NVML_FI_PWR_SMOOTHING_PROFILE_PRIMARY_FLOOR_ACT_WIN_MULT = 282,
	NVML_FI_PWR_SMOOTHING_PROFILE_PRIMARY_FLOOR_TAR_WIN_MULT = 283,
	NVML_FI_PWR_SMOOTHING_PROFILE_PRIMARY_FLOOR_ACT_OFFSET = 284,
	NVML_FI_PWR_SMOOTHING_ADMIN_OVERRIDE_SECONDARY_POWER_FLOOR = 285,
	NVML_FI_PWR_SMOOTHING_ADMIN_OVERRIDE_PRIMARY_FLOOR_ACT_WIN_MULT = 286,
	NVML_FI_PWR_SMOOTHING_ADMIN_OVERRIDE_PRIMARY_FLOOR_TAR_WIN_MULT = 287,
	NVML_FI_PWR_SMOOTHING_ADMIN_OVERRIDE_PRIMARY_FLOOR_ACT_OFFSET = 288,
};

typedef struct {
	unsigned int max, high, partial, low, none;
} nvmlRowRemapperHistogramValues_t;

typedef struct {
	unsigned int version;
	unsigned long long aggregateUncParity, aggregateUncSecDed, aggregateCor;
	unsigned long long volatileUncParity, volatileUncSecDed, volatileCor;
	unsigned long long aggregateUncBucketL2, aggregateUncBucketSm, aggregateUncBucketPcie;
	unsigned long long aggregateUncBucketMcu, aggregateUncBucketOther;
	unsigned int bThresholdExceeded;
} nvmlEccSramErrorStatus_v1_t;
#define nvmlEccSramErrorStatus_v1 ((unsigned)(sizeof(nvmlEccSramErrorStatus_v1_t) | 1U << 24))

typedef struct {
	unsigned int version;
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId, baseClass, subClass;
	char busId[32];
} nvmlPciInfoExt_v1_t;
#define nvmlPciInfoExt_v1 ((unsigned)(sizeof(nvmlPciInfoExt_v1_t) | 1U << 24))

typedef struct {
	unsigned int version;
	unsigned int value;   /* NVML_DEVICE_ADDRESSING_MODE_* */
} nvmlDeviceAddressingMode_v1_t;
#define nvmlDeviceAddressingMode_v1 ((unsigned)(sizeof(nvmlDeviceAddressingMode_v1_t) | 1U << 24))

typedef struct {
	unsigned int isC2cEnabled;
} nvmlC2cModeInfo_v1_t;

typedef struct {
	unsigned int version;
	unsigned int encryptionState;   /* nvmlEnableState_t */
} nvmlDramEncryptionInfo_v1_t;
#define nvmlDramEncryptionInfo_v1 ((unsigned)(sizeof(nvmlDramEncryptionInfo_v1_t) | 1U << 24))

#define NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE 16

#define NVML_DEVICE_HOSTNAME_BUFFER_SIZE 64
typedef struct {
	char value[NVML_DEVICE_HOSTNAME_BUFFER_SIZE];
} nvmlHostname_v1_t;

#define NVML_GPU_FABRIC_UUID_LEN 16
enum {
	NVML_GPU_FABRIC_STATE_NOT_SUPPORTED = 0, NVML_GPU_FABRIC_STATE_NOT_STARTED = 1,
	NVML_GPU_FABRIC_STATE_IN_PROGRESS = 2, NVML_GPU_FABRIC_STATE_COMPLETED = 3,
};
typedef struct {
	unsigned int version;
	unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned char state;          /* nvmlGpuFabricState_t: unsigned char */
	unsigned int healthMask;
} nvmlGpuFabricInfo_v2_t;
#define nvmlGpuFabricInfo_v2 ((unsigned)(sizeof(nvmlGpuFabricInfo_v2_t) | 2U << 24))

typedef struct {
	unsigned int version;
	unsigned char ibGuid[16];
	unsigned char chassisSerialNumber[16];
	unsigned char slotNumber, trayIndex, hostId, peerType, moduleId;
} nvmlPlatformInfo_v2_t;
#define nvmlPlatformInfo_v2 ((unsigned)(sizeof(nvmlPlatformInfo_v2_t) | 2U << 24))

_Static_assert(sizeof(nvmlRowRemapperHistogramValues_t) == 20, "histogram");
_Static_assert(sizeof(nvmlEccSramErrorStatus_v1_t) == 104, "nvmlEccSramErrorStatus_v1_t");
_Static_assert(offsetof(nvmlEccSramErrorStatus_v1_t, aggregateUncParity) == 8, "sram.aggregateUncParity");
_Static_assert(offsetof(nvmlEccSramErrorStatus_v1_t, bThresholdExceeded) == 96, "sram.bThresholdExceeded");
_Static_assert(nvmlEccSramErrorStatus_v1 == 0x01000068, "sram version word");
_Static_assert(sizeof(nvmlPciInfoExt_v1_t) == 64, "nvmlPciInfoExt_v1_t");
_Static_assert(offsetof(nvmlPciInfoExt_v1_t, busId) == 32, "nvmlPciInfoExt_v1_t.busId");
_Static_assert(nvmlPciInfoExt_v1 == 0x01000040, "pci ext version word");
_Static_assert(nvmlDeviceAddressingMode_v1 == 0x01000008, "addressing mode version word");
_Static_assert(nvmlDramEncryptionInfo_v1 == 0x01000008, "dram encryption version word");
_Static_assert(offsetof(nvmlGpuFabricInfo_v2_t, status) == 20, "fabric.status");
_Static_assert(offsetof(nvmlGpuFabricInfo_v2_t, state) == 28, "fabric.state");
_Static_assert(sizeof(nvmlGpuFabricInfo_v2_t) == 36, "nvmlGpuFabricInfo_v2_t");
_Static_assert(nvmlGpuFabricInfo_v2 == 0x02000024, "fabric v2 version word");
_Static_assert(offsetof(nvmlPlatformInfo_v2_t, slotNumber) == 36, "platform.slotNumber");
_Static_assert(sizeof(nvmlPlatformInfo_v2_t) == 44, "nvmlPlatformInfo_v2_t");
_Static_assert(nvmlPlatformInfo_v2 == 0x0200002C, "platform v2 version word");
/* ---- end smi (issue 27) ---- */

#endif
