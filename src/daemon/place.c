/* place.c: topology- and preference-aware picks, pure (design and cost: place.h). A set's score
 * is a tuple compared in order; the search weighs every set while there are few, else grows
 * sets greedily from each free GPU. */
#include "daemon/place.h"
#include "base/util.h"

#include <limits.h>
#include <string.h>

#define LEVEL_NA (TOPO_SYS + 1)   /* an unknown path ranks after SYS */

struct ctx {
	const struct place *pl;
	bool topo;                    /* weigh topology (prefer = topology and a topology known) */
	size_t m;                     /* free GPUs */
	size_t pos[GPU_MAX];          /* their positions, best first in the request's order */
	long rw[GPU_MAX];             /* per free GPU (by its rank in pos): its connectivity to the
				       * other free GPUs, what taking it breaks up */
};

struct score {
	int outside, nv, level, numa;
	long frag;
	int prefsum, ranksum;
};

static int level_at(const struct topo *t, size_t a, size_t b)
{
	int l = a < t->n && b < t->n ? topo_level_of(t, a, b) : TOPO_NA;
	return l == TOPO_NA ? LEVEL_NA : l;
}

static int nv_at(const struct topo *t, size_t a, size_t b)
{
	int v = a < t->n && b < t->n ? topo_nvlinks(t, a, b) : 0;
	return v > 0 ? v : 0;
}

static int numa_at(const struct topo *t, size_t a)
{
	return a < t->n ? t->gpu[a].numa : -1;
}

/* A pair's worth to what is left free: NVLinks weigh most, then how near over PCIe. */
static long weight(const struct topo *t, size_t a, size_t b)
{
	return 16L * nv_at(t, a, b) + (LEVEL_NA - level_at(t, a, b));
}

/* The single-GPU order of the request (alloc.c's, topology's tie-break being free memory). */
static bool better(const struct alloc_gpu *x, const struct alloc_gpu *y, enum prefer prefer)
{
	if ((prefer == PREFER_FREE_MEMORY || prefer == PREFER_TOPOLOGY) && x->free_mib != y->free_mib)
		return x->free_mib > y->free_mib;
	if (prefer == PREFER_UTIL && x->util != y->util)
		return x->util < y->util;
	return x->index < y->index;
}

/* The score of the set of free GPUs with ranks s[0..k) (ranks into c->pos). */
static struct score score_of(const struct ctx *c, const size_t *s, size_t k)
{
	struct score sc = {0};
	const struct topo *t = c->pl->topo;
	int nodes[GPU_MAX];
	size_t nn = 0;
	long inside = 0;
	for (size_t a = 0; a < k; a++) {
		size_t pa = c->pos[s[a]];
		unsigned rank = c->pl->has_pref ? c->pl->rank[pa] : 0;
		sc.outside += c->pl->has_pref && !rank;
		sc.prefsum += rank ? (int)rank : GPU_MAX + 1;
		sc.ranksum += (int)s[a];
		if (!c->topo)
			continue;
		sc.frag += c->rw[s[a]];
		int node = numa_at(t, pa);
		size_t q = 0;
		while (q < nn && nodes[q] != node)
			q++;
		if (q == nn)
			nodes[nn++] = node;
		for (size_t b = a + 1; b < k; b++) {
			size_t pb = c->pos[s[b]];
			sc.nv -= nv_at(t, pa, pb);
			int l = level_at(t, pa, pb);
			sc.level = l > sc.level ? l : sc.level;
			inside += weight(t, pa, pb);
		}
	}
	sc.numa = (int)nn;
	sc.frag -= inside;   /* pairs inside the set were counted from both ends */
	return sc;
}

