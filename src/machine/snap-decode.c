/* snap-decode.c: the client's side of the daemon's snapshot (the form: snap.h): a strict
 * decoder of its parts into a gpu_set (every value checked, GPUs, MIG devices and processes
 * bounded; another version or field count refused), with a delta's "k" lines copied from the
 * view held (snap-delta.c). Strings live in the decoder's store, blocks that never move. */
#include "machine/snap.h"
#include "machine/snap-fields.h"
#include "machine/runtime.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- decoding ---- */

#define STORE_BLOCK 65536

/* The strings of a decoded snapshot, in blocks that never move. */
struct snap_store {
	char **blocks;
	size_t nblocks;
	size_t used, cap;         /* in the last block */
};

void snap_store_free(struct snap_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nblocks; i++)
		free(s->blocks[i]);
	free(s->blocks);
	free(s);
}

/* n bytes in the last block (a new one when they do not fit), at a multiple of align from the
 * block's start (malloc's blocks are aligned for any type). */
static void *store_room(struct snap_store *s, size_t n, size_t align)
{
	size_t pad = s->nblocks ? (align - s->used % align) % align : 0;
	if (!s->nblocks || s->used + pad + n > s->cap) {
		size_t cap = n > STORE_BLOCK ? n : STORE_BLOCK;
		s->blocks = xrealloc(s->blocks, (s->nblocks + 1) * sizeof *s->blocks);
		s->blocks[s->nblocks++] = xmalloc(cap);
		s->used = pad = 0;
		s->cap = cap;
	}
	char *p = s->blocks[s->nblocks - 1] + s->used + pad;
	s->used += pad + n;
	return p;
}

static const char *store_add(struct snap_store *s, const char *w, size_t n)
{
	char *p = store_room(s, n + 1, 1);
	memcpy(p, w, n);
	p[n] = '\0';
	return p;
}

void snap_decode_begin(struct snap_decoder *dx, struct gpu_set *set)
{
	*dx = (struct snap_decoder){.set = set, .store = xcalloc(1, sizeof *dx->store), .gpu = -1,
				    .in_order = true};
}

bool snap_decode_same_procs(const struct snap_decoder *dx)
{
	return dx->done && dx->adopted && dx->base && dx->base->serial && !dx->fresh &&
	       dx->in_order && dx->procs == dx->base->n;
}

/* A string word: "=text" (into out, cut to n bytes) or "!" (none: false, out ""). */
static bool str_word(const char *w, const char **text, bool *ok)
{
	if (w[0] == '=') {
		*text = w + 1;
		return true;
	}
	*text = NULL;
	if (strcmp(w, "!"))
		*ok = false;
	return false;
}

/* (a copy, not snprintf: five of these a GPU were a third of a refresh's decoding) */
static void str_into(char *out, size_t n, const char *w, bool *ok)
{
	const char *t;
	str_word(w, &t, ok);
	size_t len = t ? strnlen(t, n - 1) : 0;
	memcpy(out, t ? t : "", len);
	out[len] = '\0';
}

static const char *str_kept(struct snap_decoder *dx, const char *w, bool *ok)
{
	const char *t;
	return str_word(w, &t, ok) ? store_add(dx->store, t, strlen(t)) : NULL;
}

/* A decimal word, as word_u64 reads it (digits only, no sign or space, at most max), by hand:
 * strtoull was a third of a client's time on a snapshot of 1,000 processes. */
static uint64_t num(const char *w, uint64_t max, bool *ok)
{
	uint64_t v = 0;
	const char *p = w;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10) {
			*ok = false;
			return 0;
		}
		v = v * 10 + d;
	}
	if (p == w || *p || v > max) {
		*ok = false;
		return 0;   /* never a value past max, even to a caller that reads on */
	}
	return v;
}

/* A container's id ("=" and lowercase hex, not empty) or a pod's uid (hex and '-', may be
 * empty) into out (n bytes with its NUL); false on anything else or longer. */
