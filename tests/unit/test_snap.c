/* test_snap.c: the daemon's shared snapshot as words (machine/snap.c): a model with hostile
 * strings, NULL beside empty, unavailable fields, MIG devices and process stats comes back the
 * same; a malformed or other-version answer is refused; narrowing leaves what a direct refresh
 * leaves; a delta says which GPUs' processes it kept whole, and a loop's table copies only
 * those rows, only while nothing else they show changed. */
#include "tap.h"
#include "machine/snap.h"
#include "machine/runtime.h"
#include "view/table.h"

#include <stdlib.h>
#include <string.h>

static struct gpu_set *model(void)
{
	struct gpu_set *s = xcalloc(1, sizeof *s);
	s->has_driver_version = true;
	snprintf(s->driver_version, sizeof s->driver_version, "550.54 %%\n");
	s->cuda_version = 12040;
	s->ngpus = 2;
	s->gpus = xcalloc(2, sizeof *s->gpus);
	struct gpu *g = &s->gpus[0];
	g->index = 0;
	snprintf(g->name, sizeof g->name, "NVIDIA \x1b]0;x\a H100");
	snprintf(g->uuid, sizeof g->uuid, "GPU-0");
	g->valid = 1ULL << GF_MEM_TOTAL | 1ULL << GF_TEMP | 1ULL << GF_FAN;
	g->mem_total = 80ULL << 30;
	g->temp = 40;
	g->fan = 0;                 /* valid 0: a stopped fan */
	g->power_mw = 123;          /* not valid: must stay unavailable */
	g->cc_major = -1;
	g->why[GF_POWER] = "Insufficient Permissions";
	g->nprocs = g->procs_cap = 2;
	g->procs = xcalloc(2, sizeof *g->procs);
	g->procs[0] = (struct gpu_proc){.pid = 42, .type = PROC_COMPUTE, .mem_valid = true,
		.used_mem = 1 << 20, .gi = NO_INSTANCE, .ci = NO_INSTANCE, .user = "", .cmdline = "a b\n%",
		.name = NULL, .uid = 7, .uid_valid = true, .stat_valid = true, .ppid = -3, .cpu_time = 0.1,
		.cpu_pct = 12.5, .cpu_valid = true};
	g->procs[1] = (struct gpu_proc){.pid = 43, .type = PROC_GRAPHICS};
	g->nmigs = 1;
	g->migs = xcalloc(1, sizeof *g->migs);
	g->migs[0] = (struct mig_dev){.slot = 1, .gi = 2, .ci = 0, .mem_valid = true, .mem_total = 5};
	snprintf(g->migs[0].uuid, sizeof g->migs[0].uuid, "MIG-1");
	s->gpus[1].index = 1;
	s->gpus[1].lost = true;
	s->gpus[1].error = xstrdup("fell off the bus");
	return s;
}

static void model_free(struct gpu_set *s)
{
	for (size_t i = 0; i < s->ngpus; i++) {
		free(s->gpus[i].procs);
		free(s->gpus[i].migs);
		free(s->gpus[i].error);
	}
	free(s->gpus);
	free(s);
}

/* Decodes parts (each given its first line, as the daemon sends it); true when all decoded. */
static bool decode_on(const struct snap_parts *p, struct gpu_set *out, struct snap_decoder *dx,
		      const struct snap_base *base)
{
	snap_decode_begin(dx, out);
	dx->base = base;
	for (size_t i = 0; i < p->nparts; i++) {
		struct strbuf sb = {0};
		msg_begin(&sb, "snapshot");
		msg_add_u64(&sb, "id", 1);
		sb_add(&sb, p->parts[i].buf, p->parts[i].len);
		struct msg m;
		char why[160];
		bool ok = msg_decode(&m, sb.buf, sb.len, why, sizeof why) &&
			  snap_decode_part(dx, &m, why, sizeof why);
		if (m.lines)
			msg_free(&m);
		sb_free(&sb);
		if (!ok)
			return false;
	}
	return dx->done;
}

static bool decode(const struct snap_parts *p, struct gpu_set *out, struct snap_decoder *dx)
{
	return decode_on(p, out, dx, NULL);
}

/* Deltas (snap-delta.c): view 2 against view 1, decoded with view 1 held, is view 2 whole. */
/* A delta decoded against held (view serial) as a loop's client holds it; the set is empty
 * where it did not decode. The base's strings are copied into dx's store: it goes here. */
