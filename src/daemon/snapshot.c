/* snapshot.c: the daemon's shared view of the machine (issue 22). `status`, `top`, `doctor` and
 * the exporter ask for it instead of reading NVML and /proc themselves; the daemon refreshes
 * once for all askers whose freshness bound the last refresh no longer meets, so ten users'
 * watch loops cost one refresh, not ten.
 *
 * The request:  snapshot / id N / age MS (the oldest view the asker takes, ms) / want BITS (the
 * REFRESH_* groups it shows) [/ leases 1] [/ have SERIAL]. The answer: parts "snapshot / id N [/ age MS] /
 * <machine/snap.h's records>", the last with "end"; `age` (in the first part) says how old the
 * view is. An `error` answer (busy, refused) sends the asker to read the machine itself. With
 * `leases 1`, `list`'s answer to the asker follows (its messages, or its error), sent as `list`
 * sends it once the view is read: one round trip serves a `status` refresh. With `have`, the
 * view the asker decoded last: where that is the current view or the one before, the answer is
 * a delta against it (machine/snap.h), made once and shared by every such asker. With `frame`
 * (a table loop's layout, machine/snap.h), the answer is one message, "frame / id / age / serial
 * / bytes / token", with the table laid out by the program's renderer as a sealed memfd: kept
 * on the view per layout and shared by every asker of it, bounded per user (SNAP_FRAMES_USER
 * layouts of a view, the time charged as a forced refresh's) and per connection (one in flight:
 * the next frame ask says the last one's token); a refusal is an `error` that sends the asker
 * to lay out the view itself.
 *
 * One current view is kept, encoded once (snap_encode) and shared by every answer that streams
 * it: a connection holds a reference and the next part, and gets more parts only while its
 * out-queue (peer.c, bounded per connection) is under SNAP_QUEUE, so a view of any size goes out
 * as the asker reads, and one that reads half an answer holds a reference, not the daemon.
 *
 * Bounds, per user (the hostile-user rules): answers (a token bucket, as list.c's), refreshes an
 * asker's bound forces (in number, and in the daemon's time they take: past either the asker is
 * told to read the machine itself, never served a view older than it asked), answers streaming
 * at once, and the bytes unread on the user's connections. All together, refreshes take at most
 * a quarter of the daemon's time: a view less than SNAP_DUTY refreshes' lengths old is served
 * to any bound (its `age` says how old), so a flood of fresh-view asks costs others nothing. What a view shows is what `gpuctl status` shows anyone, except where
 * /proc is mounted with hidepid: there it would show other users' processes that the kernel
 * hides from the asker, so only root and the daemon's own user are served. */
#include "daemon/daemon.h"
#include "machine/snap.h"
#include "machine/container.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SNAP_QUEUE (256u << 10)     /* a stream's parts are queued up to this much at a time */
#define SNAP_AGE_MAX 60000          /* ms: the oldest bound an asker may state */
#define SNAP_BURST 100.0            /* answers per user at once, then SNAP_RATE a second */
#define SNAP_RATE 50.0
#define SNAP_REFRESH_BURST 20.0     /* refreshes a user's bounds may force at once, then */
#define SNAP_REFRESH_RATE 10.0      /* this many a second (a loop of 0.1 s alone) */
#define SNAP_CPU_BURST 0.5          /* s of the daemon's time a user's forced refreshes may take */
#define SNAP_CPU_RATE 0.1           /* at once, then this much a second (a tenth of it) */
#define SNAP_DUTY 4.0               /* a refresh at most every this many times the last one's
				     * length: refreshes take at most a quarter of the daemon */
#define SNAP_STREAMS 4              /* answers of one user streaming at once */
#define SNAP_USER_UNREAD (4u << 20) /* bytes queued unread to one user's connections, in all */
#define SNAP_KEEP_WANT 10.0         /* s: groups asked for this recently are refreshed for all */
#define HIDEPID_RECHECK 60.0        /* s between looks at how /proc is mounted */
#define SNAP_FRAMES_USER 4          /* layouts of one view a user's asks may make (frames) */