static bool hex_word(const char *w, char *out, size_t n, bool uid)
{
	if (w[0] != '=')
		return false;
	size_t len = 0;
	for (const char *c = w + 1; *c; c++, len++)
		if (len + 1 >= n || !((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') ||
				      (uid && *c == '-')))
			return false;
	if (!len && !uid)
		return false;
	memcpy(out, w + 1, len + 1);
	return true;
}

static double dbl(const char *w, bool *ok)
{
	char *end;
	double v = strtod(w, &end);
	if (*end || end == w)
		*ok = false;
	return v;
}

static void field_set(struct gpu *g, size_t i, uint64_t v)
{
	char *p = (char *)g + fields[i].off;
	switch (fields[i].type) {
	case U32: *(unsigned *)(void *)p = (unsigned)v; break;
	case I32: *(int *)(void *)p = (int)(int32_t)(uint32_t)v; break;
	default: *(uint64_t *)(void *)p = v; break;
	}
}

static struct gpu *cur_gpu(struct snap_decoder *dx)
{
	return dx->gpu >= 0 ? &dx->set->gpus[dx->gpu] : NULL;
}

static const char *kept_copy(struct snap_decoder *dx, const char *t)
{
	return t && !dx->adopted ? store_add(dx->store, t, strlen(t)) : t;
}

void snap_decode_adopt(struct snap_decoder *dx, struct snap_store *held)
{
	if (!held)
		return;
	snap_store_free(dx->store);
	dx->store = held;
	dx->adopted = true;
}

/* A delta's "k I N": the held view's processes I..I+N-1, each of this GPU, copied (their
 * strings into this decoder's store unless it adopted the held view's, so the held view may go
 * once the answer is taken). */
static bool keep(struct snap_decoder *dx, struct gpu *g, uint64_t i, uint64_t n, bool ok,
		 char *why, size_t whylen)
{
	const struct snap_base *b = dx->base;
	if (!ok || !n || i > b->n || n > b->n - i || dx->procs + n > SNAP_MAX_PROCS) {
		snprintf(why, whylen, "a malformed 'k' line (past the held view)");
		return false;
	}
	/* All of this GPU's processes in the held view, and nothing before them: the same list */
	unsigned gi = (unsigned)dx->gpu;
	if (i != dx->procs)
		dx->in_order = false;
	bool whole = !g->nprocs && (i == 0 || b->gpu[i - 1] != gi) && (i + n == b->n || b->gpu[i + n] != gi);
	g->procs = grow_array(g->procs, &g->procs_cap, g->nprocs + n, sizeof *g->procs);
	for (size_t k = i; k < i + n; k++) {
		if (b->gpu[k] != (unsigned)dx->gpu) {
			snprintf(why, whylen, "a 'k' line naming another GPU's process");
			return false;
		}
		struct gpu_proc *p = &g->procs[g->nprocs++];
		*p = b->procs[k];
		p->user = kept_copy(dx, p->user);
		p->cmdline = kept_copy(dx, p->cmdline);
		p->name = kept_copy(dx, p->name);
		if (p->ctr && !dx->adopted) {
			struct ctr_info *ci = store_room(dx->store, sizeof *ci, _Alignof(max_align_t));
			*ci = *p->ctr;
			p->ctr = ci;
		}
	}
	dx->procs += n;
	g->procs_from = whole ? b->serial : 0;
	return true;
}

void snap_base_take(struct snap_base *b, const struct gpu_set *set, uint64_t serial)
{
	*b = (struct snap_base){0};
	snap_base_retake(b, set, serial);
}

void snap_base_retake(struct snap_base *b, const struct gpu_set *set, uint64_t serial)
{
	size_t n = 0;
	for (size_t i = 0; i < set->ngpus; i++)
		n += set->gpus[i].nprocs;
	if (n > b->cap || !b->procs) {   /* else the arrays of the base before, warm: no new pages */
		free(b->procs);
		free(b->gpu);
		b->cap = n ? n : 1;
		b->procs = xmalloc(b->cap * sizeof *b->procs);
		b->gpu = xmalloc(b->cap * sizeof *b->gpu);
	}
	b->serial = serial;
	b->n = n;
	size_t k = 0;
	for (size_t i = 0; i < set->ngpus; i++) {
		size_t m = set->gpus[i].nprocs;
		if (m)
			memcpy(&b->procs[k], set->gpus[i].procs, m * sizeof *b->procs);
		for (size_t j = 0; j < m; j++)
			b->gpu[k + j] = (unsigned)i;
		k += m;
	}
}

void snap_base_free(struct snap_base *b)
{
	free(b->procs);
	free(b->gpu);
	*b = (struct snap_base){0};
}

static bool line(struct snap_decoder *dx, const struct msg_line *l, char *why, size_t whylen)
{
	const char *k = l->w[0];
	size_t n = l->nwords;
	struct gpu_set *set = dx->set;
	struct gpu *g = cur_gpu(dx);
	struct gpu_proc *p = g && g->nprocs ? &g->procs[g->nprocs - 1] : NULL;
	bool ok = true;
	if (g && k[0] == 'p') {   /* a process line ("p", "pi", "pc", "ps"): the list is not the held one */
		g->procs_from = 0;
		dx->fresh = true;     /* nor is the base (snap_decode_same_procs): a kept one rewritten */
	}
	/* Process lines first: nearly all lines are theirs. */
	if (g && k[0] == 'p' && !strcmp(k, "p") && n == NPROCFIELDS + 1) {
		if (++dx->procs > SNAP_MAX_PROCS) {
			snprintf(why, whylen, "over %u processes", SNAP_MAX_PROCS);
			return false;
		}
		g->procs = grow_array(g->procs, &g->procs_cap, g->nprocs + 1, sizeof *g->procs);
		p = &g->procs[g->nprocs++];
		*p = (struct gpu_proc){0};
		p->pid = (unsigned)num(l->w[1], UINT32_MAX, &ok);
		p->type = (unsigned)num(l->w[2], UINT32_MAX, &ok);
		p->mem_valid = num(l->w[3], 1, &ok);
		p->used_mem = num(l->w[4], UINT64_MAX, &ok);
		p->gi = (unsigned)num(l->w[5], UINT32_MAX, &ok);
		p->ci = (unsigned)num(l->w[6], UINT32_MAX, &ok);
		p->uid_valid = num(l->w[7], 1, &ok);
		p->uid = (uid_t)num(l->w[8], UINT32_MAX, &ok);
		p->slurm_job = (unsigned)num(l->w[9], UINT32_MAX, &ok);
		p->util_valid = num(l->w[10], 1, &ok);
		p->sm_util = (unsigned)num(l->w[11], UINT32_MAX, &ok);
		p->mem_util = (unsigned)num(l->w[12], UINT32_MAX, &ok);
		p->enc_util = (unsigned)num(l->w[13], UINT32_MAX, &ok);
		p->dec_util = (unsigned)num(l->w[14], UINT32_MAX, &ok);
		p->util_time_us = num(l->w[15], UINT64_MAX, &ok);
	} else if (g && !strcmp(k, "pi") && n == 4 && p) {
		p->user = str_kept(dx, l->w[1], &ok);
		p->cmdline = str_kept(dx, l->w[2], &ok);
		p->name = str_kept(dx, l->w[3], &ok);
	} else if (g && !strcmp(k, "pc") && n == 6 && p && !p->ctr) {
		/* the snapshot's containers (issue 22): a container's id as its cgroup said */
		struct ctr_info *ci = store_room(dx->store, sizeof *ci, _Alignof(max_align_t));
		*ci = (struct ctr_info){0};
		ci->ref.runtime = (unsigned char)num(l->w[1], CTR_KUBERNETES, &ok);
		ci->ref.rootless = num(l->w[2], 1, &ok);
		ci->ref.owner_uid = (uid_t)num(l->w[3], UINT32_MAX, &ok);
		ok = ok && ci->ref.runtime != CTR_NONE &&
		     hex_word(l->w[4], ci->ref.id, sizeof ci->ref.id, false) &&
		     hex_word(l->w[5], ci->ref.pod_uid, sizeof ci->ref.pod_uid, true);
		p->ctr = ci;
	} else if (g && !strcmp(k, "ps") && n == 9 && p) {
		bool neg = !strcmp(l->w[1], "-1");
		uint64_t pp = num(l->w[2], INT32_MAX, &ok);
		p->ppid = neg ? -(int)pp : (int)pp;
		p->start = num(l->w[3], UINT64_MAX, &ok);
		p->rss = num(l->w[4], UINT64_MAX, &ok);
		p->cpu_time = dbl(l->w[5], &ok);
		p->elapsed = dbl(l->w[6], &ok);
		p->cpu_valid = num(l->w[7], 1, &ok);
		p->cpu_pct = dbl(l->w[8], &ok);
		p->stat_valid = true;
	} else if (!strcmp(k, "snap")) {
		if (n != 6 || set->gpus || num(l->w[1], UINT32_MAX, &ok) != SNAP_VERSION ||
		    num(l->w[2], UINT32_MAX, &ok) != NFIELDS || num(l->w[3], UINT32_MAX, &ok) != NPROCFIELDS) {
			snprintf(why, whylen, "a snapshot of another form (version, fields)");
			return false;
		}
		dx->what = (unsigned)num(l->w[4], UINT32_MAX, &ok);
		set->ngpus = num(l->w[5], GPU_MAX, &ok);
		if (!ok) {
			snprintf(why, whylen, "a malformed value on the 'snap' line");
			set->ngpus = 0;
			return false;
		}
		set->gpus = xcalloc(set->ngpus ? set->ngpus : 1, sizeof *set->gpus);
		for (size_t i = 0; i < set->ngpus; i++)
			set->gpus[i].selected = true;
	} else if (!set->gpus) {
		snprintf(why, whylen, "'%.20s' before the snapshot's first line", k);
		return false;
	} else if (!strcmp(k, "serial") && n == 2 && !dx->serial && dx->gpu < 0) {
		dx->serial = num(l->w[1], UINT64_MAX, &ok);
	} else if (!strcmp(k, "base") && n == 2 && dx->gpu < 0) {
		/* a delta (snap-delta.c): against the view this decoder holds, and no other */
		uint64_t b = num(l->w[1], UINT64_MAX, &ok);
		if (ok && (!dx->base || !dx->base->serial || b != dx->base->serial)) {
			snprintf(why, whylen, "a delta against view %llu, not the one held",
				 (unsigned long long)b);
			return false;
		}
	} else if (g && !strcmp(k, "k") && n == 3 && dx->base) {
		return keep(dx, g, num(l->w[1], SNAP_MAX_PROCS, &ok), num(l->w[2], SNAP_MAX_PROCS, &ok),
			    ok, why, whylen);
	} else if (!strcmp(k, "drv") && n == 2) {
		str_into(set->driver_version, sizeof set->driver_version, l->w[1], &ok);
		set->has_driver_version = true;
	} else if (!strcmp(k, "cuda") && n == 2) {
		set->cuda_version = (int)num(l->w[1], INT32_MAX, &ok);
	} else if (!strcmp(k, "slurm") && n == 2) {
		set->slurm = num(l->w[1], 1, &ok);
	} else if (!strcmp(k, "g") && (n == 9 || n == 10)) {
		if ((g && dx->nfield != NFIELDS) || dx->gpu + 1 >= (long)set->ngpus) {
			snprintf(why, whylen, "more GPUs than it said, or one without its fields");
			return false;
		}
		g = &set->gpus[++dx->gpu];
		dx->nfield = 0;
		g->view = dx->serial;
		g->index = (unsigned)num(l->w[1], UINT32_MAX, &ok);
		g->lost = num(l->w[2], 1, &ok);
		g->inaccessible = num(l->w[3], 1, &ok);
		str_into(g->name, sizeof g->name, l->w[4], &ok);
		str_into(g->uuid, sizeof g->uuid, l->w[5], &ok);
		str_into(g->pci_bus_id, sizeof g->pci_bus_id, l->w[6], &ok);
		str_into(g->serial, sizeof g->serial, l->w[7], &ok);
		str_into(g->vbios, sizeof g->vbios, l->w[8], &ok);
		const char *e;
		if (n == 10 && str_word(l->w[9], &e, &ok))
			g->error = xstrdup(e);
	} else if (!g) {
		snprintf(why, whylen, "'%.20s' before the first GPU", k);
		return false;
	} else if (!strcmp(k, "gn")) {
		if (dx->nfield + n - 1 > NFIELDS) {
			snprintf(why, whylen, "more numbers than a GPU has");
			return false;
		}
		for (size_t i = 1; i < n; i++)
			field_set(g, dx->nfield++, num(l->w[i], UINT64_MAX, &ok));
	} else if (!strcmp(k, "gw") && n == 3) {
		unsigned f = (unsigned)num(l->w[1], GF_N - 1, &ok);
		if (ok)
			g->why[f] = str_kept(dx, l->w[2], &ok);
	} else if (!strcmp(k, "m") && n == 9) {
		if (g->nmigs >= 64) {
			snprintf(why, whylen, "over 64 MIG devices on one GPU");
			return false;
		}
		g->migs = xrealloc(g->migs, (g->nmigs + 1) * sizeof *g->migs);
		struct mig_dev *m = &g->migs[g->nmigs++];
		*m = (struct mig_dev){0};
		m->slot = (unsigned)num(l->w[1], UINT32_MAX, &ok);
		m->gi = (unsigned)num(l->w[2], UINT32_MAX, &ok);
		m->ci = (unsigned)num(l->w[3], UINT32_MAX, &ok);
		m->mem_valid = num(l->w[4], 1, &ok);
		m->mem_total = num(l->w[5], UINT64_MAX, &ok);
		m->mem_used = num(l->w[6], UINT64_MAX, &ok);
		str_into(m->uuid, sizeof m->uuid, l->w[7], &ok);
		str_into(m->name, sizeof m->name, l->w[8], &ok);
	} else if (!strcmp(k, "end") && n == 1) {
		if (dx->gpu + 1 != (long)set->ngpus || dx->nfield != NFIELDS) {
			snprintf(why, whylen, "fewer GPUs or fields than it said");
			return false;
		}
		dx->done = true;
	} else {
		snprintf(why, whylen, "an unknown or malformed '%.20s' line", k);
		return false;
	}
	if (!ok)
		snprintf(why, whylen, "a malformed value on a '%.20s' line", k);
	return ok;
}

bool snap_decode_part(struct snap_decoder *dx, const struct msg *m, char *why, size_t whylen)
{
	for (size_t i = 1; i < m->nlines; i++) {
		const char *k = m->lines[i].w[0];
		if (!strcmp(k, "id") || !strcmp(k, "age"))
			continue; /* the sender's, per answer */
		if (dx->done) {
			snprintf(why, whylen, "lines after its end");
			return false;
		}
		/* A GPU's process list sized once for this part's "p" lines, not doubled as they
		 * come: a first view's memory is most of its cost (issue 22; fresh pages) */
		struct gpu *g = cur_gpu(dx);
		if (g && k[0] == 'p' && !k[1] && g->nprocs == g->procs_cap) {
			size_t more = 0;
			for (size_t j = i; j < m->nlines && m->lines[j].w[0][0] != 'g'; j++)
				more += m->lines[j].w[0][0] == 'p' && !m->lines[j].w[0][1];
			if (dx->procs + more <= SNAP_MAX_PROCS)
				g->procs = grow_array(g->procs, &g->procs_cap, g->nprocs + more,
						      sizeof *g->procs);
		}
		if (!line(dx, &m->lines[i], why, whylen))
			return false;
	}
	return true;
}

