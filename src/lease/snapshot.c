/* snapshot.c: the client of the daemon's shared snapshot (see snapshot.h): a GPU backend whose
 * refresh is one request to the daemon, the answer decoded by machine/snap.c into the set, and
 * narrowed to what the refresh asked for, so every view prints what a direct refresh would.
 * Only the shared daemon's socket is tried (no private daemon is started for a look), with a
 * connect that does not wait and one deadline for the whole answer.
 *
 * A loop (status -l, top, the exporter) keeps its connection across refreshes: the daemon then
 * makes no accept and close per answer. A connection found closed when a refresh asks (the
 * daemon restarted, or closed it idle) is made again once; one left with an answer not read
 * whole (a deadline passed, a part not understood) is closed, so no stale part is read as the
 * next answer's. Each ask states a bound under the held view's age (snapshot_refresh), so
 * every period shows a view made since the last. */
#include "lease/snapshot.h"
#include "lease/client.h"
#include "lease/view.h"
#include "machine/pid.h"
#include "machine/proc.h"
#include "machine/runtime.h"
#include "machine/snap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The leases a fetch carried: state 1 (v holds them), 0 (the daemon's list failed: err says
 * why), -1 (none carried). */
struct carried {
	int state;
	struct leaseview v;
	struct gpu_error err;
};

static void carried_free(struct carried *c)
{
	if (c->state == 1)
		leaseview_free(&c->v);
	*c = (struct carried){.state = -1};
}

struct source {
	double max_age;
	unsigned have;            /* what the answer not yet used was made with */
	bool unused;              /* fetched by snapshot_open, not yet taken by a refresh */
	bool statics;             /* a refresh asked for REFRESH_STATIC: they are shown from now */
	bool begun;               /* the set's proc cache is in a refresh (see snapshot_refresh) */
	struct snap_store *store;
	/* leases in the snapshot (issue 22): `list`'s answer carried after the view */
	bool want_leases;
	struct carried lv;        /* the last fetch's, until snapshot_leases takes it */
	struct snap_base base;    /* deltas (machine/snap.h): the view decoded last, in store */
	struct snap_base spare;   /* the base before, its arrays the next answer's to fill */
	unsigned adopts;          /* decodes in a row into the held view's store */
	struct dclient dc;        /* the connection kept across refreshes (fd -1: none) */
	double made;              /* monotonic: when the view held was made (its answer's age) */
};

static void snapshot_refresh(struct gpu_set *set, unsigned what);
static void snapshot_close(struct gpu_set *set);

static const struct gpu_backend snapshot_backend = {
	.refresh = snapshot_refresh,
	.close = snapshot_close,
	.fills_procs = true,
};

bool snapshot_wanted(void)
{
	static volatile int said;
	const char *s = getenv("GPUCTL_SNAPSHOT");
	if (!s || !*s)
		return true;
	static const char *const off[] = {"0", "off", "no", "false"}, *const on[] = {"1", "on", "yes", "true"};
	for (size_t i = 0; i < ARRAY_SIZE(off); i++)
		if (!strcasecmp(s, off[i]) || !strcasecmp(s, on[i]))
			return !strcasecmp(s, on[i]);
	env_bad(&said, "GPUCTL_SNAPSHOT", s, "0, 1, on, off, yes or no",
		"the daemon's view is used where one serves");
	return true;
}

double snapshot_max_age(double def)
{
	static volatile int said;
	const char *s = getenv("GPUCTL_SNAPSHOT_AGE");
	double t;
	if (!s || !*s)
		return def;
	if (parse_duration(s, 60, &t))
		return t;
	env_bad(&said, "GPUCTL_SNAPSHOT_AGE", s, "a duration of at most 60 s, such as 0, 0.5 or 2s",
		"the command's own bound is used");
	return def;
}

bool snapshot_serves(const struct gpu_set *set)
{
	return set && set->backend == &snapshot_backend;
}

