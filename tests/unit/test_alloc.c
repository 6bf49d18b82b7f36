/* test_alloc.c: the free-GPU rule, preference order and the queue with head reservation. */
#include "alloc.h"
#include "tap.h"

static const struct alloc_policy pol = {.max_used_mib = 1024, .max_util = 10, .allow_procs = false};

#define G(i, used, free, util, procs) {i, false, false, true, true, used, free, util, procs}

void test_alloc(void)
{
	struct alloc_gpu g[4] = {G(0, 0, 80000, 0, 0), G(1, 0, 40000, 0, 0), G(2, 0, 60000, 5, 0),
				 G(3, 0, 80000, 0, 0)};
	struct alloc_req r = {.cand = 0xF, .count = 2, .max_util = -1, .prefer = PREFER_FREE_MEMORY};
	CHECK(alloc_pick(g, 4, &r, &pol, 0xF) == 0x9);           /* most free memory, ties by index */
	r.prefer = PREFER_INDEX;
	CHECK(alloc_pick(g, 4, &r, &pol, 0xF) == 0x3);
	r.prefer = PREFER_UTIL;
	CHECK(alloc_pick(g, 4, &r, &pol, 0xF) == 0x3);           /* util 0 first: 0, 1 */
	r.count = 5;
	CHECK(alloc_pick(g, 4, &r, &pol, 0xF) == 0);             /* all or nothing */
	r.count = 1;
	r.cand = 0x4;
	CHECK(alloc_pick(g, 4, &r, &pol, 0xF) == 0x4);
	g[2].util = 50;
	CHECK(alloc_pick(g, 4, &r, &pol, 0xF) == 0);             /* too busy */
	CHECK_STR(alloc_why_not(&g[2], &r, &pol), "busy (utilisation)");
	r.max_util = 60;
	CHECK(alloc_pick(g, 4, &r, &pol, 0xF) == 0x4);           /* --max-util */
	r.max_util = -1;
	r.ignore_usage = true;
	CHECK(alloc_pick(g, 4, &r, &pol, 0xF) == 0x4);
	r.ignore_usage = false;
	g[2].util_valid = false;                                  /* N/A (MIG): not busy */
	CHECK(alloc_pick(g, 4, &r, &pol, 0xF) == 0x4);
	g[2].procs = 1;
	CHECK_STR(alloc_why_not(&g[2], &r, &pol), "processes without a lease");
	g[2].procs = 0;
	g[2].used_mib = 2048;
	CHECK_STR(alloc_why_not(&g[2], &r, &pol), "memory in use");
	g[2].used_mib = 0;
	r.min_free_mib = 70000;
	CHECK_STR(alloc_why_not(&g[2], &r, &pol), "not enough free memory");
	g[2].mem_valid = false;
	CHECK_STR(alloc_why_not(&g[2], &r, &pol), "free memory unknown");
	g[2].mem_valid = true;
	g[3].leased = true;
	CHECK_STR(alloc_why_not(&g[3], &r, &pol), "leased");
	g[3].reserved = true;
	CHECK_STR(alloc_why_not(&g[3], &r, &pol), "reserved by the administrator");
	g[3].leased = g[3].reserved = false;

	/* The queue: GPUs 0 and 1 free; 2 and 3 leased. */
	struct alloc_gpu q[4] = {G(0, 0, 80000, 0, 0), G(1, 0, 80000, 0, 0), G(2, 0, 80000, 0, 0),
				 G(3, 0, 80000, 0, 0)};
	q[2].leased = q[3].leased = true;
	struct alloc_req one = {.cand = 0xF, .count = 1, .max_util = -1, .prefer = PREFER_INDEX,
				.queued = true};
	struct alloc_req three = one;
	three.count = 3;
	struct alloc_req reqs[] = {one, three, one, one};
	uint64_t picks[4];
	uint64_t kept = alloc_schedule(q, 4, reqs, 4, &pol, 0xF, picks);
	CHECK(picks[0] == 0x1);                  /* first takes GPU 0 */
	CHECK(picks[1] == 0);                    /* the 3-GPU head waits... */
	CHECK(kept == 0x2);                      /* ...and GPU 1 is kept for it */
	CHECK(picks[2] == 0 && picks[3] == 0);
	struct alloc_req two_ones[] = {one, one};
	alloc_schedule(q, 4, two_ones, 2, &pol, 0xF, picks);
	CHECK(picks[0] == 0x1 && picks[1] == 0x2); /* both fit: one each */
	reqs[1].capped = true;                   /* a capped head reserves nothing */
	alloc_schedule(q, 4, reqs, 4, &pol, 0xF, picks);
	CHECK(picks[2] == 0x2);
	reqs[1].capped = false;
	reqs[1].skip = true;                     /* a stopped head keeps its place, holds nothing */
	alloc_schedule(q, 4, reqs, 4, &pol, 0xF, picks);
	CHECK(picks[1] == 0 && picks[2] == 0x2);
	reqs[1].skip = false;
	reqs[1].queued = false;                  /* a request that will not wait reserves nothing */
	alloc_schedule(q, 4, reqs, 4, &pol, 0xF, picks);
	CHECK(picks[2] == 0x2);
	CHECK(alloc_schedule(q, 4, reqs, 4, &pol, 0x0, picks) == 0 && picks[0] == 0); /* nothing free */
}
