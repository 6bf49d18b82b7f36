/* list.c: what the daemon tells about its state: `list` for clients (leases, GPUs held
 * by unknown processes, the queue in the order it would be served; or only the asker's own
 * places in it), and the machine's job-id counter it keeps (`jobid`). The queue file that lets
 * waiters keep their place across a restart is queuefile.c's. */
#include "daemon/daemon.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIST_CHUNK 60000           /* bytes per `list` message, well under PROTO_MAX_MSG */
#define LIST_LINES (PROTO_MAX_LINES - 16) /* lines per `list` message (a record has at most 9) */
#define LIST_HEAD 32               /* waiters at the head of the queue everyone sees in full */
#define LIST_WAITER_BYTES (256u << 10) /* waiters' records per answer; past it, counted per user */
#define LIST_CACHE 8               /* answers kept rendered (one per asking user) */
#define LIST_BURST 100.0           /* `list` answers per user at once, then LIST_RATE a second */
#define LIST_RATE 50.0
#define LIST_USER_UNREAD (4u << 20) /* answers queued unread to one user's connections, in all */
#define JOB_IDS_PER_CALL 100000    /* `jobid`: ids one ask may get */
#define JOB_ID_SKIP_MAX (1ULL << 20) /* ids one user's `min` may make the counter skip, in all */
#define JOB_IDS_BURST 100000.0     /* ids a user gets at once, then JOB_IDS_RATE a second */
#define JOB_IDS_RATE 1000.0
#define JOB_IDS_AHEAD 1000         /* the queue file says ids continue this far past the counter */

/* A record is at most: its first line (under 256 bytes), a name and a command of the bounds
 * (daemon.h) with every byte escaped (%XX), and up to GPU_MAX UUIDs (95 bytes each, escaped) on
 * lines of their own. A part always has room for one, so a part never passes PROTO_MAX_MSG. */
#define LIST_RECORD_MAX (256 + 3 * (REQ_NAME_MAX + REQ_COMMAND_MAX) + 16 + GPU_MAX * (3 * 95 + 1) + 64)
_Static_assert(LIST_RECORD_MAX + 64 < LIST_CHUNK, "a `list` record must fit in a part");
_Static_assert(LIST_CHUNK + 64 < PROTO_MAX_MSG, "a `list` part must fit in a message");

/* What `list` and `jobid` keep per user (one entry per user who asked: bounded by the users),
 * and the answers kept rendered: a flood of `list` from one user costs a copy, not a render. */
struct asker {
	uid_t uid;
	double tokens, at;        /* `list` answers left (LIST_BURST, refilled at LIST_RATE/s) */
	double ids, ids_at;       /* job ids left (JOB_IDS_BURST, refilled at JOB_IDS_RATE/s) */
	uint64_t skipped;         /* job ids this user's `min` made the counter skip */
};

struct list_cache {
	bool used;
	uid_t uid;                /* the view of this user (their own waiters in full) */
	uint64_t fp;              /* of the state it shows (fingerprint) */
	double last;              /* monotonic: when last asked for (the least recent goes) */
	struct strbuf *parts;     /* each a message without its first line ("list" and the id) */
	size_t nparts;
};

struct list_state {
	struct asker *askers;
	size_t naskers, askers_cap;
	struct list_cache cache[LIST_CACHE];
};

static void cache_clear(struct list_cache *e)
{
	for (size_t i = 0; i < e->nparts; i++)
		sb_free(&e->parts[i]);
	free(e->parts);
	*e = (struct list_cache){0};
}

void list_state_free(struct list_state *ls)
{
	if (!ls)
		return;
	for (size_t i = 0; i < LIST_CACHE; i++)
		cache_clear(&ls->cache[i]);
	free(ls->askers);
	free(ls);
}

static struct list_state *lstate(struct daemon *d)
{
	if (!d->list)
		d->list = xcalloc(1, sizeof *d->list);
	return d->list;
}

static struct asker *asker_of(struct daemon *d, uid_t uid)
{
	struct list_state *ls = lstate(d);
	for (size_t i = 0; i < ls->naskers; i++)
		if (ls->askers[i].uid == uid)
			return &ls->askers[i];
	ls->askers = grow_array(ls->askers, &ls->askers_cap, ls->naskers + 1, sizeof *ls->askers);
	struct asker *a = &ls->askers[ls->naskers++];
	*a = (struct asker){.uid = uid, .tokens = LIST_BURST, .at = d->now, .ids = JOB_IDS_BURST,
			    .ids_at = d->now};
	return a;
}

