/* cmd-status.c: `gpuctl status` (alias `ls`): what every GPU is doing and which processes use it,
 * as a table, JSON, or nvidia-smi compatible CSV, once or in a loop. NVML is opened once per run;
 * each refresh is a handful of NVML calls per GPU plus one /proc read per process. */
#include "gpu.h"
#include "gpuctl.h"
#include "json.h"
#include "leaseview.h"
#include "query.h"
#include "util.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum mode { M_TABLE, M_JSON, M_CSV };

struct status_opts {
	enum mode mode;
	struct query *query;
	unsigned qflags;
	double loop;                 /* seconds; 0 = once */
	unsigned long count;         /* refreshes before stopping; 0 = until interrupted */
	const char *ids;
	bool no_procs;
	bool color, tty;
	int width;
	struct leaseview leases;     /* refreshed with the GPUs */
	char *state_dir;             /* read from the configuration once */
};

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* ---- table ---- */

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"

static const char *level_color(const struct status_opts *o, double pct)
{
	if (!o->color)
		return "";
	return pct >= 90 ? C_RED : pct >= 50 ? C_YELLOW : C_GREEN;
}

/* Pads s to w visible columns; colour codes take no room, so they are added around the padding. */
static void col(struct strbuf *sb, const struct status_opts *o, const char *color, int w,
		const char *s)
{
	bool c = o->color && color && *color;
	if (c)
		sb_adds(sb, color);
	sb_addf(sb, "%*s", w, s);
	if (c)
		sb_adds(sb, C_RESET);
}

static void table_gpu(struct strbuf *sb, const struct status_opts *o, const struct gpu *g)
{
	char util[16] = "N/A", mem[40] = "N/A", temp[16] = "N/A", pw[40] = "N/A";
	sb_addf(sb, "%3u ", g->index);
	if (o->color)
		sb_adds(sb, C_BOLD);
	sb_addf(sb, "%-22.22s", g->name[0] ? g->name : "N/A");
	if (o->color)
		sb_adds(sb, C_RESET);
	if (g->lost || g->inaccessible) {
		sb_addf(sb, "  %s%s: %s%s\n", o->color ? C_RED : "", g->lost ? "LOST" : "NO ACCESS",
			g->error ? g->error : "", o->color ? C_RESET : "");
		return;
	}
	if (GPU_HAS(g, GF_UTIL_GPU))
		snprintf(util, sizeof util, "%u%%", g->util_gpu);
	if (GPU_HAS(g, GF_MEM_USED) && GPU_HAS(g, GF_MEM_TOTAL))
		snprintf(mem, sizeof mem, "%llu / %llu MiB", (unsigned long long)(g->mem_used >> 20),
			 (unsigned long long)(g->mem_total >> 20));
	if (GPU_HAS(g, GF_TEMP))
		snprintf(temp, sizeof temp, "%uC", g->temp);
	if (GPU_HAS(g, GF_POWER))
		snprintf(pw, sizeof pw, GPU_HAS(g, GF_POWER_LIMIT) ? "%u / %u W" : "%u W",
			 (g->power_mw + 500) / 1000, (g->power_limit_mw + 500) / 1000);
	double mem_pct = GPU_HAS(g, GF_MEM_TOTAL) && g->mem_total
				 ? 100.0 * (double)g->mem_used / (double)g->mem_total : 0;
	sb_adds(sb, "  ");
	col(sb, o, GPU_HAS(g, GF_UTIL_GPU) ? level_color(o, g->util_gpu) : C_DIM, 4, util);
	sb_adds(sb, "  ");
	col(sb, o, GPU_HAS(g, GF_MEM_USED) ? level_color(o, mem_pct) : C_DIM, 18, mem);
	sb_adds(sb, "  ");
	col(sb, o, GPU_HAS(g, GF_TEMP) ? "" : C_DIM, 4, temp);
	sb_adds(sb, "  ");
	col(sb, o, GPU_HAS(g, GF_POWER) ? "" : C_DIM, 13, pw);
	sb_addc(sb, '\n');
}

