/* fuzz_snap.c: libFuzzer target for the decoder of the daemon's shared snapshot
 * (src/machine/snap.c) over proto.h's messages. Besides ASan/UBSan's checks it traps on a broken
 * invariant: a snapshot that decodes whole, encoded again, decodes whole to as many GPUs and
 * processes, and narrowing it to any refresh leaves the set usable. */
#include "machine/snap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void set_free(struct gpu_set *s)
{
	for (size_t i = 0; i < s->ngpus; i++) {
		free(s->gpus[i].procs);
		free(s->gpus[i].migs);
		free(s->gpus[i].error);
	}
	free(s->gpus);
}

static size_t procs(const struct gpu_set *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->ngpus; i++)
		n += s->gpus[i].nprocs;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct msg m;
	char why[160];
	if (!msg_decode(&m, (const char *)data, size, why, sizeof why))
		return 0;
	struct gpu_set s = {0};
	struct snap_decoder dx;
	snap_decode_begin(&dx, &s);
	bool ok = snap_decode_part(&dx, &m, why, sizeof why);
	msg_free(&m);
	if (!ok && !why[0])
		abort(); /* a refusal always says why */
	if (ok && dx.done) {
		struct snap_parts p;
		snap_encode(&s, dx.what, 1, &p);
		struct gpu_set t = {0};
		struct snap_decoder dy;
		snap_decode_begin(&dy, &t);
		for (size_t i = 0; i < p.nparts; i++) {
			struct strbuf sb = {0};
			msg_begin(&sb, "snapshot");
			sb_add(&sb, p.parts[i].buf, p.parts[i].len);
			if (!msg_decode(&m, sb.buf, sb.len, why, sizeof why) || !snap_decode_part(&dy, &m, why, sizeof why))
				abort();
			msg_free(&m);
			sb_free(&sb);
		}
		if (!dy.done || t.ngpus != s.ngpus || procs(&t) != procs(&s))
			abort();
		/* deltas (issue 22): the view against itself, decoded with it held, is it again */
		struct snap_base base;
		snap_base_take(&base, &t, 1);
		struct snap_parts pd;
		snap_delta(&p, &p, 1, &pd);
		struct gpu_set u = {0};
		struct snap_decoder dz;
		snap_decode_begin(&dz, &u);
		dz.base = &base;
		for (size_t i = 0; i < pd.nparts; i++) {
			struct strbuf sb = {0};
			msg_begin(&sb, "snapshot");
			sb_add(&sb, pd.parts[i].buf, pd.parts[i].len);
			if (!msg_decode(&m, sb.buf, sb.len, why, sizeof why) || !snap_decode_part(&dz, &m, why, sizeof why))
				abort();
			msg_free(&m);
			sb_free(&sb);
		}
		if (!dz.done || u.ngpus != s.ngpus || procs(&u) != procs(&s))
			abort();
		snap_base_free(&base);
		snap_parts_free(&pd);
		snap_store_free(dz.store);
		set_free(&u);
		snap_narrow(&t, (unsigned)size, size & 1);
		snap_parts_free(&p);
		snap_store_free(dy.store);
		set_free(&t);
	}
	snap_store_free(dx.store);
	set_free(&s);
	return 0;
}