static char direct_why[512];   /* why the last set left the daemon (go_direct) */

const char *snapshot_left_why(void)
{
	return direct_why;
}

double snapshot_made(const struct gpu_set *set)
{
	return snapshot_serves(set) ? ((const struct source *)set->priv)->made : 0;
}

/* After the view, the leases the fetch asked for: m is a message of list's answer (or its
 * error); true when they are whole (lv->state set). */
static bool take_leases(struct carried *lv, const struct msg *m, pid_t daemon)
{
	if (!strcmp(msg_verb(m), "error")) {
		msg_error_read(m, "the daemon refused the request", &lv->err);
		leaseview_free(&lv->v);
		lv->state = 0;
		return true;
	}
	if (strcmp(msg_verb(m), "list")) {
		lv->err.code = EXIT_DAEMON;
		snprintf(lv->err.msg, sizeof lv->err.msg, "the gpuctl daemon (pid %d) answered '%.40s' "
			 "for its list", (int)daemon, msg_verb(m));
		leaseview_free(&lv->v);
		lv->state = 0;
		return true;
	}
	if (!leaseview_take_part(&lv->v, m))
		return false;
	lv->v.present = true;
	lv->state = 1;
	return true;
}

bool snapshot_connect(struct dclient *dc, struct gpu_error *err)
{
	const char *path = client_socket_path();
	int e = client_connect(dc, path);
	if (e) {
		err->code = EXIT_DAEMON;
		snprintf(err->msg, sizeof err->msg, "no gpuctl daemon at %s: %s", path, strerror(e));
		*dc = (struct dclient){.fd = -1};
		return false;
	}
	if (!dc->daemon_pid) { /* it runs in another PID namespace: its pids are not ours */
		err->code = EXIT_DAEMON;
		snprintf(err->msg, sizeof err->msg, "the gpuctl daemon at %s is in another PID "
			 "namespace; its processes' pids are not this one's", path);
		dclient_close(dc);
		return false;
	}
	dc->timeout = SNAPSHOT_TIMEOUT;
	return true;
}

double snapshot_ask_age(double max_age, double made)
{
	/* Under the age the held view has now (its answer said how old it was), so the daemon
	 * serves a newer one or makes one, and each period shows a view made since the last.
	 * Asked at the period itself, the view made during the last ask (a refresh it forced) was
	 * a little younger than the period at the next, and served again: the same view every
	 * other period. */
	double age = max_age, since = now_mono() - made - 0.002;
	if (made > 0 && since < age)
		age = since;
	return age > 0 ? age : 0;
}

void snapshot_ask_begin(struct strbuf *req, unsigned what, double age)
{
	msg_begin(req, "snapshot");
	msg_add_u64(req, "id", 1);
	msg_add_u64(req, "age", (uint64_t)((age < 60 ? age : 60) * 1000));
	/* containers (issue 28): their ids the daemon's (read once per process), their names
	 * this caller's own (machine.c); issue 22 */
	if (what & REFRESH_CONTAINERS)
		what = (what & ~(unsigned)REFRESH_CONTAINERS) | REFRESH_CONTAINER_IDS;
	msg_add_u64(req, "want", what);
}

bool snapshot_send(struct dclient *dc, bool *reused, const struct strbuf *req, struct gpu_error *err)
{
	if (dclient_send(dc, req, err))
		return true;
	if (!*reused)
		return false;
	dclient_close(dc);   /* the daemon closed the kept connection: once more, anew */
	*reused = false;
	return snapshot_connect(dc, err) && dclient_send(dc, req, err);
}

/* One answer from the daemon into tmp (a set with no GPUs yet), and with leases `list`'s answer
 * after it into lv (lv->state -1 where none came whole), on dc (kept open where the answer was
 * read whole, for the next fetch; made again once where the daemon closed it). */
