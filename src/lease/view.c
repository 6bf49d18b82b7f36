/* view.c: reading the daemon's `list` answer (see view.h). The answer comes in parts
 * (each at most one message); a `lease` or `waiter` line starts a record and the lines after it
 * (names, commands, GPUs) belong to it. */
#include "lease/client.h"
#include "lease/view.h"
#include "machine/pid.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* snprintf(dst, size, "%s", src), without printf's machinery: a list of 1,000 waiters has
 * thousands of these (issue 22: a third of what `gpuctl jobs` spent reading the daemon's list). */
static void copy(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);
	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void add_uuids(char (**list)[96], size_t *n, const struct msg_line *l)
{
	if (l->nwords < 2)
		return;
	*list = xrealloc(*list, (*n + l->nwords - 1) * sizeof **list);
	for (size_t w = 1; w < l->nwords; w++)
		copy((*list)[(*n)++], sizeof **list, l->w[w]);
}

static uint64_t num(const char *w, uint64_t max)
{
	uint64_t v = 0;
	return word_u64(w, max, &v) ? v : 0;
}

/* Idle leases (issue 24): seconds lease li has been idle now; -1 not known, 0 in use. */
long long leaseview_idle_seconds(const struct lease_info *li)
{
	if (!li->idle_known)
		return -1;
	if (!li->idle_since_ns)
		return 0;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	long long s = (long long)ts.tv_sec - (long long)(li->idle_since_ns / 1000000000ULL);
	return s > 0 ? s : 0;
}

/* A key is looked at by its first byte before strcmp is called: each line of the answer was
 * some thirty calls of strcmp (issue 22). */
#define KEY(k, lit) ((k)[0] == (lit)[0] && !strcmp((k), (lit)))

static void take_part(struct leaseview *v, const struct msg *m)
{
	struct lease_info *li = NULL;
	struct waiter_info *wi = NULL;
	for (size_t i = 1; i < m->nlines; i++) {
		const struct msg_line *l = &m->lines[i];
		const char *k = l->w[0];
		if (KEY(k, "daemon") && l->nwords > 1) {
			v->daemon_pid = (pid_t)num(l->w[1], INT32_MAX);
		} else if (KEY(k, "queue") && l->nwords > 1) {
			snprintf(v->order, sizeof v->order, "%s",
				 !strcmp(l->w[1], "fair") || !strcmp(l->w[1], "fifo") ? l->w[1] : "");
		} else if (KEY(k, "unsaved") && l->nwords > 1) {
			copy(v->unsaved, sizeof v->unsaved, l->w[1]);
		} else if (KEY(k, "guard") && l->nwords >= 4) { /* the device guard (issue 25) */
			copy(v->guard, sizeof v->guard, !strcmp(l->w[1], "acl") ? "acl" : "off");
			copy(v->guard_dir, sizeof v->guard_dir, strcmp(l->w[2], "-") ? l->w[2] : "");
			copy(v->guard_state, sizeof v->guard_state, l->w[3]);
		} else if (KEY(k, "guard_error") && l->nwords > 1 &&
			   v->nguard_errors < ARRAY_SIZE(v->guard_errors)) {
			copy(v->guard_errors[v->nguard_errors++], sizeof v->guard_errors[0], l->w[1]);
		} else if (KEY(k, "private") && l->nwords > 1) {
			v->private_mode = num(l->w[1], 1);
		} else if (KEY(k, "lease") && l->nwords >= 8) {
			v->leases = grow_array(v->leases, &v->leases_cap, v->nleases + 1, sizeof *v->leases);
			li = &v->leases[v->nleases++];
			wi = NULL;
			*li = (struct lease_info){0};
			copy(li->id, sizeof li->id, l->w[1]);
			li->uid = (uid_t)num(l->w[2], UINT32_MAX);
			user_name(li->uid, li->user, sizeof li->user);
			li->pid = (pid_t)num(l->w[3], INT32_MAX);
			li->start = num(l->w[4], UINT64_MAX);
			li->bound = (pid_t)num(l->w[5], INT32_MAX);
			copy(li->kind, sizeof li->kind, l->w[6]);
			li->since = (time_t)num(l->w[7], INT64_MAX);
		} else if (KEY(k, "lname") && li && l->nwords > 1 && !li->name) {
			li->name = xstrdup(l->w[1]);
		} else if (KEY(k, "lcmd") && li && l->nwords > 1 && !li->command) {
			li->command = xstrdup(l->w[1]);
		} else if (KEY(k, "lgpu") && li) {
			add_uuids(&li->uuids, &li->ngpus, l);
		} else if (KEY(k, "lmem") && li && l->nwords > 2) { /* memory shares */
			li->mem_mib = num(l->w[1], UINT64_MAX);
			li->over = !strcmp(l->w[2], "over");
		} else if (KEY(k, "lmig") && li && l->nwords > 1) { /* MIG instances */
			copy(li->mig_uuid, sizeof li->mig_uuid, l->w[1]);
		} else if (KEY(k, "luse") && li && li->mem_mib) {
			li->used = xrealloc(li->used, (li->nused + l->nwords) * sizeof *li->used);
			for (size_t w = 1; w < l->nwords; w++)
				li->used[li->nused++] = num(l->w[w], UINT64_MAX);
		} else if (KEY(k, "gshare") && l->nwords > 5) {
			v->shares = grow_array(v->shares, &v->shares_cap, v->nshares + 1, sizeof *v->shares);
			struct share_gpu *sg = &v->shares[v->nshares++];
			copy(sg->uuid, sizeof sg->uuid, l->w[1]);
			sg->count = (unsigned)num(l->w[2], UINT32_MAX);
			sg->claimed = num(l->w[3], UINT64_MAX);
			sg->outside = num(l->w[4], UINT64_MAX);
			sg->room = num(l->w[5], UINT64_MAX);
			li = NULL;
			wi = NULL;
		} else if (KEY(k, "held")) {
			add_uuids(&v->held, &v->nheld, l);
		} else if (KEY(k, "wplace") && l->nwords >= 5) { /* `list places 1`: one's own */
			v->queue = grow_array(v->queue, &v->queue_cap, v->nqueue + 1, sizeof *v->queue);
			wi = &v->queue[v->nqueue++];
			li = NULL;
			*wi = (struct waiter_info){.past = -1};
			wi->position = (unsigned)num(l->w[1], UINT32_MAX);
			wi->uid = (uid_t)num(l->w[2], UINT32_MAX);
			copy(wi->kind, sizeof wi->kind, l->w[3]);
			wi->name = xstrdup(l->w[4]);
			wi = NULL; /* nothing more is said of it */
		} else if (KEY(k, "waiter") && l->nwords >= 9) {
			v->queue = grow_array(v->queue, &v->queue_cap, v->nqueue + 1, sizeof *v->queue);
			wi = &v->queue[v->nqueue++];
			li = NULL;
			*wi = (struct waiter_info){.past = -1};
			wi->position = (unsigned)num(l->w[2], UINT32_MAX);
			wi->uid = (uid_t)num(l->w[3], UINT32_MAX);
			user_name(wi->uid, wi->user, sizeof wi->user);
			wi->pid = (pid_t)num(l->w[4], INT32_MAX);
			wi->count = (unsigned)num(l->w[5], 64);
			wi->since = (time_t)num(l->w[6], INT64_MAX);
			copy(wi->state, sizeof wi->state, l->w[7]);
			copy(wi->kind, sizeof wi->kind, l->w[8]);
		} else if (KEY(k, "wname") && wi && l->nwords > 1 && !wi->name) {
			wi->name = xstrdup(l->w[1]);
		} else if (KEY(k, "wnote") && wi && l->nwords > 1) {
			copy(wi->note, sizeof wi->note, leaseview_note_text(l->w[1]) ? l->w[1] : "");
		} else if (KEY(k, "wcmd") && wi && l->nwords > 1 && !wi->command) {
			wi->command = xstrdup(l->w[1]);
		/* -- time limits and backfill (issue 24) -- */
		} else if (KEY(k, "llimit") && li && l->nwords > 1) {
			li->until_ns = num(l->w[1], UINT64_MAX);
		} else if (KEY(k, "lidle") && li && l->nwords > 4) {
			li->idle_known = true;
			li->idle_since_ns = num(l->w[1], UINT64_MAX);
			li->idle_warned = num(l->w[2], 1);
			li->idle_released = num(l->w[3], 1);
			li->idle_exempt = num(l->w[4], 1);
		} else if (KEY(k, "wpast") && wi && l->nwords > 1) {
			wi->past = (double)num(l->w[1], UINT64_MAX);
		} else if (KEY(k, "fairrule") && l->nwords > 1) {
			snprintf(v->fairrule, sizeof v->fairrule, "%s",
				 !strcmp(l->w[1], "past-use") || !strcmp(l->w[1], "held") ? l->w[1] : "");
		} else if (KEY(k, "wtime") && wi && l->nwords > 1) {
			wi->time_limit = (double)num(l->w[1], UINT64_MAX) / 1000;
		} else if (KEY(k, "wstart") && wi && l->nwords > 1) {
			wi->start = strcmp(l->w[1], "unknown") ? 1 : -1;
			wi->start_ns = wi->start > 0 ? num(l->w[1], UINT64_MAX) : 0;
		/* -- end of time limits -- */
		} else if (KEY(k, "wgpu") && wi) {
			add_uuids(&wi->cand, &wi->ncand, l);
		} else if (KEY(k, "wsum") && l->nwords >= 5) {
			v->sums = grow_array(v->sums, &v->sums_cap, v->nsums + 1, sizeof *v->sums);
			struct waiter_sum *ws = &v->sums[v->nsums++];
			*ws = (struct waiter_sum){.uid = (uid_t)num(l->w[1], UINT32_MAX),
						  .count = (unsigned)num(l->w[2], UINT32_MAX),
						  .first = (unsigned)num(l->w[3], UINT32_MAX),
						  .oldest = (time_t)num(l->w[4], INT64_MAX)};
			user_name(ws->uid, ws->user, sizeof ws->user);
			v->nsummed += ws->count;
			li = NULL;
			wi = NULL;
		}
	}
}

bool leaseview_binding(const struct leaseview *v)
{
	return v->present && !strcmp(v->guard, "acl") && !strcmp(v->guard_state, "binding");
}

void leaseview_guard_text(const struct leaseview *v, char *buf, size_t len)
{
	if (!v->present)
		snprintf(buf, len, "leases are advisory: no gpuctl daemon runs");
	else if (strcmp(v->guard, "acl"))
		snprintf(buf, len, "leases are advisory: the daemon's device guard is off (anyone who "
			 "can open a GPU's device node can use it)");
	else if (leaseview_binding(v))
		snprintf(buf, len, "leases bind: the daemon's device guard gives each lease's user "
			 "access to its GPUs' device nodes (%.120s), and nobody else", v->guard_dir);
	else
		snprintf(buf, len, "leases do not fully bind: the device guard is on but %.80s%s%.120s",
			 v->guard_state, v->nguard_errors ? "; " : "",
			 v->nguard_errors ? v->guard_errors[0] : "");
}

const char *leaseview_note_text(const char *note)
{
	static const char *const text[][2] = {
		{"head", "the head: served first until it runs, keeps the free GPUs it can use"},
		{"own-leases", "waits on its own user's leases: reserves nothing, others go by"},
		{"reserve-expired", "kept free GPUs idle the longest allowed (head_reserve): "
				    "reserves nothing now"},
		{"backed-off", "its user did not take offers in time: served after the others"},
	};
	for (size_t i = 0; note && i < ARRAY_SIZE(text); i++)
		if (!strcmp(note, text[i][0]))
			return text[i][1];
	return NULL;
}

bool leaseview_load(struct leaseview *v, struct gpu_error *err)
{
	return leaseview_load_within(v, 0, err);
}

bool leaseview_take_part(struct leaseview *v, const struct msg *m)
{
	take_part(v, m);
	return msg_line(m, "end") != NULL;
}

static bool load(struct leaseview *v, double timeout, bool places, struct gpu_error *err);

bool leaseview_load_within(struct leaseview *v, double timeout, struct gpu_error *err)
{
	return load(v, timeout, false, err);
}

bool leaseview_load_places(struct leaseview *v, struct gpu_error *err)
{
	return load(v, 0, true, err);
}

static bool load(struct leaseview *v, double timeout, bool places, struct gpu_error *err)
{
	*v = (struct leaseview){0};
	struct dclient dc;
	if (!dclient_open(&dc, DC_READ, err))
		return err->code == EXIT_OK;
	if (timeout > 0 && timeout < dc.timeout)
		dc.timeout = timeout;
	struct strbuf req = {0};
	msg_begin(&req, "list");
	msg_add_u64(&req, "id", 1);
	if (places) /* (a daemon older than it answers the full list: read alike) */
		msg_add_u64(&req, "places", 1);
	struct msg m;
	bool ok = dclient_call(&dc, &req, &m, err), more = ok;
	while (more) {
		take_part(v, &m);
		more = !msg_line(&m, "end");
		msg_free(&m);
		int fds[PROTO_MAX_FDS];
		size_t nfds;
		int r = more ? dclient_recv(&dc, &m, fds, &nfds, (int)(dc.timeout * 1000), NULL, err) : 0;
		for (size_t i = 0; r == 1 && i < nfds; i++)
			close(fds[i]);
		if (more && r != 1) {
			if (r == 0) {
				err->code = EXIT_DAEMON;
				snprintf(err->msg, sizeof err->msg, "the gpuctl daemon (pid %d) stopped answering "
					 "in the middle of its list", (int)dc.daemon_pid);
			}
			ok = more = false;
		}
	}
	v->present = ok;
	sb_free(&req);
	dclient_close(&dc);
	if (!ok)
		leaseview_free(v);
	return ok;
}

static int query_start(struct leaseview_query *q, struct leaseview *out, bool places,
		       struct gpu_error *err);

int leaseview_query_start(struct leaseview_query *q, struct leaseview *out, struct gpu_error *err)
{
	return query_start(q, out, false, err);
}

int leaseview_query_places(struct leaseview_query *q, struct leaseview *out, struct gpu_error *err)
{
	return query_start(q, out, true, err);
}

static int query_start(struct leaseview_query *q, struct leaseview *out, bool places,
		       struct gpu_error *err)
{
	*q = (struct leaseview_query){0};
	*out = (struct leaseview){0};
	struct dclient *dc = xmalloc(sizeof *dc);
	if (!dclient_open(dc, DC_READ, err)) {
		free(dc);
		return err->code == EXIT_OK ? 0 : -1;
	}
	struct strbuf req = {0};
	msg_begin(&req, "list");
	msg_add_u64(&req, "id", 1);
	if (places)
		msg_add_u64(&req, "places", 1);
	bool ok = dclient_send(dc, &req, err);
	sb_free(&req);
	if (!ok) {
		dclient_close(dc);
		free(dc);
		return -1;
	}
	q->dc = dc;
	q->timeout = dc->timeout;
	q->deadline = now_mono() + dc->timeout;
	return 1;
}

int leaseview_query_fd(const struct leaseview_query *q)
{
	return q->dc ? ((const struct dclient *)q->dc)->fd : -1;
}

int leaseview_query_step(struct leaseview_query *q, struct leaseview *out, struct gpu_error *err)
{
	struct dclient *dc = q->dc;
	if (!dc)
		return -1;
	int done = 0;
	while (!done) {
		struct msg m;
		int fds[PROTO_MAX_FDS];
		size_t nfds;
		int r = dclient_recv(dc, &m, fds, &nfds, 0, NULL, err);
		for (size_t i = 0; r == 1 && i < nfds; i++)
			close(fds[i]);
		if (r < 0) {
			done = -1;
		} else if (r == 0) {
			if (now_mono() < q->deadline)
				return 0;
			err->code = EXIT_TIMEOUT;
			snprintf(err->msg, sizeof err->msg, "the gpuctl daemon (pid %d, %s) did not answer "
				 "within %.0f s", (int)dc->daemon_pid, dc->path ? dc->path : "?", q->timeout);
			done = -1;
		} else if (!strcmp(msg_verb(&m), "error")) {
			msg_error_read(&m, "the daemon refused the request", err);
			msg_free(&m);
			done = -1;
		} else {
			take_part(&q->v, &m);
			done = msg_line(&m, "end") ? 1 : 0;
			msg_free(&m);
		}
	}
	if (done == 1) {
		q->v.present = true;
		*out = q->v;
		q->v = (struct leaseview){0};
	}
	leaseview_query_cancel(q);
	return done;
}

int leaseview_query_wait(struct leaseview_query *q, struct leaseview *out, struct gpu_error *err)
{
	for (;;) {
		int r = leaseview_query_step(q, out, err);
		if (r != 0)
			return r;
		struct pollfd p = {.fd = leaseview_query_fd(q), .events = POLLIN};
		double left = q->deadline - now_mono();
		poll(&p, 1, left > 0 ? (int)(left * 1000) + 1 : 0);
	}
}

void leaseview_query_cancel(struct leaseview_query *q)
{
	if (q->dc) {
		dclient_close(q->dc);
		free(q->dc);
	}
	leaseview_free(&q->v);
	q->dc = NULL;
}

void leaseview_free(struct leaseview *v)
{
	for (size_t i = 0; i < v->nleases; i++) {
		free(v->leases[i].name);
		free(v->leases[i].command);
		free(v->leases[i].uuids);
		free(v->leases[i].used);
	}
	for (size_t i = 0; i < v->nqueue; i++) {
		free(v->queue[i].name);
		free(v->queue[i].command);
		free(v->queue[i].cand);
	}
	free(v->leases);
	free(v->queue);
	free(v->sums);
	free(v->held);
	free(v->shares);
	*v = (struct leaseview){0};
}

const struct share_gpu *leaseview_share_gpu(const struct leaseview *v, const char *uuid)
{
	for (size_t i = 0; i < v->nshares; i++)
		if (!strcmp(v->shares[i].uuid, uuid))
			return &v->shares[i];
	return NULL;
}

const struct lease_info *leaseview_mig_holder(const struct leaseview *v, const char *mig_uuid)
{
	for (size_t i = 0; mig_uuid[0] && i < v->nleases; i++)
		if (!strcmp(v->leases[i].mig_uuid, mig_uuid))
			return &v->leases[i];
	return NULL;
}

uint64_t leaseview_share_used(const struct lease_info *l, const char *uuid)
{
	for (size_t g = 0; g < l->ngpus && g < l->nused; g++)
		if (!strcmp(l->uuids[g], uuid))
			return l->used[g];
	return 0;
}

const struct lease_info *leaseview_share(const struct leaseview *v, const char *uuid, size_t k)
{
	for (size_t i = 0; i < v->nleases; i++)
		for (size_t g = 0; v->leases[i].mem_mib && g < v->leases[i].ngpus; g++)
			if (!strcmp(v->leases[i].uuids[g], uuid) && k-- == 0)
				return &v->leases[i];
	return NULL;
}

const struct lease_info *leaseview_holder(const struct leaseview *v, const char *uuid)
{
	for (size_t i = 0; i < v->nleases; i++)
		for (size_t k = 0; !v->leases[i].mem_mib && !v->leases[i].mig_uuid[0] &&
				   k < v->leases[i].ngpus; k++)
			if (!strcmp(v->leases[i].uuids[k], uuid))
				return &v->leases[i];
	return NULL; /* (a GPU's shares: leaseview_share) */
}

bool leaseview_held(const struct leaseview *v, const char *uuid)
{
	for (size_t i = 0; i < v->nheld; i++)
		if (!strcmp(v->held[i], uuid))
			return true;
	return false;
}

bool leaseview_holder_alive(const struct lease_info *l)
{
	struct pid_stat st;
	if (l->pid <= 0)
		return true; /* no holder named: nothing to say it exited */
	if (pid_stat((unsigned)l->pid, &st))
		return st.state != 'Z' && (!l->start || st.start == l->start);
	/* Gone, or hidden from this reader (/proc mounted hidepid): only the kernel's "no such
	 * process" says it exited; a process we may not look at is not called dead. */
	return !(kill(l->pid, 0) != 0 && errno == ESRCH);
}

/* Whether pid has a descriptor on a file whose path ends with suffix. */
static bool holds_file(const char *pid, const char *suffix)
{
	char path[64], link[4096];
	snprintf(path, sizeof path, "/proc/%s/fd", pid);
	DIR *fds = opendir(path);
	bool found = false;
	size_t n = strlen(suffix);
	for (struct dirent *e; fds && !found && (e = readdir(fds));) {
		if (e->d_name[0] == '.')
			continue;
		char fd[320];
		snprintf(fd, sizeof fd, "%s/%s", path, e->d_name);
		ssize_t k = readlink(fd, link, sizeof link - 1);
		found = k >= (ssize_t)n && !memcmp(link + k - (ssize_t)n, suffix, n);
	}
	if (fds)
		closedir(fds);
	return found;
}

size_t leaseview_live_holders(const struct lease_info *l, pid_t *out, size_t max)
{
	/* The FIFO is named by its lease's id in the daemon's directory. A process of the lease's
	 * own user could hold a file of that name elsewhere, and so only mislead views of that
	 * user's own lease; no other user's process is ever named. */
	char suffix[40];
	snprintf(suffix, sizeof suffix, "/lease-%s.fifo", l->id);
	DIR *proc = opendir("/proc");
	size_t n = 0;
	for (struct dirent *e; proc && (e = readdir(proc));) {
		uint64_t pid;
		if (!word_u64(e->d_name, INT32_MAX, &pid) || !pid_owner_is((unsigned)pid, l->uid) ||
		    !holds_file(e->d_name, suffix))
			continue;
		if (n < max)
			out[n] = (pid_t)pid;
		n++;
	}
	if (proc)
		closedir(proc);
	return n;
}

int leaseview_end_holder(const struct lease_info *l, char *why, size_t whylen)
{
	int fd = l->pid > 0 ? pid_open((unsigned)l->pid, l->start) : -1;
	if (fd < 0 && errno == ENOSYS) {
		if (l->bound > 0)
			snprintf(why, whylen, "lease %s: its holder (pid %d) left alone: %s; the lease "
				 "ends when the process it is for (pid %d) exits", l->id, (int)l->pid,
				 PID_NO_PIDFD, (int)l->bound);
		else
			snprintf(why, whylen, "lease %s: its holder (pid %d) left alone: %s; end it "
				 "from outside this container or sandbox", l->id, (int)l->pid,
				 PID_NO_PIDFD);
		return -1;
	}
	/* The holder runs as the lease's user. The pid and start time the daemon recorded are those
	 * of the process that committed, read at commit: a client that hands its connection to a
	 * child and exits could have its pid (and start) be another user's process by then, and
	 * root ending that user's leases must not reach it. And with no start time (0: /proc hidden
	 * from the daemon) a pid reused since is caught here too. */
	if (fd >= 0 && !pid_runs_as((unsigned)l->pid, l->uid)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		snprintf(why, whylen, "lease %s: its holder (pid %d) is gone or its pid was reused; left "
			 "alone (the lease ends by itself when its holder does)", l->id, (int)l->pid);
		return -1;
	}
	if (!pid_signal(fd, SIGTERM)) {
		snprintf(why, whylen, "cannot signal the holder of lease %s (pid %d): %s", l->id,
			 (int)l->pid, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}