static struct gpu_set *decode_held(const struct snap_parts *delta, const struct gpu_set *held,
				   uint64_t serial, struct snap_decoder *dx)
{
	struct snap_base b;
	snap_base_take(&b, held, serial);
	struct gpu_set *out = xcalloc(1, sizeof *out);
	if (!decode_on(delta, out, dx, &b))
		CHECK(!"the delta decoded against the held view");
	snap_base_free(&b);
	return out;
}

/* Decodes full into a new *held, takes its base into hb, and begins dx on a new set (returned)
 * against that base, decoding into the held view's store (adopted, as a loop's refresh does). */
static struct gpu_set *begin_adopted(const struct snap_parts *full, struct gpu_set **held,
				     struct snap_base *hb, struct snap_decoder *dx)
{
	struct snap_decoder yh;
	*held = xcalloc(1, sizeof **held);
	CHECK(decode(full, *held, &yh));
	snap_base_take(hb, *held, yh.serial);
	struct gpu_set *out = xcalloc(1, sizeof *out);
	snap_decode_begin(dx, out);
	dx->base = hb;
	snap_decode_adopt(dx, yh.store);   /* dx owns it now */
	return out;
}

static void test_delta(void)
{
	struct gpu_set *a = model(), *b = model();
	b->gpus[0].procs[1].used_mem = 2 << 20;  /* one process changed, the other (strings) kept */
	struct snap_parts pa, pb, pd, ps;
	snap_encode(a, REFRESH_PROCS, 1, &pa);
	snap_encode(b, REFRESH_PROCS, 2, &pb);
	snap_delta(&pb, &pa, 1, &pd);
	CHECK(pd.bytes < pb.bytes);
	CHECK(pd.nparts == 1 && strstr(pd.parts[0].buf, "\nbase 1") && strstr(pd.parts[0].buf, "\nk 0 1"));
	struct gpu_set *da = xcalloc(1, sizeof *da), *db = xcalloc(1, sizeof *db), *dd = xcalloc(1, sizeof *dd);
	struct snap_decoder xa, xb, xd;
	CHECK(decode(&pa, da, &xa) && xa.serial == 1);
	struct snap_base base;
	snap_base_take(&base, da, xa.serial);
	CHECK(base.n == 2);
	CHECK(decode(&pb, db, &xb));
	CHECK(decode_on(&pd, dd, &xd, &base) && xd.serial == 2);
	snap_store_free(xa.store);   /* the copied processes' strings are the delta's own */
	snap_base_free(&base);
	const struct gpu *g = &dd->gpus[0], *h = &db->gpus[0];
	CHECK(g->nprocs == 2 && h->nprocs == 2);
	for (size_t j = 0; j < 2 && g->nprocs == 2; j++) {
		CHECK(g->procs[j].pid == h->procs[j].pid && g->procs[j].used_mem == h->procs[j].used_mem &&
		      g->procs[j].type == h->procs[j].type && g->procs[j].stat_valid == h->procs[j].stat_valid);
		CHECK((!g->procs[j].cmdline && !h->procs[j].cmdline) ||
		      (g->procs[j].cmdline && h->procs[j].cmdline && !strcmp(g->procs[j].cmdline, h->procs[j].cmdline)));
	}
	CHECK(g->procs[1].used_mem == 2 << 20);
	CHECK_STR(g->procs[0].cmdline, "a b\n%");
	CHECK(g->view == 2 && !g->procs_from);   /* a process line: not the held list (table.h) */
	/* without the held view, or with another, a delta is refused */
	struct gpu_set *dn = xcalloc(1, sizeof *dn);
	struct snap_decoder xn;
	CHECK(!decode(&pd, dn, &xn));
	snap_store_free(xn.store);
	model_free(dn);
	struct snap_base other = {.serial = 7};
	dn = xcalloc(1, sizeof *dn);
	CHECK(!decode_on(&pd, dn, &xn, &other));
	snap_store_free(xn.store);
	model_free(dn);
	/* decoded into the held view's own store (adopted): the same processes, nothing copied */
	{
		struct gpu_set *ha;
		struct snap_decoder yd;
		struct snap_base hb;
		struct gpu_set *hd = begin_adopted(&pa, &ha, &hb, &yd);
		bool ok = true;
		for (size_t i = 0; ok && i < pd.nparts; i++) {
			struct strbuf sb = {0};
			msg_begin(&sb, "snapshot");
			sb_add(&sb, pd.parts[i].buf, pd.parts[i].len);
			struct msg m;
			char why[160];
			ok = msg_decode(&m, sb.buf, sb.len, why, sizeof why) && snap_decode_part(&yd, &m, why, sizeof why);
			if (m.lines)
				msg_free(&m);
			sb_free(&sb);
		}
		CHECK(ok && yd.done && yd.adopted && hd->gpus[0].nprocs == 2);
		CHECK(!snap_decode_same_procs(&yd));   /* one process came anew: the base is not it */
		if (ok && hd->gpus[0].nprocs == 2) {
			CHECK(hd->gpus[0].procs[0].cmdline == ha->gpus[0].procs[0].cmdline); /* not copied */
			CHECK(hd->gpus[0].procs[1].used_mem == 2 << 20);
			CHECK_STR(hd->gpus[0].procs[0].cmdline, "a b\n%");
		}
		snap_base_free(&hb);
		snap_store_free(yd.store);
		model_free(ha);
		model_free(hd);
	}
	/* the same view again: every process kept */
	snap_delta(&pb, &pb, 2, &ps);
	CHECK(ps.nparts == 1 && strstr(ps.parts[0].buf, "\nk 0 2") && !strstr(ps.parts[0].buf, "\np "));
	{   /* decoded: each GPU's processes are the held view's (a loop's table copies the rows) */
		struct snap_decoder ys;
		struct gpu_set *hs = decode_held(&ps, db, xb.serial, &ys);
		CHECK(hs->ngpus == 2);
		if (hs->ngpus == 2)
			CHECK(hs->gpus[0].nprocs == 2 && hs->gpus[0].procs_from == 2 && hs->gpus[0].view == 2 &&
			      !hs->gpus[1].procs_from);   /* no processes there: nothing kept */
		CHECK(!snap_decode_same_procs(&ys));   /* not adopted: the strings are copies */
		snap_store_free(ys.store);
		model_free(hs);
	}
	{   /* the same view again, decoded into the held view's store: the base stands for it (a
	     * loop copies no base, issue 22); a "k" that skips a process, or one process gone, not */
		struct gpu_set *hv;
		struct snap_decoder yo;
		struct snap_base hb;
		struct gpu_set *ov = begin_adopted(&pb, &hv, &hb, &yo);
		const char *const texts[] = {"", "k 1 1\nk 0 1\n", "k 0 1\n",
					     "k 0 2\npi =evil =evilcmd =evilname\n"};
		for (size_t t = 0; t < ARRAY_SIZE(texts); t++) {
			/* t 0: ps as it is; 1: the two kept in the wrong order; 2: the second gone;
			 * 3: a kept one's facts said again (no daemon sends it; a decoder trusts none) */
			struct strbuf sb = {0};
			msg_begin(&sb, "snapshot");
			const char *body = ps.parts[0].buf, *k = strstr(body, "\nk 0 2\n");
			if (t && k) {
				sb_add(&sb, body, (size_t)(k - body) + 1);
				sb_adds(&sb, texts[t]);
				sb_adds(&sb, k + strlen("\nk 0 2\n"));
			} else {
				sb_add(&sb, body, ps.parts[0].len);
			}
			struct msg m;
			char why[160];
			bool ok = msg_decode(&m, sb.buf, sb.len, why, sizeof why) &&
				  snap_decode_part(&yo, &m, why, sizeof why);
			if (m.lines)
				msg_free(&m);
			sb_free(&sb);
			CHECK(k && ok && yo.done);
			CHECK(snap_decode_same_procs(&yo) == (t == 0));
			/* the next, decoded afresh into a new set against the same base and store */
			struct snap_store *st = yo.store;
			model_free(ov);
			ov = xcalloc(1, sizeof *ov);
			snap_decode_begin(&yo, ov);
			yo.base = &hb;
			snap_decode_adopt(&yo, st);
		}
		snap_base_free(&hb);
		snap_store_free(yo.store);
		model_free(hv);
		model_free(ov);
	}
	{   /* the first process gone: the rest kept ("k 1 1") is not the held list whole, so a
	     * loop's table does not copy the rows (a frame cut to one row showed the gone one) */
		struct gpu_set *c = model();
		c->gpus[0].procs[0] = c->gpus[0].procs[1];
		c->gpus[0].procs[0].used_mem = 2 << 20;   /* as in b, the held view */
		c->gpus[0].nprocs = 1;
		struct snap_parts pc, pk;
		snap_encode(c, REFRESH_PROCS, 3, &pc);
		snap_delta(&pc, &pb, 2, &pk);
		CHECK(pk.nparts == 1 && strstr(pk.parts[0].buf, "\nk 1 1") && !strstr(pk.parts[0].buf, "\np "));
		struct snap_decoder yk;
		struct gpu_set *hk = decode_held(&pk, db, xb.serial, &yk);
		CHECK(hk->ngpus == 2);
		if (hk->ngpus == 2)
			CHECK(hk->gpus[0].nprocs == 1 && hk->gpus[0].procs[0].pid == 43 &&
			      hk->gpus[0].view == 3 && !hk->gpus[0].procs_from);
		snap_store_free(yk.store);
		snap_parts_free(&pc);
		snap_parts_free(&pk);
		model_free(hk);
		model_free(c);
	}
	snap_parts_free(&pa);
	snap_parts_free(&pb);
	snap_parts_free(&pd);
	snap_parts_free(&ps);
	snap_store_free(xb.store);
	snap_store_free(xd.store);
	model_free(da);
	model_free(db);
	model_free(dd);
	model_free(a);
	model_free(b);
}

