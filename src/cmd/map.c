/* map.c: `gpuctl map`: every GPU under its three numberings (nvidia-smi's, CUDA's under each
 * CUDA_DEVICE_ORDER) and the logical index CUDA_VISIBLE_DEVICES gives it, with plain-language
 * warnings; `--verify` asks the CUDA driver itself and reports any disagreement. */
#include "cuda/probe.h"
#include "base/escape.h"
#include "machine/gpu.h"
#include "cmd/cmd.h"
#include "base/json.h"
#include "base/term.h"
#include "base/util.h"
#include "cmd/visopts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct verify {
	bool done, agreed;
	int n;                   /* devices the driver reported */
	struct strbuf report;
};

/* Describe the machine device with these UUID digits, or say it is unknown. */
static void describe_hex(struct strbuf *sb, const struct vis_machine *m, const struct cuda_dev *d)
{
	char hex[33];
	for (size_t i = 0; i < m->ngpus; i++)
		if (probe_uuid_hex(m->gpus[i].uuid, hex) && !strcmp(hex, d->uuid_hex)) {
			sb_addf(sb, "nvidia-smi GPU %u (%s)", m->gpus[i].nvml_index, m->gpus[i].uuid);
			return;
		}
	for (size_t i = 0; i < m->nmigs; i++)
		if (probe_uuid_hex(m->migs[i].uuid, hex) && !strcmp(hex, d->uuid_hex)) {
			sb_addf(sb, "MIG device %s on GPU %u", m->migs[i].uuid,
				m->gpus[m->migs[i].gpu].nvml_index);
			return;
		}
	sb_addf(sb, "a device NVML does not list (UUID digits %s, PCI %s)", d->uuid_hex, d->pci);
}

static void describe_dev(struct strbuf *sb, const struct vis_machine *m, const struct vis_dev *d)
{
	if (d->mig >= 0)
		sb_addf(sb, "MIG device %s on GPU %u", m->migs[d->mig].uuid, m->gpus[d->gpu].nvml_index);
	else
		sb_addf(sb, "nvidia-smi GPU %u (%s)", m->gpus[d->gpu].nvml_index, m->gpus[d->gpu].uuid);
}

static void run_verify(struct verify *v, const struct vis_machine *m, const struct vis_result *r,
		       const struct proc_env *env, struct gpu_error *err)
{
	struct cuda_dev *devs;
	v->n = cuda_probe(env, &devs, err->msg, sizeof err->msg);
	if (v->n < 0) {
		err->code = EXIT_NO_CUDA;
		return;
	}
	v->done = true;
	v->agreed = true;
	size_t n = (size_t)v->n > r->ndevs ? (size_t)v->n : r->ndevs;
	for (size_t i = 0; i < n; i++) {
		char hex[33] = "";
		const struct vis_dev *d = i < r->ndevs ? &r->devs[i] : NULL;
		if (d)
			probe_uuid_hex(d->mig >= 0 ? m->migs[d->mig].uuid : m->gpus[d->gpu].uuid, hex);
		if (d && i < (size_t)v->n && !strcmp(hex, devs[i].uuid_hex))
			continue;
		v->agreed = false;
		sb_addf(&v->report, "CUDA device %zu: gpuctl's model says ", i);
		if (d)
			describe_dev(&v->report, m, d);
		else
			sb_adds(&v->report, "nothing");
		sb_adds(&v->report, ", the CUDA driver says ");
		if (i < (size_t)v->n)
			describe_hex(&v->report, m, &devs[i]);
		else
			sb_adds(&v->report, "nothing");
		sb_addc(&v->report, '\n');
	}
	free(devs);
}

