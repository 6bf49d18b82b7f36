/* grant.c: from a request to a lease held in this process's descriptors (see grant.h).
 *
 * The exchange with the daemon: `acquire` -> `busy` | `error` | `queued` ... `offer`; the client
 * answers an offer with `take` and gets `granted` with the descriptors (or `withdrawn`: the
 * offer ran out while we were stopped; we are still in line). While queued, this process sleeps
 * in ppoll(2) on its socket, with INT, TERM and HUP let through only there: a signal ends the
 * wait and the request (the daemon drops it with the connection), and is never followed by a
 * job starting later. A daemon that restarts is rejoined with our ticket, keeping our place. */
#include "client.h"
#include "grant.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEEPALIVE_SECONDS 60.0     /* a quiet waiter checks the daemon still answers */
#define REJOIN_SECONDS 30.0        /* how long a waiter waits for a restarting daemon */
#define REJOIN_TIMES 5             /* daemons that go away again before answering: give up */

bool grant_candidates(struct gpu_set *set, const struct grant_req *rq, uint64_t *cand,
		      unsigned *count, struct gpu_error *err);
void grant_explain_busy(const struct gpu_set *set, const struct grant_req *rq, unsigned count,
			const struct msg *m, struct gpu_error *err);

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

static unsigned long long realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

struct waiter {
	struct dclient dc;
	const struct grant_req *rq;
	struct strbuf acquire;        /* the request as sent (a ticket is added to rejoin) */
	char ticket[40];
	bool queued, tty, warned;
	unsigned rejoins;             /* since the daemon last answered a request of ours */
	size_t position;
	double started, deadline, next_tick, ping_at;
	sigset_t waitmask;            /* the mask while in ppoll: our signals let through */
	struct sigaction old[3];
	bool caught[3];
};

static const int wait_signals[] = {SIGINT, SIGTERM, SIGHUP};

/* Signals are caught only while we wait, and only those not ignored when gpuctl started
 * (nohup's SIGHUP stays ignored, for us and for the job). Outside ppoll they stay blocked. */
static void signals_on(struct waiter *w)
{
	sigset_t block;
	sigemptyset(&block);
	interrupted = 0;
	for (size_t i = 0; i < ARRAY_SIZE(wait_signals); i++) {
		sigaction(wait_signals[i], NULL, &w->old[i]);
		w->caught[i] = w->old[i].sa_handler != SIG_IGN;
		if (!w->caught[i])
			continue;
		struct sigaction sa = {.sa_handler = on_signal};
		sigemptyset(&sa.sa_mask);
		sigaction(wait_signals[i], &sa, NULL);
		sigaddset(&block, wait_signals[i]);
	}
	sigprocmask(SIG_BLOCK, &block, &w->waitmask);
}

static void signals_off(struct waiter *w)
{
	/* A signal that came with the grant is still pending: it counts as an interruption. */
	sigset_t pending;
	sigpending(&pending);
	for (size_t i = 0; i < ARRAY_SIZE(wait_signals); i++)
		if (w->caught[i] && sigismember(&pending, wait_signals[i]) && !interrupted) {
			sigset_t one;
			sigemptyset(&one);
			sigaddset(&one, wait_signals[i]);
			int sig;
			if (sigwait(&one, &sig) == 0)
				interrupted = sig;
		}
	for (size_t i = 0; i < ARRAY_SIZE(wait_signals); i++)
		if (w->caught[i])
			sigaction(wait_signals[i], &w->old[i], NULL);
	sigprocmask(SIG_SETMASK, &w->waitmask, NULL);
}