/* A loop's table (view/table.c's row copies): frame after frame, with the cache, is the table
 * made afresh, whatever changes between frames that a kept record does not say (the width, the
 * rows a frame may take, the Slurm column, a container found since); and the rows are really
 * copied where nothing changed (a text changed behind a "kept" shows the last frame's). */
static bool frames_same(const struct table_opts *o, const struct gpu_set *s, bool *copied)
{
	struct table_opts fresh = *o;
	fresh.cache = NULL;
	struct strbuf a = {0}, b = {0};
	table_render(&a, o, s);
	table_render(&b, &fresh, s);
	/* the first line ends with the time of day, which may tick between the two */
	const char *x = strchr(a.buf, '\n'), *y = strchr(b.buf, '\n');
	bool same = x && y && !strcmp(x, y) && strstr(x, "python");
	if (copied)
		*copied = !same;
	if (!same && !copied)
		fprintf(stderr, "# cached frame:\n%s# fresh frame:\n%s", a.buf, b.buf);
	sb_free(&a);
	sb_free(&b);
	return same;
}

/* Thousands of processes on one GPU, and some on the next: the answer comes in several parts,
 * the GPU's list goes on from one part to the next (its array sized per part, for the "p"
 * lines the part holds), and every process comes back, in order, with its command. */
