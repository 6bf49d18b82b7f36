/* timelimit.c: time limits on leases and the backfill they make possible (issue 24; design:
 * daemon.h).
 *
 * - A request may say how long its lease lasts (`time_ms`: run/env/submit --time, Python's
 *   time=); one that does not gets [daemon] default_time, one over max_time is refused with the
 *   reason (Slurm's DefaultTime and MaxTime). The lease granted knows when it ends (`until`,
 *   CLOCK_REALTIME, in its record and the `granted` answer).
 * - At the limit the lease's own holder ends the job: `run`'s gpuctl, the job runner, env's
 *   holder, each the user's own process (SIGTERM, then SIGKILL kill_grace later). The daemon
 *   signals nobody: it ends the lease itself once kill_grace has passed beyond the limit
 *   (limit_timers), whoever still holds its FIFO, so a holder that was killed or ignores the
 *   limit does not keep the GPU. The daemon's log says why a lease ended.
 * - Backfill (Slurm's): the queue's head keeps the free GPUs it can use (sched.c). With limits
 *   known, the head's start can be estimated: the moment enough of the leases on its GPUs have
 *   reached their limits (plus kill_grace). A waiting request whose own limit (plus kill_grace)
 *   ends before that moment cannot delay the head, so it may run on the kept GPUs. A request
 *   without a limit never backfills, and while a lease the head needs has no limit its start
 *   is not known, so nothing backfills: the head is never delayed by a guess. */
#include "daemon/daemon.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEVER INFINITY

bool limit_request(struct daemon *d, struct conn *c, const struct msg *m, struct request *r)
{
	uint64_t ms = 0;
	const char *s = msg_get(m, "time_ms");
	if (s && (!word_u64(s, (uint64_t)1e10, &ms) || ms == 0)) {
		conn_error(d, c, r->id, EXIT_USAGE, "time_ms is a positive number of milliseconds, "
			   "not %.30s", s);
		return false;
	}
	r->time_limit = ms ? (double)ms / 1000 : d->conf.default_time;
	if (d->conf.max_time > 0 && r->time_limit > d->conf.max_time) {
		conn_error(d, c, r->id, EXIT_USAGE, "--time %.0f s is over the longest the administrator "
			   "allows (max_time %.0f s); ask for less", r->time_limit, d->conf.max_time);
		return false;
	}
	if (d->conf.max_time > 0 && !r->time_limit)
		r->time_limit = d->conf.max_time; /* no default: the maximum is the limit */
	return true;
}

void limit_granted_msg(const struct daemon *d, const struct lease *l, struct strbuf *sb)
{
	if (!l->limit)
		return;
	msg_add_u64(sb, "until", l->until_ns);
	msg_add_u64(sb, "grace_ms", (uint64_t)(d->conf.kill_grace * 1000));
}

void limit_timers(struct daemon *d, double *next)
{
	for (size_t i = 0; i < d->nleases;) {
		struct lease *l = d->leases[i];
		if (!l->limit || l->found || l->fifo < 0) {
			i++;
			continue;
		}
		double end = l->until + d->conf.kill_grace + 1;
		if (d->now >= end) {
			fprintf(stderr, "gpuctl daemon: lease %s (uid %u): its time limit (%.0f s) and "
				"kill_grace (%.0f s) have passed and its holder still holds it: ended\n",
				l->id, (unsigned)l->uid, l->limit, d->conf.kill_grace);
			lease_end(d, l); /* out of the array: i names the next one */
			continue;
		}
		if (!*next || end < *next)
			*next = end;
		i++;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double limit_head_start(const struct daemon *d, const struct alloc_gpu *g, const struct request *h,
			uint64_t avail)
{
	double ends[GPU_MAX];
	size_t n = 0;
	unsigned ready = 0;
	for (size_t i = 0; i < d->nslots; i++) {
		if (!(h->req.cand >> i & 1) || !(avail >> i & 1))
			continue;
		const struct lease *l = d->slots[i].holder;
		if (!g[i].leased && !alloc_why_not(&g[i], &h->req, &d->conf.free))
			ready++; /* free for it now (kept for it) */
		else if (l && l->limit && !l->found)
			ends[n++] = l->until + d->conf.kill_grace > d->now ? l->until + d->conf.kill_grace - d->now
									   : 0;
		else
			ends[n++] = NEVER; /* no limit, held unknown, busy for other reasons */
	}
	if (ready >= h->req.count)
		return 0;
	size_t need = h->req.count - ready;
	if (need > n)
		return -1;
	qsort(ends, n, sizeof *ends, cmp_double);
	return isinf(ends[need - 1]) ? -1 : ends[need - 1];
}

double limit_backfill(struct daemon *d, const struct alloc_gpu *g, struct alloc_req *rq,
		      const size_t *order, size_t nreqs, size_t head, uint64_t *kept, uint64_t *picks,
		      uint64_t avail, const unsigned *held)
{
	if (head >= nreqs)
		return -1;
	double est = limit_head_start(d, g, d->reqs[head], avail | *kept);
	if (est < 0 || !*kept)
		return est;
	uint64_t taken = 0;
	for (size_t i = 0; i < nreqs; i++)
		taken |= picks[i];
	unsigned cap = d->conf.max_gpus_per_user, *extra = NULL;
	if (cap) { /* what each user's picks of this pass add to what it holds */
		size_t nu = 0;
		for (size_t i = 0; i < nreqs; i++)
			if (rq[i].user + 1 > nu)
				nu = rq[i].user + 1;
		extra = xcalloc(nu ? nu : 1, sizeof *extra);
		for (size_t i = 0; i < nreqs; i++)
			extra[rq[i].user] += picks[i] ? rq[i].count : 0;
	}
	for (size_t o = 0; o < nreqs && *kept; o++) {
		size_t i = order[o];
		struct request *r = d->reqs[i];
		r->backfill = false;
		if (i == head || picks[i] || r->state != R_WAITING || !r->time_limit || rq[i].capped ||
		    rq[i].skip || r->time_limit + d->conf.kill_grace > est)
			continue;
		if (cap && held[rq[i].user] + extra[rq[i].user] + rq[i].count > cap)
			continue;
		uint64_t m = alloc_pick(g, d->nslots, &rq[i], &d->conf.free, avail & ~taken);
		if (!m)
			continue;
		picks[i] = m;
		taken |= m;
		r->backfill = (m & *kept) != 0;
		*kept &= ~m;
		if (cap)
			extra[rq[i].user] += rq[i].count;
	}
	free(extra);
	return est;
}
