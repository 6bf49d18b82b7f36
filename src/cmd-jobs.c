/* cmd-jobs.c: `gpuctl jobs [--all] [--json] [ID...]` and `gpuctl jobs --clean`: the caller's
 * jobs from their records (id, name, state, place in the queue and wait so far, GPUs, start,
 * runtime, exit status or signal, command); with --all, every user's queued and running work
 * too, as the daemon lists it (other users' records and logs are theirs: never read). */
#include "escape.h"
#include "gpuctl.h"
#include "jobconn.h"
#include "json.h"
#include "leaseview.h"
#include "pid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { J_ALL = 'a', J_JSON = 'j', J_CLEAN = 500 };

struct row {
	struct job *j;
	char user[64];
};

/* Other users' jobs, as the daemon lists them (kind job; the id from the label "#ID NAME"), and
 * the places of ours in the queue. */
static void from_daemon(struct job **others, size_t *nothers, struct jobctx *x, bool all)
{
	struct leaseview v;
	struct gpu_error err = {0};
	struct gpu_set *set = NULL;
	uint64_t id;
	if (!leaseview_load(&v, &err))
		return;
	for (size_t i = 0; i < v.nqueue; i++) {
		const struct waiter_info *w = &v.queue[i];
		if (strcmp(w->kind, "job") || !job_label_id(w->name, &id))
			continue;
		struct job *mine = w->uid == geteuid() ? jobctx_find(x, id) : NULL;
		if (mine) {
			mine->position = w->position;
		} else if (all && w->uid != geteuid()) {
			*others = xrealloc(*others, (*nothers + 1) * sizeof **others);
			struct job *j = &(*others)[(*nothers)++];
			const char *sp = strchr(w->name, ' ');
			*j = (struct job){.id = id, .uid = w->uid, .state = JOB_QUEUED, .exit_code = -1,
					  .position = w->position, .count = w->count,
					  .submitted = (uint64_t)w->since * 1000000000ULL,
					  .name = sp ? xstrdup(sp + 1) : NULL,
					  .command = xstrdup(w->command ? w->command : "")};
		}
	}
	for (size_t i = 0; all && i < v.nleases; i++) {
		const struct lease_info *l = &v.leases[i];
		if (strcmp(l->kind, "job") || l->uid == geteuid() || !job_label_id(l->name, &id))
			continue;
		if (!set)
			set = gpu_set_open(&err); /* indices are a courtesy: UUIDs say it otherwise */
		*others = xrealloc(*others, (*nothers + 1) * sizeof **others);
		struct job *j = &(*others)[(*nothers)++];
		const char *sp = strchr(l->name, ' ');
		*j = (struct job){.id = id, .uid = l->uid, .state = JOB_RUNNING, .exit_code = -1,
				  .pid = l->pid, .started = (uint64_t)l->since * 1000000000ULL,
				  .name = sp ? xstrdup(sp + 1) : NULL,
				  .command = xstrdup(l->command ? l->command : "")};
		for (size_t k = 0; k < l->ngpus && j->ngpus < GPU_MAX; k++)
			for (size_t g = 0; set && g < set->ngpus; g++)
				if (!strcmp(set->gpus[g].uuid, l->uuids[k]))
					j->gpus[j->ngpus++] = set->gpus[g].index;
	}
	gpu_set_free(set);
	leaseview_free(&v);
}

static void rfc3339(char *buf, size_t n, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000ULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + k, n - k, ".%03uZ", (unsigned)(ns / 1000000 % 1000));
}

static void json_time(struct json *j, const char *key, uint64_t ns)
{
	char buf[40];
	if (!ns) {
		json_null(j, key);
		return;
	}
	rfc3339(buf, sizeof buf, ns);
	json_str(j, key, buf);
}

static double seconds(uint64_t from, uint64_t to)
{
	return from && to > from ? (double)(to - from) / 1e9 : 0;
}

