/* leases.c: `gpuctl leases`: every live lease (GPU, user, pid, kind, since, name, command)
 * and the waiting queue in order. */
#include "machine/gpu.h"
#include "cmd/cmd.h"
#include "base/escape.h"
#include "base/json.h"
#include "lease/view.h"
#include "machine/runtime.h"
#include "view/container.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The GPU's nvidia-smi index, or -1 when NVML is unavailable or does not know the UUID. */
static int index_of(const struct gpu_set *set, const char *uuid)
{
	for (size_t i = 0; set && i < set->ngpus; i++)
		if (!strcmp(set->gpus[i].uuid, uuid))
			return (int)set->gpus[i].index;
	return -1;
}

static void json_uuids(struct json *j, const char *key, const struct gpu_set *set,
		       char (*uuids)[96], size_t n)
{
	json_arr(j, key);
	for (size_t k = 0; k < n; k++) {
		json_obj(j, NULL);
		int idx = index_of(set, uuids[k]);
		if (idx >= 0)
			json_uint(j, "index", (unsigned)idx);
		else
			json_null(j, "index");
		json_str(j, "uuid", uuids[k]);
		json_end_obj(j);
	}
	json_end_arr(j);
}

/* -- time limits and backfill (issue 24) -- */
static long long now_ns_signed(unsigned long long ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)(ns / 1000000000ULL) - (long long)ts.tv_sec;
}

