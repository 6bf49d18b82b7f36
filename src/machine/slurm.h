/* slurm.h: what gpuctl knows of Slurm on a node: the job a process belongs to (from its cgroup,
 * which slurmstepd, root, placed it in), the allocation gpuctl itself runs in (the variables
 * Slurm set: SLURM_JOB_GPUS, SLURM_STEP_GPUS) and a job's GPUs as Slurm's controller tells them
 * (`scontrol show job -d`, run through base/exec.h). The parsers are pure and unit-tested
 * (tests/unit/test_slurm.c, tests/fake/cgroup/). */
#ifndef GPUCTL_SLURM_H
#define GPUCTL_SLURM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/util.h"

struct gpu_set;

/* ---- attribution: a process's Slurm job from /proc/PID/cgroup ---- */

/* The Slurm job id in the text of /proc/PID/cgroup, or 0 when the process is in no Slurm job.
 * cgroup v1: a hierarchy's path /slurm[_NODE]/uid_U/job_J/step_S[/task_T] (Slurm's first
 * component, made by root at the hierarchy's root); cgroup v2:
 * /system.slice/[NODE_]slurmstepd.scope/job_J/step_S/... Anything else (a user's own sub-cgroup
 * named job_9 deeper down included) is not a job. */
unsigned slurm_cgroup_job(const char *text);
/* Whether this machine runs Slurm jobs in cgroups: a few stats of the places slurmd creates
 * (cgroup v2: system.slice/slurmstepd.scope; v1: a directory slurm or slurm_NODE at the root of
 * the freezer, cpuset, memory or devices hierarchy).
 * Cheap enough for every refresh; false on a machine without Slurm, so no cgroup is read there. */
bool slurm_node(void);

/* ---- the allocation gpuctl runs in ---- */

struct slurm_alloc {
	bool in_job;                 /* SLURM_JOB_ID is set */
	const char *job_id, *step_id;
	const char *var;             /* the variable naming the GPUs: SLURM_STEP_GPUS in a step,
				      * else SLURM_JOB_GPUS; NULL when neither is set */
	const char *gpus;            /* its value */
};
/* From an environment lookup (getenv, or a process's variables): the strings are lookup's. */
void slurm_alloc_read(struct slurm_alloc *a, const char *(*lookup)(const char *name, void *arg),
		      void *arg);
/* From this process's environment. */
void slurm_alloc_self(struct slurm_alloc *a);

/* Slurm's GPU ids ("0,1", ranges "0-3" and UUIDs accepted) as a set of the machine's GPUs (bit =
 * position in set->gpus). Slurm numbers a node's GPUs as gres.conf lists them: nvidia-smi's
 * indices for File=/dev/nvidia[0-N] and AutoDetect=nvml. Inside a device cgroup
 * (ConstrainDevices=yes) NVML shows only the allocation's GPUs, numbered from 0, while the ids
 * stay the node's: when NVML shows exactly as many GPUs as the ids name, the allocation is every
 * GPU NVML shows. false with err set when an id names no GPU here. */
bool slurm_gpu_mask(const struct gpu_set *set, const char *ids, uint64_t *mask, char *err,
		    size_t errlen);

/* ---- a job's GPUs, from Slurm's controller ---- */

/* What to check when a Slurm tool does not answer in time: the hint exec_run (base/exec.h) puts
 * in its words, for every tool that asks slurmctld. */
#define SLURM_LATE "is slurmctld up and answering? `scontrol ping` says"

/* The GPU ids on node `node` from `scontrol show job -d --oneliner` output: the IDX list of the
 * node group that names it ("Nodes=vm CPU_IDs=0 Mem=0 GRES=gpu:2(IDX:0-1)"), written as "0-1"
 * into ids. false when the text has none for that node. */
bool slurm_parse_job_gpus(const char *text, const char *node, char *ids, size_t idslen);
/* A running job's GPUs on this node, asked of Slurm's controller: ids as above, or false with
 * err holding scontrol's own words (or why it could not be run). */
bool slurm_job_gpus(unsigned job, char *ids, size_t idslen, char *err, size_t errlen);

#endif
