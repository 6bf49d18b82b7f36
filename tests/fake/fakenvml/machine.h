/* machine.h: the simulated machine behind the test stand-in libnvidia-ml.so.1. Test code only.
 * The file format is documented in tests/fake/machines/README.md. */
#ifndef FAKENVML_MACHINE_H
#define FAKENVML_MACHINE_H

#include <stdbool.h>
#include <stddef.h>

#define FM_MAX_GPUS 64
#define FM_MAX_MIGS 8
#define FM_MAX_FAILS 16
#define FM_MAX_SEQ 16

/* Numeric [gpu] keys. Memory is held in bytes (the _mib keys are multiplied out). */
enum fm_num {
	N_MEM_TOTAL, N_MEM_USED, N_MEM_RESERVED, N_UTIL_GPU, N_UTIL_MEM, N_TEMP, N_POWER,
	N_POWER_LIMIT, N_FAN, N_CLK_GFX, N_CLK_SM, N_CLK_MEM, N_COMPUTE_MODE, N_PERSISTENCE, N_ECC,
	N_CC, N_CORES, N_ARCH, N_MIG_MODE, N_MAX_MIG, N_PCI_DEVICE_ID, N_LOST_AFTER, N_MINOR,
	N_ECC_UNCORRECTED,
	N_CLK_VIDEO, N_MAX_CLK_GFX, N_MAX_CLK_SM, N_MAX_CLK_MEM, N_MAX_CLK_VIDEO,
	N_POWER_MGMT_LIMIT, N_POWER_DEFAULT_LIMIT, N_POWER_MIN_LIMIT, N_POWER_MAX_LIMIT,
	N_PSTATE, N_EVENTS, N_EVENTS_SUPPORTED,
	N_PCIE_GEN, N_PCIE_GEN_MAX, N_PCIE_GEN_GPU_MAX, N_PCIE_WIDTH, N_PCIE_WIDTH_MAX,
	N_PCIE_TX, N_PCIE_RX, N_UTIL_ENC, N_UTIL_DEC, N_TEMP_MEM,
	N_TEMP_SHUTDOWN, N_TEMP_SLOWDOWN, N_TEMP_MEM_MAX, N_TEMP_GPU_MAX,
	N_DISPLAY_MODE, N_DISPLAY_ACTIVE, N_ACCOUNTING, N_PCI_SUBSYS_ID,
	/* smi (issue 27): fake-health.c */
	N_ECC_LOCATIONS, N_ECC_CORR_VOL, N_ECC_CORR_AGG, N_ECC_UNC_AGG, N_ECC_PENDING, N_SRAM_THRESHOLD,
	N_RETIRED_SBE, N_RETIRED_DBE, N_RETIRED_PENDING, N_REMAP_CORR, N_REMAP_UNC, N_REMAP_PENDING,
	N_REMAP_FAILURE, N_REMAP_HIST_MAX, N_REMAP_HIST_HIGH, N_REMAP_HIST_PARTIAL, N_REMAP_HIST_LOW,
	N_REMAP_HIST_NONE, N_POWER_AVERAGE, N_POWER_INSTANT, N_TEMP_TLIMIT, N_RECOVERY_ACTION,
	N_EVENT_COUNTERS, N_EDPP, N_ACCT_BUFFER, N_UTIL_JPG, N_UTIL_OFA, N_ENC_SESSIONS, N_ENC_FPS,
	N_ENC_LATENCY, N_GSP, N_GSP_DEFAULT, N_C2C, N_ADDRESSING, N_PCI_BASE_CLASS, N_PCI_SUB_CLASS,
	N_MIG_PENDING, N_INFOROM_VALID,
	N_FABRIC_STATE, N_FABRIC_CLIQUE, N_PLATFORM_SLOT, N_PLATFORM_TRAY, N_PLATFORM_HOST, N_PLATFORM_PEER, N_PLATFORM_MODULE, N_PROTECTED_MEM,
	N_COUNT
};

/* A value that may change over time: one number, or a list that advances at every read
 * (period_ms 0) or every period_ms since nvmlInit, wrapping around. n == 0: absent. */
struct fm_spec {
	long long v[FM_MAX_SEQ];
	int n;
	unsigned period_ms;
};

