/* topo.c (nvml/): the machine's topology from NVML into the vendor-neutral model (machine/topo.h),
 * as `nvidia-smi topo -m` reads it (issue 26):
 * - the PCIe path of each pair: nvmlDeviceGetTopologyCommonAncestor;
 * - NVLinks: each of a GPU's links (0 .. NVML_NVLINK_MAX_LINKS-1) that nvmlDeviceGetNvLinkState
 *   says is active leads to a GPU, named by nvmlDeviceGetNvLinkRemotePciInfo's address, or to an
 *   NVSwitch (nvmlDeviceGetNvLinkRemoteDeviceType: SWITCH). Two GPUs on switches are joined by as
 *   many links as the one with fewer has, where nvmlDeviceGetP2PStatus(NVLINK) says the fabric
 *   joins them (an HGX board's NV18 everywhere);
 * - the CPUs local to a GPU: nvmlDeviceGetCpuAffinityWithinScope(NODE), else the older
 *   nvmlDeviceGetCpuAffinity; their node: nvmlDeviceGetMemoryAffinity(NODE); the GPU's own node
 *   (Grace): nvmlDeviceGetNumaNodeId.
 * The symbols are resolved here, with their fallbacks, the first time topology is asked for (only
 * `gpuctl topo` and the daemon ask), so lib.c's table stays the refresh's. What a driver lacks or
 * refuses stays unknown. */
#include "machine/nvml/topo.h"
#include "machine/nvml/fields.h"
#include "base/dl.h"

#include <stdlib.h>
#include <string.h>

static struct {
	bool resolved;
	nvmlReturn_t (*ancestor)(nvmlDevice_t, nvmlDevice_t, nvmlGpuTopologyLevel_t *);
	nvmlReturn_t (*p2p)(nvmlDevice_t, nvmlDevice_t, nvmlGpuP2PCapsIndex_t, nvmlGpuP2PStatus_t *);
	nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, nvmlEnableState_t *);
	nvmlReturn_t (*link_type)(nvmlDevice_t, unsigned, nvmlIntNvLinkDeviceType_t *);
	void *link_pci;           /* _v2: nvmlPciInfo_t; plain: nvmlPciInfo_v1_t */
	int link_pci_ver;
	nvmlReturn_t (*cpus_scope)(nvmlDevice_t, unsigned, unsigned long *, nvmlAffinityScope_t);
	nvmlReturn_t (*cpus)(nvmlDevice_t, unsigned, unsigned long *);
	nvmlReturn_t (*mem_affinity)(nvmlDevice_t, unsigned, unsigned long *, nvmlAffinityScope_t);
	nvmlReturn_t (*numa_id)(nvmlDevice_t, unsigned *);
} T;

static void resolve(void)
{
	if (T.resolved || !nvml.dl)
		return;
	T.resolved = true;
	const struct { void *slot; const char *names[3]; } syms[] = {
		{&T.ancestor, {"nvmlDeviceGetTopologyCommonAncestor"}},
		{&T.p2p, {"nvmlDeviceGetP2PStatus"}},
		{&T.link_state, {"nvmlDeviceGetNvLinkState"}},
		{&T.link_type, {"nvmlDeviceGetNvLinkRemoteDeviceType"}},
		{&T.cpus_scope, {"nvmlDeviceGetCpuAffinityWithinScope"}},
		{&T.cpus, {"nvmlDeviceGetCpuAffinity"}},
		{&T.mem_affinity, {"nvmlDeviceGetMemoryAffinity"}},
		{&T.numa_id, {"nvmlDeviceGetNumaNodeId"}},
	};
	for (size_t i = 0; i < ARRAY_SIZE(syms); i++)
		dl_resolve(nvml.dl, syms[i].slot, syms[i].names);
	static const char *const pci[] = {"nvmlDeviceGetNvLinkRemotePciInfo_v2",
					  "nvmlDeviceGetNvLinkRemotePciInfo", NULL};
	T.link_pci_ver = 2 - dl_resolve(nvml.dl, &T.link_pci, pci);
}

static enum topo_level level_of(nvmlGpuTopologyLevel_t l)
{
	switch (l) {
	case NVML_TOPOLOGY_INTERNAL: return TOPO_BOARD;
	case NVML_TOPOLOGY_SINGLE: return TOPO_PIX;
	case NVML_TOPOLOGY_MULTIPLE: return TOPO_PXB;
	case NVML_TOPOLOGY_HOSTBRIDGE: return TOPO_PHB;
	case NVML_TOPOLOGY_NODE: return TOPO_NODE;
	case NVML_TOPOLOGY_SYSTEM: return TOPO_SYS;
	}
	return TOPO_NA;
}

static nvmlDevice_t handle(const struct gpu *g)
{
	return g->lost || g->inaccessible || !g->priv ? NULL : ((struct nvml_dev *)g->priv)->h;
}

/* The position of the GPU at a PCI address, or -1. */
static int gpu_at(const struct gpu_set *set, unsigned dom, unsigned bus, unsigned dev)
{
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		if (g->pci_bus_id[0] && g->pci_domain == dom && g->pci_bus == bus && g->pci_dev == dev)
			return (int)i;
	}
	return -1;
}

