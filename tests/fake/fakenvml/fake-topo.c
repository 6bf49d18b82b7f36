/* fake-topo.c: the stand-in's topology (issue 26). Test code only. A machine file gives each
 * GPU its row of `nvidia-smi topo -m` and its CPUs (tests/fake/machines/README.md):
 *
 *   links = X NV4 PIX/PXB SYS     one word per GPU in file order: X (itself), PIX, PXB, PHB,
 *                                 NODE, SYS (the PCIe path), NV<n> (n NVLinks; the PCIe path
 *                                 behind them is SYS, or NV<n>/LEVEL)
 *   cpu_affinity = 0-23,48-71     the CPUs local to it (nvmlDeviceGetCpuAffinity*)
 *   numa_node = 0                 the NUMA node of those CPUs (nvmlDeviceGetMemoryAffinity)
 *   gpu_numa_node = 2             the GPU's own memory as a NUMA node (Grace), else N/A
 *
 * and the global `nvswitch = 1` routes every NVLink through NVSwitches, as on an HGX board: each
 * GPU's links then lead to a switch (remote device type SWITCH, the switch's PCI address), and
 * nvmlDeviceGetP2PStatus(NVLINK) says which pairs the fabric joins, as the real driver does.
 * Without it a GPU's links are listed peer by peer, each naming the peer's PCI address. */
#include "fake.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORD_BITS (8 * sizeof(unsigned long))

static const struct { const char *name; int level; } levels[] = {
	{"PIX", NVML_TOPOLOGY_SINGLE}, {"PXB", NVML_TOPOLOGY_MULTIPLE},
	{"PHB", NVML_TOPOLOGY_HOSTBRIDGE}, {"NODE", NVML_TOPOLOGY_NODE},
	{"SYS", NVML_TOPOLOGY_SYSTEM},
};

static int level_of(const char *w)
{
	for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
		if (!strcmp(w, levels[i].name))
			return levels[i].level;
	return -1;
}

static int links_key(struct fm_topo *t, const char *v, char *why, size_t whylen)
{
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", v);
	int n = 0;
	for (char *save, *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (n >= FM_MAX_GPUS) {
			snprintf(why, whylen, "links: more than %d words", FM_MAX_GPUS);
			return -1;
		}
		int nv = 0, level;
		char *slash = strchr(w, '/');
		if (!strcmp(w, "X")) {
			level = NVML_TOPOLOGY_INTERNAL;
		} else if (!strncmp(w, "NV", 2)) {
			char *end;
			long k = strtol(w + 2, &end, 10);
			if (end == w + 2 || k < 1 || k > NVML_NVLINK_MAX_LINKS || (*end && end != slash)) {
				snprintf(why, whylen, "links: '%s' is not NV1..NV%d", w, NVML_NVLINK_MAX_LINKS);
				return -1;
			}
			nv = (int)k;
			level = slash ? level_of(slash + 1) : NVML_TOPOLOGY_SYSTEM;
		} else {
			level = level_of(w);
		}
		if (level < 0) {
			snprintf(why, whylen, "links: '%s' is not X, PIX, PXB, PHB, NODE, SYS or NV<n>", w);
			return -1;
		}
		t->nvlinks[n] = (signed char)nv;
		t->level[n++] = (unsigned char)level;
	}
	t->has_links = true;
	return 0;
}

static int cpus_key(struct fm_topo *t, const char *v, char *why, size_t whylen)
{
	memset(t->cpus, 0, sizeof t->cpus);
	const char *p = v;
	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b = a;
		if (end == p)
			goto bad;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p)
				goto bad;
		}
		if (a < 0 || b < a || b >= FM_MAX_CPUS)
			goto bad;
		for (long c = a; c <= b; c++)
			t->cpus[c / WORD_BITS] |= 1UL << (c % WORD_BITS);
		p = end;
		if (*p == ',')
			p++;
		else if (*p)
			goto bad;
	}
	t->has_cpus = true;
	return 0;
bad:
	snprintf(why, whylen, "cpu_affinity: '%s' is not a CPU list such as 0-23,48-71", v);
	return -1;
}

