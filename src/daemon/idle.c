/* idle.c: idle leases seen, warned and, by policy, released (issue 24; design: daemon.h).
 *
 * - While leases live and idle_warn or idle_release is set, the daemon looks at the GPUs every
 *   usage_poll (one NVML refresh, shared with the scheduling pass). A GPU of a lease is in use
 *   when a compute process of the lease's user runs there (its owner read from /proc) and, with
 *   [daemon] idle_util N > 0, that process's SM utilisation (NVML's per-process samples; where
 *   the driver gives none, the GPU's own utilisation) is above N%. A lease none of whose GPUs is
 *   in use is idle; its idle time runs from the last look that saw it in use (or its grant, or
 *   this daemon's start for a lease it recovered).
 * - At idle_warn (default 1h) the lease is warned once per idle spell; at idle_release (default
 *   none) it is released: its holder is told (`event` on the connection that `watch`es it: run's
 *   gpuctl, env's holder, the job runner), which signals its own job (SIGTERM, then SIGKILL
 *   kill_grace later; the daemon signals nobody), and the daemon ends the lease kill_grace
 *   later whoever still holds it. The log says each step and why. Users and groups in
 *   idle_exempt are never warned nor released (their idle time is still shown).
 * - The idle time is shown by `list` (list.c: idle since when, warned, released). */
#include "daemon/daemon.h"
#include "machine/pid.h"

#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXEMPT_GROUPS 256

static struct lease *lease_by_id(struct daemon *d, const char *id)
{
	for (size_t i = 0; id && i < d->nleases; i++)
		if (!strcmp(d->leases[i]->id, id))
			return d->leases[i];
	return NULL;
}

void idle_watch(struct daemon *d, struct conn *c, const struct msg *m)
{
	uint64_t id = 0;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	const char *token = msg_get(m, "token");
	struct lease *l = lease_by_id(d, msg_get(m, "lease"));
	if (!l || !token || strcmp(l->token, token) || l->uid != c->p.uid) {
		conn_error(d, c, id, EXIT_DENIED, "no such lease of yours to watch");
		return;
	}
	if (d->private_mode) { /* one user's own daemon: nobody to reclaim GPUs for */
		conn_error(d, c, id, EXIT_USAGE, "a private daemon does not watch leases");
		return;
	}
	if (l->watch)
		l->watch->nwatch--;
	l->watch = c;
	c->nwatch++;
	struct strbuf sb = {0};
	msg_begin(&sb, "watching");
	msg_add_u64(&sb, "id", id);
	msg_add_u64(&sb, "idle_warn", (uint64_t)d->conf.idle_warn);
	msg_add_u64(&sb, "idle_release", (uint64_t)d->conf.idle_release);
	conn_send(d, c, &sb, NULL, 0);
	sb_free(&sb);
}

void idle_conn_gone(struct daemon *d, struct conn *c)
{
	for (size_t i = 0; c->nwatch && i < d->nleases; i++)
		if (d->leases[i]->watch == c) {
			d->leases[i]->watch = NULL;
			c->nwatch--;
		}
}

static void tell(struct daemon *d, struct lease *l, const char *what, double idle)
{
	if (!l->watch || l->watch->p.dead)
		return;
	struct strbuf sb = {0};
	msg_begin(&sb, "event");
	msg_add_u64(&sb, "id", 0);
	msg_add(&sb, "lease", l->id, NULL);
	msg_add(&sb, "what", what, NULL);
	msg_add_u64(&sb, "idle", (uint64_t)idle);
	if (d->conf.idle_release > 0 && !strcmp(what, "idle-warn"))
		msg_add_u64(&sb, "release_in", (uint64_t)(d->conf.idle_release > idle ?
							  d->conf.idle_release - idle : 0));
	msg_add_u64(&sb, "grace_ms", (uint64_t)(d->conf.kill_grace * 1000));
	conn_send(d, l->watch, &sb, NULL, 0);
	sb_free(&sb);
}

/* Whether uid is named in idle_exempt (a user name or uid, or @group, comma or space separated). */
static bool exempt(const struct daemon *d, uid_t uid)
{
	const char *list = d->conf.idle_exempt;
	if (!list || !*list)
		return false;
	struct passwd *pw = getpwuid(uid);
	char name[256] = "";
	gid_t groups[EXEMPT_GROUPS];
	int ng = 0;
	if (pw) {
		snprintf(name, sizeof name, "%s", pw->pw_name);
		ng = EXEMPT_GROUPS;
		if (getgrouplist(name, pw->pw_gid, groups, &ng) < 0)
			ng = 0;
	}
	char *copy = xstrdup(list), *save = NULL;
	bool found = false;
	for (char *w = strtok_r(copy, ", \t", &save); w && !found; w = strtok_r(NULL, ", \t", &save)) {
		if (w[0] == '@') {
			struct group *gr = getgrnam(w + 1);
			for (int k = 0; gr && k < ng && !found; k++)
				found = groups[k] == gr->gr_gid;
		} else {
			char num[24];
			snprintf(num, sizeof num, "%u", (unsigned)uid);
			found = !strcmp(w, num) || (name[0] && !strcmp(w, name));
		}
	}
	free(copy);
	return found;
}

