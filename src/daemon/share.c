/* share.c: memory shares (issue 23): leases that claim SIZE of a GPU's memory rather than the
 * whole GPU (`--mem SIZE`), several on one GPU.
 *
 * Design:
 * - A share is a lease like any other (its FIFO is the lease, it ends with the job), with
 *   mem_mib set. Its GPUs' holder stays NULL: the slot counts its shares (nshares) and their
 *   claims (claimed_mib) instead. Whole-GPU leases and shares never mix on a GPU, either way:
 *   a GPU with a share is not free for a whole-GPU request (alloc.c), a leased one takes no
 *   share. Each share gets a lock file of its own per GPU (lease.c), so shares do not lock one
 *   another out, and the job holds the same descriptors as a whole-GPU lease's.
 * - Room: a share fits on a GPU when its total memory, less the claims of the shares there
 *   (each its claim, or what its processes use when that is more: a share over its claim takes
 *   the room it uses), less the memory used by processes that belong to no share (anything on
 *   the GPU outside gpuctl's shares: another user's stray, the driver's reservation), less
 *   [daemon] share_margin, leaves its SIZE. The use outside is the GPU's used memory less what
 *   the shares' processes use, so it needs no per-process figure from the driver to be right.
 * - Attribution: a process on a GPU with shares belongs to the share on that GPU whose holder
 *   (the job `run` or the runner started, the `env` shell) is it or one of its ancestors
 *   (/proc/PID/stat, at most MAX_DEPTH parents up). One that cannot be followed (gone, hidden
 *   by hidepid) belongs to no share: it counts as used outside, never as nobody's.
 * - Placement is best fit by default (the least room left first: whole GPUs stay free for
 *   whole-GPU jobs); --prefer free-memory spreads (the most room first), index and util as for
 *   whole GPUs. A whole-GPU head of the queue keeps GPUs with shares from new shares (drain),
 *   for head_reserve at most, so it is not starved by shares that keep coming.
 * - Fairness: a share counts as one GPU (per GPU it claims on) toward max_gpus_per_user and
 *   the fair order, as a whole GPU does: the cap bounds how many leases a user holds, and a user
 *   packing shares cannot push ahead of one holding whole GPUs. */
#include "daemon/daemon.h"
#include "machine/pid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64               /* parents followed up from a process to its share's holder */

/* ---- placement (pure: alloc.h) ---- */

int64_t alloc_share_room(const struct alloc_gpu *g, const struct alloc_policy *p)
{
	return (int64_t)g->total_mib - (int64_t)g->claimed_mib - (int64_t)g->outside_mib -
	       (int64_t)p->share_margin_mib;
}

const char *alloc_share_why_not(const struct alloc_gpu *g, const struct alloc_req *r,
				const struct alloc_policy *p)
{
	if (g->leased)
		return "leased whole";
	if (g->mig_mode)
		return "MIG enabled: lease one of its instances (--mig PROFILE, -g GPU:INSTANCE)";
	if (!g->total_valid || !g->mem_valid)
		return "memory unknown (a share needs the GPU's memory)";
	if (alloc_share_room(g, p) < (int64_t)r->mem_mib)
		return "not enough memory left to claim";
	if (r->min_free_mib && g->free_mib < r->min_free_mib)
		return "not enough free memory";
	return NULL;
}

bool alloc_share_better(const struct alloc_gpu *x, const struct alloc_gpu *y,
			const struct alloc_req *r, const struct alloc_policy *p)
{
	int64_t rx = alloc_share_room(x, p), ry = alloc_share_room(y, p);
	if (r->pack && rx != ry)
		return rx < ry;
	if (!r->pack && r->prefer == PREFER_FREE_MEMORY && rx != ry)
		return rx > ry;
	if (!r->pack && r->prefer == PREFER_UTIL && x->util != y->util)
		return x->util < y->util;
	return x->index < y->index;
}

/* ---- the daemon's accounting ---- */

bool share_mps_init(struct daemon *d, struct gpu_error *err)
{
	if (!d->conf.share_mps)
		return true;
	if (!gpu_set_select(d->set, d->conf.share_mps, err)) {
		char why[sizeof err->msg];
		snprintf(why, sizeof why, "%s", err->msg);
		err->code = EXIT_USAGE;
		snprintf(err->msg, sizeof err->msg, "share_mps: %.3000s", why);
		return false;
	}
	for (size_t i = 0; i < d->nslots; i++) {
		d->slots[i].mps = d->set->gpus[i].selected;
		d->set->gpus[i].selected = true;
	}
	return true;
}

