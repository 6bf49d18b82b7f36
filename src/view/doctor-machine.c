/* doctor-machine.c: the doctor's findings about the machine rather than a process: each GPU's
 * state (lost, inaccessible, persistence, compute mode, ECC), leases idle long enough to name
 * (issue 24), and memory shares whose processes use more than they claim (issue 23). They read
 * the refreshed GPU set and the daemon's lease list only; `doctor` adds them to doctor_all's. */
#include "view/doctor.h"

#include <stdio.h>
#include <string.h>

struct ctx {
	struct doctor_report *r;
	const struct gpu_set *set;
	const struct leaseview *lv;
};
#define add(d, ...) doctor_report_add((d)->r, __VA_ARGS__)
static void add_gpu(struct doctor_finding *f, unsigned idx) { doctor_finding_add_id(&f->gpus, idx); }
static void add_pid(struct doctor_finding *f, unsigned pid) { doctor_finding_add_id(&f->pids, pid); }

static void check_machine(struct ctx *d)
{
	struct doctor_finding *pers = NULL, *excl = NULL;
	for (size_t i = 0; i < d->set->ngpus; i++) {
		const struct gpu *g = &d->set->gpus[i];
		struct doctor_finding *f;
		/* The device guard keeps it from this user (issue 25): leases_bind says so, no error. */
		if (!g->lost && g->inaccessible && leaseview_binding(d->lv))
			continue;
		if (g->lost || g->inaccessible) {
			f = add(d, SEV_ERROR, g->lost ? "gpu_lost" : "gpu_inaccessible",
				g->lost ? "check `dmesg` for Xid errors; the GPU needs a reset (nvidia-smi -r) or "
					  "a reboot" : "check the permissions of /dev/nvidia* and cgroup device rules",
				"GPU %u is %s: %s", g->index, g->lost ? "lost" : "inaccessible",
				g->error ? g->error : "no answer");
			add_gpu(f, g->index);
			continue;
		}
		if (gpu_has(g, GF_PERSISTENCE) && !g->persistence) {
			if (!pers)
				pers = add(d, SEV_INFO, "persistence_off",
					   "enable persistence (nvidia-persistenced, or nvidia-smi -pm 1 as root)",
					   "persistence mode is off: each CUDA start re-initialises the GPU (seconds "
					   "of delay)");
			add_gpu(pers, g->index);
		}
		if (gpu_has(g, GF_COMPUTE_MODE) && g->compute_mode == 2) {
			f = add(d, SEV_WARNING, "compute_prohibited", "nvidia-smi -i N -c DEFAULT (as root)",
				"GPU %u is in Prohibited compute mode: no CUDA process can use it", g->index);
			add_gpu(f, g->index);
		}
		if (gpu_has(g, GF_COMPUTE_MODE) && g->compute_mode == 3) {
			if (!excl)
				excl = add(d, SEV_INFO, "compute_exclusive", "nothing to do",
					   "Exclusive_Process compute mode: the driver itself refuses a second "
					   "process on these GPUs");
			add_gpu(excl, g->index);
		}
		if (gpu_has(g, GF_ECC_UNCORRECTED) && g->ecc_uncorrected) {
			f = add(d, SEV_ERROR, "ecc_errors",
				"drain it (reserved_gpus in /etc/gpuctl.conf), look at `nvidia-smi -q -d ECC,"
				"ROW_REMAPPER`, then reset the GPU or have it replaced",
				"GPU %u reported %llu uncorrectable ECC error%s since the driver loaded: jobs on it "
				"may crash or compute wrong results", g->index,
				(unsigned long long)g->ecc_uncorrected, g->ecc_uncorrected == 1 ? "" : "s");
			add_gpu(f, g->index);
		}
		if (gpu_has(g, GF_ECC) && !g->ecc) {
			f = add(d, SEV_INFO, "ecc_off", "nvidia-smi -i N -e 1 (as root; takes effect after a reset)",
				"GPU %u runs with ECC off: memory errors go undetected", g->index);
			add_gpu(f, g->index);
		}
	}
}

