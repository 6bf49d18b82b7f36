/* query-x.h: the --query-gpu fields of nvidia-smi 590 beyond the model's (query-x.c), read when a
 * query names them. For query.c only. */
#ifndef GPUCTL_QUERY_X_H
#define GPUCTL_QUERY_X_H

#include "machine/gpu.h"
#include "base/util.h"

struct xfield;
/* The field named by s (len bytes), canonical name or alias; NULL when none. */
const struct xfield *query_x_find(const char *s, size_t len);
/* Its header: the canonical name and, with a unit, " [unit]". */
void query_x_header(struct strbuf *sb, const struct xfield *x);
void query_x_cell(struct strbuf *sb, const struct xfield *x, const struct gpu_set *set,
		  const struct gpu *g, bool units);
/* Lines of --help-query-gpu, in query.c's layout. */
void query_x_help(struct strbuf *sb);
/* Whether the driver's nvidia-smi prints the deprecation token for the old calls (590 on). */
bool query_driver_deprecates(const struct gpu_set *set);

#endif
