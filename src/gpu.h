/* gpu.h: the vendor-neutral view of the machine that every command reads, and the backend vtable
 * (nvtop-style) that fills it. Each measured field has a validity bit: a value the driver cannot
 * give stays unavailable and is shown as N/A or null, never as 0. */
#ifndef GPUCTL_GPU_H
#define GPUCTL_GPU_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

enum gpu_field {
	GF_MEM_TOTAL, GF_MEM_USED, GF_MEM_FREE, GF_MEM_RESERVED,
	GF_UTIL_GPU, GF_UTIL_MEM, GF_TEMP, GF_POWER, GF_POWER_LIMIT, GF_FAN,
	GF_CLK_GFX, GF_CLK_SM, GF_CLK_MEM,
	GF_COMPUTE_MODE, GF_MIG_MODE, GF_PERSISTENCE, GF_ECC,
	GF_CC, GF_PCI_DEVICE_ID, GF_CORES, GF_PROCESSES, GF_ECC_UNCORRECTED,
};
#define GPU_HAS(g, f) (((g)->valid >> (f)) & 1U)
#define GPU_SET(g, f, field, v) ((g)->field = (v), (g)->valid |= (1ULL << (f)))

/* The most GPUs gpuctl handles on one machine: choices and masks are 64-bit sets. A backend
 * that finds more uses the first GPU_MAX. */
enum { GPU_MAX = 64 };

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
};

/* REFRESH_NO_PROC_INFO: process lists without their /proc owner and command line (the lease
 * queue only counts processes, and runs under the global lock). */
enum { REFRESH_PROCS = 1, REFRESH_EXTRA = 2, REFRESH_NO_PROC_INFO = 4 };

struct gpu_backend {
	/* Load the library, initialise, enumerate devices and their static facts. */
	bool (*open)(struct gpu_set *set, struct gpu_error *err);
	/* Fill dynamic fields of every selected GPU. */
	void (*refresh)(struct gpu_set *set, unsigned what);
	void (*close)(struct gpu_set *set);
};

extern const struct gpu_backend nvml_backend;

/* gpu.c */
struct gpu_set *gpu_set_open(struct gpu_error *err);
void gpu_set_refresh(struct gpu_set *set, unsigned what);
void gpu_set_free(struct gpu_set *set);
void gpu_mark_lost(struct gpu *g, const char *why);
/* Select GPUs by a -g list (indices, UUIDs or unique prefixes, PCI bus ids, by commas): the one
 * parser of GPU lists (options, profiles, reserved_gpus). */
bool gpu_set_select(struct gpu_set *set, const char *list, struct gpu_error *err);
struct gpu *gpu_find(struct gpu_set *set, const char *id, struct gpu_error *err);
bool parse_pci_bus_id(const char *s, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn);
const char *compute_mode_name(unsigned mode);
const char *proc_type_name(unsigned type);

#endif