struct fm_fail {
	char fn[80];        /* function name, without a _vN suffix to cover every version */
	int code;
};

struct fm_mig {
	int magic;
	int gpu;
	unsigned slot, gi, ci;
	char uuid[96], name[96];
	long long mem_total_mib, mem_used_mib;
};

/* Topology (issue 26; fake-topo.c): this GPU's row of `nvidia-smi topo -m` (links), its CPUs and
 * NUMA node. */
#define FM_MAX_CPUS 1024
struct fm_topo {
	bool has_links;
	signed char nvlinks[FM_MAX_GPUS];   /* NVLinks to each GPU */
	unsigned char level[FM_MAX_GPUS];   /* NVML_TOPOLOGY_* (0 INTERNAL .. 50 SYSTEM) */
	bool has_cpus;
	unsigned long cpus[FM_MAX_CPUS / (8 * sizeof(unsigned long))];
	int numa;                           /* the CPUs' NUMA node (memory affinity); -1: none */
	int gpu_numa;                       /* the GPU's own NUMA node (Grace); -1: none */
};

struct fm_gpu {
	int magic;
	struct fm_topo topo;                /* issue 26 */
	char name[96], uuid[96];
	char serial[64], vbios[64];   /* "": NOT_SUPPORTED */
	/* smi (issue 27): InfoROM versions, image then the OEM, ECC and power objects; "": NOT_SUPPORTED */
	char inforom[4][32];
	unsigned dom, bus, dev, fn;
	struct fm_spec num[N_COUNT];
	int handle_error;
	struct fm_fail fails[FM_MAX_FAILS];
	int nfails;
	struct fm_mig migs[FM_MAX_MIGS];
	int nmigs;
};

/* FP_GONE: in no process list, yet in the utilisation samples (a pid that exited). */
enum { FP_COMPUTE = 1, FP_GRAPHICS = 2, FP_MPS = 4, FP_GONE = 8 };
enum { U_SM, U_MEM, U_ENC, U_DEC, U_COUNT };

struct fm_proc {
	int gpu;
	unsigned pid;
	long long used_mib;  /* -1: not available */
	unsigned type;       /* FP_* */
	unsigned gi, ci;
	bool dynamic;        /* from FAKENVML_PROC_DIR: its memory counts in the GPU's */
	/* Utilisation in its samples; a list advances per sample unless it has a period. */
	struct fm_spec util[U_COUNT];
};

struct fm_machine {
	char driver[80], nvml[80];
	int cuda;            /* 0: not available */
	int init_error;
	int race_grow;
	int unprivileged;    /* the caller is not root: MIG parents refuse their process lists */
	unsigned sample_period_ms;  /* process utilisation sampling; 0: one period per read-out */
	unsigned sample_buffer;     /* samples the driver keeps per GPU */
	bool util_count_quirk;      /* the sizing call answers at least 100 */
	struct fm_fail fails[FM_MAX_FAILS];
	int nfails;
	struct fm_gpu gpus[FM_MAX_GPUS];
	int ngpus;
	struct fm_proc *procs;
	size_t nprocs, procs_cap;
	bool nvswitch;       /* issue 26: NVLinks go through NVSwitches (fake-topo.c) */
};

/* fake-topo.c (issue 26): a [gpu] topology key (links, cpu_affinity, numa_node, gpu_numa_node)
 * into t; 1: not one of them; 0: read; -1: bad (why in why). */
int fm_topo_key(struct fm_topo *t, const char *k, const char *v, char *why, size_t whylen);

/* 0 on success; otherwise err holds "file:line: reason". */
int fm_load(struct fm_machine *m, const char *path, char *err, size_t errlen);
/* Appends the [process] sections of one file (a workload's) to m. */
int fm_load_procs(struct fm_machine *m, const char *path, char *err, size_t errlen);
void fm_free(struct fm_machine *m);
int fm_code(const char *name);        /* NVML return code by name, -1 if unknown */
const char *fm_code_name(int code);
/* The value of s at read number `reads` and `ms` milliseconds after nvmlInit. */
long long fm_spec_at(const struct fm_spec *s, unsigned long reads, unsigned long long ms);

#endif
