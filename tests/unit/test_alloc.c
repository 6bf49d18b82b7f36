/* test_alloc.c: the free-GPU rule, preference order, the queue with head reservation, and the
 * queue's order (fair share across users, or arrival) as data-driven cases. */
#include "daemon/alloc.h"
#include "tap.h"

#include <stdlib.h>

static const struct alloc_policy pol = {.max_used_mib = 1024, .max_util = 10, .allow_procs = false};

#define G(i_, used_, free_, util_, procs_) {.index = i_, .mem_valid = true, .util_valid = true, \
	.used_mib = used_, .free_mib = free_, .util = util_, .procs = procs_}

void test_alloc(void)
{
	struct alloc_gpu g[4] = {G(0, 0, 80000, 0, 0), G(1, 0, 40000, 0, 0), G(2, 0, 60000, 5, 0),
				 G(3, 0, 80000, 0, 0)};
	struct alloc_req r = {.cand = 0xF, .count = 2, .max_util = -1, .prefer = PREFER_FREE_MEMORY};
	CHECK(alloc_pick(g, 4, &r, &pol, 0xF) == 0x9);           /* most free memory, ties by index */
	r.prefer = PREFER_TOPOLOGY;                               /* no topology known: the same */
	CHECK(alloc_pick(g, 4, &r, &pol, 0xF) == 0x9);
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
	size_t order[4], head;
	const struct alloc_queue fifo = {.order = QUEUE_FIFO};
	uint64_t kept = alloc_schedule(q, 4, reqs, 4, &pol, 0xF, &fifo, picks, order, &head);
	CHECK(picks[0] == 0x1);                  /* first takes GPU 0 */
	CHECK(picks[1] == 0);                    /* the 3-GPU head waits... */
	CHECK(kept == 0x2);                      /* ...and GPU 1 is kept for it */
	CHECK(picks[2] == 0 && picks[3] == 0);
	struct alloc_req two_ones[] = {one, one};
	alloc_schedule(q, 4, two_ones, 2, &pol, 0xF, &fifo, picks, order, &head);
	CHECK(picks[0] == 0x1 && picks[1] == 0x2); /* both fit: one each */
	reqs[1].capped = true;                   /* a capped head reserves nothing */
	alloc_schedule(q, 4, reqs, 4, &pol, 0xF, &fifo, picks, order, &head);
	CHECK(picks[2] == 0x2);
	reqs[1].capped = false;
	reqs[1].skip = true;                     /* a stopped head keeps its place, holds nothing */
	alloc_schedule(q, 4, reqs, 4, &pol, 0xF, &fifo, picks, order, &head);
	CHECK(picks[1] == 0 && picks[2] == 0x2);
	reqs[1].skip = false;
	reqs[1].queued = false;                  /* a request that will not wait reserves nothing */
	alloc_schedule(q, 4, reqs, 4, &pol, 0xF, &fifo, picks, order, &head);
	CHECK(picks[2] == 0x2);
	CHECK(alloc_schedule(q, 4, reqs, 4, &pol, 0x0, &fifo, picks, order, &head) == 0 && picks[0] == 0); /* nothing free */
}

/* The queue's order. Eight GPUs, the first `free` of them free, the rest leased; users A, B, C
 * hold `held` GPUs before the pass; requests in arrival order as USER COUNT [s: stopped].
 * order: the requests in the order the pass takes them; granted: those offered GPUs, in that
 * order; kept: the GPUs reserved for the head; listed: the order positions are told in. */
struct order_case {
	const char *what;
	enum queue_order order;
	unsigned free;
	unsigned held[3];
	const char *reqs;
	const char *order_want, *granted_want;
	uint64_t kept;
	const char *listed_want;
};

static const struct order_case order_cases[] = {
	{"A's six before B's one: B goes second", QUEUE_FAIR, 1, {0, 0, 0}, "A1 A1 A1 A1 A1 A1 B1",
	 "0 6 1 2 3 4 5", "0", 0, "0 6 1 2 3 4 5"},
	{"two free: A's first and B's", QUEUE_FAIR, 2, {0, 0, 0}, "A1 A1 A1 A1 A1 A1 B1",
	 "0 6 1 2 3 4 5", "0 6", 0, "0 6 1 2 3 4 5"},
	{"fifo: B waits behind all of A's", QUEUE_FIFO, 1, {0, 0, 0}, "A1 A1 A1 A1 A1 A1 B1",
	 "0 1 2 3 4 5 6", "0", 0, "0 1 2 3 4 5 6"},
	{"who holds fewer goes first", QUEUE_FAIR, 1, {2, 0, 0}, "A1 A1 B1", "2 0 1", "2", 0,
	 "2 0 1"},
	{"grants of this pass count: users take turns", QUEUE_FAIR, 4, {0, 0, 0}, "A1 A1 B1 C1",
	 "0 2 3 1", "0 2 3 1", 0, "0 2 3 1"},
	{"equal holdings: arrival order", QUEUE_FAIR, 4, {0, 0, 0}, "A1 B1 A1 B1", "0 1 2 3",
	 "0 1 2 3", 0, "0 1 2 3"},
	{"ties after grants go by arrival", QUEUE_FAIR, 2, {3, 1, 0}, "A1 A1 B1 B1 B1",
	 "2 3 0 1 4", "2 3", 0, "2 3 0 4 1"},
	{"a user's own order is kept: its big first request reserves", QUEUE_FAIR, 2, {0, 1, 0},
	 "A4 A1 B1", "0 1 2", "", 0x3, "0 2 1"},
	{"the head reservation goes to the first in the fair order", QUEUE_FAIR, 1, {1, 0, 0},
	 "A1 B2", "1 0", "", 0x1, "1 0"},
	{"fifo: the head reservation goes to the first to arrive", QUEUE_FIFO, 1, {1, 0, 0},
	 "A1 B2", "0 1", "0", 0, "0 1"},
	{"a stopped request keeps its place and takes nothing", QUEUE_FAIR, 1, {0, 0, 0},
	 "A1s A1 B1", "0 1 2", "1", 0, "0 2 1"},
	{"bigger holdings wait for every smaller one", QUEUE_FAIR, 3, {5, 2, 0}, "A1 B1 B1 C1 C1 C1",
	 "3 4 1 5 2 0", "3 4 1", 0, "3 4 1 5 2 0"},
};

