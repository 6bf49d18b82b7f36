/* fuzz_runctr.c: libFuzzer target for the words of `gpuctl run -- docker run ...` (review 2
 * follow-up, src/cmd/runctr-words.c): the input, split at newlines into at most 40 words, each a
 * buffer of exactly its size (ASan sees a read past it), is read as docker's or podman's `run`
 * arguments (its first byte picks which, and whether `container run` or global flags come
 * first). Besides ASan/UBSan's checks it traps on a broken invariant: what runctr_detect
 * reports (a refused word, the run's position, the cidfile) is one of the words it was given. */
#include "cmd/runctr.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int is_word(char **argv, const char *p)
{
	for (size_t i = 0; argv[i]; i++)
		if (p >= argv[i] && p <= argv[i] + strlen(argv[i]))
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const heads[][4] = {
		{"docker", "run", NULL}, {"podman", "run", NULL},
		{"docker", "container", "run", NULL}, {"/usr/bin/podman", "--remote", "run", NULL},
	};
	char *argv[48];
	size_t n = 0, k = size ? data[0] % 4 : 0;
	for (size_t i = 0; heads[k][i]; i++)
		argv[n++] = strdup(heads[k][i]);
	size_t head = n;
	for (size_t i = size ? 1 : 0; i < size && n < 44;) {
		const uint8_t *nl = memchr(data + i, '\n', size - i);
		size_t len = nl ? (size_t)(nl - (data + i)) : size - i;
		char *w = malloc(len + 1);
		memcpy(w, data + i, len);
		w[len] = '\0';
		argv[n++] = w;
		i += len + 1;
	}
	argv[n] = NULL;
	struct runctr rc;
	runctr_detect(argv, &rc);
	if (rc.kind && (rc.run_at >= head || strcmp(argv[rc.run_at], "run")))
		__builtin_trap();
	if ((rc.user_gpus && !is_word(argv, rc.user_gpus)) || (rc.all_nodes && !is_word(argv, rc.all_nodes)) ||
	    (rc.cidfile && !is_word(argv, rc.cidfile)) || (rc.all_nodes && !rc.all_why))
		__builtin_trap();
	for (size_t i = 0; i < n; i++)
		free(argv[i]);
	return 0;
}