static void table_lease(struct strbuf *sb, const struct status_opts *o, const struct gpu *g)
{
	const struct lease_rec *h = lease_holder(&o->leases.leases, g->uuid);
	if (!h)
		return;
	char when[16];
	strftime(when, sizeof when, "%H:%M", localtime(&h->since));
	sb_addf(sb, "      %slease: %s%s%s%s, pid %d, %s since %s%s\n", o->color ? C_YELLOW : "", h->user,
		h->name ? " '" : "", h->name ? h->name : "", h->name ? "'" : "", (int)h->pid, h->kind, when,
		o->color ? C_RESET : "");
}

static void table_procs(struct strbuf *sb, const struct status_opts *o, const struct gpu *g)
{
	for (size_t i = 0; i < g->nmigs; i++) {
		const struct mig_dev *m = &g->migs[i];
		char mem[40] = "N/A";
		if (m->mem_valid)
			snprintf(mem, sizeof mem, "%llu / %llu MiB",
				 (unsigned long long)(m->mem_used >> 20),
				 (unsigned long long)(m->mem_total >> 20));
		/* "NVIDIA A100-SXM4-40GB MIG 3g.20gb": the profile is what tells instances apart. */
		const char *profile = strstr(m->name, "MIG ");
		sb_addf(sb, "      mig %u/%u  %-10.10s %20s  %s\n", m->gi, m->ci,
			profile ? profile + 4 : m->name, mem, m->uuid);
	}
	if (o->no_procs || g->lost || g->inaccessible)
		return;
	if (!GPU_HAS(g, GF_PROCESSES)) {
		sb_addf(sb, "      %sprocesses: N/A%s\n", o->color ? C_DIM : "", o->color ? C_RESET : "");
		return;
	}
	/* One formatted print per process: on 10,000 processes the table's cost is its printf. */
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct gpu_proc *p = &g->procs[i];
		char mig[24] = "", line[160];
		if (p->gi != NO_INSTANCE)
			snprintf(mig, sizeof mig, "mig %u/%u ", p->gi, p->ci);
		const char *user = p->user ? p->user : "-";
		const char *type = p->type & PROC_GRAPHICS ? (p->type & PROC_COMPUTE ? "C+G " : "G ") : "";
		int n = p->mem_valid
			? snprintf(line, sizeof line, "      %-10.10s %7u %6llu MiB  %s%s", user, p->pid,
				   (unsigned long long)(p->used_mem >> 20), mig, type)
			: snprintf(line, sizeof line, "      %-10.10s %7u %10s  %s%s", user, p->pid, "N/A",
				   mig, type);
		int room = o->width - n;
		const char *cmd = p->cmdline ? p->cmdline : "(not in /proc: exited, or another PID namespace)";
		sb_add(sb, line, (size_t)n);
		sb_add(sb, cmd, strnlen(cmd, (size_t)(room < 8 ? 8 : room)));
		sb_addc(sb, '\n');
	}
}

static void render_table(struct strbuf *sb, const struct status_opts *o, const struct gpu_set *set)
{
	char when[16];
	time_t t = time(NULL);
	strftime(when, sizeof when, "%H:%M:%S", localtime(&t));
	char head[160];
	int n = snprintf(head, sizeof head, "driver %s  CUDA ",
			 set->has_driver_version ? set->driver_version : "N/A");
	if (set->cuda_version)
		n += snprintf(head + n, sizeof head - (size_t)n, "%d.%d", set->cuda_version / 1000,
			      set->cuda_version % 1000 / 10);
	else
		n += snprintf(head + n, sizeof head - (size_t)n, "N/A");
	snprintf(head + n, sizeof head - (size_t)n, "  %zu GPU%s", set->ngpus,
		 set->ngpus == 1 ? "" : "s");
	sb_addf(sb, "%-*s%s\n", o->width - (int)strlen(when) > 0 ? o->width - (int)strlen(when) : 0,
		head, when);
	sb_addf(sb, "%s%3s %-22s  %4s  %18s  %4s  %13s%s\n", o->color ? C_DIM : "", "GPU", "NAME",
		"UTIL", "MEMORY", "TEMP", "POWER", o->color ? C_RESET : "");
	if (!set->ngpus)
		sb_adds(sb, "  (no NVIDIA GPUs found)\n");
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		if (!g->selected)
			continue;
		table_gpu(sb, o, g);
		table_lease(sb, o, g);
		table_procs(sb, o, g);
	}
}

