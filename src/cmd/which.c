/* which.c: `gpuctl which [N]`: the physical GPU behind CUDA device N under the current
 * CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, for people and for scripts (--format). */
#include "base/escape.h"
#include "machine/gpu.h"
#include "cmd/cmd.h"
#include "base/util.h"
#include "cmd/visopts.h"

#include <stdio.h>
#include <string.h>

enum fmt { F_HUMAN, F_INDEX, F_UUID, F_PCI };

static int which(struct cmd *c)
{
	static const char *const formats[] = {"index", "uuid", "pci", NULL}; /* F_INDEX on */
	struct vis_request rq;
	int f = args_choice(&c->args, 'f', formats, -2);
	if (f == -1 || !visopts_read(&c->args, &rq))
		return cmd_args_error(c);
	enum fmt fmt = f < 0 ? F_HUMAN : (enum fmt)(F_INDEX + f);
	unsigned long n = 0;
	if (c->args.argc && !parse_uint(c->args.argv[0], &n))
		return cmd_bad_usage(c->entry, "N is a CUDA device number (0, 1, ...), not '%s'",
				     c->args.argv[0]);
	struct vis_session vs;
	int rc = visopts_session_open(&vs, &rq, c);
	if (rc != EXIT_OK)
		return rc;
	const struct vis_machine *m = vs.m;
	const struct vis_result *r = vs.r;
	const struct proc_env env = vs.env;
	if (n >= r->ndevs) {
		fprintf(stderr, "gpuctl which: CUDA device %lu is not visible: ", n);
		if (r->ndevs)
			fprintf(stderr, "CUDA_VISIBLE_DEVICES=%s makes %zu device%s visible (0-%zu)\n",
				env.cvd ? esc_str(env.cvd, 0) : "(unset)", r->ndevs, r->ndevs == 1 ? "" : "s",
				r->ndevs - 1);
		else
			fprintf(stderr, "no device is visible with CUDA_VISIBLE_DEVICES='%s'\n",
				esc_str(env.cvd, 0));
		for (size_t i = 0; i < r->nwarns; i++)
			if (r->warns[i].severity != SEV_INFO)
				fprintf(stderr, "  %s [%s]: %s\n", vis_severity_name(r->warns[i].severity),
					r->warns[i].code, esc_str(r->warns[i].message, 1));
		rc = EXIT_NOT_VISIBLE;
	} else {
		const struct vis_dev *d = &r->devs[n];
		const struct vis_gpu *g = &m->gpus[d->gpu];
		const struct vis_mig *mg = d->mig >= 0 ? &m->migs[d->mig] : NULL;
		switch (fmt) {
		case F_INDEX:
			if (mg)
				printf("%u:%u\n", g->nvml_index, mg->slot);
			else
				printf("%u\n", g->nvml_index);
			break;
		case F_UUID: printf("%s\n", mg ? mg->uuid : g->uuid); break;
		case F_PCI: printf("%s\n", g->pci_bus_id); break;
		case F_HUMAN:
			if (mg)
				printf("CUDA device %lu is MIG device %s (GPU instance %u, compute instance "
				       "%u) on nvidia-smi GPU %u, %s, %s\n", n, mg->uuid, mg->gi, mg->ci,
				       g->nvml_index, g->uuid, g->name);
			else
				printf("CUDA device %lu is nvidia-smi GPU %u: %s at %s, %s\n", n,
				       g->nvml_index, g->uuid, g->pci_bus_id, g->name);
			break;
		}
		/* Inside a Slurm job: whether it is one of the GPUs Slurm gave the job. */
		struct vis_slurm sl;
		if (vis_slurm_read(&vs, c->set, &sl) && sl.mapped) {
			bool in = d->gpu < GPU_MAX && (sl.gpus >> d->gpu & 1);
			struct strbuf sb = {0};
			vis_indices(&sb, m, sl.gpus);
			if (fmt == F_HUMAN || !in)
				fprintf(fmt == F_HUMAN ? stdout : stderr, "%s%s of Slurm job %s: "
					"nvidia-smi GPU%s %s (%s=%s)%s\n", fmt == F_HUMAN ? "" : "gpuctl which: ",
					in ? "it is one of the GPUs" : "warning: it is OUTSIDE the GPUs",
					esc_str(sl.a.job_id, 0),
					__builtin_popcountll(sl.gpus) == 1 ? "" : "s", sb.buf, sl.a.var,
					esc_str(sl.a.gpus, 1), in ? "" : ": set CUDA_DEVICE_ORDER=PCI_BUS_ID and "
					"leave CUDA_VISIBLE_DEVICES as Slurm set it");
			sb_free(&sb);
		} else if (sl.a.in_job && sl.a.var) {
			fprintf(stderr, "gpuctl which: note: %s=%s of Slurm job %s names no GPU here (%s)\n",
				sl.a.var, esc_str(sl.a.gpus, 1), esc_str(sl.a.job_id, 0), sl.why);
		}
		/* Ordinals (and no variable at all) count in CUDA's order; UUID lists do not. */
		bool uses_order = !env.cvd || (strncmp(env.cvd, "GPU-", 4) && strncmp(env.cvd, "MIG-", 4));
		if (!r->order_exact && uses_order)
			fprintf(stderr, "gpuctl which: note: estimated. CUDA_DEVICE_ORDER is FASTEST_FIRST "
					"on a machine of mixed GPUs; `gpuctl map --verify` asks the driver\n");
	}
	vis_session_close(&vs);
	return rc;
}

static const struct option longopts[] = {
	{"format", required_argument, NULL, 'f'}, VIS_LONGOPTS, {0},
};

const struct cmd_entry cmd_which_entry = {
	.name = "which",
	.summary = "which physical GPU is CUDA device N under the current environment",
	.usage =
		"which [N] [--format=index|uuid|pci] [--visible STR | --unset] [--order ORDER]\n"
		"            [--pid PID]\n\n"
		"Print the physical GPU (nvidia-smi index, UUID, bus id) that CUDA device N (default 0)\n"
		"is under CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER. Exit 7 when N is not visible.\n"
		"  --format=index  nvidia-smi index (GPU:MIG-slot for a MIG device)\n"
		"  --format=uuid   UUID (the MIG UUID for a MIG device)\n"
		"  --format=pci    PCI bus id\n"
		"  --visible STR, --unset, --order ORDER, --pid PID   as for `gpuctl map`\n",
	.args = {.longs = longopts, .upper = 1},
	.flags = CMD_NVML,
	.exec = which,
};