/* H:MM:SS of a number of seconds (0 when negative). */
static void hms(char *buf, size_t n, long long s)
{
	if (s < 0)
		s = 0;
	snprintf(buf, n, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
}

static void json_limits_lease(struct json *j, const struct lease_info *l)
{
	if (l->until_ns) {
		json_int(j, "until", (long long)(l->until_ns / 1000000000ULL));
		long long left = now_ns_signed(l->until_ns);
		json_int(j, "time_left", left > 0 ? left : 0);
	} else {
		json_null(j, "until");
		json_null(j, "time_left");
	}
	/* idle leases: how long none of its processes used its GPUs (null: not looked at) */
	long long idle = leaseview_idle_seconds(l);
	if (idle >= 0)
		json_int(j, "idle_seconds", idle);
	else
		json_null(j, "idle_seconds");
	json_bool(j, "idle_warned", l->idle_warned);
	json_bool(j, "idle_released", l->idle_released);
	json_bool(j, "idle_exempt", l->idle_exempt);
}

static void json_limits_waiter(struct json *j, const struct waiter_info *w)
{
	if (w->past >= 0) /* fair share by past use: its user's standing */
		json_int(j, "past_use_gpu_seconds", (long long)w->past);
	else
		json_null(j, "past_use_gpu_seconds");
	if (w->time_limit > 0)
		json_int(j, "time_limit", (long long)(w->time_limit + 0.5));
	else
		json_null(j, "time_limit");
	if (w->start > 0) {
		long long in = now_ns_signed(w->start_ns);
		json_int(j, "estimated_start_in", in > 0 ? in : 0);
	} else {
		json_null(j, "estimated_start_in");
	}
}
/* -- end of time limits -- */

/* ---- memory shares (issue 23) ---- */
/* A lease's "mem_mib" (its claim on each GPU; null: whole GPUs), "over_claim" and
 * "used_mib" (what its processes use on each of its GPUs, in the order of "gpus"). */
static void json_share(struct json *j, const struct lease_info *l)
{
	if (!l->mem_mib) {
		json_null(j, "mem_mib");
		json_null(j, "over_claim");
		json_null(j, "used_mib");
		return;
	}
	json_uint(j, "mem_mib", l->mem_mib);
	json_bool(j, "over_claim", l->over);
	json_arr(j, "used_mib");
	for (size_t k = 0; k < l->ngpus; k++)
		json_uint(j, NULL, k < l->nused ? l->used[k] : 0);
	json_end_arr(j);
}

/* "shares": per GPU with shares, how many, their claims, the memory used outside them and the
 * room left to claim (after the daemon's share_margin). */
static void json_shares(struct json *j, const struct leaseview *v, const struct gpu_set *set)
{
	json_arr(j, "shares");
	for (size_t i = 0; i < v->nshares; i++) {
		const struct share_gpu *s = &v->shares[i];
		json_obj(j, NULL);
		int idx = index_of(set, s->uuid);
		if (idx >= 0)
			json_uint(j, "index", (unsigned)idx);
		else
			json_null(j, "index");
		json_str(j, "uuid", s->uuid);
		json_uint(j, "count", s->count);
		json_uint(j, "claimed_mib", s->claimed);
		json_uint(j, "outside_mib", s->outside);
		json_uint(j, "room_mib", s->room);
		json_end_obj(j);
	}
	json_end_arr(j);
}

static void table_share(struct strbuf *sb, const struct lease_info *l)
{
	uint64_t most = 0;
	for (size_t k = 0; k < l->nused; k++)
		if (l->used[k] > most)
			most = l->used[k];
	sb_addf(sb, "%-7s share of %llu MiB per GPU, its processes use %llu MiB%s\n", "",
		(unsigned long long)l->mem_mib, (unsigned long long)most,
		l->over ? ": OVER ITS CLAIM" : "");
}

static void table_shares(struct strbuf *sb, const struct leaseview *v, const struct gpu_set *set)
{
	if (v->nshares)
		sb_adds(sb, "\nshared GPUs (memory leases):\n");
	for (size_t i = 0; i < v->nshares; i++) {
		const struct share_gpu *s = &v->shares[i];
		sb_addf(sb, "  GPU %d: %u share%s, %llu MiB claimed, %llu MiB used outside them, %llu MiB "
			"left to claim\n", index_of(set, s->uuid), s->count, s->count == 1 ? "" : "s",
			(unsigned long long)s->claimed, (unsigned long long)s->outside,
			(unsigned long long)s->room);
	}
}
/* ---- end of memory shares ---- */

static void print_json(const struct leaseview *v, const struct gpu_set *set,
		       const struct ctr_info *const *ctrs)
{
	struct strbuf sb = {0};
	struct json j;
	json_init(&j, &sb, true);
	json_obj(&j, NULL);
	if (v->present)
		json_int(&j, "daemon_pid", v->daemon_pid);
	else
		json_null(&j, "daemon_pid");
	json_bool(&j, "private", v->private_mode);
	json_str(&j, "state_unsaved", v->unsaved[0] ? v->unsaved : NULL);
	if (v->guard[0]) { /* the device guard (issue 25) */
		json_obj(&j, "guard");
		json_str(&j, "mode", v->guard);
		json_bool(&j, "binding", leaseview_binding(v));
		json_str(&j, "state", v->guard_state);
		json_str(&j, "dev_dir", v->guard_dir[0] ? v->guard_dir : NULL);
		json_arr(&j, "errors");
		for (size_t i = 0; i < v->nguard_errors; i++)
			json_str(&j, NULL, v->guard_errors[i]);
		json_end_arr(&j);
		json_end_obj(&j);
	}
	json_arr(&j, "leases");
	for (size_t i = 0; i < v->nleases; i++) {
		const struct lease_info *l = &v->leases[i];
		json_obj(&j, NULL);
		json_str(&j, "id", l->id);
		json_uuids(&j, "gpus", set, l->uuids, l->ngpus);
		json_str(&j, "user", l->user);
		json_uint(&j, "uid", l->uid);
		json_int(&j, "pid", l->pid);
		if (l->bound)
			json_int(&j, "bound_pid", l->bound);
		else
			json_null(&j, "bound_pid");
		json_str(&j, "kind", l->kind);
		json_int(&j, "since", (long long)l->since);
		json_str(&j, "name", l->name);
		json_str(&j, "command", l->command);
		json_limits_lease(&j, l); /* issue 24 */
		/* containers (issue 28): the container the lease is bound to, or its holder is in */
		json_str(&j, "container_id", ctrs[i] ? ctrs[i]->ref.id : NULL);
		json_str(&j, "container", ctrs[i] && ctrs[i]->name[0] ? ctrs[i]->name : NULL);
		json_share(&j, l); /* memory shares (issue 23) */
		json_str(&j, "mig_uuid", l->mig_uuid[0] ? l->mig_uuid : NULL); /* MIG instances */
		bool alive = leaseview_holder_alive(l);
		json_bool(&j, "holder_alive", alive);
		if (alive) {
			json_null(&j, "live_holders");
		} else {
			pid_t live[16];
			size_t n = leaseview_live_holders(l, live, ARRAY_SIZE(live));
			json_arr(&j, "live_holders");
			for (size_t k = 0; k < n && k < ARRAY_SIZE(live); k++)
				json_int(&j, NULL, live[k]);
			json_end_arr(&j);
		}
		json_end_obj(&j);
	}
	json_end_arr(&j);
	json_uuids(&j, "held_unknown", set, v->held, v->nheld);
	json_shares(&j, v, set); /* memory shares (issue 23) */
	json_str(&j, "queue_order", strcmp(v->order, "fair") ? "fifo" : "fair");
	json_str(&j, "fair_rule", v->fairrule[0] ? v->fairrule : NULL); /* issue 24 */
	json_arr(&j, "queue");
	for (size_t i = 0; i < v->nqueue; i++) {
		const struct waiter_info *w = &v->queue[i];
		json_obj(&j, NULL);
		json_uint(&j, "position", w->position);
		json_str(&j, "user", w->user);
		json_uint(&j, "uid", w->uid);
		json_int(&j, "pid", w->pid);
		json_uint(&j, "count", w->count);
		json_int(&j, "since", (long long)w->since);
		json_str(&j, "state", w->state);
		json_str(&j, "note", *w->note ? w->note : NULL);
		json_str(&j, "kind", w->kind);
		json_str(&j, "name", w->name);
		json_limits_waiter(&j, w); /* issue 24 */
		json_arr(&j, "candidates");
		for (size_t k = 0; k < w->ncand; k++)
			json_str(&j, NULL, w->cand[k]);
		json_end_arr(&j);
		json_end_obj(&j);
	}
	json_end_arr(&j);
	/* Waiters the daemon counted instead of listing: another user's beyond the queue's head. */
	json_arr(&j, "queue_counted");
	for (size_t i = 0; i < v->nsums; i++) {
		const struct waiter_sum *s = &v->sums[i];
		json_obj(&j, NULL);
		json_str(&j, "user", s->user);
		json_uint(&j, "uid", s->uid);
		json_uint(&j, "count", s->count);
		json_uint(&j, "first_position", s->first);
		json_int(&j, "oldest_since", (long long)s->oldest);
		json_end_obj(&j);
	}
	json_end_arr(&j);
	json_end_obj(&j);
	json_print(&sb);
}


/* HH:MM:SS today, else the date too: a lease from last week must not look like this morning's. */
static void when(char *buf, size_t n, time_t t)
{
	struct tm tm, now;
	time_t tnow = time(NULL);
	localtime_r(&t, &tm);
	localtime_r(&tnow, &now);
	bool today = tm.tm_year == now.tm_year && tm.tm_yday == now.tm_yday;
	strftime(buf, n, today ? "%H:%M:%S" : "%Y-%m-%d %H:%M", &tm);
}

/* The pid shown is the one that took the lease; once it has exited (a job's shell that left
 * a background child holding the lease), say so and name who holds it now, never the dead
 * pid as if it ran. */
static void holder_note(struct strbuf *sb, const struct lease_info *l)
{
	pid_t live[8];
	size_t n = leaseview_live_holders(l, live, ARRAY_SIZE(live));
	sb_addf(sb, "%-7s holder %d exited; ", "", (int)l->pid);
	if (!n) {
		sb_adds(sb, "a process it started still holds the lease\n");
		return;
	}
	sb_addf(sb, "held by pid%s", n == 1 ? "" : "s");
	for (size_t k = 0; k < n && k < ARRAY_SIZE(live); k++)
		sb_addf(sb, "%s %d", k ? "," : "", (int)live[k]);
	if (n > ARRAY_SIZE(live))
		sb_addf(sb, " and %zu more", n - ARRAY_SIZE(live));
	sb_addc(sb, '\n');
}

static void print_table(const struct leaseview *v, const struct gpu_set *set,
			const struct ctr_info *const *ctrs)
{
	struct strbuf sb = {0};
	if (!strcmp(v->guard, "acl")) { /* the device guard (issue 25); said only when on */
		char g[512];
		leaseview_guard_text(v, g, sizeof g);
		sb_adds(&sb, "guard: ");
		esc_printable(&sb, g);
		sb_addc(&sb, '\n');
	}
	if (!v->present)
		sb_adds(&sb, "no leases (no gpuctl daemon is running)\n");
	else if (!v->nleases && !v->nheld)
		sb_adds(&sb, "no leases\n");
	else
		sb_addf(&sb, "%-7s %-12s %8s %-4s %-16s %-14s %s\n", "GPUS", "USER", "PID", "KIND", "SINCE",
			"NAME", "COMMAND");
	for (size_t i = 0; i < v->nleases; i++) {
		const struct lease_info *l = &v->leases[i];
		char gpus[64] = "", since[32];
		for (size_t k = 0; k < l->ngpus; k++) {
			int idx = index_of(set, l->uuids[k]);
			size_t len = strlen(gpus);
			if (idx >= 0)
				snprintf(gpus + len, sizeof gpus - len, "%s%d", k ? "," : "", idx);
			else
				snprintf(gpus + len, sizeof gpus - len, "%s%.8s", k ? "," : "", l->uuids[k]);
		}
		when(since, sizeof since, l->since);
		sb_addf(&sb, "%-7s %-12s %8d %-4s %-16s ", gpus, esc_str(l->user, 0), (int)l->pid, l->kind,
			since);
		size_t mark = sb.len;
		esc_printable_n(&sb, l->name ? l->name : "-", 64);
		sb_addf(&sb, "%*s ", (int)(sb.len - mark < 14 ? 14 - (sb.len - mark) : 0), "");
		esc_printable_n(&sb, l->command ? l->command : "", 200);
		sb_addc(&sb, '\n');
		if (ctrs[i]) { /* containers (issue 28): held by a container until it stops */
			sb_addf(&sb, "%-7s ", "");
			ctr_holder_line(&sb, ctrs[i], l->bound != 0);
			sb_addc(&sb, '\n');
		}
		if (!leaseview_holder_alive(l))
			holder_note(&sb, l);
		long long idle = leaseview_idle_seconds(l); /* idle leases (issue 24) */
		if (idle >= 60 || l->idle_warned || l->idle_released) {
			char t[32];
			hms(t, sizeof t, idle);
			sb_addf(&sb, "%-7s idle for %s (no process of its own using its GPUs)%s\n", "", t,
				l->idle_released ? ": released for idleness, its job is being ended"
				: l->idle_warned ? ": warned" : l->idle_exempt ? " (exempt)" : "");
		}
		if (l->until_ns) { /* time limits (issue 24) */
			char left[32];
			long long s = now_ns_signed(l->until_ns);
			hms(left, sizeof left, s);
			if (s > 0)
				sb_addf(&sb, "%-7s time limit: %s left\n", "", left);
			else
				sb_addf(&sb, "%-7s time limit reached: its job is being ended (SIGTERM, then "
					"SIGKILL)\n", "");
		}
		if (l->mem_mib)
			table_share(&sb, l);
		if (l->mig_uuid[0])
			sb_addf(&sb, "%-7s MIG instance %s\n", "", esc_str(l->mig_uuid, 0));
	}
	table_shares(&sb, v, set);
	for (size_t i = 0; i < v->nheld; i++) {
		int idx = index_of(set, v->held[i]);
		sb_addf(&sb, "%-7d held by a process the daemon cannot name (since it restarted)\n", idx);
	}
	if (v->nqueue || v->nsums)
		sb_adds(&sb, strcmp(v->order, "fair") ? "\nwaiting (first come, first served):\n"
			: !strcmp(v->fairrule, "past-use") ?
			  "\nwaiting (fair share: fewest GPUs held first, then least past use, then first come):\n"
			: "\nwaiting (fair share: fewest GPUs held first, then first come):\n");
	time_t now = time(NULL);
	for (size_t i = 0; i < v->nqueue; i++) {
		const struct waiter_info *w = &v->queue[i];
		long t = (long)(now - w->since);
		sb_addf(&sb, "%3u. %-12s pid %-8d wants %u GPU%s, waiting %ld:%02ld:%02ld%s", w->position,
			esc_str(w->user, 0), (int)w->pid, w->count, w->count == 1 ? "" : "s", t / 3600,
			t / 60 % 60, t % 60, strcmp(w->state, "waiting") ? " " : "");
		if (strcmp(w->state, "waiting"))
			sb_addf(&sb, "(%s)", w->state);
		if (w->name) {
			sb_adds(&sb, "  ");
			esc_printable_n(&sb, w->name, 64);
		}
		sb_addc(&sb, '\n');
		/* The head is listed first whatever the order's rule says: say why, and say why a
		 * waiter keeps nothing back, so the order shown is the order used. */
		if (leaseview_note_text(w->note))
			sb_addf(&sb, "     (%s)\n", leaseview_note_text(w->note));
		/* time limits and backfill (issue 24) */
		if (w->start > 0) {
			char in[32];
			hms(in, sizeof in, now_ns_signed(w->start_ns));
			sb_addf(&sb, "     (estimated start in %s, by the time limits of the leases it "
				"waits for: requests that end before then may run on its GPUs)\n", in);
		} else if (w->start < 0) {
			sb_adds(&sb, "     (estimated start unknown: a lease it waits for has no time "
				"limit, so nothing runs ahead of it on its GPUs)\n");
		}
		if (w->past >= 0) {
			char pu[32];
			hms(pu, sizeof pu, (long long)w->past);
			sb_addf(&sb, "     (its user's past use: %s GPU-time, decayed)\n", pu);
		}
		if (w->time_limit > 0) {
			char tl[32];
			hms(tl, sizeof tl, (long long)(w->time_limit + 0.5));
			sb_addf(&sb, "     (time limit %s)\n", tl);
		}
	}
	for (size_t i = 0; i < v->nsums; i++) {
		const struct waiter_sum *s = &v->sums[i];
		sb_addf(&sb, "     %-12s %u more request%s, the first at position %u\n", esc_str(s->user, 0),
			s->count, s->count == 1 ? "" : "s", s->first);
	}
	fputs(sb.buf, stdout);
	sb_free(&sb);
}

static int leases(struct cmd *c)
{
	bool json = args_has(&c->args, 'j');
	struct leaseview v;
	struct gpu_error err = {0};
	if (!leaseview_load(&v, &err)) {
		fprintf(stderr, "gpuctl leases: %s\n", err.msg);
		return err.code;
	}
	/* The daemon's word that what it shows would not survive its restart: another user's
	 * text (the daemon's), escaped. */
	if (v.unsaved[0])
		fprintf(stderr, "gpuctl leases: warning: the gpuctl daemon cannot save its state (%s): "
			"a restart would lose the queue's order and may lose lease records; an "
			"administrator can free its file system\n", esc_str(v.unsaved, 0));
	/* Indices are a courtesy: without NVML the UUIDs still say which GPU. */
	struct gpu_set *set = gpu_set_open(&err);
	/* containers (issue 28): a lease bound to a container's process names the container */
	struct ctr_names *cn = ctr_names_new();
	const struct ctr_info **ctrs = xcalloc(v.nleases + 1, sizeof *ctrs);
	ctr_names_begin(cn);
	for (size_t i = 0; i < v.nleases; i++)
		ctrs[i] = ctr_names_add_pid(cn, (unsigned)(v.leases[i].bound ? v.leases[i].bound
								  : v.leases[i].pid));
	ctr_names_resolve(cn);
	if (json)
		print_json(&v, set, ctrs);
	else
		print_table(&v, set, ctrs);
	free(ctrs);
	ctr_names_free(cn);
	gpu_set_free(set);
	leaseview_free(&v);
	return EXIT_OK;
}

static const struct option longopts[] = {{"json", no_argument, NULL, 'j'}, {0}};

const struct cmd_entry cmd_leases_entry = {
	.name = "leases",
	.summary = "who holds which GPU, and who is waiting",
	.usage = "leases [--json]\n\nEvery live lease (GPUs, user, pid, kind, since, name, command) and\n"
		 "the waiting queue in order.\n",
	.args = {.longs = longopts},
	.exec = leases,
};
