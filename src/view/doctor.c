/* doctor.c: the findings engine of `gpuctl doctor` (see doctor.h): the caller's environment,
 * the GPU processes (each one's own environment from /proc, its parent, its lease) and the
 * machine, read from a refreshed GPU set and the daemon's lease list. */
#include "view/doctor.h"
#include "view/container.h"
#include "machine/runtime.h"
#include "base/escape.h"
#include "machine/pid.h"
#include "machine/slurm.h"
#include "cuda/visenv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SMALL_MIB 1024         /* a CUDA context and little else */
#define LOW_FREE_PCT 10        /* memory left that makes a shared GPU an out-of-memory risk */

/* A CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER pair and what CUDA makes of it: processes share
 * a few pairs, so each is resolved once. */
struct resolved {
	char *cvd, *order;         /* NULL: unset */
	struct vis_result *r;
};
#define MAX_RESOLVED 64        /* distinct pairs remembered; more are resolved each time */

struct doctor {
	struct doctor_report *r;
	struct resolved res[MAX_RESOLVED];
	size_t nres;
	unsigned long focus;       /* --pid: only findings about it */
	struct gpu_set *set;
	struct vis_machine *vm;
	const struct leaseview *lv;
};

struct doctor_finding *doctor_report_add(struct doctor_report *r, enum vis_severity sev,
					 const char *code, const char *fix, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	r->f = grow_array(r->f, &r->cap, r->n + 1, sizeof *r->f);
	struct doctor_finding *f = &r->f[r->n++];
	*f = (struct doctor_finding){.sev = sev, .code = code, .message = xstrdup(buf),
				     .fix = xstrdup(fix)};
	return f;
}
#define add(d, ...) doctor_report_add((d)->r, __VA_ARGS__)

void doctor_finding_add_id(struct doctor_ids *l, unsigned id)
{
	l->v = grow_array(l->v, &l->cap, l->n + 1, sizeof *l->v);
	l->v[l->n++] = id;
}
#define add_id doctor_finding_add_id

static void add_gpu(struct doctor_finding *f, unsigned idx) { add_id(&f->gpus, idx); }
static void add_pid(struct doctor_finding *f, unsigned pid) { add_id(&f->pids, pid); }

/* ---- the caller's environment ---- */

/* The doctor's code for a visibility warning: "visible_" and the model's code. */
static const char *visible_code(const char *vis)
{
	static const char *const codes[] = {
		"visible_empty", "visible_truncated", "visible_out_of_range", "visible_duplicate",
		"visible_mixed_kinds", "visible_unknown_uuid", "visible_ambiguous_uuid",
		"visible_range", "visible_junk", "visible_whitespace", "visible_none_visible",
		"visible_bad_order", "visible_mig_gpu", "visible_mig_single"};
	for (size_t k = 0; k < ARRAY_SIZE(codes); k++)
		if (!strcmp(codes[k] + 8, vis))
			return codes[k];
	return "visible_other";
}

static void check_env(struct doctor *d)
{
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES"), *order = getenv("CUDA_DEVICE_ORDER");
	struct vis_result *r = vis_resolve(d->vm, cvd, order);
	for (size_t i = 0; i < r->nwarns; i++) {
		const struct vis_warning *w = &r->warns[i];
		if (!strcmp(w->code, "order_differs")) {
			bool ordinals = cvd && strncmp(cvd, "GPU-", 4) && strncmp(cvd, "MIG-", 4);
			add(d, ordinals ? SEV_ERROR : SEV_WARNING, ordinals ? "indices_unpinned" : "order_unpinned",
			    "export CUDA_DEVICE_ORDER=PCI_BUS_ID (gpuctl run does it for you), or name GPUs by UUID",
			    "%s", w->message);
			continue;
		}
		const char *stable = visible_code(w->code);
		add(d, w->severity, stable, "fix CUDA_VISIBLE_DEVICES: `gpuctl map` shows what CUDA makes of it",
		    "CUDA_VISIBLE_DEVICES: %s", w->message);
	}
	vis_result_free(r);
}

/* ---- processes ---- */

/* The parent of pid, or -1 when it is gone. */
static int parent(unsigned pid)
{
	struct pid_stat st;
	return pid_stat(pid, &st) ? st.ppid : -1;
}