/* The groups an asker may want (the others are the asker's to narrow: snap_narrow). */
#define SNAP_WANTS (REFRESH_PROCS | REFRESH_EXTRA | REFRESH_PERF | REFRESH_PCIE | \
		    REFRESH_PCIE_THROUGHPUT | REFRESH_ENGINES | REFRESH_PROC_UTIL | REFRESH_MEM_TEMP | \
		    REFRESH_POWER_MGMT | REFRESH_STATIC | REFRESH_SLURM | REFRESH_PROC_STATS | \
		    REFRESH_CONTAINER_IDS)

/* A frame (machine/snap.h): a layout of its view, as a sealed memfd every asker of the same
 * layout is sent (fd -1: the renderer's refusal, kept too, with why: asked again, the same). */
struct snap_frame {
	struct snap_frame_ask ask;
	uint64_t list_fp;         /* list_public's answer it shows */
	long long sec;            /* timed: the second of the wall clock it holds for; else -1 */
	uid_t uid;                /* whose ask made it (SNAP_FRAMES_USER) */
	int fd;
	size_t len;
	char why[200];
};

struct snap_view {
	unsigned refs;
	struct snap_frame *frames;
	size_t nframes, frames_cap;
	struct snap_parts p;
	double at;                /* monotonic: when refreshed */
	unsigned what;
	/* deltas (machine/snap.h): for a client holding the view before this one, or this one */
	uint64_t serial, delta_base;  /* delta_base: the view before (0: none) */
	struct snap_parts delta, same;
	bool has_same;
};

struct snap_stream {
	struct snap_view *v;
	const struct snap_parts *p;   /* v's full encoding, or a delta of it */
	size_t next;              /* the part to send next */
	uint64_t id;
	bool leases;              /* `list`'s answer to follow the view, once it is all read */
};

struct snap_user {
	uid_t uid;
	double tokens, at;        /* answers */
	double refresh, refresh_at;
	double cpu, cpu_at;       /* seconds of refreshing (SNAP_CPU_*), charged as they are spent */
	unsigned streams;
};

struct snap_state {
	struct snap_view *cur;
	double want_at[32];       /* monotonic: when each REFRESH_* bit was last asked for */
	struct snap_user *users;
	size_t nusers, users_cap;
	double last_cost;         /* s the last refresh took */
	bool hidepid;
	double hidepid_at;        /* when last looked at; 0: never */
	unsigned refreshes;       /* made, for the log and the tests */
	unsigned frames;          /* frames laid out (not refused) */
	uint64_t serial;          /* the last view's: see refresh */
};

static void view_unref(struct snap_view *v)
{
	if (v && !--v->refs) {
		for (size_t i = 0; i < v->nframes; i++)
			if (v->frames[i].fd >= 0)
				close(v->frames[i].fd);
		free(v->frames);
		snap_parts_free(&v->p);
		snap_parts_free(&v->delta);
		snap_parts_free(&v->same);
		free(v);
	}
}

void snap_state_free(struct snap_state *s)
{
	if (!s)
		return;
	/* for whoever reads the log (and the tests: the frames a loop was sent) */
	fprintf(stderr, "gpuctl daemon: the shared view: %u refreshes, %u frames laid out\n",
		s->refreshes, s->frames);
	view_unref(s->cur);
	free(s->users);
	free(s);
}

static struct snap_state *sstate(struct daemon *d)
{
	if (!d->snap)
		d->snap = xcalloc(1, sizeof *d->snap);
	return d->snap;
}

static struct snap_user *user_of(struct snap_state *s, uid_t uid, double now)
{
	for (size_t i = 0; i < s->nusers; i++)
		if (s->users[i].uid == uid)
			return &s->users[i];
	s->users = grow_array(s->users, &s->users_cap, s->nusers + 1, sizeof *s->users);
	struct snap_user *u = &s->users[s->nusers++];
	*u = (struct snap_user){.uid = uid, .tokens = SNAP_BURST, .at = now,
				.refresh = SNAP_REFRESH_BURST, .refresh_at = now,
				.cpu = SNAP_CPU_BURST, .cpu_at = now};
	return u;
}