/* ---- JSON ---- */

#define JFIELD(key, bit, call) ((GPU_HAS(g, bit)) ? (void)(call) : json_null(j, key))

static void json_gpu(struct json *j, const struct status_opts *o, const struct gpu *g)
{
	json_obj(j, NULL);
	json_uint(j, "index", g->index);
	json_str(j, "uuid", g->uuid[0] ? g->uuid : NULL);
	json_str(j, "name", g->name[0] ? g->name : NULL);
	json_str(j, "pci_bus_id", g->pci_bus_id[0] ? g->pci_bus_id : NULL);
	JFIELD("memory_total_mib", GF_MEM_TOTAL, json_uint(j, "memory_total_mib", g->mem_total >> 20));
	JFIELD("memory_used_mib", GF_MEM_USED, json_uint(j, "memory_used_mib", g->mem_used >> 20));
	JFIELD("memory_free_mib", GF_MEM_FREE, json_uint(j, "memory_free_mib", g->mem_free >> 20));
	JFIELD("memory_reserved_mib", GF_MEM_RESERVED,
	       json_uint(j, "memory_reserved_mib", g->mem_reserved >> 20));
	JFIELD("utilization_gpu_pct", GF_UTIL_GPU, json_uint(j, "utilization_gpu_pct", g->util_gpu));
	JFIELD("utilization_memory_pct", GF_UTIL_MEM,
	       json_uint(j, "utilization_memory_pct", g->util_mem));
	JFIELD("temperature_c", GF_TEMP, json_uint(j, "temperature_c", g->temp));
	JFIELD("power_w", GF_POWER, json_num(j, "power_w", g->power_mw / 1000.0, 3));
	JFIELD("power_limit_w", GF_POWER_LIMIT,
	       json_num(j, "power_limit_w", g->power_limit_mw / 1000.0, 3));
	JFIELD("compute_mode", GF_COMPUTE_MODE,
	       json_str(j, "compute_mode", compute_mode_name(g->compute_mode)));
	JFIELD("mig_mode", GF_MIG_MODE, json_str(j, "mig_mode", g->mig_mode ? "Enabled" : "Disabled"));
	json_bool(j, "lost", g->lost);
	json_str(j, "error", g->error);
	const struct lease_rec *h = lease_holder(&o->leases.leases, g->uuid);
	if (h) {
		json_obj(j, "lease");
		json_str(j, "id", h->id);
		json_str(j, "user", h->user);
		json_uint(j, "uid", h->uid);
		json_int(j, "pid", h->pid);
		json_str(j, "kind", h->kind);
		json_str(j, "name", h->name);
		json_int(j, "since", (long long)h->since);
		json_end_obj(j);
	} else {
		json_null(j, "lease");
	}
	if (!o->no_procs) {
		if (GPU_HAS(g, GF_PROCESSES)) {
			json_arr(j, "processes");
			for (size_t i = 0; i < g->nprocs; i++) {
				const struct gpu_proc *p = &g->procs[i];
				json_obj(j, NULL);
				json_uint(j, "pid", p->pid);
				json_str(j, "user", p->user);
				if (p->uid_valid)
					json_uint(j, "uid", p->uid);
				else
					json_null(j, "uid");
				json_str(j, "command", p->cmdline);
				if (p->mem_valid)
					json_uint(j, "used_memory_mib", p->used_mem >> 20);
				else
					json_null(j, "used_memory_mib");
				json_str(j, "type", proc_type_name(p->type));
				if (p->gi != NO_INSTANCE) {
					json_uint(j, "gpu_instance_id", p->gi);
					json_uint(j, "compute_instance_id", p->ci);
				}
				json_end_obj(j);
			}
			json_end_arr(j);
		} else {
			json_null(j, "processes");
		}
	}
	if (GPU_HAS(g, GF_MIG_MODE) && g->mig_mode) {
		json_arr(j, "mig_devices");
		for (size_t i = 0; i < g->nmigs; i++) {
			const struct mig_dev *m = &g->migs[i];
			json_obj(j, NULL);
			json_uint(j, "index", m->slot);
			json_str(j, "uuid", m->uuid[0] ? m->uuid : NULL);
			json_str(j, "name", m->name[0] ? m->name : NULL);
			if (m->gi != NO_INSTANCE)
				json_uint(j, "gpu_instance_id", m->gi);
			else
				json_null(j, "gpu_instance_id");
			if (m->ci != NO_INSTANCE)
				json_uint(j, "compute_instance_id", m->ci);
			else
				json_null(j, "compute_instance_id");
			if (m->mem_valid) {
				json_uint(j, "memory_total_mib", m->mem_total >> 20);
				json_uint(j, "memory_used_mib", m->mem_used >> 20);
			} else {
				json_null(j, "memory_total_mib");
				json_null(j, "memory_used_mib");
			}
			json_end_obj(j);
		}
		json_end_arr(j);
	}
	json_end_obj(j);
}

