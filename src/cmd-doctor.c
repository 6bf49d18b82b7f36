/* cmd-doctor.c: `gpuctl doctor`: the classic multi-GPU mistakes, found on this machine, in the
 * caller's environment and in the running GPU processes (the engine is doctor.c), printed with
 * their severity, stable code, the GPUs and pids concerned, what it means and the fix. Exit 1
 * when an error was found. */
#include "doctor.h"
#include "escape.h"
#include "gpu.h"
#include "gpuctl.h"
#include "json.h"
#include "leaseview.h"

#include <limits.h>
#include <stdio.h>

static void json_ids(struct json *j, const char *key, const struct doctor_ids *l)
{
	json_arr(j, key);
	for (size_t i = 0; i < l->n; i++)
		json_uint(j, NULL, l->v[i]);
	json_end_arr(j);
}

static void print_ids(const struct doctor_ids *l)
{
	if (!l->n)
		fputs("-", stdout);
	for (size_t i = 0; i < l->n; i++)
		printf("%s%u", i ? "," : "", l->v[i]);
}

/* ---- output ---- */

static void print(const struct doctor_report *d, bool json)
{
	if (json) {
		struct strbuf sb = {0};
		struct json j;
		json_init(&j, &sb, true);
		json_obj(&j, NULL);
		json_arr(&j, "findings");
		for (size_t i = 0; i < d->n; i++) {
			const struct doctor_finding *f = &d->f[i];
			json_obj(&j, NULL);
			json_str(&j, "severity", vis_severity_name(f->sev));
			json_str(&j, "code", f->code);
			json_str(&j, "message", f->message);
			json_str(&j, "fix", f->fix);
			json_ids(&j, "gpus", &f->gpus);
			json_ids(&j, "pids", &f->pids);
			json_end_obj(&j);
		}
		json_end_arr(&j);
		json_end_obj(&j);
		json_print(&sb);
		return;
	}
	if (!d->n)
		printf("no findings: the environment, the GPUs and their processes look right\n");
	for (int sev = SEV_ERROR; sev >= SEV_INFO; sev--)
		for (size_t i = 0; i < d->n; i++) {
			const struct doctor_finding *f = &d->f[i];
			if ((int)f->sev != sev)
				continue;
			/* Messages quote command lines, which their owners chose: escaped. */
			printf("%s [%s] %s\n", vis_severity_name(f->sev), f->code, esc_str(f->message, 0));
			if (f->gpus.n || f->pids.n) {
				fputs("    gpus: ", stdout);
				print_ids(&f->gpus);
				fputs("  pids: ", stdout);
				print_ids(&f->pids);
				putchar('\n');
			}
			printf("    fix: %s\n", f->fix);
		}
}

enum { O_JSON = 'j', O_PID = 'p' };

static int doctor(struct cmd *c)
{
	bool json = args_has(&c->args, O_JSON);
	unsigned long focus = 0;
	if (!args_uint(&c->args, O_PID, 1, UINT_MAX, &focus))
		return cmd_args_error(c);
	struct gpu_error err = {0};
	int rc = cmd_open(c);
	if (rc != EXIT_OK)
		return rc;
	gpu_set_refresh(c->set, REFRESH_PROCS | REFRESH_EXTRA | REFRESH_SLURM);
	struct leaseview lv = {0};
	if (!leaseview_load(&lv, &err))
		fprintf(stderr, "gpuctl doctor: leases not checked: %s\n", err.msg);
	struct doctor_report r = {0};
	if (focus)
		doctor_pid(&r, c->set, &lv, (unsigned)focus);
	else
		doctor_all(&r, c->set, &lv);
	print(&r, json);
	if (doctor_has_error(&r))
		rc = EXIT_FAIL; /* documented: 1 when an error was found */
	doctor_report_free(&r);
	leaseview_free(&lv);
	return rc;
}

static const struct option longopts[] = {
	{"json", no_argument, NULL, O_JSON}, {"pid", required_argument, NULL, O_PID}, {0},
};

const struct cmd_entry cmd_doctor_entry = {
	.name = "doctor",
	.summary = "find the classic multi-GPU mistakes and say how to fix them",
	.usage = "doctor [--pid PID] [--json]\n\n"
		 "Check the environment (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER), the running GPU\n"
		 "processes (variable set too late, every GPU grabbed, shared GPU near out of memory,\n"
		 "lease violations, orphans, memory no process accounts for) and the machine\n"
		 "(persistence, compute mode, lost GPUs). Each finding has a severity, a stable code,\n"
		 "the GPUs and pids concerned and the fix.\n\n"
		 "  --pid PID   what this process sees and uses, and the findings about it\n"
		 "  --json      {\"findings\": [{severity, code, message, fix, gpus, pids}]}\n\n"
		 "Exit status: 0 no error found, 1 errors found (the other codes as for every command).\n",
	.args = {.longs = longopts},
	.flags = CMD_NVML,
	.exec = doctor,
};
