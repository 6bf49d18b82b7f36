/* machine/: rank 1, the machine as one refresh sees it: the GPU model (this header, gpu.c), the
 * facade commands open and refresh (machine.c) over the backends, the processes (proc.c, pid.c),
 * signalling one safely (kill.c) and the Slurm facts of this node (slurm.c). nvml/ is the only
 * vendor backend, as htop gives each platform a folder: lib.c loads NVML and resolves its
 * versioned symbols, fields.c and backend.c read it into the model. Order inside: gpu < slurm <
 * proc < machine, pid < proc, pid < kill, gpu < lib < fields < backend < machine; no circle.
 *
 * gpu.h: the vendor-neutral view of the machine that every command reads, and the backend vtable
 * (nvtop-style) that fills it. Each measured field has a validity bit: a value the driver cannot
 * give stays unavailable and is shown as N/A or null, never as 0. */
#ifndef GPUCTL_GPU_H
#define GPUCTL_GPU_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/util.h"

/* Fields with a validity bit. The first group is read at every refresh that asks for it; the
 * static group (from GF_SERIAL on) is read once, the first time a refresh asks for it. */
enum gpu_field {
	GF_MEM_TOTAL, GF_MEM_USED, GF_MEM_FREE, GF_MEM_RESERVED,
	GF_UTIL_GPU, GF_UTIL_MEM, GF_TEMP, GF_POWER, GF_POWER_LIMIT, GF_FAN,
	GF_CLK_GFX, GF_CLK_SM, GF_CLK_MEM,
	GF_COMPUTE_MODE, GF_MIG_MODE, GF_PERSISTENCE, GF_ECC,
	GF_CC, GF_PCI_DEVICE_ID, GF_CORES, GF_PROCESSES, GF_ECC_UNCORRECTED,
	GF_CLK_VIDEO, GF_PSTATE, GF_EVENTS_ACTIVE, GF_UTIL_ENC, GF_UTIL_DEC, GF_TEMP_MEM,
	GF_POWER_MGMT_LIMIT, GF_PCIE_GEN, GF_PCIE_WIDTH, GF_PCIE_TX, GF_PCIE_RX,
	GF_DISPLAY_ACTIVE, GF_ACCOUNTING, GF_PROC_UTIL,
	/* static */
	GF_SERIAL, GF_VBIOS, GF_PCI_SUBSYS_ID, GF_EVENTS_SUPPORTED, GF_POWER_MIN_LIMIT,
	GF_POWER_MAX_LIMIT, GF_POWER_DEFAULT_LIMIT, GF_CLK_MAX_GFX, GF_CLK_MAX_SM, GF_CLK_MAX_MEM,
	GF_CLK_MAX_VIDEO, GF_PCIE_GEN_MAX, GF_PCIE_GEN_GPU_MAX, GF_PCIE_WIDTH_MAX,
	GF_TEMP_SHUTDOWN, GF_TEMP_SLOWDOWN, GF_TEMP_MEM_MAX, GF_TEMP_GPU_MAX, GF_DISPLAY_MODE,
	GF_N
};
_Static_assert(GF_N <= 64, "validity bits fit one uint64_t");

/* Clock event (throttle) reasons: the bits of events_active and events_supported. */
enum {
	GPU_EVENT_GPU_IDLE = 0x1, GPU_EVENT_APPLICATIONS_CLOCKS = 0x2, GPU_EVENT_SW_POWER_CAP = 0x4,
	GPU_EVENT_HW_SLOWDOWN = 0x8, GPU_EVENT_SYNC_BOOST = 0x10, GPU_EVENT_SW_THERMAL = 0x20,
	GPU_EVENT_HW_THERMAL = 0x40, GPU_EVENT_HW_POWER_BRAKE = 0x80, GPU_EVENT_DISPLAY_CLOCK = 0x100,
};

/* GPU_MAX, the most GPUs gpuctl handles on one machine, is util.h's. */

enum { PROC_COMPUTE = 1, PROC_GRAPHICS = 2, PROC_MPS = 4 };
#define NO_INSTANCE 0xFFFFFFFFU

