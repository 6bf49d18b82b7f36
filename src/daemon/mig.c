/* mig.c: MIG instances as lease units (issue 23). On a GPU with MIG enabled each instance is
 * leased on its own: `-g 0:1` (GPU 0's MIG device 1), `-g MIG-<uuid>`, or `--mig PROFILE` (any
 * free instance of that profile, e.g. 3g.71gb); the job gets CUDA_VISIBLE_DEVICES=MIG-<uuid>.
 *
 * Design: a MIG lease is a lease of its parent GPU's slot (its bit in gpus) with mig set to its
 * instance; like a memory share it leaves the slot's holder empty, and the slot keeps a mask of
 * its instances leased (mig_busy). A whole-GPU lease waits until no instance is leased (and a
 * whole-GPU head keeps new instance leases off the GPU it waits for, as it does shares); an
 * instance lease never lands on a GPU leased whole, and memory shares are not placed on a MIG
 * GPU (its memory belongs to its instances). What makes an instance busy is its own use: a
 * compute process on it (its GPU and compute instance ids), never the parent's memory, which
 * the instances' own reservations fill: the parent of instances no longer reads as "in use".
 * The instance is chosen when the request is offered, in the order of the pass (the pass marks
 * each instance it gives in the same order: mig_choose finds the same one). */
#include "daemon/daemon.h"

#include <stdio.h>
#include <string.h>

/* ---- placement (pure: alloc.h) ---- */

/* Whether migs[j] is of the profile p: its name is it, or ends with " p" ("NVIDIA H200 MIG
 * 3g.71gb"). */
static bool of_profile(const struct mig_dev *m, const char *p)
{
	size_t n = strlen(m->name), k = strlen(p);
	return !strcmp(m->name, p) || (n > k && m->name[n - k - 1] == ' ' && !strcmp(m->name + n - k, p));
}

int alloc_mig_pick(const struct alloc_gpu *g, const struct alloc_req *r)
{
	for (unsigned j = 0; g->migs && j < g->nmigs && j < 64; j++) {
		if ((g->mig_busy >> j & 1) || (!r->ignore_usage && (g->mig_inuse >> j & 1)))
			continue;
		if (r->mig_index >= 0 && (int)j != r->mig_index)
			continue;
		if (r->mig_profile && !of_profile(&g->migs[j], r->mig_profile))
			continue;
		return (int)j;
	}
	return -1;
}

const char *alloc_mig_why_not(const struct alloc_gpu *g, const struct alloc_req *r)
{
	if (g->leased)
		return "leased whole";
	if (!g->mig_mode || !g->nmigs)
		return "MIG not enabled (no instances to lease)";
	if (g->nshares)
		return "shared (memory leases on it)";
	if (alloc_mig_pick(g, r) >= 0)
		return NULL;
	if (r->mig_index >= 0)
		return g->mig_busy >> r->mig_index & 1 ? "that MIG instance is leased"
		       : "that MIG instance is in use (a process runs on it)";
	return r->mig_profile ? "no free MIG instance of that profile" : "no free MIG instance";
}

/* ---- the daemon's side ---- */

bool mig_parse(struct daemon *d, struct request *r, const struct msg *m, char *why, size_t n)
{
	const char *u = msg_get(m, "mig_uuid"), *s = msg_get(m, "mig_slot");
	const char *p = msg_get(m, "mig_profile");
	if (!u && !s && !p)
		return true;
	r->req.mig = true;
	r->req.mig_index = -1;
	if (r->req.count != 1 || r->req.mem_mib) {
		snprintf(why, n, "a MIG lease is one instance: no -n, no --mem");
		return false;
	}
	if (p) {
		snprintf(r->mig_profile, sizeof r->mig_profile, "%s", p);
		r->req.mig_profile = r->mig_profile;
	}
	unsigned long gi = 0, inst = 0;
	char tail;
	if (s && (sscanf(s, "%lu:%lu%c", &gi, &inst, &tail) != 2 || inst >= 64)) {
		snprintf(why, n, "mig_slot is GPU:INSTANCE (e.g. 0:1), not %.40s", s);
		return false;
	}
	for (size_t k = 0; (u || s) && k < d->nslots; k++) {
		const struct gpu *g = &d->set->gpus[k];
		for (size_t j = 0; j < g->nmigs; j++)
			if ((u && !strcmp(g->migs[j].uuid, u)) ||
			    (s && g->index == gi && g->migs[j].slot == inst)) {
				r->req.cand = 1ULL << k;
				r->req.mig_index = (int)j;
			}
	}
	if ((u || s) && r->req.mig_index < 0) {
		snprintf(why, n, "no MIG instance %.100s here (`gpuctl status` lists them)", u ? u : s);
		return false;
	}
	return true;
}