static const char *ordinal(size_t n)
{
	return n % 100 / 10 == 1 ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

static void progress(struct waiter *w, unsigned count, bool clear)
{
	if (!w->tty || !w->queued)
		return;
	if (clear) {
		fputs("\r\033[K", stderr);
		return;
	}
	int secs = (int)(now_mono() - w->started);
	fprintf(stderr, "\rgpuctl: waiting for %u GPU%s, %zu%s in queue, %d:%02d\033[K", count,
		count == 1 ? "" : "s", w->position, ordinal(w->position), secs / 60, secs % 60);
}

static void build_request(struct strbuf *sb, const struct gpu_set *set, const struct config *cfg,
			  const struct grant_req *rq, uint64_t cand, unsigned count)
{
	msg_begin(sb, "acquire");
	msg_add_u64(sb, "id", 1);
	msg_add_u64(sb, "count", count);
	uint64_t all = set->ngpus >= 64 ? ~0ULL : (1ULL << set->ngpus) - 1;
	for (size_t i = 0; cand != all && i < set->ngpus; i++)
		if (cand >> i & 1)
			msg_add(sb, "gpu", set->gpus[i].uuid, NULL);
	if (rq->min_free_mib)
		msg_add_u64(sb, "min_free", rq->min_free_mib);
	if (rq->max_util >= 0)
		msg_add_u64(sb, "max_util", (uint64_t)rq->max_util);
	if (rq->ignore_usage)
		msg_add_u64(sb, "ignore_usage", 1);
	static const char *const prefers[] = {"free-memory", "index", "util"};
	int prefer = rq->prefer >= 0 ? rq->prefer : (int)cfg->prefer;
	msg_add(sb, "prefer", prefers[prefer >= 0 && prefer < 3 ? prefer : 0], NULL);
	if (rq->wait >= 0 && !rq->dry_run)
		msg_add_u64(sb, "wait", 1);
	if (rq->dry_run)
		msg_add_u64(sb, "dry", 1);
	msg_add(sb, "kind", rq->kind ? rq->kind : "run", NULL);
	if (rq->name)
		msg_add(sb, "name", rq->name, NULL);
	if (rq->command)
		msg_add(sb, "command", rq->command, NULL);
}

/* Back into the queue after the daemon went away (restart): our ticket keeps our place. */
static bool rejoin(struct waiter *w, struct gpu_error *err)
{
	double until = now_mono() + REJOIN_SECONDS;
	progress(w, 0, true);
	if (++w->rejoins > REJOIN_TIMES) {
		char why[sizeof err->msg - 200];
		snprintf(why, sizeof why, "%.3800s", err->msg);
		snprintf(err->msg, sizeof err->msg, "%s, %u times in a row; giving up (the daemon's log "
			 "says why: `journalctl -u gpuctl`, or daemon.log in a private daemon's directory)",
			 why, w->rejoins);
		return false;
	}
	fprintf(stderr, "gpuctl: %s; %s\n", err->msg, w->queued ? "rejoining the queue" : "asking again");
	dclient_close(&w->dc);
	while (!interrupted) {
		struct gpu_error e = {0};
		if (dclient_open(&w->dc, DC_LEASE, &e)) {
			struct strbuf sb = {0};
			sb_add(&sb, w->acquire.buf, w->acquire.len);
			if (w->ticket[0])
				msg_add(&sb, "ticket", w->ticket, NULL);
			bool ok = dclient_send(&w->dc, &sb, err);
			sb_free(&sb);
			return ok;
		}
		if (now_mono() >= until) {
			*err = e;
			return false;
		}
		struct timespec ts = {0, 200000000L};
		nanosleep(&ts, NULL);
	}
	return false;
}

static bool take_fds(struct grant *g, const struct msg *m, const int *fds, size_t nfds,
		     struct gpu_error *err)
{
	const char *id = msg_get(m, "lease"), *token = msg_get(m, "token");
	if (!id || strlen(id) >= sizeof g->id || !token || strlen(token) >= sizeof g->token || nfds < 2) {
		err->code = EXIT_DAEMON;
		snprintf(err->msg, sizeof err->msg, "the gpuctl daemon granted a lease without its "
			 "descriptors (%zu received); nothing was leased", nfds);
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		return false;
	}
	snprintf(g->id, sizeof g->id, "%s", id);
	snprintf(g->token, sizeof g->token, "%s", token);
	memcpy(g->fds, fds, nfds * sizeof *fds);
	g->nfds = nfds;
	return true;
}

/* The GPUs named by `gpu` lines, as positions in the set, in nvidia-smi order. */
static bool gpus_of(struct grant *g, const struct msg *m, struct gpu_error *err)
{
	g->n = 0;
	for (size_t i = 0; i < g->set->ngpus && g->n < GPU_MAX; i++)
		for (size_t k = 1; k < m->nlines; k++)
			if (!strcmp(m->lines[k].w[0], "gpu") && m->lines[k].nwords > 1 &&
			    !strcmp(m->lines[k].w[1], g->set->gpus[i].uuid)) {
				g->pos[g->n++] = i;
				break;
			}
	if (g->n)
		return true;
	err->code = EXIT_DAEMON;
	snprintf(err->msg, sizeof err->msg, "the gpuctl daemon answered with GPUs this process does "
		 "not see (NVML disagrees between them?)");
	return false;
}

/* One message from the daemon: 1 done (granted / would), 0 go on waiting, -1 failed (err). */
static int on_message(struct waiter *w, struct grant *g, const struct msg *m, const int *fds,
		      size_t nfds, unsigned count, struct gpu_error *err)
{
	const char *verb = msg_verb(m);
	uint64_t v;
	if (!strcmp(verb, "granted")) {
		if (!gpus_of(g, m, err) || !take_fds(g, m, fds, nfds, err))
			return -1;
		g->leased_at = msg_get_u64(m, "offered", UINT64_MAX, &v) ? v : realtime_ns();
		return 1;
	}
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]); /* only a grant carries descriptors */
	if (!strcmp(verb, "would"))
		return gpus_of(g, m, err) ? 1 : -1;
	if (!strcmp(verb, "offer")) {
		struct strbuf sb = {0};
		msg_begin(&sb, "take");
		msg_add_u64(&sb, "id", 1);
		msg_add_u64(&sb, "offer", msg_get_u64(m, "offer", UINT64_MAX, &v) ? v : 0);
		bool ok = dclient_send(&w->dc, &sb, err) || rejoin(w, err);
		sb_free(&sb);
		return ok ? 0 : -1;
	}
	if (!strcmp(verb, "queued")) {
		w->rejoins = 0;
		if (!w->queued) {
			w->queued = true;
			g->queued_at = msg_get_u64(m, "arrived", UINT64_MAX, &v) ? v : realtime_ns();
		}
		const char *t = msg_get(m, "ticket");
		if (t && strlen(t) < sizeof w->ticket)
			snprintf(w->ticket, sizeof w->ticket, "%s", t);
		if (msg_get_u64(m, "position", UINT32_MAX, &v))
			w->position = (size_t)v;
		progress(w, count, false);
		return 0;
	}
	if (!strcmp(verb, "busy")) {
		grant_explain_busy(g->set, w->rq, count, m, err);
		return -1;
	}
	if (!strcmp(verb, "error")) {
		daemon_error(m, err);
		return -1;
	}
	return 0; /* withdrawn, pong, left: nothing to do */
}

