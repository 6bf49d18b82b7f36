/* request.c: one request for GPUs, driven by the daemon's answers (see request.h). The exchange:
 * `acquire` -> `busy` | `error` | `queued` ... `offer`; an offer is answered with `take` (but
 * one marked `taken`: an acquire with `take 1` offered at once is granted unasked) and
 * brings `granted` with the descriptors, or `withdrawn` when the offer ran out meanwhile (the
 * request is still in line and is offered again). */
#include "lease/choose.h"
#include "lease/client.h"
#include "lease/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned long long realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* The lease a request was granted: it built it (lreq_init, lreq_on_message), so it frees it. */
void grant_free(struct grant *g)
{
	for (size_t i = 0; i < g->nfds; i++)
		if (g->fds[i] >= 0)
			close(g->fds[i]);
	g->nfds = 0;
	if (g->has_conn)
		close(g->conn);
	g->has_conn = false;
	free(g->name);
	free(g->socket);
	g->name = g->socket = NULL;
	for (char **p = g->profile_env; p && *p; p++)
		free(*p);
	free(g->profile_env);
	g->profile_env = NULL;
}

void lreq_init(struct lreq *r, uint64_t id, struct gpu_set *set, const struct config *cfg,
	       const struct grant_req *rq, uint64_t cand, unsigned count)
{
	*r = (struct lreq){.id = id, .state = LREQ_SENT, .count = count,
			   .ignore_usage = rq->ignore_usage};
	r->g = (struct grant){.set = set, .name = rq->name ? xstrdup(rq->name) : NULL,
			      .mem_mib = rq->mem_mib};
	size_t nenv = 0;
	while (rq->profile_env && rq->profile_env[nenv])
		nenv++;
	if (nenv) { /* the profile's variables: grant_env gives them to the job */
		r->g.profile_env = xcalloc(nenv + 1, sizeof *r->g.profile_env);
		for (size_t i = 0; i < nenv; i++)
			r->g.profile_env[i] = xstrdup(rq->profile_env[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(r->g.fds); i++)
		r->g.fds[i] = -1;
	struct strbuf *sb = &r->acquire;
	msg_begin(sb, "acquire");
	msg_add_u64(sb, "id", id);
	msg_add_u64(sb, "count", count);
	/* No set: the machine is not known yet and cand is every GPU (grant.c's early acquire). */
	uint64_t all = !set ? cand : set->ngpus >= 64 ? ~0ULL : (1ULL << set->ngpus) - 1;
	for (size_t i = 0; cand != all && i < set->ngpus; i++)
		if (cand >> i & 1)
			msg_add(sb, "gpu", set->gpus[i].uuid, NULL);
	if (rq->min_free_mib)
		msg_add_u64(sb, "min_free", rq->min_free_mib);
	if (rq->max_util >= 0)
		msg_add_u64(sb, "max_util", (uint64_t)rq->max_util);
	if (rq->mig_uuid) /* MIG instances: the daemon resolves them */
		msg_add(sb, "mig_uuid", rq->mig_uuid, NULL);
	if (rq->mig_slot)
		msg_add(sb, "mig_slot", rq->mig_slot, NULL);
	if (rq->mig_profile)
		msg_add(sb, "mig_profile", rq->mig_profile, NULL);
	if (rq->mem_mib) { /* memory shares: best fit unless --prefer says how to spread */
		msg_add_u64(sb, "mem", rq->mem_mib);
		if (rq->prefer < 0)
			msg_add_u64(sb, "pack", 1);
	}
	if (rq->ignore_usage)
		msg_add_u64(sb, "ignore_usage", 1);
	/* Only an order the user chose (option, profile, config file): else the daemon's default
	 * ([daemon] prefer, topology unless the admin says otherwise; issue 26). */
	static const char *const prefers[] = {"free-memory", "index", "util", "topology"};
	int prefer = rq->prefer >= 0 ? rq->prefer : -1;
	for (size_t i = 0; prefer < 0 && i < cfg->nsettings; i++)
		if (!strcmp(cfg->settings[i].key, "defaults.prefer"))
			prefer = (int)cfg->prefer;
	if (prefer >= 0 && prefer < (int)ARRAY_SIZE(prefers))
		msg_add(sb, "prefer", prefers[prefer], NULL);
	if (rq->wait >= 0 && !rq->dry_run)
		msg_add_u64(sb, "wait", 1);
	if (rq->dry_run)
		msg_add_u64(sb, "dry", 1);
	else /* issue 22: an offer made at once is taken for us (`taken`): one round trip fewer */
		msg_add_u64(sb, "take", 1);
	msg_add(sb, "kind", rq->kind ? rq->kind : "run", NULL);
	const char *label = rq->label ? rq->label : rq->name;
	if (label)
		msg_add(sb, "name", label, NULL);
	if (rq->command)
		msg_add(sb, "command", rq->command, NULL);
	if (rq->time_limit > 0) /* --time (issue 24) */
		msg_add_u64(sb, "time_ms", (uint64_t)(rq->time_limit * 1000 + 0.5));
}

void lreq_message(const struct lreq *r, struct strbuf *out)
{
	sb_add(out, r->acquire.buf, r->acquire.len);
	if (r->ticket[0])
		msg_add(out, "ticket", r->ticket, NULL);
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

/* The offer's placement, cpus and numa (issue 26): kept as said when they fit and are plain text
 * (a list of CPUs, of nodes), else left empty. */
static void placement_of(struct grant *g, const struct msg *m)
{
	const char *p = msg_get(m, "placement"), *c = msg_get(m, "cpus"), *n = msg_get(m, "numa");
	g->placement[0] = g->cpus[0] = g->numa[0] = '\0';
	if (p && strlen(p) < sizeof g->placement)
		snprintf(g->placement, sizeof g->placement, "%s", p);
	if (c && strlen(c) < sizeof g->cpus && strspn(c, "0123456789,-") == strlen(c))
		snprintf(g->cpus, sizeof g->cpus, "%s", c);
	if (n && strlen(n) < sizeof g->numa && strspn(n, "0123456789,") == strlen(n))
		snprintf(g->numa, sizeof g->numa, "%s", n);
}

/* MIG instances: the instance granted ("mig MIG-<uuid>"), a word of the daemon's. */
static void take_mig(struct grant *g, const struct msg *m)
{
	const char *u = msg_get(m, "mig");
	if (u && strlen(u) < sizeof g->mig_uuid && !strncmp(u, "MIG-", 4) && !strpbrk(u, ",= \n"))
		snprintf(g->mig_uuid, sizeof g->mig_uuid, "%s", u);
}

static int fail(struct lreq *r)
{
	r->state = LREQ_FAILED;
	return -1;
}

int lreq_on_message(struct lreq *r, const struct msg *m, const int *fds, size_t nfds,
		    struct strbuf *out, struct gpu_error *err)
{
	const char *verb = msg_verb(m);
	uint64_t v;
	if (!strcmp(verb, "granted") && r->state != LREQ_DONE) {
		if (!gpus_of(&r->g, m, err)) {
			for (size_t i = 0; i < nfds; i++)
				close(fds[i]);
			return fail(r);
		}
		if (!take_fds(&r->g, m, fds, nfds, err))
			return fail(r);
		r->g.leased_at = msg_get_u64(m, "offered", UINT64_MAX, &v) ? v : realtime_ns();
		/* time limits (issue 24): when the lease ends, and the grace before SIGKILL */
		r->g.until_ns = msg_get_u64(m, "until", UINT64_MAX, &v) ? v : 0;
		r->g.grace = msg_get_u64(m, "grace_ms", 86400000ULL, &v) ? (double)v / 1000 : 10;
		if (msg_get_u64(m, "mem", UINT64_MAX, &v))
			r->g.mem_mib = v;
		if (msg_get_u64(m, "mem_total", UINT64_MAX, &v))
			r->g.mem_total_mib = v;
		r->g.stop_over = msg_get(m, "overuse") && !strcmp(msg_get(m, "overuse"), "stop");
		take_mig(&r->g, m);
		r->g.mps = msg_get_u64(m, "mps", 1, &v) && v;
		r->g.self_ok = msg_get_u64(m, "commit_self", 1, &v) && v;
		r->state = LREQ_DONE;
		return 1;
	}
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]); /* only a grant carries descriptors */
	if (!strcmp(verb, "would") || !strcmp(verb, "offer"))
		placement_of(&r->g, m);
	if (!strcmp(verb, "would")) {
		if (!gpus_of(&r->g, m, err))
			return fail(r);
		take_mig(&r->g, m);
		if (msg_get_u64(m, "mem_total", UINT64_MAX, &v)) /* memory shares: a dry run's */
			r->g.mem_total_mib = v;
		r->state = LREQ_DONE;
		return 1;
	}
	if (!strcmp(verb, "offer")) {
		if (msg_get_u64(m, "taken", 1, &v) && v)
			return 0; /* issue 22: the daemon took it for us; `granted` follows */
		msg_begin(out, "take");
		msg_add_u64(out, "id", r->id);
		msg_add_u64(out, "offer", msg_get_u64(m, "offer", UINT64_MAX, &v) ? v : 0);
		return 0;
	}
	if (!strcmp(verb, "queued")) {
		if (r->state == LREQ_SENT && !r->g.queued_at)
			r->g.queued_at = msg_get_u64(m, "arrived", UINT64_MAX, &v) ? v : realtime_ns();
		r->state = LREQ_QUEUED;
		const char *t = msg_get(m, "ticket");
		if (t && strlen(t) < sizeof r->ticket)
			snprintf(r->ticket, sizeof r->ticket, "%s", t);
		if (msg_get_u64(m, "position", UINT32_MAX, &v))
			r->position = (size_t)v;
		return 0;
	}
	if (!strcmp(verb, "busy")) {
		grant_explain_busy(r->g.set, r->ignore_usage, r->count, m, err);
		return fail(r);
	}
	if (!strcmp(verb, "error")) {
		msg_error_read(m, "the daemon refused the request", err);
		return fail(r);
	}
	return 0; /* withdrawn, pong, left: nothing to do */
}

void lreq_take_grant(struct lreq *r, struct grant *g)
{
	*g = r->g;
	r->g = (struct grant){.set = g->set};
	for (size_t i = 0; i < ARRAY_SIZE(r->g.fds); i++)
		r->g.fds[i] = -1;
}

void lreq_free(struct lreq *r)
{
	sb_free(&r->acquire);
	grant_free(&r->g);
}