/* A token bucket: refills at rate up to burst; takes up to want, at least 1 when there is 1. */
static double bucket_take(double *tokens, double *at, double now, double rate, double burst,
			  double want)
{
	*tokens += (now - *at) * rate;
	*at = now;
	if (*tokens > burst)
		*tokens = burst;
	double got = *tokens < want ? (double)(uint64_t)*tokens : want;
	*tokens -= got;
	return got;
}

static const char *state_name(enum req_state s)
{
	return s == R_OFFERED ? "offered" : s == R_SKIPPED ? "stopped" : s == R_ORPHAN ? "returning"
									   : "waiting";
}

/* Continuation lines of a record: `KEY uuid uuid ...`, 15 per line. Returns how many lines. */
size_t list_gpu_lines(struct strbuf *sb, const struct daemon *d, const char *key, uint64_t mask)
{
	size_t k = 0;
	for (size_t i = 0; i < d->nslots; i++) {
		if (!(mask >> i & 1))
			continue;
		if (k++ % 15 == 0)
			msg_key(sb, key);
		msg_word(sb, d->slots[i].uuid);
	}
	return (k + 14) / 15;
}

/* memory shares (issue 23): "lmem MIB OVER" and "luse" lines (each GPU's use by the share's
 * processes, MiB, in lgpu's order, 15 a line). Returns the lines added. */
static size_t share_lines(struct strbuf *sb, const struct daemon *d, const struct lease *l)
{
	msg_key(sb, "lmem");
	msg_word_u64(sb, l->mem_mib);
	msg_word(sb, l->over ? "over" : "within");
	size_t k = 0;
	for (size_t i = 0; i < d->nslots; i++) {
		if (!(l->gpus >> i & 1))
			continue;
		if (k++ % 15 == 0)
			msg_key(sb, "luse");
		msg_word_u64(sb, l->used ? l->used[i] : 0);
	}
	return 1 + (k + 14) / 15;
}

/* The answer being rendered: parts, each bounded in bytes and lines. */
struct render {
	struct list_cache *e;
	struct strbuf rec;        /* the record being added */
	size_t lines;             /* of the current part, its first line and "end" counted */
};

static struct strbuf *cur_part(struct render *x)
{
	struct list_cache *e = x->e;
	if (!e->nparts) {
		e->parts = xcalloc(1, sizeof *e->parts);
		e->nparts = 1;
		x->lines = 3;
	}
	return &e->parts[e->nparts - 1];
}

/* Adds x->rec to the answer, in a new part when this one has no room for it: the room is
 * checked with the record's real size (LIST_RECORD_MAX bounds it). */
static void put(struct render *x, size_t lines)
{
	struct strbuf *p = cur_part(x);
	if (p->len + 1 + x->rec.len > LIST_CHUNK || x->lines + lines > LIST_LINES) {
		struct list_cache *e = x->e;
		e->parts = xrealloc(e->parts, (e->nparts + 1) * sizeof *e->parts);
		e->parts[e->nparts++] = (struct strbuf){0};
		p = &e->parts[e->nparts - 1];
		x->lines = 3;
	}
	sb_addc(p, '\n');
	sb_add(p, x->rec.buf, x->rec.len);
	x->lines += lines;
	sb_reset(&x->rec);
}

/* Waiters not shown in full, counted per user (in the order their first one comes). */
struct wsum {
	uid_t uid;
	size_t count, first;
	time_t oldest;
};

/* What uid is told: the leases, GPUs held by unknown processes, the head of the queue in full,
 * uid's own waiters in full up to LIST_WAITER_BYTES, and the others counted per user ("wsum
 * uid count first-position oldest-since"): another user's thousands of waiters cost this answer one line. */
