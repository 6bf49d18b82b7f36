/* fuzz_jsonscan.c: libFuzzer target for what a container runtime answers (review 2): the bounded
 * JSON reader (src/base/jsonscan.c) at the paths gpuctl reads of an Engine API inspect answer
 * and an OCI bundle, and the cgroup path parser (src/machine/container.c) over the same bytes as
 * a /proc/PID/cgroup text. The input is copied to a buffer of exactly its size, so ASan sees
 * any read past it; besides ASan/UBSan's checks it traps on a broken invariant: a string read
 * is NUL-terminated inside its buffer, and a container found has a 64-hex-digit id. */
#include "base/jsonscan.h"
#include "machine/container.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *t = malloc(size ? size : 1);
	memcpy(t, data, size);
	static const char *const k1[] = {"Name"};
	static const char *const k2[] = {"State", "Pid"};
	static const char *const k3[] = {"Config", "Labels", "io.kubernetes.pod.name"};
	static const char *const k4[] = {"annotations", "io.kubernetes.cri.container-name"};
	char out[16];
	long long v;
	if (jsonscan_str(t, size, k1, 1, out, sizeof out) && !memchr(out, '\0', sizeof out))
		__builtin_trap();
	if (jsonscan_str(t, size, k3, 3, out, sizeof out) && !memchr(out, '\0', sizeof out))
		__builtin_trap();
	jsonscan_str(t, size, k4, 2, out, 1);
	jsonscan_int(t, size, k2, 2, &v);
	free(t);
	char *z = malloc(size + 1);
	memcpy(z, data, size);
	z[size] = '\0';
	struct ctr_ref r;
	if (ctr_from_cgroup(z, &r)) {
		if (strlen(r.id) != CTR_ID_LEN || strspn(r.id, "0123456789abcdef") != CTR_ID_LEN)
			__builtin_trap();
	}
	free(z);
	return 0;
}
