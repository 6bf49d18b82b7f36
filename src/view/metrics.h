/* metrics.h: the Prometheus text exposition of a GPU set and its leases. The lease series are
 * written only when the daemon answered (lv->present): gpuctl_daemon_up says which. */
#ifndef GPUCTL_METRICS_H
#define GPUCTL_METRICS_H

#include "machine/gpu.h"
#include "lease/view.h"

struct metrics_opts {
	const char *hostname;
	unsigned max_procs;            /* per GPU; the rest add up under pid="other" */
	unsigned long long refreshes;  /* NVML refreshes since start */
	double refresh_seconds;        /* how long the last one took */
	unsigned long long lease_errors; /* refreshes whose lease view could not be had */
	bool slurm;                    /* a Slurm node: series carry their jobs (hpc_job) */
};

void metrics_render(struct strbuf *sb, const struct gpu_set *set, const struct leaseview *lv,
		    const struct metrics_opts *o);

#endif
