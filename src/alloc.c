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

static const struct alloc_gpu *cmp_g;
static enum prefer cmp_prefer;

static int better(const void *a, const void *b)
{
	const struct alloc_gpu *x = &cmp_g[*(const size_t *)a], *y = &cmp_g[*(const size_t *)b];
	if (cmp_prefer == PREFER_FREE_MEMORY && x->free_mib != y->free_mib)
		return x->free_mib > y->free_mib ? -1 : 1;
	if (cmp_prefer == PREFER_UTIL && x->util != y->util)
		return x->util < y->util ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Up to r->count free GPUs of avail, best first. */
static uint64_t best(const struct alloc_gpu *g, size_t n, const struct alloc_req *r,
		     const struct alloc_policy *p, uint64_t avail, unsigned *got)
{
	size_t order[GPU_MAX], k = 0;
	for (size_t i = 0; i < n && i < GPU_MAX; i++)
		if ((avail & r->cand) >> i & 1 && !alloc_why_not(&g[i], r, p))
			order[k++] = i;
	cmp_g = g;
	cmp_prefer = r->prefer;
	qsort(order, k, sizeof *order, better);
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
	if (r->capped)
		return 0;
	uint64_t m = best(g, n, r, p, avail, &got);
	return got == r->count ? m : 0;
}

uint64_t alloc_queue(const struct alloc_gpu *g, size_t n, const struct alloc_req *reqs, size_t nreqs,
		     size_t me, const struct alloc_policy *p, bool strict)
{
	uint64_t avail = n >= 64 ? ~0ULL : (1ULL << n) - 1;
	bool head_reserved = false;
	for (size_t i = 0; i < nreqs && i <= me; i++) {
		uint64_t pick = alloc_pick(g, n, &reqs[i], p, avail);
		if (i == me)
			return pick;
		if (pick && strict)
			return 0;
		if (pick) {
			avail &= ~pick;
		} else if (!head_reserved && !reqs[i].capped) {
			unsigned got;
			avail &= ~best(g, n, &reqs[i], p, avail, &got);
			head_reserved = true;
		}
	}
	return 0;
}