static void test_many_procs(void)
{
	enum { N = 3000, M = 5 };
	struct gpu_set *s = model();
	s->gpus[1].lost = false;
	free(s->gpus[0].procs);
	s->gpus[0].procs = xcalloc(N, sizeof *s->gpus[0].procs);
	s->gpus[0].nprocs = s->gpus[0].procs_cap = N;
	s->gpus[1].procs = xcalloc(M, sizeof *s->gpus[1].procs);
	s->gpus[1].nprocs = s->gpus[1].procs_cap = M;
	static char cmd[N + M][32];
	for (unsigned i = 0; i < N + M; i++) {
		snprintf(cmd[i], sizeof cmd[i], "python train.py --seed %u", i);
		s->gpus[i < N ? 0 : 1].procs[i < N ? i : i - N] = (struct gpu_proc){.pid = 1000 + i,
			.type = PROC_COMPUTE, .gi = NO_INSTANCE, .ci = NO_INSTANCE, .user = "u",
			.cmdline = cmd[i]};
	}
	s->gpus[0].valid |= 1ULL << GF_PROCESSES;
	s->gpus[1].valid |= 1ULL << GF_PROCESSES;
	struct snap_parts p = {0};
	snap_encode(s, REFRESH_PROCS, 1, &p);
	CHECK(p.nparts > 2);
	struct gpu_set *d = xcalloc(1, sizeof *d);
	struct snap_decoder dx;
	CHECK(decode(&p, d, &dx));
	CHECK(d->ngpus == 2 && d->gpus[0].nprocs == N && d->gpus[1].nprocs == M);
	bool same = d->ngpus == 2 && d->gpus[0].nprocs == N && d->gpus[1].nprocs == M;
	for (unsigned i = 0; same && i < N + M; i++) {
		const struct gpu_proc *q = &d->gpus[i < N ? 0 : 1].procs[i < N ? i : i - N];
		same = q->pid == 1000 + i && q->cmdline && !strcmp(q->cmdline, cmd[i]);
	}
	CHECK(same);
	snap_store_free(dx.store);
	model_free(d);
	snap_parts_free(&p);
	model_free(s);
}

