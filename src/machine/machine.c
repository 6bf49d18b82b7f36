/* machine.c: the machine as one refresh sees it: the facade over the GPU backends (the first that
 * opens serves the run), the /proc process cache (proc.c) and, on a Slurm node, each process's job
 * (slurm.c), and each process's container (container.c, runtime.c). The model it fills and the
 * helpers on it are gpu.c's. */
#include "machine/gpu.h"
#include "machine/proc.h"
#include "machine/slurm.h"
#include "machine/runtime.h"
#include "base/util.h"

#include <stdlib.h>

/* Tried in order; the first that opens serves the run. */
static const struct gpu_backend *const backends[] = {&nvml_backend};

struct gpu_set *gpu_set_open(struct gpu_error *err)
{
	struct gpu_set *set = xcalloc(1, sizeof *set);
	for (size_t i = 0; i < ARRAY_SIZE(backends); i++) {
		if (backends[i]->open(set, err)) {
			set->backend = backends[i];
			set->pc = proc_cache_new();
			return set;
		}
	}
	free(set->gpus);
	free(set);
	return NULL;
}

/* containers (issue 28): a set the daemon's snapshot filled has its processes' owners and
 * command lines but not their containers (the snapshot carries none: a name is for whoever
 * may ask the runtime, and the daemon is root). Here each listed process's cgroup is read by
 * this caller and the names asked with its own rights, as a direct refresh does. */
void gpu_set_snapshot_procs(struct gpu_set *set, unsigned what, bool runtime)
{
	set->procs_listed = set->procs_unmapped = 0;
	bool ctrs = (what & REFRESH_CONTAINERS) && runtime;
	if (ctrs && !set->cn)
		set->cn = ctr_names_new();
	if (ctrs)
		ctr_names_begin(set->cn);
	for (size_t i = 0; i < set->ngpus; i++) {
		struct gpu *g = &set->gpus[i];
		for (size_t j = 0; j < g->nprocs; j++) {
			struct gpu_proc *p = &g->procs[j];
			const struct ctr_info *carried = p->ctr;
			p->ctr = NULL;
			if (!g->selected)
				continue;
			/* issue 22: the snapshot carries each process's container id (the daemon read
			 * its cgroup once): only naming it is this caller's */
			if (ctrs && set->ctr_ids)
				p->ctr = carried && p->cmdline ? ctr_names_add(set->cn, &carried->ref) : NULL;
			else
				p->ctr = ctrs && p->cmdline ? ctr_names_add_pid(set->cn, p->pid) : NULL;
			set->procs_listed++;
			set->procs_unmapped += !p->cmdline;
		}
	}
	if (ctrs) {
		ctr_names_resolve(set->cn);
		ctr_names_end(set->cn);
	}
}

void gpu_set_refresh(struct gpu_set *set, unsigned what)
{
	set->backend->refresh(set, what);
	/* Read after the call: a backend may have handed the set over to another (a snapshot
	 * whose daemon stopped answering reads the machine itself from then on). */
	if (set->backend->fills_procs && (what & REFRESH_PROCS) && !(what & REFRESH_NO_PROC_INFO))
		gpu_set_snapshot_procs(set, what, ctr_host_has_runtime());
	if (set->backend->fills_procs || !(what & REFRESH_PROCS) || (what & REFRESH_NO_PROC_INFO))
		return;
	proc_cache_stats(set->pc, what & REFRESH_PROC_STATS);
	proc_cache_begin(set->pc);
	/* A few stats tell a Slurm node; anywhere else no cgroup file is read. */
	set->slurm = (what & REFRESH_SLURM) && slurm_node();
	proc_cache_want_jobs(set->pc, set->slurm);
	/* A few stats tell a machine that runs containers; anywhere else no cgroup is read. Only
	 * their ids (issue 22): the daemon's snapshot, named by each client, no runtime asked. */
	bool named = what & REFRESH_CONTAINERS;
	bool ctrs = (what & (REFRESH_CONTAINERS | REFRESH_CONTAINER_IDS)) && ctr_host_has_runtime();
	proc_cache_want_containers(set->pc, ctrs);
	if (ctrs && !set->cn)
		set->cn = ctr_names_new();
	if (ctrs)
		ctr_names_begin(set->cn);
	set->procs_listed = set->procs_unmapped = 0;
	bool names = what & REFRESH_COMPUTE_NAMES;
	proc_cache_want_owner(set->pc, !names);
	size_t listed = 0;
	for (size_t i = 0; i < set->ngpus; i++)
		listed += set->gpus[i].selected ? set->gpus[i].nprocs : 0;
	proc_cache_expect(set->pc, listed);
	for (size_t i = 0; i < set->ngpus; i++) {
		struct gpu *g = &set->gpus[i];
		if (!g->selected)
			continue;
		for (size_t j = 0; j < g->nprocs; j++) {
			struct gpu_proc *p = &g->procs[j];
			struct proc_info pi;
			if (names && !(p->type & PROC_COMPUTE)) {
				p->user = p->cmdline = p->name = NULL;
				p->ctr = NULL;
				p->uid_valid = false;
				continue;
			}
			proc_lookup(set->pc, p->pid, &pi);
			p->user = pi.user;
			p->cmdline = pi.cmdline;
			p->name = pi.name;
			p->uid = pi.uid;
			p->uid_valid = pi.found && !names;
			p->stat_valid = pi.stat_valid;
			p->ppid = pi.ppid;
			p->start = pi.start;
			p->rss = pi.rss;
			p->cpu_time = pi.cpu_time;
			p->elapsed = pi.elapsed;
			p->cpu_valid = pi.cpu_valid;
			p->cpu_pct = pi.cpu_pct;
			p->slurm_job = pi.slurm_job;
			p->ctr = pi.ctr ? ctr_names_add(set->cn, pi.ctr) : NULL;
			set->procs_listed++;
			set->procs_unmapped += !pi.found;
		}
	}
	if (ctrs) {
		if (named)
			ctr_names_resolve(set->cn);
		ctr_names_end(set->cn);
	}
	proc_cache_end(set->pc);
}

void gpu_set_watch_exits(struct gpu_set *set, unsigned parts)
{
	if (!set)
		return;
	set->watch_parts = parts;
	if (set->pc)
		proc_cache_watch_exits(set->pc, parts);
}

void gpu_set_free(struct gpu_set *set)
{
	if (!set)
		return;
	set->backend->close(set);
	for (size_t i = 0; i < set->ngpus; i++) {
		free(set->gpus[i].procs);
		free(set->gpus[i].migs);
		free(set->gpus[i].error);
	}
	free(set->gpus);
	proc_cache_free(set->pc);
	ctr_names_free(set->cn);
	free(set);
}

/* smi (issue 27) */
void gpu_read_x(const struct gpu_set *set, const struct gpu *g, unsigned src, unsigned arg,
		struct gpu_xval *out)
{
	*out = (struct gpu_xval){.st = GX_NA};
	if (set->backend && set->backend->read_x && !g->lost && !g->inaccessible)
		set->backend->read_x(set, g, src, arg, out);
}
