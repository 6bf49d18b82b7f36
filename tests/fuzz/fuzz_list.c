/* fuzz_list.c: libFuzzer target for `list` end to end: the daemon's renderer (src/daemon/list.c)
 * over leases and waiters a fuzzer makes (names, commands and UUIDs of hostile bytes, up to the
 * daemon's maximum lengths; up to 64 GPUs, 64 leases, 400 waiters of several users), and the
 * client's parser of the parts (src/lease/view.c). Both are compiled in here, with stand-ins
 * for what they call outside (the connection, the queue's order, the client's socket). Traps
 * on a broken promise: a part over PROTO_MAX_MSG or one the decoder refuses, an answer whose
 * last part lacks "end", leases or waiters lost (every waiter listed or counted), or a listed
 * name or command that does not come back byte for byte; nor a lease's MIG instance, time
 * limit and idle state, nor the device guard's directory, state and errors (the lines of
 * issues 23-25, made by idle.c, mig.c and guard.c, compiled in too). */
#include "../../src/daemon/list.c"
#include "../../src/daemon/idle.c"
#include "../../src/daemon/mig.c"
#include "../../src/daemon/guard.c"
#include "../../src/lease/view.c"

/* ---- stand-ins: the daemon ---- */

static struct strbuf sent[4096];
static size_t nsent;

void conn_send(struct daemon *d, struct conn *c, struct strbuf *msg, const int *fds, size_t nfds)
{
	(void)d, (void)c, (void)fds, (void)nfds;
	if (nsent == ARRAY_SIZE(sent))
		abort(); /* an answer of over 4096 parts: unbounded */
	sb_add(&sent[nsent++], msg->buf, msg->len);
}

void conn_error(struct daemon *d, struct conn *c, uint64_t id, int code, const char *fmt, ...)
{
	(void)d, (void)c, (void)id, (void)code, (void)fmt;
	abort(); /* a fresh user with nothing unread is answered */
}

void conn_log(struct daemon *d, const char *fmt, ...) { (void)d, (void)fmt; }
/* The asker's connection is the only one, not in d->conns, and it has nothing unread. */
size_t conn_user_unread(const struct daemon *d, uid_t uid) { (void)d, (void)uid; return 0; }
void leases_reap(struct daemon *d) { (void)d; }
void queue_request_free(struct request *r) { free(r->name); free(r->command); free(r); }
bool daemon_write_state(struct daemon *d, const char *name, const char *buf, size_t len)
{
	(void)d, (void)name, (void)buf, (void)len;
	return true;
}

/* The lines that issues 24, 25 and 23 add to the answer are made by their own code, compiled in
 * above (idle.c: llimit, lidle, wtime, wpast, wstart; guard.c: guard, guard_error; mig.c: lmig),
 * over state the fuzzer makes; what those files call beyond it is stood in for here. */
void lease_end(struct daemon *d, struct lease *l) { (void)d, (void)l; abort(); }
void queue_usage_refresh(struct daemon *d) { (void)d; abort(); }
uint64_t queue_realtime_ns(void) { return 1700000000000000000ULL; }
double usage_of(const struct daemon *d, uid_t uid) { (void)d; return uid * 3600.5; }
void *dl_load(const char *const *sonames, const struct dl_sym *syms, size_t n, char *err, size_t len)
{
	(void)sonames, (void)syms, (void)n, (void)err, (void)len;
	return NULL;
}

size_t queue_in_order(const struct daemon *d, struct request ***out)
{
	*out = xmalloc((d->nreqs ? d->nreqs : 1) * sizeof **out);
	memcpy(*out, d->reqs, d->nreqs * sizeof **out);
	return d->nreqs;
}

/* ---- stand-ins: the client ---- */

bool dclient_open(struct dclient *dc, enum dclient_mode mode, struct gpu_error *err)
{
	(void)dc, (void)mode, (void)err;
	return false;
}
void dclient_close(struct dclient *dc) { (void)dc; }
bool dclient_send(struct dclient *dc, const struct strbuf *msg, struct gpu_error *err)
{
	(void)dc, (void)msg, (void)err;
	return false;
}
bool dclient_call(struct dclient *dc, const struct strbuf *req, struct msg *reply, struct gpu_error *err)
{
	(void)dc, (void)req, (void)reply, (void)err;
	return false;
}
int dclient_recv(struct dclient *dc, struct msg *m, int *fds, size_t *nfds, int timeout_ms,
		 const sigset_t *sigmask, struct gpu_error *err)
{
	(void)dc, (void)m, (void)fds, (void)nfds, (void)timeout_ms, (void)sigmask, (void)err;
	return -1;
}
const char *user_name(uid_t uid, char *buf, size_t len)
{
	snprintf(buf, len, "u%u", (unsigned)uid);
	return buf;
}
int pid_open(unsigned pid, unsigned long long start) { (void)pid, (void)start; return -1; }
bool pid_runs_as(unsigned pid, uid_t uid) { (void)pid, (void)uid; return false; }
bool pid_signal(int pidfd, int sig) { (void)pidfd, (void)sig; return false; }
bool pid_stat(unsigned pid, struct pid_stat *st) { (void)pid, (void)st; return false; }
bool pid_owner_is(unsigned pid, uid_t uid) { (void)pid, (void)uid; return false; }
pid_t lease_bound_now(const struct lease *l) { return l->bound; } /* (no process to look at) */

