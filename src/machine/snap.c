/* snap.c: the machine model as the daemon's snapshot carries it (the form: snap.h). One table
 * names every numeric field of struct gpu, so the encoder and the decoder walk the same list. */
#include "machine/snap.h"
#include "machine/snap-fields.h"
#include "machine/runtime.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- encoding ---- */

struct enc {
	struct snap_parts *out;
	struct strbuf rec;
	size_t rec_lines, lines;
	bool proc;                /* the record is a process's: */
	unsigned gpu, pid;
};

static struct strbuf *part(struct enc *x)
{
	struct snap_parts *o = x->out;
	if (!o->nparts || o->parts[o->nparts - 1].len + x->rec.len + 1 > SNAP_CHUNK ||
	    x->lines + x->rec_lines > SNAP_LINES) {
		o->parts = xrealloc(o->parts, (o->nparts + 1) * sizeof *o->parts);
		o->parts[o->nparts++] = (struct strbuf){0};
		x->lines = 2;
	}
	return &o->parts[o->nparts - 1];
}

/* The record so far into the current part, or a new one when it has no room. */
static void put(struct enc *x)
{
	struct strbuf *p = part(x);
	struct snap_parts *o = x->out;
	o->recs = grow_array(o->recs, &o->recs_cap, o->nrecs + 1, sizeof *o->recs);
	o->recs[o->nrecs++] = (struct snap_rec){.proc = x->proc, .gpu = x->gpu, .pid = x->pid,
						.part = o->nparts - 1, .off = p->len,
						.len = x->rec.len, .lines = x->rec_lines};
	x->proc = false;
	sb_add(p, x->rec.buf, x->rec.len);
	x->lines += x->rec_lines;
	x->out->bytes += x->rec.len;
	sb_reset(&x->rec);
	x->rec_lines = 0;
}

static void key(struct enc *x, const char *k)
{
	sb_addc(&x->rec, '\n');
	sb_adds(&x->rec, k);
	x->rec_lines++;
}

static void word_u(struct enc *x, uint64_t v)
{
	msg_word_u64(&x->rec, v);
}

static void word_s(struct enc *x, const char *s)
{
	if (!s) {
		msg_word(&x->rec, "!");
		return;
	}
	char tmp[512];
	size_t n = strlen(s);
	char *w = n + 2 <= sizeof tmp ? tmp : xmalloc(n + 2);
	w[0] = '=';
	memcpy(w + 1, s, n + 1);
	msg_word(&x->rec, w);
	if (w != tmp)
		free(w);
}

static void word_d(struct enc *x, double v)
{
	char b[40];
	snprintf(b, sizeof b, "%a", v);
	msg_word(&x->rec, b);
}

static uint64_t field_get(const struct gpu *g, size_t i)
{
	const char *p = (const char *)g + fields[i].off;
	switch (fields[i].type) {
	case U32: return *(const unsigned *)(const void *)p;
	case I32: return (uint64_t)(uint32_t)*(const int *)(const void *)p;
	default: return *(const uint64_t *)(const void *)p;
	}
}

static void encode_gpu(struct enc *x, const struct gpu *g)
{
	key(x, "g");
	word_u(x, g->index);
	word_u(x, g->lost);
	word_u(x, g->inaccessible);
	word_s(x, g->name);
	word_s(x, g->uuid);
	word_s(x, g->pci_bus_id);
	word_s(x, g->serial);
	word_s(x, g->vbios);
	if (g->error)
		word_s(x, g->error);
	for (size_t i = 0; i < NFIELDS; i++) {
		if (i % PER_LINE == 0)
			key(x, "gn");
		word_u(x, field_get(g, i));
	}
	for (unsigned f = 0; f < GF_N; f++)
		if (g->why[f]) {
			key(x, "gw");
			word_u(x, f);
			word_s(x, g->why[f]);
		}
	for (size_t j = 0; j < g->nmigs; j++) {
		const struct mig_dev *m = &g->migs[j];
		key(x, "m");
		word_u(x, m->slot);
		word_u(x, m->gi);
		word_u(x, m->ci);
		word_u(x, m->mem_valid);
		word_u(x, m->mem_total);
		word_u(x, m->mem_used);
		word_s(x, m->uuid);
		word_s(x, m->name);
	}
	put(x);
}

