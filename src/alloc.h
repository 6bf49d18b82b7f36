/* alloc.h: which GPUs a request gets: the free-GPU rule and the fair queue, as a pure function
 * of the machine's state and the requests in arrival order (no I/O: unit-tested directly). */
#ifndef GPUCTL_ALLOC_H
#define GPUCTL_ALLOC_H

#include "config.h"
#include "gpu.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct alloc_gpu {
	unsigned index;              /* nvidia-smi index, for prefer=index and ties */
	bool leased;                 /* a lease holds it */
	bool reserved;               /* the admin keeps it out of leasing */
	bool mem_valid, util_valid;
	uint64_t used_mib, free_mib;
	unsigned util;
	unsigned procs;              /* compute processes on it (none of them leased it) */
};

struct alloc_policy {
	uint64_t max_used_mib;       /* a GPU using more memory is busy */
	int max_util;
	bool allow_procs;
};

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
};

/* Why a GPU is not free for a request; NULL when it is. */
const char *alloc_why_not(const struct alloc_gpu *g, const struct alloc_req *r,
			  const struct alloc_policy *p);
/* The best `count` of the GPUs in avail that are free for r (prefer order), or 0. */
uint64_t alloc_pick(const struct alloc_gpu *g, size_t n, const struct alloc_req *r,
		    const struct alloc_policy *p, uint64_t avail);
/* Up to r->count GPUs of avail that are free for r, best first; *got says how many. */
uint64_t alloc_best(const struct alloc_gpu *g, size_t n, const struct alloc_req *r,
		    const struct alloc_policy *p, uint64_t avail, unsigned *got);
/* The queue, first come first served, in one pass over the requests in arrival order:
 * picks[i] is what reqs[i] gets now (0: nothing). Each request that can run takes its GPUs; the
 * first queued one that cannot (and is neither capped nor skipped) reserves the free GPUs it
 * could use, so later, smaller requests cannot starve it. Returns that reservation. */
uint64_t alloc_schedule(const struct alloc_gpu *g, size_t n, const struct alloc_req *reqs,
			size_t nreqs, const struct alloc_policy *p, uint64_t avail, uint64_t *picks);

#endif