int fm_topo_key(struct fm_topo *t, const char *k, const char *v, char *why, size_t whylen)
{
	if (!strcmp(k, "links"))
		return links_key(t, v, why, whylen);
	if (!strcmp(k, "cpu_affinity"))
		return cpus_key(t, v, why, whylen);
	if (!strcmp(k, "numa_node") || !strcmp(k, "gpu_numa_node")) {
		int *dst = k[0] == 'n' ? &t->numa : &t->gpu_numa;
		char *end;
		long n = strtol(v, &end, 10);
		if (!strcmp(v, "NA"))
			n = -1;
		else if (end == v || *end || n < 0 || n > 1023) {
			snprintf(why, whylen, "%s: '%s' is not a node number or NA", k, v);
			return -1;
		}
		*dst = (int)n;
		return 0;
	}
	return 1;
}

/* A whole GPU with a links row: the row's entry for GPU j, NULL if none. */
static nvmlReturn_t pair(nvmlDevice_t h1, nvmlDevice_t h2, const char *fn, struct dev *d1,
			 struct dev *d2)
{
	nvmlReturn_t r = enter(h1, fn, d1);
	if (r)
		return r;
	if ((r = enter(h2, fn, d2)))
		return r;
	if (d1->mg || d2->mg || !d1->g->topo.has_links)
		return NVML_ERROR_NOT_SUPPORTED;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
						     nvmlGpuTopologyLevel_t *pathInfo)
{
	struct dev a, b;
	nvmlReturn_t r = pair(device1, device2, __func__, &a, &b);
	if (r)
		return r;
	if (!pathInfo)
		return NVML_ERROR_INVALID_ARGUMENT;
	*pathInfo = (nvmlGpuTopologyLevel_t)a.g->topo.level[b.idx];
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
					nvmlGpuP2PCapsIndex_t p2pIndex, nvmlGpuP2PStatus_t *p2pStatus)
{
	struct dev a, b;
	nvmlReturn_t r = pair(device1, device2, __func__, &a, &b);
	if (r)
		return r;
	if (!p2pStatus || (int)p2pIndex < 0 || p2pIndex >= NVML_P2P_CAPS_INDEX_UNKNOWN)
		return NVML_ERROR_INVALID_ARGUMENT;
	const struct fm_topo *t = &a.g->topo;
	if (p2pIndex == NVML_P2P_CAPS_INDEX_NVLINK)
		*p2pStatus = t->nvlinks[b.idx] ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_NOT_SUPPORTED;
	else /* peer reads and writes over NVLink, or PCIe inside one host bridge */
		*p2pStatus = t->nvlinks[b.idx] || t->level[b.idx] <= NVML_TOPOLOGY_HOSTBRIDGE
				     ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED;
	return NVML_SUCCESS;
}

/* Link `link` of GPU d: with NVSwitches, one of its max-over-peers links to a switch; without,
 * the peers' links in index order. *peer: the GPU it reaches (-1: a switch). */
static nvmlReturn_t link_of(const struct dev *d, unsigned link, int *peer)
{
	const struct fm_topo *t = &d->g->topo;
	if (d->mg || !t->has_links)
		return NVML_ERROR_NOT_SUPPORTED;
	if (link >= NVML_NVLINK_MAX_LINKS)
		return NVML_ERROR_INVALID_ARGUMENT;
	unsigned total = 0;
	for (int j = 0; j < M.ngpus; j++) {
		unsigned n = (unsigned)t->nvlinks[j];
		if (M.nvswitch) {
			total = n > total ? n : total;
			continue;
		}
		if (link < total + n) {
			*peer = j;
			return NVML_SUCCESS;
		}
		total += n;
	}
	if (M.nvswitch && link < total) {
		*peer = -1;
		return NVML_SUCCESS;
	}
	return NVML_ERROR_NOT_SUPPORTED;   /* no such link on this GPU, as the driver answers */
}

API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
					  nvmlEnableState_t *isActive)
{
	struct dev d;
	int peer;
	nvmlReturn_t r = enter(device, __func__, &d);
	if (r || (r = link_of(&d, link, &peer)))
		return r;
	if (!isActive)
		return NVML_ERROR_INVALID_ARGUMENT;
	*isActive = NVML_FEATURE_ENABLED;
	return NVML_SUCCESS;
}