/* The Slurm allocation beside CUDA_VISIBLE_DEVICES: one line, then what disagrees. */
static void slurm_lines(const struct vis_machine *m, const struct vis_result *r,
			const struct vis_slurm *sl)
{
	struct strbuf sb = {0};
	sb_addf(&sb, "Slurm job %s", esc_str(sl->a.job_id, 0));
	if (sl->a.step_id)
		sb_addf(&sb, " step %s", esc_str(sl->a.step_id, 0));
	if (!sl->a.var) {
		sb_addf(&sb, ": %s (no SLURM_JOB_GPUS or SLURM_STEP_GPUS); CUDA_VISIBLE_DEVICES is not "
			     "Slurm's\n", sl->why);
	} else if (!sl->mapped) {
		sb_addf(&sb, ": %s=%s, which names no GPU here (%s)\n", sl->a.var,
			esc_str(sl->a.gpus, 1), sl->why);
	} else {
		sb_addf(&sb, ": %s=%s = nvidia-smi GPU%s ", sl->a.var, esc_str(sl->a.gpus, 1),
			__builtin_popcountll(sl->gpus) == 1 ? "" : "s");
		vis_indices(&sb, m, sl->gpus);
		sb_adds(&sb, " (Slurm's numbering, whatever the order)\n");
		for (size_t i = 0; i < sl->noutside; i++) {
			const struct vis_gpu *g = &m->gpus[r->devs[sl->outside[i]].gpu];
			sb_addf(&sb, "warning [slurm-outside]: CUDA device %zu is nvidia-smi GPU %u, which "
				"Slurm did not give this job (%s=%s): set CUDA_DEVICE_ORDER=PCI_BUS_ID and "
				"leave CUDA_VISIBLE_DEVICES as Slurm set it, or use `gpuctl run` inside "
				"the job\n", sl->outside[i], g->nvml_index, sl->a.var,
				esc_str(sl->a.gpus, 1));
		}
		if (sl->unseen && !sl->noutside) {
			sb_adds(&sb, "info [slurm-unused]: allocated GPU");
			sb_adds(&sb, __builtin_popcountll(sl->unseen) == 1 ? " " : "s ");
			vis_indices(&sb, m, sl->unseen);
			sb_adds(&sb, " not visible to CUDA under this CUDA_VISIBLE_DEVICES\n");
		}
	}
	fputs(sb.buf, stdout);
	sb_free(&sb);
}

static void table(const struct vis_machine *m, const struct vis_result *r, const struct proc_env *env,
		  const struct verify *v, const struct vis_slurm *sl, int width)
{
	const size_t *other = r->order == ORDER_PCI_BUS_ID ? r->fastest : r->pci;
	/* The FASTEST_FIRST column is an estimate on a mixed machine, whichever order is in effect,
	 * unless the driver has just confirmed it. */
	bool fastest_exact = r->fastest_exact ||
			     (v->done && v->agreed && r->order == ORDER_FASTEST_FIRST && r->unset);
	char cur_mark = r->order == ORDER_FASTEST_FIRST && !fastest_exact ? '*' : ' ';
	char oth_mark = r->order == ORDER_PCI_BUS_ID && !fastest_exact ? '*' : ' ';
	/* With --pid the values are that process's environment: another user's text, escaped. */
	printf("CUDA_VISIBLE_DEVICES=%s  CUDA_DEVICE_ORDER=%s\n",
	       env->cvd ? (*env->cvd ? esc_str(env->cvd, 0) : "\"\" (set, empty)") : "(unset)",
	       env->order ? esc_str(env->order, 1) : "(unset: FASTEST_FIRST)");
	if (sl)
		slurm_lines(m, r, sl);
	printf("%3s  %-16s %6s %8s %8s  %-18s  %s\n", "SMI", "PCI BUS ID", "CUDA",
	       r->order == ORDER_PCI_BUS_ID ? "FASTEST" : "PCI", "LOGICAL", "NAME", "UUID");
	bool wide = width >= 120;
	for (size_t i = 0; i < m->ngpus; i++) {
		const struct vis_gpu *g = &m->gpus[i];
		int logical = vis_logical(r, i, -1);
		char lg[16] = "-";
		if (logical >= 0)
			snprintf(lg, sizeof lg, "%d", logical);
		printf("%3u  %-16s %5d%c %7d%c %8s  %-18.18s  %.*s\n", g->nvml_index,
		       g->pci_bus_id ? g->pci_bus_id : "N/A", vis_rank(m, vis_enum_order(r), i), cur_mark,
		       vis_rank(m, other, i), oth_mark, lg, g->name ? g->name : "",
		       wide ? 40 : 12, g->uuid ? g->uuid : "");
	}
	for (size_t i = 0; i < m->nmigs; i++) {
		const struct vis_mig *mg = &m->migs[i];
		int logical = vis_logical(r, mg->gpu, (int)i);
		char lg[16] = "-", id[16];
		if (logical >= 0)
			snprintf(lg, sizeof lg, "%d", logical);
		snprintf(id, sizeof id, "%u:%u", m->gpus[mg->gpu].nvml_index, mg->slot);
		printf("%5s  MIG gi %-2u ci %-2u %17s %8s  %s\n", id, mg->gi, mg->ci, "", lg,
		       mg->uuid ? mg->uuid : "");
	}
	if (cur_mark == '*' || oth_mark == '*')
		printf("* estimated: CUDA does not publish its FASTEST_FIRST rule for mixed GPUs; "
		       "`gpuctl map --verify` asks the driver\n");
	for (size_t i = 0; i < r->nwarns; i++)
		printf("%s [%s]: %s\n", vis_severity_name(r->warns[i].severity), r->warns[i].code,
		       esc_str(r->warns[i].message, 0));
	if (v->done && v->agreed)
		printf("verified: the CUDA driver sees exactly these %d device%s, in this order\n", v->n,
		       v->n == 1 ? "" : "s");
	else if (v->done)
		printf("the CUDA driver disagrees with gpuctl's model (the driver is right):\n%s",
		       v->report.buf);
}