struct gpu_proc {
	unsigned pid;
	unsigned type;            /* PROC_* bits: one entry per pid and GPU */
	bool mem_valid;
	uint64_t used_mem;        /* bytes */
	unsigned gi, ci;          /* MIG instance ids, NO_INSTANCE without MIG */
	/* from /proc; NULL when the process is gone or in another PID namespace */
	const char *user;
	const char *cmdline;
	const char *name;         /* argv[0], nvidia-smi's process_name */
	uid_t uid;
	bool uid_valid;
	unsigned slurm_job;       /* its Slurm job (REFRESH_SLURM on a Slurm node), 0: none */
	/* NVML's newest utilisation sample of the process from the last second; none (util_valid
	 * false) for a process that was idle all that time, or where the driver gives none (MIG). */
	bool util_valid;
	unsigned sm_util, mem_util, enc_util, dec_util;    /* percent */
	uint64_t util_time_us;    /* when it was taken, microseconds since the epoch */
	/* With REFRESH_PROC_STATS, from /proc/PID/stat (read in the same visit as the owner):
	 * stat_valid false when not asked for, gone, or in another PID namespace. */
	bool stat_valid;
	int ppid;
	unsigned long long start; /* clock ticks after boot: with the pid, names the process */
	uint64_t rss;             /* bytes resident in host memory */
	double cpu_time;          /* seconds of CPU used (user + system), all threads */
	double elapsed;           /* seconds since it started */
	bool cpu_valid;           /* cpu_pct known: the previous refresh read it too */
	double cpu_pct;           /* CPU used since the previous refresh, percent of one CPU */
};

struct mig_dev {
	unsigned slot;
	char uuid[96];
	char name[96];
	unsigned gi, ci;          /* NO_INSTANCE when unknown */
	bool mem_valid;
	uint64_t mem_total, mem_used;
};

struct gpu {
	unsigned index;           /* the driver's (nvidia-smi's) index */
	bool selected;            /* refreshed and shown */
	bool lost;                /* fell off the bus or stopped answering */
	bool inaccessible;        /* no permission to open it */
	char *error;              /* why it is lost or inaccessible */
	bool minor_valid;         /* minor: N of its device node /dev/nvidiaN (the device guard) */
	unsigned minor;
	bool guarded;             /* inaccessible because gpuctl's device guard gives it to its
				   * lease's user only (status marks it so; no failure) */
	unsigned errors;          /* failed queries since open (not counting NOT_SUPPORTED,
				   * FUNCTION_NOT_FOUND or GPU_IS_LOST) */

	char name[96];
	char uuid[96];
	char pci_bus_id[32];      /* nvidia-smi form: 00000000:3B:00.0 */
	unsigned pci_domain, pci_bus, pci_dev, pci_fn;

	uint64_t valid;           /* GF_* bits */
	uint64_t mem_total, mem_used, mem_free, mem_reserved;   /* bytes */
	unsigned util_gpu, util_mem, temp, power_mw, power_limit_mw, fan;
	unsigned clk_gfx, clk_sm, clk_mem;
	unsigned compute_mode, mig_mode, persistence, ecc;
	uint64_t ecc_uncorrected;  /* volatile: since the driver loaded */
	int cc_major, cc_minor;
	unsigned pci_device_id, cores;      /* cores: CUDA cores, a proxy for speed */
	/* Read when asked for (REFRESH_* groups): */
	unsigned clk_video;                 /* MHz */
	unsigned pstate;                    /* 0 (P0, fastest) .. 15 */
	uint64_t events_active;             /* GPU_EVENT_* bits: why clocks are held down now */
	unsigned util_enc, util_dec;        /* percent */
	unsigned temp_mem;                  /* HBM temperature, C */
	unsigned power_mgmt_limit_mw;       /* the limit software asked for (nvidia-smi power.limit) */
	unsigned pcie_gen, pcie_width;      /* link now (it slows down when idle) */
	unsigned pcie_tx_kbs, pcie_rx_kbs;  /* throughput, KB/s */
	unsigned display_active, accounting;
	/* Static, read once when first asked for (REFRESH_STATIC): */
	char serial[32], vbios[32];
	unsigned pci_subsys_id;
	uint64_t events_supported;
	unsigned power_min_mw, power_max_mw, power_default_mw;
	unsigned clk_max_gfx, clk_max_sm, clk_max_mem, clk_max_video;
	unsigned pcie_gen_max, pcie_gen_gpu_max, pcie_width_max;
	unsigned temp_shutdown, temp_slowdown, temp_mem_max, temp_gpu_max;
	unsigned display_mode;
	/* Why a field is unavailable when the driver said more than "not supported": its own words
	 * ("Insufficient Permissions"), static strings. NULL: not supported, or not asked for. */
	const char *why[GF_N];

	size_t nprocs, procs_cap;
	struct gpu_proc *procs;
	size_t nmigs;
	struct mig_dev *migs;

	void *priv;               /* backend's per-device state */
};

