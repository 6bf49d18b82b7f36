/* usage.c: fair share by past use (issue 24; design: daemon.h): each user's GPU-seconds, decayed
 * with [daemon] usage_half_life (Slurm's PriorityDecayHalfLife), kept in STATE/usage across
 * restarts. The fair queue (alloc.c) serves, of users holding as many GPUs now, the one with the
 * least recent use first; `queue = fair-held` is the rule without it (held now, then served
 * longest ago).
 *
 * - Accounting is exact between events: usage_advance() credits every user the GPUs its leases
 *   hold since the last advance, decayed (n GPUs over dt add n * h/ln2 * (1 - 2^-dt/h), and what
 *   was there decays by 2^-dt/h), and runs before a lease is added or ends (lease.c) and before
 *   each pass reads the values. One entry per user that ever held a lease: bounded by the users.
 * - The daemon is the one writer of STATE/usage (mode 0600 in its 0700 directory). It is written
 *   at most every USAGE_SAVE_SECONDS while something changed (on a wake the daemon makes anyway
 *   where one comes soon after: usage_save_due), and when the daemon stops. A write
 *   that fails (a full disk) keeps everything in memory, is retried, and is said to the users
 *   (`leases`: the state is unsaved). A file that cannot be read as usage is moved aside
 *   (STATE/usage.corrupt), never overwritten, and the daemon says so and starts from none. */
#include "daemon/daemon.h"
#include "base/dl.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define USAGE_FILE_MAX (4u << 20)
#define USAGE_SAVE_SECONDS 10.0     /* STATE/usage written at most this often */

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static struct past *past_of(struct daemon *d, uid_t uid, bool make)
{
	for (size_t k = 0; k < d->npast; k++)
		if (d->past[k].uid == uid)
			return &d->past[k];
	if (!make)
		return NULL;
	d->past = grow_array(d->past, &d->past_cap, d->npast + 1, sizeof *d->past);
	d->past[d->npast] = (struct past){.uid = uid};
	return &d->past[d->npast++];
}

/* 2^x for the decay (x <= 0): libm's exp2, loaded by the daemon at its first use. Linked into
 * gpuctl, libm was loaded by every command for this one function (issue 22: 0.1 ms of each
 * start). Without it (it is part of glibc: never seen), ldexp and a series. */
static double pow2(double x)
{
	static double (*fn)(double);
	static bool tried;
	if (!tried) {
		static const char *const so[] = {"libm.so.6", NULL}, *const names[] = {"exp2", NULL};
		const char *loaded;
		char why[256];
		void *dl = dl_open(so, &loaded, why, sizeof why);
		tried = true;
		if (dl && dl_resolve(dl, &fn, names) < 0)
			fn = NULL;
	}
	if (fn)
		return fn(x);
	if (x < -1e6)
		return 0;
	long long k = (long long)x;
	if ((double)k > x)
		k--;
	double t = (x - (double)k) * M_LN2, term = 1, sum = 1; /* e^t, t in [0, ln 2) */
	for (int n = 1; n < 24; n++)
		sum += term *= t / n;
	return ldexp(sum, (int)k);
}

void usage_advance(struct daemon *d)
{
	uint64_t now = realtime_ns();
	if (!d->past_at || now <= d->past_at) {
		d->past_at = now;
		return;
	}
	double dt = (double)(now - d->past_at) / 1e9, h = d->conf.usage_half_life;
	double f = h > 0 ? pow2(-dt / h) : 1, gain = h > 0 ? h / M_LN2 * (1 - f) : dt;
	for (size_t k = 0; k < d->npast; k++)
		d->past[k].gpu_seconds *= f;
	for (size_t i = 0; i < d->nleases; i++) {
		const struct lease *l = d->leases[i];
		unsigned n = (unsigned)__builtin_popcountll(l->gpus);
		if (n && l->uid != (uid_t)-1) {
			past_of(d, l->uid, true)->gpu_seconds += n * gain;
			d->past_dirty = true;
		}
	}
	d->past_at = now;
}

double usage_of(const struct daemon *d, uid_t uid)
{
	for (size_t k = 0; k < d->npast; k++)
		if (d->past[k].uid == uid)
			return d->past[k].gpu_seconds;
	return 0;
}

double *usage_users(struct daemon *d, struct request *const *reqs, size_t n,
		    const struct alloc_req *rq, size_t nusers)
{
	if (d->conf.queue != QUEUE_FAIR)
		return NULL;
	usage_advance(d);
	double *past = xcalloc(nusers ? nusers : 1, sizeof *past);
	bool *seen = xcalloc(nusers ? nusers : 1, sizeof *seen);
	for (size_t i = 0; i < n; i++)
		if (rq[i].user < nusers && !seen[rq[i].user]) {
			seen[rq[i].user] = true;
			past[rq[i].user] = usage_of(d, reqs[i]->uid);
		}
	free(seen);
	return past;
}