static void render_json(struct strbuf *sb, const struct status_opts *o, const struct gpu_set *set)
{
	struct json j;
	json_init(&j, sb, o->loop == 0);
	json_obj(&j, NULL);
	json_str(&j, "driver_version", set->has_driver_version ? set->driver_version : NULL);
	if (set->cuda_version) {
		char v[32];
		snprintf(v, sizeof v, "%d.%d", set->cuda_version / 1000, set->cuda_version % 1000 / 10);
		json_str(&j, "cuda_driver_version", v);
	} else {
		json_null(&j, "cuda_driver_version");
	}
	json_arr(&j, "gpus");
	for (size_t i = 0; i < set->ngpus; i++)
		if (set->gpus[i].selected)
			json_gpu(&j, o, &set->gpus[i]);
	json_end_arr(&j);
	json_end_obj(&j);
	sb_addc(sb, '\n');
}

/* ---- driver ---- */

static void timestamp(char *buf, size_t n)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	struct tm tm;
	localtime_r(&tv.tv_sec, &tm);
	size_t k = strftime(buf, n, "%Y/%m/%d %H:%M:%S", &tm);
	snprintf(buf + k, n - k, ".%03ld", (long)(tv.tv_usec / 1000));
}

static void render(struct strbuf *sb, const struct status_opts *o, const struct gpu_set *set,
		   unsigned long iter)
{
	char ts[40];
	switch (o->mode) {
	case M_TABLE:
		if (o->loop && o->tty)
			sb_adds(sb, iter == 0 ? "\033[?25l\033[H\033[2J" : "\033[H");
		else if (iter)
			sb_addc(sb, '\n');
		render_table(sb, o, set);
		if (o->loop && o->tty) {
			/* Clear the rest of each line and below, so a shorter frame leaves no debris. */
			struct strbuf out = {0};
			for (char *p = sb->buf, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
				sb_add(&out, p, (size_t)(nl - p));
				sb_adds(&out, "\033[K\n");
			}
			sb_adds(&out, "\033[J");
			sb_free(sb);
			*sb = out;
		}
		break;
	case M_JSON:
		render_json(sb, o, set);
		break;
	case M_CSV:
		ts[0] = '\0';
		if (query_shows_time(o->query))
			timestamp(ts, sizeof ts);
		if (iter == 0 && !(o->qflags & QF_NOHEADER))
			query_header(sb, o->query);
		query_rows(sb, o->query, set, o->qflags, ts);
		break;
	}
}

static void report_lost(const struct gpu_set *set)
{
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		if (g->selected && g->lost)
			fprintf(stderr, "gpuctl: GPU %u (%s) is lost: %s. The other GPUs were shown; "
					"check `dmesg` for Xid errors, a GPU reset or reboot may be needed\n",
				g->index, g->pci_bus_id[0] ? g->pci_bus_id : "bus id unknown",
				g->error ? g->error : "no answer");
		else if (g->selected && g->inaccessible)
			fprintf(stderr, "gpuctl: GPU %u cannot be opened: %s\n", g->index,
				g->error ? g->error : "unknown error");
	}
}

