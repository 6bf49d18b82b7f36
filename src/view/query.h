/* view/: rank 4, what the machine commands print, each file one output read from the model
 * (machine/gpu.h) into a string buffer: nvidia-smi's query language (query.c, this header), the
 * status table (table.c), the Prometheus exposition (metrics.c), status's JSON (status-json.c)
 * and the doctor's findings (doctor.c). None reads options or writes to a terminal itself.
 *
 * query.h: nvidia-smi compatible --query-gpu / --query-compute-apps with --format=csv, and -L. */
#ifndef GPUCTL_QUERY_H
#define GPUCTL_QUERY_H

#include "machine/gpu.h"
#include "base/util.h"

/* A field of a GPU that fell off the bus: nvmlErrorString(NVML_ERROR_GPU_IS_LOST), bracketed. */
#define QUERY_LOST "[GPU is lost]"

enum { QF_NOHEADER = 1, QF_NOUNITS = 2 };
enum query_kind { Q_GPU, Q_APPS };

struct query;
/* NULL, with err set, when a field is unknown. */
struct query *query_parse(enum query_kind kind, const char *fields, struct gpu_error *err);
void query_free(struct query *q);
unsigned query_refresh_needs(const struct query *q);
/* Whether a timestamp field was asked for (the local time costs a read of /etc/localtime). */
bool query_shows_time(const struct query *q);
/* Whether a field is one the GPU model does not hold (query-x.c): read from the driver when
 * printed, so the machine must be opened directly, not through the daemon's snapshot. */
bool query_reads_driver(const struct query *q);
/* Whether a field prints the compute capability (issue 22: else status opens the GPUs lean). */
bool query_needs_cc(const struct query *q);
bool query_parse_format(const char *s, unsigned *flags);
void query_header(struct strbuf *sb, const struct query *q);
/* Appends one row per selected GPU (or per compute process); timestamp as nvidia-smi prints it. */
void query_rows(struct strbuf *sb, const struct query *q, const struct gpu_set *set, unsigned flags,
		const char *timestamp);
void query_help(struct strbuf *sb, enum query_kind kind);
/* nvidia-smi -L: one line per selected GPU, and one per MIG device under it. */
void query_list_gpus(struct strbuf *sb, const struct gpu_set *set);

#endif
