/* visenv.c: the visibility model on this machine and an environment (see visenv.h). */
#include "cuda/visenv.h"
#include "machine/pid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vis_machine *vis_machine_new(const struct gpu_set *set)
{
	struct vis_machine *m = xcalloc(1, sizeof *m);
	struct vis_gpu *gpus = xcalloc(set->ngpus, sizeof *gpus);
	size_t nmigs = 0;
	for (size_t i = 0; i < set->ngpus; i++)
		nmigs += set->gpus[i].nmigs;
	struct vis_mig *migs = xcalloc(nmigs, sizeof *migs);
	nmigs = 0;
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		gpus[i] = (struct vis_gpu){
			.nvml_index = g->index,
			.uuid = g->uuid[0] ? g->uuid : NULL,
			.name = g->name,
			.pci_bus_id = g->pci_bus_id,
			.dom = g->pci_domain, .bus = g->pci_bus, .dev = g->pci_dev, .fn = g->pci_fn,
			.cc = gpu_has(g, GF_CC) ? g->cc_major * 10 + g->cc_minor : -1,
			.cores = gpu_has(g, GF_CORES) ? (int)g->cores : -1,
			.mig_enabled = gpu_has(g, GF_MIG_MODE) && g->mig_mode,
		};
		for (size_t j = 0; j < g->nmigs; j++)
			migs[nmigs++] = (struct vis_mig){i, g->migs[j].slot, g->migs[j].gi, g->migs[j].ci,
							 g->migs[j].uuid};
	}
	m->gpus = gpus;
	m->ngpus = set->ngpus;
	m->migs = migs;
	m->nmigs = nmigs;
	m->driver_major = set->has_driver_version ? atoi(set->driver_version) : 0;
	return m;
}

void vis_machine_free(struct vis_machine *m)
{
	if (!m)
		return;
	free((void *)m->gpus);
	free((void *)m->migs);
	free(m);
}

bool vis_proc_env_read(unsigned pid, struct proc_env *env, char *msg, size_t msglen)
{
	static const char *const names[] = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
					    "GPUCTL_LEASE_ID", "SLURM_JOB_ID", "SLURM_STEP_ID",
					    "SLURM_JOB_GPUS", "SLURM_STEP_GPUS"};
	char *v[ARRAY_SIZE(names)];
	*env = (struct proc_env){0};
	if (!pid_getenv(pid, names, v, ARRAY_SIZE(names), msg, msglen))
		return false;
	*env = (struct proc_env){.cvd = v[0], .order = v[1], .lease_id = v[2], .slurm_job_id = v[3],
				 .slurm_step_id = v[4], .slurm_job_gpus = v[5], .slurm_step_gpus = v[6]};
	return true;
}

void vis_proc_env_free(struct proc_env *env)
{
	free(env->cvd);
	free(env->order);
	free(env->lease_id);
	free(env->slurm_job_id);
	free(env->slurm_step_id);
	free(env->slurm_job_gpus);
	free(env->slurm_step_gpus);
	*env = (struct proc_env){0};
}

bool vis_request_env(const struct vis_request *rq, struct proc_env *out, char *msg, size_t msglen)
{
	*out = (struct proc_env){0};
	if (rq->pid && !vis_proc_env_read((unsigned)rq->pid, out, msg, msglen))
		return false;
	if (!rq->pid) {
		char **const slots[] = {&out->cvd, &out->order, &out->slurm_job_id, &out->slurm_step_id,
					&out->slurm_job_gpus, &out->slurm_step_gpus};
		static const char *const names[] = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
						    "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_JOB_GPUS",
						    "SLURM_STEP_GPUS"};
		for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
			const char *v = getenv(names[i]);
			*slots[i] = v ? xstrdup(v) : NULL;
		}
	}
	if (rq->visible_given) {
		free(out->cvd);
		out->cvd = rq->visible ? xstrdup(rq->visible) : NULL;
	}
	if (rq->order) {
		free(out->order);
		out->order = xstrdup(rq->order);
	}
	return true;
}

void vis_session_init(struct vis_session *s, const struct proc_env *env, const struct gpu_set *set)
{
	s->env = *env;
	s->m = vis_machine_new(set);
	s->r = vis_resolve(s->m, s->env.cvd, s->env.order);
}

void vis_session_close(struct vis_session *s)
{
	vis_result_free(s->r);
	vis_machine_free(s->m);
	vis_proc_env_free(&s->env);
}

static const char *env_lookup(const char *name, void *arg)
{
	const struct proc_env *e = arg;
	return !strcmp(name, "SLURM_JOB_ID") ? e->slurm_job_id
	       : !strcmp(name, "SLURM_STEP_ID") ? e->slurm_step_id
	       : !strcmp(name, "SLURM_JOB_GPUS") ? e->slurm_job_gpus
	       : !strcmp(name, "SLURM_STEP_GPUS") ? e->slurm_step_gpus : NULL;
}

bool vis_slurm_read(const struct vis_session *s, const struct gpu_set *set, struct vis_slurm *out)
{
	memset(out, 0, sizeof *out);
	slurm_alloc_read(&out->a, env_lookup, (void *)&s->env);
	if (!out->a.in_job)
		return false;
	if (!out->a.var) {
		snprintf(out->why, sizeof out->why, "the job was given no GPUs");
		return true;
	}
	out->mapped = slurm_gpu_mask(set, out->a.gpus, &out->gpus, out->why, sizeof out->why);
	if (!out->mapped)
		return true;
	uint64_t seen = 0;
	for (size_t i = 0; i < s->r->ndevs; i++) {
		size_t g = s->r->devs[i].gpu;
		if (g < GPU_MAX)
			seen |= 1ULL << g;
		if (g < GPU_MAX && !(out->gpus >> g & 1))
			out->outside[out->noutside++] = i;
	}
	out->unseen = out->gpus & ~seen;
	return true;
}

void vis_indices(struct strbuf *sb, const struct vis_machine *m, uint64_t mask)
{
	bool first = true;
	for (size_t i = 0; i < m->ngpus && i < GPU_MAX; i++)
		if (mask >> i & 1) {
			sb_addf(sb, "%s%u", first ? "" : ",", m->gpus[i].nvml_index);
			first = false;
		}
	if (first)
		sb_adds(sb, "none");
}