/* A loop's stop flag (snapshot_stop_flag): set by its signal handler, it ends a wait for the
 * daemon at once (the ppoll returns EINTR) instead of at SNAPSHOT_TIMEOUT; the fetch then fails
 * as interrupted, and the refresh keeps the view held (the loop is ending). */
static volatile sig_atomic_t *stop_flag;
static bool interrupted;
static bool prefault_heap;   /* snapshot_open's prefault */

void snapshot_stop_flag(volatile sig_atomic_t *flag)
{
	stop_flag = flag;
}

bool snapshot_stop_asked(void)
{
	return stop_flag && *stop_flag;
}

/* The owners' names the view carries, for the leases that follow it (pid.h's user_name_seed):
 * a holder is named as the view names its processes, with no lookup here. A run of processes of
 * one owner is one name; at most 64 names (the cache's room). */
void snapshot_seed_names(const struct gpu_set *set)
{
	uid_t last = 0;
	bool any = false;
	unsigned seeded = 0;
	for (size_t i = 0; i < set->ngpus && seeded < 64; i++)
		for (size_t k = 0; k < set->gpus[i].nprocs && seeded < 64; k++) {
			const struct gpu_proc *p = &set->gpus[i].procs[k];
			if (!p->uid_valid || !p->user || (any && p->uid == last))
				continue;
			user_name_seed(p->uid, p->user);
			last = p->uid;
			any = true;
			seeded++;
		}
}