static void join(char *out, size_t len, const size_t *v, size_t n, const uint64_t *only)
{
	size_t k = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!only || only[v[i]])
			k += (size_t)snprintf(out + k, len - k, "%s%zu", k ? " " : "", v[i]);
}

void test_alloc_order(void)
{
	for (size_t c = 0; c < sizeof order_cases / sizeof *order_cases; c++) {
		const struct order_case *t = &order_cases[c];
		struct alloc_gpu g[8];
		for (unsigned i = 0; i < 8; i++)
			g[i] = (struct alloc_gpu)G(i, 0, 80000, 0, 0);
		for (unsigned i = t->free; i < 8; i++)
			g[i].leased = true;
		struct alloc_req r[16];
		size_t n = 0;
		for (const char *p = t->reqs; *p && n < 16; n++) {
			r[n] = (struct alloc_req){.cand = 0xFF, .max_util = -1, .prefer = PREFER_INDEX,
						  .queued = true, .user = (unsigned)(*p - 'A')};
			char *end;
			r[n].count = (unsigned)strtoul(p + 1, &end, 10);
			r[n].skip = *end == 's';
			p = end + (*end == 's');
			p += *p == ' ';
		}
		struct alloc_queue q = {.order = t->order, .held = t->held, .nusers = 3};
		uint64_t picks[16];
		size_t order[16], head;
		char got[64];
		uint64_t kept = alloc_schedule(g, 8, r, n, &pol, 0xFF, &q, picks, order, &head);
		join(got, sizeof got, order, n, NULL);
		if (strcmp(got, t->order_want))
			printf("# %s\n", t->what);
		CHECK_STR(got, t->order_want);
		join(got, sizeof got, order, n, picks);
		CHECK_STR(got, t->granted_want);
		CHECK(kept == t->kept);
		for (size_t i = 0; i < n; i++) /* whatever the order, a request gets its count or none */
			CHECK(!picks[i] || (unsigned)__builtin_popcountll(picks[i]) == r[i].count);
		alloc_order(r, n, &q, order);
		join(got, sizeof got, order, n, NULL);
		CHECK_STR(got, t->listed_want);
	}
	/* 1000 requests of 50 users, one GPU free: the pass takes each user's earliest first. */
	size_t n = 1000;
	struct alloc_req *r = calloc(n, sizeof *r);
	uint64_t *picks = calloc(n, sizeof *picks);
	size_t *order = calloc(n, sizeof *order);
	unsigned held[50] = {0};
	for (size_t i = 0; i < n; i++)
		r[i] = (struct alloc_req){.cand = 1, .count = 1, .max_util = -1, .queued = true,
					  .user = (unsigned)(i % 7 ? 0 : i / 7 % 50)};
	struct alloc_gpu one = G(0, 0, 80000, 0, 0);
	struct alloc_queue q = {.order = QUEUE_FAIR, .held = held, .nusers = 50};
	size_t head;
	alloc_schedule(&one, 1, r, n, &pol, 1, &q, picks, order, &head);
	bool seen[50] = {false}, in_order = true;
	size_t last[50];
	for (size_t k = 0; k < n; k++) {
		unsigned u = r[order[k]].user;
		in_order &= !seen[u] || last[u] < order[k];
		seen[u] = true;
		last[u] = order[k];
	}
	CHECK(in_order);                         /* each user's requests in arrival order */
	CHECK(order[0] == 0 && picks[0] == 1);   /* the first of user 0 is served... */
	CHECK(order[1] == 7);                    /* ...then user 1's first, not user 0's second */
	free(r);
	free(picks);
	free(order);
}