/* Whether u's share of the daemon's time (SNAP_CPU_*: forced refreshes, frames laid out) has
 * some left, refilled to now. */
static bool cpu_left(struct snap_user *u, double now)
{
	u->cpu += (now - u->cpu_at) * SNAP_CPU_RATE;
	u->cpu_at = now;
	if (u->cpu > SNAP_CPU_BURST)
		u->cpu = SNAP_CPU_BURST;
	return u->cpu > 0;
}

static bool take(double *tokens, double *at, double now, double rate, double burst)
{
	*tokens += (now - *at) * rate;
	*at = now;
	if (*tokens > burst)
		*tokens = burst;
	if (*tokens < 1)
		return false;
	*tokens -= 1;
	return true;
}

/* Whether /proc hides other users' processes (hidepid=1/2/invisible/noaccess, or a subset): the
 * mount's options in /proc/self/mountinfo. */
static bool proc_hides(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return true; /* cannot tell: assume it does */
	char line[4096];
	bool hides = false;
	while (fgets(line, sizeof line, f)) {
		/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE SUPEROPTS" */
		char root[512], mnt[512];
		if (sscanf(line, "%*s %*s %*s %511s %511s", root, mnt) != 2 || strcmp(mnt, "/proc"))
			continue;
		const char *sep = strstr(line, " - ");
		if (!sep || strncmp(sep, " - proc ", 8))
			continue;
		const char *h = strstr(sep, "hidepid=");
		hides = (h && strncmp(h + 8, "0", 1) && strncmp(h + 8, "off", 3)) || strstr(sep, "subset=");
	}
	fclose(f);
	return hides;
}

static void stream_end(struct daemon *d, struct conn *c)
{
	if (!c->snap)
		return;
	struct snap_user *u = user_of(sstate(d), c->p.uid, d->now);
	if (u->streams)
		u->streams--;
	view_unref(c->snap->v);
	free(c->snap);
	c->snap = NULL;
}

void snap_pump(struct daemon *d, struct conn *c)
{
	struct snap_stream *st = c->snap;
	if (!st)
		return;
	struct strbuf sb = {0};
	while (!c->p.dead && st->next < st->p->nparts && c->p.out_bytes < SNAP_QUEUE) {
		/* the list after the view made before the view's last part goes: the asker, woken
		 * by that part, finds the list already there (one wake-up a refresh, not two) */
		if (st->leases && st->next + 1 == st->p->nparts)
			list_warm(d, c);
		msg_begin(&sb, "snapshot");
		msg_add_u64(&sb, "id", st->id);
		if (st->next == 0)
			msg_add_u64(&sb, "age", (uint64_t)((d->now - st->v->at) * 1000));
		const struct strbuf *p = &st->p->parts[st->next++];
		sb_add(&sb, p->buf, p->len);
		conn_send(d, c, &sb, NULL, 0);
	}
	sb_free(&sb);
	/* The leases after the view (`leases 1`): `list`'s own answer, with its bounds, once the
	 * view is read (list sends to an empty queue), so one round trip serves a refresh. */
	if (!c->p.dead && st->next >= st->p->nparts && st->leases && !c->p.out_bytes) {
		st->leases = false;
		list_answer(d, c, st->id);
	}
	if (c->p.dead || (st->next >= st->p->nparts && !st->leases))
		stream_end(d, c);
}

void snap_drop_conn(struct daemon *d, struct conn *c)
{
	stream_end(d, c);
}

