/* alloc.c: the free-GPU rule, preference order, and the queue with a reservation for its head. */
#include "alloc.h"

#include <stdlib.h>

const char *alloc_why_not(const struct alloc_gpu *g, const struct alloc_req *r,
			  const struct alloc_policy *p)
{
	if (g->reserved)
		return "reserved by the administrator";
	if (g->leased)
		return "leased";
	if (r->min_free_mib && (!g->mem_valid || g->free_mib < r->min_free_mib))
		return g->mem_valid ? "not enough free memory" : "free memory unknown";
	if (r->ignore_usage)
		return NULL;
	/* A value the driver cannot give (utilisation under MIG) does not make a GPU busy. */
	if (g->mem_valid && g->used_mib > p->max_used_mib)
		return "memory in use";
	int max_util = r->max_util >= 0 ? r->max_util : p->max_util;
	if (g->util_valid && (int)g->util > max_util)
		return "busy (utilisation)";
	if (g->procs && !p->allow_procs)
		return "processes without a lease";
	return NULL;
}

/* x before y in r's preference order (ties by index). */
static bool better(const struct alloc_gpu *x, const struct alloc_gpu *y, enum prefer prefer)
{
	if (prefer == PREFER_FREE_MEMORY && x->free_mib != y->free_mib)
		return x->free_mib > y->free_mib;
	if (prefer == PREFER_UTIL && x->util != y->util)
		return x->util < y->util;
	return x->index < y->index;
}

uint64_t alloc_best(const struct alloc_gpu *g, size_t n, const struct alloc_req *r,
		    const struct alloc_policy *p, uint64_t avail, unsigned *got)
{
	size_t order[GPU_MAX], k = 0;
	for (size_t i = 0; i < n && i < GPU_MAX; i++) {
		if (!((avail & r->cand) >> i & 1) || alloc_why_not(&g[i], r, p))
			continue;
		size_t j = k++;
		for (; j > 0 && better(&g[i], &g[order[j - 1]], r->prefer); j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	uint64_t mask = 0;
	*got = 0;
	for (size_t i = 0; i < k && *got < r->count; i++, (*got)++)
		mask |= 1ULL << order[i];
	return mask;
}

uint64_t alloc_pick(const struct alloc_gpu *g, size_t n, const struct alloc_req *r,
		    const struct alloc_policy *p, uint64_t avail)
{
	unsigned got;
	if (r->capped || r->skip)
		return 0;
	uint64_t m = alloc_best(g, n, r, p, avail, &got);
	return got == r->count ? m : 0;
}

uint64_t alloc_schedule(const struct alloc_gpu *g, size_t n, const struct alloc_req *reqs,
			size_t nreqs, const struct alloc_policy *p, uint64_t avail, uint64_t *picks)
{
	uint64_t reserved = 0;
	bool head = false;
	for (size_t i = 0; i < nreqs; i++) {
		picks[i] = alloc_pick(g, n, &reqs[i], p, avail);
		if (picks[i]) {
			avail &= ~picks[i];
		} else if (!head && !reqs[i].capped && !reqs[i].skip && reqs[i].queued) {
			unsigned got;
			reserved = alloc_best(g, n, &reqs[i], p, avail, &got);
			avail &= ~reserved;
			head = true;
		}
	}
	return reserved;
}
