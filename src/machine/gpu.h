/* machine/: rank 1, the machine as one refresh sees it: the GPU model (this header, gpu.c), the
 * facade commands open and refresh (machine.c) over the backends, the processes (proc.c, pid.c),
 * signalling one safely (kill.c) and the Slurm facts of this node (slurm.c). nvml/ is the only
 * vendor backend, as htop gives each platform a folder: lib.c loads NVML and resolves its
 * versioned symbols, fields.c and backend.c read it into the model. Order inside: gpu < container <
 * slurm < proc < machine, pid < proc, pid < kill, gpu < lib < fields < backend < machine, gpu <
 * snap (the model as the daemon's shared snapshot carries it: snap.h); no circle.
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

struct ctr_info;
struct ctr_names;

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
	/* containers (issue 28): its container (REFRESH_CONTAINERS), NULL when none or not asked
	 * for; the id always, the names where its runtime told them (runtime.h) */
	const struct ctr_info *ctr;
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
	/* The daemon's snapshot (issue 22): the view these were decoded from (0: read here), and,
	 * nonzero, the view whose processes these are, in order, every field as it was (a delta
	 * kept them all: one "k" line, no process line): a loop's table copies their rows. */
	uint64_t view, procs_from;
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
	/* containers (issue 28) */
	struct ctr_names *cn;     /* the names' cache (runtime.h), made by the first refresh asking */
	size_t procs_listed, procs_unmapped; /* the last refresh's: NVML's, and those not in /proc */
	bool ctr_ids;             /* issue 22: the procs' ctr were filled unnamed by the backend
				   * (a snapshot's REFRESH_CONTAINER_IDS): name them, read nothing */
	unsigned watch_parts;     /* gpu_set_watch_exits's (0: not asked), kept for a set that
				   * replaces this one (a snapshot's fallback to reading the GPUs) */
	bool at_exit;             /* freed by a command about to exit: the backend frees gpuctl's
				   * memory but leaves the driver's library be (issue 22: the
				   * process's exit releases all that nvmlShutdown would) */
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
	 * the process read before: a loop keeps it), no graphics list (nvml/backend.c), and
	 * of the base's NVML calls only memory (it tells a lost GPU), not utilisation, temperature,
	 * power or compute mode. */
	REFRESH_COMPUTE_NAMES = 1 << 17,
	REFRESH_CONTAINERS = 1 << 18,     /* containers (issue 28): each process's, named (runtime.h) */
	/* the snapshot's containers (issue 22): each process's container as its cgroup says (read
	 * once per process), no runtime asked: the daemon's snapshot carries these, and each client
	 * names them with its own rights, reading no cgroup file per refresh itself. */
	REFRESH_CONTAINER_IDS = 1 << 19,
	REFRESH_EXTRA = REFRESH_FAN | REFRESH_CLOCKS | REFRESH_MODES | REFRESH_ECC_ERRORS,
};

/* ---- smi (issue 27): values only nvidia-smi's query language prints, read when a query names
 * them and never by a refresh, so that status and the other views pay nothing for them. A source
 * (GX_*) and its argument say what to read; the backend says how (machine/nvml/xread.c). ---- */
enum gpu_xstate {
	GX_OK,            /* the value is in u, d or s */
	GX_NA,            /* the driver does not support it here (nvidia-smi: [N/A]) */
	GX_NO_FUNCTION,   /* the driver's library lacks the function ([Function Not Found]) */
	GX_ERROR,         /* another failure: why holds the driver's words */
};
struct gpu_xval {
	enum gpu_xstate st;
	const char *why;           /* static text, with GX_ERROR */
	unsigned long long u;
	double d;
	bool is_double;            /* the value is d (a field value of type double) */
	char s[96];
};
enum gpu_xsrc {
	GX_NONE,            /* nothing NVML can tell: always GX_NA */
	GX_ECC_COUNTER,     /* arg: type << 8 | counter << 4 | location */
	GX_ECC_TOTAL,       /* arg: type << 4 | counter */
	GX_SRAM,            /* arg: 0..10 the counters of the SRAM status, 11 its threshold flag */
	GX_RETIRED,         /* arg: cause; the number of retired pages */
	GX_RETIRED_PENDING,
	GX_REMAPPED,        /* arg: 0 correctable, 1 uncorrectable, 2 pending, 3 failure */
	GX_REMAP_HISTOGRAM, /* arg: 0 max .. 4 none */
	GX_FIELD,           /* arg: scope << 16 | field id of nvmlDeviceGetFieldValues */
	GX_APP_CLOCK, GX_DEFAULT_APP_CLOCK,   /* arg: clock type */
	GX_POWER_MGMT_MODE,
	GX_PCI_EXT,         /* arg: 0 base class, 1 sub class */
	GX_ECC_MODE, GX_MIG_MODE, GX_GOM, GX_DRIVER_MODEL, GX_GSP,   /* arg: 0 current, 1 pending/default */
	GX_ENCODER_STATS,   /* arg: 0 sessions, 1 average fps, 2 average latency */
	GX_INFOROM_IMAGE, GX_INFOROM,   /* arg: object */
	GX_INFOROM_VALID,
	GX_ACCOUNTING_BUFFER, GX_JPG_UTIL, GX_OFA_UTIL, GX_ADDRESSING_MODE, GX_C2C_MODE,
	GX_DRAM_ENCRYPTION, /* arg: 0 current, 1 pending */
	GX_VGPU_DRIVER_CAP, GX_VGPU_DEVICE_CAP,   /* arg: capability */
	GX_PCI_MODEL,       /* arg: 0 domain, 1 bus, 2 device: from the model, no call */
	GX_FABRIC,          /* arg: 0 state, 1 status (s), 2 clique id, 3 cluster UUID (s) */
	GX_PLATFORM,        /* arg: 0 chassis serial (s), 1 slot, 2 tray, 3 host id, 4 peer type,
			     * 5 module id, 6 the fabric GUID (its IB GUID's first 8 bytes) */
	GX_PROTECTED_MEM,   /* arg: 0 total, 1 used, 2 free, bytes */
	GX_HOSTNAME,        /* the host name set on the GPU (s; Blackwell on) */
};
/* The value of src for g, by the backend that opened set. */
void gpu_read_x(const struct gpu_set *set, const struct gpu *g, unsigned src, unsigned arg,
		struct gpu_xval *out);