/* A fresh view with want and every group asked for lately (one refresh serves them all). */
static void refresh(struct daemon *d, struct snap_state *s, unsigned want)
{
	unsigned what = want;
	for (unsigned b = 0; b < 32; b++)
		if (s->want_at[b] && d->now - s->want_at[b] < SNAP_KEEP_WANT)
			what |= 1u << b;
	/* PCIe throughput costs NVML 20 ms a GPU per reading: only for an ask that wants it, so no
	 * user's one ask makes every refresh for everyone that slow. */
	what = (what & ~(unsigned)REFRESH_PCIE_THROUGHPUT) | (want & REFRESH_PCIE_THROUGHPUT);
	what &= SNAP_WANTS;
	double t0 = now_mono();
	gpu_set_refresh(d->set, what);
	struct snap_view *v = xcalloc(1, sizeof *v);
	v->refs = 1;
	v->at = now_mono();
	s->last_cost = v->at - t0;
	v->what = what;
	/* containers' ids (issue 22): read only where a runtime runs (machine.c); elsewhere the
	 * view tells its askers it has none (it still covers their ask: nothing more to read), and
	 * a client that sees a runtime where the daemon does not reads its processes' cgroups */
	unsigned said = what;
	if ((what & REFRESH_CONTAINER_IDS) && !ctr_host_has_runtime())
		said &= ~(unsigned)REFRESH_CONTAINER_IDS;
	/* Serials are the wall clock's microseconds (and always rising): a restarted daemon never
	 * numbers a view as one its last life did, so a client that kept its view across the
	 * restart is never sent a delta against a different view of the same number. */
	uint64_t wall = queue_realtime_ns() / 1000;
	v->serial = s->serial = wall > s->serial ? wall : s->serial + 1;
	snap_encode(d->set, said, v->serial, &v->p);
	if (s->cur) {   /* for the askers holding the view before (a loop's last) */
		snap_delta(&v->p, &s->cur->p, s->cur->serial, &v->delta);
		v->delta_base = s->cur->serial;
	}
	view_unref(s->cur);
	s->cur = v;
	s->refreshes++;
}

static snap_frame_fn renderer;

void snap_frame_renderer(snap_frame_fn fn)
{
	renderer = fn;
}

/* The frame's bytes as a sealed memfd (no write, no resize: each asker maps or sends it as it
 * is); -1 where the kernel would not make one. */