static void render(struct daemon *d, uid_t uid, struct list_cache *e)
{
	struct render x = {.e = e};
	char n[8][24];
	cur_part(&x);
	msg_add_u64(&x.rec, "daemon", (uint64_t)getpid());
	msg_add_u64(&x.rec, "private", d->private_mode);
	guard_describe(d, &x.rec); /* the device guard (issue 25): at most 9 lines */
	put(&x, 11);
	if (d->state_error[0]) { /* its state is not being saved: the list would not survive it */
		msg_add(&x.rec, "unsaved", d->state_error, NULL);
		put(&x, 1);
	}
	for (size_t i = 0; i < d->nleases; i++) {
		const struct lease *l = d->leases[i];
		snprintf(n[0], sizeof n[0], "%u", (unsigned)l->uid);
		snprintf(n[1], sizeof n[1], "%d", (int)l->pid);
		snprintf(n[2], sizeof n[2], "%llu", l->start);
		snprintf(n[3], sizeof n[3], "%d", (int)lease_bound_now(l));
		snprintf(n[4], sizeof n[4], "%lld", (long long)l->since);
		msg_add(&x.rec, "lease", l->id, n[0], n[1], n[2], n[3], l->kind, n[4], NULL);
		if (l->name)
			msg_add(&x.rec, "lname", l->name, NULL);
		if (l->command)
			msg_add(&x.rec, "lcmd", l->command, NULL);
		size_t extra = idle_list_lease(d, l, &x.rec); /* issue 24: limit, idleness */
		if (l->mem_mib) /* memory shares (issue 23): the claim, over it, and each GPU's use */
			extra += share_lines(&x.rec, d, l);
		if (mig_uuid_of(d, l)) { /* MIG instances: the instance */
			msg_add(&x.rec, "lmig", mig_uuid_of(d, l), NULL);
			extra++;
		}
		put(&x, 3 + extra + list_gpu_lines(&x.rec, d, "lgpu", l->gpus));
	}
	/* memory shares: per GPU with shares, how many, their claims, the use outside them and
	 * the room left to claim ("gshare uuid count claimed outside room") */
	for (size_t i = 0; i < d->nslots; i++)
		if (d->slots[i].nshares) {
			const struct slot *sl = &d->slots[i];
			int64_t room = (int64_t)(d->set->gpus[i].mem_total >> 20) - (int64_t)sl->claimed_mib -
				       (int64_t)sl->outside_mib - (int64_t)d->conf.free.share_margin_mib;
			snprintf(n[0], sizeof n[0], "%u", sl->nshares);
			snprintf(n[1], sizeof n[1], "%llu", (unsigned long long)sl->claimed_mib);
			snprintf(n[2], sizeof n[2], "%llu", (unsigned long long)sl->outside_mib);
			snprintf(n[3], sizeof n[3], "%lld", (long long)(room > 0 ? room : 0));
			msg_add(&x.rec, "gshare", sl->uuid, n[0], n[1], n[2], n[3], NULL);
			put(&x, 1);
		}
	for (size_t i = 0; i < d->nslots; i++)
		if (d->slots[i].held_unknown) {
			msg_add(&x.rec, "held", d->slots[i].uuid, NULL);
			put(&x, 1);
		}
	/* The waiters in the order they would be served, their positions that order's. */
	msg_add(&x.rec, "queue", d->conf.queue == QUEUE_FIFO ? "fifo" : "fair", NULL);
	if (d->conf.queue != QUEUE_FIFO) /* issue 24: which fair rule */
		msg_add(&x.rec, "fairrule", d->conf.queue == QUEUE_FAIR ? "past-use" : "held", NULL);
	put(&x, d->conf.queue != QUEUE_FIFO ? 2 : 1);
	struct request **w;
	size_t nw = queue_in_order(d, &w), bytes = 0, nsum = 0;
	struct wsum *sum = NULL;
	for (size_t i = 0; i < nw; i++) {
		const struct request *r = w[i];
		if ((i >= LIST_HEAD && r->uid != uid) || bytes > LIST_WAITER_BYTES) {
			size_t k = 0;
			while (k < nsum && sum[k].uid != r->uid)
				k++;
			if (k == nsum) {
				sum = xrealloc(sum, (nsum + 1) * sizeof *sum);
				sum[nsum++] = (struct wsum){.uid = r->uid, .first = i + 1, .oldest = r->since};
			}
			sum[k].count++;
			if (r->since < sum[k].oldest)
				sum[k].oldest = r->since;
			continue;
		}
		snprintf(n[0], sizeof n[0], "%llu", (unsigned long long)r->seq);
		snprintf(n[1], sizeof n[1], "%zu", i + 1);
		snprintf(n[2], sizeof n[2], "%u", (unsigned)r->uid);
		snprintf(n[3], sizeof n[3], "%d", (int)r->pid);
		snprintf(n[4], sizeof n[4], "%u", r->req.count);
		snprintf(n[5], sizeof n[5], "%lld", (long long)r->since);
		msg_add(&x.rec, "waiter", n[0], n[1], n[2], n[3], n[4], n[5], state_name(r->state),
			r->kind, NULL);
		if (r->name)
			msg_add(&x.rec, "wname", r->name, NULL);
		if (r->command)
			msg_add(&x.rec, "wcmd", r->command, NULL);
		/* Why it holds no GPUs back, or that it is the head (sched.c). */
		static const char *const notes[] = {[N_HEAD] = "head", [N_OWN] = "own-leases",
			[N_EXPIRED] = "reserve-expired", [N_BACKOFF] = "backed-off"};
		if (r->state == R_WAITING && r->note != N_NONE)
			msg_add(&x.rec, "wnote", notes[r->note], NULL);
		size_t lines = 4 + list_gpu_lines(&x.rec, d, "wgpu", r->req.cand);
		lines += idle_list_waiter(d, r, &x.rec); /* issue 24: limit, start, past use */
		bytes += x.rec.len;
		put(&x, lines);
	}
	for (size_t k = 0; k < nsum; k++) {
		snprintf(n[0], sizeof n[0], "%u", (unsigned)sum[k].uid);
		snprintf(n[1], sizeof n[1], "%zu", sum[k].count);
		snprintf(n[2], sizeof n[2], "%zu", sum[k].first);
		snprintf(n[3], sizeof n[3], "%lld", (long long)sum[k].oldest);
		msg_add(&x.rec, "wsum", n[0], n[1], n[2], n[3], NULL);
		put(&x, 1);
	}
	free(sum);
	free(w);
	sb_free(&x.rec);
	sb_adds(&e->parts[e->nparts - 1], "\nend");
}