/* Sleeps until the daemon says something, a signal, the deadline, or the next tick. */
static int wait_step(struct waiter *w, struct grant *g, unsigned count, struct gpu_error *err)
{
	double now = now_mono(), until = w->queued ? w->next_tick : now + w->dc.timeout;
	if (w->deadline && w->deadline < until)
		until = w->deadline;
	if (w->queued && w->ping_at && w->ping_at + w->dc.timeout < until)
		until = w->ping_at + w->dc.timeout;
	struct msg m;
	int fds[PROTO_MAX_FDS];
	size_t nfds;
	int ms = until > now ? (int)((until - now) * 1000) + 1 : 0;
	int r = dclient_recv(&w->dc, &m, fds, &nfds, ms, &w->waitmask, err);
	if (r < 0) /* the daemon went away (a restart): ask again, keeping our place if we had one */
		return !interrupted && rejoin(w, err) ? 0 : -1;
	if (interrupted) {
		if (r == 1) {
			for (size_t i = 0; i < nfds; i++)
				close(fds[i]);
			msg_free(&m);
		}
		return -1;
	}
	if (r == 1) {
		w->ping_at = 0; /* it answers */
		r = on_message(w, g, &m, fds, nfds, count, err);
		msg_free(&m);
		return r;
	}
	now = now_mono();
	if (w->deadline && now >= w->deadline) {
		err->code = EXIT_TIMEOUT;
		snprintf(err->msg, sizeof err->msg, "no GPU became free within --wait; left the queue");
		return -1;
	}
	if (!w->queued) {
		char why[128];
		snprintf(why, sizeof why, "did not answer within %.0f s", w->dc.timeout);
		err->code = EXIT_DAEMON;
		snprintf(err->msg, sizeof err->msg, "the gpuctl daemon (pid %d, %s) %s: it may be stopped "
			 "or overloaded (an administrator can check `systemctl status gpuctl`)",
			 (int)w->dc.daemon_pid, w->dc.path, why);
		return -1;
	}
	if (w->ping_at && now >= w->ping_at + w->dc.timeout && !w->warned) {
		progress(w, count, true);
		fprintf(stderr, "gpuctl: the gpuctl daemon (pid %d, %s) has not answered for %.0f s (is it "
			"stopped?); still waiting in its queue\n", (int)w->dc.daemon_pid, w->dc.path,
			w->dc.timeout);
		w->warned = true;
	}
	if (now >= w->next_tick) {
		/* On a terminal: where are we now? Elsewhere: is the daemon still there? */
		struct strbuf sb = {0};
		msg_begin(&sb, w->tty ? "where" : "ping");
		msg_add_u64(&sb, "id", 1);
		if (!w->ping_at)
			w->ping_at = now;
		if (!dclient_send(&w->dc, &sb, err) && !rejoin(w, err)) {
			sb_free(&sb);
			return -1;
		}
		sb_free(&sb);
		w->next_tick = now + (w->tty ? 1.0 : KEEPALIVE_SECONDS);
		progress(w, count, false);
	}
	return 0;
}