static bool fetch(struct dclient *dc, struct gpu_set *tmp, struct snap_store **store, unsigned what,
		  double max_age, bool leases, struct carried *lv, const struct snap_base *have,
		  struct snap_base *got, struct snap_store *held, double *made, uint64_t *same,
		  struct gpu_error *err)
{
	/* held: the held view's store, to decode into (snap_decode_adopt); never freed here, since
	 * the view held points into it until the caller replaces it (*store is held where it was
	 * adopted). got: a base whose arrays are reused (snap_base_retake), serial 0 unless it is
	 * taken. same: set to the view's serial where its processes are have's (no copy). */
	got->serial = got->n = 0;
	*same = 0;
	*lv = (struct carried){.state = -1};
	bool reused = dc->fd >= 0;
	if (!reused && !snapshot_connect(dc, err))
		return false;
	if (prefault_heap)   /* a daemon answers: its view is decoded here (base/util.h) */
		heap_prefault_growth();
	struct strbuf req = {0};
	snapshot_ask_begin(&req, what, max_age);
	if (leases)
		msg_add_u64(&req, "leases", 1);
	if (have && have->serial)   /* a delta against it, where the daemon still has it */
		msg_add_u64(&req, "have", have->serial);
	struct snap_decoder dx;
	snap_decode_begin(&dx, tmp);
	dx.base = have;
	snap_decode_adopt(&dx, have && have->serial ? held : NULL);
	bool ok = snapshot_send(dc, &reused, &req, err);
	double until = now_mono() + SNAPSHOT_TIMEOUT;
	char why[160];
	bool lv_done = !leases, lv_begun = false, whole = true, got_any = false, got_view = false;
	uint64_t age_ms = 0;
	while (ok && !(dx.done && lv_done)) {
		struct msg m;
		int fds[PROTO_MAX_FDS];
		size_t nfds = 0;
		double left = until - now_mono();
		if (stop_flag && *stop_flag) {
			interrupted = true;
			err->code = EXIT_DAEMON;
			snprintf(err->msg, sizeof err->msg, "interrupted while waiting for the daemon's view");
			ok = false;
			break;
		}
		int r = left > 0 ? dclient_recv(dc, &m, fds, &nfds, (int)(left * 1000) + 1, NULL, err) : 0;
		if (r == 0 && stop_flag && *stop_flag)
			continue;   /* a signal: said above */
		if (r < 0 && reused && !got_any) {   /* closed before answering: once more, anew */
			dclient_close(dc);
			reused = false;
			if (!snapshot_connect(dc, err) || !dclient_send(dc, &req, err)) {
				ok = false;
				break;
			}
			until = now_mono() + SNAPSHOT_TIMEOUT;
			continue;
		}
		got_any |= r == 1;
		for (size_t i = 0; r == 1 && i < nfds; i++)
			close(fds[i]);
		if (r == 0 && now_mono() < until)
			continue;
		if (dx.done) {   /* the view is whole: what follows is the leases' */
			if (r == 1) {
				if (!lv_begun) {
					snapshot_seed_names(tmp);
					lv->v = (struct leaseview){0};
				}
				lv_begun = true;
				lv_done = take_leases(lv, &m, dc->daemon_pid);
				msg_free(&m);
			} else {
				if (lv_begun)
					leaseview_free(&lv->v);
				lv->state = 0;
				lv->err.code = EXIT_DAEMON;
				snprintf(lv->err.msg, sizeof lv->err.msg, "the gpuctl daemon (pid %d) stopped "
					 "answering in the middle of its list", (int)dc->daemon_pid);
				lv_done = true;
				whole = false;
			}
			continue;
		}
		if (r == 0) {
			err->code = EXIT_DAEMON;
			snprintf(err->msg, sizeof err->msg, "the gpuctl daemon (pid %d) sent no whole "
				 "snapshot within %.1f s", (int)dc->daemon_pid, SNAPSHOT_TIMEOUT);
			ok = false;
		} else if (r < 0) {
			ok = false;
		} else if (!strcmp(msg_verb(&m), "error")) {
			msg_error_read(&m, "the gpuctl daemon refused its snapshot", err);
			ok = false;
		} else if (strcmp(msg_verb(&m), "snapshot")) {
			err->code = EXIT_DAEMON;
			snprintf(err->msg, sizeof err->msg, "the gpuctl daemon answered '%.40s' to a "
				 "snapshot", msg_verb(&m));
			ok = false;
		} else {
			if (!got_view) {   /* its first part's age: when the view was made (the next bound) */
				got_view = true;
				if (msg_get_u64(&m, "age", UINT32_MAX, &age_ms))
					*made = now_mono() - (double)age_ms / 1000;
			}
			if (!snap_decode_part(&dx, &m, why, sizeof why)) {
				err->code = EXIT_DAEMON;
				snprintf(err->msg, sizeof err->msg, "the gpuctl daemon's snapshot is not one "
					 "this gpuctl reads: %s", why);
				ok = false;
			}
		}
		if (r == 1)
			msg_free(&m);
	}
	sb_free(&req);
	if (!ok || !whole)   /* parts of this answer may still come: not to be read as the next's */
		dclient_close(dc);
	/* containers (issue 28): REFRESH_CONTAINERS is the caller's own work (machine.c), never the
	 * daemon's: a snapshot without it serves. */
	tmp->ctr_ids = dx.what & REFRESH_CONTAINER_IDS;
	if (ok && (what & ~dx.what & ~(unsigned)(REFRESH_COMPUTE_NAMES | REFRESH_NO_PROC_INFO |
						  REFRESH_CONTAINERS | REFRESH_CONTAINER_IDS))) {
		err->code = EXIT_DAEMON;
		snprintf(err->msg, sizeof err->msg, "the gpuctl daemon's snapshot lacks groups asked for");
		ok = false;
	}
	*store = dx.store;
	if (ok && dx.serial && snap_decode_same_procs(&dx))
		*same = dx.serial;   /* have stands for this view: got stays untaken */
	else if (ok && dx.serial)
		snap_base_retake(got, tmp, dx.serial);
	return ok;
}

static void free_gpus(struct gpu_set *set)
{
	for (size_t i = 0; i < set->ngpus; i++) {
		free(set->gpus[i].procs);
		free(set->gpus[i].migs);
		free(set->gpus[i].error);
	}
	free(set->gpus);
	set->gpus = NULL;
	set->ngpus = 0;
}

