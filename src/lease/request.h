/* request.h: one request for GPUs to the gpuctl daemon, as a state machine that the daemon's
 * answers drive: the `acquire` (built once), `queued` (ticket, place, arrival time), `offer`
 * (answered with `take` at once), then `granted` (lease, token, GPUs and the descriptors that are
 * the lease), or `busy` / `error`. It does no I/O of its own: its owner sends what lreq_message
 * and lreq_on_message give it, on a connection it owns, so one connection can carry many
 * requests (their ids differ). `run` and `env` hold one (grant.c); the job runner holds one per
 * queued job (runner/runner.c). After a lost connection (a daemon restart), sending lreq_message again
 * is the rejoin: with the ticket, the daemon gives the request its place back.
 *
 * What is asked (struct grant_req) and what a granted request holds (struct grant) are
 * choose.h's, below it; lreq_on_message fills a grant and grant_free, here, releases it. */
#ifndef GPUCTL_LREQ_H
#define GPUCTL_LREQ_H

#include "lease/choose.h"
#include "config/config.h"
#include "machine/gpu.h"
#include "base/proto.h"


/* What the options of `run`, `env` and `submit` give (cmd/leaseopts.c reads them from the
 * command line): the request, and what only the command itself uses. */
struct lease_opts {
	struct grant_req rq;
	const char *profile;
	bool uuid, wait_given, quiet;
	bool cpu_ok, cpu_only;   /* issue 24: -n 0 allowed (submit), and given: a CPU-only step */
	bool bind_cpus, no_bind;   /* issue 26: run/submit --bind-cpus, --no-bind-cpus */
};


/* Closes this process's copies of the lease (the lease lives on in the holder) and frees g. */
void grant_free(struct grant *g);

enum lreq_state {
	LREQ_SENT,               /* asked; no answer yet */
	LREQ_QUEUED,             /* waiting in the daemon's queue (offers come and may be withdrawn) */
	LREQ_DONE,               /* granted (r->g holds the lease), or a dry run's choice */
	LREQ_FAILED,             /* refused: busy, an error */
};

struct lreq {
	uint64_t id;             /* the request's id on its connection */
	enum lreq_state state;
	struct strbuf acquire;   /* the request as first sent */
	char ticket[33];         /* the daemon's, once queued: rejoining keeps the place */
	size_t position;         /* in the daemon's queue, as it last said */
	unsigned count;
	bool ignore_usage;
	struct grant g;          /* filled by the answers: GPUs, lease, token, descriptors */
};

/* Builds the request for count GPUs among cand (positions in set, as grant_candidates chose).
 * set NULL: among all the daemon's GPUs (cand ~0), the set to be put in r->g.set before any
 * answer is read. */
void lreq_init(struct lreq *r, uint64_t id, struct gpu_set *set, const struct config *cfg,
	       const struct grant_req *rq, uint64_t cand, unsigned count);
/* The message that asks, or asks again after a lost connection (with the ticket once queued). */
void lreq_message(const struct lreq *r, struct strbuf *out);
/* One answer about this request (the caller matched its id). A reply to send is appended to
 * out (a `take`). 1: done (r->g holds the lease, or a dry run's choice); 0: still waiting;
 * -1: refused, err says why (a `busy` explained GPU by GPU). */
int lreq_on_message(struct lreq *r, const struct msg *m, const int *fds, size_t nfds,
		    struct strbuf *out, struct gpu_error *err);
/* Moves the lease out of r into g (r keeps nothing to close). */
void lreq_take_grant(struct lreq *r, struct grant *g);
/* Frees the request and whatever of a lease it still holds. */
void lreq_free(struct lreq *r);

#endif