/* Is pid the lease's job, or a descendant of it? */
static bool in_lease(const struct lease_info *h, unsigned pid, const struct proc_env *env)
{
	if (env->lease_id && !strcmp(env->lease_id, h->id))
		return true;
	for (int p = (int)pid, hops = 0; p > 1 && hops < 64; hops++, p = parent((unsigned)p))
		if (p == h->pid)
			return true;
	return false;
}

struct usage {            /* one process, over all GPUs */
	unsigned pid;
	const char *cmd;
	bool live;            /* in /proc at the refresh: its environment can be read */
	unsigned slurm_job;   /* its Slurm job (cgroup), 0: none */
	size_t ngpus;
	unsigned *gpu;        /* nvidia-smi indices, in GPU order */
	uint64_t *mem;        /* bytes, beside them */
};

/* pid -> index into the usage list, for one doctor run: open addressing, under half full. */
struct pid_index {
	unsigned *slot;       /* index+1, 0 = empty */
	size_t mask;
};

static unsigned *pid_slot(struct pid_index *x, const struct usage *u, unsigned pid)
{
	size_t h = (pid * 2654435761U) & x->mask;
	while (x->slot[h] && u[x->slot[h] - 1].pid != pid)
		h = (h + 1) & x->mask;
	return &x->slot[h];
}