struct gpu_set *snapshot_open(unsigned what, double max_age, bool leases, bool prefault,
			      struct gpu_error *err)
{
	prefault_heap = prefault;
	struct gpu_set *set = xcalloc(1, sizeof *set);
	struct source *src = xcalloc(1, sizeof *src);
	src->want_leases = leases;
	src->dc = (struct dclient){.fd = -1};
	uint64_t same;
	if (!fetch(&src->dc, set, &src->store, what, max_age, leases, &src->lv, NULL, &src->base, NULL,
		   &src->made, &same, err)) {
		dclient_close(&src->dc);
		carried_free(&src->lv);
		snap_base_free(&src->base);
		snap_store_free(src->store);
		free(src);
		free_gpus(set);
		free(set);
		return NULL;
	}
	src->max_age = max_age;
	src->have = what;
	src->unused = true;
	set->backend = &snapshot_backend;
	set->priv = src;
	set->pc = proc_cache_new(); /* top's tree reads parents not on a GPU itself */
	return set;
}

/* The daemon no longer serves: the machine read here from now on, the selection kept. */
static void go_direct(struct gpu_set *set, unsigned what, const struct gpu_error *why)
{
	snprintf(direct_why, sizeof direct_why, "%.500s", why->msg[0] ? why->msg : "no reason given");
	struct gpu_error e = {0};
	struct gpu_set *direct = gpu_set_open(&e);
	if (!direct) {
		for (size_t i = 0; i < set->ngpus; i++) {
			char msg[700];
			snprintf(msg, sizeof msg, "no view: the gpuctl daemon's failed (%.300s), and "
				 "reading the GPU here failed (%.300s)", why->msg, e.msg);
			gpu_mark_lost(&set->gpus[i], msg);
		}
		return;
	}
	for (size_t i = 0; i < direct->ngpus; i++) {
		struct gpu *g = &direct->gpus[i];
		for (size_t k = 0; k < set->ngpus; k++)
			if (!strcmp(set->gpus[k].uuid, g->uuid))
				g->selected = set->gpus[k].selected;
	}
	unsigned watch = set->watch_parts;   /* a loop's: it watches exits on its own reads too */
	snapshot_close(set);
	free_gpus(set);
	proc_cache_free(set->pc);
	ctr_names_free(set->cn);   /* the containers' names the view's refreshes made */
	*set = *direct;
	free(direct);
	if (watch)
		gpu_set_watch_exits(set, watch);
	set->backend->refresh(set, what);
}

