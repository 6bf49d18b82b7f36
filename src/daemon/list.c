/* list.c: what the daemon tells about its state: `list` for clients (leases, GPUs held
 * by unknown processes, the queue in the order it would be served), the queue file STATE/queue
 * that lets waiters keep their place across a restart, and the machine's job-id counter it
 * keeps (`jobid`). Both use proto.h's format; the queue file is a sequence of
 * "<length>\n<message>" records, since one message holds at most PROTO_MAX_MSG bytes. */
#include "daemon/daemon.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIST_CHUNK 60000           /* bytes per `list` message, well under PROTO_MAX_MSG */
#define LIST_LINES (PROTO_MAX_LINES - 16) /* lines per `list` message (a record has at most 9) */
#define QUEUE_FILE_MAX (64u << 20)

static const char *state_name(enum req_state s)
{
	return s == R_OFFERED ? "offered" : s == R_SKIPPED ? "stopped" : s == R_ORPHAN ? "returning"
									   : "waiting";
}

/* Continuation lines of a record: `KEY uuid uuid ...`, 15 per line. Returns how many lines. */
static size_t gpu_lines(struct strbuf *sb, const struct daemon *d, const char *key, uint64_t mask)
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

static void flush_chunk(struct daemon *d, struct conn *c, struct strbuf *sb, uint64_t id, bool last)
{
	if (last)
		msg_add(sb, "end", NULL);
	conn_send(d, c, sb, NULL, 0);
	msg_begin(sb, "list");
	msg_add_u64(sb, "id", id);
}

/* A message is bounded in bytes and in lines: start the next part when either is near. */
static void room(struct daemon *d, struct conn *c, struct strbuf *sb, uint64_t id, size_t *lines)
{
	if (sb->len > LIST_CHUNK || *lines > LIST_LINES) {
		flush_chunk(d, c, sb, id, false);
		*lines = 2;
	}
}

void queue_list(struct daemon *d, struct conn *c, const struct msg *m)
{
	uint64_t id = 0;
	char n[8][24];
	msg_get_u64(m, "id", UINT64_MAX, &id);
	leases_reap(d);
	struct strbuf sb = {0};
	msg_begin(&sb, "list");
	msg_add_u64(&sb, "id", id);
	msg_add_u64(&sb, "daemon", (uint64_t)getpid());
	msg_add_u64(&sb, "private", d->private_mode);
	size_t lines = 4;
	if (d->state_error[0]) { /* its state is not being saved: the list would not survive it */
		msg_add(&sb, "unsaved", d->state_error, NULL);
		lines++;
	}
	for (size_t i = 0; i < d->nleases; i++) {
		const struct lease *l = d->leases[i];
		room(d, c, &sb, id, &lines);
		snprintf(n[0], sizeof n[0], "%u", (unsigned)l->uid);
		snprintf(n[1], sizeof n[1], "%d", (int)l->pid);
		snprintf(n[2], sizeof n[2], "%llu", l->start);
		snprintf(n[3], sizeof n[3], "%d", (int)l->bound);
		snprintf(n[4], sizeof n[4], "%lld", (long long)l->since);
		msg_add(&sb, "lease", l->id, n[0], n[1], n[2], n[3], l->kind, n[4], NULL);
		if (l->name)
			msg_add(&sb, "lname", l->name, NULL);
		if (l->command)
			msg_add(&sb, "lcmd", l->command, NULL);
		lines += 3 + gpu_lines(&sb, d, "lgpu", l->gpus);
	}
	for (size_t i = 0; i < d->nslots; i++)
		if (d->slots[i].held_unknown) {
			room(d, c, &sb, id, &lines);
			msg_add(&sb, "held", d->slots[i].uuid, NULL);
			lines++;
		}
	/* The waiters in the order they would be served, their positions that order's. */
	msg_add(&sb, "queue", d->conf.queue == QUEUE_FIFO ? "fifo" : "fair", NULL);
	lines++;
	struct request **w;
	size_t nw = queue_in_order(d, &w), pos = 0;
	for (size_t i = 0; i < nw; i++) {
		const struct request *r = w[i];
		room(d, c, &sb, id, &lines);
		snprintf(n[0], sizeof n[0], "%llu", (unsigned long long)r->seq);
		snprintf(n[1], sizeof n[1], "%zu", ++pos);
		snprintf(n[2], sizeof n[2], "%u", (unsigned)r->uid);
		snprintf(n[3], sizeof n[3], "%d", (int)r->pid);
		snprintf(n[4], sizeof n[4], "%u", r->req.count);
		snprintf(n[5], sizeof n[5], "%lld", (long long)r->since);
		msg_add(&sb, "waiter", n[0], n[1], n[2], n[3], n[4], n[5], state_name(r->state), r->kind,
			NULL);
		if (r->name)
			msg_add(&sb, "wname", r->name, NULL);
		if (r->command)
			msg_add(&sb, "wcmd", r->command, NULL);
		/* Why it holds no GPUs back, or that it is the head (sched.c). */
		static const char *const notes[] = {[N_HEAD] = "head", [N_OWN] = "own-leases",
			[N_EXPIRED] = "reserve-expired", [N_BACKOFF] = "backed-off"};
		if (r->state == R_WAITING && r->note != N_NONE)
			msg_add(&sb, "wnote", notes[r->note], NULL);
		lines += 4 + gpu_lines(&sb, d, "wgpu", r->req.cand);
	}
	free(w);
	flush_chunk(d, c, &sb, id, true);
	sb_free(&sb);
}

