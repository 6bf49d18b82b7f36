/* test_share.c: memory shares and MIG instances as lease units (issue 23), the pure placement
 * rules: room, best fit and spreading, shares and whole leases never mixed, a whole-GPU head
 * draining shared GPUs, several shares placed in one pass, instances by index and profile. */
#include "daemon/alloc.h"
#include "tap.h"

#include <stdlib.h>

static const struct alloc_policy pol = {.max_used_mib = 1024, .max_util = 10,
					.share_margin_mib = 10240};

/* A GPU of 80 GiB with n shares claiming claimed MiB and outside MiB used by others. */
static struct alloc_gpu gpu(unsigned i, unsigned n, uint64_t claimed, uint64_t outside)
{
	return (struct alloc_gpu){.index = i, .mem_valid = true, .util_valid = true,
				  .used_mib = claimed + outside, .free_mib = 81920 - claimed - outside,
				  .total_valid = true, .total_mib = 81920, .nshares = n,
				  .claimed_mib = claimed, .outside_mib = outside};
}

void test_share(void)
{
	struct alloc_gpu g[3] = {gpu(0, 2, 40960, 0), gpu(1, 0, 0, 51200), gpu(2, 0, 0, 0)};
	struct alloc_req s = {.cand = 7, .count = 1, .max_util = -1, .mem_mib = 20480, .pack = true,
			      .prefer = PREFER_FREE_MEMORY};
	CHECK(alloc_share_room(&g[0], &pol) == 30720);
	CHECK(alloc_share_room(&g[1], &pol) == 20480);          /* 80 - 50 outside - 10 margin */
	CHECK(alloc_why_not(&g[1], &s, &pol) == NULL);           /* exactly room for one */
	CHECK(alloc_pick(g, 3, &s, &pol, 7) == 0x2);             /* best fit: the least room left */
	s.pack = false;
	CHECK(alloc_pick(g, 3, &s, &pol, 7) == 0x4);             /* --prefer free-memory spreads */
	s.pack = true;
	s.mem_mib = 40960;
	CHECK(alloc_pick(g, 3, &s, &pol, 7) == 0x4);             /* only the empty GPU has 40G */
	s.mem_mib = 20480;
	/* A whole-GPU request never takes a GPU with shares; a share never a leased one. */
	struct alloc_req w = {.cand = 7, .count = 1, .max_util = -1, .ignore_usage = true};
	CHECK_STR(alloc_why_not(&g[0], &w, &pol), "shared (memory leases on it)");
	g[2].leased = true;
	CHECK_STR(alloc_why_not(&g[2], &s, &pol), "leased whole");
	g[2].leased = false;
	g[2].total_valid = false;
	CHECK_STR(alloc_why_not(&g[2], &s, &pol), "memory unknown (a share needs the GPU's memory)");
	g[2].total_valid = true;
	g[2].reserved = true;
	CHECK_STR(alloc_why_not(&g[2], &s, &pol), "reserved by the administrator");
	g[2].reserved = false;

	/* One pass: three 20G shares on an empty GPU with a 10G margin, the fourth waits; the
	 * whole-GPU waiter behind them keeps the GPU (drains it) and takes nothing. */
	struct alloc_gpu one[1] = {gpu(0, 0, 0, 0)};
	struct alloc_req r[5];
	for (int i = 0; i < 5; i++)
		r[i] = (struct alloc_req){.cand = 1, .count = 1, .max_util = -1, .mem_mib = 20480,
					  .pack = true, .queued = true};
	r[4] = (struct alloc_req){.cand = 1, .count = 1, .max_util = -1, .ignore_usage = true,
				  .queued = true};
	uint64_t picks[5];
	size_t order[5], head;
	struct alloc_queue q = {.order = QUEUE_FIFO};
	uint64_t kept = alloc_schedule(one, 1, r, 5, &pol, 1, &q, picks, order, &head);
	CHECK(picks[0] == 1 && picks[1] == 1 && picks[2] == 1 && !picks[3] && !picks[4]);
	CHECK(head == 3 && kept == 0);                           /* the fourth share fits nowhere */
	r[3].mem_mib = 0, r[3].ignore_usage = true;              /* a whole-GPU waiter instead */
	kept = alloc_schedule(one, 1, r, 5, &pol, 1, &q, picks, order, &head);
	CHECK(head == 3 && kept == 1);                           /* it keeps the shared GPU */

	/* MIG: instances by index and by profile; one leased, one in use. */
	struct mig_dev migs[3] = {{.slot = 0, .name = "NVIDIA H200 MIG 3g.71gb"},
				  {.slot = 1, .name = "NVIDIA H200 MIG 1c.3g.71gb"},
				  {.slot = 2, .name = "NVIDIA H200 MIG 1c.3g.71gb"}};
	struct alloc_gpu m = {.index = 0, .mig_mode = true, .nmigs = 3, .migs = migs,
			      .mig_inuse = 1};
	struct alloc_req mr = {.cand = 1, .count = 1, .max_util = -1, .mig = true, .mig_index = -1,
			       .mig_profile = "3g.71gb"};
	CHECK_STR(alloc_why_not(&m, &mr, &pol), "no free MIG instance of that profile");
	mr.ignore_usage = true;
	CHECK(alloc_mig_pick(&m, &mr) == 0);
	mr.ignore_usage = false;
	mr.mig_profile = "1c.3g.71gb";
	m.mig_busy = 2;
	CHECK(alloc_mig_pick(&m, &mr) == 2);
	mr.mig_profile = NULL;
	mr.mig_index = 1;
	CHECK_STR(alloc_why_not(&m, &mr, &pol), "that MIG instance is leased");
	CHECK_STR(alloc_why_not(&m, &w, &pol), "MIG instances of it are leased");
	CHECK_STR(alloc_why_not(&m, &s, &pol),
		  "MIG enabled: lease one of its instances (--mig PROFILE, -g GPU:INSTANCE)");
}