/* uuid: the device's own, a MIG UUID for a MIG device (NULL: the GPU's). One key per object. */
static void gpu_json(struct json *j, const struct vis_machine *m, size_t gi, const char *uuid)
{
	const struct vis_gpu *g = &m->gpus[gi];
	json_uint(j, "nvml_index", g->nvml_index);
	json_str(j, "uuid", uuid ? uuid : g->uuid);
	json_str(j, "pci_bus_id", g->pci_bus_id && *g->pci_bus_id ? g->pci_bus_id : NULL);
	json_str(j, "name", g->name && *g->name ? g->name : NULL);
}

static void slurm_json(struct json *j, const struct vis_machine *m, const struct vis_slurm *sl)
{
	if (!sl) {
		json_null(j, "slurm");
		return;
	}
	json_obj(j, "slurm");
	json_str(j, "job_id", sl->a.job_id);
	json_str(j, "step_id", sl->a.step_id);
	json_str(j, "variable", sl->a.var);
	json_str(j, "gpus", sl->a.gpus);
	if (sl->mapped) {
		json_arr(j, "nvml_indices");
		for (size_t i = 0; i < m->ngpus && i < GPU_MAX; i++)
			if (sl->gpus >> i & 1)
				json_uint(j, NULL, m->gpus[i].nvml_index);
		json_end_arr(j);
		json_arr(j, "outside_cuda_indices");
		for (size_t i = 0; i < sl->noutside; i++)
			json_uint(j, NULL, sl->outside[i]);
		json_end_arr(j);
		json_null(j, "error");
	} else {
		json_null(j, "nvml_indices");
		json_null(j, "outside_cuda_indices");
		json_str(j, "error", sl->why);
	}
	json_end_obj(j);
}

static void print_json(const struct vis_machine *m, const struct vis_result *r,
		       const struct proc_env *env, const struct verify *v, const struct vis_slurm *sl)
{
	struct strbuf sb = {0};
	struct json j;
	json_init(&j, &sb, true);
	json_obj(&j, NULL);
	json_str(&j, "cuda_visible_devices", env->cvd);
	json_str(&j, "cuda_device_order", vis_order_name(r->order));
	json_str(&j, "cuda_device_order_env", env->order);
	json_bool(&j, "order_exact", r->order_exact || (v->done && v->agreed));
	if (v->done)
		json_bool(&j, "verified", v->agreed);
	json_arr(&j, "devices");
	for (size_t i = 0; i < r->ndevs; i++) {
		const struct vis_dev *d = &r->devs[i];
		json_obj(&j, NULL);
		json_uint(&j, "cuda_index", i);
		const struct vis_mig *mg = d->mig >= 0 ? &m->migs[d->mig] : NULL;
		gpu_json(&j, m, d->gpu, mg ? mg->uuid : NULL);
		if (mg) {
			json_str(&j, "parent_uuid", m->gpus[d->gpu].uuid);
			json_uint(&j, "mig_index", mg->slot);
			json_uint(&j, "gpu_instance_id", mg->gi);
			json_uint(&j, "compute_instance_id", mg->ci);
		}
		json_end_obj(&j);
	}
	json_end_arr(&j);
	json_arr(&j, "hidden");
	for (size_t i = 0; i < m->ngpus; i++) {
		bool seen = false;
		for (size_t k = 0; k < r->ndevs; k++)
			seen |= r->devs[k].gpu == i;
		if (seen)
			continue;
		json_obj(&j, NULL);
		gpu_json(&j, m, i, NULL);
		json_end_obj(&j);
	}
	json_end_arr(&j);
	json_arr(&j, "gpus");
	for (size_t i = 0; i < m->ngpus; i++) {
		json_obj(&j, NULL);
		gpu_json(&j, m, i, NULL);
		json_uint(&j, "cuda_index_fastest_first", (unsigned)vis_rank(m, r->fastest, i));
		json_uint(&j, "cuda_index_pci_bus_id", (unsigned)vis_rank(m, r->pci, i));
		int lg = vis_logical(r, i, -1);
		if (lg >= 0)
			json_uint(&j, "logical_index", (unsigned)lg);
		else
			json_null(&j, "logical_index");
		json_end_obj(&j);
	}
	json_end_arr(&j);
	json_arr(&j, "warnings");
	for (size_t i = 0; i < r->nwarns; i++) {
		json_obj(&j, NULL);
		json_str(&j, "code", r->warns[i].code);
		json_str(&j, "severity", vis_severity_name(r->warns[i].severity));
		json_str(&j, "message", r->warns[i].message);
		json_end_obj(&j);
	}
	json_end_arr(&j);
	if (v->done && !v->agreed)
		json_str(&j, "disagreement", v->report.buf);
	slurm_json(&j, m, sl);
	json_end_obj(&j);
	json_print(&sb);
}