void share_account(struct daemon *d)
{
	for (size_t i = 0; i < d->nslots; i++) {
		d->slots[i].nshares = 0;
		d->slots[i].claimed_mib = 0;
		d->slots[i].mig_busy = 0;
	}
	for (size_t k = 0; k < d->nleases; k++) {
		struct lease *l = d->leases[k];
		for (size_t i = 0; l->mig > 0 && l->mig <= 64 && i < d->nslots; i++)
			if (l->gpus >> i & 1) /* MIG instances (mig.c) */
				d->slots[i].mig_busy |= 1ULL << (l->mig - 1);
		if (!l->mem_mib)
			continue;
		l->over = false;
		for (size_t i = 0; i < d->nslots; i++) {
			if (!(l->gpus >> i & 1))
				continue;
			uint64_t used = l->used ? l->used[i] : 0;
			d->slots[i].nshares++;
			d->slots[i].claimed_mib += used > l->mem_mib ? used : l->mem_mib;
			l->over |= used > l->mem_mib;
		}
	}
}

/* The share on slot i whose holder is pid or an ancestor of it; NULL: none. A holder's pid
 * counts only while it names that very process (its start time), a bound shell's only while it
 * runs as the lease's user: a pid reused by someone else's process is nobody's share. */
static struct lease *share_of(struct daemon *d, size_t i, unsigned pid)
{
	for (int depth = 0; pid > 1 && depth < MAX_DEPTH; depth++) {
		struct pid_stat st;
		if (!pid_stat(pid, &st))
			return NULL;
		for (size_t k = 0; k < d->nleases; k++) {
			struct lease *l = d->leases[k];
			if (!l->mem_mib || !(l->gpus >> i & 1))
				continue;
			if ((unsigned)l->pid == pid && (!l->start || l->start == st.start))
				return l;
			if (l->bound > 0 && (unsigned)l->bound == pid && pid_runs_as(pid, l->uid) &&
			    (!l->bound_start || l->bound_start == st.start))
				return l;
		}
		if (st.ppid <= 0)
			return NULL;
		pid = (unsigned)st.ppid;
	}
	return NULL;
}

void share_usage(struct daemon *d)
{
	for (size_t k = 0; k < d->nleases; k++) {
		struct lease *l = d->leases[k];
		if (l->mem_mib && l->used)
			memset(l->used, 0, GPU_MAX * sizeof *l->used);
	}
	for (size_t i = 0; i < d->nslots; i++) {
		struct slot *s = &d->slots[i];
		const struct gpu *g = &d->set->gpus[i];
		uint64_t total_used = gpu_has(g, GF_MEM_TOTAL) && gpu_has(g, GF_MEM_FREE) &&
				      g->mem_total >= g->mem_free ? (g->mem_total - g->mem_free) >> 20 :
				      g->mem_used >> 20;
		uint64_t mine = 0;
		s->outside_mib = 0;
		if (s->nshares)
			for (size_t j = 0; j < g->nprocs; j++) {
				const struct gpu_proc *p = &g->procs[j];
				struct lease *l;
				if (!(p->type & PROC_COMPUTE) || !p->mem_valid ||
				    !(l = share_of(d, i, p->pid)))
					continue;
				if (!l->used)
					l->used = xcalloc(GPU_MAX, sizeof *l->used);
				l->used[i] += p->used_mem >> 20;
				mine += p->used_mem >> 20;
			}
		s->outside_mib = total_used > mine ? total_used - mine : 0;
	}
	share_account(d);
}

void share_fill(const struct daemon *d, struct alloc_gpu *g)
{
	for (size_t i = 0; i < d->nslots; i++) {
		const struct gpu *gp = &d->set->gpus[i];
		g[i].total_valid = gpu_has(gp, GF_MEM_TOTAL);
		g[i].total_mib = gp->mem_total >> 20;
		g[i].nshares = d->slots[i].nshares;
		g[i].claimed_mib = d->slots[i].claimed_mib;
		g[i].outside_mib = d->slots[i].outside_mib; /* share_usage, at each refresh */
	}
	/* Shares offered and not yet taken claim their room already. */
	for (size_t k = 0; k < d->nreqs; k++) {
		const struct request *r = d->reqs[k];
		if (r->state != R_OFFERED || !r->req.mem_mib || r->dry)
			continue;
		for (size_t i = 0; i < d->nslots; i++)
			if (r->offer >> i & 1) {
				g[i].nshares++;
				g[i].claimed_mib += r->req.mem_mib;
			}
	}
}