/* Whether one of the lease's own processes uses one of its GPUs (the rule above). */
static bool in_use(const struct daemon *d, const struct lease *l)
{
	for (size_t i = 0; i < d->nslots; i++) {
		if (!(l->gpus >> i & 1))
			continue;
		const struct gpu *g = &d->set->gpus[i];
		for (size_t j = 0; j < g->nprocs; j++) {
			const struct gpu_proc *p = &g->procs[j];
			if (!(p->type & PROC_COMPUTE) || !pid_runs_as(p->pid, l->uid))
				continue;
			if (!d->conf.idle_util)
				return true;
			unsigned u = p->util_valid ? p->sm_util : gpu_has(g, GF_UTIL_GPU) ? g->util_gpu : 100;
			if (u > d->conf.idle_util)
				return true;
		}
	}
	return false;
}

static void judge(struct daemon *d, struct lease *l)
{
	if (!l->busy_at) { /* first look: its idle time counts from now */
		l->busy_at = d->now;
		l->exempt = exempt(d, l->uid);
	}
	if (in_use(d, l)) {
		if (l->idle_warned && !l->idle_released)
			fprintf(stderr, "gpuctl daemon: lease %s (uid %u) is in use again\n", l->id,
				(unsigned)l->uid);
		l->busy_at = d->now;
		l->idle_since_ns = 0;
		if (!l->idle_released)
			l->idle_warned = false;
		return;
	}
	if (!l->idle_since_ns)
		l->idle_since_ns = queue_realtime_ns() - (uint64_t)((d->now - l->busy_at) * 1e9);
	double idle = d->now - l->busy_at;
	if (l->exempt || l->idle_released)
		return;
	const char *rule = d->conf.idle_util ? "none of its processes above idle_util on its GPUs"
					     : "no process of its own on its GPUs";
	if (d->conf.idle_release > 0 && idle >= d->conf.idle_release) {
		l->idle_released = true;
		l->idle_end = d->now + d->conf.kill_grace + 1;
		fprintf(stderr, "gpuctl daemon: lease %s (uid %u) idle for %.0f s (%s): released "
			"(idle_release); its holder ends its job, the lease ends in %.0f s at the latest\n",
			l->id, (unsigned)l->uid, idle, rule, d->conf.kill_grace + 1);
		tell(d, l, "idle-release", idle);
	} else if (d->conf.idle_warn > 0 && idle >= d->conf.idle_warn && !l->idle_warned) {
		l->idle_warned = true;
		fprintf(stderr, "gpuctl daemon: lease %s (uid %u) idle for %.0f s (%s): warned%s\n", l->id,
			(unsigned)l->uid, idle, rule, l->watch ? "" : " (nobody watches it: leases shows it)");
		tell(d, l, "idle-warn", idle);
	}
}

void idle_timers(struct daemon *d, double *next)
{
	double *due = &d->idle_due;
	/* Released leases end kill_grace after their holder was told. */
	for (size_t i = 0; i < d->nleases;) {
		struct lease *l = d->leases[i];
		if (!l->idle_released || l->fifo < 0) {
			i++;
		} else if (d->now >= l->idle_end) {
			fprintf(stderr, "gpuctl daemon: lease %s (uid %u) released for idleness: ended\n",
				l->id, (unsigned)l->uid);
			lease_end(d, l);
		} else {
			if (!*next || l->idle_end < *next)
				*next = l->idle_end;
			i++;
		}
	}
	if (!d->nleases || (d->conf.idle_warn <= 0 && d->conf.idle_release <= 0) || d->private_mode)
		return;
	if (d->now >= *due) {
		if (!d->usage_at || d->now - d->usage_at > 0.02)
			queue_usage_refresh(d);
		for (size_t i = 0; i < d->nleases; i++)
			if (!d->leases[i]->found && d->leases[i]->fifo >= 0)
				judge(d, d->leases[i]);
		*due = d->now + d->conf.usage_poll;
	}
	if (!*next || *due < *next)
		*next = *due;
}

/* ---- what `list` says of issue 24's bookkeeping (list.c calls these; lines added) ---- */

size_t idle_list_lease(const struct daemon *d, const struct lease *l, struct strbuf *rec)
{
	(void)d;
	size_t lines = 0;
	if (l->until_ns) { /* time limits: when it ends */
		msg_add_u64(rec, "llimit", l->until_ns);
		lines++;
	}
	if (l->busy_at) { /* idle since (0: in use), warned, released, exempt */
		char w[4][24];
		snprintf(w[0], sizeof w[0], "%llu", (unsigned long long)l->idle_since_ns);
		snprintf(w[1], sizeof w[1], "%d", l->idle_warned);
		snprintf(w[2], sizeof w[2], "%d", l->idle_released);
		snprintf(w[3], sizeof w[3], "%d", l->exempt > 0);
		msg_add(rec, "lidle", w[0], w[1], w[2], w[3], NULL);
		lines++;
	}
	return lines;
}

size_t idle_list_waiter(const struct daemon *d, const struct request *r, struct strbuf *rec)
{
	size_t lines = 0;
	if (r->time_limit) { /* its limit */
		msg_add_u64(rec, "wtime", (uint64_t)(r->time_limit * 1000));
		lines++;
	}
	if (d->conf.queue == QUEUE_FAIR) { /* its user's standing: past use */
		char pu[32];
		snprintf(pu, sizeof pu, "%.0f", usage_of(d, r->uid));
		msg_add(rec, "wpast", pu, NULL);
		lines++;
	}
	if (r->seq == d->head_seq && r->state == R_WAITING) {
		/* the head's estimated start, CLOCK_REALTIME (a rendered answer is kept until the
		 * state changes) */
		double at = d->head_start - (d->now - d->head_start_at);
		if (d->head_start < 0)
			msg_add(rec, "wstart", "unknown", NULL);
		else
			msg_add_u64(rec, "wstart", queue_realtime_ns() + (uint64_t)((at > 0 ? at : 0) * 1e9));
		lines++;
	}
	return lines;
}
