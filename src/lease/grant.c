/* grant.c: from a request to a lease held in this process's descriptors, for `run` and `env`
 * (see grant.h): one request (request.c holds the exchange with the daemon) on a connection of its
 * own. While queued, this process sleeps in ppoll(2) on its socket, with INT, TERM and HUP let
 * through only there: a signal ends the wait and the request (the daemon drops it with the
 * connection), and is never followed by a job starting later. A daemon that restarts is rejoined
 * with our ticket, keeping our place. */
#include "lease/client.h"
#include "lease/grant.h"

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


static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

struct waiter {
	struct dclient dc;
	struct lreq r;
	bool tty, warned;
	unsigned rejoins;             /* since the daemon last answered a request of ours */
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

static void progress(struct waiter *w, bool clear)
{
	if (!w->tty || w->r.state != LREQ_QUEUED)
		return;
	if (clear) {
		fputs("\r\033[K", stderr);
		return;
	}
	int secs = (int)(now_mono() - w->started);
	unsigned count = w->r.count;
	fprintf(stderr, "\rgpuctl: waiting for %u GPU%s, %zu%s in queue, %d:%02d\033[K", count,
		count == 1 ? "" : "s", w->r.position, ordinal(w->r.position), secs / 60, secs % 60);
}

/* Back into the queue after the daemon went away (restart): our ticket keeps our place. */
static bool rejoin(struct waiter *w, struct gpu_error *err)
{
	double until = now_mono() + REJOIN_SECONDS;
	progress(w, true);
	if (++w->rejoins > REJOIN_TIMES) {
		char why[sizeof err->msg - 200];
		snprintf(why, sizeof why, "%.3800s", err->msg);
		snprintf(err->msg, sizeof err->msg, "%s, %u times in a row; giving up (the daemon's log "
			 "says why: `journalctl -u gpuctl`, or daemon.log in a private daemon's directory)",
			 why, w->rejoins);
		return false;
	}
	/* Said once per restart: a daemon on its way out can take the rejoin into its backlog and
	 * close it again, and the same words then came twice. */
	if (w->rejoins == 1)
		fprintf(stderr, "gpuctl: %s; %s\n", err->msg, w->r.state == LREQ_QUEUED ?
			"rejoining the queue" : "asking again");
	dclient_close(&w->dc);
	while (!interrupted) {
		struct gpu_error e = {0};
		if (dclient_open(&w->dc, DC_LEASE, &e)) {
			struct strbuf sb = {0};
			lreq_message(&w->r, &sb);
			bool ok = dclient_send(&w->dc, &sb, &e);
			sb_free(&sb);
			if (ok)
				return true;
			/* Connected to a daemon on its way out (a killed one's backlog): again. */
			dclient_close(&w->dc);
		}
		if (now_mono() >= until) {
			*err = e;
			return false;
		}
		/* Our signals are blocked outside ppoll: wait for them too, so that Ctrl-C ends
		 * the wait for a daemon that does not come back (dclient_open stops on one). */
		sigset_t set;
		sigemptyset(&set);
		for (size_t i = 0; i < ARRAY_SIZE(wait_signals); i++)
			if (w->caught[i])
				sigaddset(&set, wait_signals[i]);
		struct timespec ts = {0, 200000000L};
		int sig = sigtimedwait(&set, NULL, &ts);
		if (sig > 0)
			interrupted = sig;
	}
	return false;
}

/* One message from the daemon: 1 done (granted / would), 0 go on waiting, -1 failed (err). */
static int on_message(struct waiter *w, const struct msg *m, const int *fds, size_t nfds,
		      struct gpu_error *err)
{
	struct strbuf out = {0};
	int r = lreq_on_message(&w->r, m, fds, nfds, &out, err);
	if (r == 0 && out.len && !dclient_send(&w->dc, &out, err) && !rejoin(w, err))
		r = -1;
	sb_free(&out);
	if (r == 0 && w->r.state == LREQ_QUEUED) {
		w->rejoins = 0; /* it answered */
		progress(w, false);
	}
	return r;
}

/* Sleeps until the daemon says something, a signal, the deadline, or the next tick. */
static int wait_step(struct waiter *w, struct gpu_error *err)
{
	bool queued = w->r.state == LREQ_QUEUED;
	double now = now_mono(), until = queued ? w->next_tick : now + w->dc.timeout;
	if (w->deadline && w->deadline < until)
		until = w->deadline;
	if (queued && w->ping_at && w->ping_at + w->dc.timeout < until)
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
		r = on_message(w, &m, fds, nfds, err);
		msg_free(&m);
		return r;
	}
	now = now_mono();
	if (w->deadline && now >= w->deadline) {
		err->code = EXIT_TIMEOUT;
		snprintf(err->msg, sizeof err->msg, "no GPU became free within --wait; left the queue");
		return -1;
	}
	if (!queued) {
		char why[128];
		snprintf(why, sizeof why, "did not answer within %g s", w->dc.timeout);
		err->code = EXIT_DAEMON;
		snprintf(err->msg, sizeof err->msg, "the gpuctl daemon (pid %d, %s) %s: it may be stopped "
			 "or overloaded (an administrator can check `systemctl status gpuctl`)",
			 (int)w->dc.daemon_pid, w->dc.path, why);
		return -1;
	}
	if (w->ping_at && now >= w->ping_at + w->dc.timeout && !w->warned) {
		progress(w, true);
		fprintf(stderr, "gpuctl: the gpuctl daemon (pid %d, %s) has not answered for %g s (is it "
			"stopped?); still waiting in its queue\n", (int)w->dc.daemon_pid, w->dc.path,
			w->dc.timeout);
		w->warned = true;
	}
	if (now >= w->next_tick) {
		/* On a terminal: where are we now? Elsewhere: is the daemon still there? */
		struct strbuf sb = {0};
		msg_begin(&sb, w->tty ? "where" : "ping");
		msg_add_u64(&sb, "id", w->r.id);
		if (!w->ping_at)
			w->ping_at = now;
		if (!dclient_send(&w->dc, &sb, err) && !rejoin(w, err)) {
			sb_free(&sb);
			return -1;
		}
		sb_free(&sb);
		w->next_tick = now + (w->tty ? 1.0 : KEEPALIVE_SECONDS);
		progress(w, false);
	}
	return 0;
}