enum { O_JSON = 'j', O_VERIFY = 'v' };

static int map(struct cmd *c)
{
	struct vis_request rq;
	bool json = args_has(&c->args, O_JSON), verify = args_has(&c->args, O_VERIFY);
	if (!visopts_read(&c->args, &rq))
		return cmd_args_error(c);
	struct vis_session vs;
	int rc = visopts_session_open(&vs, &rq, c);
	if (rc != EXIT_OK)
		return rc;
	struct gpu_error err = {0};
	const struct vis_machine *m = vs.m;
	const struct vis_result *r = vs.r;
	const struct proc_env env = vs.env;
	struct verify v = {0};
	if (verify) {
		run_verify(&v, m, r, &env, &err);
		if (!v.done) {
			fprintf(stderr, "gpuctl map --verify: %s\n", err.msg);
			rc = err.code;
		} else if (!v.agreed) {
			rc = EXIT_MISMATCH;
		}
	}
	/* Confirmed by the driver: the order is no longer an estimate. */
	for (size_t i = 0; v.done && v.agreed && i < r->nwarns; i++) {
		char *est = strstr(r->warns[i].message, " (estimated)");
		if (est)
			memmove(est, est + 12, strlen(est + 12) + 1);
	}
	/* An error-level warning (a repeated ordinal hides every GPU) fails, as doctor's errors do. */
	for (size_t i = 0; rc == EXIT_OK && i < r->nwarns; i++)
		if (r->warns[i].severity == SEV_ERROR)
			rc = EXIT_FAIL;
	if (rq.pid && !json)
		printf("process %lu, as it was started (changes it made to its own environment "
		       "later do not show)\n", rq.pid);
	struct vis_slurm slurm;
	const struct vis_slurm *sl = vis_slurm_read(&vs, c->set, &slurm) ? &slurm : NULL;
	if (json)
		print_json(m, r, &env, &v, sl);
	else
		table(m, r, &env, &v, sl, term_width(STDOUT_FILENO));
	sb_free(&v.report);
	vis_session_close(&vs);
	return rc;
}

static const struct option longopts[] = {
	{"json", no_argument, NULL, O_JSON}, {"verify", no_argument, NULL, O_VERIFY}, VIS_LONGOPTS,
	{0},
};

const struct cmd_entry cmd_map_entry = {
	.name = "map",
	.summary = "how nvidia-smi's GPU numbers map to what CUDA sees (CUDA_VISIBLE_DEVICES)",
	.usage =
		"map [--visible STR | --unset] [--order ORDER] [--pid PID] [--json] [--verify]\n\n"
		"Every GPU: nvidia-smi index, PCI bus id, its CUDA index under the CUDA_DEVICE_ORDER\n"
		"in effect and under the other order, and the logical index CUDA_VISIBLE_DEVICES\n"
		"gives it ('-' when hidden), then warnings about the variables. Inside a Slurm job,\n"
		"the GPUs Slurm gave it (SLURM_STEP_GPUS, SLURM_JOB_GPUS) beside them.\n\n"
		"  --visible STR   explain this CUDA_VISIBLE_DEVICES instead of the environment's\n"
		"  --unset         explain CUDA_VISIBLE_DEVICES unset\n"
		"  --order ORDER   PCI_BUS_ID or FASTEST_FIRST instead of the environment's\n"
		"  --pid PID       explain a running process (its environment as it was started)\n"
		"  --json          machine-readable (keys: man gpuctl-map)\n"
		"  --verify        ask the CUDA driver (libcuda.so.1) in a child process with that\n"
		"                  environment and report any disagreement (exit 9; 8 without CUDA)\n\n"
		"Exit status: 0, or 1 when a warning is an error (CUDA would see no GPU, or other\n"
		"GPUs than meant), as for doctor; 9 and 8 as above.\n",
	.args = {.longs = longopts},
	.flags = CMD_NVML,
	.exec = map,
};
