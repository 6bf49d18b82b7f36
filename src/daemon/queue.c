/* queue.c: requests for GPUs as they come and go: acquire, take, leave, where (design:
 * daemon.h). A request either waits in the queue (`wait`) or is answered at once; the
 * scheduling pass that decides (sched.c) runs after each. An offer must be taken within
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

static struct request *find_req(struct daemon *d, const struct conn *c, uint64_t id)
{
	for (size_t i = 0; i < d->nreqs; i++)
		if (d->reqs[i]->conn == c && d->reqs[i]->id == id)
			return d->reqs[i];
	return NULL;
}

static void reply(struct daemon *d, struct conn *c, const char *verb, uint64_t id)
{
	struct strbuf sb = {0};
	msg_begin(&sb, verb);
	msg_add_u64(&sb, "id", id);
	conn_send(d, c, &sb, NULL, 0);
	sb_free(&sb);
}

/* ---- requests ---- */

static bool parse_request(struct daemon *d, struct conn *c, const struct msg *m, struct request *r,
			  bool *dry)
{
	uint64_t v;
	const char *s;
	r->req.max_util = -1;
	r->req.prefer = d->conf.prefer;   /* [daemon] prefer (issue 26) */
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
		r->req.cand = queue_all_slots(d);
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
	/* memory shares (issue 23): a claim on MiB of each GPU rather than whole GPUs */
	if ((s = msg_get(m, "mem"))) {
		if (!word_u64(s, MAX_SIZE_MIB, &v) || v == 0) {
			conn_error(d, c, r->id, EXIT_USAGE, "mem is MiB, 1 to %llu (" MAX_SIZE_TEXT
				   "), not %.30s", (unsigned long long)MAX_SIZE_MIB, s);
			return false;
		}
		r->req.mem_mib = v;
		r->req.pack = msg_get_u64(m, "pack", 1, &v) && v;
	}
	if ((s = msg_get(m, "max_util"))) {
		if (!word_u64(s, 100, &v)) {
			conn_error(d, c, r->id, EXIT_USAGE, "max_util is a percentage 0-100, not %.30s", s);
			return false;
		}
		r->req.max_util = (int)v;
	}
	r->req.ignore_usage = msg_get_u64(m, "ignore_usage", 1, &v) && v;
	char why[160]; /* MIG instances (issue 23) */
	if (!mig_parse(d, r, m, why, sizeof why)) {
		conn_error(d, c, r->id, EXIT_NO_SUCH_GPU, "%s", why);
		return false;
	}
	if ((s = msg_get(m, "prefer")) && !config_parse_prefer(s, &r->req.prefer)) {
		conn_error(d, c, r->id, EXIT_USAGE, "prefer is free-memory, index, util or topology");
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
	return limit_request(d, c, m, r); /* --time (issue 24) */
}

static size_t queued_by(const struct daemon *d, uid_t uid)
{
	size_t n = 0;
	for (size_t i = 0; i < d->nreqs; i++)
		n += d->reqs[i]->uid == uid && d->reqs[i]->req.queued;
	return n;
}

/* review (issue 23's shares): the memory shares uid holds or has asked for. A whole-GPU lease is
 * bounded by the GPUs; a share is not (1 MiB each, thousands a GPU), and every lease costs the
 * daemon a descriptor and a share_of() walk per process at each refresh: capped per user. */
#define SHARES_PER_USER GPU_MAX   /* as many leases as whole GPUs could give */
static size_t shares_of(const struct daemon *d, uid_t uid)
{
	size_t n = 0;
	for (size_t i = 0; i < d->nleases; i++)
		n += d->leases[i]->uid == uid && d->leases[i]->mem_mib;
	for (size_t i = 0; i < d->nreqs; i++)
		n += d->reqs[i]->uid == uid && d->reqs[i]->req.mem_mib;
	return n;
}

static unsigned usable(const struct daemon *d, uint64_t cand)
{
	unsigned n = 0;
	for (size_t i = 0; i < d->nslots; i++)
		n += (cand >> i & 1) && !d->slots[i].reserved && !d->set->gpus[i].lost;
	return n;
}

/* The most memory (MiB) of a GPU of cand that can be leased (memory shares). */
static uint64_t largest(const struct daemon *d, uint64_t cand)
{
	uint64_t m = 0;
	for (size_t i = 0; i < d->nslots; i++)
		if ((cand >> i & 1) && !d->slots[i].reserved && !d->set->gpus[i].lost &&
		    gpu_has(&d->set->gpus[i], GF_MEM_TOTAL) && d->set->gpus[i].mem_total >> 20 > m)
			m = d->set->gpus[i].mem_total >> 20;
	return m;
}

static void random_ticket(char out[33])
{
	unsigned char b[16];
	if (getrandom(b, sizeof b, 0) != sizeof b)
		die(EXIT_FAIL, "getrandom: %s", strerror(errno));
	for (size_t i = 0; i < sizeof b; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void take_offer(struct daemon *d, struct conn *c, struct request *r, uint64_t id);

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
	r->arrived_ns = queue_realtime_ns();
	r->state = R_WAITING;
	r->offer_mig = -1;
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
	if (r->req.mem_mib && r->req.mem_mib + d->conf.free.share_margin_mib > largest(d, r->req.cand)) {
		conn_error(d, c, id, EXIT_USAGE, "a share of %llu MiB and the margin the administrator "
			   "keeps free (share_margin, %llu MiB) do not fit in the memory of any GPU asked "
			   "for (%llu MiB at most)", (unsigned long long)r->req.mem_mib,
			   (unsigned long long)d->conf.free.share_margin_mib,
			   (unsigned long long)largest(d, r->req.cand));
		goto refused;
	}
	if (r->req.mem_mib && shares_of(d, c->p.uid) >= SHARES_PER_USER) {
		conn_error(d, c, id, EXIT_USAGE, "you hold or wait for %zu memory shares, the most one "
			   "user may (%d): end some first", shares_of(d, c->p.uid), SHARES_PER_USER);
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
	/* The queue file holds waiters only (queue_remove): a request answered at once saves
	 * nothing, but still finds a removed state directory made again, as a save would. */
	if (r->req.queued)
		d->queue_dirty = true;
	else
		lease_state_dir_check(d);
	bool waits = r->req.queued;
	/* issue 22: an asker that takes whatever it is offered (run, env, submit, lease(): they
	 * all do) says `take 1`, and an offer made in this very pass is taken for it: the grant
	 * follows the offer unasked, one round trip fewer. It just asked, so it is there; an offer
	 * made later, to a waiter, is taken by the waiter as before. */
	uint64_t take = 0;
	if (!dry && msg_get_u64(m, "take", 1, &take) && take)
		d->take_now = r;
	queue_schedule(d); /* may answer (and free) a request that does not wait */
	d->take_now = NULL;
	struct request *t = take ? find_req(d, c, id) : NULL;
	if (t && t->state == R_OFFERED)
		take_offer(d, c, t, id);
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
	take_offer(d, c, r, id);
}

/* The offer r holds, taken: the lease granted and said, the request gone. */
static void take_offer(struct daemon *d, struct conn *c, struct request *r, uint64_t id)
{
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
		msg_add_u64(&sb, "commit_self", 1); /* the job may commit on this connection */
		limit_granted_msg(d, l, &sb); /* time limits (issue 24) */
		queue_add_gpus(&sb, d, "gpu", l->gpus);
		if (l->mem_mib) { /* memory shares: the claim, and the least memory of its GPUs */
			uint64_t total = UINT64_MAX;
			for (size_t i = 0; i < d->nslots; i++)
				if ((l->gpus >> i & 1) && d->set->gpus[i].mem_total >> 20 < total)
					total = d->set->gpus[i].mem_total >> 20;
			msg_add_u64(&sb, "mem", l->mem_mib);
			msg_add_u64(&sb, "mem_total", total);
			msg_add(&sb, "overuse", d->conf.share_stop ? "stop" : "warn", NULL);
			bool mps = true;
			for (size_t i = 0; i < d->nslots; i++)
				mps &= !(l->gpus >> i & 1) || d->slots[i].mps;
			if (mps)
				msg_add_u64(&sb, "mps", 1);
		}
		if (mig_uuid_of(d, l)) /* MIG instances */
			msg_add(&sb, "mig", mig_uuid_of(d, l), NULL);
		conn_send(d, c, &sb, fds, nfds);
		sb_free(&sb);
	}
	queue_remove(d, r);
}

void queue_leave(struct daemon *d, struct conn *c, const struct msg *m)
{
	uint64_t id = 0;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	struct request *r = find_req(d, c, id);
	if (r)
		queue_remove(d, r);
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
			queue_remove(d, d->reqs[i]);
		else
			i++;
	}
}