struct gpu_set {
	const struct gpu_backend *backend;
	char driver_version[96];
	bool has_driver_version;
	int cuda_version;         /* 12040 form, 0 when unavailable */
	size_t ngpus;
	struct gpu *gpus;
	struct proc_cache *pc;
	bool slurm;               /* the last refresh read Slurm jobs: this is a Slurm node */
	void *priv;               /* the backend's, for the whole set (the snapshot's source) */
};

/* What a refresh reads besides the base (memory, utilisation, temperature, power and enforced
 * limit, compute mode, MIG devices): each group costs NVML calls, so a command asks only for what
 * it shows. REFRESH_NO_PROC_INFO: process lists without their /proc owner and command line (the
 * lease queue only counts processes, and runs under the global lock). */
enum {
	REFRESH_PROCS = 1 << 0,
	REFRESH_NO_PROC_INFO = 1 << 2,
	REFRESH_FAN = 1 << 3,
	REFRESH_CLOCKS = 1 << 4,          /* current clocks: graphics, SM, memory, video */
	REFRESH_MODES = 1 << 5,           /* persistence, ECC mode, display active, accounting */
	REFRESH_ECC_ERRORS = 1 << 6,
	REFRESH_PERF = 1 << 7,            /* performance state, active clock event reasons */
	REFRESH_PCIE = 1 << 8,            /* link generation and width now */
	REFRESH_PCIE_THROUGHPUT = 1 << 9, /* rx/tx: NVML samples 20 ms per call, so ask sparingly */
	REFRESH_ENGINES = 1 << 10,        /* encoder, decoder */
	REFRESH_PROC_UTIL = 1 << 11,      /* per-process samples (with REFRESH_PROCS) */
	REFRESH_MEM_TEMP = 1 << 12,
	REFRESH_POWER_MGMT = 1 << 13,     /* the requested power limit */
	REFRESH_STATIC = 1 << 14,         /* serial, VBIOS, maxima, limits, thresholds: read once */
	REFRESH_SLURM = 1 << 15,          /* each process's Slurm job, on a Slurm node (slurm.h) */
	REFRESH_PROC_STATS = 1 << 16,     /* host CPU, RSS, start and parent of each process (top) */
	/* One refresh that shows only the compute processes' names (--query-compute-apps without
	 * -l): no owner, so no stat of /proc/PID (which also tells a later refresh whether it is
	 * the process read before: a loop keeps it), nothing read for a graphics-only one, and
	 * of the base's NVML calls only memory (it tells a lost GPU), not utilisation, temperature,
	 * power or compute mode. */
	REFRESH_COMPUTE_NAMES = 1 << 17,
	REFRESH_EXTRA = REFRESH_FAN | REFRESH_CLOCKS | REFRESH_MODES | REFRESH_ECC_ERRORS,
};

struct gpu_backend {
	/* Load the library, initialise, enumerate devices and their static facts. */
	bool (*open)(struct gpu_set *set, struct gpu_error *err);
	/* Fill dynamic fields of every selected GPU. */
	void (*refresh)(struct gpu_set *set, unsigned what);
	void (*close)(struct gpu_set *set);
	/* The refresh fills the processes' owners and command lines itself (the daemon's
	 * snapshot, lease/snapshot.c): gpu_set_refresh reads no /proc for them. */
	bool fills_procs;
};

extern const struct gpu_backend nvml_backend;

/* Whether field f of g holds a value (its validity bit): the one way every output asks, so an
 * unavailable field is shown as N/A or null, never as 0. */
static inline bool gpu_has(const struct gpu *g, enum gpu_field f)
{
	return (g->valid >> f) & 1U;
}

/* machine.c: open the machine through the first backend that opens, refresh it (the backend,
 * then the processes' owners and jobs), free it. */
struct gpu_set *gpu_set_open(struct gpu_error *err);
void gpu_set_refresh(struct gpu_set *set, unsigned what);
void gpu_set_free(struct gpu_set *set);

/* gpu.c: the model's helpers (they stand on base/ only, so backends and slurm.c may use them). */
void gpu_mark_lost(struct gpu *g, const char *why);
/* Select GPUs by a -g list (indices, UUIDs or unique prefixes, PCI bus ids, by commas): the one
 * parser of GPU lists (options, profiles, reserved_gpus). */
bool gpu_set_select(struct gpu_set *set, const char *list, struct gpu_error *err);
struct gpu *gpu_find(struct gpu_set *set, const char *id, struct gpu_error *err);
bool parse_pci_bus_id(const char *s, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn);
const char *compute_mode_name(unsigned mode);
const char *proc_type_name(unsigned type);

#endif
