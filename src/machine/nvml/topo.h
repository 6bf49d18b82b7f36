/* topo.h (nvml/): the NVIDIA backend's topology reader (topo.c), the vtable's topo(). */
#ifndef GPUCTL_NVML_TOPO_H
#define GPUCTL_NVML_TOPO_H

#include "machine/topo.h"

struct topo *nvml_topo_read(struct gpu_set *set);

#endif
