/* alloc.c: the free-GPU rule, preference order, and the queue with a reservation for its head,
 * in fair-share or arrival order. */
#include "daemon/alloc.h"
#include "daemon/place.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

#define NONE SIZE_MAX

const char *alloc_why_not(const struct alloc_gpu *g, const struct alloc_req *r,
			  const struct alloc_policy *p)
{
	if (g->reserved)
		return "reserved by the administrator";
	if (r->mig) /* a MIG instance (mig.c) */
		return alloc_mig_why_not(g, r);
	if (r->mem_mib) /* a share (share.c) */
		return alloc_share_why_not(g, r, p);
	if (g->leased)
		return "leased";
	if (g->nshares && !r->drain)
		return "shared (memory leases on it)";
	if (g->mig_busy && !r->drain)
		return "MIG instances of it are leased";
	if (r->min_free_mib && (!g->mem_valid || g->free_mib < r->min_free_mib))
		return g->mem_valid ? "not enough free memory" : "free memory unknown";
	if (r->ignore_usage || (r->drain && (g->nshares || g->mig_busy)))
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
	/* (topology's order for single GPUs, and where no topology is known, is free memory) */
	if ((prefer == PREFER_FREE_MEMORY || prefer == PREFER_TOPOLOGY) && x->free_mib != y->free_mib)
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
		for (; j > 0 && (r->mem_mib ? alloc_share_better(&g[i], &g[order[j - 1]], r, p)
					   : better(&g[i], &g[order[j - 1]], r->prefer)); j--)
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
	/* topology, preferred GPUs: place.c (issue 26), for whole GPUs (a share packs best fit, a
	 * MIG instance is its own choice); else the order alone, as before */
	if (r->place && !r->mem_mib && !r->mig &&
	    (r->place->has_pref || (r->place->topo && r->prefer == PREFER_TOPOLOGY))) {
		uint64_t free = 0;
		for (size_t i = 0; i < n && i < GPU_MAX; i++)
			if (((avail & r->cand) >> i & 1) && !alloc_why_not(&g[i], r, p))
				free |= 1ULL << i;
		return place_pick(g, n, r, free);
	}
	uint64_t m = alloc_best(g, n, r, p, avail, &got);
	return got == r->count ? m : 0;
}

/* The fair order as a merge of each user's requests (in arrival order): a min-heap of users
 * keyed by (GPUs held, when last served, index of their next request), so a pass costs
 * O(n log users). */
struct merge {
	unsigned *held;              /* per user, plus what was charged */
	uint64_t *served, clock;     /* per user, when last served; each charge serves anew */
	const double *past;          /* per user, past use (issue 24); NULL: not counted */
	size_t *head;                /* per user: its next request, or NONE */
	size_t *next;                /* per request: the same user's next one, or NONE */
	size_t *heap, nheap;
};

