/* topo.h (view/): what `gpuctl topo` prints (issue 26): the GPU-to-GPU matrix as
 * `nvidia-smi topo -m` prints it, with its legend, and the same as JSON. */
#ifndef GPUCTL_VIEW_TOPO_H
#define GPUCTL_VIEW_TOPO_H

#include "machine/gpu.h"
#include "machine/topo.h"

/* One pair's cell: "NV18", "PIX", ... "N/A" (unknown), " X " on the diagonal. */
const char *topo_cell(const struct topo *t, size_t i, size_t j, char *buf, size_t len);
void topo_matrix(const struct gpu_set *set, const struct topo *t, struct strbuf *sb);
void topo_json(const struct gpu_set *set, const struct topo *t, struct strbuf *sb);

#endif