int grant_acquire(struct gpu_set *set, const struct config *cfg, const struct grant_req *rq,
		  struct grant *g, struct gpu_error *err)
{
	*g = (struct grant){.set = set};
	for (size_t i = 0; i < ARRAY_SIZE(g->fds); i++)
		g->fds[i] = -1;
	uint64_t cand;
	unsigned count;
	if (!grant_candidates(set, rq, &cand, &count, err))
		return err->code;
	struct waiter w = {.rq = rq, .tty = isatty(STDERR_FILENO), .started = now_mono()};
	if (!dclient_open(&w.dc, DC_LEASE, err))
		return err->code;
	w.deadline = rq->wait > 0 ? w.started + rq->wait : 0;
	w.next_tick = w.started + 1.0;
	build_request(&w.acquire, set, cfg, rq, cand, count);
	signals_on(&w);
	int r = dclient_send(&w.dc, &w.acquire, err) || rejoin(&w, err) ? 0 : -1;
	while (r == 0 && !interrupted)
		r = wait_step(&w, g, count, err);
	progress(&w, count, true);
	signals_off(&w);
	if (interrupted) {
		r = -1;
		err->code = 128 + interrupted;
		snprintf(err->msg, sizeof err->msg, "interrupted while waiting; left the queue");
	}
	g->waited = w.queued ? now_mono() - w.started : 0;
	g->socket = w.dc.path ? xstrdup(w.dc.path) : NULL;
	g->name = rq->name ? xstrdup(rq->name) : NULL;
	dclient_close(&w.dc); /* also leaves the queue, if we are still in it */
	sb_free(&w.acquire);
	if (r < 0) {
		grant_free(g);
		return err->code;
	}
	return EXIT_OK;
}

void grant_hold(const struct grant *g, pid_t bound)
{
	for (size_t i = 0; i < g->nfds; i++)
		fcntl(g->fds[i], F_SETFD, 0);
	if (!g->id[0] || !g->socket)
		return;
	/* Answered, so that once the job runs `gpuctl leases` names it; a daemon that does not
	 * answer delays the job by at most a second (the lease holds regardless). */
	struct dclient dc;
	struct gpu_error err;
	struct msg m;
	if (!dclient_open_at(&dc, g->socket, &err))
		return;
	dc.timeout = 1;
	struct strbuf sb = {0};
	msg_begin(&sb, "commit");
	msg_add(&sb, "lease", g->id, NULL);
	msg_add(&sb, "token", g->token, NULL);
	if (bound)
		msg_add_u64(&sb, "bound", (uint64_t)bound);
	if (dclient_call(&dc, &sb, &m, &err))
		msg_free(&m);
	sb_free(&sb);
	dclient_close(&dc);
}

void grant_free(struct grant *g)
{
	for (size_t i = 0; i < g->nfds; i++)
		if (g->fds[i] >= 0)
			close(g->fds[i]);
	g->nfds = 0;
	free(g->name);
	free(g->socket);
	g->name = g->socket = NULL;
}