static void encode_proc(struct enc *x, unsigned gpu, const struct gpu_proc *p)
{
	x->proc = true;
	x->gpu = gpu;
	x->pid = p->pid;
	key(x, "p");
	uint64_t v[NPROCFIELDS] = {p->pid, p->type, p->mem_valid, p->used_mem, p->gi, p->ci,
				   p->uid_valid, p->uid, p->slurm_job, p->util_valid, p->sm_util,
				   p->mem_util, p->enc_util, p->dec_util, p->util_time_us};
	for (size_t i = 0; i < NPROCFIELDS; i++)
		word_u(x, v[i]);
	if (p->user || p->cmdline || p->name) {
		key(x, "pi");
		word_s(x, p->user);
		word_s(x, p->cmdline);
		word_s(x, p->name);
	}
	if (p->ctr) {   /* the snapshot's containers (issue 22): the id, never a name */
		const struct ctr_ref *r = &p->ctr->ref;
		key(x, "pc");
		word_u(x, r->runtime);
		word_u(x, r->rootless);
		word_u(x, r->owner_uid);
		word_s(x, r->id);
		word_s(x, r->pod_uid);
	}
	if (p->stat_valid) {
		key(x, "ps");
		msg_word(&x->rec, p->ppid < 0 ? "-1" : "0");
		word_u(x, (uint64_t)(p->ppid < 0 ? -(int64_t)p->ppid : p->ppid));
		word_u(x, p->start);
		word_u(x, p->rss);
		word_d(x, p->cpu_time);
		word_d(x, p->elapsed);
		word_u(x, p->cpu_valid);
		word_d(x, p->cpu_pct);
	}
	put(x);
}

void snap_encode(const struct gpu_set *set, unsigned what, uint64_t serial, struct snap_parts *out)
{
	*out = (struct snap_parts){0};
	struct enc x = {.out = out};
	key(&x, "snap");
	word_u(&x, SNAP_VERSION);
	word_u(&x, NFIELDS);
	word_u(&x, NPROCFIELDS);
	word_u(&x, what);
	word_u(&x, set->ngpus);
	key(&x, "serial");
	word_u(&x, serial);
	if (set->has_driver_version) {
		key(&x, "drv");
		word_s(&x, set->driver_version);
	}
	key(&x, "cuda");
	word_u(&x, (uint64_t)(set->cuda_version > 0 ? set->cuda_version : 0));
	key(&x, "slurm");
	word_u(&x, set->slurm);
	put(&x);
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		encode_gpu(&x, g);
		for (size_t j = 0; j < g->nprocs; j++)
			encode_proc(&x, (unsigned)i, &g->procs[j]);
	}
	key(&x, "end");
	put(&x);
	sb_free(&x.rec);
}

void snap_parts_free(struct snap_parts *p)
{
	for (size_t i = 0; i < p->nparts; i++)
		sb_free(&p->parts[i]);
	free(p->parts);
	free(p->recs);
	*p = (struct snap_parts){0};
}

/* ---- narrowing ---- */

#define B(f) (1ULL << (f))
static const struct {
	unsigned flag;
	uint64_t fields;
} groups[] = {
	{REFRESH_FAN, B(GF_FAN)},
	{REFRESH_CLOCKS, B(GF_CLK_GFX) | B(GF_CLK_SM) | B(GF_CLK_MEM) | B(GF_CLK_VIDEO)},
	{REFRESH_MODES, B(GF_PERSISTENCE) | B(GF_ECC) | B(GF_DISPLAY_ACTIVE) | B(GF_ACCOUNTING)},
	{REFRESH_ECC_ERRORS, B(GF_ECC_UNCORRECTED)},
	{REFRESH_PERF, B(GF_PSTATE) | B(GF_EVENTS_ACTIVE)},
	{REFRESH_PCIE, B(GF_PCIE_GEN) | B(GF_PCIE_WIDTH)},
	{REFRESH_PCIE_THROUGHPUT, B(GF_PCIE_TX) | B(GF_PCIE_RX)},
	{REFRESH_ENGINES, B(GF_UTIL_ENC) | B(GF_UTIL_DEC)},
	{REFRESH_MEM_TEMP, B(GF_TEMP_MEM)},
	{REFRESH_POWER_MGMT, B(GF_POWER_MGMT_LIMIT)},
	{REFRESH_PROCS, B(GF_PROCESSES)},
	{REFRESH_PROC_UTIL, B(GF_PROC_UTIL)},
};

