/* test_place.c: topology-aware picks (daemon/place.c, issue 26) and CPU lists (machine/topo.c):
 * without topology or preferences a pick is exactly alloc.c's (random machines, every order);
 * on a 64-GPU machine the bounded greedy search still finds a whole NVLinked group; cpulists
 * parse and print as the kernel's. */
#include "daemon/place.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static const struct alloc_policy pol = {.max_used_mib = 1024, .max_util = 10, .allow_procs = false};

static void same_as_alloc(void)
{
	struct place none = {0};
	bool same = true;
	srand(26);
	for (int round = 0; round < 2000 && same; round++) {
		struct alloc_gpu g[GPU_MAX];
		size_t n = 1 + (size_t)(rand() % 16);
		for (size_t i = 0; i < n; i++)
			g[i] = (struct alloc_gpu){.index = (unsigned)i, .mem_valid = true, .util_valid = true,
						  .used_mib = (uint64_t)(rand() % 3) * 600,
						  .free_mib = 1000 + (uint64_t)(rand() % 4) * 1000,
						  .util = (unsigned)(rand() % 3) * 5, .leased = rand() % 5 == 0};
		struct alloc_req r = {.cand = (1ULL << n) - 1, .count = 1 + (unsigned)(rand() % 4),
				      .max_util = -1, .prefer = (enum prefer)(rand() % 3)};
		uint64_t a = alloc_pick(g, n, &r, &pol, r.cand), free = 0;
		for (size_t i = 0; i < n; i++)
			free |= (uint64_t)!alloc_why_not(&g[i], &r, &pol) << i;
		r.place = &none;   /* place.c itself: no topology, no preference */
		uint64_t b = place_pick(g, n, &r, free);
		r.prefer = r.prefer == PREFER_FREE_MEMORY ? PREFER_TOPOLOGY : r.prefer;
		uint64_t c = place_pick(g, n, &r, free);   /* topology unknown: free memory */
		same = a == b && a == c;
	}
	CHECK(same);
}

/* 64 GPUs: groups of 4 joined by NV4, PIX inside a group's halves, NODE within 32, SYS across. */
static struct topo *big(void)
{
	struct topo *t = topo_new(64);
	for (size_t i = 0; i < 64; i++) {
		t->gpu[i].numa = (int)(i / 32);
		t->gpu[i].cpus_valid = true;
		cpuset_parse(i < 32 ? "0-7" : "8-15", &t->gpu[i].cpus);
		for (size_t j = 0; j < 64; j++) {
			if (i == j)
				continue;
			t->nvlinks[i * 64 + j] = i / 4 == j / 4 ? 4 : 0;
			t->level[i * 64 + j] = i / 2 == j / 2 ? TOPO_PIX : i / 32 == j / 32 ? TOPO_NODE
												: TOPO_SYS;
		}
	}
	return t;
}

static void greedy_64(void)
{
	struct topo *t = big();
	struct place pl = {.topo = t};
	struct alloc_gpu g[GPU_MAX];
	for (size_t i = 0; i < 64; i++)
		g[i] = (struct alloc_gpu){.index = (unsigned)i, .mem_valid = true, .free_mib = 80000};
	struct alloc_req r = {.cand = ~0ULL, .count = 4, .max_util = -1, .prefer = PREFER_TOPOLOGY,
			      .place = &pl};
	/* GPUs 0 and 5 taken: the first whole free group is 8-11. C(62,4) sets: the greedy search. */
	g[0].leased = g[5].leased = true;
	CHECK(alloc_pick(g, 64, &r, &pol, ~0ULL) == 0xF00ULL);
	r.count = 8;
	uint64_t m = alloc_pick(g, 64, &r, &pol, ~0ULL);
	/* two whole groups on one NUMA node (the greedy search need not find the lowest ones) */
	bool whole = __builtin_popcountll(m) == 8 && (m & 0xFFFFFFFFULL) * (m >> 32) == 0;
	for (unsigned grp = 0; grp < 16; grp++)
		whole &= ((m >> (4 * grp)) & 0xF) == 0 || ((m >> (4 * grp)) & 0xF) == 0xF;
	CHECK(whole);
	r.count = 1;                                          /* a lone GPU: 1 (0's pair is gone) */
	m = alloc_pick(g, 64, &r, &pol, ~0ULL);
	CHECK(m == 0x2ULL || m == 0x10ULL);                   /* 1 or 4: of broken groups */
	struct strbuf cpus = {0}, numa = {0};
	CHECK(place_cpus(t, 0x3ULL << 31, &cpus, &numa));
	CHECK_STR(cpus.buf, "0-15");
	CHECK_STR(numa.buf, "0,1");
	sb_free(&cpus);
	sb_free(&numa);
	topo_free(t);
}

static void cpulists(void)
{
	static const char *const good[][2] = {
		{"0-23,48-71", "0-23,48-71"}, {"5", "5"}, {"0,1,2,3", "0-3"}, {"7,3-4", "3-4,7"},
		{"4095", "4095"},
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		struct cpuset s;
		struct strbuf sb = {0};
		CHECK(cpuset_parse(good[i][0], &s));
		cpuset_format(&s, &sb);
		CHECK_STR(sb.buf, good[i][1]);
		sb_free(&sb);
	}
	static const char *const bad[] = {"", "1-", "-1", "a", "3-1", ",", "1,,2", "1,", "4096", " 1"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct cpuset s;
		CHECK(!cpuset_parse(bad[i], &s));
	}
}

void test_place(void)
{
	same_as_alloc();
	greedy_64();
	cpulists();
}
