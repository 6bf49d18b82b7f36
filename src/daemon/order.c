/* order.c: the order of the daemon's queue ([daemon] queue = fair|fifo): who asks (users
 * as small indices, with the GPUs each holds now) for the scheduling pass, and the order the
 * waiters would be served in, which is what every position the daemon tells is (`list`, a
 * waiter's place), so nobody is shown a place that is not theirs. alloc.c decides the order. */
#include "daemon/daemon.h"

#include <stdlib.h>
#include <string.h>

struct uid_idx {
	uid_t uid;
	size_t i;
};

static int by_uid(const void *a, const void *b)
{
	const struct uid_idx *x = a, *y = b;
	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Index of uid in the sorted uids[n], or n. */
static size_t find_uid(const uid_t *uids, size_t n, uid_t uid)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (uids[mid] < uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && uids[lo] == uid ? lo : n;
}

/* uid's entry, made when missing (one per user ever served: bounded by the users there are). */
static struct served *served_of(struct daemon *d, uid_t uid)
{
	size_t k = 0;
	while (k < d->nserved && d->served[k].uid != uid)
		k++;
	if (k == d->nserved) {
		d->served = grow_array(d->served, &d->served_cap, d->nserved + 1, sizeof *d->served);
		d->served[d->nserved++] = (struct served){.uid = uid};
	}
	return &d->served[k];
}

void queue_served(struct daemon *d, uid_t uid)
{
	served_of(d, uid)->at = ++d->serve_clock;
}

/* The back-off of a user whose offers lapse. An honest client takes an offer within
 * milliseconds; one that does not was stopped, or asks for GPUs only to sit on them (`acquire`
 * every 50 ms, never `take`: every GPU offered to it in turn, another user's `run` refused beside
 * idle GPUs). Backed off, it is served after everyone else, has one offer open at a time (any
 * other request of its that does not wait is refused), reserves nothing as the head, and its
 * open offer is withdrawn when another user's request wants those GPUs. A stopped honest
 * waiter, resumed, is back to normal within seconds; a client that keeps not taking stays
 * backed off (the back-off doubles with each lapse, to 64 offer_timeouts). */
#define LAPSE_MEMORY 600.0         /* seconds without a lapse after which lapses are forgotten */
#define LAPSE_MAX_SHIFT 6

void queue_lapsed(struct daemon *d, uid_t uid)
{
	struct served *s = served_of(d, uid);
	if (s->lapsed_at && d->now - s->lapsed_at > LAPSE_MEMORY)
		s->lapses = 0;
	if (s->lapses < LAPSE_MAX_SHIFT)
		s->lapses++;
	s->lapsed_at = d->now;
	s->backoff_until = d->now + d->conf.offer_timeout * (double)(1u << s->lapses);
}

/* How long a user must keep nothing idle before its heads' time is forgotten: three times
 * head_reserve, at least RESERVE_MEMORY_MIN. Longer than head_reserve itself, so that pausing
 * as long as one reserved and asking again idles the GPUs a quarter of the time at most, not
 * half; and never so short that the moment between cancelling and asking again forgets it. */
#define RESERVE_MEMORY_MIN 30.0
static double reserve_memory(const struct daemon *d)
{
	double m = 3 * d->conf.head_reserve;
	return m > RESERVE_MEMORY_MIN ? m : RESERVE_MEMORY_MIN;
}

double queue_reserved(struct daemon *d, uid_t uid)
{
	for (size_t k = 0; k < d->nserved; k++)
		if (d->served[k].uid == uid) {
			struct served *s = &d->served[k];
			if (s->reserve_end && d->now - s->reserve_end > reserve_memory(d))
				s->reserved = 0;
			return s->reserved;
		}
	return 0;
}

void queue_reserve_add(struct daemon *d, uid_t uid, double secs, bool ran)
{
	struct served *s = served_of(d, uid);
	queue_reserved(d, uid);
	s->reserved = ran ? 0 : s->reserved + secs;
	s->reserve_end = d->now;
}

bool queue_backed_off(const struct daemon *d, uid_t uid, double *until)
{
	for (size_t k = 0; k < d->nserved; k++)
		if (d->served[k].uid == uid) {
			if (until)
				*until = d->served[k].backoff_until;
			return d->now < d->served[k].backoff_until;
		}
	return false;
}

size_t queue_users(const struct daemon *d, struct request *const *reqs, size_t n,
		   struct alloc_req *rq, unsigned **held, uint64_t **served)
{
	struct uid_idx *s = xmalloc((n ? n : 1) * sizeof *s);
	uid_t *uids = xmalloc((n ? n : 1) * sizeof *uids);
	size_t nu = 0;
	for (size_t i = 0; i < n; i++)
		s[i] = (struct uid_idx){reqs[i]->uid, i};
	qsort(s, n, sizeof *s, by_uid);
	for (size_t k = 0; k < n; k++) {
		if (!nu || uids[nu - 1] != s[k].uid)
			uids[nu++] = s[k].uid;
		rq[s[k].i].user = (unsigned)(nu - 1);
	}
	*held = xcalloc(nu ? nu : 1, sizeof **held);
	size_t u;
	for (size_t i = 0; i < d->nleases; i++)
		if ((u = find_uid(uids, nu, d->leases[i]->uid)) < nu)
			(*held)[u] += (unsigned)__builtin_popcountll(d->leases[i]->gpus);
	for (size_t i = 0; i < d->nreqs; i++)
		if (d->reqs[i]->state == R_OFFERED && (u = find_uid(uids, nu, d->reqs[i]->uid)) < nu)
			(*held)[u] += (unsigned)__builtin_popcountll(d->reqs[i]->offer);
	*served = xcalloc(nu ? nu : 1, sizeof **served);
	for (size_t k = 0; k < d->nserved; k++)
		if ((u = find_uid(uids, nu, d->served[k].uid)) < nu)
			(*served)[u] = d->served[k].at;
	free(uids);
	free(s);
	return nu;
}

size_t queue_in_order(const struct daemon *d, struct request ***out)
{
	size_t n = 0;
	struct request **w = xmalloc((d->nreqs ? d->nreqs : 1) * sizeof *w);
	for (size_t i = 0; i < d->nreqs; i++)
		if (d->reqs[i]->req.queued)
			w[n++] = d->reqs[i];
	*out = w;
	if (n < 2)
		return n;
	struct alloc_req *rq = xcalloc(n, sizeof *rq);
	unsigned *held;
	uint64_t *served;
	size_t nu = queue_users(d, w, n, rq, &held, &served);
	for (size_t i = 0; i < n; i++) {
		/* An open offer's GPUs are already counted as held. */
		rq[i].count = w[i]->state == R_OFFERED ? 0 : w[i]->req.count;
		/* The last pass's head is served first, in either order. */
		rq[i].queued = true;
		rq[i].head = w[i]->req.head;
		rq[i].capped = w[i]->req.capped;
		rq[i].skip = w[i]->state != R_WAITING;
	}
	size_t *order = xmalloc(n * sizeof *order);
	/* fair share by past use (issue 24) */
	double *past = usage_users((struct daemon *)d, w, n, rq, nu);
	struct alloc_queue q = {.order = d->conf.queue, .held = held, .served = served, .nusers = nu,
				.past = past};
	alloc_order(rq, n, &q, order);
	free(past);
	/* Users backed off for not taking offers are served after the others (sched.c). */
	struct request **sorted = xmalloc(n * sizeof *sorted);
	size_t m = 0;
	for (int last = 0; last < 2; last++)
		for (size_t k = 0; k < n; k++)
			if ((w[order[k]]->note == N_BACKOFF) == last)
				sorted[m++] = w[order[k]];
	free(w);
	free(order);
	free(held);
	free(served);
	free(rq);
	*out = sorted;
	return n;
}

size_t queue_position(const struct daemon *d, const struct request *r)
{
	struct request **w;
	size_t n = queue_in_order(d, &w), pos = 1;
	while (pos <= n && w[pos - 1] != r)
		pos++;
	free(w);
	return pos;
}