#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
						     nvmlIntNvLinkDeviceType_t *pNvLinkDeviceType)
{
	struct dev d;
	int peer;
	nvmlReturn_t r = enter(device, __func__, &d);
	if (r || (r = link_of(&d, link, &peer)))
		return r;
	if (!pNvLinkDeviceType)
		return NVML_ERROR_INVALID_ARGUMENT;
	*pNvLinkDeviceType = peer < 0 ? NVML_NVLINK_DEVICE_TYPE_SWITCH : NVML_NVLINK_DEVICE_TYPE_GPU;
	return NVML_SUCCESS;
}
#endif

/* The far end's address: the peer GPU's, or the switch's (a bus of its own). */
static void remote(int peer, unsigned *dom, unsigned *bus, unsigned *dv, char *id, size_t idlen,
		   bool legacy)
{
	const struct fm_gpu *g = peer >= 0 ? &M.gpus[peer] : NULL;
	*dom = g ? g->dom : 0;
	*bus = g ? g->bus : 0xC0;
	*dv = g ? g->dev : 0;
	snprintf(id, idlen, legacy ? "%04X:%02X:%02X.0" : "%08X:%02X:%02X.0", *dom, *bus, *dv);
}

#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
						     nvmlPciInfo_t *pci)
{
	struct dev d;
	int peer;
	nvmlReturn_t r = enter(device, __func__, &d);
	if (r || (r = link_of(&d, link, &peer)))
		return r;
	if (!pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(pci, 0, sizeof *pci);
	remote(peer, &pci->domain, &pci->bus, &pci->device, pci->busId, sizeof pci->busId, false);
	snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", pci->domain,
		 pci->bus, pci->device);
	return NVML_SUCCESS;
}
#endif

API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t device, unsigned int link,
						  nvmlPciInfo_v1_t *pci)
{
	struct dev d;
	int peer;
	nvmlReturn_t r = enter(device, __func__, &d);
	if (r || (r = link_of(&d, link, &peer)))
		return r;
	if (!pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(pci, 0, sizeof *pci);
	remote(peer, &pci->domain, &pci->bus, &pci->device, pci->busId, sizeof pci->busId, true);
	return NVML_SUCCESS;
}

/* A bit set of `size` words from the GPU's CPUs (or its node). */
static nvmlReturn_t cpus(nvmlDevice_t h, const char *fn, unsigned size, unsigned long *set)
{
	struct dev d;
	nvmlReturn_t r = enter(h, fn, &d);
	if (r)
		return r;
	if (!set || !size)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !d.g->topo.has_cpus)
		return NVML_ERROR_NOT_SUPPORTED;
	memset(set, 0, size * sizeof *set);
	size_t words = sizeof d.g->topo.cpus / sizeof d.g->topo.cpus[0];
	memcpy(set, d.g->topo.cpus, (size < words ? size : words) * sizeof *set);
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize,
					  unsigned long *cpuSet)
{
	return cpus(device, __func__, cpuSetSize, cpuSet);
}

#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetCpuAffinityWithinScope(nvmlDevice_t device, unsigned int cpuSetSize,
						     unsigned long *cpuSet, nvmlAffinityScope_t scope)
{
	if (scope != NVML_AFFINITY_SCOPE_NODE && scope != NVML_AFFINITY_SCOPE_SOCKET) {
		count_call(__func__);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	return cpus(device, __func__, cpuSetSize, cpuSet);
}

API nvmlReturn_t nvmlDeviceGetMemoryAffinity(nvmlDevice_t device, unsigned int nodeSetSize,
					     unsigned long *nodeSet, nvmlAffinityScope_t scope)
{
	struct dev d;
	nvmlReturn_t r = enter(device, __func__, &d);
	if (r)
		return r;
	if (!nodeSet || !nodeSetSize || (scope != NVML_AFFINITY_SCOPE_NODE &&
					 scope != NVML_AFFINITY_SCOPE_SOCKET))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || d.g->topo.numa < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	memset(nodeSet, 0, nodeSetSize * sizeof *nodeSet);
	unsigned node = (unsigned)d.g->topo.numa;
	if (node / WORD_BITS < nodeSetSize)
		nodeSet[node / WORD_BITS] = 1UL << (node % WORD_BITS);
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node)
{
	struct dev d;
	nvmlReturn_t r = enter(device, __func__, &d);
	if (r)
		return r;
	if (!node)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || d.g->topo.gpu_numa < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	*node = (unsigned)d.g->topo.gpu_numa;
	return NVML_SUCCESS;
}
#endif