/* ---- the queue file ---- */

static void record(struct strbuf *out, const struct strbuf *msg)
{
	sb_addf(out, "%zu\n", msg->len);
	sb_add(out, msg->buf, msg->len);
}

/* Job ids for the users' job runners (`gpuctl submit`): one counter for the machine, so a job id
 * names one job whoever asks about it. `min` is the runner's highest id so far plus one: after a
 * reboot resets this counter, a user's new jobs still never take an id their old records hold. */
#define JOB_IDS_PER_CALL 100000
#define JOB_ID_MIN_MAX (1ULL << 40)

void queue_job_ids(struct daemon *d, struct conn *c, const struct msg *m)
{
	uint64_t id = 0, n = 1, min = 0;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	if ((msg_line(m, "count") && (!msg_get_u64(m, "count", JOB_IDS_PER_CALL, &n) || !n)) ||
	    (msg_line(m, "min") && !msg_get_u64(m, "min", JOB_ID_MIN_MAX, &min))) {
		conn_error(d, c, id, EXIT_USAGE, "jobid: count is 1-%d, min at most %llu", JOB_IDS_PER_CALL,
			   (unsigned long long)JOB_ID_MIN_MAX);
		return;
	}
	if (d->next_job < min)
		d->next_job = min;
	if (!d->next_job)
		d->next_job = 1;
	struct strbuf sb = {0};
	msg_begin(&sb, "jobid");
	msg_add_u64(&sb, "id", id);
	msg_add_u64(&sb, "first", d->next_job);
	msg_add_u64(&sb, "count", n);
	conn_send(d, c, &sb, NULL, 0);
	sb_free(&sb);
	d->next_job += n;
	d->queue_dirty = true;
}

void queue_save(struct daemon *d)
{
	struct strbuf out = {0}, sb = {0};
	char n[12][24];
	d->queue_dirty = false;
	msg_begin(&sb, "queue");
	msg_add_u64(&sb, "next", d->next_seq);
	if (d->next_job)
		msg_add_u64(&sb, "jobs", d->next_job);
	record(&out, &sb);
	for (size_t i = 0; i < d->nreqs; i++) {
		const struct request *r = d->reqs[i];
		if (!r->req.queued)
			continue;
		snprintf(n[0], sizeof n[0], "%llu", (unsigned long long)r->seq);
		snprintf(n[1], sizeof n[1], "%u", (unsigned)r->uid);
		snprintf(n[2], sizeof n[2], "%d", (int)r->pid);
		snprintf(n[3], sizeof n[3], "%lld", (long long)r->since);
		snprintf(n[4], sizeof n[4], "%u", r->req.count);
		snprintf(n[5], sizeof n[5], "%llu", (unsigned long long)r->req.min_free_mib);
		snprintf(n[6], sizeof n[6], "%d", r->req.max_util);
		snprintf(n[7], sizeof n[7], "%d", r->req.ignore_usage);
		snprintf(n[8], sizeof n[8], "%d", (int)r->req.prefer);
		msg_begin(&sb, "req");
		msg_add(&sb, "r", n[0], r->ticket, n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8], r->kind,
			NULL);
		if (r->name)
			msg_add(&sb, "name", r->name, NULL);
		if (r->command)
			msg_add(&sb, "command", r->command, NULL);
		gpu_lines(&sb, d, "gpu", r->req.cand);
		record(&out, &sb);
	}
	daemon_write_state(d, "queue", out.buf, out.len);
	sb_free(&sb);
	sb_free(&out);
}

