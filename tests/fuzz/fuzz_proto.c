/* fuzz_proto.c: libFuzzer target for the daemon's message decoder (src/base/proto.c), which reads
 * bytes from every user of the machine. Besides ASan/UBSan's checks it traps on a broken
 * invariant: a decoded message, encoded again, must decode to the very same words. */
#include "base/proto.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct msg m, again;
	char why[160];
	if (!msg_decode(&m, (const char *)data, size, why, sizeof why)) {
		if (!why[0])
			abort(); /* a refusal always says why */
		return 0;
	}
	if (m.nlines == 0 || m.nlines > PROTO_MAX_LINES)
		abort();
	struct strbuf sb = {0};
	for (size_t i = 0; i < m.nlines; i++) {
		if (m.lines[i].nwords == 0 || m.lines[i].nwords > PROTO_MAX_WORDS)
			abort();
		if (i == 0)
			msg_begin(&sb, m.lines[0].w[0]);
		else
			msg_key(&sb, m.lines[i].w[0]);
		for (size_t w = 1; w < m.lines[i].nwords; w++)
			msg_word(&sb, m.lines[i].w[w]);
	}
	if (!msg_decode(&again, sb.buf, sb.len, why, sizeof why) || again.nlines != m.nlines)
		abort();
	for (size_t i = 0; i < m.nlines; i++) {
		if (again.lines[i].nwords != m.lines[i].nwords)
			abort();
		for (size_t w = 0; w < m.lines[i].nwords; w++)
			if (strcmp(again.lines[i].w[w], m.lines[i].w[w]))
				abort();
	}
	msg_free(&again);
	msg_free(&m);
	sb_free(&sb);
	return 0;
}
