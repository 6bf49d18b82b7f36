/* status.c: `gpuctl status` (alias `ls`): what every GPU is doing and which processes use it,
 * as a table, JSON, or nvidia-smi compatible CSV, once or in a loop. NVML is opened once per run;
 * each refresh is a handful of NVML calls per GPU plus one /proc read per process. */
#include "cluster/cluster.h"
#include "config/config.h"
#include "machine/gpu.h"
#include "cmd/cmd.h"
#include "lease/frame.h"
#include "lease/snapshot.h"
#include "lease/view.h"
#include "view/query.h"
#include "view/table.h"
#include "view/status-json.h"
#include "machine/container.h"
#include "base/escape.h"
#include "base/term.h"
#include "base/util.h"

#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum mode { M_TABLE, M_JSON, M_CSV, M_LIST };

#define STATUS_LEASE_SECONDS 1.0 /* the daemon's answer for the lease lines: a local list, ms */

struct status_opts {
	enum mode mode;
	struct query *query;
	unsigned qflags;
	double loop;                 /* seconds; 0 = once */
	unsigned long count;         /* refreshes before stopping; 0 = until interrupted */
	bool no_procs;
	bool details;                /* --details: what top shows too */
	bool color, tty;
	int width;                   /* columns; 0: no limit (not a terminal, COLUMNS unset) */
	int rows;                    /* lines a frame may take (a loop on a terminal); 0: any */
	struct leaseview leases;     /* refreshed with the GPUs */
	bool lease_warned;           /* said once why leases are not shown */
	char lease_missing[512];     /* why they are not, this refresh ("": they are) */
	bool slurm;                  /* a process in a Slurm job: the table has a JOB column */
	struct table_cache *cache;   /* a table loop's rows from frame to frame (table.h) */
};

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
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
		table_render(sb, &(struct table_opts){.color = o->color, .no_procs = o->no_procs,
			     .slurm = o->slurm, .width = o->width, .rows = o->rows,
			     .leases = &o->leases, .cache = o->cache,
			     .leases_missing = o->lease_missing[0] ? o->lease_missing : NULL}, set);
		if (o->loop && o->tty)
			table_fit_frame(sb, o->width);
		break;
	case M_JSON:
		status_json(sb, set, &(struct status_json_opts){.details = o->details,
			    .no_procs = o->no_procs, .pretty = o->loop == 0, .leases = &o->leases,
			    .leases_missing = o->lease_missing[0] ? o->lease_missing : NULL});
		break;
	case M_LIST:
		query_list_gpus(sb, set);
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

/* A frame the daemon laid out (lease/frame.h), as render would have made it: the same prefix,
 * the clock in the first line's last 8 columns this process's own. sb has the prefix and the
 * first line, and *rest the mapping's bytes after it (written with it, not copied); for a loop
 * on a terminal sb has it all, fitted. */
static void render_frame(struct strbuf *sb, const struct status_opts *o, const struct frame *f,
			 unsigned long iter, struct frame *rest)
{
	char when[16];
	time_t t = time(NULL);
	struct tm tm;
	strftime(when, sizeof when, "%H:%M:%S", localtime_r(&t, &tm));
	bool redraw = o->loop && o->tty;   /* a loop on a terminal: redrawn in place, fitted */
	if (redraw)
		sb_adds(sb, iter == 0 ? "\033[?25l\033[H\033[2J" : "\033[H");
	else if (iter)
		sb_addc(sb, '\n');
	const char *nl = memchr(f->bytes, '\n', f->len);   /* the daemon saw to it: 8 columns */
	size_t head = (size_t)(nl - f->bytes) - 8;
	sb_add(sb, f->bytes, head);
	sb_add(sb, when, 8);
	*rest = (struct frame){.bytes = nl, .len = f->len - (size_t)(nl - f->bytes)};
	if (redraw) {
		sb_add(sb, rest->bytes, rest->len);
		rest->len = 0;
		table_fit_frame(sb, o->width);
	}
}

/* The device guard (issue 25): a GPU this user may not open because the daemon's guard gives it
 * to its lease's user only is said so, and is no failure of status. Read here it is inaccessible
 * (NVML's NO_PERMISSION); from the daemon's snapshot it has its values, and is marked all the
 * same where no lease of this user covers it (root opens every node). */
