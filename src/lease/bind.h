/* bind.h: --bind-cpus (issue 26): a job's CPU affinity set to the CPUs local to its GPUs, as the
 * daemon's topology gives them in the grant (struct grant's cpus), intersected with the CPUs the
 * caller may use (its own affinity: a cgroup's cpuset, taskset, a Slurm allocation). The plan is
 * made where messages can be printed; the job's process applies it just before exec. */
#ifndef GPUCTL_BIND_H
#define GPUCTL_BIND_H

#include "lease/choose.h"
#include "machine/topo.h"

enum bind_plan {
	BIND_NARROW,     /* set is narrower than what the caller may use: apply it */
	BIND_ALL,        /* every CPU the caller may use is local to the GPUs: nothing to narrow */
	BIND_UNKNOWN,    /* the driver does not say which CPUs are local to these GPUs */
	BIND_DISJOINT,   /* none of the GPUs' CPUs is allowed to the caller */
	BIND_FAILED,     /* this process's affinity could not be read */
};

/* What --bind-cpus would do for g in this process; msg (for stderr) says it in words. */
enum bind_plan grant_bind_plan(const struct grant *g, struct cpuset *set, char *msg, size_t len);
/* Apply a BIND_NARROW plan to the calling process (the job, before exec): 0, or errno. */
int grant_bind_apply(const struct cpuset *set);

#endif
