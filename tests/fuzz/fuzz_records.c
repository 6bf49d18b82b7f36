/* fuzz_records.c: libFuzzer target for the jobs directory's copy of its records
 * (src/jobs/cache.c: rcache_parse) and the record decoder each entry goes to (src/jobs/job.c:
 * job_decode), after a valid header, so the fuzzer works on the entries themselves. Besides
 * ASan/UBSan's checks it traps on a broken invariant: entries are by id and inside the buffer,
 * and a decoded record, encoded again, decodes to a record that encodes the same. */
#include "jobs/cache.h"
#include "jobs/job.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stat ds = {.st_dev = 1, .st_ino = 2, .st_ctim = {3, 4}};
	char h[RCACHE_HEADER_MAX];
	rcache_header(h, sizeof h, &ds);
	size_t hl = strlen(h);
	struct rcache c = {0};
	c.buf = malloc(hl + size + 1);
	memcpy(c.buf, h, hl);
	if (size)
		memcpy(c.buf + hl, data, size);
	c.len = hl + size;
	c.buf[c.len] = '\0';
	if (rcache_parse(&c, &ds)) {
		for (size_t i = 0; i < c.n; i++) {
			const char *rec;
			size_t len;
			char why[160];
			struct job j, k;
			if ((i && c.e[i - 1].id >= c.e[i].id) || c.e[i].off + c.e[i].len >= c.len)
				abort();
			if (!rcache_find(&c, c.e[i].id, c.e[i].ino, &rec, &len) || rec != c.buf + c.e[i].off)
				abort();
			if (!job_decode(&j, rec, len, why, sizeof why))
				continue;
			struct strbuf a = {0}, b = {0};
			job_encode(&j, &a);
			if (!job_decode(&k, a.buf, a.len, why, sizeof why))
				abort();
			job_encode(&k, &b);
			if (a.len != b.len || memcmp(a.buf, b.buf, a.len))
				abort();
			sb_free(&a);
			sb_free(&b);
			job_free(&j);
			job_free(&k);
		}
	}
	rcache_free(&c);
	return 0;
}