static void print_json(const struct row *rows, size_t n)
{
	struct strbuf sb = {0};
	struct json j;
	uint64_t now = job_now_ns();
	json_init(&j, &sb, true);
	json_obj(&j, NULL);
	json_arr(&j, "jobs");
	for (size_t i = 0; i < n; i++) {
		const struct job *x = rows[i].j;
		json_obj(&j, NULL);
		json_uint(&j, "id", x->id);
		json_str(&j, "name", x->name);
		json_str(&j, "user", rows[i].user);
		json_uint(&j, "uid", x->uid);
		json_str(&j, "state", job_state_name(x->state));
		if (x->exit_code >= 0)
			json_int(&j, "exit_code", x->exit_code);
		else
			json_null(&j, "exit_code");
		if (x->signal)
			json_int(&j, "signal", x->signal);
		else
			json_null(&j, "signal");
		json_arr(&j, "gpus");
		for (unsigned k = 0; k < x->ngpus; k++)
			json_uint(&j, NULL, x->gpus[k]);
		json_end_arr(&j);
		json_str(&j, "command", x->command);
		json_time(&j, "submitted_at", x->submitted);
		json_time(&j, "started_at", x->started);
		json_time(&j, "ended_at", x->ended);
		if (x->position)
			json_uint(&j, "queue_position", x->position);
		else
			json_null(&j, "queue_position");
		/* Extras (the contract allows more keys). */
		json_arr(&j, "after");
		for (size_t k = 0; k < x->nafter; k++)
			json_uint(&j, NULL, x->after[k]);
		json_end_arr(&j);
		if (x->pid)
			json_int(&j, "pid", x->pid);
		else
			json_null(&j, "pid");
		json_str(&j, "log", x->log);
		json_str(&j, "cwd", x->cwd);
		json_str(&j, "reason", x->reason);
		json_str(&j, "warning", x->warning);
		json_uint(&j, "attempt", x->attempt);
		json_uint(&j, "retries", x->retries);
		if (x->state == JOB_QUEUED && x->submitted)
			json_num(&j, "waited_seconds", seconds(x->submitted, now), 3);
		else if (x->started)
			json_num(&j, "runtime_seconds", seconds(x->started, x->ended ? x->ended : now), 3);
		json_end_obj(&j);
	}
	json_end_arr(&j);
	json_end_obj(&j);
	json_print(&sb);
}

/* HH:MM:SS today, else the date too. */
static void clock_text(char *buf, size_t n, uint64_t ns)
{
	if (!ns) {
		snprintf(buf, n, "-");
		return;
	}
	time_t t = (time_t)(ns / 1000000000ULL), tnow = time(NULL);
	struct tm tm, now;
	localtime_r(&t, &tm);
	localtime_r(&tnow, &now);
	bool today = tm.tm_year == now.tm_year && tm.tm_yday == now.tm_yday;
	strftime(buf, n, today ? "%H:%M:%S" : "%m-%d %H:%M", &tm);
}

