/* cuda/: rank 2, what a CUDA process will see: the pure model of CUDA_VISIBLE_DEVICES and
 * CUDA_DEVICE_ORDER (this header), that model applied to this machine and an environment
 * (visenv.c: the caller's, a running process's) and the probe of map --verify (probe.c). It reads
 * no options: cmd/visopts.c turns a command's options into a request for it.
 *
 * visibility.h: which GPUs a CUDA process sees, and in which order, given CUDA_VISIBLE_DEVICES and
 * CUDA_DEVICE_ORDER: the driver's rules (shared/reference/cuda-visibility.md, PyTorch's vectors),
 * applied to a device list given as input. No NVML calls of its own, so tests and the fuzzer
 * feed it any machine. */
#ifndef GPUCTL_VISIBILITY_H
#define GPUCTL_VISIBILITY_H

#include <stdbool.h>
#include <stddef.h>

struct vis_gpu {
	unsigned nvml_index;
	const char *uuid;            /* "GPU-..." */
	const char *name;
	const char *pci_bus_id;      /* as printed: 00000000:3B:00.0 */
	unsigned dom, bus, dev, fn;
	int cc;                      /* major*10+minor, -1 unknown */
	int cores;                   /* -1 unknown */
	bool mig_enabled;
};

struct vis_mig {
	size_t gpu;                  /* position of the parent in vis_machine.gpus */
	unsigned slot, gi, ci;
	const char *uuid;            /* "MIG-..." */
};

struct vis_machine {
	const struct vis_gpu *gpus;  /* in NVML index order */
	size_t ngpus;
	const struct vis_mig *migs;
	size_t nmigs;
	int driver_major;            /* 0 when unknown: treated as current */
};

enum vis_order { ORDER_FASTEST_FIRST, ORDER_PCI_BUS_ID };
enum vis_severity { SEV_INFO, SEV_WARNING, SEV_ERROR };

struct vis_dev {
	size_t gpu;                  /* position in vis_machine.gpus */
	int mig;                     /* position in vis_machine.migs, or -1 for the whole GPU */
};

struct vis_warning {
	const char *code;            /* stable: see gpuctl-map(1), JSON AND WARNING CODES */
	enum vis_severity severity;
	char *message;
};

struct vis_result {
	bool unset;                  /* CUDA_VISIBLE_DEVICES not set: every GPU visible */
	enum vis_order order;
	bool order_exact;            /* false: FASTEST_FIRST estimated on a mixed machine */
	bool fastest_exact;          /* the FASTEST_FIRST enumeration is known, not estimated */
	size_t *fastest, *pci;       /* CUDA enumeration under each order: gpu positions */
	struct vis_dev *devs;        /* visible devices in CUDA logical order */
	size_t ndevs;
	struct vis_warning *warns;
	size_t nwarns, warns_cap;
};

/* cvd NULL: unset. order NULL or "": unset (FASTEST_FIRST). Never fails. */
struct vis_result *vis_resolve(const struct vis_machine *m, const char *cvd, const char *order);
void vis_result_free(struct vis_result *r);
/* The CUDA enumeration order in effect (fastest or pci array). */
const size_t *vis_enum_order(const struct vis_result *r);
/* Position of the GPU in the given enumeration, or -1. */
int vis_rank(const struct vis_machine *m, const size_t *order, size_t gpu);
/* Logical CUDA index of a device, or -1 when hidden. */
int vis_logical(const struct vis_result *r, size_t gpu, int mig);
const char *vis_order_name(enum vis_order o);
const char *vis_severity_name(enum vis_severity s);

#endif
