/* doctor.c: `gpuctl doctor`: the classic multi-GPU mistakes, found on this machine, in the
 * caller's environment and in the running GPU processes (the engine is doctor.c), printed with
 * their severity, stable code, the GPUs and pids concerned, what it means and the fix. Exit 1
 * when an error was found. */
#include "view/doctor.h"
#include "base/escape.h"
#include "machine/gpu.h"
#include "cmd/cmd.h"
#include "base/json.h"
#include "lease/snapshot.h"
#include "lease/view.h"
#include "base/term.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* How findings are shown: --severity keeps those at or above it, --color. */
struct show {
	bool json, color;
	enum vis_severity min;
};

static const char *const sev_colors[] = {"\033[36m", "\033[33m", "\033[1;31m"}; /* vis_severity */

/* Errors first, then warnings, then info, so a screen of info never pushes an error out of
 * sight; a summary line last. Messages quote process names, command lines, user and lease
 * names and environment values: another user's text, escaped on the terminal (the JSON writer
 * escapes its own). */
static void print(const struct doctor_report *d, const struct show *sh)
{
	size_t count[3] = {0};
	for (size_t i = 0; i < d->n; i++)
		count[d->f[i].sev]++;
	if (sh->json) {
		struct strbuf sb = {0};
		struct json j;
		json_init(&j, &sb, true);
		json_obj(&j, NULL);
		json_arr(&j, "findings");
		for (int sev = SEV_ERROR; sev >= (int)sh->min; sev--)
			for (size_t i = 0; i < d->n; i++) {
				const struct doctor_finding *f = &d->f[i];
				if ((int)f->sev != sev)
					continue;
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
	for (int sev = SEV_ERROR; sev >= (int)sh->min; sev--)
		for (size_t i = 0; i < d->n; i++) {
			const struct doctor_finding *f = &d->f[i];
			if ((int)f->sev != sev)
				continue;
			printf("%s%s%s [%s] %s\n", sh->color ? sev_colors[sev] : "", vis_severity_name(f->sev),
			       sh->color ? "\033[0m" : "", f->code, esc_str(f->message, 0));
			if (f->gpus.n || f->pids.n) {
				fputs("    gpus: ", stdout);
				print_ids(&f->gpus);
				fputs("  pids: ", stdout);
				print_ids(&f->pids);
				putchar('\n');
			}
			printf("    fix: %s\n", esc_str(f->fix, 0));
		}
	if (!d->n)
		return;
	size_t hidden = 0;
	for (int sev = SEV_INFO; sev < (int)sh->min; sev++)
		hidden += count[sev];
	/* The errors named again in the last line: however much came after them, the screen's
	 * bottom says there were errors and which. */
	struct strbuf codes = {0};
	for (size_t i = 0; i < d->n; i++)
		if (d->f[i].sev == SEV_ERROR && !strstr(codes.buf ? codes.buf : "", d->f[i].code))
			sb_addf(&codes, "%s%s", codes.len ? ", " : " (", d->f[i].code);
	if (codes.len)
		sb_addc(&codes, ')');
	const char *on = sh->color && count[SEV_ERROR] ? sev_colors[SEV_ERROR] : "";
	printf("%s%zu error%s%s%s, %zu warning%s, %zu info", on, count[SEV_ERROR],
	       count[SEV_ERROR] == 1 ? "" : "s", codes.len ? codes.buf : "", *on ? "\033[0m" : "",
	       count[SEV_WARNING], count[SEV_WARNING] == 1 ? "" : "s", count[SEV_INFO]);
	if (hidden)
		printf(" (%zu below --severity=%s not shown)", hidden, vis_severity_name(sh->min));
	putchar('\n');
	sb_free(&codes);
}

enum { O_JSON = 'j', O_PID = 'p', O_SEVERITY = 256, O_COLOR };

static int doctor(struct cmd *c)
{
	static const char *const severities[] = {"info", "warning", "error", NULL}; /* vis_severity */
	struct show sh = {.json = args_has(&c->args, O_JSON)};
	unsigned long focus = 0;
	int min = args_choice(&c->args, O_SEVERITY, severities, SEV_INFO);
	int color = args_choice(&c->args, O_COLOR, color_when_names, COLOR_AUTO);
	if (min < 0 || color < 0 || !args_uint(&c->args, O_PID, 1, UINT_MAX, &focus))
		return cmd_args_error(c);
	sh.min = (enum vis_severity)min;
	sh.color = !sh.json && use_color(color, STDOUT_FILENO);
	struct gpu_error err = {0};
	c->snap = true;        /* the daemon's shared view where it serves one */
	c->snap_what = REFRESH_PROCS | REFRESH_EXTRA | REFRESH_SLURM | REFRESH_CONTAINERS;
	c->snap_age = snapshot_max_age(SNAPSHOT_AGE_DEFAULT);
	int rc = cmd_open(c);
	if (rc != EXIT_OK)
		return rc;
	gpu_set_refresh(c->set, c->snap_what);
	struct leaseview lv = {0};
	if (!leaseview_load(&lv, &err))
		fprintf(stderr, "gpuctl doctor: leases not checked: %s\n", err.msg);
	struct doctor_report r = {0};
	if (focus)
		doctor_pid(&r, c->set, &lv, (unsigned)focus);
	else {
		doctor_all(&r, c->set, &lv);
		doctor_machine(&r, c->set, &lv); /* the GPUs, idle leases, shares */
		doctor_guard(&r, c->set, &lv);   /* the device guard (issue 25): whether leases bind */
	}
	print(&r, &sh);
	if (doctor_has_error(&r))
		rc = EXIT_FAIL; /* documented: 1 when an error was found */
	doctor_report_free(&r);
	leaseview_free(&lv);
	return rc;
}

static const struct option longopts[] = {
	{"json", no_argument, NULL, O_JSON}, {"pid", required_argument, NULL, O_PID},
	{"severity", required_argument, NULL, O_SEVERITY}, {"color", required_argument, NULL, O_COLOR},
	{0},
};

const struct cmd_entry cmd_doctor_entry = {
	.name = "doctor",
	.summary = "find the classic multi-GPU mistakes and say how to fix them",
	.usage = "doctor [--pid PID] [--severity LEVEL] [--json] [--color WHEN]\n\n"
		 "Check the environment (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER), the running GPU\n"
		 "processes (variable set too late, every GPU grabbed, shared GPU near out of memory,\n"
		 "lease violations, orphans, memory no process accounts for) and the machine\n"
		 "(persistence, compute mode, lost GPUs). Each finding has a severity, a stable code,\n"
		 "the GPUs and pids concerned and the fix.\n\n"
		 "Errors come first, then warnings, then info, and a summary line last.\n\n"
		 "  --pid PID           what this process sees and uses, and the findings about it\n"
		 "  --severity LEVEL    only findings at least this severe: error, warning or info\n"
		 "                      (default: all)\n"
		 "  --json              {\"findings\": [{severity, code, message, fix, gpus, pids}]}\n"
		 "  --color=auto|always|never   colour the severities (NO_COLOR is respected)\n\n"
		 "Exit status: 0 no error found, 1 errors found (the other codes as for every command;\n"
		 "--severity changes what is shown, not the status).\n",
	.args = {.longs = longopts},
	.flags = CMD_NVML | CMD_GUARD_VIEW,
	.exec = doctor,
};