static bool own_lease(const struct leaseview *lv, uid_t uid, const char *uuid)
{
	for (size_t i = 0; i < lv->nleases; i++)
		for (size_t k = 0; lv->leases[i].uid == uid && k < lv->leases[i].ngpus; k++)
			if (!strcmp(lv->leases[i].uuids[k], uuid))
				return true;
	return false;
}

static void guard_mark(struct gpu_set *set, const struct leaseview *lv)
{
	if (!leaseview_binding(lv))
		return;
	bool daemons = snapshot_serves(set);
	uid_t me = getuid();
	for (size_t i = 0; i < set->ngpus; i++) {
		struct gpu *g = &set->gpus[i];
		if (g->inaccessible && !g->guarded) {
			g->guarded = true;
			free(g->error);
			g->error = xstrdup("gpuctl's device guard opens it to its lease's user only "
					   "(lease it: gpuctl run)");
		} else if (!g->inaccessible) {
			g->guarded = daemons && me != 0 && !own_lease(lv, me, g->uuid);
		}
	}
}

/* At the end, on stderr, what the output could not show: GPUs lost or that could not be opened,
 * and for a query of compute processes (procs) a GPU whose processes could not be listed: it
 * has no rows, which would otherwise read as "nothing running there". */
static void report_lost(const struct gpu_set *set, bool procs)
{
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		if (procs && g->selected && !g->lost && !g->inaccessible && !gpu_has(g, GF_PROCESSES))
			fprintf(stderr, "gpuctl status: GPU %u: its processes could not be listed (%s); "
				"it has no rows here\n", g->index,
				esc_str(g->why[GF_PROCESSES] ? g->why[GF_PROCESSES] : "no reason given", 0));
		if (g->selected && g->lost)
			fprintf(stderr, "gpuctl: GPU %u (%s) is lost: %s. The other GPUs were shown; "
					"check `dmesg` for Xid errors, a GPU reset or reboot may be needed\n",
				g->index, g->pci_bus_id[0] ? g->pci_bus_id : "bus id unknown",
				g->error ? g->error : "no answer");
		else if (g->selected && g->inaccessible && !g->guarded)
			fprintf(stderr, "gpuctl: GPU %u cannot be opened: %s\n", g->index,
				g->error ? g->error : "unknown error");
	}
}

/* What each refresh reads (and asks the daemon's snapshot for). */
static unsigned status_what(const struct status_opts *o)
{
	if (o->mode == M_LIST)
		return 0;
	unsigned what = o->mode == M_CSV ? query_refresh_needs(o->query)
			: o->no_procs ? 0
			: REFRESH_PROCS | REFRESH_PROC_UTIL | REFRESH_SLURM | REFRESH_CONTAINERS;
	if (o->details)
		what |= STATUS_DETAILS_REFRESH;
	/* A loop keeps the stat per process that a compute-apps query skips: it is what lets a
	 * refresh keep a command line it read before. */
	if (o->loop)
		what &= ~(unsigned)REFRESH_COMPUTE_NAMES;
	return what;
}

/* A loop's frame write ends at a stop (a terminal that blocks it: scroll lock). */
static bool stopping(void)
{
	return stop_requested;
}

/* The table's frame from the daemon (lease/frame.h): 1 with *f, 0 none (the view is laid
 * out here: a loop asks again later), -1 the loop was stopped while it waited. */
static int fetch_frame(const struct status_opts *o, struct frame_source *fs, unsigned what,
		       double max_age, struct frame *f)
{
	struct snap_frame_ask a = {.what = what, .width = (unsigned)o->width, .rows = (unsigned)o->rows,
				   .flags = (o->color ? SNAP_FRAME_COLOR : 0) |
					    (o->no_procs ? SNAP_FRAME_NO_PROCS : 0) |
					    (ctr_host_has_runtime() ? SNAP_FRAME_RUNTIME : 0)};
	if (o->width > SNAP_FRAME_MAX_COLS || o->rows > SNAP_FRAME_MAX_COLS || o->width < 0 || o->rows < 0)
		return 0;
	snap_frame_zone(&a.tzoff, a.tzname, sizeof a.tzname);
	struct gpu_error err = {0};
	return frame_fetch(fs, &a, max_age, f, &err);
}