/* ---- the target ---- */

struct input {
	const uint8_t *p;
	size_t n, at;
};

static unsigned byte(struct input *in)
{
	return in->n ? in->p[in->at++ % in->n] : 0;
}

/* A string of len bytes (no NUL) from the input, or of the maximum length when a byte says. */
static char *text(struct input *in, size_t max)
{
	unsigned b = byte(in);
	size_t len = b >= 200 ? max : (b * 7 + byte(in)) % (max + 1);
	char *s = xmalloc(len + 1);
	for (size_t i = 0; i < len; i++) {
		unsigned c = byte(in);
		s[i] = (char)(c ? c : '%');
	}
	s[len] = '\0';
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size, 0};
	static struct daemon d;
	d = (struct daemon){.now = 1000};
	d.nslots = 1 + byte(&in) % GPU_MAX;
	for (size_t i = 0; i < d.nslots; i++) {
		char *u = text(&in, sizeof d.slots[i].uuid - 1);
		snprintf(d.slots[i].uuid, sizeof d.slots[i].uuid, "%s", *u ? u : "GPU-x");
		free(u);
		d.slots[i].held_unknown = byte(&in) % 5 == 0;
	}
	size_t nl = byte(&in) % (d.nslots + 1), nw = byte(&in) * 2 % 401;
	d.leases = xcalloc(nl + 1, sizeof *d.leases);
	for (size_t i = 0; i < nl; i++) {
		struct lease *l = xcalloc(1, sizeof *l);
		snprintf(l->id, sizeof l->id, "%016zx", i);
		snprintf(l->kind, sizeof l->kind, "run");
		l->uid = byte(&in) % 4;
		l->gpus = 1ULL << i | (byte(&in) % 3 == 0 ? ~0ULL >> (64 - d.nslots) : 0);
		l->name = byte(&in) % 4 ? text(&in, REQ_NAME_MAX) : NULL;
		l->command = byte(&in) % 4 ? text(&in, REQ_COMMAND_MAX) : NULL;
		if (byte(&in) % 3 == 0) { /* a MIG lease: its instance's UUID, of the longest kept */
			char *u = text(&in, sizeof l->mig_uuid - 1);
			snprintf(l->mig_uuid, sizeof l->mig_uuid, "%s", *u ? u : "MIG-x");
			free(u);
			l->mig = 1 + (int)(byte(&in) % 64);
		}
		if (byte(&in) % 2) /* time limits (issue 24) */
			l->until_ns = (uint64_t)byte(&in) << 56 | byte(&in) | 1;
		if (byte(&in) % 2) { /* idle leases: looked at; idle since, warned, released, exempt */
			l->busy_at = 1;
			l->idle_since_ns = byte(&in) % 2 ? (uint64_t)-1 - byte(&in) : 0;
			l->idle_warned = byte(&in) % 2;
			l->idle_released = byte(&in) % 2;
			l->exempt = (signed char)(byte(&in) % 3) - 1;
		}
		d.leases[d.nleases++] = l;
	}
	d.reqs = xcalloc(nw + 1, sizeof *d.reqs);
	for (size_t i = 0; i < nw; i++) {
		struct request *r = xcalloc(1, sizeof *r);
		r->seq = i + 1;
		r->uid = byte(&in) % 4;
		r->req.count = 1 + byte(&in) % 64;
		r->req.queued = true;
		r->req.cand = ~0ULL >> (64 - d.nslots);
		snprintf(r->kind, sizeof r->kind, "run");
		r->name = byte(&in) % 4 ? text(&in, REQ_NAME_MAX) : NULL;
		r->command = byte(&in) % 4 ? text(&in, REQ_COMMAND_MAX) : NULL;
		r->time_limit = byte(&in) % 2 ? 1 + byte(&in) * 1e6 : 0;
		r->state = R_WAITING;
		d.reqs[d.nreqs++] = r;
	}
	d.conf.queue = byte(&in) % 2 ? QUEUE_FAIR : d.conf.queue; /* (each waiter's past use) */
	d.head_seq = nw ? 1 + byte(&in) % nw : 0;
	d.head_start = byte(&in) % 2 ? -1 : 5;
	/* The device guard (issue 25): its directory and node errors, of the longest each. */
	static struct guard g;
	g = (struct guard){0};
	if (byte(&in) % 2) {
		g.dev_dir = text(&in, 255);
		g.nnodes = byte(&in) % 68;
		g.nodes = xcalloc(g.nnodes + 1, sizeof *g.nodes);
		for (size_t i = 0; i < g.nnodes; i++)
			if (byte(&in) % 2) {
				char *e = text(&in, sizeof g.nodes[i].error - 1);
				snprintf(g.nodes[i].error, sizeof g.nodes[i].error, "%s", *e ? e : "x");
				free(e);
			}
		d.guard = &g;
		d.guard_no_minor = byte(&in) % 4 == 0;
	}
	struct conn c = {.p = {.uid = byte(&in) % 4}};
	struct msg ask;
	char why[160];
	if (!msg_decode(&ask, "list\nid 7", 9, why, sizeof why))
		abort();
	nsent = 0;
	queue_list(&d, &c, &ask);
	msg_free(&ask);

	struct leaseview v = {0};
	for (size_t i = 0; i < nsent; i++) {
		struct msg m;
		if (sent[i].len > PROTO_MAX_MSG || !msg_decode(&m, sent[i].buf, sent[i].len, why, sizeof why))
			abort();
		if (strcmp(msg_verb(&m), "list") || (msg_line(&m, "end") != NULL) != (i + 1 == nsent))
			abort();
		take_part(&v, &m);
		msg_free(&m);
		sb_free(&sent[i]);
	}
	if (!nsent || v.nleases != d.nleases || v.nqueue + v.nsummed != d.nreqs)
		abort();
	for (size_t i = 0; i < v.nleases; i++) {
		const struct lease *l = d.leases[i];
		if (strcmp(v.leases[i].name ? v.leases[i].name : "", l->name && *l->name ? l->name : "") ||
		    strcmp(v.leases[i].command ? v.leases[i].command : "",
			   l->command && *l->command ? l->command : ""))
			abort();
	}
	for (size_t i = 0; i < v.nleases; i++) { /* issues 23 and 24's lines came back whole */
		const struct lease *l = d.leases[i];
		const struct lease_info *li = &v.leases[i];
		if (strcmp(li->mig_uuid, l->mig ? l->mig_uuid : "") || li->until_ns != l->until_ns ||
		    li->idle_known != (l->busy_at != 0) ||
		    (l->busy_at && (li->idle_since_ns != l->idle_since_ns ||
				    li->idle_warned != l->idle_warned || li->idle_released != l->idle_released ||
				    li->idle_exempt != (l->exempt > 0))))
			abort();
	}
	if (strcmp(v.guard, d.guard ? "acl" : "off")) /* and issue 25's: the guard's state */
		abort();
	if (d.guard) {
		size_t k = 0, bad = d.guard_no_minor;
		for (size_t i = 0; i < g.nnodes; i++)
			bad += g.nodes[i].error[0] != 0;
		if (strcmp(v.guard_dir, strcmp(g.dev_dir, "-") ? g.dev_dir : "") ||
		    strncmp(v.guard_state, bad ? "not binding" : "binding", bad ? 11 : 8))
			abort();
		for (size_t i = 0; i < g.nnodes && k < v.nguard_errors; i++)
			if (g.nodes[i].error[0] && strcmp(v.guard_errors[k++], g.nodes[i].error))
				abort();
		if (v.nguard_errors != (bad < GUARD_ERRORS_SHOWN ? bad : GUARD_ERRORS_SHOWN))
			abort();
		free(g.dev_dir);
		free(g.nodes);
		d.guard = NULL;
	}
	for (size_t i = 0; i < v.nqueue; i++) {
		if (!v.queue[i].position || v.queue[i].position > d.nreqs)
			abort();
		const struct request *r = d.reqs[v.queue[i].position - 1];
		if (strcmp(v.queue[i].name ? v.queue[i].name : "", r->name && *r->name ? r->name : ""))
			abort();
	}
	leaseview_free(&v);
	for (size_t i = 0; i < d.nleases; i++) {
		free(d.leases[i]->name);
		free(d.leases[i]->command);
		free(d.leases[i]);
	}
	for (size_t i = 0; i < d.nreqs; i++)
		queue_request_free(d.reqs[i]);
	free(d.leases);
	free(d.reqs);
	list_state_free(d.list);
	return 0;
}