/* A big request is not starved by a user who holds fewer: the head of one pass is considered
 * first in the next, so a GPU freed goes to it, not to whoever holds fewest then. 4 GPUs: A holds
 * GPU 0 and wants 3 more; B, holding GPU 1, queues 1-GPU jobs after A's. Each time B's job ends
 * B holds 0 < A's 1: without the head kept, B's next took the freed GPU every time while GPUs 2
 * and 3 stayed idle, kept for A, for ever. */
void test_alloc_head(void)
{
	struct alloc_gpu g[4];
	for (unsigned i = 0; i < 4; i++)
		g[i] = (struct alloc_gpu)G(i, 0, 80000, 0, 0);
	g[0].leased = g[1].leased = true;
	struct alloc_req r[3];
	for (size_t i = 0; i < 3; i++)
		r[i] = (struct alloc_req){.cand = 0xF, .count = 1, .max_util = -1,
					  .prefer = PREFER_INDEX, .queued = true, .user = 1};
	r[0].count = 3;
	r[0].user = 0;
	unsigned held[2] = {1, 1};
	struct alloc_queue q = {.order = QUEUE_FAIR, .held = held, .nusers = 2};
	uint64_t picks[3];
	size_t order[3], head;
	/* Pass 1: a tie, A first by arrival: A cannot run and keeps GPUs 2 and 3. */
	CHECK(alloc_schedule(g, 4, r, 3, &pol, 0xF, &q, picks, order, &head) == 0xC);
	CHECK(head == 0 && !picks[0] && !picks[1] && !picks[2]);
	/* B's job on GPU 1 ends: B holds 0, fewer than A; A's request, the head, goes first. */
	g[1].leased = false;
	held[1] = 0;
	r[head].head = true;
	size_t listed[3];
	alloc_order(r, 3, &q, listed);
	CHECK(listed[0] == 0 && listed[1] == 1 && listed[2] == 2); /* and is told it is first */
	alloc_schedule(g, 4, r, 3, &pol, 0xF, &q, picks, order, &head);
	CHECK(order[0] == 0 && picks[0] == 0xE && !picks[1] && !picks[2]);
	CHECK(head == 1); /* B's first is the head now, with nothing free to keep */
	/* Without the mark (the order alone), B's 1-GPU request would take GPU 1 again. */
	r[0].head = false;
	alloc_schedule(g, 4, r, 3, &pol, 0xF, &q, picks, order, &head);
	CHECK(order[0] == 1 && picks[1] == 0x2 && !picks[0]);
	/* A head that may not run now (stopped, or capped) gives up its turn to the order. */
	r[0].head = true;
	r[0].skip = true;
	alloc_schedule(g, 4, r, 3, &pol, 0xF, &q, picks, order, &head);
	CHECK(order[0] == 1 && picks[1] == 0x2 && picks[2] == 0x4 && head == SIZE_MAX);
	/* fifo too: the head first, every request once. */
	r[0].skip = false;
	r[2].head = true;
	r[0].head = false;
	q.order = QUEUE_FIFO;
	alloc_schedule(g, 4, r, 3, &pol, 0xF, &q, picks, order, &head);
	CHECK(order[0] == 2 && order[1] == 0 && order[2] == 1 && picks[2] == 0x2 && head == 0);
}

/* One GPU, A's three requests then B's one: each job ends as the next starts, so both hold 0 at
 * every turn. The user served longest ago goes first: B's one request is served second, not
 * after all of A's (arrival alone would make the fair queue first come, first served). */
void test_alloc_served(void)
{
	struct alloc_gpu g[1] = {G(0, 0, 80000, 0, 0)};
	struct alloc_req r[4];
	for (size_t i = 0; i < 4; i++)
		r[i] = (struct alloc_req){.cand = 0x1, .count = 1, .max_util = -1,
					  .prefer = PREFER_INDEX, .queued = true, .user = i < 3 ? 0 : 1};
	unsigned held[2] = {0, 0};
	uint64_t served[2] = {0, 0};
	struct alloc_queue q = {.order = QUEUE_FAIR, .held = held, .served = served, .nusers = 2};
	uint64_t picks[4];
	size_t order[4], head, listed[4];
	/* Nobody served yet: arrival decides, A's first. */
	alloc_schedule(g, 1, r, 4, &pol, 0x1, &q, picks, order, &head);
	CHECK(picks[0] == 0x1 && !picks[1] && !picks[3]);
	/* It ran and ended: A holds 0 again, but was served last; B's request goes next. */
	served[0] = 1;
	alloc_order(r + 1, 3, &q, listed);
	CHECK(listed[0] == 2 && listed[1] == 0 && listed[2] == 1); /* B told it is first */
	alloc_schedule(g, 1, r + 1, 3, &pol, 0x1, &q, picks, order, &head);
	CHECK(order[0] == 2 && picks[2] == 0x1 && !picks[0] && !picks[1]);
	/* Without the record (served NULL), A's next request would win the tie by arrival. */
	q.served = NULL;
	alloc_schedule(g, 1, r + 1, 3, &pol, 0x1, &q, picks, order, &head);
	CHECK(order[0] == 0 && picks[0] == 0x1);
}
