/* alloc.c: the free-GPU rule, preference order, and the queue with a reservation for its head,
 * in fair-share or arrival order. */
#include "daemon/alloc.h"
#include "base/util.h"

#include <stdlib.h>

#define NONE SIZE_MAX

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

/* Up to r->count GPUs of avail that are free for r, best first; *got says how many. */
static uint64_t alloc_best(const struct alloc_gpu *g, size_t n, const struct alloc_req *r,
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

/* The fair order as a merge of each user's requests (in arrival order): a min-heap of users
 * keyed by (GPUs held, when last served, index of their next request), so a pass costs
 * O(n log users). */
struct merge {
	unsigned *held;              /* per user, plus what was charged */
	uint64_t *served, clock;     /* per user, when last served; each charge serves anew */
	size_t *head;                /* per user: its next request, or NONE */
	size_t *next;                /* per request: the same user's next one, or NONE */
	size_t *heap, nheap;
};

static bool before(const struct merge *m, size_t u, size_t v)
{
	if (m->held[u] != m->held[v])
		return m->held[u] < m->held[v];
	if (m->served[u] != m->served[v])
		return m->served[u] < m->served[v];
	return m->head[u] < m->head[v];
}

static void sift_up(struct merge *m, size_t k)
{
	while (k > 0 && before(m, m->heap[k], m->heap[(k - 1) / 2])) {
		size_t t = m->heap[k];
		m->heap[k] = m->heap[(k - 1) / 2];
		m->heap[(k - 1) / 2] = t;
		k = (k - 1) / 2;
	}
}

static void sift_down(struct merge *m, size_t k)
{
	for (;;) {
		size_t l = 2 * k + 1, r = l + 1, best = k;
		if (l < m->nheap && before(m, m->heap[l], m->heap[best]))
			best = l;
		if (r < m->nheap && before(m, m->heap[r], m->heap[best]))
			best = r;
		if (best == k)
			return;
		size_t t = m->heap[k];
		m->heap[k] = m->heap[best];
		m->heap[best] = t;
		k = best;
	}
}

static size_t user_of(const struct alloc_req *r, const struct alloc_queue *q)
{
	return r->user < q->nusers ? r->user : 0;
}

/* Request `first` (NONE: none) was taken before the merge: it is left out, its user charged add. */
static void merge_init(struct merge *m, const struct alloc_req *reqs, size_t nreqs,
		       const struct alloc_queue *q, size_t first, unsigned add)
{
	size_t nu = q->nusers ? q->nusers : 1;
	m->held = xmalloc(nu * sizeof *m->held);
	m->served = xmalloc(nu * sizeof *m->served);
	m->clock = 0;
	m->head = xmalloc(nu * sizeof *m->head);
	m->next = xmalloc((nreqs ? nreqs : 1) * sizeof *m->next);
	m->heap = xmalloc(nu * sizeof *m->heap);
	m->nheap = 0;
	for (size_t u = 0; u < nu; u++) {
		m->held[u] = q->held && u < q->nusers ? q->held[u] : 0;
		m->served[u] = q->served && u < q->nusers ? q->served[u] : 0;
		if (m->served[u] > m->clock)
			m->clock = m->served[u];
		m->head[u] = NONE;
	}
	if (first != NONE && add) {
		m->held[user_of(&reqs[first], q)] += add;
		m->served[user_of(&reqs[first], q)] = ++m->clock;
	}
	for (size_t i = nreqs; i-- > 0;) {
		if (i == first)
			continue;
		size_t u = reqs[i].user < nu ? reqs[i].user : 0;
		m->next[i] = m->head[u];
		m->head[u] = i;
	}
	for (size_t u = 0; u < nu; u++)
		if (m->head[u] != NONE) {
			m->heap[m->nheap++] = u;
			sift_up(m, m->nheap - 1);
		}
}

/* The next request in the fair order; merge_charge must follow before the next call. */
static size_t merge_pop(struct merge *m)
{
	size_t u = m->heap[0], i = m->head[u];
	m->head[u] = m->next[i];
	m->heap[0] = m->heap[--m->nheap];
	sift_down(m, 0);
	return i;
}

/* User u of the request just popped: charged `add` GPUs, and back in line if it has more. */
static void merge_charge(struct merge *m, size_t u, unsigned add)
{
	m->held[u] += add;
	if (add)
		m->served[u] = ++m->clock;
	if (m->head[u] != NONE) {
		m->heap[m->nheap++] = u;
		sift_up(m, m->nheap - 1);
	}
}

static void merge_free(struct merge *m)
{
	free(m->held);
	free(m->served);
	free(m->head);
	free(m->next);
	free(m->heap);
}

/* The request marked head that may run, or NONE. */
static size_t first_of(const struct alloc_req *reqs, size_t nreqs)
{
	for (size_t i = 0; i < nreqs; i++)
		if (reqs[i].head && reqs[i].queued && !reqs[i].capped && !reqs[i].skip)
			return i;
	return NONE;
}

void alloc_order(const struct alloc_req *reqs, size_t nreqs, const struct alloc_queue *q,
		 size_t *order)
{
	size_t first = first_of(reqs, nreqs), k = 0;
	if (first != NONE)
		order[k++] = first;
	if (q->order == QUEUE_FIFO) {
		for (size_t i = 0; i < nreqs; i++)
			if (i != first)
				order[k++] = i;
		return;
	}
	struct merge m;
	merge_init(&m, reqs, nreqs, q, first, first != NONE ? reqs[first].count : 0);
	for (; k < nreqs; k++) {
		size_t i = merge_pop(&m);
		order[k] = i;
		merge_charge(&m, user_of(&reqs[i], q), reqs[i].count);
	}
	merge_free(&m);
}

/* Request i's turn in the pass: it takes its GPUs, or, the first that cannot, keeps those free
 * it could use. */
static void consider(const struct alloc_gpu *g, size_t n, const struct alloc_req *reqs, size_t i,
		     const struct alloc_policy *p, uint64_t *avail, uint64_t *picks,
		     uint64_t *reserved, size_t *head)
{
	picks[i] = alloc_pick(g, n, &reqs[i], p, *avail);
	if (picks[i]) {
		*avail &= ~picks[i];
	} else if (*head == NONE && !reqs[i].capped && !reqs[i].skip && reqs[i].queued) {
		unsigned got;
		*reserved = alloc_best(g, n, &reqs[i], p, *avail, &got);
		*avail &= ~*reserved;
		*head = i;
	}
}

uint64_t alloc_schedule(const struct alloc_gpu *g, size_t n, const struct alloc_req *reqs,
			size_t nreqs, const struct alloc_policy *p, uint64_t avail,
			const struct alloc_queue *q, uint64_t *picks, size_t *order, size_t *head)
{
	uint64_t reserved = 0;
	bool fair = q->order == QUEUE_FAIR;
	size_t first = first_of(reqs, nreqs), k = 0;
	*head = NONE;
	if (first != NONE) {
		order[k++] = first;
		consider(g, n, reqs, first, p, &avail, picks, &reserved, head);
	}
	struct merge m;
	if (fair)
		merge_init(&m, reqs, nreqs, q, first,
			   first != NONE && picks[first] ? reqs[first].count : 0);
	for (size_t s = 0; k < nreqs; s++) {
		size_t i = fair ? merge_pop(&m) : s;
		if (i == first)
			continue;
		order[k++] = i;
		consider(g, n, reqs, i, p, &avail, picks, &reserved, head);
		if (fair)
			merge_charge(&m, user_of(&reqs[i], q), picks[i] ? reqs[i].count : 0);
	}
	if (fair)
		merge_free(&m);
	return reserved;
}