/* A fingerprint of everything `list` shows (and of what the queue's order depends on): an
 * answer rendered for the same fingerprint is still true. Cheap next to rendering. */
static uint64_t fingerprint(const struct daemon *d)
{
	uint64_t h = 1469598103934665603ULL;
#define MIX(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ULL)
	MIX(d->nleases);
	for (size_t i = 0; i < d->nleases; i++) {
		const struct lease *l = d->leases[i];
		MIX((uintptr_t)l); MIX(l->pid); MIX(lease_bound_now(l)); MIX(l->start); MIX(l->gpus); MIX(l->fifo >= 0);
		/* issue 24: the limit, and idleness (changes only as it starts or ends) */
		MIX(l->until_ns); MIX(l->busy_at > 0); MIX(l->idle_since_ns); MIX(l->idle_warned);
		MIX(l->idle_released);
		for (const char *p = l->id; *p; p++) /* a new lease where an old one was freed */
			MIX(*p);
	}
	for (size_t i = 0; i < d->nslots; i++)
		MIX(d->slots[i].held_unknown);
	/* memory shares (issue 23) */
	for (size_t i = 0; i < d->nleases; i++) {
		const struct lease *l = d->leases[i];
		MIX(l->mem_mib); MIX(l->over); MIX(l->mig);
		for (size_t k = 0; l->used && k < d->nslots; k++)
			MIX(l->used[k]);
	}
	for (size_t i = 0; i < d->nslots; i++) {
		MIX(d->slots[i].nshares); MIX(d->slots[i].claimed_mib); MIX(d->slots[i].outside_mib);
	}
	MIX(d->nreqs);
	for (size_t i = 0; i < d->nreqs; i++) {
		const struct request *r = d->reqs[i];
		MIX((uintptr_t)r); MIX(r->seq); MIX(r->state); MIX(r->offer); MIX(r->req.queued);
		MIX(r->req.head); MIX(r->req.capped); MIX(r->req.count); MIX(r->pid); MIX(r->note);
	}
	for (size_t i = 0; i < d->nserved; i++) {
		MIX(d->served[i].uid); MIX(d->served[i].at);
		MIX(d->served[i].backoff_until > d->now); /* backed off: listed last */
	}
	MIX(d->conf.queue);
	/* issue 24: the head's estimated start (to the second) */
	MIX(d->head_seq); MIX(d->head_start < 0); MIX((int64_t)(d->head_start_at + d->head_start));
	MIX(d->past_at / 1000000000ULL); /* past use, as of its last advance (to the second) */
	for (const char *p = d->state_error; *p; p++) /* the `unsaved` line */
		MIX(*p);
	MIX(guard_fingerprint(d)); /* the device guard's lines */
#undef MIX
	return h;
}

