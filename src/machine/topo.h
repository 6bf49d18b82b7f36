/* topo.h: the machine's topology, vendor-neutral (issue 26): for each pair of GPUs the NVLinks
 * between them and the closest PCIe ancestor they share (`nvidia-smi topo -m`'s matrix), for each
 * GPU the CPUs local to it and their NUMA node. Read once (it does not change while the driver is
 * loaded) by the backend's topo() (nvml/topo.c), shown by `gpuctl topo` (view/topo.c), weighed by
 * the daemon's placement (daemon/place.c) and used for --bind-cpus. Every field has its validity:
 * what the driver does not say stays unknown (N/A, null), never a guess. The helpers here (topo.c)
 * stand on base/ only. */
#ifndef GPUCTL_TOPO_H
#define GPUCTL_TOPO_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

struct gpu_set;

/* How far apart two GPUs are over PCIe, nearest first: nvidia-smi's words (its legend). */
enum topo_level {
	TOPO_NA,        /* the driver did not say */
	TOPO_BOARD,     /* one board (NVML_TOPOLOGY_INTERNAL: a dual-GPU card) */
	TOPO_PIX,       /* at most a single PCIe bridge */
	TOPO_PXB,       /* multiple PCIe bridges, no host bridge */
	TOPO_PHB,       /* a PCIe host bridge (the CPU) */
	TOPO_NODE,      /* the interconnect between host bridges within a NUMA node */
	TOPO_SYS,       /* the SMP interconnect between NUMA nodes (QPI/UPI) */
	TOPO_LEVELS
};

#define TOPO_MAX_CPUS 4096
#define TOPO_CPU_BITS (8 * sizeof(unsigned long))
#define TOPO_CPU_WORDS (TOPO_MAX_CPUS / TOPO_CPU_BITS)

/* A set of CPUs as NVML and sched_setaffinity hold them: bit c of word c / TOPO_CPU_BITS. */
struct cpuset {
	unsigned long w[TOPO_CPU_WORDS];
};

struct topo_gpu {
	bool cpus_valid;
	struct cpuset cpus;       /* the CPUs local to it (nvidia-smi's CPU Affinity) */
	int numa;                 /* their NUMA node (NUMA Affinity); -1: N/A */
	int gpu_numa;             /* the GPU's own memory as a node (GPU NUMA ID, Grace); -1: N/A */
};

struct topo {
	size_t n;                 /* the set's GPUs, by position */
	unsigned char *level;     /* n * n: enum topo_level of (i, j); TOPO_NA on the diagonal */
	int *nvlinks;             /* n * n: NVLinks between i and j; -1: unknown */
	struct topo_gpu *gpu;     /* n */
};

struct topo *topo_new(size_t n);
void topo_free(struct topo *t);
/* The set's topology read from its backend now (the caller frees it: topo_free); NULL when the
 * set has no backend that reads topology (a machine the daemon described). */
struct topo *gpu_set_topo(struct gpu_set *set);

static inline enum topo_level topo_level_of(const struct topo *t, size_t i, size_t j)
{
	return (enum topo_level)t->level[i * t->n + j];
}
static inline int topo_nvlinks(const struct topo *t, size_t i, size_t j)
{
	return t->nvlinks[i * t->n + j];
}
/* Whether t says anything at all: a PCIe level, an NVLink, a CPU set or a node. */
bool topo_known(const struct topo *t);
/* "PIX", ... "SYS"; "N/A" for TOPO_NA. */
const char *topo_level_name(enum topo_level l);
/* The legend's meaning of the level ("Connection traversing ..."). */
const char *topo_level_text(enum topo_level l);

/* CPU sets: parsed from and written as lists ("0-23,48-71", the kernel's cpulist form). */
bool cpuset_parse(const char *s, struct cpuset *out);
void cpuset_format(const struct cpuset *s, struct strbuf *sb);
bool cpuset_empty(const struct cpuset *s);
bool cpuset_equal(const struct cpuset *a, const struct cpuset *b);
void cpuset_or(struct cpuset *a, const struct cpuset *b);
void cpuset_and(struct cpuset *a, const struct cpuset *b);
size_t cpuset_count(const struct cpuset *s);

#endif
