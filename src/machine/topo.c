/* topo.c: the topology model's helpers (topo.h): making and freeing it, the levels' names and
 * nvidia-smi's legend for them, and CPU sets as the kernel's cpulist text. The reading is the
 * backend's (nvml/topo.c). */
#include "machine/topo.h"
#include "machine/gpu.h"

#include <stdlib.h>
#include <string.h>

struct topo *topo_new(size_t n)
{
	struct topo *t = xcalloc(1, sizeof *t);
	t->n = n;
	t->level = xcalloc(n * n + 1, 1);
	t->nvlinks = xmalloc((n * n + 1) * sizeof *t->nvlinks);
	for (size_t i = 0; i < n * n; i++)
		t->nvlinks[i] = -1;
	t->gpu = xcalloc(n + 1, sizeof *t->gpu);
	for (size_t i = 0; i < n; i++)
		t->gpu[i].numa = t->gpu[i].gpu_numa = -1;
	return t;
}

void topo_free(struct topo *t)
{
	if (!t)
		return;
	free(t->level);
	free(t->nvlinks);
	free(t->gpu);
	free(t);
}

bool topo_known(const struct topo *t)
{
	for (size_t i = 0; t && i < t->n * t->n; i++)
		if (t->level[i] != TOPO_NA || t->nvlinks[i] > 0)
			return true;
	for (size_t i = 0; t && i < t->n; i++)
		if (t->gpu[i].cpus_valid || t->gpu[i].numa >= 0)
			return true;
	return false;
}

struct topo *gpu_set_topo(struct gpu_set *set)
{
	return set && set->backend && set->backend->topo ? set->backend->topo(set) : NULL;
}

static const char *const names[TOPO_LEVELS] = {
	[TOPO_NA] = "N/A", [TOPO_BOARD] = "PIX", [TOPO_PIX] = "PIX", [TOPO_PXB] = "PXB",
	[TOPO_PHB] = "PHB", [TOPO_NODE] = "NODE", [TOPO_SYS] = "SYS",
};

/* nvidia-smi topo -m's legend, word for word. A board-internal link (dual-GPU cards) it shows as
 * PIX: at most one bridge. */
static const char *const texts[TOPO_LEVELS] = {
	[TOPO_NA] = "The driver does not say",
	[TOPO_BOARD] = "Connection traversing at most a single PCIe bridge",
	[TOPO_PIX] = "Connection traversing at most a single PCIe bridge",
	[TOPO_PXB] = "Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
	[TOPO_PHB] = "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
	[TOPO_NODE] = "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node",
	[TOPO_SYS] = "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
};

const char *topo_level_name(enum topo_level l)
{
	return l < TOPO_LEVELS ? names[l] : "N/A";
}

const char *topo_level_text(enum topo_level l)
{
	return l < TOPO_LEVELS ? texts[l] : texts[TOPO_NA];
}

static bool cpu_has(const struct cpuset *s, size_t c)
{
	return (s->w[c / TOPO_CPU_BITS] >> (c % TOPO_CPU_BITS)) & 1UL;
}

bool cpuset_parse(const char *s, struct cpuset *out)
{
	memset(out, 0, sizeof *out);
	if (!*s)
		return false;
	while (*s) {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a;
		if (end == s || *s < '0' || *s > '9')
			return false;
		if (*end == '-') {
			s = end + 1;
			if (*s < '0' || *s > '9')
				return false;
			b = strtoul(s, &end, 10);
		}
		if (b < a || b >= TOPO_MAX_CPUS)
			return false;
		for (unsigned long c = a; c <= b; c++)
			out->w[c / TOPO_CPU_BITS] |= 1UL << (c % TOPO_CPU_BITS);
		s = end;
		if (*s == ',' && s[1])
			s++;
		else if (*s)
			return false;
	}
	return true;
}

void cpuset_format(const struct cpuset *s, struct strbuf *sb)
{
	bool first = true;
	for (size_t c = 0; c < TOPO_MAX_CPUS; c++) {
		if (!cpu_has(s, c))
			continue;
		size_t e = c;
		while (e + 1 < TOPO_MAX_CPUS && cpu_has(s, e + 1))
			e++;
		if (e == c)
			sb_addf(sb, "%s%zu", first ? "" : ",", c);
		else
			sb_addf(sb, "%s%zu-%zu", first ? "" : ",", c, e);
		first = false;
		c = e;
	}
}

bool cpuset_empty(const struct cpuset *s)
{
	for (size_t i = 0; i < TOPO_CPU_WORDS; i++)
		if (s->w[i])
			return false;
	return true;
}

bool cpuset_equal(const struct cpuset *a, const struct cpuset *b)
{
	return !memcmp(a->w, b->w, sizeof a->w);
}

void cpuset_or(struct cpuset *a, const struct cpuset *b)
{
	for (size_t i = 0; i < TOPO_CPU_WORDS; i++)
		a->w[i] |= b->w[i];
}

void cpuset_and(struct cpuset *a, const struct cpuset *b)
{
	for (size_t i = 0; i < TOPO_CPU_WORDS; i++)
		a->w[i] &= b->w[i];
}

size_t cpuset_count(const struct cpuset *s)
{
	size_t n = 0;
	for (size_t i = 0; i < TOPO_CPU_WORDS; i++)
		n += (size_t)__builtin_popcountl(s->w[i]);
	return n;
}