/* A refresh laid out here: the GPUs, and for the table and JSON their leases. */
static void refresh_view(struct status_opts *o, struct gpu_set *set, unsigned what)
{
	if (o->mode != M_LIST)   /* -L shows what opening the GPUs read */
		gpu_set_refresh(set, what);
	o->slurm = table_job_column(set);
	if (o->mode == M_CSV || o->mode == M_LIST)
		return;
	struct gpu_error lerr = {0};
	leaseview_free(&o->leases);
	/* Leases are extra: without the daemon's answer the GPUs still show, after a short wait of
	 * their own (a stopped daemon must not hold up the GPUs' view), and the table says they
	 * are missing. The daemon's snapshot carries them (issue 22): the same answer as `list`'s,
	 * in the refresh's own round trip; else a `list` of our own. */
	int carried = snapshot_leases(set, &o->leases, &lerr);
	bool had = carried < 0 ? leaseview_load_within(&o->leases, STATUS_LEASE_SECONDS, &lerr)
			       : carried == 1;
	guard_mark(set, &o->leases);
	snprintf(o->lease_missing, sizeof o->lease_missing, "%.511s", had ? "" : lerr.msg);
	if (!had && !o->lease_warned) {
		fprintf(stderr, "gpuctl status: leases not shown: %s\n", lerr.msg);
		o->lease_warned = true;
	}
}

