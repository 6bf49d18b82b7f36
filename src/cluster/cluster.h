/* cluster/: rank 2, the cluster view. It needs base/ only: Prometheus's answers are its model,
 * not the local machine's.
 *
 * cluster.h: `gpuctl status --prometheus URL`: every node's GPUs, processes and leases from the
 * gpuctl exporters a Prometheus server scrapes, asked of Prometheus's HTTP API (promapi.h), as
 * one table grouped by host, the status JSON contract with host and stale on each GPU, or the
 * free GPUs (--free). A host whose target is down, or whose newest scrape is older than two
 * scrape intervals, is stale: shown with its last values and marked, never as idle. */
#ifndef GPUCTL_CLUSTER_H
#define GPUCTL_CLUSTER_H

#include <stdbool.h>

struct cluster_opts {
	const char *url;
	bool json, free, color;
	int width;
};

/* The exit status: EXIT_OK; EXIT_BUSY with --free when no GPU is free; EXIT_PROMETHEUS when
 * Prometheus could not be asked (the error printed). */
int cluster_status(const struct cluster_opts *o);

#endif