/* The machine from the daemon that will choose (its `gpus` answer), so that this process never
 * loads NVML: the job it forks then starts without the driver's library mapped, and a lease
 * costs one round trip more instead of NVML's start (none where `then`, the acquire, can go
 * with the question). A daemon that cannot say (one older than this gpuctl) leaves it to NVML
 * here, as before. */
static struct gpu_set *machine_of(struct dclient *dc, const struct strbuf *then, bool *sent,
				  struct gpu_error *err, bool nvml)
{
	struct strbuf sb = {0};
	struct msg m;
	msg_begin(&sb, "gpus");
	msg_add_u64(&sb, "id", 0);
	struct gpu_error e = {0};
	struct gpu_set *set = NULL;
	int fds[PROTO_MAX_FDS];
	size_t nfds = 0;
	/* The daemon answers a connection's messages in order: this answer comes first. */
	if (dclient_send(dc, &sb, &e)) {
		*sent = then && dclient_send(dc, then, &e);
		if (dclient_recv(dc, &m, fds, &nfds, (int)(dc->timeout * 1000) + 1, NULL, &e) == 1) {
			for (size_t i = 0; i < nfds; i++)
				close(fds[i]);
			set = grant_machine_read(&m, &e);
			msg_free(&m);
		}
	}
	sb_free(&sb);
	if (!set && !nvml)
		*err = e;
	return set || !nvml ? set : gpu_set_open(err);
}

struct gpu_set *grant_machine_at(const char *socket, struct gpu_error *err)
{
	struct dclient dc;
	struct gpu_error e = {0};
	bool sent;
	if (!(socket ? dclient_open_at(&dc, socket, &e) : dclient_open(&dc, DC_LEASE_NOW, &e)))
		return gpu_set_open(err);
	struct gpu_set *set = machine_of(&dc, NULL, &sent, err, true);
	dclient_close(&dc);
	return set;
}

struct gpu_set *grant_machine_shared(struct gpu_error *err)
{
	struct dclient dc;
	bool sent;
	if (!dclient_open(&dc, DC_READ, err))
		return NULL;
	struct gpu_set *set = machine_of(&dc, NULL, &sent, err, false);
	dclient_close(&dc);
	return set;
}

