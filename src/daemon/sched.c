/* sched.c: the scheduling pass over the queue table (qtable.c; design: daemon.h), below
 * queue.c, which adds and answers requests. Every event runs one pass
 * on one NVML refresh (alloc_schedule, in the order of order.c): what can run is offered, the
 * head keeps the free GPUs it could use (within the bounds below), a request that does not wait
 * is answered at once. The timers: offers not taken within offer_timeout (the request keeps
 * its place, its user is backed off), waits past max_wait, the head's head_reserve. */
#include "daemon/daemon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SETTLE_SECONDS 0.25        /* look again this soon after a lease ended */
/* A request that does not wait, refused only for GPUs offered to others, waits this long at most
 * for those offers to be taken or lapse (well under a client's answer timeout, 5 s), and so
 * many such a user at once: an offer nobody takes fails no one else's `run`. */
#define DEFER_SECONDS 3.0
#define DEFER_PER_USER 64

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
		} else if ((r->req.mem_mib || r->req.mig || s->nshares || s->mig_busy) &&
			   (why = alloc_why_not(&g[i], &r->req, &d->conf.free))) {
			/* memory shares and MIG instances (issue 23): why, and the room left to
			 * claim ("-": no share could be placed there); --ignore-usage changes none */
			int64_t room = alloc_share_room(&g[i], &d->conf.free);
			snprintf(num[0], sizeof num[0], "%lld", (long long)(room > 0 ? room : 0));
			msg_word(&sb, "part");
			msg_word(&sb, why);
			msg_word(&sb, !r->req.mig && g[i].total_valid && g[i].mem_valid && !g[i].mig_mode
				       ? num[0] : "-");
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
	r->offer_mig = r->req.mig ? mig_choose(d, r, mask) : -1; /* (before it counts as offered) */
	r->state = R_OFFERED;
	r->offer = mask;
	r->offer_serial = ++serial;
	/* (from now, not from this wake-up's start: handling others' messages before this pass
	 * would have shortened the time the client has to take it) */
	r->offer_until = now_mono() + d->conf.offer_timeout;
	r->offered_ns = queue_realtime_ns();
	struct strbuf sb = {0};
	msg_begin(&sb, r->dry ? "would" : "offer");
	msg_add_u64(&sb, "id", r->id);
	msg_add_u64(&sb, "offer", r->offer_serial);
	queue_add_gpus(&sb, d, "gpu", mask);
	uint64_t total = UINT64_MAX; /* memory shares: a dry run's environment has the fraction too */
	for (size_t k = 0; r->dry && r->req.mem_mib && k < d->nslots; k++)
		if ((mask >> k & 1) && d->set->gpus[k].mem_total >> 20 < total)
			total = d->set->gpus[k].mem_total >> 20;
	if (r->dry && r->req.mem_mib && total != UINT64_MAX) {
		msg_add_u64(&sb, "mem", r->req.mem_mib);
		msg_add_u64(&sb, "mem_total", total);
	}
	for (size_t k = 0; r->offer_mig >= 0 && k < d->nslots; k++) /* MIG instances: which */
		if ((mask >> k & 1) && (size_t)r->offer_mig < d->set->gpus[k].nmigs)
			msg_add(&sb, "mig", d->set->gpus[k].migs[r->offer_mig].uuid, NULL);
	placement_offer(d, r, mask, &sb);   /* issue 26: why that set, its CPUs */
	if (r == d->take_now && !r->dry)    /* issue 22: the grant follows, unasked (queue.c) */
		msg_add_u64(&sb, "taken", 1);
	conn_send(d, r->conn, &sb, NULL, 0);
	sb_free(&sb);
	d->queue_dirty |= r->req.queued;
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

/* The GPUs uid's own leases hold. */
static uint64_t own_gpus(const struct daemon *d, uid_t uid)
{
	uint64_t m = 0;
	for (size_t i = 0; i < d->nslots; i++)
		if (d->slots[i].holder && d->slots[i].holder->uid == uid)
			m |= 1ULL << i;
	return m;
}

/* How long r's user's heads, r's too, have kept free GPUs idle ([daemon] head_reserve). */
static double reserved_for(struct daemon *d, const struct request *r)
{
	return queue_reserved(d, r->uid) + (r->reserving_since ? d->now - r->reserving_since : 0);
}

/* r's offer goes to another user's request: r's user did not take offers (order.c). */
static void withdraw(struct daemon *d, struct request *r)
{
	conn_log(d, "uid %u pid %d: offer withdrawn for another user (it is backed off for not "
		 "taking offers)", (unsigned)r->uid, (int)r->pid);
	r->state = R_SKIPPED;
	r->offer = 0;
	d->queue_dirty |= r->req.queued;
	if (!r->req.queued) {
		conn_error(d, r->conn, r->id, EXIT_BUSY, "the GPUs offered went to another user: you did "
			   "not take earlier offers within offer_timeout (%.1f s), so until you do your "
			   "offers give way; try again, or wait with --wait", d->conf.offer_timeout);
		queue_remove(d, r);
	}
}

/* Whether r (not waiting, refused now) could run on the GPUs free now (free) and those offered to
 * other users' requests not yet taken, which will be taken or lapse by the time DEFER_SECONDS
 * after r was first refused: then r is answered once they are, not refused now. */
static bool defer(struct daemon *d, struct request *r, const struct alloc_gpu *g, uint64_t free)
{
	uint64_t offered = 0;
	double until = 0;
	for (size_t i = 0; i < d->nreqs; i++) {
		const struct request *o = d->reqs[i];
		if (o->state != R_OFFERED || o->uid == r->uid || !(o->offer & r->req.cand))
			continue;
		offered |= o->offer;
		if (o->offer_until > until)
			until = o->offer_until;
	}
	if (!offered || !alloc_pick(g, d->nslots, &r->req, &d->conf.free, free | offered))
		return false;
	if (!r->defer_from)
		r->defer_from = d->now;
	return until <= r->defer_from + DEFER_SECONDS;
}

/* The pass. Three rules bound what one user's requests can do to the others':
 * - The head reserves (keeps free GPUs idle for itself) only while it can run once others'
 *   leases end: a request for more GPUs than there are outside its own user's leases waits on
 *   that user alone, so it keeps its place (kept first, as a head) but holds GPUs back from its
 *   own user's later requests only (N_OWN); others go by it (alloc.c own_wait).
 * - A head keeps GPUs idle head_reserve at most, counted while it keeps any, and per user (its
 *   user's earlier heads count: else cancelling it and asking again would start afresh); then
 *   it still waits (in the fair order, no longer kept first) but reserves nothing
 *   (N_EXPIRED), and the next waiter that
 *   cannot run may reserve in its turn. With time limits, a request whose limit ends before the
 *   head could start runs on the GPUs kept for it (backfill, as Slurm's: timelimit.c).
 * - A user backed off for not taking offers (order.c) is served after everyone else, one offer
 *   open at a time, reserving nothing, and its open offers give way to other users' requests;
 *   before that, GPUs offered to one user and not yet taken make another's request that does
 *   not wait wait for them (defer), not fail. */
void queue_schedule(struct daemon *d)
{
	d->sched_due = false;
	d->usage_due = 0;
	d->backoff_due = 0;
	if (!d->nreqs)
		return;
	if (d->settle_until && (d->now >= d->settle_until || !orphans_left(d)))
		d->settle_until = 0;
	if (d->settle_until)
		return; /* the old queue is coming back: serve nobody ahead of it (a timer ends this) */
	bool want_usage = false;
	for (size_t i = 0; i < d->nreqs; i++)
		want_usage |= d->reqs[i]->state == R_WAITING &&
			      (!d->reqs[i]->req.ignore_usage || d->reqs[i]->req.min_free_mib ||
			       d->reqs[i]->req.mem_mib); /* a floor or a share needs the memory */
	if (want_usage && (!d->usage_at || d->now - d->usage_at > 0.02))
		queue_usage_refresh(d);
	struct alloc_gpu g[GPU_MAX];
	uint64_t avail = queue_all_slots(d), leasable = 0;
	for (size_t i = 0; i < d->nslots; i++) {
		g[i] = d->slots[i].use;
		g[i].index = d->slots[i].index;
		g[i].leased = d->slots[i].holder || d->slots[i].held_unknown;
		g[i].reserved = d->slots[i].reserved;
		if (d->set->gpus[i].lost)
			avail &= ~(1ULL << i);
		else if (!d->slots[i].reserved)
			leasable |= 1ULL << i;
	}
	share_fill(d, g); /* memory shares (issue 23) */
	mig_fill(d, g);   /* MIG instances (issue 23) */
	struct alloc_req *rq = xcalloc(d->nreqs, sizeof *rq);
	uint64_t *picks = xcalloc(d->nreqs, sizeof *picks);
	unsigned cap = d->conf.max_gpus_per_user;
	size_t nreqs = d->nreqs;
	/* What each user holds, counted once per pass (per request it cost the pass O(n^2): 265 ms
	 * of CPU to queue 1,000 requests with a cap, against 45 ms without). */
	unsigned *held;
	uint64_t *served;
	size_t nusers = queue_users(d, d->reqs, nreqs, rq, &held, &served);
	/* Per user: backed off (0: not asked yet, 1: no, 2: yes), an open offer while backed off,
	 * and its GPUs held by its own leases (asked once per user). */
	unsigned char *boff = xcalloc(nusers ? nusers : 1, 1), *open = xcalloc(nusers ? nusers : 1, 1);
	uint64_t *own = xcalloc(nusers ? nusers : 1, sizeof *own);
	bool *tried = xcalloc(nreqs, sizeof *tried);
	unsigned *ndefer = xcalloc(nusers ? nusers : 1, sizeof *ndefer);
	uint64_t open_backed = 0;
	for (size_t i = 0; i < nreqs; i++) {
		struct request *r = d->reqs[i];
		unsigned user = rq[i].user;
		double until;
		rq[i] = r->req;
		rq[i].user = user;
		rq[i].place = placement_for(d, r->uid);   /* issue 26 */
		rq[i].skip = r->state != R_WAITING;
		rq[i].capped = cap && held[user] + r->req.count > cap;
		if (!boff[user]) {
			boff[user] = queue_backed_off(d, r->uid, &until) ? 2 : 1;
			own[user] = own_gpus(d, r->uid);
			if (boff[user] == 2 && (!d->backoff_due || until < d->backoff_due))
				d->backoff_due = until;
		}
		bool backed = boff[user] == 2;
		/* (a share or a MIG instance never waits on its own user's leases) */
		bool part = r->req.mem_mib || r->req.mig;
		bool self = !part && r->req.count >
			    (unsigned)__builtin_popcountll(r->req.cand & leasable & ~own[user]);
		bool expired = d->conf.head_reserve > 0 && reserved_for(d, r) >= d->conf.head_reserve;
		rq[i].no_reserve = backed || expired;
		rq[i].own_wait = self;
		r->note = backed ? N_BACKOFF : self ? N_OWN : expired ? N_EXPIRED : N_NONE;
		if (backed)
			rq[i].skip = true; /* its turn comes after everyone's, below */
		if (r->state == R_OFFERED && backed) {
			open_backed |= r->offer; /* others may take these */
			open[user] = 1;
		} else if (r->state == R_OFFERED && !part) {
			avail &= ~r->offer; /* (a share's or an instance's: share_fill, mig_fill) */
		}
	}
	size_t *own_heads = xmalloc((nusers ? nusers : 1) * sizeof *own_heads);
	double *past = usage_users(d, d->reqs, nreqs, rq, nusers); /* issue 24 */
	struct alloc_queue q = {.order = d->conf.queue, .held = held, .served = served,
				.nusers = nusers, .own_heads = own_heads, .past = past};
	size_t *order = xmalloc(nreqs * sizeof *order);
	uint64_t kept;
	size_t head;
	do
		kept = alloc_schedule(g, d->nslots, rq, nreqs, &d->conf.free, avail, &q, picks, order,
				      &head);
	while (apply_cap(d, rq, picks, order, nreqs, held));
	/* -- backfill (issue 24): requests whose time limit ends before the head could start run
	 * on the GPUs kept for it (timelimit.c) -- */
	d->head_start = limit_backfill(d, g, rq, order, nreqs, head, &kept, picks, avail, held);
	d->head_start_at = d->now;
	d->head_seq = head < nreqs ? d->reqs[head]->seq : 0;
	/* The backed-off users' turn: each one's first waiting request in the order, on what is left
	 * (neither taken, kept for the head, nor offered to another backed-off user). */
	uint64_t taken = 0, wanted = 0; /* wanted: by requests that will take them (not dry runs) */
	for (size_t i = 0; i < nreqs; i++) {
		taken |= picks[i];
		wanted |= d->reqs[i]->dry ? 0 : picks[i];
	}
	uint64_t left = avail & ~kept & ~taken & ~open_backed;
	for (size_t o = 0; o < nreqs; o++) {
		size_t i = order[o];
		unsigned user = rq[i].user;
		if (boff[user] != 2 || d->reqs[i]->state != R_WAITING || open[user])
			continue;
		open[user] = 1;
		tried[i] = true;
		struct alloc_req x = rq[i];
		x.skip = false;
		picks[i] = alloc_pick(g, d->nslots, &x, &d->conf.free, left);
		left &= ~picks[i];
	}
	free(held);
	free(served);
	free(past);
	/* The head keeps its place at the front (and its GPUs) in the passes to come, until it runs;
	 * the time it keeps free GPUs idle is counted against head_reserve. */
	for (size_t i = 0; i < nreqs; i++) {
		struct request *r = d->reqs[i];
		bool reserving = i == head && kept;
		r->req.head = i == head || own_heads[rq[i].user] == i;
		if (i == head)
			r->note = N_HEAD;
		if (reserving && !r->reserving_since) {
			r->reserving_since = d->now;
		} else if (!reserving && r->reserving_since) {
			/* (offered what it kept: its user may reserve afresh, later) */
			queue_reserve_add(d, r->uid, d->now - r->reserving_since, picks[i] && !r->dry);
			r->reserving_since = 0;
		}
	}
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
		if (r->state == R_OFFERED && r->note == N_BACKOFF && (r->offer & wanted)) {
			withdraw(d, r);
		} else if (picks[i]) {
			if (!r->dry)
				queue_served(d, r->uid);
			offer(d, r, picks[i]);
			if (r->dry)
				queue_remove(d, r);
		} else if (r->state == R_WAITING && !queued && r->note == N_BACKOFF && !tried[i]) {
			conn_error(d, r->conn, r->id, EXIT_BUSY, "you did not take the GPUs offered to "
				   "you within offer_timeout (%.1f s): for a while you have one offer "
				   "open at a time, after other users, and one is open or being made; "
				   "try again, or wait with --wait", d->conf.offer_timeout);
			queue_remove(d, r);
		} else if (r->state == R_WAITING && !queued && ndefer[rq[i].user] < DEFER_PER_USER &&
			   defer(d, r, g, avail & ~kept & ~taken)) {
			ndefer[rq[i].user]++; /* the next pass (a take, a lapse) answers it */
		} else if (r->state == R_WAITING && !queued) {
			busy(d, r, g, kept | (queue_all_slots(d) & ~avail), ahead);
			queue_remove(d, r);
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
	free(boff);
	free(open);
	free(own);
	free(tried);
	free(own_heads);
	free(ndefer);
}

/* Offers not taken, waits past max_wait, orphans whose client did not come back. */
void queue_timers(struct daemon *d, double *next)
{
	limit_timers(d, next); /* leases past their time limit (issue 24) */
	/* memory shares (issue 23): their processes' use is looked at every usage_poll while any
	 * share lives (a share over its claim is shown, and takes the room it uses) */
	bool shares = false;
	for (size_t i = 0; i < d->nslots && !shares; i++)
		shares = d->slots[i].nshares > 0;
	if (shares) {
		double due = d->usage_at + d->conf.usage_poll;
		if (d->now >= due) {
			queue_usage_refresh(d);
			d->sched_due = true;
			due = d->now + d->conf.usage_poll;
		}
		if (!*next || due < *next)
			*next = due;
	}
	if (d->backoff_due) {
		if (d->now >= d->backoff_due)
			d->sched_due = true;
		else if (!*next || d->backoff_due < *next)
			*next = d->backoff_due;
	}
	if (d->settle_until) {
		if (d->now >= d->settle_until)
			d->sched_due = true;
		else if (!*next || d->settle_until < *next)
			*next = d->settle_until;
	}
	for (size_t i = 0; i < d->nreqs;) {
		struct request *r = d->reqs[i];
		/* A take already sent but not yet read (the daemon was late, not the client: a
		 * loaded machine, a flood from others) is read first; once only, bounded by one
		 * more offer_timeout, so a client cannot keep an offer open by sending. */
		bool unread = r->state == R_OFFERED && d->now >= r->offer_until && r->conn &&
			      d->now < r->offer_until + d->conf.offer_timeout &&
			      peer_pending(&r->conn->p);
		if (r->state == R_OFFERED && d->now >= r->offer_until && !unread) {
			fprintf(stderr, "gpuctl daemon: uid %u pid %d did not take its offer within %.1f s; "
				"it keeps its place\n", (unsigned)r->uid, (int)r->pid, d->conf.offer_timeout);
			r->state = R_SKIPPED;
			r->offer = 0;
			d->sched_due = true;
			queue_lapsed(d, r->uid);
			if (!r->req.queued) {
				conn_error(d, r->conn, r->id, EXIT_BUSY, "the GPUs were offered but this "
					   "process did not take them within %.1f s (the daemon's "
					   "offer_timeout: was it stopped, or the machine overloaded?); "
					   "try again, or wait with --wait", d->conf.offer_timeout);
				queue_remove(d, r);
				continue;
			}
		}
		if (r->deadline && d->now >= r->deadline) {
			if (r->conn)
				conn_error(d, r->conn, r->id, EXIT_TIMEOUT, "waited the longest the "
					   "administrator allows (max_wait %.0f s); left the queue",
					   d->conf.max_wait);
			queue_remove(d, r);
			continue;
		}
		double t = r->state == R_OFFERED ? r->offer_until : r->deadline;
		if (t && (!*next || t < *next))
			*next = t;
		if (r->reserving_since && d->conf.head_reserve > 0) {
			/* The head's time to keep GPUs idle ends: a pass lets others use them. */
			t = r->reserving_since + d->conf.head_reserve - queue_reserved(d, r->uid);
			if (d->now >= t)
				d->sched_due = true;
			else if (!*next || t < *next)
				*next = t;
		}
		i++;
	}
}