static int run_status(struct status_opts *o, struct gpu_set *set)
{
	unsigned what = o->mode == M_CSV ? query_refresh_needs(o->query)
					 : (o->no_procs ? 0 : REFRESH_PROCS);
	/* A frame redrawn in place is built whole; any other output is written as it grows. */
	struct strbuf sb = {.sink = o->mode == M_TABLE && o->loop && o->tty ? NULL : stdout};
	struct sigaction sa = {.sa_handler = on_stop};
	sigemptyset(&sa.sa_mask);
	if (o->loop) {
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (unsigned long iter = 0;; iter++) {
		gpu_set_refresh(set, what);
		if (o->mode != M_CSV && o->state_dir) {
			struct gpu_error lerr;
			leaseview_free(&o->leases);
			if (!leaseview_load(&o->leases, o->state_dir, &lerr))
				memset(&o->leases, 0, sizeof o->leases); /* leases are extra: GPUs still show */
		}
		sb_reset(&sb);
		render(&sb, o, set, iter);
		if (fwrite(sb.buf, 1, sb.len, stdout) != sb.len || fflush(stdout) != 0 || ferror(stdout))
			break; /* reader went away (a closed pipe): stop quietly */
		if (!o->loop || stop_requested || (o->count && iter + 1 >= o->count))
			break;
		/* Absolute deadlines: the period does not drift by the time a refresh takes. */
		long long ns = next.tv_nsec + (long long)(o->loop * 1e9);
		next.tv_sec += (time_t)(ns / 1000000000LL);
		next.tv_nsec = (long)(ns % 1000000000LL);
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
			next = now;
		while (!stop_requested &&
		       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) != 0)
			;
		if (stop_requested)
			break;
	}
	if (o->mode == M_TABLE && o->loop && o->tty)
		fputs("\033[?25h", stdout);
	fflush(stdout);
	sb_free(&sb);
	report_lost(set);
	for (size_t i = 0; i < set->ngpus; i++)
		if (set->gpus[i].selected && (set->gpus[i].lost || set->gpus[i].inaccessible))
			return EXIT_GPU_LOST;
	return EXIT_OK;
}