/* Whether a frame drawn now holds text. */
static bool frame_has(const struct table_opts *o, const struct gpu_set *s, const char *text)
{
	struct strbuf t = {0};
	table_render(&t, o, s);
	bool has = t.buf && strstr(t.buf, text);
	sb_free(&t);
	return has;
}

static void test_table_cache(void)
{
	struct gpu_set *s = model();
	s->gpus[1].lost = false;   /* two GPUs with processes, the second's user the longest */
	s->gpus[1].nprocs = s->gpus[1].procs_cap = 3;
	s->gpus[1].procs = xcalloc(3, sizeof *s->gpus[1].procs);
	for (unsigned i = 0; i < 3; i++)   /* a command cut at 70 columns, whole at 120 */
		s->gpus[1].procs[i] = (struct gpu_proc){.pid = 50 + i, .type = PROC_COMPUTE,
			.user = "someone", .cmdline = "python train.py --epochs 100 --lr 0.001",
			.gi = NO_INSTANCE, .ci = NO_INSTANCE};
	snprintf(s->gpus[1].uuid, sizeof s->gpus[1].uuid, "GPU-1");
	s->gpus[0].selected = s->gpus[1].selected = true;
	s->gpus[0].valid |= 1ULL << GF_PROCESSES;
	s->gpus[1].valid |= 1ULL << GF_PROCESSES;
	snprintf(s->driver_version, sizeof s->driver_version, "550.54");   /* one header line */
	struct table_opts o = {.width = 120, .cache = table_cache_new()};
	uint64_t serial = 1;
	for (size_t i = 0; i < 2; i++)   /* the first frame: made, nothing to copy */
		s->gpus[i].view = serial, s->gpus[i].procs_from = 0;
	CHECK(frames_same(&o, s, NULL));
#define NEXT() do { serial++; for (size_t i = 0; i < 2; i++) \
	s->gpus[i].procs_from = s->gpus[i].view, s->gpus[i].view = serial; } while (0)
	NEXT();
	CHECK(frames_same(&o, s, NULL));          /* copied, the same */
	o.width = 70;
	NEXT();
	CHECK(frames_same(&o, s, NULL));          /* narrower: made again */
	o.slurm = true;
	NEXT();
	CHECK(frames_same(&o, s, NULL));          /* a job column */
	o.rows = 10;
	NEXT();
	CHECK(frames_same(&o, s, NULL));          /* fewer rows a frame: one of GPU 1's three */
	o.rows = 0, o.width = 120, o.slurm = false;   /* nothing cut: a command's change shows */
	NEXT();
	CHECK(frames_same(&o, s, NULL));
	struct ctr_info ci = {.name = "trainer"};
	snprintf(ci.ref.id, sizeof ci.ref.id, "%s", "0123456789abcdef");
	s->gpus[1].procs[0].ctr = &ci;            /* a runtime found since: the record is kept */
	NEXT();
	CHECK(frames_same(&o, s, NULL));
	CHECK(frame_has(&o, s, "[trainer] python train.py"));
	s->gpus[1].procs[0].ctr = NULL;
	NEXT();
	CHECK(frames_same(&o, s, NULL));
	NEXT();
	CHECK(frames_same(&o, s, NULL));          /* made again after the container, then copied */
	s->gpus[1].procs[0].cmdline = "python other.py";   /* behind a "kept": the copy shows */
	NEXT();
	bool copied = false;
	frames_same(&o, s, &copied);
	CHECK(copied);
	s->gpus[1].procs_from = 0;                /* not kept: made again */
	serial++;
	s->gpus[0].procs_from = s->gpus[0].view, s->gpus[0].view = serial, s->gpus[1].view = serial;
	CHECK(frames_same(&o, s, NULL));
	NEXT();
	CHECK(frames_same(&o, s, NULL));
	s->gpus[0].procs[0].user = "a-much-longer-user";   /* GPU 0 anew, its user the longest: */
	serial++;                                         /* GPU 1, kept, has a wider column */
	s->gpus[1].procs_from = s->gpus[1].view, s->gpus[1].view = serial, s->gpus[0].view = serial;
	s->gpus[0].procs_from = 0;
	CHECK(frames_same(&o, s, NULL));
	/* rows made again that outgrow the block they were kept in (a command three times as
	 * long), then copied from the new block: the cut-free width shows all of it */
	o.width = 0;
	s->gpus[1].procs[2].cmdline = "python train.py --epochs 100 --lr 0.001 --data /datasets/"
				      "imagenet/train --workers 16 --batch-size 256 --seed 7";
	serial++;
	s->gpus[0].procs_from = s->gpus[0].view, s->gpus[0].view = serial;
	s->gpus[1].procs_from = 0, s->gpus[1].view = serial;
	CHECK(frames_same(&o, s, NULL));
	NEXT();
	CHECK(frames_same(&o, s, NULL));
	CHECK(frame_has(&o, s, "--batch-size 256 --seed 7\n"));