void snap_narrow(struct gpu_set *set, unsigned what, bool statics)
{
	uint64_t drop = 0;
	for (size_t i = 0; i < ARRAY_SIZE(groups); i++)
		if (!(what & groups[i].flag))
			drop |= groups[i].fields;
	if (!(what & REFRESH_PROCS))
		drop |= B(GF_PROC_UTIL);
	if (what & REFRESH_COMPUTE_NAMES) /* the memory call alone (backend.c) */
		drop |= B(GF_UTIL_GPU) | B(GF_UTIL_MEM) | B(GF_TEMP) | B(GF_POWER) | B(GF_POWER_LIMIT) |
			B(GF_COMPUTE_MODE);
	if (!statics)
		drop |= ~0ULL << GF_SERIAL;
	bool info = (what & REFRESH_PROCS) && !(what & REFRESH_NO_PROC_INFO);
	bool names = what & REFRESH_COMPUTE_NAMES;
	if (!(what & REFRESH_SLURM))
		set->slurm = false;
	for (size_t i = 0; i < set->ngpus; i++) {
		struct gpu *g = &set->gpus[i];
		g->valid &= ~drop;
		for (unsigned f = 0; f < GF_N; f++)
			if (drop >> f & 1)
				g->why[f] = NULL;
		if (!statics)
			g->serial[0] = g->vbios[0] = '\0';
		if (!(what & REFRESH_PROCS))
			g->nprocs = 0;
		for (size_t j = 0; j < g->nprocs; j++) {
			struct gpu_proc *p = &g->procs[j];
			if (!info || (names && !(p->type & PROC_COMPUTE))) {
				p->user = p->cmdline = p->name = NULL;
				p->uid_valid = false;
			}
			if (names) {   /* no owner asked for (machine.c) */
				p->user = NULL;
				p->uid_valid = false;
			}
			if (!(what & REFRESH_PROC_UTIL))
				p->util_valid = false;
			if (!info)   /* the snapshot's containers (issue 22) */
				p->ctr = NULL;
			if (!(what & REFRESH_PROC_STATS) || !info)
				p->stat_valid = p->cpu_valid = false;
			if (!(what & REFRESH_SLURM))
				p->slurm_job = 0;
		}
	}
}
#undef B

/* ---- frames' asks ---- */

void snap_frame_ask_add(struct strbuf *sb, const struct snap_frame_ask *a)
{
	msg_key(sb, "frame");
	msg_word_u64(sb, a->what);
	msg_word_u64(sb, a->width);
	msg_word_u64(sb, a->rows);
	msg_word_u64(sb, a->flags);
	msg_word_u64(sb, (uint64_t)(a->tzoff + 86400));   /* a word is unsigned: offset by a day */
	msg_word(sb, a->tzname[0] ? a->tzname : "-");
}

bool snap_frame_ask_read(const struct msg *m, struct snap_frame_ask *a)
{
	const struct msg_line *l = msg_line(m, "frame");
	uint64_t v[5];
	static const uint64_t max[5] = {UINT32_MAX, SNAP_FRAME_MAX_COLS, SNAP_FRAME_MAX_COLS,
					SNAP_FRAME_COLOR | SNAP_FRAME_NO_PROCS | SNAP_FRAME_RUNTIME, 2 * 86400};
	if (!l || l->nwords != 7)
		return false;
	for (size_t i = 0; i < 5; i++)
		if (!word_u64(l->w[1 + i], max[i], &v[i]))
			return false;
	if (strlen(l->w[6]) >= sizeof a->tzname)
		return false;
	*a = (struct snap_frame_ask){.what = (unsigned)v[0], .width = (unsigned)v[1],
				     .rows = (unsigned)v[2], .flags = (unsigned)v[3],
				     .tzoff = (long)v[4] - 86400};
	snprintf(a->tzname, sizeof a->tzname, "%s", strcmp(l->w[6], "-") ? l->w[6] : "");
	return true;
}

void snap_frame_zone(long *tzoff, char *name, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	*tzoff = tm.tm_gmtoff;
	snprintf(name, len, "%s", tm.tm_zone ? tm.tm_zone : "");
}
