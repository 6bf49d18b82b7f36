/* conn.c: what the runner says (design: runner.h): answers to its clients, and messages to the
 * daemon over its one connection, made again when it is lost; below the jobs, which all answer
 * and ask through here. On every new connection the runner's on_link callback tells the daemon
 * again what it should know (every queued job, an ask for job ids). */
#include "runner/runner.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define BACKOFF_MAX 5.0            /* between attempts to reach a restarting daemon */

static const int daemon_tag = REV_DAEMON;

bool runner_set(struct runner *r, struct gpu_error *err)
{
	/* From the daemon that chooses, so that the jobs forked from here start without NVML
	 * mapped (and the runner without its start-up); NVML when no daemon answers now. */
	if (!r->set && !(r->set = grant_machine_at(r->up ? r->dc.path : r->shared, err)))
		return false;
	return true;
}

/* ---- the daemon ---- */

void runner_link_down(struct runner *r, const char *why)
{
	if (!r->up)
		return;
	fprintf(stderr, "gpuctl runner: %s; connecting again\n", why);
	snprintf(r->link_err, sizeof r->link_err, "%.500s", why);
	peer_unwatch(&r->loop, r->dc.fd);
	dclient_close(&r->dc);
	r->up = false;
	r->reconnect_at = r->now;
}

bool runner_link_up(struct runner *r)
{
	if (r->up)
		return true;
	if (r->reconnect_at && r->now < r->reconnect_at)
		return false;
	struct gpu_error err = {0};
	/* Once a shared daemon served us, only it does: while it restarts its socket may be
	 * missing for a moment, and a private daemon started then would lease around it. */
	bool ok = r->shared ? dclient_open_at(&r->dc, r->shared, &err)
			    : dclient_open(&r->dc, DC_LEASE_NOW, &err);
	if (ok && !r->shared && !r->dc.private_mode)
		r->shared = xstrdup(r->dc.path);
	if (!ok) {
		snprintf(r->link_err, sizeof r->link_err, "%.500s", err.msg);
		if (!r->backoff)
			fprintf(stderr, "gpuctl runner: %s; trying again\n", err.msg);
		r->backoff = r->backoff ? r->backoff * 2 : 0.1;
		if (r->backoff > BACKOFF_MAX)
			r->backoff = BACKOFF_MAX;
		r->reconnect_at = now_mono() + r->backoff;
		return false;
	}
	peer_watch(&r->loop, r->dc.fd, (void *)&daemon_tag);
	r->up = true;
	r->backoff = r->reconnect_at = 0;
	fprintf(stderr, "gpuctl runner: connected to the gpuctl daemon (pid %d) at %s\n",
		(int)r->dc.daemon_pid, r->dc.path);
	r->link_err[0] = '\0';
	if (!r->on_link(r, &err))
		runner_link_down(r, err.msg);
	return r->up;
}

bool runner_daemon_send(struct runner *r, const struct strbuf *msg)
{
	bool was_up = r->up;
	if (!runner_link_up(r))
		return false;
	if (!was_up)
		return true; /* runner_link_up sent everything pending, this included */
	struct gpu_error err = {0};
	if (dclient_send(&r->dc, msg, &err))
		return true;
	runner_link_down(r, err.msg);
	return false;
}

/* ---- clients ---- */

void runner_reply(struct runner *r, struct rclient *c, struct strbuf *msg)
{
	peer_send(&c->p, msg, NULL, 0, r->now); /* gone, or not reading its answers: dead */
}

void runner_error(struct runner *r, struct rclient *c, uint64_t id, int code, const char *fmt, ...)
{
	struct strbuf sb = {0};
	va_list ap;
	va_start(ap, fmt);
	msg_verrorf(&sb, id, code, fmt, ap);
	va_end(ap);
	runner_reply(r, c, &sb);
	sb_free(&sb);
}