static struct request *load_req(struct daemon *d, const struct msg *m)
{
	const struct msg_line *l = msg_line(m, "r");
	uint64_t v[10];
	if (!l || l->nwords != 12 || strlen(l->w[2]) != 32)
		return NULL;
	/* seq uid pid since count min_free max_util ignore prefer: words 1, 3-10 */
	static const int idx[] = {1, 3, 4, 5, 6, 7};
	for (size_t k = 0; k < ARRAY_SIZE(idx); k++)
		if (!word_u64(l->w[idx[k]], UINT64_MAX, &v[k]))
			return NULL;
	uint64_t ign, pref;
	if (!word_u64(l->w[9], 1, &ign) || !word_u64(l->w[10], 2, &pref) || v[4] == 0 || v[4] > 64)
		return NULL;
	struct request *r = xcalloc(1, sizeof *r);
	r->seq = v[0];
	snprintf(r->ticket, sizeof r->ticket, "%s", l->w[2]);
	r->uid = (uid_t)v[1];
	r->pid = (pid_t)v[2];
	r->since = (time_t)v[3];
	r->req.count = (unsigned)v[4];
	r->req.min_free_mib = v[5];
	r->req.max_util = atoi(l->w[8]) >= 0 && atoi(l->w[8]) <= 100 ? atoi(l->w[8]) : -1;
	r->req.ignore_usage = ign;
	r->req.prefer = (enum prefer)pref;
	r->req.queued = true;
	snprintf(r->kind, sizeof r->kind, "%s", strlen(l->w[11]) < sizeof r->kind ? l->w[11] : "run");
	const char *s;
	if ((s = msg_get(m, "name")))
		r->name = xstrdup(s);
	if ((s = msg_get(m, "command")))
		r->command = xstrdup(s);
	for (size_t i = 1; i < m->nlines; i++)
		for (size_t w = 1; !strcmp(m->lines[i].w[0], "gpu") && w < m->lines[i].nwords; w++)
			for (size_t k = 0; k < d->nslots; k++)
				if (!strcmp(m->lines[i].w[w], d->slots[k].uuid))
					r->req.cand |= 1ULL << k;
	r->state = R_ORPHAN;
	r->deadline = d->now + d->conf.orphan_grace;
	return r;
}

/* Whether a lease recovered from the previous daemon granted request seq: the queue file is
 * written after each batch of events, so a daemon killed between a grant and that write left
 * the granted request in it, a waiter that would never come back (listed for orphan_grace). */
static bool granted(const struct daemon *d, uint64_t seq)
{
	for (size_t k = 0; k < d->nslots; k++)
		if (d->slots[k].holder && d->slots[k].holder->seq == seq)
			return true;
	return false;
}

/* The queue of a previous daemon: its waiters get orphan_grace to reconnect with their ticket
 * and keep their place; until then they hold nothing up. Call after leases_recover. */
void queue_load(struct daemon *d)
{
	int fd = openat(d->dirfd, "queue", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (size_t)st.st_size > QUEUE_FILE_MAX) {
		close(fd);
		return;
	}
	char *buf = xmalloc((size_t)st.st_size + 1);
	ssize_t len = read(fd, buf, (size_t)st.st_size);
	close(fd);
	size_t pos = 0, loaded = 0;
	while (len > 0 && pos < (size_t)len) {
		char *nl = memchr(buf + pos, '\n', (size_t)len - pos);
		unsigned long n;
		if (!nl)
			break;
		*nl = '\0';
		if (!parse_uint(buf + pos, &n) || n > PROTO_MAX_MSG || n > (size_t)len - (size_t)(nl + 1 - buf))
			break;
		struct msg m;
		char why[128];
		uint64_t next;
		if (msg_decode(&m, nl + 1, n, why, sizeof why)) {
			struct request *r;
			if (!strcmp(msg_verb(&m), "queue") && msg_get_u64(&m, "next", UINT64_MAX, &next)) {
				if (next > d->next_seq)
					d->next_seq = next;
				if (msg_get_u64(&m, "jobs", UINT64_MAX, &next) && next > d->next_job)
					d->next_job = next;
			} else if (!strcmp(msg_verb(&m), "req") && (r = load_req(d, &m))) {
				if (r->seq >= d->next_seq)
					d->next_seq = r->seq + 1;
				if (granted(d, r->seq)) {
					queue_request_free(r);
					msg_free(&m);
					pos = (size_t)(nl + 1 - buf) + n;
					continue;
				}
				d->reqs = grow_array(d->reqs, &d->reqs_cap, d->nreqs + 1, sizeof *d->reqs);
				d->reqs[d->nreqs++] = r;
				loaded++;
			}
			msg_free(&m);
		}
		pos = (size_t)(nl + 1 - buf) + n;
	}
	free(buf);
	if (loaded) /* give them a moment to come back before anyone behind them is served */
		d->settle_until = d->now + (d->conf.orphan_grace < 2 ? d->conf.orphan_grace : 2);
	if (loaded)
		fprintf(stderr, "gpuctl daemon: %zu waiter%s of the previous daemon keep their place for "
			"%.0f s while they reconnect\n", loaded, loaded == 1 ? "" : "s", d->conf.orphan_grace);
}
