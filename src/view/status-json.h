/* status-json.h: the JSON document of `gpuctl status --json` (gpuctl-status(1): JSON), written
 * in one place; cmd/status.c reads the options and calls it. With --details it adds everything
 * `gpuctl top` shows beyond the plain document (fan, clocks, encoder/decoder, PCIe, clock event
 * reasons, thermal limits; each process's parent, host CPU, RSS and run time; the lease queue),
 * so that top shows nothing a script cannot read too. */
#ifndef GPUCTL_STATUS_JSON_H
#define GPUCTL_STATUS_JSON_H

#include "machine/gpu.h"
#include "lease/view.h"

/* What a refresh must read for them. */
enum { STATUS_DETAILS_REFRESH = REFRESH_FAN | REFRESH_CLOCKS | REFRESH_ENGINES | REFRESH_PCIE |
				REFRESH_PCIE_THROUGHPUT | REFRESH_PERF | REFRESH_STATIC |
				REFRESH_PROC_STATS };

struct status_json_opts {
	bool details;                /* --details: the keys above too */
	bool no_procs;               /* --no-processes: no "processes" */
	bool pretty;                 /* indented (one document); else one line (a loop's) */
	const struct leaseview *leases;  /* who holds each GPU; with details, the queue */
	const char *leases_missing;      /* why they could not be had ("leases_error"); NULL */
};
/* The document of `gpuctl status --json` for the selected GPUs of set, one line break after. */
void status_json(struct strbuf *sb, const struct gpu_set *set, const struct status_json_opts *o);

#endif
