/* queue.c: requests for GPUs, the scheduling pass, offers and their timeouts, the queue
 * file that keeps the order across a restart, and `list` (design: daemon.h).
 *
 * A request either waits in the queue (`wait`) or is answered at once. Every pass looks at the
 * requests over one NVML refresh (alloc_schedule), fair-share across users or in arrival order
 * (order.c): what can run is offered, and the first waiter that cannot keeps the free GPUs
 * it could use. An offer must be taken within
 * offer_timeout: a client that does not (stopped, Ctrl-S on its terminal) loses the offer but
 * keeps its place, and is offered again once it answers. */
#include "daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define SETTLE_SECONDS 0.25        /* look again this soon after a lease ended */

void queue_request_free(struct request *r)
{
	free(r->name);
	free(r->command);
	free(r);
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t all_slots(const struct daemon *d)
{
	return d->nslots >= 64 ? ~0ULL : (1ULL << d->nslots) - 1;
}

static struct request *find_req(struct daemon *d, const struct conn *c, uint64_t id)
{
	for (size_t i = 0; i < d->nreqs; i++)
		if (d->reqs[i]->conn == c && d->reqs[i]->id == id)
			return d->reqs[i];
	return NULL;
}

static void req_remove(struct daemon *d, struct request *r)
{
	size_t k = 0;
	for (size_t i = 0; i < d->nreqs; i++)
		if (d->reqs[i] != r)
			d->reqs[k++] = d->reqs[i];
	d->nreqs = k;
	if (r->conn)
		r->conn->nreqs--;
	queue_request_free(r);
	d->queue_dirty = true;
	d->sched_due = true;
}

static void reply(struct daemon *d, struct conn *c, const char *verb, uint64_t id)
{
	struct strbuf sb = {0};
	msg_begin(&sb, verb);
	msg_add_u64(&sb, "id", id);
	conn_send(d, c, &sb, NULL, 0);
	sb_free(&sb);
}

static void add_gpus(struct strbuf *sb, const struct daemon *d, const char *key, uint64_t mask)
{
	for (size_t i = 0; i < d->nslots; i++)
		if (mask >> i & 1)
			msg_add(sb, key, d->slots[i].uuid, NULL);
}

static void usage_refresh(struct daemon *d)
{
	gpu_set_refresh(d->set, REFRESH_PROCS | REFRESH_NO_PROC_INFO);
	for (size_t i = 0; i < d->nslots; i++) {
		const struct gpu *g = &d->set->gpus[i];
		unsigned procs = 0;
		for (size_t j = 0; j < g->nprocs; j++)
			procs += (g->procs[j].type & PROC_COMPUTE) != 0;
		d->slots[i].use = (struct alloc_gpu){
			.index = g->index,
			.mem_valid = gpu_has(g, GF_MEM_USED) && gpu_has(g, GF_MEM_FREE),
			.used_mib = g->mem_used >> 20,
			.free_mib = g->mem_free >> 20,
			.util_valid = gpu_has(g, GF_UTIL_GPU),
			.util = g->util_gpu,
			.procs = procs,
		};
	}
	d->usage_at = d->now;
}

/* ---- requests ---- */

static bool parse_request(struct daemon *d, struct conn *c, const struct msg *m, struct request *r,
			  bool *dry)
{
	uint64_t v;
	const char *s;
	r->req.max_util = -1;
	r->req.prefer = PREFER_FREE_MEMORY;
	if (!msg_get_u64(m, "count", GPU_MAX, &v) || v == 0) {
		conn_error(d, c, r->id, EXIT_USAGE, "count must be 1-%d GPUs", GPU_MAX);
		return false;
	}
	r->req.count = (unsigned)v;
	for (size_t i = 1; i < m->nlines; i++) {
		const struct msg_line *l = &m->lines[i];
		if (strcmp(l->w[0], "gpu"))
			continue;
		for (size_t w = 1; w < l->nwords; w++) {
			size_t k = 0;
			while (k < d->nslots && strcmp(d->slots[k].uuid, l->w[w]))
				k++;
			if (k == d->nslots) {
				conn_error(d, c, r->id, EXIT_NO_SUCH_GPU, "the daemon knows no GPU %.100s",
					   l->w[w]);
				return false;
			}
			r->req.cand |= 1ULL << k;
		}
	}
	if (!r->req.cand)
		r->req.cand = all_slots(d);
	/* A constraint the daemon cannot honour is refused, never dropped: a min_free past the
	 * bound read as "no constraint" would lease a GPU the client asked to rule out. The bound is
	 * the clients' (--min-free-memory at most 1024T), so both sides agree. */
	if ((s = msg_get(m, "min_free"))) {
		if (!word_u64(s, MAX_SIZE_MIB, &v)) {
			conn_error(d, c, r->id, EXIT_USAGE, "min_free is MiB, at most %llu (" MAX_SIZE_TEXT
				   "), not %.30s", (unsigned long long)MAX_SIZE_MIB, s);
			return false;
		}
		r->req.min_free_mib = v;
	}
	if ((s = msg_get(m, "max_util"))) {
		if (!word_u64(s, 100, &v)) {
			conn_error(d, c, r->id, EXIT_USAGE, "max_util is a percentage 0-100, not %.30s", s);
			return false;
		}
		r->req.max_util = (int)v;
	}
	r->req.ignore_usage = msg_get_u64(m, "ignore_usage", 1, &v) && v;
	if ((s = msg_get(m, "prefer")) && !config_parse_prefer(s, &r->req.prefer)) {
		conn_error(d, c, r->id, EXIT_USAGE, "prefer is free-memory, index or util");
		return false;
	}
	s = msg_get(m, "kind");
	snprintf(r->kind, sizeof r->kind, "%s", s && (!strcmp(s, "env") || !strcmp(s, "job")) ? s : "run");
	if ((s = msg_get(m, "name")))
		r->name = xstrndup(s, REQ_NAME_MAX);
	if ((s = msg_get(m, "command")))
		r->command = xstrndup(s, REQ_COMMAND_MAX);
	*dry = msg_get_u64(m, "dry", 1, &v) && v;
	s = msg_get(m, "wait");
	r->req.queued = s && !*dry;
	if (r->req.queued && d->conf.max_wait > 0)
		r->deadline = d->now + d->conf.max_wait;
	return true;
}

static size_t queued_by(const struct daemon *d, uid_t uid)
{
	size_t n = 0;
	for (size_t i = 0; i < d->nreqs; i++)
		n += d->reqs[i]->uid == uid && d->reqs[i]->req.queued;
	return n;
}

static unsigned usable(const struct daemon *d, uint64_t cand)
{
	unsigned n = 0;
	for (size_t i = 0; i < d->nslots; i++)
		n += (cand >> i & 1) && !d->slots[i].reserved && !d->set->gpus[i].lost;
	return n;
}

static void random_ticket(char out[33])
{
	unsigned char b[16];
	if (getrandom(b, sizeof b, 0) != sizeof b)
		die(EXIT_FAIL, "getrandom: %s", strerror(errno));
	for (size_t i = 0; i < sizeof b; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

void queue_acquire(struct daemon *d, struct conn *c, const struct msg *m)
{
	uint64_t id = 0;
	bool dry = false;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	if (find_req(d, c, id)) {
		conn_error(d, c, id, EXIT_USAGE, "request id %llu is already in use", (unsigned long long)id);
		return;
	}
	struct request *r = xcalloc(1, sizeof *r);
	r->conn = c;
	r->id = id;
	r->uid = c->p.uid;
	r->pid = c->p.pid;
	r->since = time(NULL);
	r->arrived_ns = realtime_ns();
	r->state = R_WAITING;
	if (!parse_request(d, c, m, r, &dry)) {
		queue_request_free(r);
		return;
	}
	unsigned cap = d->conf.max_gpus_per_user;
	if (cap && r->req.count > cap) {
		conn_error(d, c, id, EXIT_USAGE, "%u GPUs wanted, but the administrator caps each user at "
			   "%u (max_gpus_per_user)", r->req.count, cap);
		goto refused;
	}
	if (r->req.count > usable(d, r->req.cand)) {
		conn_error(d, c, id, EXIT_USAGE, "%u GPU%s wanted, but only %u of those asked for can "
			   "ever be leased here%s", r->req.count, r->req.count == 1 ? "" : "s",
			   usable(d, r->req.cand), d->conf.reserved ? " (the administrator reserves "
			   "some: reserved_gpus)" : " (lost GPUs excluded)");
		goto refused;
	}
	const char *ticket = msg_get(m, "ticket");
	for (size_t i = 0; ticket && r->req.queued && i < d->nreqs; i++) {
		struct request *o = d->reqs[i];
		if (o->state == R_ORPHAN && o->uid == c->p.uid && !strcmp(o->ticket, ticket)) {
			/* A waiter back after a restart: same place, same arrival time. */
			o->conn = c;
			o->id = id;
			o->pid = c->p.pid;
			o->state = R_WAITING;
			o->deadline = r->deadline;
			c->nreqs++;
			queue_request_free(r);
			r = o;
			goto queued;
		}
	}
	if (r->req.queued && queued_by(d, c->p.uid) >= d->conf.max_queued_per_user) {
		conn_error(d, c, id, EXIT_BUSY, "you already have %zu requests waiting, the most the "
			   "administrator allows (max_queued_per_user)", queued_by(d, c->p.uid));
		goto refused;
	}
	r->seq = d->next_seq++;
	r->dry = dry;
	if (r->req.queued)
		random_ticket(r->ticket);
	d->reqs = grow_array(d->reqs, &d->reqs_cap, d->nreqs + 1, sizeof *d->reqs);
	d->reqs[d->nreqs++] = r;
	c->nreqs++;
queued:
	d->queue_dirty = true;
	bool waits = r->req.queued;
	queue_schedule(d); /* may answer (and free) a request that does not wait */
	if (waits && (r = find_req(d, c, id)) && r->state == R_WAITING) {
		struct strbuf sb = {0};
		msg_begin(&sb, "queued");
		msg_add_u64(&sb, "id", id);
		msg_add(&sb, "ticket", r->ticket, NULL);
		msg_add_u64(&sb, "position", queue_position(d, r));
		msg_add_i64(&sb, "since", (int64_t)r->since);
		msg_add_u64(&sb, "arrived", r->arrived_ns);
		conn_send(d, c, &sb, NULL, 0);
		sb_free(&sb);
	}
	return;
refused:
	queue_request_free(r);
}

void queue_take(struct daemon *d, struct conn *c, const struct msg *m)
{
	uint64_t id = 0, serial = 0;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	msg_get_u64(m, "offer", UINT64_MAX, &serial);
	struct request *r = find_req(d, c, id);
	if (!r) {
		conn_error(d, c, id, EXIT_FAIL, "request %llu is no longer in the queue",
			   (unsigned long long)id);
		return;
	}
	if (r->state != R_OFFERED || r->offer_serial != serial) {
		/* A stale offer (it timed out while the client was stopped): back in line. */
		if (r->state == R_SKIPPED)
			r->state = R_WAITING;
		reply(d, c, "withdrawn", id);
		d->sched_due = true;
		return;
	}
	int fds[PROTO_MAX_FDS];
	size_t nfds;
	struct gpu_error err = {0};
	struct lease *l = lease_grant(d, r, fds, &nfds, &err);
	if (!l) {
		conn_error(d, c, id, err.code, "%s", err.msg);
	} else {
		struct strbuf sb = {0};
		msg_begin(&sb, "granted");
		msg_add_u64(&sb, "id", id);
		msg_add(&sb, "lease", l->id, NULL);
		msg_add(&sb, "token", l->token, NULL);
		msg_add_i64(&sb, "since", (int64_t)l->since);
		msg_add_u64(&sb, "offered", r->offered_ns);
		add_gpus(&sb, d, "gpu", l->gpus);
		conn_send(d, c, &sb, fds, nfds);
		sb_free(&sb);
	}
	req_remove(d, r);
}

void queue_leave(struct daemon *d, struct conn *c, const struct msg *m)
{
	uint64_t id = 0;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	struct request *r = find_req(d, c, id);
	if (r)
		req_remove(d, r);
	reply(d, c, "left", id);
}

/* A waiter on a terminal asks for its place now and then. */
void queue_where(struct daemon *d, struct conn *c, const struct msg *m)
{
	uint64_t id = 0;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	struct request *r = find_req(d, c, id);
	if (!r || !r->req.queued) {
		reply(d, c, "pong", id);
		return;
	}
	struct strbuf sb = {0};
	msg_begin(&sb, "queued");
	msg_add_u64(&sb, "id", id);
	msg_add_u64(&sb, "position", queue_position(d, r));
	conn_send(d, c, &sb, NULL, 0);
	sb_free(&sb);
}

void queue_drop_conn(struct daemon *d, struct conn *c)
{
	for (size_t i = 0; i < d->nreqs;) {
		if (d->reqs[i]->conn == c)
			req_remove(d, d->reqs[i]);
		else
			i++;
	}
}

/* ---- the scheduling pass ---- */

/* Why each GPU a refused request asked for is not free for it, for the client to explain. */
static void busy(struct daemon *d, struct request *r, const struct alloc_gpu *g, uint64_t kept,
		 size_t ahead)
{
	struct strbuf sb = {0};
	char num[3][24];
	leases_reap(d);
	msg_begin(&sb, "busy");
	msg_add_u64(&sb, "id", r->id);
	for (size_t i = 0; i < d->nslots; i++) {
		if (!(r->req.cand >> i & 1))
			continue;
		const struct slot *s = &d->slots[i];
		const struct lease *h = s->holder;
		const char *why;
		msg_key(&sb, "gpu");
		msg_word(&sb, s->uuid);
		if (d->set->gpus[i].lost) {
			msg_word(&sb, "lost");
		} else if (h) {
			snprintf(num[0], sizeof num[0], "%u", (unsigned)h->uid);
			snprintf(num[1], sizeof num[1], "%d", (int)h->pid);
			snprintf(num[2], sizeof num[2], "%lld", (long long)h->since);
			msg_word(&sb, "leased");
			msg_word(&sb, num[0]);
			msg_word(&sb, num[1]);
			msg_word(&sb, num[2]);
			msg_word(&sb, h->kind);
			msg_word(&sb, h->name ? h->name : "");
		} else if (s->held_unknown) {
			msg_word(&sb, "held");
		} else if (s->reserved) {
			msg_word(&sb, "reserved");
		} else if (kept >> i & 1) {
			msg_word(&sb, "queued");
		} else if ((why = alloc_why_not(&g[i], &r->req, &d->conf.free))) {
			snprintf(num[0], sizeof num[0], "%llu", (unsigned long long)g[i].used_mib);
			snprintf(num[1], sizeof num[1], "%u", g[i].util);
			msg_word(&sb, "usage");
			msg_word(&sb, why);
			msg_word(&sb, g[i].mem_valid ? num[0] : "-");
			msg_word(&sb, g[i].util_valid ? num[1] : "-");
			msg_word_u64(&sb, g[i].procs);
		} else {
			msg_word(&sb, "free");
		}
	}
	msg_add_u64(&sb, "ahead", ahead);
	if (r->req.capped)
		msg_add_u64(&sb, "capped", d->conf.max_gpus_per_user);
	conn_send(d, r->conn, &sb, NULL, 0);
	sb_free(&sb);
}

static void offer(struct daemon *d, struct request *r, uint64_t mask)
{
	static uint64_t serial;
	r->state = R_OFFERED;
	r->offer = mask;
	r->offer_serial = ++serial;
	r->offer_until = d->now + d->conf.offer_timeout;
	r->offered_ns = realtime_ns();
	struct strbuf sb = {0};
	msg_begin(&sb, r->dry ? "would" : "offer");
	msg_add_u64(&sb, "id", r->id);
	msg_add_u64(&sb, "offer", r->offer_serial);
	add_gpus(&sb, d, "gpu", mask);
	conn_send(d, r->conn, &sb, NULL, 0);
	sb_free(&sb);
	d->queue_dirty = true;
}

/* The per-user cap over one pass, in the order the pass took the requests: a pick that would
 * take its user past the cap is capped instead. Returns true when it changed anything (the pass
 * is then run again). */
static bool apply_cap(const struct daemon *d, struct alloc_req *rq, const uint64_t *picks,
		      const size_t *order, size_t nreqs, const unsigned *held)
{
	unsigned cap = d->conf.max_gpus_per_user;
	struct extra { unsigned user, n; } extra[GPU_MAX];
	size_t nx = 0;
	for (size_t o = 0; cap && o < nreqs; o++) {
		size_t i = order[o];
		if (!picks[i])
			continue;
		unsigned user = rq[i].user;
		size_t k = 0;
		while (k < nx && extra[k].user != user)
			k++;
		if (k == nx)
			extra[nx++] = (struct extra){user, 0};
		if (held[user] + extra[k].n + rq[i].count > cap) {
			rq[i].capped = true;
			return true;
		}
		extra[k].n += rq[i].count;
	}
	return false;
}

static bool orphans_left(const struct daemon *d)
{
	for (size_t i = 0; i < d->nreqs; i++)
		if (d->reqs[i]->state == R_ORPHAN)
			return true;
	return false;
}

void queue_schedule(struct daemon *d)
{
	d->sched_due = false;
	d->usage_due = 0;
	if (!d->nreqs)
		return;
	if (d->settle_until && (d->now >= d->settle_until || !orphans_left(d)))
		d->settle_until = 0;
	if (d->settle_until)
		return; /* the old queue is coming back: serve nobody ahead of it (a timer ends this) */
	bool want_usage = false;
	for (size_t i = 0; i < d->nreqs; i++)
		want_usage |= d->reqs[i]->state == R_WAITING && !d->reqs[i]->req.ignore_usage;
	if (want_usage && (!d->usage_at || d->now - d->usage_at > 0.02))
		usage_refresh(d);
	struct alloc_gpu g[GPU_MAX];
	uint64_t avail = all_slots(d);
	for (size_t i = 0; i < d->nslots; i++) {
		g[i] = d->slots[i].use;
		g[i].index = d->slots[i].index;
		g[i].leased = d->slots[i].holder || d->slots[i].held_unknown;
		g[i].reserved = d->slots[i].reserved;
		if (d->set->gpus[i].lost)
			avail &= ~(1ULL << i);
	}
	struct alloc_req *rq = xcalloc(d->nreqs, sizeof *rq);
	uint64_t *picks = xcalloc(d->nreqs, sizeof *picks);
	unsigned cap = d->conf.max_gpus_per_user;
	size_t nreqs = d->nreqs;
	/* What each user holds, counted once per pass (per request it cost the pass O(n^2): 265 ms
	 * of CPU to queue 1,000 requests with a cap, against 45 ms without). */
	unsigned *held;
	uint64_t *served;
	size_t nusers = queue_users(d, d->reqs, nreqs, rq, &held, &served);
	for (size_t i = 0; i < nreqs; i++) {
		struct request *r = d->reqs[i];
		unsigned user = rq[i].user;
		rq[i] = r->req;
		rq[i].user = user;
		rq[i].skip = r->state != R_WAITING;
		rq[i].capped = cap && held[user] + r->req.count > cap;
		if (r->state == R_OFFERED)
			avail &= ~r->offer;
	}
	struct alloc_queue q = {.order = d->conf.queue, .held = held, .served = served,
				.nusers = nusers};
	size_t *order = xmalloc(nreqs * sizeof *order);
	uint64_t kept;
	size_t head;
	do
		kept = alloc_schedule(g, d->nslots, rq, nreqs, &d->conf.free, avail, &q, picks, order,
				      &head);
	while (apply_cap(d, rq, picks, order, nreqs, held));
	free(held);
	free(served);
	/* The head keeps its place at the front (and its GPUs) in the passes to come, until it runs. */
	for (size_t i = 0; i < nreqs; i++)
		d->reqs[i]->req.head = i == head;
	/* Act in the order the pass took them; refusals and dry runs leave the array, so walk a copy. */
	struct request **all = xmalloc(nreqs * sizeof *all);
	memcpy(all, d->reqs, nreqs * sizeof *all);
	size_t ahead = 0;
	bool blocked_by_use = false;
	for (size_t o = 0; o < nreqs; o++) {
		size_t i = order[o];
		struct request *r = all[i];
		bool queued = r->req.queued; /* r may be freed below */
		r->req.capped = rq[i].capped;
		if (picks[i]) {
			if (!r->dry)
				queue_served(d, r->uid);
			offer(d, r, picks[i]);
			if (r->dry)
				req_remove(d, r);
		} else if (r->state == R_WAITING && !queued) {
			busy(d, r, g, kept | (all_slots(d) & ~avail), ahead);
			req_remove(d, r);
		} else if (r->state == R_WAITING && !rq[i].capped) {
			for (size_t k = 0; k < d->nslots; k++)
				blocked_by_use |= (r->req.cand >> k & 1) && (avail >> k & 1) && !g[k].leased &&
						  !g[k].reserved && alloc_why_not(&g[k], &r->req, &d->conf.free);
		}
		ahead += queued;
	}
	if (blocked_by_use)
		d->usage_due = d->now + (d->now - d->last_end < 3 ? SETTLE_SECONDS : d->conf.usage_poll);
	free(all);
	free(order);
	free(rq);
	free(picks);
}

/* Offers not taken, waits past max_wait, orphans whose client did not come back. */
void queue_timers(struct daemon *d, double *next)
{
	if (d->settle_until) {
		if (d->now >= d->settle_until)
			d->sched_due = true;
		else if (!*next || d->settle_until < *next)
			*next = d->settle_until;
	}
	for (size_t i = 0; i < d->nreqs;) {
		struct request *r = d->reqs[i];
		if (r->state == R_OFFERED && d->now >= r->offer_until) {
			fprintf(stderr, "gpuctl daemon: uid %u pid %d did not take its offer within %.1f s; "
				"it keeps its place\n", (unsigned)r->uid, (int)r->pid, d->conf.offer_timeout);
			r->state = R_SKIPPED;
			r->offer = 0;
			d->sched_due = true;
			if (!r->req.queued) {
				conn_error(d, r->conn, r->id, EXIT_BUSY, "the GPUs were offered but this "
					   "process did not take them within %.1f s (the daemon's "
					   "offer_timeout: was it stopped, or the machine overloaded?); "
					   "try again, or wait with --wait", d->conf.offer_timeout);
				req_remove(d, r);
				continue;
			}
		}
		if (r->deadline && d->now >= r->deadline) {
			if (r->conn)
				conn_error(d, r->conn, r->id, EXIT_TIMEOUT, "waited the longest the "
					   "administrator allows (max_wait %.0f s); left the queue",
					   d->conf.max_wait);
			req_remove(d, r);
			continue;
		}
		double t = r->state == R_OFFERED ? r->offer_until : r->deadline;
		if (t && (!*next || t < *next))
			*next = t;
		i++;
	}
}
