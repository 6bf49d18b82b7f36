/* status-json.h: the keys `gpuctl status --json --details` adds: everything `gpuctl top` shows
 * beyond the plain document (fan, clocks, encoder/decoder, PCIe, clock event reasons, thermal
 * limits; each process's parent, host CPU, RSS and run time; the lease queue), so that top shows
 * nothing a script cannot read too. */
#ifndef GPUCTL_STATUS_JSON_H
#define GPUCTL_STATUS_JSON_H

#include "machine/gpu.h"
#include "base/json.h"
#include "lease/view.h"

/* What a refresh must read for them. */
enum { STATUS_DETAILS_REFRESH = REFRESH_FAN | REFRESH_CLOCKS | REFRESH_ENGINES | REFRESH_PCIE |
				REFRESH_PCIE_THROUGHPUT | REFRESH_PERF | REFRESH_STATIC |
				REFRESH_PROC_STATS };

void status_json_gpu_details(struct json *j, const struct gpu *g);
void status_json_proc_details(struct json *j, const struct gpu_proc *p);
/* "hostname", and "queue": the lease requests waiting, in order (empty without a daemon). */
void status_json_queue(struct json *j, const struct leaseview *v);

#endif
