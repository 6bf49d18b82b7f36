/* model.h: the cluster view's model, shared by cluster.c (made from Prometheus's
 * answers) and view.c (shown). Every string is another node's text, hostile until
 * escaped: the view escapes it for terminals and writes JSON only through json.c. */
#ifndef GPUCTL_CLUSTER_MODEL_H
#define GPUCTL_CLUSTER_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "cluster/cluster.h"
#include "base/util.h"

enum cfield {
	CF_MEM_TOTAL, CF_MEM_USED, CF_MEM_FREE, CF_UTIL, CF_UTIL_MEM, CF_TEMP, CF_POWER,
	CF_POWER_LIMIT, CF_LOST, CF_LEASED, CF_MIG, CF_N
};

struct ctarget {                 /* one exporter, as Prometheus scrapes it */
	char *job, *instance;        /* its scrape job and instance labels */
	char *health;                /* up, down, unknown; "gone": not a target any more */
	char *error;                 /* the last scrape's error, NULL when none */
	double last_scrape, interval, timeout;   /* epoch seconds, seconds; NAN when unknown */
	bool stale, gpuctl;          /* stale: why says why; gpuctl: a gpuctl exporter */
	char why[384];
	const char *hostname;        /* its GPUs' hostname label (a GPU's string) */
	const char *host;            /* what the view calls it: hostname, or instance if shared */
	size_t ngpus;
	int daemon_up;               /* its gpuctl_daemon_up now: 1; 0: who holds its GPUs is
				      * unknown (no lease series); -1: not exported (an older exporter) */
};

struct cproc {
	char *pid, *user, *command;  /* command: the program's base name, as exported */
	unsigned job;                /* its Slurm job (hpc_job), 0: none */
	double mem;                  /* bytes */
};

struct cgpu {
	size_t target;               /* position in cluster.t */
	const char *tjob, *tinst;    /* the target's job and instance, to find it after a sort */
	unsigned index;
	char *uuid, *name, *pci, *driver, *hostname;
	bool current;                /* in the instant answer */
	bool stale;                  /* not current, or its target is stale */
	unsigned has;                /* 1 << CF_*: values known */
	double v[CF_N];
	char *mode;                  /* compute mode */
	char *holder, *lease_name, *kind;    /* its lease, holder NULL when none */
	bool lease_unknown;          /* current, but its exporter could not ask its daemon */
	struct cproc *procs;
	size_t nprocs, pcap;
	bool other_procs;            /* more processes than the exporter lists */
};

struct cluster {
	struct ctarget *t;           /* sorted by job, instance */
	size_t nt, tcap;
	struct cgpu *g;              /* sorted by target, index */
	size_t ng, gcap;
	double now;                  /* Prometheus's time of the instant answer */
	bool now_known;
};

/* cluster.c */
bool cluster_load(struct cluster *c, const char *url, struct gpu_error *err);
void cluster_free(struct cluster *c);
double cl_parse_time(const char *s);

#endif