static int frame_fd(const struct strbuf *sb)
{
	int fd = memfd_create("gpuctl-frame", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	if (!write_all(fd, sb->buf, sb->len) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool same_ask(const struct snap_frame_ask *a, const struct snap_frame_ask *b)
{
	return a->what == b->what && a->width == b->width && a->rows == b->rows &&
	       a->flags == b->flags && a->tzoff == b->tzoff && !strcmp(a->tzname, b->tzname);
}

/* The frame of view v for ask a: one laid out before for the same layout, the same leases and
 * (timed) this second; else laid out now, where the user may (SNAP_FRAMES_USER layouts of a
 * view; its time charged as a forced refresh's). NULL with why: the client lays it out. */
static const struct snap_frame *frame_of(struct daemon *d, struct snap_view *v, struct snap_user *u,
					 const struct snap_frame_ask *a, char *why, size_t len)
{
	if (!renderer) {
		snprintf(why, len, "this daemon lays out no frames");
		return NULL;
	}
	size_t nlist;
	uint64_t fp;
	const struct strbuf *list = list_public(d, &nlist, &fp);
	long long sec = (long long)(queue_realtime_ns() / 1000000000ULL);
	/* Older leases' layouts are never sent again: closed here, or a user changing the leases
	 * (a lease a second) between asks would keep a memfd open in the daemon for each. */
	size_t kept = 0;
	for (size_t i = 0; i < v->nframes; i++) {
		if (v->frames[i].list_fp == fp)
			v->frames[kept++] = v->frames[i];
		else if (v->frames[i].fd >= 0)
			close(v->frames[i].fd);
	}
	v->nframes = kept;
	unsigned mine = 0;
	struct snap_frame *f = NULL;
	for (size_t i = 0; i < v->nframes; i++) {
		struct snap_frame *e = &v->frames[i];
		mine += e->uid == u->uid;
		if (!same_ask(&e->ask, a))
			continue;
		if (e->sec < 0 || e->sec == sec)
			return e;
		f = e;   /* this layout, timed, of a second gone: laid out again in its place */
	}
	if (!f && mine >= SNAP_FRAMES_USER) {
		snprintf(why, len, "your user's loops asked for %d layouts of this view already",
			 SNAP_FRAMES_USER);
		return NULL;
	}
	double now = now_mono();
	if (!cpu_left(u, now)) {
		snprintf(why, len, "your user's asks took %.0f%% of the daemon's time", SNAP_CPU_RATE * 100);
		return NULL;
	}
	if (!f) {
		v->frames = grow_array(v->frames, &v->frames_cap, v->nframes + 1, sizeof *v->frames);
		f = &v->frames[v->nframes++];
	} else if (f->fd >= 0) {
		close(f->fd);
	}
	*f = (struct snap_frame){.ask = *a, .list_fp = fp, .sec = -1, .uid = u->uid, .fd = -1};
	struct strbuf sb = {0};
	bool timed = false;
	if (renderer(&v->p, list, nlist, a, &sb, &timed, f->why, sizeof f->why)) {
		f->fd = frame_fd(&sb);
		f->len = sb.len;
		if (f->fd < 0)
			snprintf(f->why, sizeof f->why, "no memory for it: %s", strerror(errno));
		else
			sstate(d)->frames++;
	}
	f->sec = timed ? sec : -1;
	sb_free(&sb);
	d->now = now_mono();
	u->cpu -= d->now - now;
	return f;
}

/* A frame for c's ask, or the refusal that sends it to lay out the view itself. */
static void frame_answer(struct daemon *d, struct conn *c, struct snap_view *v,
			 struct snap_user *u, const struct snap_frame_ask *a, uint64_t id, uint64_t token)
{
	char why[256];
	/* One frame in flight a connection: descriptors in flight count against the daemon's own
	 * limit (past it no descriptor goes to anyone, lease grants neither), so the next ask must
	 * say the last answer's token, which only reading it (and its descriptor) tells. */
	if (c->frame_token && token != c->frame_token) {
		conn_error(d, c, id, EXIT_BUSY, "snapshot: no frame: read the last one first (its token)");
		return;
	}
	c->frame_token = 0;
	const struct snap_frame *f = frame_of(d, v, u, a, why, sizeof why);
	if (f && f->fd < 0)
		snprintf(why, sizeof why, "%s", f->why);
	int fd = f && f->fd >= 0 ? fcntl(f->fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (f && f->fd >= 0 && fd < 0)
		snprintf(why, sizeof why, "%s", strerror(errno));
	if (fd < 0) {
		conn_error(d, c, id, EXIT_BUSY, "snapshot: no frame: %s", why);
		return;
	}
	struct strbuf sb = {0};
	msg_begin(&sb, "frame");
	msg_add_u64(&sb, "id", id);
	msg_add_u64(&sb, "age", (uint64_t)((d->now - v->at) * 1000));
	msg_add_u64(&sb, "serial", v->serial);
	msg_add_u64(&sb, "bytes", f->len);
	c->frame_token = ((uint64_t)arc4random() << 32 | arc4random()) | 1;
	msg_add_u64(&sb, "token", c->frame_token);
	conn_send(d, c, &sb, &fd, 1);
	sb_free(&sb);
}

void queue_snapshot(struct daemon *d, struct conn *c, const struct msg *m)
{
	uint64_t id = 0, age = 1000, want = 0, leases = 0, have = 0, token = 0;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	struct snap_frame_ask fa;
	bool framed = snap_frame_ask_read(m, &fa);
	if ((msg_line(m, "age") && !msg_get_u64(m, "age", SNAP_AGE_MAX, &age)) ||
	    (msg_line(m, "want") && !msg_get_u64(m, "want", UINT32_MAX, &want)) ||
	    (msg_line(m, "leases") && !msg_get_u64(m, "leases", 1, &leases)) ||
	    (msg_line(m, "have") && !msg_get_u64(m, "have", UINT64_MAX, &have)) ||
	    (msg_line(m, "frame") && !framed) ||
	    (msg_line(m, "token") && !msg_get_u64(m, "token", UINT64_MAX, &token))) {
		conn_error(d, c, id, EXIT_USAGE, "snapshot: age is 0-%d ms, want a number, leases 0 or 1, "
			   "frame 7 words (machine/snap.h)", SNAP_AGE_MAX);
		return;
	}
	struct snap_state *s = sstate(d);
	if (!s->hidepid_at || d->now - s->hidepid_at > HIDEPID_RECHECK) {
		s->hidepid = proc_hides();
		s->hidepid_at = d->now;
	}
	if (s->hidepid && c->p.uid != 0 && c->p.uid != geteuid()) {
		conn_error(d, c, id, EXIT_DENIED, "snapshot: /proc hides other users' processes here "
			   "(hidepid): the daemon's view is not shown to you; read the machine yourself");
		return;
	}
	if (c->snap || c->p.out) {
		conn_error(d, c, id, EXIT_BUSY, "snapshot: your previous answer is still unread");
		return;
	}
	struct snap_user *u = user_of(s, c->p.uid, d->now);
	if (u->streams >= SNAP_STREAMS || !take(&u->tokens, &u->at, d->now, SNAP_RATE, SNAP_BURST)) {
		conn_error(d, c, id, EXIT_BUSY, "snapshot: your user asked for over %.0f a second (or "
			   "%d at once); read the machine yourself", SNAP_RATE, SNAP_STREAMS);
		return;
	}
	size_t unread = conn_user_unread(d, c->p.uid);
	if (unread > SNAP_USER_UNREAD) {
		conn_error(d, c, id, EXIT_BUSY, "snapshot: %zu KiB of answers to your user's connections "
			   "are unread", unread >> 10);
		return;
	}
	want &= SNAP_WANTS;
	for (unsigned b = 0; b < 32; b++)
		if (want >> b & 1)
			s->want_at[b] = d->now;
	double now = now_mono();   /* a refresh earlier in this batch took time */
	struct snap_view *v = s->cur;
	bool covers = v && !(want & ~v->what);
	/* A view made less than SNAP_DUTY refreshes' lengths ago is as fresh as the daemon gives:
	 * it spends at most a quarter of its time on views, so no asker's bound, nor a flood of
	 * them, makes it refresh more often (its answer says its age). */
	if (!covers || ((now - v->at) * 1000 > (double)age && now - v->at >= SNAP_DUTY * s->last_cost)) {
		/* The daemon's time is everyone's: a user's forced refreshes are bounded in number
		 * and in the time they take. */
		if (!cpu_left(u, now) || !take(&u->refresh, &u->refresh_at, d->now, SNAP_REFRESH_RATE,
					 SNAP_REFRESH_BURST)) {
			conn_error(d, c, id, EXIT_BUSY, "snapshot: your user asked for over %.0f fresh "
				   "views a second (or %.0f%% of the daemon's time); read the machine "
				   "yourself", SNAP_REFRESH_RATE, SNAP_CPU_RATE * 100);
			return;
		}
		refresh(d, s, (unsigned)want);
		v = s->cur;
		u->cpu -= s->last_cost;
	}
	if (framed) {
		frame_answer(d, c, v, u, &fa, id, token);
		return;
	}
	c->snap = xcalloc(1, sizeof *c->snap);
	/* A delta for an asker holding this view or the one before (machine/snap.h) */
	const struct snap_parts *p = &v->p;
	if (have && have == v->serial) {
		if (!v->has_same)
			snap_delta(&v->p, &v->p, v->serial, &v->same);
		v->has_same = true;
		p = &v->same;
	} else if (have && have == v->delta_base) {
		p = &v->delta;
	}
	*c->snap = (struct snap_stream){.v = v, .p = p, .id = id, .leases = leases};
	v->refs++;
	u->streams++;
	d->now = now_mono();
	snap_pump(d, c);
}