/* Idle leases (issue 24): a lease the daemon warned idle, or idle ten minutes: GPUs held that
 * nobody uses. The holder and the fix are named. */
#define IDLE_FINDING_SECONDS 600
static void check_idle(struct ctx *d)
{
	for (size_t i = 0; d->lv->present && i < d->lv->nleases; i++) {
		const struct lease_info *l = &d->lv->leases[i];
		long long idle = leaseview_idle_seconds(l);
		if (idle <= 0 || (idle < IDLE_FINDING_SECONDS && !l->idle_warned) || l->idle_exempt)
			continue;
		char gpus[128] = "";
		size_t k = 0;
		for (size_t u = 0; u < l->ngpus; u++)
			for (size_t g = 0; g < d->set->ngpus; g++)
				if (!strcmp(d->set->gpus[g].uuid, l->uuids[u]) && k + 8 < sizeof gpus)
					k += (size_t)snprintf(gpus + k, sizeof gpus - k, "%s%u", k ? "," : "",
							      d->set->gpus[g].index);
		char fix[256];
		snprintf(fix, sizeof fix, "if it is yours, let it go: gpuctl release --lease %s (or end "
			 "the shell, notebook or job that holds it); if not, ask %s", l->id, l->user);
		struct doctor_finding *f = add(d, SEV_WARNING, "idle_lease", fix,
			"GPU %s leased by %s (lease %s, pid %d, %s%s%s) and idle for %lld:%02lld:%02lld: "
			"no process of the lease uses it%s", gpus[0] ? gpus : "?", l->user, l->id,
			(int)l->pid, l->kind, l->name ? ", " : "", l->name ? l->name : "", idle / 3600,
			idle / 60 % 60, idle % 60, l->idle_released ? " (released for idleness)" : "");
		add_pid(f, (unsigned)l->pid);
		for (size_t u = 0; u < l->ngpus; u++)
			for (size_t g = 0; g < d->set->ngpus; g++)
				if (!strcmp(d->set->gpus[g].uuid, l->uuids[u]))
					add_gpu(f, d->set->gpus[g].index);
	}
}

/* memory shares (issue 23): a share whose processes use more of a GPU than it claims takes
 * memory other shares were promised (the daemon counts it, and under share_overuse = stop its
 * own client stops it). */
static void check_shares(struct ctx *d)
{
	for (size_t i = 0; d->lv && i < d->lv->nleases; i++) {
		const struct lease_info *l = &d->lv->leases[i];
		if (!l->mem_mib || !l->over)
			continue;
		uint64_t most = 0;
		for (size_t k = 0; k < l->nused; k++)
			most = l->used[k] > most ? l->used[k] : most;
		struct doctor_finding *f = add(d, SEV_WARNING, "share_over_claim",
			"lease a larger share (--mem), or limit the job's memory (GPUCTL_LEASE_MEM; for "
			"PyTorch gpuctl's Lease.limit_torch())",
			"lease %s of %s claims %llu MiB of a GPU, but its processes use %llu MiB", l->id,
			l->user, (unsigned long long)l->mem_mib, (unsigned long long)most);
		if (l->pid > 0)
			add_pid(f, (unsigned)l->pid);
		for (size_t k = 0; k < l->ngpus; k++)
			for (size_t g = 0; g < d->set->ngpus; g++)
				if (!strcmp(d->set->gpus[g].uuid, l->uuids[k]))
					add_gpu(f, d->set->gpus[g].index);
	}
}

void doctor_machine(struct doctor_report *r, const struct gpu_set *set, const struct leaseview *lv)
{
	struct ctx d = {.r = r, .set = set, .lv = lv};
	check_machine(&d);
	check_idle(&d);
	check_shares(&d);
}