static bool same_value(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* What CUDA shows a process with these variables. *owned: the caller frees the result. */
static const struct vis_result *resolve(struct doctor *d, const char *cvd, const char *order,
					struct vis_result **owned)
{
	*owned = NULL;
	for (size_t i = 0; i < d->nres; i++)
		if (same_value(d->res[i].cvd, cvd) && same_value(d->res[i].order, order))
			return d->res[i].r;
	struct vis_result *r = vis_resolve(d->vm, cvd, order);
	if (d->nres == MAX_RESOLVED)
		return *owned = r;
	d->res[d->nres++] = (struct resolved){cvd ? xstrdup(cvd) : NULL, order ? xstrdup(order) : NULL, r};
	return r;
}

static void check_process(struct doctor *d, const struct usage *u)
{
	struct proc_env env;
	char msg[256];
	char head[64];
	const char *cmd = text_head(head, sizeof head, u->cmd ? u->cmd : "?", 60);
	if (!u->live || !vis_proc_env_read(u->pid, &env, msg, sizeof msg))
		return; /* gone, or another user's: nothing to say about its variables */
	/* Memory on GPUs its own CUDA_VISIBLE_DEVICES excludes: set after CUDA started, or ignored. */
	struct vis_result *owned;
	const struct vis_result *r = resolve(d, env.cvd, env.order, &owned);
	struct doctor_finding *f = NULL;
	for (size_t k = 0; env.cvd && k < u->ngpus; k++) {
		bool visible = false;
		for (size_t i = 0; i < r->ndevs; i++)
			visible |= d->vm->gpus[r->devs[i].gpu].nvml_index == u->gpu[k];
		if (visible)
			continue;
		if (!f) {
			struct strbuf meant = {0};
			char cvd[48];
			for (size_t i = 0; i < r->ndevs; i++)
				sb_addf(&meant, "%s%u", i ? "," : "", d->vm->gpus[r->devs[i].gpu].nvml_index);
			f = add(d, SEV_ERROR, "late_visibility",
				"set CUDA_VISIBLE_DEVICES before CUDA starts: in the environment given to exec "
				"(gpuctl run), not in os.environ after `import torch`",
				"process %u (%s) uses GPUs its CUDA_VISIBLE_DEVICES='%s' does not include; it "
				"was meant to see %s", u->pid, cmd, text_head(cvd, sizeof cvd, env.cvd, 40), meant.len ? meant.buf : "no GPU");
			add_pid(f, u->pid);
			sb_free(&meant);
		}
		add_gpu(f, u->gpu[k]);
	}
	vis_result_free(owned);
	/* Spread over several GPUs with only a context on all but one. */
	size_t big = 0;
	for (size_t k = 0; k < u->ngpus; k++)
		big += u->mem[k] > (uint64_t)SMALL_MIB << 20;
	if (u->ngpus >= 2 && big == 1) {
		f = add(d, SEV_WARNING, "grabbed_all",
			"give the job only the GPU it uses (gpuctl run -n 1), or check for DataParallel or "
			"torch.cuda calls that touch every device",
			"process %u (%s) holds memory on %zu GPUs but uses only one: a CUDA context on "
			"each of the others", u->pid, cmd, u->ngpus);
		add_pid(f, u->pid);
		for (size_t k = 0; k < u->ngpus; k++)
			add_gpu(f, u->gpu[k]);
	}
	/* Orphans: a worker whose job is gone, still holding memory. */
	if (parent(u->pid) == 1 && getpid() != 1) {
		f = add(d, SEV_WARNING, "orphan_process",
			"if its job has ended, end it: gpuctl kill --pid PID",
			"process %u (%s) holds GPU memory and its parent is gone (an orphaned worker?)",
			u->pid, cmd);
		add_pid(f, u->pid);
		for (size_t k = 0; k < u->ngpus; k++)
			add_gpu(f, u->gpu[k]);
	}
	/* On a GPU leased to someone else. */
	for (size_t k = 0; k < u->ngpus; k++) {
		const struct gpu *g = &d->set->gpus[u->gpu[k]];
		const struct lease_info *h = leaseview_holder(d->lv, g->uuid);
		if (h && !in_lease(h, u->pid, &env)) {
			f = add(d, SEV_ERROR, "lease_violation",
				"run jobs through gpuctl run, which gives them free GPUs; this one should move "
				"or stop (gpuctl kill --pid PID, if it is yours)",
				"process %u (%s) uses GPU %u, which is leased to %s (pid %d%s%s)", u->pid, cmd,
				g->index, h->user, (int)h->pid, h->name ? ", " : "", h->name ? h->name : "");
			add_pid(f, u->pid);
			add_gpu(f, g->index);
		}
	}
	vis_proc_env_free(&env);
}

/* On a Slurm node: a process using a GPU outside its job's allocation, as Slurm's controller
 * tells it (`scontrol show job -d`: asked once per job, and only on a Slurm node). */
static void check_slurm(struct doctor *d, const struct usage *u, size_t n)
{
	struct job { unsigned id; bool ok; uint64_t gpus; char ids[128]; } *jobs = NULL;
	size_t njobs = 0, cap = 0;
	for (size_t i = 0; i < n; i++) {
		if (!u[i].slurm_job)
			continue;
		struct job *j = NULL;
		for (size_t k = 0; k < njobs && !j; k++)
			if (jobs[k].id == u[i].slurm_job)
				j = &jobs[k];
		if (!j) {
			char err[512];
			jobs = grow_array(jobs, &cap, njobs + 1, sizeof *jobs);
			j = &jobs[njobs++];
			*j = (struct job){.id = u[i].slurm_job};
			j->ok = slurm_job_gpus(j->id, j->ids, sizeof j->ids, err, sizeof err) &&
				slurm_gpu_mask(d->set, j->ids, &j->gpus, err, sizeof err);
			if (!j->ok) {
				struct doctor_finding *f = add(d, SEV_INFO, "slurm_unchecked",
					"run gpuctl doctor where scontrol works (a node of the cluster, with "
					"SLURM_CONF if needed)",
					"cannot check which GPUs Slurm gave job %u: %s", j->id, err);
				add_pid(f, u[i].pid);
			}
		}
		if (!j->ok)
			continue;
		struct doctor_finding *f = NULL;
		for (size_t k = 0; k < u[i].ngpus; k++) {
			unsigned g = u[i].gpu[k];
			if (g < GPU_MAX && (j->gpus >> g & 1))
				continue;
			if (!f) {
				char head[64];
				f = add(d, SEV_ERROR, "slurm_outside",
					"use only the GPUs Slurm gave the job: leave CUDA_VISIBLE_DEVICES as Slurm "
					"set it and set CUDA_DEVICE_ORDER=PCI_BUS_ID (or lease with gpuctl run inside "
					"the job); ConstrainDevices=yes in cgroup.conf makes Slurm enforce it",
					"process %u (%s) of Slurm job %u uses GPUs outside the job's allocation "
					"(Slurm gave it GPU%s %s)", u[i].pid,
					text_head(head, sizeof head, u[i].cmd ? u[i].cmd : "?", 60), j->id,
					strpbrk(j->ids, ",-") ? "s" : "", j->ids);
				add_pid(f, u[i].pid);
			}
			add_gpu(f, g);
		}
	}
	free(jobs);
}

/* Each process once, with every GPU it uses: a first pass gives each pid its place (in order of
 * first appearance) and counts its GPUs, a second lays the GPUs out side by side. Linear in the
 * number of process entries. */
/* containers (issue 28): a container on a GPU it holds no lease for, once per GPU and container;
 * its name is the runtime's text, escaped as every finding's text is by its output. */
static void unleased_container(struct doctor *d, const struct gpu *g, const struct gpu_proc *p)
{
	char label[3 * CTR_NAME_MAX + 8];
	if (!ctr_label(p, label, sizeof label))
		return;
	for (const struct gpu_proc *q = g->procs; q < p; q++)
		if (q->ctr == p->ctr)
			return;
	struct doctor_finding *f = add(d, SEV_INFO, "container_unleased",
		"start containers with `gpuctl run -n N -- docker run ...` (or podman run): they get the "
		"lease's GPUs, and a detached one holds the lease until it stops",
		"GPU %u is used by %s container %s, which holds no lease", g->index,
		ctr_runtime_name(p->ctr->ref.runtime), label);
	add_gpu(f, g->index);
	add_pid(f, p->pid);
}

/* containers (issue 28): NVML's processes this /proc has not. */
static void check_pidns(struct doctor *d)
{
	char note[320];
	if (!d->focus && ctr_pidns_note(d->set, note, sizeof note))
		add(d, SEV_WARNING, "host_pids_unmapped", "run gpuctl on the host, or in a container "
		    "started with --pid=host", "%s", note);
}

static void check_processes(struct doctor *d)
{
	check_pidns(d);
	size_t total = 0, n = 0;
	for (size_t i = 0; i < d->set->ngpus; i++)
		total += d->set->gpus[i].nprocs;
	struct usage *u = xcalloc(total ? total : 1, sizeof *u);
	struct pid_index idx = {.mask = 15};
	while (idx.mask + 1 < 2 * total)
		idx.mask = 2 * idx.mask + 1;
	idx.slot = xcalloc(idx.mask + 1, sizeof *idx.slot);
	bool leasing = d->lv->present;
	for (size_t i = 0; i < d->set->ngpus; i++) {
		const struct gpu *g = &d->set->gpus[i];
		uint64_t procs_mem = 0;
		size_t compute = 0;
		struct doctor_finding *unleased = NULL;
		for (size_t j = 0; j < g->nprocs; j++) {
			const struct gpu_proc *p = &g->procs[j];
			if (d->focus && p->pid != d->focus)
				continue;
			unsigned *slot = pid_slot(&idx, u, p->pid);
			if (!*slot) {
				u[n] = (struct usage){.pid = p->pid, .cmd = p->cmdline, .live = p->uid_valid,
						      .slurm_job = p->slurm_job};
				*slot = (unsigned)++n;
			}
			u[*slot - 1].ngpus++;
			procs_mem += p->mem_valid ? p->used_mem : 0;
			compute += (p->type & PROC_COMPUTE) != 0;
			if (leasing && !leaseview_holder(d->lv, g->uuid) &&
			    !leaseview_share(d->lv, g->uuid, 0) && (p->type & PROC_COMPUTE)) {
				if (!unleased) {
					unleased = add(d, SEV_INFO, "unleased_use",
						       "lease GPUs with gpuctl run, so nobody else is given them",
						       "GPU %u is used by processes that hold no lease", g->index);
					add_gpu(unleased, g->index);
				}
				add_pid(unleased, p->pid);
				unleased_container(d, g, p);
			}
		}
		if (d->focus)
			continue;
		/* Several jobs on one GPU with little memory left. */
		if (compute >= 2 && gpu_has(g, GF_MEM_FREE) && gpu_has(g, GF_MEM_TOTAL) &&
		    g->mem_free * 100 < g->mem_total * LOW_FREE_PCT) {
			struct doctor_finding *f = add(d, SEV_WARNING, "oom_risk",
				"move a job to a free GPU (gpuctl run picks one), or lower batch sizes",
				"GPU %u runs %zu jobs with only %llu MiB of %llu MiB free: the next allocation "
				"may fail with out of memory", g->index, compute,
				mib(g->mem_free), mib(g->mem_total));
			add_gpu(f, g->index);
			for (size_t j = 0; j < g->nprocs; j++)
				if (g->procs[j].type & PROC_COMPUTE)
					add_pid(f, g->procs[j].pid);
		}
		/* Memory in use that no visible process accounts for. */
		if (gpu_has(g, GF_PROCESSES) && gpu_has(g, GF_MEM_USED) &&
		    g->mem_used > procs_mem + ((uint64_t)SMALL_MIB << 20)) {
			struct doctor_finding *f = add(d, SEV_WARNING, "hidden_memory",
				"look for processes in other containers or PID namespaces (run gpuctl on the "
				"host, or with --pid=host), or a leaked context; `sudo lsof /dev/nvidia*` helps",
				"GPU %u has %llu MiB in use but its visible processes account for %llu MiB",
				g->index, mib(g->mem_used), mib(procs_mem));
			add_gpu(f, g->index);
		}
	}
	/* Second pass: each process's GPUs, in GPU order, in one array. */
	unsigned *gpus = xmalloc((total ? total : 1) * sizeof *gpus);
	uint64_t *mems = xmalloc((total ? total : 1) * sizeof *mems);
	for (size_t i = 0, at = 0; i < n; i++) {
		u[i].gpu = gpus + at;
		u[i].mem = mems + at;
		at += u[i].ngpus;
		u[i].ngpus = 0;
	}
	for (size_t i = 0; i < d->set->ngpus; i++) {
		const struct gpu *g = &d->set->gpus[i];
		for (size_t j = 0; j < g->nprocs; j++) {
			const struct gpu_proc *p = &g->procs[j];
			if (d->focus && p->pid != d->focus)
				continue;
			struct usage *x = &u[*pid_slot(&idx, u, p->pid) - 1];
			x->gpu[x->ngpus] = g->index;
			x->mem[x->ngpus++] = p->mem_valid ? p->used_mem : 0;
		}
	}
	for (size_t i = 0; i < n; i++)
		check_process(d, &u[i]);
	check_slurm(d, u, n);
	free(gpus);
	free(mems);
	free(idx.slot);
	free(u);
}

/* ---- entry points ---- */

static void done(struct doctor *d)
{
	for (size_t i = 0; i < d->nres; i++) {
		free(d->res[i].cvd);
		free(d->res[i].order);
		vis_result_free(d->res[i].r);
	}
	vis_machine_free(d->vm);
}

void doctor_all(struct doctor_report *r, struct gpu_set *set, const struct leaseview *lv)
{
	struct doctor d = {.r = r, .set = set, .vm = vis_machine_new(set), .lv = lv};
	check_env(&d);
	check_processes(&d);
	done(&d);
}

void doctor_pid(struct doctor_report *r, struct gpu_set *set, const struct leaseview *lv,
		unsigned pid)
{
	struct doctor d = {.r = r, .focus = pid, .set = set, .vm = vis_machine_new(set), .lv = lv};
	bool found = false;
	for (size_t i = 0; i < set->ngpus; i++)
		for (size_t j = 0; j < set->gpus[i].nprocs; j++)
			found |= set->gpus[i].procs[j].pid == pid;
	struct proc_env env;
	char msg[256];
	if (vis_proc_env_read(pid, &env, msg, sizeof msg)) {
		struct vis_result *res = vis_resolve(d.vm, env.cvd, env.order);
		struct strbuf sees = {0};
		for (size_t i = 0; i < res->ndevs; i++)
			sb_addf(&sees, "%s%u", i ? "," : "", d.vm->gpus[res->devs[i].gpu].nvml_index);
		struct doctor_finding *f = add(&d, SEV_INFO, "pid_summary", "nothing to do",
			"process %u was started with CUDA_VISIBLE_DEVICES=%s and CUDA_DEVICE_ORDER=%s: "
			"CUDA shows it GPU%s %s%s", pid, env.cvd ? env.cvd : "(unset)",
			env.order ? env.order : "(unset)", res->ndevs == 1 ? "" : "s",
			sees.len ? sees.buf : "none", found ? "" : "; it uses no GPU now");
		add_pid(f, pid);
		sb_free(&sees);
		vis_result_free(res);
		vis_proc_env_free(&env);
	} else {
		add(&d, SEV_INFO, "pid_unreadable", "run as that process's user or as root", "%s", msg);
	}
	check_processes(&d);
	done(&d);
}

bool doctor_has_error(const struct doctor_report *r)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->f[i].sev == SEV_ERROR)
			return true;
	return false;
}

void doctor_report_free(struct doctor_report *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->f[i].message);
		free(r->f[i].fix);
		free(r->f[i].gpus.v);
		free(r->f[i].pids.v);
	}
	free(r->f);
	*r = (struct doctor_report){0};
}
