/* fuzz_visibility.c: libFuzzer target for the CUDA_VISIBLE_DEVICES model. The first byte picks a
 * machine and CUDA_DEVICE_ORDER, the rest is the variable. Besides ASan/UBSan's checks, it traps
 * on broken invariants: a device listed twice, more devices than exist, a warning without text. */
#include "cuda/visibility.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const struct vis_gpu gpus[] = {
	{0, "GPU-9942190a-aa31-4ff1-4aa9-c388d80f85f1", "NVIDIA T400 4GB", "", 0, 0x01, 0, 0, 75, 384, false},
	{1, "GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293", "NVIDIA A100-SXM4-40GB", "", 0, 0x07, 0, 0, 80, 6912, true},
	{2, "GPU-9e8d0000-0000-0000-0000-000000000000", "NVIDIA GeForce RTX 4090", "", 0, 0x41, 0, 0, 89, 16384, false},
	{3, "GPU-e4000000-0000-0000-0000-000000000000", "NVIDIA GeForce RTX 4090", "", 0, 0x61, 0, 0, 89, 16384, false},
};
static const struct vis_mig migs[] = {
	{1, 0, 1, 0, "MIG-11111111-0000-0000-0000-000000000001"},
	{1, 1, 2, 0, "MIG-11112222-0000-0000-0000-000000000002"},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t ngpus = 1 + (data[0] & 3);
	/* The MIG instances belong to GPU 1: only machines that have it get them. */
	struct vis_machine m = {gpus, ngpus, migs, (data[0] & 4) && ngpus > 1 ? 2 : 0,
				(data[0] & 8) ? 550 : 570};
	const char *order = (data[0] & 0x30) == 0x10 ? "PCI_BUS_ID" : (data[0] & 0x30) == 0x20 ? "FASTEST_FIRST"
			  : (data[0] & 0x30) == 0x30 ? "bogus" : NULL;
	char *cvd = NULL;
	if (!(data[0] & 0x40)) {
		cvd = malloc(size);
		memcpy(cvd, data + 1, size - 1);
		cvd[size - 1] = '\0';
	}
	struct vis_result *r = vis_resolve(&m, cvd, order);
	if (r->ndevs > m.ngpus + m.nmigs)
		__builtin_trap();
	for (size_t i = 0; i < r->ndevs; i++) {
		if (r->devs[i].gpu >= m.ngpus || r->devs[i].mig >= (int)m.nmigs)
			__builtin_trap();
		for (size_t j = 0; j < i; j++)
			if (r->devs[i].gpu == r->devs[j].gpu && r->devs[i].mig == r->devs[j].mig)
				__builtin_trap();
		if (vis_logical(r, r->devs[i].gpu, r->devs[i].mig) != (int)i)
			__builtin_trap();
	}
	for (size_t i = 0; i < r->nwarns; i++)
		if (!r->warns[i].code || !r->warns[i].message || !*r->warns[i].message)
			__builtin_trap();
	vis_result_free(r);
	free(cvd);
	return 0;
}
