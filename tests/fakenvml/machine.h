/* machine.h: the simulated machine behind the test stand-in libnvidia-ml.so.1. Test code only.
 * The file format is documented in tests/machines/README.md. */
#ifndef FAKENVML_MACHINE_H
#define FAKENVML_MACHINE_H

#include <stdbool.h>
#include <stddef.h>

#define FM_MAX_GPUS 64
#define FM_MAX_MIGS 8
#define FM_MAX_FAILS 16

enum fm_num {
	N_MEM_TOTAL, N_MEM_USED, N_MEM_RESERVED, N_UTIL_GPU, N_UTIL_MEM, N_TEMP, N_POWER,
	N_POWER_LIMIT, N_FAN, N_CLK_GFX, N_CLK_SM, N_CLK_MEM, N_COMPUTE_MODE, N_PERSISTENCE, N_ECC,
	N_CC, N_CORES, N_ARCH, N_MIG_MODE, N_MAX_MIG, N_PCI_DEVICE_ID, N_LOST_AFTER, N_MINOR,
	N_ECC_UNCORRECTED,
	N_COUNT
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

struct fm_gpu {
	int magic;
	char name[96], uuid[96];
	unsigned dom, bus, dev, fn;
	long long num[N_COUNT];
	bool has[N_COUNT];
	int handle_error;
	struct fm_fail fails[FM_MAX_FAILS];
	int nfails;
	struct fm_mig migs[FM_MAX_MIGS];
	int nmigs;
};

enum { FP_COMPUTE = 1, FP_GRAPHICS = 2, FP_MPS = 4 };

struct fm_proc {
	int gpu;
	unsigned pid;
	long long used_mib;  /* -1: not available */
	unsigned type;       /* FP_* */
	unsigned gi, ci;
	bool dynamic;        /* from FAKENVML_PROC_DIR: its memory counts in the GPU's */
};

struct fm_machine {
	char driver[80], nvml[80];
	int cuda;            /* 0: not available */
	int init_error;
	int race_grow;
	int unprivileged;    /* the caller is not root: MIG parents refuse their process lists */
	struct fm_fail fails[FM_MAX_FAILS];
	int nfails;
	struct fm_gpu gpus[FM_MAX_GPUS];
	int ngpus;
	struct fm_proc *procs;
	size_t nprocs, procs_cap;
};

/* 0 on success; otherwise err holds "file:line: reason". */
int fm_load(struct fm_machine *m, const char *path, char *err, size_t errlen);
/* Appends the [process] sections of one file (a workload's) to m. */
int fm_load_procs(struct fm_machine *m, const char *path, char *err, size_t errlen);
void fm_free(struct fm_machine *m);
int fm_code(const char *name);        /* NVML return code by name, -1 if unknown */
const char *fm_code_name(int code);

#endif