static bool before(const struct merge *m, size_t u, size_t v)
{
	if (m->held[u] != m->held[v])
		return m->held[u] < m->held[v];
	if (m->past && m->past[u] != m->past[v]) /* fair share by past use (issue 24) */
		return m->past[u] < m->past[v];
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

/* The requests first[0..nfirst) were taken before the merge: they are left out, their users
 * charged add[k]. */
static void merge_init(struct merge *m, const struct alloc_req *reqs, size_t nreqs,
		       const struct alloc_queue *q, const size_t *first, size_t nfirst,
		       const unsigned *add)
{
	size_t nu = q->nusers ? q->nusers : 1;
	m->held = xmalloc(nu * sizeof *m->held);
	m->served = xmalloc(nu * sizeof *m->served);
	m->clock = 0;
	m->head = xmalloc(nu * sizeof *m->head);
	m->next = xmalloc((nreqs ? nreqs : 1) * sizeof *m->next);
	m->heap = xmalloc(nu * sizeof *m->heap);
	m->nheap = 0;
	m->past = q->past && q->nusers ? q->past : NULL;
	for (size_t u = 0; u < nu; u++) {
		m->held[u] = q->held && u < q->nusers ? q->held[u] : 0;
		m->served[u] = q->served && u < q->nusers ? q->served[u] : 0;
		if (m->served[u] > m->clock)
			m->clock = m->served[u];
		m->head[u] = NONE;
	}
	for (size_t k = 0; k < nfirst; k++)
		if (add[k]) {
			m->held[user_of(&reqs[first[k]], q)] += add[k];
			m->served[user_of(&reqs[first[k]], q)] = ++m->clock;
		}
	size_t f = nfirst;
	for (size_t i = nreqs; i-- > 0;) {
		if (f > 0 && first[f - 1] == i) {
			f--;
			continue;
		}
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

/* The requests marked head that may run, in arrival order, into out (room for nreqs): the
 * last pass's head, and the requests that waited on their own user's leases (one a user). */
static size_t heads_of(const struct alloc_req *reqs, size_t nreqs, size_t *out)
{
	size_t k = 0;
	for (size_t i = 0; i < nreqs; i++)
		if (reqs[i].head && reqs[i].queued && !reqs[i].capped && !reqs[i].skip &&
		    !reqs[i].no_reserve)
			out[k++] = i;
	return k;
}

void alloc_order(const struct alloc_req *reqs, size_t nreqs, const struct alloc_queue *q,
		 size_t *order)
{
	size_t *first = xmalloc((nreqs ? nreqs : 1) * sizeof *first);
	unsigned *add = xmalloc((nreqs ? nreqs : 1) * sizeof *add);
	size_t nfirst = heads_of(reqs, nreqs, first), k = 0;
	for (; k < nfirst; k++) {
		order[k] = first[k];
		add[k] = reqs[first[k]].count;
	}
	if (q->order == QUEUE_FIFO) {
		for (size_t i = 0, f = 0; i < nreqs; i++)
			if (f < nfirst && first[f] == i)
				f++;
			else
				order[k++] = i;
	} else {
		struct merge m;
		merge_init(&m, reqs, nreqs, q, first, nfirst, add);
		for (; k < nreqs; k++) {
			size_t i = merge_pop(&m);
			order[k] = i;
			merge_charge(&m, user_of(&reqs[i], q), reqs[i].count);
		}
		merge_free(&m);
	}
	free(first);
	free(add);
}

/* One pass's reservations: the head's, for everyone, and per user the one of a request that
 * waits on that user's own leases (own_wait), which only that user's later waiting requests
 * respect. */
struct keep {
	uint64_t all;                /* the head's */
	size_t head;
	uint64_t *mine;              /* per user */
	bool *own;                   /* per user: a request of its waits on its own leases */
	size_t *own_head;            /* per user: that request, or NONE */
	size_t nu;
};

/* Request i's turn in the pass: it takes its GPUs, or, the first that cannot, keeps those free
 * it could use. */
static void consider(struct alloc_gpu *g, size_t n, const struct alloc_req *reqs, size_t i,
		     const struct alloc_policy *p, uint64_t *avail, uint64_t *picks,
		     struct keep *kp, const struct alloc_queue *q)
{
	size_t u = user_of(&reqs[i], q);
	/* (a request that does not wait is its user's "now": its own queue order does not bind it) */
	picks[i] = alloc_pick(g, n, &reqs[i], p, *avail & ~(reqs[i].queued ? kp->mine[u] : 0));
	if (picks[i] && reqs[i].mig) {
		/* A MIG instance leaves the GPU's other instances to others. */
		for (size_t k = 0; k < n && k < GPU_MAX; k++)
			if (picks[i] >> k & 1) {
				int j = alloc_mig_pick(&g[k], &reqs[i]);
				if (j >= 0)
					g[k].mig_busy |= 1ULL << j;
			}
		return;
	}
	if (picks[i] && reqs[i].mem_mib) {
		/* A share leaves its GPUs to others, less its claim (memory shares, issue 23). */
		for (size_t k = 0; k < n && k < GPU_MAX; k++)
			if (picks[i] >> k & 1) {
				g[k].claimed_mib += reqs[i].mem_mib;
				g[k].nshares++;
			}
		return;
	}
	if (picks[i]) {
		*avail &= ~picks[i];
		return;
	}
	if (reqs[i].capped || reqs[i].skip || reqs[i].no_reserve || !reqs[i].queued)
		return;
	unsigned got;
	if (reqs[i].own_wait) {
		if (kp->own_head[u] == NONE) {
			kp->mine[u] = alloc_best(g, n, &reqs[i], p, *avail, &got);
			kp->own_head[u] = i;
		}
		kp->own[u] = true;
	} else if (kp->head == NONE && !kp->own[u]) {
		/* (a request behind its user's own_wait one waits on it: it keeps nothing back) */
		/* A whole-GPU head keeps GPUs with shares too, so none lands there until it runs. */
		struct alloc_req x = reqs[i];
		x.drain = !x.mem_mib && !x.mig;
		kp->all = alloc_best(g, n, &x, p, *avail, &got);
		*avail &= ~kp->all;
		kp->head = i;
	}
}

uint64_t alloc_schedule(const struct alloc_gpu *g, size_t n, const struct alloc_req *reqs,
			size_t nreqs, const struct alloc_policy *p, uint64_t avail,
			const struct alloc_queue *q, uint64_t *picks, size_t *order, size_t *head)
{
	bool fair = q->order != QUEUE_FIFO; /* fair, or fair-held (issue 24) */
	size_t nu = q->nusers ? q->nusers : 1;
	struct keep kp = {.head = NONE, .nu = nu, .mine = xcalloc(nu, sizeof *kp.mine),
			  .own = xcalloc(nu, sizeof *kp.own),
			  .own_head = xmalloc(nu * sizeof *kp.own_head)};
	for (size_t u = 0; u < nu; u++)
		kp.own_head[u] = NONE;
	size_t *first = xmalloc((nreqs ? nreqs : 1) * sizeof *first);
	unsigned *add = xmalloc((nreqs ? nreqs : 1) * sizeof *add);
	size_t nfirst = heads_of(reqs, nreqs, first), k = 0;
	struct alloc_gpu *gl = xmalloc((n ? n : 1) * sizeof *gl); /* the pass's shares added */
	memcpy(gl, g, n * sizeof *gl);
	for (; k < nfirst; k++) {
		order[k] = first[k];
		consider(gl, n, reqs, first[k], p, &avail, picks, &kp, q);
		add[k] = picks[first[k]] ? reqs[first[k]].count : 0;
	}
	struct merge m;
	if (fair)
		merge_init(&m, reqs, nreqs, q, first, nfirst, add);
	for (size_t s = 0, f = 0; k < nreqs; s++) {
		size_t i = fair ? merge_pop(&m) : s;
		if (!fair && f < nfirst && first[f] == i) {
			f++;
			continue;
		}
		order[k++] = i;
		consider(gl, n, reqs, i, p, &avail, picks, &kp, q);
		if (fair)
			merge_charge(&m, user_of(&reqs[i], q), picks[i] ? reqs[i].count : 0);
	}
	if (fair)
		merge_free(&m);
	*head = kp.head;
	for (size_t u = 0; q->own_heads && u < q->nusers; u++)
		q->own_heads[u] = kp.own_head[u];
	free(gl);
	free(kp.mine);
	free(kp.own);
	free(kp.own_head);
	free(first);
	free(add);
	return kp.all;
}
