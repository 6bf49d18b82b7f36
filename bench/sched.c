/* sched.c: the CPU of one scheduling pass (alloc_schedule, the daemon's placement and queue
 * order: daemon/alloc.c with share.c's and mig.c's placement) on a big shared machine (issue 23):
 *
 *   bench-sched [PASSES]
 *
 * 64 GPUs of 80 GiB, 512 memory shares on them (8 a GPU, 8 GiB each, share_margin 1 GiB: 15 GiB
 * left on each), and 1,000 waiters of 50 users in the fair order: 500 shares of 20 GiB (none
 * fits: each is considered against every GPU), 300 whole GPUs (every GPU has shares: the head
 * drains), 200 shares of 4 GiB that fit (they are placed, best fit, each changing the room the
 * next sees). Prints the median and the 99th percentile of the passes' CPU time (the process's
 * CPU clock, microseconds); the target is under 1 ms. Bench code only. */
#include "daemon/alloc.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NGPUS 64
#define NWAIT 1000
#define NUSERS 50

static double cpu_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int passes = argc > 1 ? atoi(argv[1]) : 500;
	if (passes < 1)
		passes = 1;
	struct alloc_policy pol = {.max_used_mib = 1024, .max_util = 10, .share_margin_mib = 1024};
	struct alloc_gpu g[NGPUS];
	for (unsigned i = 0; i < NGPUS; i++)
		g[i] = (struct alloc_gpu){.index = i, .mem_valid = true, .util_valid = true,
					  .used_mib = 8 * 1000, .free_mib = 81920 - 8 * 1000,
					  .total_valid = true, .total_mib = 81920, .nshares = 8,
					  .claimed_mib = 8 * 8192, .outside_mib = 0};
	struct alloc_req *r = xcalloc(NWAIT, sizeof *r);
	for (unsigned i = 0; i < NWAIT; i++) {
		r[i] = (struct alloc_req){.cand = ~0ULL, .count = 1, .max_util = -1, .queued = true,
					  .prefer = PREFER_FREE_MEMORY, .user = i % NUSERS};
		if (i % 10 < 5)
			r[i].mem_mib = 20480, r[i].pack = true;
		else if (i % 10 < 8)
			r[i].ignore_usage = true;
		else
			r[i].mem_mib = 4096, r[i].pack = true;
	}
	unsigned held[NUSERS];
	uint64_t served[NUSERS];
	for (unsigned u = 0; u < NUSERS; u++) {
		held[u] = 512 / NUSERS + (u < 512 % NUSERS);
		served[u] = u + 1;
	}
	struct alloc_queue q = {.order = QUEUE_FAIR, .held = held, .served = served, .nusers = NUSERS};
	uint64_t *picks = xcalloc(NWAIT, sizeof *picks);
	size_t *order = xcalloc(NWAIT, sizeof *order), head;
	double *t = xcalloc((size_t)passes, sizeof *t);
	unsigned placed = 0;
	for (int p = 0; p < passes; p++) {
		double t0 = cpu_us();
		alloc_schedule(g, NGPUS, r, NWAIT, &pol, ~0ULL, &q, picks, order, &head);
		t[p] = cpu_us() - t0;
		if (!p)
			for (unsigned i = 0; i < NWAIT; i++)
				placed += picks[i] != 0;
	}
	qsort(t, (size_t)passes, sizeof *t, cmp);
	printf("scheduling pass, 64 GPUs, 512 shares, 1,000 waiters (%u placed a pass): median %.0f us, "
	       "p99 %.0f us CPU over %d passes (target < 1000 us)\n", placed, t[passes / 2],
	       t[(size_t)(passes * 0.99)], passes);
	free(t);
	free(picks);
	free(order);
	free(r);
	return 0;
}
