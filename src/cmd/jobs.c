/* jobs.c: `gpuctl jobs [--all] [--json] [ID...]` and `gpuctl jobs --clean`: the caller's
 * jobs of every backend (jobs/backend.h: this machine's from their records, Slurm's as squeue says;
 * id, name, state, place in the queue and wait so far, GPUs, start, runtime, exit status or
 * signal, command); with --all, every user's queued and running work on this machine too, as the
 * daemon lists it (other users' records and logs are theirs: never read). */
#include "base/escape.h"
#include "cmd/cmd.h"
#include "jobs/backend.h"
#include "base/json.h"
#include "machine/pid.h"

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
	struct strbuf sb = {.sink = stdout}; /* 64 KiB, not the whole output, in memory */
	struct json j;
	uint64_t now = job_now_ns();
	json_init(&j, &sb, true);
	json_obj(&j, NULL);
	json_arr(&j, "jobs");
	for (size_t i = 0; i < n; i++) {
		const struct job *x = rows[i].j;
		char id[48];
		json_obj(&j, NULL);
		/* Slurm's ids are the text the commands take ("slurm:42"), so they cannot be mistaken
		 * for this machine's. */
		if (x->kind == JOB_SLURM)
			json_str(&j, "id", job_id_text(x->kind, x->id, id, sizeof id));
		else
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
		json_str(&j, "backend", job_backend(x->kind)->name);
		json_arr(&j, "after");
		for (size_t k = 0; k < x->nafter; k++)
			if (x->kind == JOB_SLURM)
				json_str(&j, NULL, job_id_text(x->kind, x->after[k], id, sizeof id));
			else
				json_uint(&j, NULL, x->after[k]);
		json_end_arr(&j);
		if (x->kind == JOB_SLURM) {
			json_uint(&j, "slurm_job_id", x->id);
			json_str(&j, "slurm_state", x->slurm_state);
			json_str(&j, "node", x->node);
			json_bool(&j, "never_starts", x->never);
		}
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

/* Decimal digits of v into buf (24 bytes), returned: the table's numbers, made by hand since
 * printf's machinery was a tenth of the samples of a thousand-row listing, most of it here. */
static const char *digits(char *buf, uint64_t v)
{
	char *p = buf + 23;
	*p = '\0';
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	return p;
}

static void two(struct strbuf *sb, unsigned long v)
{
	sb_addc(sb, (char)('0' + v / 10 % 10));
	sb_addc(sb, (char)('0' + v % 10));
}

/* H:MM:SS, or DdHH:MM past a day. */
static void duration(struct strbuf *sb, double s)
{
	char d[24];
	unsigned long t = s > 0 ? (unsigned long)s : 0;
	if (t >= 86400) {
		sb_adds(sb, digits(d, t / 86400));
		sb_addc(sb, 'd');
		two(sb, t / 3600 % 24);
	} else {
		sb_adds(sb, digits(d, t / 3600));
	}
	sb_addc(sb, ':');
	two(sb, t / 60 % 60);
	if (t < 86400) {
		sb_addc(sb, ':');
		two(sb, t % 60);
	}
}

/* The field that started at mark padded with spaces to w columns (all ASCII), then a space. */
static void pad(struct strbuf *sb, size_t mark, size_t w)
{
	while (sb->len - mark < w)
		sb_addc(sb, ' ');
	sb_addc(sb, ' ');
}

static void print_table(const struct row *rows, size_t n, bool all)
{
	struct strbuf sb = {0};
	uint64_t now = job_now_ns();
	if (!n) {
		fputs(all ? "no jobs\n" : "no jobs (`gpuctl submit -- COMMAND` queues one)\n", stdout);
		return;
	}
	int w = 6;
	char id[48], d[24];
	for (size_t i = 0; i < n; i++) {
		int l = (int)strlen(job_id_text(rows[i].j->kind, rows[i].j->id, id, sizeof id));
		w = l > w ? l : w;
	}
	sb_addf(&sb, "%*s %s%-12s %-14s %-7s %-8s %-8s %-6s %s\n", w, "ID", all ? "USER         " : "",
		"NAME", "STATE", "GPUS", "START", "TIME", "EXIT", "COMMAND");
	for (size_t i = 0; i < n; i++) {
		const struct job *x = rows[i].j;
		char start[24];
		/* written out a row at a time past 32 KiB: a thousand rows' buffer grown whole was
		 * fresh pages faulted in (the pads measure from a mark in the row, so not the sink) */
		if (sb.len >= 32768) {
			fwrite(sb.buf, 1, sb.len, stdout);
			sb.len = 0;
		}
		const char *idt = x->kind == JOB_LOCAL ? digits(d, x->id) : job_id_text(x->kind, x->id, id, sizeof id);
		for (size_t k = strlen(idt); k < (size_t)w; k++)
			sb_addc(&sb, ' ');
		sb_adds(&sb, idt);
		sb_addc(&sb, ' ');
		if (all)
			sb_addf(&sb, "%-12s ", esc_str(rows[i].user, 0));
		size_t mark = sb.len;
		esc_printable_n(&sb, x->name ? x->name : "-", 12);
		pad(&sb, mark, 12);
		mark = sb.len;
		if (x->state == JOB_QUEUED && x->never) {
			sb_adds(&sb, "never starts");
		} else if (x->state == JOB_QUEUED && x->position) {
			sb_adds(&sb, "queued #");
			sb_adds(&sb, digits(d, x->position));
		} else if (x->state == JOB_QUEUED && x->nafter) {
			sb_adds(&sb, "queued, after");
		} else {
			sb_adds(&sb, job_state_name(x->state));
		}
		pad(&sb, mark, 14);
		mark = sb.len;
		for (unsigned k = 0; k < x->ngpus && sb.len - mark < 60; k++) {
			if (k)
				sb_addc(&sb, ',');
			sb_adds(&sb, digits(d, x->gpus[k]));
		}
		if (!x->ngpus)
			sb_addc(&sb, '-');
		pad(&sb, mark, 7);
		mark = sb.len;
		clock_text(start, sizeof start, x->started);
		sb_adds(&sb, start);
		pad(&sb, mark, 8);
		mark = sb.len;
		if (x->state == JOB_QUEUED)
			duration(&sb, seconds(x->submitted, now));
		else if (x->started)
			duration(&sb, seconds(x->started, x->ended ? x->ended : now));
		else
			sb_addc(&sb, '-');
		pad(&sb, mark, 8);
		mark = sb.len;
		if (x->exit_code >= 0) {
			sb_adds(&sb, digits(d, (uint64_t)x->exit_code));
		} else if (x->signal) {
			sb_adds(&sb, "SIG");
			sb_adds(&sb, digits(d, (uint64_t)x->signal));
		} else {
			sb_addc(&sb, '-');
		}
		pad(&sb, mark, 6);
		esc_printable_n(&sb, x->command ? x->command : "", 200);
		sb_addc(&sb, '\n');
		if (x->state == JOB_QUEUED && x->nafter && !x->position && !x->never) {
			sb_adds(&sb, "         after job");
			for (size_t k = 0; k < x->nafter; k++)
				sb_addf(&sb, "%s %s", k ? "," : "", job_id_text(x->kind, x->after[k], id, sizeof id));
			sb_addc(&sb, '\n');
		}
		if (x->kind == JOB_SLURM && x->state == JOB_RUNNING && x->node) {
			sb_adds(&sb, "         on node ");
			esc_printable_n(&sb, x->node, 200);
			sb_addc(&sb, '\n');
		}
		/* Slurm says why a job waits (Resources, Priority, ...); this machine's place in the
		 * queue says it here. */
		if (x->reason && (job_final(x->state) || x->attempt > 1 || x->kind == JOB_SLURM)) {
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

/* Forgets the finished jobs of every backend. */
static int clean(void)
{
	uint64_t gone = 0, kept = 0;
	int rc = EXIT_OK;
	for (int k = 0; k < JOB_NKINDS; k++) {
		const struct job_backend *be = job_backend((enum job_kind)k);
		struct gpu_error err = {0};
		uint64_t g = 0, kp = 0;
		struct jobs_of *of = be->open(false, &err);
		bool ok = of && be->clean(of, &g, &kp, &err);
		if (of)
			be->close(of);
		if (!ok) {
			fprintf(stderr, "gpuctl jobs: %s\n", err.msg);
			rc = rc ? rc : err.code ? err.code : EXIT_FAIL;
		}
		gone += g;
		kept += kp;
	}
	fprintf(stderr, "gpuctl jobs: forgot %llu finished job%s", (unsigned long long)gone,
		gone == 1 ? "" : "s");
	if (kept)
		fprintf(stderr, " (kept %llu that queued jobs run after)", (unsigned long long)kept);
	fputc('\n', stderr);
	return rc;
}

/* Without ids: every job of every backend (a Slurm backend with no records asks Slurm nothing).
 * With ids: those, each from its own backend; with --all, other users' too where known. */
static int gather(struct jobset *js, struct job_ref *refs, size_t nids, bool all, struct row **rows,
		  size_t *n)
{
	int rc = EXIT_OK;
	*n = 0;
	*rows = NULL;
	if (nids && !all) {
		rc = jobset_find(js, refs, nids, true, "gpuctl jobs");
		*rows = xcalloc(nids + 1, sizeof **rows);
		for (size_t i = 0; rc == EXIT_OK && i < nids; i++)
			(*rows)[(*n)++].j = js->jobs[i];
		return rc;
	}
	js->refs = refs;
	size_t cap = 0;
	for (int k = 0; k < JOB_NKINDS; k++) {
		const struct job_backend *be = job_backend((enum job_kind)k);
		struct job **list;
		size_t m = 0;
		int r = EXIT_OK;
		if (!jobset_of(js, (enum job_kind)k, true, "gpuctl jobs", &r))
			return r;
		r = be->list(js->of[k], all, &list, &m);
		rc = rc ? rc : r;
		for (size_t i = 0; i < m; i++) {
			bool wanted = !nids;
			for (size_t q = 0; q < nids && !wanted; q++)
				wanted = refs[q].kind == (enum job_kind)k && refs[q].id == list[i]->id;
			if (!wanted)
				continue;
			*rows = grow_array(*rows, &cap, *n + 1, sizeof **rows);
			(*rows)[(*n)++] = (struct row){.j = list[i]};
		}
	}
	if (rc == EXIT_OK && nids && *n < nids) {
		fprintf(stderr, "gpuctl jobs: no such job (of yours, or queued or running)\n");
		rc = EXIT_NO_SUCH_JOB;
	}
	return rc;
}

static int jobs_cmd(struct cmd *c)
{
	bool all = args_has(&c->args, J_ALL), json = args_has(&c->args, J_JSON);
	if (args_has(&c->args, J_CLEAN)) {
		if (c->args.argc || all || json)
			return cmd_bad_usage(c->entry, "--clean takes nothing else");
		return clean();
	}
	struct job_ref *refs;
	size_t nids, n;
	struct gpu_error err = {0};
	if (!jobset_ids(c->args.argc, c->args.argv, &refs, &nids, &err))
		return cmd_fail(c, &err);
	struct jobset js = {0};
	struct row *rows;
	if (!nids && !all) /* the places of queued ones, asked before the records are read */
		job_local_prefetch_places();
	job_local_make_copy();
	int rc = gather(&js, refs, nids, all, &rows, &n);
	/* A backend that could not be asked (Slurm down, the daemon for --all) still shows what
	 * was known: its code says the list may be stale or short. */
	if (rc == EXIT_OK || ((rc == EXIT_SLURM || rc == EXIT_DAEMON) && n)) {
		/* Names looked up once per owner, not per row: each lookup reads /etc/passwd, and
		 * a user's thousand jobs made it a third of the listing's time. */
		size_t *firsts = xcalloc(n + 1, sizeof *firsts), nfirsts = 0;
		for (size_t i = 0; i < n; i++) {
			size_t k = 0;
			while (k < nfirsts && rows[firsts[k]].j->uid != rows[i].j->uid)
				k++;
			if (k < nfirsts) {
				memcpy(rows[i].user, rows[firsts[k]].user, sizeof rows[i].user);
			} else {
				user_name(rows[i].j->uid, rows[i].user, sizeof rows[i].user);
				firsts[nfirsts++] = i;
			}
		}
		free(firsts);
		if (json)
			print_json(rows, n);
		else
			print_table(rows, n, all);
	}
	free(rows);
	jobset_free(&js);
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
		 "`gpuctl submit --again ID`), unknown (a Slurm job slurmctld forgot before gpuctl saw\n"
		 "it end). Slurm's jobs (submit --slurm) are listed too, as slurm:N, from squeue.\n\n"
		 "  -a, --all     every user's queued and running jobs too (never their logs)\n"
		 "  -j, --json    {\"jobs\": [{\"id\", \"name\", \"user\", \"state\", \"exit_code\", \"signal\",\n"
		 "                \"gpus\", \"command\", \"submitted_at\", \"started_at\", \"ended_at\",\n"
		 "                \"queue_position\", ...}]}: times RFC 3339 (UTC) or null\n"
		 "      --clean   forget your finished jobs (records and their own logs); those that\n"
		 "                queued jobs run after are kept\n",
	.args = {.shorts = "aj", .longs = longopts, .upper = -1},
	.exec = jobs_cmd,
};
