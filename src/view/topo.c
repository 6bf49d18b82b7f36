/* topo.c (view/): `gpuctl topo`'s output (topo.h). The matrix is nvidia-smi's, byte for byte where
 * it can be (tab-separated cells, " X " on the diagonal, NV# where GPUs share NVLinks, else the
 * PCIe level; then CPU Affinity, NUMA Affinity and GPU NUMA ID; the legend after): scripts that
 * parse `nvidia-smi topo -m` read it, and people compare the two. nvidia-smi's NIC columns are
 * not shown (gpuctl reads GPUs only). A value the driver does not give is N/A (null in JSON). */
#include "view/topo.h"
#include "base/json.h"

#include <stdio.h>

const char *topo_cell(const struct topo *t, size_t i, size_t j, char *buf, size_t len)
{
	if (i == j)
		return " X ";
	int nv = topo_nvlinks(t, i, j);
	if (nv > 0) {
		snprintf(buf, len, "NV%d", nv);
		return buf;
	}
	return topo_level_name(topo_level_of(t, i, j));
}

static void cpus_text(const struct topo_gpu *g, struct strbuf *sb)
{
	if (g->cpus_valid)
		cpuset_format(&g->cpus, sb);
	else
		sb_adds(sb, "N/A");
}

void topo_matrix(const struct gpu_set *set, const struct topo *t, struct strbuf *sb)
{
	char buf[16];
	for (size_t j = 0; j < t->n; j++)
		sb_addf(sb, "\tGPU%u", set->gpus[j].index);
	sb_adds(sb, "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n");
	for (size_t i = 0; i < t->n; i++) {
		const struct topo_gpu *g = &t->gpu[i];
		sb_addf(sb, "GPU%u", set->gpus[i].index);
		for (size_t j = 0; j < t->n; j++)
			sb_addf(sb, "\t%s", topo_cell(t, i, j, buf, sizeof buf));
		sb_addc(sb, '\t');
		cpus_text(g, sb);
		/* nvidia-smi ends the NUMA Affinity cell with two tabs */
		if (g->numa >= 0)
			sb_addf(sb, "\t%d\t\t", g->numa);
		else
			sb_adds(sb, "\tN/A\t\t");
		if (g->gpu_numa >= 0)
			sb_addf(sb, "%d\n", g->gpu_numa);
		else
			sb_adds(sb, "N/A\n");
	}
	sb_adds(sb, "\nLegend:\n\n  X    = Self\n");
	static const enum topo_level order[] = {TOPO_SYS, TOPO_NODE, TOPO_PHB, TOPO_PXB, TOPO_PIX};
	for (size_t k = 0; k < ARRAY_SIZE(order); k++)
		sb_addf(sb, "  %-4s = %s\n", topo_level_name(order[k]), topo_level_text(order[k]));
	sb_adds(sb, "  NV#  = Connection traversing a bonded set of # NVLinks\n");
}

void topo_json(const struct gpu_set *set, const struct topo *t, struct strbuf *sb)
{
	struct json j;
	char buf[16];
	json_init(&j, sb, true);
	json_obj(&j, NULL);
	json_arr(&j, "gpus");
	for (size_t i = 0; i < t->n; i++) {
		const struct gpu *g = &set->gpus[i];
		const struct topo_gpu *tg = &t->gpu[i];
		json_obj(&j, NULL);
		json_uint(&j, "index", g->index);
		json_str(&j, "uuid", g->uuid[0] ? g->uuid : NULL);
		json_str(&j, "pci_bus_id", g->pci_bus_id[0] ? g->pci_bus_id : NULL);
		struct strbuf cpus = {0};
		if (tg->cpus_valid)
			cpuset_format(&tg->cpus, &cpus);
		json_str(&j, "cpu_affinity", tg->cpus_valid ? cpus.buf : NULL);
		sb_free(&cpus);
		if (tg->numa >= 0)
			json_int(&j, "numa_node", tg->numa);
		else
			json_null(&j, "numa_node");
		if (tg->gpu_numa >= 0)
			json_int(&j, "gpu_numa_id", tg->gpu_numa);
		else
			json_null(&j, "gpu_numa_id");
		json_arr(&j, "links");
		for (size_t k = 0; k < t->n; k++) {
			if (k == i)
				continue;
			enum topo_level l = topo_level_of(t, i, k);
			int nv = topo_nvlinks(t, i, k);
			json_obj(&j, NULL);
			json_uint(&j, "gpu", set->gpus[k].index);
			json_str(&j, "link", topo_cell(t, i, k, buf, sizeof buf));
			if (nv >= 0)
				json_int(&j, "nvlinks", nv);
			else
				json_null(&j, "nvlinks");
			json_str(&j, "pcie", l == TOPO_NA ? NULL : topo_level_name(l));
			json_end_obj(&j);
		}
		json_end_arr(&j);
		json_end_obj(&j);
	}
	json_end_arr(&j);
	json_end_obj(&j);
}