#undef NEXT
	table_cache_free(o.cache);
	model_free(s);
}

void test_snap(void)
{
	test_table_cache();
	struct gpu_set *s = model();
	struct snap_parts p;
	snap_encode(s, REFRESH_PROCS, 1, &p);
	struct gpu_set *d = xcalloc(1, sizeof *d);
	struct snap_decoder dx;
	CHECK(decode(&p, d, &dx));
	CHECK(d->ngpus == 2 && dx.what == REFRESH_PROCS);
	CHECK_STR(d->driver_version, "550.54 %\n");
	CHECK(d->cuda_version == 12040);
	struct gpu *g = &d->gpus[0];
	CHECK_STR(g->name, "NVIDIA \x1b]0;x\a H100");
	CHECK(g->valid == s->gpus[0].valid && gpu_has(g, GF_FAN) && g->fan == 0);
	CHECK(!gpu_has(g, GF_POWER));
	CHECK_STR(g->why[GF_POWER], "Insufficient Permissions");
	CHECK(g->cc_major == -1 && g->mem_total == 80ULL << 30);
	CHECK(g->nprocs == 2 && g->procs[0].pid == 42 && g->procs[0].gi == NO_INSTANCE);
	CHECK_STR(g->procs[0].user, "");
	CHECK_STR(g->procs[0].cmdline, "a b\n%");
	CHECK(g->procs[0].name == NULL && g->procs[1].user == NULL && g->procs[1].cmdline == NULL);
	CHECK(g->procs[0].stat_valid && g->procs[0].ppid == -3 && g->procs[0].cpu_time == 0.1 &&
	      g->procs[0].cpu_pct == 12.5 && !g->procs[1].stat_valid);
	CHECK(g->nmigs == 1 && g->migs[0].gi == 2 && g->migs[0].mem_total == 5);
	CHECK_STR(g->migs[0].uuid, "MIG-1");
	CHECK(d->gpus[1].lost);
	CHECK_STR(d->gpus[1].error, "fell off the bus");
	/* Narrowed to a refresh without processes or stats: as a direct one leaves them. */
	snap_narrow(d, 0, false);
	CHECK(d->gpus[0].nprocs == 0);
	snap_store_free(dx.store);
	model_free(d);

	/* A part lost from the middle, or another version: refused. */
	d = xcalloc(1, sizeof *d);
	if (p.nparts == 1) {
		struct strbuf *q = &p.parts[0];
		char *at = strstr(q->buf, "\ngn ");
		CHECK(at != NULL);
		if (at)
			at[1] = 'x';      /* an unknown key */
		CHECK(!decode(&p, d, &dx));
		snap_store_free(dx.store);
		model_free(d);
		d = xcalloc(1, sizeof *d);
		if (at)
			at[1] = 'g';
		char vers[32];
		snprintf(vers, sizeof vers, "snap %d ", SNAP_VERSION);
		char *v = strstr(q->buf, vers);
		CHECK(v != NULL);
		if (v)
			v[5] = '9';
		CHECK(!decode(&p, d, &dx));
	}
	snap_store_free(dx.store);
	model_free(d);
	snap_parts_free(&p);
	model_free(s);
	test_delta();
	test_many_procs();
}
