/* queuefile.c: the queue file STATE/queue (design: daemon.h), which lets waiters keep their
 * place across a daemon's restart, and the job-id counter's mark with them: written when the
 * queue changed (waiters only), read back by a starting daemon. proto.h's format: a sequence of
 * "<length>\n<message>" records, since one message holds at most PROTO_MAX_MSG bytes; a
 * request already granted (its lease recovered) is not queued again. */
#include "daemon/daemon.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define QUEUE_FILE_MAX (64u << 20)

static void record(struct strbuf *out, const struct strbuf *msg)
{
	sb_addf(out, "%zu\n", msg->len);
	sb_add(out, msg->buf, msg->len);
}

void queue_save(struct daemon *d)
{
	struct strbuf out = {0}, sb = {0};
	char n[12][24];
	d->queue_dirty = false;
	msg_begin(&sb, "queue");
	msg_add_u64(&sb, "next", d->next_seq);
	if (d->next_job)
		msg_add_u64(&sb, "jobs", d->jobs_saved > d->next_job ? d->jobs_saved : d->next_job);
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
		list_gpu_lines(&sb, d, "gpu", r->req.cand);
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
	if (!word_u64(l->w[9], 1, &ign) || !word_u64(l->w[10], PREFER_TOPOLOGY, &pref) || v[4] == 0 || v[4] > 64)
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
		r->name = xstrndup(s, REQ_NAME_MAX);
	if ((s = msg_get(m, "command")))
		r->command = xstrndup(s, REQ_COMMAND_MAX);
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
	/* The file's "next" is not rewritten for requests that did not wait (queue_remove): a live
	 * lease's record says which request it granted, and no new request may take that seq
	 * (granted() would then drop it from the next daemon's queue). */
	for (size_t i = 0; i < d->nleases; i++)
		if (d->leases[i]->seq >= d->next_seq)
			d->next_seq = d->leases[i]->seq + 1;
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