/* The instances of slot k leased (share_account keeps it) or offered to waiters other than
 * skip. */
static uint64_t busy_on(const struct daemon *d, size_t k, const struct request *skip)
{
	uint64_t busy = d->slots[k].mig_busy;
	for (size_t i = 0; i < d->nreqs; i++) {
		const struct request *o = d->reqs[i];
		if (o != skip && o->state == R_OFFERED && o->req.mig && (o->offer >> k & 1) &&
		    o->offer_mig >= 0)
			busy |= 1ULL << o->offer_mig;
	}
	return busy;
}

void mig_fill(const struct daemon *d, struct alloc_gpu *g)
{
	for (size_t k = 0; k < d->nslots; k++) {
		const struct gpu *gp = &d->set->gpus[k];
		g[k].mig_mode = gpu_has(gp, GF_MIG_MODE) && gp->mig_mode;
		g[k].nmigs = (unsigned)gp->nmigs;
		g[k].migs = gp->migs;
		g[k].mig_busy = busy_on(d, k, NULL);
		g[k].mig_inuse = d->slots[k].mig_inuse;
		if (g[k].mig_mode && g[k].nmigs) {
			/* The instances' own use decides for them; for a whole-GPU request, none
			 * leased, the parent is free as a whole when none runs anything. */
			g[k].used_mib = 0;
			g[k].procs = (unsigned)__builtin_popcountll(g[k].mig_inuse);
		}
	}
}

int mig_choose(const struct daemon *d, const struct request *r, uint64_t mask)
{
	for (size_t k = 0; k < d->nslots; k++)
		if (mask >> k & 1) {
			struct alloc_gpu g = {0};
			const struct gpu *gp = &d->set->gpus[k];
			g.nmigs = (unsigned)gp->nmigs;
			g.migs = gp->migs;
			g.mig_busy = busy_on(d, k, r);
			g.mig_inuse = d->slots[k].mig_inuse;
			return alloc_mig_pick(&g, &r->req);
		}
	return -1;
}

void mig_usage(struct daemon *d)
{
	for (size_t k = 0; k < d->nslots; k++) {
		const struct gpu *g = &d->set->gpus[k];
		d->slots[k].mig_inuse = 0;
		for (size_t p = 0; p < g->nprocs; p++)
			for (size_t j = 0; j < g->nmigs && j < 64; j++)
				if ((g->procs[p].type & PROC_COMPUTE) && g->procs[p].gi == g->migs[j].gi &&
				    g->procs[p].ci == g->migs[j].ci && g->migs[j].gi != NO_INSTANCE)
					d->slots[k].mig_inuse |= 1ULL << j;
	}
}

const char *mig_uuid_of(const struct daemon *d, const struct lease *l)
{
	if (l->mig > 0 && l->mig_uuid[0])
		return l->mig_uuid;
	for (size_t k = 0; l->mig > 0 && k < d->nslots; k++)
		if ((l->gpus >> k & 1) && (size_t)(l->mig - 1) < d->set->gpus[k].nmigs)
			return d->set->gpus[k].migs[l->mig - 1].uuid;
	return NULL;
}

/* A record names its instance by UUID and position: the UUID decides. An administrator may
 * destroy and recreate instances while no daemon runs (nvidia-smi mig -dci/-dgi/-cgi): the
 * position may then name another instance, on which another user's lease would be granted
 * beside the job that still runs on its own (CUDA_VISIBLE_DEVICES=MIG-<uuid>). A record from a
 * daemon before UUIDs were kept has only the position, which is trusted as before. */
bool mig_recover(const struct daemon *d, struct lease *l)
{
	if (l->mig <= 0 && !l->mig_uuid[0])
		return true;
	for (size_t k = 0; k < d->nslots; k++) {
		if (!(l->gpus >> k & 1))
			continue;
		const struct gpu *g = &d->set->gpus[k];
		if (!l->mig_uuid[0]) {
			if ((size_t)(l->mig - 1) >= g->nmigs)
				return false;
			snprintf(l->mig_uuid, sizeof l->mig_uuid, "%s", g->migs[l->mig - 1].uuid);
			return true;
		}
		for (size_t j = 0; j < g->nmigs && j < 64; j++)
			if (!strcmp(g->migs[j].uuid, l->mig_uuid)) {
				l->mig = (int)j + 1;
				return true;
			}
	}
	return false;
}