/* ---- end smi ---- */
struct topo;

struct gpu_backend {
	/* Load the library, initialise, enumerate devices and their static facts. */
	bool (*open)(struct gpu_set *set, struct gpu_error *err);
	/* Fill dynamic fields of every selected GPU. */
	void (*refresh)(struct gpu_set *set, unsigned what);
	void (*close)(struct gpu_set *set);
	/* The refresh fills the processes' owners and command lines itself (the daemon's
	 * snapshot, lease/snapshot.c): gpu_set_refresh reads no /proc for them. */
	bool fills_procs;
	/* smi (issue 27): one value a query names, read now (see struct gpu_xval); the static
	 * facts of one GPU (its serial, for -i by serial), read once. NULL in a backend that cannot
	 * (the daemon's snapshot): then a query that needs them reads the machine itself. */
	void (*read_x)(const struct gpu_set *set, const struct gpu *g, unsigned src, unsigned arg,
		       struct gpu_xval *out);
	void (*read_static)(struct gpu_set *set, struct gpu *g);
	/* The topology (machine/topo.h, issue 26): a new struct topo, NULL when none can be read. */
	struct topo *(*topo)(struct gpu_set *set);
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
/* issue 22: sets opened from now on skip what only CUDA's order, the device guard and the
 * snapshot use (compute capability, core count, device minor: GF_CC and GF_CORES left unset,
 * minor_valid false), three driver calls a GPU a command whose output needs none of them
 * (status) does not make. */
void gpu_open_lean(bool on);
void gpu_set_refresh(struct gpu_set *set, unsigned what);
/* What gpu_set_refresh leaves to the caller after a backend that fills the processes (the
 * daemon's snapshot): each listed process of a selected GPU counted (procs_listed, and those
 * without /proc facts: procs_unmapped), and, where what asks for containers and runtime (the
 * caller sees a container runtime), their containers named by the caller; else none. The
 * daemon's frames (view/frame.c) do the same for their asker, with no runtime. */
void gpu_set_snapshot_procs(struct gpu_set *set, unsigned what, bool runtime);
void gpu_set_free(struct gpu_set *set);
/* issue 22 (loops): a set refreshed again and again (status -l, top, the exporter, the daemon)
 * watches its processes' exits instead of a stat of each at each refresh (proc.h:
 * proc_cache_watch_exits), with at most 1/parts of the descriptors the limit leaves (2: half; a
 * server whose connections need descriptors gives less). */
void gpu_set_watch_exits(struct gpu_set *set, unsigned parts);

/* gpu.c: the model's helpers (they stand on base/ only, so backends and slurm.c may use them). */
void gpu_mark_lost(struct gpu *g, const char *why);
/* Select GPUs by a -g list (indices, UUIDs or unique prefixes, PCI bus ids, by commas): the one
 * parser of GPU lists (options, profiles, reserved_gpus). */
bool gpu_set_select(struct gpu_set *set, const char *list, struct gpu_error *err);
struct gpu *gpu_find(struct gpu_set *set, const char *id, struct gpu_error *err);
/* Whether a -g list may name a GPU by its board serial (a static fact read on demand). */
bool gpu_list_may_name_serial(const char *list);
bool parse_pci_bus_id(const char *s, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn);
const char *compute_mode_name(unsigned mode);
const char *proc_type_name(unsigned type);

#endif
