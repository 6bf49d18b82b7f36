/* alloc.h: which GPUs a request gets: the free-GPU rule and the queue (fair share across users,
 * or first come first served), as a pure function of the machine's state and the requests in
 * arrival order (no I/O: unit-tested directly). */
#ifndef GPUCTL_ALLOC_H
#define GPUCTL_ALLOC_H

#include "config/config.h"
#include "machine/gpu.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct place;

struct alloc_gpu {
	unsigned index;              /* nvidia-smi index, for prefer=index and ties */
	bool leased;                 /* a lease holds it */
	bool reserved;               /* the admin keeps it out of leasing */
	bool mem_valid, util_valid;
	uint64_t used_mib, free_mib;
	unsigned util;
	unsigned procs;              /* compute processes on it (none of them leased it) */
	/* memory shares (issue 23; share.c): a GPU with shares is never leased whole, a leased one
	 * never shared */
	bool total_valid;
	uint64_t total_mib;
	unsigned nshares;            /* shares on it (leases and open offers) */
	uint64_t claimed_mib;        /* theirs: each its claim, or what its processes use if more */
	uint64_t outside_mib;        /* used by processes that belong to no share */
	/* MIG instances as lease units (issue 23; mig.c) */
	bool mig_mode;               /* MIG enabled: its instances are leased one by one */
	unsigned nmigs;
	const struct mig_dev *migs;  /* the machine's, for the pass */
	uint64_t mig_busy;           /* bit j: migs[j] leased or offered */
	uint64_t mig_inuse;          /* bit j: a compute process runs on migs[j] */
};

/* struct alloc_policy (when a GPU counts as free) and enum queue_order (fair or fifo) are the
 * [daemon] section's values: config.h. */

struct alloc_req {
	uint64_t cand;               /* bit i: GPU i may be used */
	unsigned count;
	uint64_t min_free_mib;       /* 0: none */
	int max_util;                /* -1: the policy's */
	bool ignore_usage;
	enum prefer prefer;
	bool capped;                 /* the per-user cap stops it for now */
	bool skip;                   /* keeps its place but takes and reserves nothing (stopped) */
	bool queued;                 /* waits when refused (a request that does not is never the
				      * head that GPUs are reserved for) */
	bool no_reserve;             /* may run, but reserves nothing and is never the head: it
				      * held free GPUs idle for the longest allowed (head_reserve),
				      * or its user is backed off for not taking offers */
	bool own_wait;               /* can run only once its own user's leases end (it wants more
				      * GPUs than there are outside them): it keeps its place (the
				      * first of its user's is a head, kept first), and the free GPUs
				      * it could use from its user's later waiting requests only,
				      * never from others', who go by it */
	unsigned user;               /* who asks: an index into alloc_queue.held (fair queue) */
	/* memory shares (issue 23) */
	uint64_t mem_mib;            /* a share: claims this much of each GPU (0: whole GPUs) */
	bool pack;                   /* a share placed best fit (the least room left first) */
	bool drain;                  /* (the pass's own) a whole-GPU head's reservation: GPUs
				      * with shares count, so no new share lands on them */
	/* MIG instances (issue 23): one instance of a GPU in cand */
	bool mig;
	int mig_index;               /* that one (migs[mig_index]); -1: any */
	const char *mig_profile;     /* any of this profile ("3g.71gb"); NULL: any */
	const struct place *place;   /* topology and preferred GPUs (place.h, issue 26); NULL:
				      * the prefer order alone */
	bool head;                   /* the last pass's head: considered first, before the order,
				      * so its reservation holds until it runs (else, in the fair
				      * order, each GPU freed could go to whoever then holds fewer,
				      * and a big request wait forever beside GPUs kept idle for it) */
};

struct alloc_queue {
	enum queue_order order;
	const unsigned *held;        /* fair: GPUs each user holds now (leases and open offers),
				      * indexed by alloc_req.user */
	const uint64_t *served;      /* fair: when each user was last offered GPUs (a counter; 0:
				      * never, NULL: nobody). Of users holding as many GPUs, the one
				      * served longest ago goes first: on one GPU, or whenever jobs
				      * end as fast as they start, held counts tie at each turn, and
				      * arrival alone would serve one user's 500 before another's 1 */
	size_t nusers;
	const double *past;          /* fair: each user's decayed past use (GPU-seconds), the
				      * tie-break after `held` (NULL: not counted, fair-held); issue 24 */
	size_t *own_heads;           /* out, NULL or nusers: per user, the request that waits on its
				      * own leases and keeps GPUs from that user (SIZE_MAX: none) */
};

/* ---- memory shares (issue 23): placement, share.c ---- */
/* What is left to claim on g for a share: total, less the shares' claims (or their use, if
 * more), the memory of processes outside them and the margin; negative when over. */
int64_t alloc_share_room(const struct alloc_gpu *g, const struct alloc_policy *p);
/* Why g cannot take share r (r->mem_mib > 0); NULL when it can. */
const char *alloc_share_why_not(const struct alloc_gpu *g, const struct alloc_req *r,
				const struct alloc_policy *p);
/* x before y for share r: best fit (the least room left) when r->pack, else r->prefer. */
bool alloc_share_better(const struct alloc_gpu *x, const struct alloc_gpu *y,
			const struct alloc_req *r, const struct alloc_policy *p);
/* MIG instances (mig.c): why g has no instance for r (r->mig); NULL when it has; and the
 * instance it would get (its index in g->migs), or -1. */
const char *alloc_mig_why_not(const struct alloc_gpu *g, const struct alloc_req *r);
int alloc_mig_pick(const struct alloc_gpu *g, const struct alloc_req *r);
/* ---- end of memory shares ---- */

/* Why a GPU is not free for a request; NULL when it is. */
const char *alloc_why_not(const struct alloc_gpu *g, const struct alloc_req *r,
			  const struct alloc_policy *p);
/* The best `count` of the GPUs in avail that are free for r (prefer order), or 0. */
uint64_t alloc_pick(const struct alloc_gpu *g, size_t n, const struct alloc_req *r,
		    const struct alloc_policy *p, uint64_t avail);
/* The queue in one pass over the requests (given in arrival order), considered in q's order:
 * fifo, the array's; fair, always the earliest request of the user who holds the fewest GPUs,
 * counting what this pass granted (so one user's requests keep their order, and users take
 * turns). picks[i] is what reqs[i] gets now (0: nothing); order[k] is the k-th request
 * considered. Each request that can run takes its GPUs; the first one considered that cannot
 * (queued, neither capped, skipped, no_reserve nor own_wait, nor behind an own_wait one of its
 * user's) reserves the free GPUs it could use, so smaller requests after it cannot starve it;
 * the first own_wait one of each user keeps them from that user's later requests alone. The
 * requests marked `head` that may run (neither capped, skipped nor no_reserve) are considered
 * before all others, in arrival order. Returns that reservation; *head is the index of the request
 * that made it (SIZE_MAX: none), for the next pass to mark. */
uint64_t alloc_schedule(const struct alloc_gpu *g, size_t n, const struct alloc_req *reqs,
			size_t nreqs, const struct alloc_policy *p, uint64_t avail,
			const struct alloc_queue *q, uint64_t *picks, size_t *order, size_t *head);
/* The order the queue would serve reqs in as GPUs free, each charged its count to its user in
 * turn (what `leases` and a waiter are told their place is), a `head` first: order[k] is the
 * k-th. */
void alloc_order(const struct alloc_req *reqs, size_t nreqs, const struct alloc_queue *q,
		 size_t *order);

#endif
