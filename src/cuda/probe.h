/* probe.h: ask the real CUDA driver which devices a process with a given environment sees. */
#ifndef GPUCTL_CUDAPROBE_H
#define GPUCTL_CUDAPROBE_H

#include "base/util.h"
#include "cuda/visenv.h"

struct cuda_dev {
	char uuid_hex[33];        /* 32 lowercase hex digits */
	char pci[32];
};

/* The child's answer on stdout, one line each: "count N", then "dev I UUIDHEX PCI_BUS_ID" for
 * I = 0..N-1 (UUIDHEX: the 16 bytes of cuDeviceGetUuid in hex). Failures: a message on stderr
 * and exit EXIT_NO_CUDA. */

/* Runs `gpuctl cuda-probe` with CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER as in env (NULL: unset).
 * Returns the number of devices, or -1 with msg set (libcuda missing or failing). */
int cuda_probe(const struct proc_env *env, struct cuda_dev **devs, char *msg, size_t msglen);

/* The 32 hex digits of a "GPU-..." or "MIG-..." UUID; false for other forms. */
bool probe_uuid_hex(const char *uuid, char out[33]);

#endif