static int run_status(struct status_opts *o, struct cmd *c, struct frame_source *fs)
{
	struct gpu_set *set = c->set;
	unsigned what = status_what(o);
	/* A loop's frame is built whole and written in one write (a frame redrawn in place must
	 * be; a piped loop's costs one syscall a refresh, not one per 32 KiB: issue 22); a
	 * one-shot's output is written as it grows, its memory bounded whatever the machine. */
	struct strbuf sb = {.sink = o->loop ? NULL : stdout};
	struct sigaction sa = {.sa_handler = on_stop};
	sigemptyset(&sa.sa_mask);
	if (o->loop) {
		if (set)
			gpu_set_watch_exits(set, 2); /* issue 22: no stat per process and refresh */
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		snapshot_stop_flag(&stop_requested); /* a wait for the daemon ends at once */
	}
	if (o->loop && o->mode == M_TABLE)
		o->cache = table_cache_new();
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	int rc = EXIT_OK, framed = 0;
	double frames_again = 0;   /* a refused loop asks for frames again from then (monotonic) */
	for (unsigned long iter = 0;; iter++) {
		if (o->mode == M_TABLE && o->loop && o->tty) { /* the terminal may have been resized */
			o->width = term_width(STDOUT_FILENO);
			o->rows = term_rows(STDOUT_FILENO);
		}
		struct frame f = {0}, rest = {0};
		bool asked = fs && now_mono() >= frames_again;
		framed = asked ? fetch_frame(o, fs, what, c->snap_age, &f) : 0;
		if (framed < 0)
			break;   /* stopped while it waited: the frame before stays */
		if (asked && !framed)   /* laid out here; the daemon asked again a while later */
			frames_again = frame_source_settled(fs) ? INFINITY
								: now_mono() + FRAME_RETRY_SECONDS;
		if (fs && !framed && !set) {
			/* A one-shot whose frame had no answer in time reads the machine at once, as it
			 * did when its view's ask had none (one wait, not two). A loop asks for the view:
			 * a daemon busy for a moment serves it again, where reading the machine here
			 * would be for the rest of the loop (and fail where the client has no NVML). */
			if (frame_source_hung(fs) && !o->loop)
				c->snap = false;
			if ((rc = cmd_open(c)) != EXIT_OK)
				break;
			set = c->set;
			if (o->loop)
				gpu_set_watch_exits(set, 2);
		}
		sb_reset(&sb);
		if (framed) {
			render_frame(&sb, o, &f, iter, &rest);
		} else {
			refresh_view(o, set, what);
			render(&sb, o, set, iter);
		}
		/* one write a frame (a piped frame from the daemon: its head and the mapping's rest) */
		bool wrote = o->loop || rest.len ? fflush(stdout) == 0 &&
				       write2_all_until(STDOUT_FILENO, sb.buf, sb.len, rest.bytes,
							rest.len, stopping)
				     : fwrite(sb.buf, 1, sb.len, stdout) == sb.len && fflush(stdout) == 0;
		frame_release(&f);
		if (!wrote || ferror(stdout))
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
	table_cache_free(o->cache);
	o->cache = NULL;
	frame_source_free(fs);
	if (!set || framed > 0)   /* the last frame the daemon's: no GPU lost (it lays out none then) */
		return rc;
	report_lost(set, o->mode == M_CSV && (what & REFRESH_PROCS));
	for (size_t i = 0; i < set->ngpus; i++)
		if (set->gpus[i].selected && (set->gpus[i].lost ||
					      (set->gpus[i].inaccessible && !set->gpus[i].guarded)))
			return EXIT_GPU_LOST;
	return rc;
}

enum { O_JSON = 256, O_QGPU, O_QAPPS, O_FORMAT, O_NOPROC, O_COLOR, O_HQGPU, O_HQAPPS, O_LMS,
       O_PROM, O_FREE, O_DETAILS };

/* The cluster view (cluster.h): its own mode, which opens no GPU of this machine. The URL is the
 * option's, else the configuration's `prometheus` key. */
static int cluster_mode(struct cmd *c)
{
	struct args *a = &c->args;
	static const int others[] = {O_QGPU, O_QAPPS, O_FORMAT, 'l', O_LMS, 'c', 'L', 'g', O_NOPROC};
	for (size_t i = 0; i < ARRAY_SIZE(others); i++)
		if (args_has(a, others[i]))
			return cmd_bad_usage(c->entry, "--prometheus and --free show the cluster once: they "
					     "combine with --json and --color only");
	int color = args_choice(a, O_COLOR, color_when_names, COLOR_AUTO);
	if (color < 0)
		return cmd_args_error(c);
	struct config cfg = {0};
	const char *url = args_get(a, O_PROM);
	if (!url && a->argc)           /* --prometheus URL, as well as --prometheus=URL */
		url = a->argv[0];
	else if (a->argc)
		return cmd_bad_usage(c->entry, "unexpected argument '%s'", a->argv[0]);
	if (!url && !config_load(&cfg))
		return EXIT_USAGE;
	if (!url)
		url = cfg.prometheus;
	if (!url) {
		config_free(&cfg);
		return cmd_bad_usage(c->entry, "--prometheus needs the server's URL (--prometheus=URL), or "
				     "`prometheus = URL` in [defaults] of the configuration");
	}
	struct cluster_opts o = {.url = url, .json = args_has(a, O_JSON), .free = args_has(a, O_FREE),
				 .width = term_width(STDOUT_FILENO)};
	o.color = !o.json && !o.free && use_color(color, STDOUT_FILENO);
	int rc = cluster_status(&o);
	config_free(&cfg);
	return rc;
}

/* The option values, checked before anything is opened. */
static int read_options(struct cmd *c, struct status_opts *o, struct gpu_error *err)
{
	const struct cmd_entry *e = c->entry;
	struct args *a = &c->args;
	const char *qgpu = args_get(a, O_QGPU), *qapps = args_get(a, O_QAPPS);
	const char *format = args_get(a, O_FORMAT);
	unsigned long ms = 0;
	int color = args_choice(a, O_COLOR, color_when_names, COLOR_AUTO);
	if (color < 0 || !args_seconds(a, 'l', 0.01, &o->loop) ||
	    !args_uint(a, O_LMS, 10, (unsigned long)(MAX_SECONDS * 1000), &ms) ||
	    !args_uint(a, 'c', 1, ULONG_MAX, &o->count))
		return cmd_args_error(c);
	if (ms)
		o->loop = ms / 1000.0;
	o->mode = args_has(a, O_JSON) ? M_JSON : M_TABLE;
	o->no_procs = args_has(a, O_NOPROC);
	o->details = args_has(a, O_DETAILS);
	if (o->details && o->mode != M_JSON)
		return cmd_bad_usage(e, "--details goes with --json");
	bool list = args_has(a, 'L');
	if (qgpu && qapps)
		return cmd_bad_usage(e, "--query-gpu and --query-compute-apps cannot be combined");
	if (list && (qgpu || qapps || o->mode == M_JSON))
		return cmd_bad_usage(e, "-L cannot be combined with --json or --query-*");
	if (qgpu || qapps) {
		if (o->mode == M_JSON)
			return cmd_bad_usage(e, "--json and --query-* cannot be combined");
		if (!format)
			return cmd_bad_usage(e, "--format=csv[,noheader][,nounits] is required with "
						"--query-%s", qgpu ? "gpu" : "compute-apps");
		if (!query_parse_format(format, &o->qflags))
			return cmd_bad_usage(e, "--format is csv[,noheader][,nounits], not '%s'", format);
		o->query = query_parse(qgpu ? Q_GPU : Q_APPS, qgpu ? qgpu : qapps, err);
		if (!o->query) {
			/* nvidia-smi's words, on stdout with a blank line, and its exit status 2: scripts
			 * written for it read them there (a real capture); the hint goes to stderr. */
			printf("%s\n\n", err->msg);
			fflush(stdout);
			fprintf(stderr, "gpuctl status: %s `gpuctl status --help-query-%s` lists the fields\n",
				err->msg, qgpu ? "gpu" : "compute-apps");
			return err->code;
		}
		o->mode = M_CSV;
	} else if (format) {
		return cmd_bad_usage(e, "--format only applies to --query-gpu or --query-compute-apps");
	} else if (list) {
		o->mode = M_LIST;
	}
	o->tty = isatty(STDOUT_FILENO);
	o->color = o->mode == M_TABLE && use_color(color, STDOUT_FILENO);
	o->width = term_columns(STDOUT_FILENO);
	return EXIT_OK;
}

static int status(struct cmd *c)
{
	if (args_has(&c->args, O_HQGPU) || args_has(&c->args, O_HQAPPS)) {
		struct strbuf sb = {0};
		query_help(&sb, args_has(&c->args, O_HQGPU) ? Q_GPU : Q_APPS);
		fputs(sb.buf, stdout);
		sb_free(&sb);
		return EXIT_OK;
	}
	if (args_has(&c->args, O_PROM) || args_has(&c->args, O_FREE))
		return cluster_mode(c);
	if (c->args.argc)
		return cmd_bad_usage(c->entry, "unexpected argument '%s'", c->args.argv[0]);
	struct status_opts o = {.mode = M_TABLE};
	struct gpu_error err = {0};
	int rc = read_options(c, &o, &err);
	/* The daemon's shared view, as fresh as the loop's period (a one-shot: SNAPSHOT_AGE_DEFAULT). */
	/* The fields the model does not hold (most of nvidia-smi's health and inventory fields) are
	 * read from the driver as they are printed, and a board serial (-i) is read when named: the
	 * snapshot carries neither, so such a status reads the machine itself. */
	const char *ids = args_get(&c->args, 'g');
	c->snap = !(o.query && query_reads_driver(o.query)) && !(ids && gpu_list_may_name_serial(ids));
	c->snap_what = status_what(&o);
	c->snap_age = snapshot_max_age(o.loop ? o.loop : SNAPSHOT_AGE_DEFAULT);
	/* issue 22: status shows no compute capability, core count or device minor (but the
	 * compute_cap field): the GPUs are opened without those three calls each */
	gpu_open_lean(!(o.query && query_needs_cc(o.query)));
	c->snap_leases = o.mode != M_CSV && o.mode != M_LIST; /* issue 22: one round trip a refresh */
	/* The table asks the daemon for its frame laid out (lease/frame.h), a loop for each: the
	 * GPUs opened only if it will not; not for some GPUs (-g). Ten users' `watch gpuctl status`
	 * or `status -l` then cost one layout a view. */
	struct frame_source *fs = NULL;
	if (rc == EXIT_OK && o.mode == M_TABLE && c->snap && !ids && snapshot_wanted())
		fs = frame_source_new();
	if (rc == EXIT_OK && !fs)
		rc = cmd_open(c);
	if (rc == EXIT_OK)
		rc = run_status(&o, c, fs);
	else
		frame_source_free(fs);
	query_free(o.query);
	leaseview_free(&o.leases);
	return rc;
}

static const struct option longopts[] = {
	{"id", required_argument, NULL, 'g'},
	{"json", no_argument, NULL, O_JSON},
	{"query-gpu", required_argument, NULL, O_QGPU},
	{"query-compute-apps", required_argument, NULL, O_QAPPS},
	{"format", required_argument, NULL, O_FORMAT},
	{"loop", required_argument, NULL, 'l'},
	{"loop-ms", required_argument, NULL, O_LMS},
	{"count", required_argument, NULL, 'c'},
	{"no-processes", no_argument, NULL, O_NOPROC},
	{"color", required_argument, NULL, O_COLOR},
	{"help-query-gpu", no_argument, NULL, O_HQGPU},
	{"help-query-compute-apps", no_argument, NULL, O_HQAPPS},
	{"list-gpus", no_argument, NULL, 'L'},
	{"details", no_argument, NULL, O_DETAILS},
	{"prometheus", optional_argument, NULL, O_PROM},
	{"free", no_argument, NULL, O_FREE},
	{0},
};

const struct cmd_entry cmd_status_entry = {
	.name = "status",
	.alias = "ls",
	.summary = "show GPUs, their use and their processes (table, JSON, nvidia-smi CSV)",
	.usage =
		"status [OPTIONS]     (alias: ls)\n\n"
		"Show every GPU: utilisation, memory, temperature, power and its processes\n"
		"(user, pid, GPU memory, command line).\n\n"
		CMD_GPUS_HELP
		"  -i, --id LIST              the same, as nvidia-smi spells it\n"
		"      --no-processes         leave out the process lists\n"
		"      --json                 one JSON document (keys: man gpuctl-status)\n"
		"      --details              with --json: also what gpuctl top shows (fan, clocks,\n"
		"                             codecs, PCIe, throttle reasons; per process parent,\n"
		"                             host CPU, RSS, run time; the lease queue)\n"
		"      --query-gpu=FIELDS     nvidia-smi compatible query, with --format\n"
		"      --query-compute-apps=FIELDS\n"
		"      --format=csv[,noheader][,nounits]\n"
		"      --help-query-gpu, --help-query-compute-apps   list the query fields\n"
		"  -L, --list-gpus            list the GPUs and MIG devices as `nvidia-smi -L` does\n"
		"  -l, --loop SECONDS         refresh every SECONDS (fractions allowed) until Ctrl-C;\n"
		"                             the table redraws in place, JSON prints one document\n"
		"                             per line, CSV appends rows\n"
		"      --loop-ms MS           the same in milliseconds (nvidia-smi's -lms too)\n"
		"  -c, --count N              stop after N refreshes\n"
		"      --color=auto|always|never   colour the table (NO_COLOR is respected)\n"
		"      --prometheus [URL]     the cluster: every node's GPUs, processes and leases\n"
		"                             from the gpuctl exporters this Prometheus server\n"
		"                             scrapes, grouped by host (URL: the `prometheus` key\n"
		"                             of the configuration when not given); stale hosts\n"
		"                             are marked; exit 14 when Prometheus cannot be asked\n"
		"      --free                 with --prometheus: only the free GPUs (exit 10 if none)\n"
		"  -h, --help                 this help\n\n"
		"The table fits the terminal's width (COLUMNS sets another); piped, nothing is cut.\n"
		"A loop on a terminal fits its height too, as top does.\n",
	/* One positional argument: the URL of `--prometheus URL` (the option's value is optional). */
	.args = {.shorts = "l:c:L", .longs = longopts, .upper = 1, .gpus_alias = 'i',
		 .words = (const char *const[]){"-lms", "--loop-ms", NULL}},
	.flags = CMD_NVML | CMD_GPUS | CMD_GUARD_VIEW,
	.exec = status,
};