static void snapshot_refresh(struct gpu_set *set, unsigned what)
{
	struct source *src = set->priv;
	/* The set's own proc cache serves what a view looks up itself after a refresh (top: the
	 * stats of the rows on screen, a tree's parents): one refresh of it spans from here to the
	 * next, so what was looked up since is kept and read again, and CPU use is reckoned from
	 * the last reading, as in a direct refresh. */
	if (src->begun)
		proc_cache_end(set->pc);
	proc_cache_begin(set->pc);
	src->begun = true;
	src->statics |= (what & REFRESH_STATIC) != 0;
	unsigned need = what & ~(unsigned)(REFRESH_COMPUTE_NAMES | REFRESH_NO_PROC_INFO |
					   REFRESH_CONTAINERS); /* containers: the caller's (issue 28) */
	if (src->unused && !(need & ~src->have)) {
		src->unused = false;
		snap_narrow(set, what, src->statics);
		return;
	}
	src->unused = false;
	struct gpu_set tmp = {0};
	struct snap_store *store = NULL;
	struct gpu_error err = {0};
	struct carried lv;
	carried_free(&src->lv);   /* a refresh's leases are its own answer's */
	struct snap_base base = src->spare;
	src->spare = (struct snap_base){0};
	/* The held view's strings stay where they are, in its store, for a few refreshes in a row;
	 * then one copies what is kept into a new store, leaving the strings of processes gone. */
	struct snap_store *held = NULL;
	if (src->base.serial && src->adopts < SNAP_ADOPT_MAX) {
		held = src->store;
		src->store = NULL;
		src->adopts++;
	} else {
		src->adopts = 0;
	}
	/* The bound asked: the loop's period, or under the held view's age (snapshot_ask_age) */
	double age = snapshot_ask_age(src->max_age, src->made);
	/* containers' ids asked for at each refresh, not only the first (fetch asks the daemon's
	 * ids for REFRESH_CONTAINERS): a loop that stopped asking was sent views without them once
	 * the daemon's memory of the ask ran out (SNAP_KEEP_WANT), and read every process's cgroup
	 * itself at each refresh */
	unsigned ask = need | (what & REFRESH_CONTAINERS);
	double made = 0;
	uint64_t same = 0;
	bool ok = fetch(&src->dc, &tmp, &store, ask, age, src->want_leases, &lv,
			&src->base, &base, held, &made, &same, &err);
	if (ok && tmp.ngpus != set->ngpus) {
		snprintf(err.msg, sizeof err.msg, "the daemon's GPUs changed");
		ok = false;
	}
	for (size_t i = 0; ok && i < set->ngpus; i++)
		if (strcmp(tmp.gpus[i].uuid, set->gpus[i].uuid)) {
			snprintf(err.msg, sizeof err.msg, "the daemon's GPUs changed");
			ok = false;
		}
	if (!ok) {
		carried_free(&lv);
		snap_base_free(&base);
		/* the view held stays (interrupted, or every GPU marked lost): its strings with it,
		 * in its store, whether this fetch decoded into it or not (freed, a loop ending on a
		 * signal printed its last frame from freed memory) */
		if (store != held)
			snap_store_free(store);
		if (held)   /* lent to the fetch; else src->store was never lent and stays */
			src->store = held;
		free_gpus(&tmp);
		if (!interrupted)   /* interrupted: the loop ends; the view held stays */
			go_direct(set, what, &err);
		return;
	}
	src->lv = lv;
	src->made = made;
	if (same) {   /* the held base is this view's processes too: only its number moves */
		src->base.serial = same;
		src->spare = base;
	} else {
		src->spare = src->base;   /* the next delta's: this answer's, in its store (below) */
		src->base = base;
	}
	for (size_t i = 0; i < set->ngpus; i++) {
		struct gpu *g = &set->gpus[i];
		bool sel = g->selected;
		free(g->procs);
		free(g->migs);
		free(g->error);
		*g = tmp.gpus[i];
		g->selected = sel;
	}
	free(tmp.gpus);
	snprintf(set->driver_version, sizeof set->driver_version, "%s", tmp.driver_version);
	set->has_driver_version = tmp.has_driver_version;
	set->cuda_version = tmp.cuda_version;
	set->slurm = tmp.slurm;
	set->ctr_ids = tmp.ctr_ids;
	snap_store_free(src->store);   /* NULL where the held one was lent to the fetch */
	if (held != store)
		snap_store_free(held);   /* the GPUs now point into this answer's store only */
	src->store = store;
	snap_narrow(set, what, src->statics);
}

static void snapshot_close(struct gpu_set *set)
{
	struct source *src = set->priv;
	if (!src)
		return;
	snap_store_free(src->store);
	carried_free(&src->lv);
	snap_base_free(&src->base);
	snap_base_free(&src->spare);
	dclient_close(&src->dc);
	free(src);
	set->priv = NULL;
}

int snapshot_leases(struct gpu_set *set, struct leaseview *out, struct gpu_error *err)
{
	if (!snapshot_serves(set) || !set->priv)
		return -1;
	struct carried *lv = &((struct source *)set->priv)->lv;
	int st = lv->state;
	if (st == 1)
		*out = lv->v;
	else if (st == 0)
		*err = lv->err;
	*lv = (struct carried){.state = -1};
	return st;
}