/* GPU i's active links: those to each GPU (direct[j]) and to switches (*sw). false: the driver
 * gave no answer on NVLink at all (function missing, or an error other than "not supported"). */
static bool read_links(const struct gpu_set *set, size_t i, int *direct, int *sw)
{
	nvmlDevice_t h = handle(&set->gpus[i]);
	if (!h || !T.link_state)
		return false;
	*sw = 0;
	for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		nvmlEnableState_t on;
		nvmlReturn_t r = T.link_state(h, l, &on);
		if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT)
			continue;   /* no such link on this GPU */
		if (r != NVML_SUCCESS)
			return false;
		if (on != NVML_FEATURE_ENABLED)
			continue;
		nvmlIntNvLinkDeviceType_t type;
		if (T.link_type && T.link_type(h, l, &type) == NVML_SUCCESS &&
		    type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
			(*sw)++;
			continue;
		}
		unsigned dom, bus, dev;
		if (T.link_pci_ver == 2) {
			nvmlPciInfo_t p;
			if (((nvmlReturn_t(*)(nvmlDevice_t, unsigned, nvmlPciInfo_t *))T.link_pci)(h, l, &p))
				continue;
			dom = p.domain, bus = p.bus, dev = p.device;
		} else if (T.link_pci) {
			nvmlPciInfo_v1_t p;
			if (((nvmlReturn_t(*)(nvmlDevice_t, unsigned, nvmlPciInfo_v1_t *))T.link_pci)(h, l, &p))
				continue;
			dom = p.domain, bus = p.bus, dev = p.device;
		} else {
			continue;
		}
		int j = gpu_at(set, dom, bus, dev);
		if (j >= 0 && (size_t)j != i)
			direct[j]++;
		else if (j < 0 && !T.link_type)
			(*sw)++;   /* a driver without the device type: a link to no GPU is a switch's */
	}
	return true;
}

static void read_affinity(struct topo_gpu *tg, nvmlDevice_t h)
{
	nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
	if (T.cpus_scope)
		r = T.cpus_scope(h, TOPO_CPU_WORDS, tg->cpus.w, NVML_AFFINITY_SCOPE_NODE);
	if (r != NVML_SUCCESS && T.cpus)
		r = T.cpus(h, TOPO_CPU_WORDS, tg->cpus.w);
	tg->cpus_valid = r == NVML_SUCCESS && !cpuset_empty(&tg->cpus);
	if (!tg->cpus_valid)
		memset(&tg->cpus, 0, sizeof tg->cpus);
	unsigned long nodes[4] = {0};
	if (T.mem_affinity &&
	    T.mem_affinity(h, ARRAY_SIZE(nodes), nodes, NVML_AFFINITY_SCOPE_NODE) == NVML_SUCCESS)
		for (size_t b = 0; b < 8 * sizeof nodes && tg->numa < 0; b++)
			if (nodes[b / (8 * sizeof *nodes)] >> (b % (8 * sizeof *nodes)) & 1UL)
				tg->numa = (int)b;
	unsigned id;
	if (T.numa_id && T.numa_id(h, &id) == NVML_SUCCESS && id < 100000)
		tg->gpu_numa = (int)id;
}

struct topo *nvml_topo_read(struct gpu_set *set)
{
	resolve();
	size_t n = set->ngpus;
	struct topo *t = topo_new(n);
	int *direct = xcalloc(n * n + 1, sizeof *direct), *sw = xcalloc(n + 1, sizeof *sw);
	bool *links = xcalloc(n + 1, sizeof *links);
	for (size_t i = 0; i < n; i++) {
		nvmlDevice_t h = handle(&set->gpus[i]);
		if (!h)
			continue;
		read_affinity(&t->gpu[i], h);
		links[i] = read_links(set, i, direct + i * n, &sw[i]);
	}
	for (size_t i = 0; i < n; i++) {
		nvmlDevice_t hi = handle(&set->gpus[i]);
		for (size_t j = 0; j < n && hi; j++) {
			nvmlDevice_t hj = handle(&set->gpus[j]);
			nvmlGpuTopologyLevel_t l;
			if (i == j || !hj)
				continue;
			if (T.ancestor && T.ancestor(hi, hj, &l) == NVML_SUCCESS)
				t->level[i * n + j] = (unsigned char)level_of(l);
			if (!links[i])
				continue;
			int nv = direct[i * n + j];
			nvmlGpuP2PStatus_t st = NVML_P2P_STATUS_OK;
			if (sw[i] && links[j] && sw[j] &&
			    (!T.p2p || T.p2p(hi, hj, NVML_P2P_CAPS_INDEX_NVLINK, &st) != NVML_SUCCESS ||
			     st == NVML_P2P_STATUS_OK))
				nv += sw[i] < sw[j] ? sw[i] : sw[j];
			t->nvlinks[i * n + j] = nv;
		}
	}
	free(direct);
	free(sw);
	free(links);
	return t;
}