static int status(int argc, char **argv)
{
	const struct cmd_entry *e = &cmd_status_entry;
	enum { O_JSON = 256, O_QGPU, O_QAPPS, O_FORMAT, O_NOPROC, O_COLOR, O_HQGPU, O_HQAPPS, O_LMS };
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"json", no_argument, NULL, O_JSON},
		{"query-gpu", required_argument, NULL, O_QGPU},
		{"query-compute-apps", required_argument, NULL, O_QAPPS},
		{"format", required_argument, NULL, O_FORMAT},
		{"loop", required_argument, NULL, 'l'},
		{"loop-ms", required_argument, NULL, O_LMS},
		{"count", required_argument, NULL, 'c'},
		{"id", required_argument, NULL, 'i'},
		{"no-processes", no_argument, NULL, O_NOPROC},
		{"color", required_argument, NULL, O_COLOR},
		{"help-query-gpu", no_argument, NULL, O_HQGPU},
		{"help-query-compute-apps", no_argument, NULL, O_HQAPPS},
		{0},
	};
	struct status_opts o = {.mode = M_TABLE};
	const char *qgpu = NULL, *qapps = NULL, *format = NULL;
	int color = COLOR_AUTO, c;
	struct gpu_error err = {0};
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hl:c:i:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h': return cmd_usage(e, 0);
		case O_JSON: o.mode = M_JSON; break;
		case O_QGPU: qgpu = optarg; break;
		case O_QAPPS: qapps = optarg; break;
		case O_FORMAT: format = optarg; break;
		case 'l':
			if (!parse_seconds(optarg, &o.loop) || o.loop < 0.01)
				return cmd_bad_usage(e, "-l wants seconds of at least 0.01, got '%s'", optarg);
			break;
		case O_LMS: {
			unsigned long ms;
			if (!parse_uint(optarg, &ms) || ms < 10)
				return cmd_bad_usage(e, "--loop-ms wants at least 10 ms, got '%s'", optarg);
			o.loop = ms / 1000.0;
			break;
		}
		case 'c':
			if (!parse_uint(optarg, &o.count) || o.count == 0)
				return cmd_bad_usage(e, "--count wants a positive number, got '%s'", optarg);
			break;
		case 'i': o.ids = optarg; break;
		case O_NOPROC: o.no_procs = true; break;
		case O_COLOR:
			if ((color = parse_color_when(optarg)) < 0)
				return cmd_bad_usage(e, "--color is auto, always or never, not '%s'", optarg);
			break;
		case O_HQGPU:
		case O_HQAPPS: {
			struct strbuf sb = {0};
			query_help(&sb, c == O_HQGPU ? Q_GPU : Q_APPS);
			fputs(sb.buf, stdout);
			sb_free(&sb);
			return EXIT_OK;
		}
		default: return cmd_option_error(e, c, argv);
		}
	}
	if (optind < argc)
		return cmd_bad_usage(e, "unexpected argument '%s'", argv[optind]);
	if (qgpu && qapps)
		return cmd_bad_usage(e, "--query-gpu and --query-compute-apps cannot be combined");
	if (qgpu || qapps) {
		if (o.mode == M_JSON)
			return cmd_bad_usage(e, "--json and --query-* cannot be combined");
		if (!format)
			return cmd_bad_usage(e, "--format=csv[,noheader][,nounits] is required with "
						"--query-%s", qgpu ? "gpu" : "compute-apps");
		if (!query_parse_format(format, &o.qflags))
			return cmd_bad_usage(e, "--format is csv[,noheader][,nounits], not '%s'", format);
		o.query = query_parse(qgpu ? Q_GPU : Q_APPS, qgpu ? qgpu : qapps, &err);
		if (!o.query) {
			fprintf(stderr, "gpuctl status: %s\n", err.msg);
			return err.code;
		}
		o.mode = M_CSV;
	} else if (format) {
		return cmd_bad_usage(e, "--format only applies to --query-gpu or --query-compute-apps");
	}
	o.tty = isatty(STDOUT_FILENO);
	o.color = o.mode == M_TABLE && use_color(color, STDOUT_FILENO);
	o.width = term_width(STDOUT_FILENO);

	struct gpu_set *set = gpu_set_open(&err);
	if (!set) {
		query_free(o.query);
		fprintf(stderr, "gpuctl: %s\n", err.msg);
		return err.code;
	}
	/* Leases are extra: with a broken configuration the GPUs still show (the error is printed). */
	if (o.mode != M_CSV)
		o.state_dir = leaseview_state_dir();
	int rc;
	if (o.ids && !gpu_set_select(set, o.ids, &err)) {
		fprintf(stderr, "gpuctl status: %s\n", err.msg);
		rc = err.code;
	} else {
		rc = run_status(&o, set);
	}
	gpu_set_free(set);
	query_free(o.query);
	leaseview_free(&o.leases);
	free(o.state_dir);
	return rc;
}

const struct cmd_entry cmd_status_entry = {
	.name = "status",
	.alias = "ls",
	.summary = "show GPUs, their use and their processes (table, JSON, nvidia-smi CSV)",
	.usage =
		"status [OPTIONS]     (alias: ls)\n\n"
		"Show every GPU: utilisation, memory, temperature, power and its processes\n"
		"(user, pid, GPU memory, command line).\n\n"
		"  -i, --id LIST              only these GPUs: indices, UUIDs (or unique prefixes)\n"
		"                             or PCI bus ids, separated by commas\n"
		"      --no-processes         leave out the process lists\n"
		"      --json                 one JSON document (see README: JSON contract)\n"
		"      --query-gpu=FIELDS     nvidia-smi compatible query, with --format\n"
		"      --query-compute-apps=FIELDS\n"
		"      --format=csv[,noheader][,nounits]\n"
		"      --help-query-gpu, --help-query-compute-apps   list the query fields\n"
		"  -l, --loop SECONDS         refresh every SECONDS (fractions allowed) until Ctrl-C;\n"
		"                             the table redraws in place, JSON prints one document\n"
		"                             per line, CSV appends rows\n"
		"      --loop-ms MS           the same in milliseconds\n"
		"  -c, --count N              stop after N refreshes\n"
		"      --color=auto|always|never   colour the table (NO_COLOR is respected)\n"
		"  -h, --help                 this help\n",
	.run = status,
};
