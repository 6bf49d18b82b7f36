/* topo.c: `gpuctl topo [--json]` (issue 26): how the GPUs are connected, as `nvidia-smi topo -m`
 * shows it (NVLinks, the PCIe path, each GPU's local CPUs and NUMA node), from NVML's topology,
 * NVLink and affinity calls (machine/nvml/topo.c); the output is view/topo.c's. */
#include "cmd/cmd.h"
#include "machine/gpu.h"
#include "machine/topo.h"
#include "view/topo.h"
#include "base/json.h"

#include <stdio.h>

enum { O_JSON = 256 };

static int topo(struct cmd *c)
{
	bool json = args_has(&c->args, O_JSON);
	int rc = cmd_open(c);
	if (rc != EXIT_OK)
		return rc;
	struct topo *t = gpu_set_topo(c->set);
	if (!t) {
		struct gpu_error err = {.code = EXIT_FAIL};
		snprintf(err.msg, sizeof err.msg, "the driver gives no topology for these GPUs");
		return cmd_fail(c, &err);
	}
	struct strbuf sb = {0};
	if (json) {
		topo_json(c->set, t, &sb);
		json_print(&sb);
	} else {
		topo_matrix(c->set, t, &sb);
		fputs(sb.buf ? sb.buf : "", stdout);
		sb_free(&sb);
	}
	topo_free(t);
	return EXIT_OK;
}

static const struct option longopts[] = {{"json", no_argument, NULL, O_JSON}, {0}};

const struct cmd_entry cmd_topo_entry = {
	.name = "topo",
	.summary = "how the GPUs are connected (NVLink, PCIe, CPUs, NUMA), as nvidia-smi topo -m",
	.usage = "topo [--json]\n\n"
		 "The GPU-to-GPU matrix as `nvidia-smi topo -m` prints it: NV# where two GPUs share #\n"
		 "NVLinks, else how far apart they are over PCIe (PIX, PXB, PHB, NODE, SYS: see the\n"
		 "legend it prints), then each GPU's CPU Affinity (the CPUs local to it), NUMA\n"
		 "Affinity (their node) and GPU NUMA ID (the GPU's own memory as a node, Grace\n"
		 "systems). N/A: the driver does not say. `gpuctl run --bind-cpus` binds a job to its\n"
		 "GPUs' CPUs; the daemon places multi-GPU requests by this (gpuctl-run(1): PLACEMENT).\n\n"
		 "  --json          machine-readable (keys: man gpuctl-topo)\n",
	.args = {.longs = longopts},
	.flags = CMD_NVML,
	.exec = topo,
};