void usage_render(struct daemon *d, struct strbuf *sb)
{
	usage_advance(d);
	msg_begin(sb, "usage");
	msg_add_u64(sb, "at", d->past_at);
	for (size_t k = 0; k < d->npast; k++) {
		char v[32];
		if (d->past[k].gpu_seconds < 1e-3)
			continue; /* decayed to nothing: forgotten */
		snprintf(v, sizeof v, "%.3f", d->past[k].gpu_seconds);
		msg_key(sb, "u");
		msg_word_u64(sb, d->past[k].uid);
		msg_word(sb, v);
	}
}

void usage_load(struct daemon *d)
{
	int fd = openat(d->dirfd, "usage", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno != ENOENT)
			fprintf(stderr, "gpuctl daemon: cannot read %s/usage: %s; past use starts from none "
				"(the file is left as it is)\n", d->state_dir, strerror(errno));
		return;
	}
	struct stat st;
	char *buf = NULL;
	ssize_t len = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= USAGE_FILE_MAX) {
		buf = xmalloc((size_t)st.st_size + 1);
		len = read(fd, buf, (size_t)st.st_size);
	}
	close(fd);
	struct msg m = {0};
	char why[128] = "not a regular file of at most 4 MiB";
	bool ok = len >= 0 && msg_decode(&m, buf, (size_t)len, why, sizeof why) &&
		  !strcmp(msg_verb(&m), "usage");
	uint64_t at = 0;
	for (size_t i = 1; ok && i < m.nlines; i++) {
		const struct msg_line *l = &m.lines[i];
		uint64_t uid;
		char *end;
		if (!strcmp(l->w[0], "at")) {
			ok = l->nwords == 2 && word_u64(l->w[1], UINT64_MAX, &at);
		} else if (!strcmp(l->w[0], "u")) {
			double v = l->nwords == 3 ? strtod(l->w[2], &end) : -1;
			ok = l->nwords == 3 && word_u64(l->w[1], UINT32_MAX - 1, &uid) && *end == '\0' &&
			     v >= 0 && v < 1e15;
			if (ok)
				past_of(d, (uid_t)uid, true)->gpu_seconds = v;
		}
		if (!ok)
			snprintf(why, sizeof why, "line %zu is not usage", i + 1);
	}
	if (len >= 0)
		msg_free(&m);
	free(buf);
	if (!ok) {
		d->npast = 0;
		/* Kept for whoever wants to look (or restore it): nothing is overwritten. */
		bool moved = renameat(d->dirfd, "usage", d->dirfd, "usage.corrupt") == 0;
		fprintf(stderr, "gpuctl daemon: %s/usage cannot be read as past use (%s): %s; the fair "
			"queue starts from no past use\n", d->state_dir, why,
			moved ? "moved aside to usage.corrupt" : "left as it is, and not written over");
		d->past_keep = !moved;
		return;
	}
	d->past_at = at; /* decayed (and no one credited) from then to now */
	uint64_t now = realtime_ns();
	if (at && now > at && d->conf.usage_half_life > 0) {
		double f = pow2(-(double)(now - at) / 1e9 / d->conf.usage_half_life);
		for (size_t k = 0; k < d->npast; k++)
			d->past[k].gpu_seconds *= f;
	}
	d->past_at = now;
	fprintf(stderr, "gpuctl daemon: past use of %zu user%s read from %s/usage\n", d->npast,
		d->npast == 1 ? "" : "s", d->state_dir);
}

bool usage_save_due(struct daemon *d, double *next)
{
	if (!d->past_dirty || d->past_keep)
		return false;
	double due = d->past_saved + USAGE_SAVE_SECONDS;
	if (d->now >= due)
		return true;
	/* Written on the first wake past due; a wake of its own only some seconds later: while a
	 * lease lives the daemon wakes every usage_poll anyway to look at the leased GPUs
	 * (idle.c), and the write rides on that look (issue 22: the queue's idle daemon woke once
	 * more for it). At most USAGE_SAVE_SECONDS later than due. */
	double slack = d->nleases ? d->conf.usage_poll : 0;
	double wake = due + (slack < USAGE_SAVE_SECONDS ? slack : USAGE_SAVE_SECONDS);
	if (!*next || wake < *next)
		*next = wake;
	return false;
}