int grant_acquire(struct gpu_set **setp, const struct config *cfg, const struct grant_req *rq,
		  struct grant *g, struct gpu_error *err)
{
	*g = (struct grant){.set = *setp};
	for (size_t i = 0; i < ARRAY_SIZE(g->fds); i++)
		g->fds[i] = -1;
	uint64_t cand;
	unsigned count;
	/* With the machine at hand the request is checked before the daemon is looked for (or a
	 * private one started), as always; without it, once the daemon has described it. */
	if (*setp && !grant_candidates(*setp, rq, &cand, &count, err))
		return err->code;
	struct waiter w = {.tty = isatty(STDERR_FILENO), .started = now_mono()};
	if (!dclient_open(&w.dc, DC_LEASE, err)) {
		/* No daemon to describe the machine: NVML's own failure, where it fails too, is the
		 * first thing to fix (the order these errors always came in). */
		struct gpu_error e = {0};
		struct gpu_set *local = *setp ? NULL : gpu_set_open(&e);
		if (!*setp && !local)
			*err = e;
		gpu_set_free(local);
		return err->code;
	}
	/* Where nothing restricts the choice the acquire names no GPUs, so it cannot depend on the
	 * description: it goes with the question, and the job waits for one round trip fewer. */
	bool early = !*setp && grant_unrestricted(rq), sent = false;
	if (early)
		lreq_init(&w.r, 1, NULL, cfg, rq, ~0ULL, rq->count ? rq->count : 1);
	if (!*setp) {
		if (!(*setp = machine_of(&w.dc, early ? &w.r.acquire : NULL, &sent, err, true)) ||
		    !grant_candidates(*setp, rq, &cand, &count, err)) {
			if (early)
				lreq_free(&w.r);
			dclient_close(&w.dc); /* the daemon drops a request sent early with it */
			return err->code;
		}
		g->set = *setp;
	}
	uint64_t all = (*setp)->ngpus >= 64 ? ~0ULL : (1ULL << (*setp)->ngpus) - 1;
	if (early && cand != all) {
		/* Some GPU cannot be chosen (lost, no UUID): ask again, naming the others. */
		lreq_free(&w.r);
		dclient_close(&w.dc);
		early = sent = false;
		if (!dclient_open(&w.dc, DC_LEASE, err))
			return err->code;
	}
	struct gpu_set *set = *setp;
	w.deadline = rq->wait > 0 ? w.started + rq->wait : 0;
	w.next_tick = w.started + 1.0;
	if (early)
		w.r.g.set = set;
	else
		lreq_init(&w.r, 1, set, cfg, rq, cand, count);
	signals_on(&w);
	int r = sent || dclient_send(&w.dc, &w.r.acquire, err) || rejoin(&w, err) ? 0 : -1;
	while (r == 0 && !interrupted)
		r = wait_step(&w, err);
	progress(&w, true);
	signals_off(&w);
	if (interrupted) {
		r = -1;
		err->code = 128 + interrupted;
		snprintf(err->msg, sizeof err->msg, "interrupted while waiting; left the queue");
	}
	bool queued = w.r.g.queued_at != 0;
	lreq_take_grant(&w.r, g);
	g->waited = queued ? now_mono() - w.started : 0;
	g->socket = w.dc.path ? xstrdup(w.dc.path) : NULL;
	if (r > 0 && g->self_ok && rq->keep_conn && g->id[0] && w.dc.fd >= 0) {
		g->conn = w.dc.fd; /* (CLOEXEC: the job's exec closes it) */
		g->has_conn = true;
		g->conn_private = w.dc.private_mode;
		w.dc.fd = -1;
	}
	dclient_close(&w.dc); /* also leaves the queue, if we are still in it */
	lreq_free(&w.r);
	if (r < 0) {
		grant_free(g);
		return err->code;
	}
	return EXIT_OK;
}

void grant_hold(const struct grant *g, pid_t bound, double wait)
{
	for (size_t i = 0; i < g->nfds; i++)
		fcntl(g->fds[i], F_SETFD, 0);
	if (!g->id[0] || !g->socket)
		return;
	/* Answered, so that once the job runs `gpuctl leases` names it; a daemon that does not
	 * answer delays the job by at most wait seconds (the lease holds regardless). */
	struct dclient dc;
	struct gpu_error err;
	struct msg m;
	if (!dclient_open_at(&dc, g->socket, &err)) {
		/* A private daemon lingers 2 s after its last client and then exits (its leases live
		 * on in their FIFOs and records). A holder that commits later (a container's, once
		 * the client ended) starts it again: it recovers the lease, token included. */
		const char *shared = client_socket_path();
		if (!shared || !strcmp(shared, g->socket) || !dclient_open(&dc, DC_LEASE_NOW, &err))
			return;
	}
	dc.timeout = wait;
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