static void duration(char *buf, size_t n, double s)
{
	unsigned long t = s > 0 ? (unsigned long)s : 0;
	if (t >= 86400)
		snprintf(buf, n, "%lud%02lu:%02lu", t / 86400, t / 3600 % 24, t / 60 % 60);
	else
		snprintf(buf, n, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
}

static void print_table(const struct row *rows, size_t n, bool all)
{
	struct strbuf sb = {0};
	uint64_t now = job_now_ns();
	if (!n) {
		fputs(all ? "no jobs\n" : "no jobs (`gpuctl submit -- COMMAND` queues one)\n", stdout);
		return;
	}
	sb_addf(&sb, "%6s %s%-12s %-14s %-7s %-8s %-8s %-6s %s\n", "ID", all ? "USER         " : "",
		"NAME", "STATE", "GPUS", "START", "TIME", "EXIT", "COMMAND");
	for (size_t i = 0; i < n; i++) {
		const struct job *x = rows[i].j;
		char state[32], gpus[64] = "-", start[24], took[48], ex[16] = "-";
		if (x->state == JOB_QUEUED && x->position)
			snprintf(state, sizeof state, "queued #%llu", (unsigned long long)x->position);
		else if (x->state == JOB_QUEUED && x->nafter)
			snprintf(state, sizeof state, "queued, after");
		else
			snprintf(state, sizeof state, "%s", job_state_name(x->state));
		if (x->ngpus)
			gpus[0] = '\0';
		for (unsigned k = 0; k < x->ngpus; k++) {
			size_t l = strlen(gpus);
			snprintf(gpus + l, sizeof gpus - l, "%s%u", k ? "," : "", x->gpus[k]);
		}
		clock_text(start, sizeof start, x->started);
		if (x->state == JOB_QUEUED)
			duration(took, sizeof took, seconds(x->submitted, now));
		else if (x->started)
			duration(took, sizeof took, seconds(x->started, x->ended ? x->ended : now));
		else
			snprintf(took, sizeof took, "-");
		if (x->exit_code >= 0)
			snprintf(ex, sizeof ex, "%d", x->exit_code);
		else if (x->signal)
			snprintf(ex, sizeof ex, "SIG%d", x->signal);
		sb_addf(&sb, "%6llu ", (unsigned long long)x->id);
		if (all)
			sb_addf(&sb, "%-12s ", esc_str(rows[i].user, 0));
		size_t mark = sb.len;
		esc_printable_n(&sb, x->name ? x->name : "-", 12);
		sb_addf(&sb, "%*s %-14s %-7s %-8s %-8s %-6s ", (int)(sb.len - mark < 12 ? 12 - (sb.len - mark) : 0),
			"", state, gpus, start, took, ex);
		esc_printable_n(&sb, x->command ? x->command : "", 200);
		sb_addc(&sb, '\n');
		if (x->state == JOB_QUEUED && x->nafter && !x->position) {
			sb_adds(&sb, "         after job");
			for (size_t k = 0; k < x->nafter; k++)
				sb_addf(&sb, "%s %llu", k ? "," : "", (unsigned long long)x->after[k]);
			sb_addc(&sb, '\n');
		}
		if (x->reason && (job_final(x->state) || x->attempt > 1)) {
			sb_adds(&sb, "         ");
			esc_printable_n(&sb, x->reason, 300);
			sb_addc(&sb, '\n');
		}
		if (x->warning) {
			sb_adds(&sb, "         warning: ");
			esc_printable_n(&sb, x->warning, 300);
			sb_addc(&sb, '\n');
		}
	}
	fputs(sb.buf, stdout);
	sb_free(&sb);
}

static int clean(void)
{
	struct dclient dc = {.fd = -1};
	struct strbuf req = {0};
	struct msg reply;
	struct gpu_error err = {0};
	msg_begin(&req, "clean");
	msg_add_u64(&req, "id", 1);
	bool ok = runner_call(&dc, &req, NULL, 0, &reply, &err);
	sb_free(&req);
	dclient_close(&dc);
	if (!ok) {
		fprintf(stderr, "gpuctl jobs: %s\n", err.msg);
		return err.code;
	}
	uint64_t gone = 0, kept = 0;
	msg_get_u64(&reply, "count", UINT64_MAX, &gone);
	msg_get_u64(&reply, "kept", UINT64_MAX, &kept);
	msg_free(&reply);
	fprintf(stderr, "gpuctl jobs: forgot %llu finished job%s", (unsigned long long)gone,
		gone == 1 ? "" : "s");
	if (kept)
		fprintf(stderr, " (kept %llu that queued jobs run after)", (unsigned long long)kept);
	fputc('\n', stderr);
	return EXIT_OK;
}

static int jobs_cmd(struct cmd *c)
{
	bool all = args_has(&c->args, J_ALL), json = args_has(&c->args, J_JSON);
	if (args_has(&c->args, J_CLEAN)) {
		if (c->args.argc || all || json)
			return cmd_bad_usage(c->entry, "--clean takes nothing else");
		return clean();
	}
	uint64_t *ids;
	size_t nids;
	if (!jobctx_ids(c->args.argc, c->args.argv, &ids, &nids, "gpuctl jobs"))
		return EXIT_USAGE;
	struct jobctx x;
	struct gpu_error err = {0};
	if (!jobctx_load(&x, true, &err)) {
		fprintf(stderr, "gpuctl jobs: %s\n", err.msg);
		free(ids);
		return err.code;
	}
	int rc = all ? EXIT_OK : jobctx_check(&x, ids, nids, "gpuctl jobs");
	struct job *others = NULL;
	size_t nothers = 0;
	bool queued = false;
	for (size_t i = 0; i < x.n; i++)
		queued |= x.jobs[i].state == JOB_QUEUED;
	if (rc == EXIT_OK && (queued || all))
		from_daemon(&others, &nothers, &x, all);
	struct row *rows = xcalloc(x.n + nothers + 1, sizeof *rows);
	size_t n = 0;
	char me[64];
	user_name(geteuid(), me, sizeof me);
	for (size_t i = 0; rc == EXIT_OK && i < x.n + nothers; i++) {
		struct job *j = i < x.n ? &x.jobs[i] : &others[i - x.n];
		bool wanted = !nids;
		for (size_t k = 0; k < nids && !wanted; k++)
			wanted = ids[k] == j->id;
		if (!wanted)
			continue;
		rows[n].j = j;
		if (i < x.n)
			snprintf(rows[n].user, sizeof rows[n].user, "%s", me);
		else
			user_name(j->uid, rows[n].user, sizeof rows[n].user);
		n++;
	}
	if (rc == EXIT_OK && all && nids && n < nids) {
		fprintf(stderr, "gpuctl jobs: no such job (of yours, or queued or running)\n");
		rc = EXIT_NO_SUCH_JOB;
	}
	if (rc == EXIT_OK) {
		if (json)
			print_json(rows, n);
		else
			print_table(rows, n, all);
	}
	free(rows);
	jobs_free(others, nothers);
	jobctx_free(&x);
	free(ids);
	return rc;
}

static const struct option longopts[] = {
	{"all", no_argument, NULL, J_ALL}, {"json", no_argument, NULL, J_JSON},
	{"clean", no_argument, NULL, J_CLEAN}, {0},
};

const struct cmd_entry cmd_jobs_entry = {
	.name = "jobs",
	.summary = "your submitted jobs: queued, running, and how they ended",
	.usage = "jobs [--all] [--json] [ID...]\n"
		 "       gpuctl jobs --clean\n\n"
		 "Your jobs (`gpuctl submit`): id, name, state, GPUs, start, time (queued: the wait so\n"
		 "far; else the runtime), exit status or signal, command. States: queued (#N: the place\n"
		 "in the shared queue), running, done (exit 0), failed (non-zero, a signal, or it could\n"
		 "not start), cancelled, lost (the machine restarted, or the runner stopped, meanwhile:\n"
		 "`gpuctl submit --again ID`).\n\n"
		 "  -a, --all     every user's queued and running jobs too (never their logs)\n"
		 "  -j, --json    {\"jobs\": [{\"id\", \"name\", \"user\", \"state\", \"exit_code\", \"signal\",\n"
		 "                \"gpus\", \"command\", \"submitted_at\", \"started_at\", \"ended_at\",\n"
		 "                \"queue_position\", ...}]}: times RFC 3339 (UTC) or null\n"
		 "      --clean   forget your finished jobs (records and their own logs); those that\n"
		 "                queued jobs run after are kept\n",
	.args = {.shorts = "aj", .longs = longopts, .upper = -1},
	.exec = jobs_cmd,
};