static int cmp(const struct score *x, const struct score *y)
{
	const int a[] = {x->outside, x->nv, x->level, x->numa}, b[] = {y->outside, y->nv, y->level, y->numa};
	for (size_t i = 0; i < ARRAY_SIZE(a); i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	if (x->frag != y->frag)
		return x->frag < y->frag ? -1 : 1;
	if (x->prefsum != y->prefsum)
		return x->prefsum < y->prefsum ? -1 : 1;
	return x->ranksum < y->ranksum ? -1 : x->ranksum > y->ranksum;
}

/* C(m, k), saturating past the bound. */
static unsigned long long choose(size_t m, size_t k)
{
	unsigned long long v = 1;
	for (size_t i = 1; i <= k; i++) {
		v = v * (m - k + i) / i;
		if (v > PLACE_EXHAUSTIVE)
			return PLACE_EXHAUSTIVE + 1;
	}
	return v;
}

static void exhaustive(const struct ctx *c, size_t k, size_t *best)
{
	size_t s[GPU_MAX];
	struct score bs = {.outside = INT_MAX};
	for (size_t i = 0; i < k; i++)
		s[i] = i;
	for (;;) {
		struct score sc = score_of(c, s, k);
		if (cmp(&sc, &bs) < 0) {
			bs = sc;
			memcpy(best, s, k * sizeof *s);
		}
		size_t i = k;
		while (i > 0 && s[i - 1] == c->m - k + i - 1)
			i--;
		if (i == 0)
			return;
		s[i - 1]++;
		for (size_t j = i; j < k; j++)
			s[j] = s[j - 1] + 1;
	}
}

/* s[0..k) extended by j: the score of the set one larger, from base (the score of s[0..k)) in
 * O(k), and whether j's NUMA node is new to it (nodes: the set's nodes so far). */
static struct score add_one(const struct ctx *c, const struct score *base, const size_t *s,
			    size_t k, size_t j, const int *nodes, size_t nn)
{
	struct score sc = *base;
	const struct topo *t = c->pl->topo;
	size_t pj = c->pos[j];
	unsigned rank = c->pl->has_pref ? c->pl->rank[pj] : 0;
	sc.outside += c->pl->has_pref && !rank;
	sc.prefsum += rank ? (int)rank : GPU_MAX + 1;
	sc.ranksum += (int)j;
	if (!c->topo)
		return sc;
	sc.frag += c->rw[j];
	int node = numa_at(t, pj);
	size_t q = 0;
	while (q < nn && nodes[q] != node)
		q++;
	sc.numa += q == nn;
	for (size_t a = 0; a < k; a++) {
		size_t pa = c->pos[s[a]];
		sc.nv -= nv_at(t, pa, pj);
		int l = level_at(t, pa, pj);
		sc.level = l > sc.level ? l : sc.level;
		sc.frag -= weight(t, pa, pj);
	}
	return sc;
}

/* From up to PLACE_SEEDS free GPUs as seeds (spread over the order, so over the machine), add
 * the GPU that makes the best set so far, count times: PLACE_SEEDS x count x free steps of
 * O(count). */
static void greedy(const struct ctx *c, size_t k, size_t *best)
{
	struct score bs = {.outside = INT_MAX};
	size_t s[GPU_MAX], seeds = c->m < PLACE_SEEDS ? c->m : PLACE_SEEDS;
	bool in[GPU_MAX];
	int nodes[GPU_MAX];
	for (size_t si = 0; si < seeds; si++) {
		size_t seed = si * c->m / seeds, nn = 0;
		struct score cur = {0};
		memset(in, 0, sizeof in);
		cur = add_one(c, &cur, s, 0, seed, nodes, 0);
		if (c->topo)
			nodes[nn++] = numa_at(c->pl->topo, c->pos[seed]);
		s[0] = seed;
		in[seed] = true;
		for (size_t got = 1; got < k; got++) {
			struct score step = {.outside = INT_MAX};
			size_t pick = 0;
			for (size_t j = 0; j < c->m; j++) {
				if (in[j])
					continue;
				struct score sc = add_one(c, &cur, s, got, j, nodes, nn);
				if (cmp(&sc, &step) < 0) {
					step = sc;
					pick = j;
				}
			}
			if (c->topo) {
				int node = numa_at(c->pl->topo, c->pos[pick]);
				size_t q = 0;
				while (q < nn && nodes[q] != node)
					q++;
				if (q == nn)
					nodes[nn++] = node;
			}
			cur = step;
			s[got] = pick;
			in[pick] = true;
		}
		if (cmp(&cur, &bs) < 0) {
			bs = cur;
			memcpy(best, s, k * sizeof *s);
		}
	}
}

uint64_t place_pick(const struct alloc_gpu *g, size_t n, const struct alloc_req *r, uint64_t free)
{
	const struct place *pl = r->place;
	struct ctx c = {.pl = pl, .topo = pl->topo && r->prefer == PREFER_TOPOLOGY};
	for (size_t i = 0; i < n && i < GPU_MAX; i++) {
		if (!(free >> i & 1))
			continue;
		size_t j = c.m++;
		for (; j > 0 && better(&g[i], &g[c.pos[j - 1]], r->prefer); j--)
			c.pos[j] = c.pos[j - 1];
		c.pos[j] = i;
	}
	size_t k = r->count;
	if (k == 0 || c.m < k)
		return 0;
	for (size_t a = 0; c.topo && a < c.m; a++) {
		c.rw[a] = 0;
		for (size_t b = 0; b < c.m; b++)
			if (b != a)
				c.rw[a] += weight(pl->topo, c.pos[a], c.pos[b]);
	}
	size_t best[GPU_MAX];
	if (choose(c.m, k) <= PLACE_EXHAUSTIVE)
		exhaustive(&c, k, best);
	else
		greedy(&c, k, best);
	uint64_t mask = 0;
	for (size_t i = 0; i < k; i++)
		mask |= 1ULL << c.pos[best[i]];
	return mask;
}

static void list_gpus(struct strbuf *sb, const struct alloc_gpu *g, size_t n, uint64_t mask)
{
	bool first = true;
	for (size_t i = 0; i < n; i++)
		if (mask >> i & 1) {
			sb_addf(sb, "%s%u", first ? "" : ",", g[i].index);
			first = false;
		}
}

/* The NVLinked pairs among mask's GPUs, as "0-1 2-3"; how many. */
static size_t nvlinked(const struct topo *t, const struct alloc_gpu *g, size_t n, uint64_t mask,
		       struct strbuf *sb)
{
	size_t k = 0;
	for (size_t a = 0; a < n; a++)
		for (size_t b = a + 1; b < n; b++)
			if ((mask >> a & 1) && (mask >> b & 1) && nv_at(t, a, b) > 0) {
				sb_addf(sb, "%s%u-%u", k++ ? " " : "", g[a].index, g[b].index);
			}
	return k;
}

void place_explain(const struct place *pl, const struct alloc_gpu *g, size_t n,
		   enum prefer prefer, uint64_t mask, uint64_t free, struct strbuf *sb)
{
	static const char *const orders[] = {"free-memory", "index", "util", "topology"};
	const struct topo *t = pl ? pl->topo : NULL;
	unsigned k = (unsigned)__builtin_popcountll(mask);
	sb_addf(sb, "GPU%s ", k == 1 ? "" : "s");
	list_gpus(sb, g, n, mask);
	sb_adds(sb, ":");
	size_t colon = sb->len;
	if (prefer == PREFER_TOPOLOGY && t && k >= 2) {
		int nv = INT_MAX, level = 0;
		for (size_t a = 0; a < n; a++)
			for (size_t b = a + 1; b < n; b++)
				if ((mask >> a & 1) && (mask >> b & 1)) {
					nv = nv_at(t, a, b) < nv ? nv_at(t, a, b) : nv;
					level = level_at(t, a, b) > level ? level_at(t, a, b) : level;
				}
		if (nv > 0)
			sb_addf(sb, " NV%d or more between every two", nv);
		else {
			struct strbuf pairs = {0};
			size_t np = nvlinked(t, g, n, mask, &pairs);
			if (np && np <= 4)
				sb_addf(sb, " NVLinked pair%s %s", np > 1 ? "s" : "", pairs.buf);
			else if (np)
				sb_addf(sb, " %zu NVLinked pairs", np);
			else
				sb_adds(sb, " no NVLink between them");
			sb_free(&pairs);
		}
		sb_addf(sb, ", PCIe %s at the farthest",
			level == LEVEL_NA ? "N/A" : topo_level_name((enum topo_level)level));
	}
	if (prefer == PREFER_TOPOLOGY && t) {
		struct strbuf nodes = {0};
		int seen[GPU_MAX];
		size_t ns = 0;
		bool unknown = false;
		for (size_t a = 0; a < n; a++) {
			if (!(mask >> a & 1))
				continue;
			int node = numa_at(t, a);
			size_t q = 0;
			while (q < ns && seen[q] != node)
				q++;
			if (node < 0)
				unknown = true;
			else if (q == ns) {
				seen[ns++] = node;
				sb_addf(&nodes, "%s%d", ns > 1 ? "," : "", node);
			}
		}
		if (unknown)
			sb_adds(sb, k >= 2 ? ", NUMA N/A" : " NUMA N/A");
		else
			sb_addf(sb, "%sNUMA node%s %s", k >= 2 ? ", " : " ", ns > 1 ? "s" : "", nodes.buf);
		sb_free(&nodes);
		struct strbuf kept = {0};
		size_t np = nvlinked(t, g, n, free & ~mask, &kept);
		if (np && np <= 4) {
			sb_addf(sb, "; leaves the NVLinked pair%s %s free", np > 1 ? "s" : "", kept.buf);
		} else if (np) {   /* a mesh (NVSwitch): the GPUs, not every pair */
			uint64_t linked = 0;
			for (size_t a = 0; a < n; a++)
				for (size_t b = 0; b < n; b++)
					if (a != b && ((free & ~mask) >> a & 1) && ((free & ~mask) >> b & 1) &&
					    nv_at(t, a, b) > 0)
						linked |= 1ULL << a;
			sb_adds(sb, "; leaves NVLinked GPUs ");
			list_gpus(sb, g, n, linked);
			sb_adds(sb, " free");
		}
		sb_free(&kept);
	}
	if (pl && pl->has_pref) {
		unsigned inside = 0;
		for (size_t a = 0; a < n; a++)
			inside += (mask >> a & 1) && pl->rank[a];
		if (inside == k)
			sb_addf(sb, "; preferred GPUs of %s", pl->pref_from);
		else
			sb_addf(sb, "; %u of %u outside the preferred GPUs of %s (they are not free)", k - inside,
				k, pl->pref_from);
	}
	if (sb->len == colon) {   /* nothing to say but the order */
		sb->buf[--sb->len] = '\0';
	} else if (sb->buf[colon] == ';') {
		memmove(sb->buf + colon, sb->buf + colon + 1, sb->len - colon);
		sb->len--;
	}
	sb_addf(sb, " (order: %s)", orders[prefer <= PREFER_TOPOLOGY ? prefer : 0]);
}

bool place_cpus(const struct topo *t, uint64_t mask, struct strbuf *cpus, struct strbuf *numa)
{
	if (!t || !mask)
		return false;
	struct cpuset all = {0};
	int seen[GPU_MAX];
	size_t ns = 0;
	for (size_t a = 0; a < t->n && a < GPU_MAX; a++) {
		if (!(mask >> a & 1))
			continue;
		if (!t->gpu[a].cpus_valid)
			return false;
		cpuset_or(&all, &t->gpu[a].cpus);
		int node = t->gpu[a].numa;
		size_t q = 0;
		while (q < ns && seen[q] != node)
			q++;
		if (q == ns)
			seen[ns++] = node;
	}
	cpuset_format(&all, cpus);
	for (size_t q = 0; q < ns; q++) {
		if (seen[q] < 0) {   /* a node the driver does not give: no node at all */
			numa->len = 0;
			if (numa->buf)
				numa->buf[0] = '\0';
			break;
		}
		sb_addf(numa, "%s%d", q ? "," : "", seen[q]);
	}
	return true;
}