/* The answer for uid: kept rendered while the state it shows holds. */
static const struct list_cache *answer(struct daemon *d, uid_t uid)
{
	struct list_state *ls = lstate(d);
	uint64_t fp = fingerprint(d);
	struct list_cache *e = NULL, *old = &ls->cache[0];
	for (size_t i = 0; i < LIST_CACHE && !e; i++) {
		struct list_cache *c = &ls->cache[i];
		if (c->used && c->uid == uid)
			e = c;
		else if (!c->used || (old->used && c->last < old->last))
			old = c;
	}
	if (e && e->fp != fp)
		cache_clear(e);
	if (!e)
		cache_clear(e = old);
	if (!e->used) {
		render(d, uid, e);
		*e = (struct list_cache){.used = true, .uid = uid, .fp = fp, .parts = e->parts,
					 .nparts = e->nparts};
	}
	e->last = d->now;
	return e;
}

const struct strbuf *list_public(struct daemon *d, size_t *nparts, uint64_t *fp)
{
	leases_reap(d);
	/* no user waits as uid -1: only what everyone is shown of the queue */
	const struct list_cache *e = answer(d, (uid_t)-1);
	*nparts = e->nparts;
	*fp = e->fp;
	return e->parts;
}

static void places_answer(struct daemon *d, struct conn *c, uint64_t id);

void queue_list(struct daemon *d, struct conn *c, const struct msg *m)
{
	uint64_t id = 0;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	/* A client that has not read its last answer gets no new one: asking again and again
	 * without reading must cost the daemon nothing but this line. */
	if (c->p.out) {
		conn_error(d, c, id, EXIT_BUSY, "list: your previous answer is still unread; read it "
			   "first (or ask on a new connection)");
		return;
	}
	uint64_t v;
	if (msg_get_u64(m, "places", 1, &v) && v)
		places_answer(d, c, id);
	else
		list_answer(d, c, id);
}

/* `list places 1` (issue 22: `gpuctl jobs`): only the asker's own named waiters, one line each
 * ("wplace POSITION UID KIND NAME"), where the full list renders every field of them all and
 * the client decodes it. Bounded as the full list is: the rate, and LIST_WAITER_BYTES (past it
 * a count, "wmore N"). */
static void places_answer(struct daemon *d, struct conn *c, uint64_t id)
{
	struct asker *a = asker_of(d, c->p.uid);
	if (bucket_take(&a->tokens, &a->at, d->now, LIST_RATE, LIST_BURST, 1) < 1) {
		conn_error(d, c, id, EXIT_BUSY, "list: your user asked for over %.0f lists a second; "
			   "try again in a moment", LIST_RATE);
		return;
	}
	struct request **w;
	size_t nw = queue_in_order(d, &w), bytes = 0, lines = 0, more = 0;
	struct strbuf sb = {0};
	char n[2][24];
	msg_begin(&sb, "list");
	msg_add_u64(&sb, "id", id);
	for (size_t i = 0; i < nw && !c->p.dead; i++) {
		const struct request *r = w[i];
		if (r->uid != c->p.uid || !r->name)
			continue;
		if (bytes > LIST_WAITER_BYTES) {
			more++;
			continue;
		}
		if (sb.len > LIST_CHUNK - LIST_RECORD_MAX || lines >= LIST_LINES) {
			conn_send(d, c, &sb, NULL, 0);
			msg_begin(&sb, "list");
			msg_add_u64(&sb, "id", id);
			lines = 0;
		}
		size_t before = sb.len;
		snprintf(n[0], sizeof n[0], "%zu", i + 1);
		snprintf(n[1], sizeof n[1], "%u", (unsigned)r->uid);
		msg_add(&sb, "wplace", n[0], n[1], r->kind, r->name, NULL);
		bytes += sb.len - before;
		lines++;
	}
	if (more)
		msg_add_u64(&sb, "wmore", more);
	sb_adds(&sb, "\nend");
	if (!c->p.dead)
		conn_send(d, c, &sb, NULL, 0);
	sb_free(&sb);
	free(w);
}

void list_warm(struct daemon *d, const struct conn *c)
{
	/* only where list_answer will send it: a token left (not taken here), the user's unread
	 * answers under their bound; else a render nobody gets would cost the daemon */
	const struct asker *a = asker_of(d, c->p.uid);
	if (a->tokens + (d->now - a->at) * LIST_RATE < 1)
		return;
	if (conn_user_unread(d, c->p.uid) > LIST_USER_UNREAD)
		return;
	leases_reap(d);
	answer(d, c->p.uid);
}

