/* snap-delta.c: the daemon's snapshot as a delta against the view a client holds (issue 22; the
 * form: snap.h). Ten watch loops each decoding the whole machine every refresh cost ten times a
 * quarter of a megabyte of text at 16 GPUs x 1,000 processes, though little of it changes: a
 * process's owner, command line and name stay, and its memory and samples change only while it
 * runs a different phase. So a client says which view it holds (its serial), and the daemon,
 * which made that view too, sends each run of processes whose record is the same bytes as one of
 * the held view's as "k INDEX COUNT": the client copies them from what it decoded last.
 *
 * The delta is made from the two encodings' texts alone (snap_encode notes where each record
 * lies and whose process it is), once per view and pair, and shared by every asker holding that
 * view: a record is kept only when it is byte for byte the held one of the same GPU and pid, so
 * what the client rebuilds is exactly what the full view would have decoded to. The GPUs'
 * records always travel whole (their readings change every refresh). */
#include "machine/snap.h"

#include <stdlib.h>
#include <string.h>

/* The parts of a delta, cut as snap_encode cuts them (SNAP_CHUNK bytes, SNAP_LINES lines). */
struct out {
	struct snap_parts *o;
	size_t lines;
};

static void add(struct out *x, const char *text, size_t len, size_t lines)
{
	struct snap_parts *o = x->o;
	if (!o->nparts || o->parts[o->nparts - 1].len + len + 1 > SNAP_CHUNK ||
	    x->lines + lines > SNAP_LINES) {
		o->parts = xrealloc(o->parts, (o->nparts + 1) * sizeof *o->parts);
		o->parts[o->nparts++] = (struct strbuf){0};
		x->lines = 2;
	}
	sb_add(&o->parts[o->nparts - 1], text, len);
	x->lines += lines;
	o->bytes += len;
}

static const char *rec_text(const struct snap_parts *p, const struct snap_rec *r)
{
	return p->parts[r->part].buf + r->off;
}

static void flush_run(struct out *x, size_t *start, size_t *count)
{
	if (!*count)
		return;
	char line[64];
	int n = snprintf(line, sizeof line, "\nk %zu %zu", *start, *count);
	add(x, line, (size_t)n, 1);
	*count = 0;
}

/* An open-addressed table of the held view's processes by (GPU, pid). */
static size_t slot_of(uint64_t key, size_t mask)
{
	key *= 0x9E3779B97F4A7C15ULL;
	return (size_t)(key >> 32) & mask;
}

void snap_delta(const struct snap_parts *full, const struct snap_parts *base, uint64_t base_serial,
		struct snap_parts *out)
{
	*out = (struct snap_parts){0};
	struct out x = {.o = out};
	/* the held view's process records, numbered in order, by (GPU, pid) */
	size_t nb = 0;
	for (size_t i = 0; i < base->nrecs; i++)
		nb += base->recs[i].proc;
	size_t size = 16;
	while (size < 2 * nb)
		size *= 2;
	size_t *tab = xmalloc(size * sizeof *tab);   /* a base record's index + 1; 0: empty */
	size_t *num = xmalloc((nb ? nb : 1) * sizeof *num);  /* its process number */
	memset(tab, 0, size * sizeof *tab);
	for (size_t i = 0, k = 0; i < base->nrecs; i++) {
		const struct snap_rec *r = &base->recs[i];
		if (!r->proc)
			continue;
		size_t s = slot_of((uint64_t)r->gpu << 32 | r->pid, size - 1);
		while (tab[s])
			s = (s + 1) & (size - 1);
		tab[s] = i + 1;
		num[k] = i;
		k++;
	}
	/* the process number of each base record, by its index */
	size_t *procno = xmalloc((base->nrecs ? base->nrecs : 1) * sizeof *procno);
	for (size_t k = 0; k < nb; k++)
		procno[num[k]] = k;
	size_t start = 0, count = 0;
	for (size_t i = 0; i < full->nrecs; i++) {
		const struct snap_rec *r = &full->recs[i];
		const char *t = rec_text(full, r);
		if (!r->proc) {
			flush_run(&x, &start, &count);
			add(&x, t, r->len, r->lines);
			if (i == 0) {   /* the header: which view this is a delta against */
				char line[40];
				int n = snprintf(line, sizeof line, "\nbase %llu", (unsigned long long)base_serial);
				add(&x, line, (size_t)n, 1);
			}
			continue;
		}
		size_t s = slot_of((uint64_t)r->gpu << 32 | r->pid, size - 1), hit = 0;
		for (; tab[s]; s = (s + 1) & (size - 1)) {
			const struct snap_rec *b = &base->recs[tab[s] - 1];
			if (b->gpu == r->gpu && b->pid == r->pid) {
				if (b->len == r->len && !memcmp(rec_text(base, b), t, r->len))
					hit = tab[s];
				break;
			}
		}
		if (!hit) {
			flush_run(&x, &start, &count);
			add(&x, t, r->len, r->lines);
			continue;
		}
		size_t k = procno[hit - 1];
		if (count && k == start + count) {
			count++;
		} else {
			flush_run(&x, &start, &count);
			start = k;
			count = 1;
		}
	}
	flush_run(&x, &start, &count);
	free(tab);
	free(num);
	free(procno);
}
