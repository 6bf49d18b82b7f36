/* holder.c: a lease's holder told by the daemon what becomes of its lease (see holder.h). */
#include "lease/holder.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool lwatch_open(struct lwatch *w, struct grant *g)
{
	*w = (struct lwatch){.dc = {.fd = -1}};
	struct gpu_error err = {0};
	if (g->has_conn) { /* the grant's own connection (run's, once the job committed on it) */
		w->dc = (struct dclient){.fd = g->conn, .path = xstrdup(g->socket ? g->socket : "?"),
					 .private_mode = g->conn_private};
		g->has_conn = false;
	} else if (!g->id[0] || !g->socket || !dclient_open_at(&w->dc, g->socket, &err)) {
		return false;
	}
	if (w->dc.private_mode) {
		dclient_close(&w->dc);
		return false;
	}
	struct strbuf sb = {0};
	struct msg m;
	msg_begin(&sb, "watch");
	msg_add_u64(&sb, "id", 1);
	msg_add(&sb, "lease", g->id, NULL);
	msg_add(&sb, "token", g->token, NULL);
	w->dc.timeout = 2;
	/* dclient_call takes the answer with the watch's id (1) only: on the grant's connection
	 * the job's own commit (id 0) may be answered first. */
	bool ok = dclient_call(&w->dc, &sb, &m, &err);
	sb_free(&sb);
	if (ok) {
		ok = !strcmp(msg_verb(&m), "watching");
		msg_free(&m);
	}
	if (!ok)
		dclient_close(&w->dc);
	w->on = ok;
	return ok;
}

int lwatch_fd(const struct lwatch *w)
{
	return w->on ? w->dc.fd : -1;
}

void lwatch_read(struct lwatch *w, struct lwatch_event *ev)
{
	*ev = (struct lwatch_event){.what = LW_NONE, .grace = 10};
	struct msg m;
	int fds[PROTO_MAX_FDS];
	size_t nfds = 0;
	struct gpu_error err = {0};
	int r = w->on ? dclient_recv(&w->dc, &m, fds, &nfds, 0, NULL, &err) : -1;
	if (r < 0) {
		lwatch_close(w);
		ev->what = LW_GONE;
		return;
	}
	if (r == 0)
		return;
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	uint64_t v;
	if (!strcmp(msg_verb(&m), "event")) {
		const char *what = msg_get(&m, "what");
		ev->what = !what ? LW_NONE : !strcmp(what, "idle-warn") ? LW_IDLE_WARN
			 : !strcmp(what, "idle-release") ? LW_IDLE_RELEASE : LW_NONE;
		ev->idle = msg_get_u64(&m, "idle", UINT32_MAX, &v) ? (unsigned long)v : 0;
		ev->release_in = msg_get_u64(&m, "release_in", UINT32_MAX, &v) ? (unsigned long)v : 0;
		if (msg_get_u64(&m, "grace_ms", 86400000ULL, &v))
			ev->grace = (double)v / 1000;
	}
	msg_free(&m);
}

void lwatch_close(struct lwatch *w)
{
	if (w->dc.fd >= 0)
		dclient_close(&w->dc);
	w->dc.fd = -1;
	w->on = false;
}

static void dur(char *buf, size_t n, unsigned long s)
{
	snprintf(buf, n, "%lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
}

void lwatch_text(const struct lwatch_event *ev, const char *who, const char *id, char *buf, size_t n)
{
	char idle[32], left[32];
	dur(idle, sizeof idle, ev->idle);
	dur(left, sizeof left, ev->release_in);
	if (ev->what == LW_IDLE_WARN)
		snprintf(buf, n, "%s: lease %s has been idle for %s (no process of yours uses its GPUs)%s%s%s\n",
			 who, id, idle, ev->release_in ? "; it will be released in " : "",
			 ev->release_in ? left : "", ev->release_in ? " unless it is used" : "");
	else if (ev->what == LW_IDLE_RELEASE)
		snprintf(buf, n, "%s: lease %s was idle for %s and is released (the daemon's "
			 "idle_release): its GPUs go to others\n", who, id, idle);
	else
		buf[0] = '\0';
}