void list_answer(struct daemon *d, struct conn *c, uint64_t id)
{
	struct asker *a = asker_of(d, c->p.uid);
	if (bucket_take(&a->tokens, &a->at, d->now, LIST_RATE, LIST_BURST, 1) < 1) {
		conn_error(d, c, id, EXIT_BUSY, "list: your user asked for over %.0f lists a second; "
			   "try again in a moment", LIST_RATE);
		return;
	}
	leases_reap(d);
	const struct list_cache *e = answer(d, c->p.uid);
	/* What this user's connections have not read, in all: many connections that ask and never
	 * read would otherwise each hold an answer (MAX_OUT_BYTES apiece) in the daemon. */
	size_t unread = conn_user_unread(d, c->p.uid), bytes = 0;
	for (size_t i = 0; i < e->nparts; i++)
		bytes += e->parts[i].len;
	if (unread && unread + bytes > LIST_USER_UNREAD) {
		conn_error(d, c, id, EXIT_BUSY, "list: %zu KiB of answers to your user's connections are "
			   "unread; read them (or close those connections) first", unread >> 10);
		return;
	}
	struct strbuf sb = {0};
	for (size_t i = 0; i < e->nparts && !c->p.dead; i++) {
		msg_begin(&sb, "list");
		msg_add_u64(&sb, "id", id);
		sb_add(&sb, e->parts[i].buf, e->parts[i].len);
		conn_send(d, c, &sb, NULL, 0);
	}
	sb_free(&sb);
}

/* ---- job ids ---- */

/* Job ids for the users' job runners (`gpuctl submit`): one counter for the machine, so a job id
 * names one job whoever asks about it. `min` is the runner's highest id so far plus one: after a
 * reboot resets this counter, a user's new jobs still never take an id their old records hold.
 * One user's asks must not move everyone's ids far: a `min` moves the counter only by what that
 * user may still skip (JOB_ID_SKIP_MAX in all, per user and daemon), and beyond it is ignored
 * (the runner then continues above its own records); ids are handed out per user at most
 * JOB_IDS_RATE a second after a burst of JOB_IDS_BURST (a smaller block, at least one id). */

void queue_job_ids(struct daemon *d, struct conn *c, const struct msg *m)
{
	uint64_t id = 0, n = 1, min = 0;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	if ((msg_line(m, "count") && (!msg_get_u64(m, "count", JOB_IDS_PER_CALL, &n) || !n)) ||
	    (msg_line(m, "min") && !msg_get_u64(m, "min", UINT64_MAX, &min))) {
		conn_error(d, c, id, EXIT_USAGE, "jobid: count is 1-%d, min a number", JOB_IDS_PER_CALL);
		return;
	}
	if (!d->next_job)
		d->next_job = 1;
	struct asker *a = asker_of(d, c->p.uid);
	if (min > d->next_job && min - d->next_job <= JOB_ID_SKIP_MAX - a->skipped) {
		a->skipped += min - d->next_job;
		d->next_job = min;
	} else if (min > d->next_job) {
		conn_log(d, "uid %u (pid %d) asked job ids from %llu; it may skip %llu more: ignored",
			 (unsigned)c->p.uid, (int)c->p.pid, (unsigned long long)min,
			 (unsigned long long)(JOB_ID_SKIP_MAX - a->skipped));
	}
	if (d->next_job > UINT64_MAX / 2) { /* unreachable at the rates above; never wrap */
		conn_error(d, c, id, EXIT_FAIL, "jobid: the daemon's job ids are spent");
		return;
	}
	double got = bucket_take(&a->ids, &a->ids_at, d->now, JOB_IDS_RATE, JOB_IDS_BURST, (double)n);
	n = got >= 1 ? (uint64_t)got : 1;
	struct strbuf sb = {0};
	msg_begin(&sb, "jobid");
	msg_add_u64(&sb, "id", id);
	msg_add_u64(&sb, "first", d->next_job);
	msg_add_u64(&sb, "count", n);
	conn_send(d, c, &sb, NULL, 0);
	sb_free(&sb);
	d->next_job += n;
	/* The counter is saved ahead of itself, not with each ask: a save rewrites the whole queue
	 * file (a user's 300 maximal waiters: 4 MB), and asks answered with one id each once the
	 * bucket is empty are not refused, so one user looping on `jobid` kept the daemon writing
	 * ~30 MB/s, at a core, and every other request waited behind a save. A restart continues
	 * past the saved mark: ids stay unique, with a gap of at most JOB_IDS_AHEAD. */
	if (d->next_job > d->jobs_saved) {
		d->jobs_saved = d->next_job + JOB_IDS_AHEAD;
		d->queue_dirty = true;
	}
}
