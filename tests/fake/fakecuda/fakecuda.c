/* fakecuda.c: a stand-in libcuda.so.1 for testing `gpuctl map --verify`'s plumbing. Test code.
 * It does not apply CUDA_VISIBLE_DEVICES: it reports exactly the devices the test lists in
 * FAKECUDA_DEVICES ("UUID@PCI,UUID@PCI"; UUIDs as GPU-... or MIG-...), fails cuInit with
 * FAKECUDA_INIT_ERROR when set, writes FAKECUDA_STDERR_BYTES bytes of warnings to stderr first
 * (a driver that talks: its reader must not wait on stdout alone), and appends the CUDA variables it was started with to FAKECUDA_LOG,
 * so a test can check the child received the environment under test. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))
typedef struct {
	unsigned char bytes[16];
} CUuuid;

static struct {
	CUuuid uuid;
	char pci[32];
} devs[64];
static int ndevs = -1;

static void parse(void)
{
	const char *s = getenv("FAKECUDA_DEVICES");
	ndevs = 0;
	while (s && *s && ndevs < 64) {
		const char *end = s + strcspn(s, ",");
		const char *at = memchr(s, '@', (size_t)(end - s));
		int nib = 0;
		memset(&devs[ndevs], 0, sizeof devs[ndevs]);
		for (const char *p = s + 4; p < (at ? at : end) && nib < 32; p++)
			if (isxdigit((unsigned char)*p)) {
				int v = isdigit((unsigned char)*p) ? *p - '0' : tolower((unsigned char)*p) - 'a' + 10;
				devs[ndevs].uuid.bytes[nib / 2] |= (unsigned char)(nib % 2 ? v : v << 4);
				nib++;
			}
		if (at)
			snprintf(devs[ndevs].pci, sizeof devs[ndevs].pci, "%.*s", (int)(end - at - 1), at + 1);
		ndevs++;
		s = *end ? end + 1 : end;
	}
}

API int cuInit(unsigned flags)
{
	(void)flags;
	const char *log = getenv("FAKECUDA_LOG"), *err = getenv("FAKECUDA_INIT_ERROR");
	FILE *f = log ? fopen(log, "a") : NULL;
	if (f) {
		const char *v = getenv("CUDA_VISIBLE_DEVICES"), *o = getenv("CUDA_DEVICE_ORDER");
		fprintf(f, "CUDA_VISIBLE_DEVICES=%s CUDA_DEVICE_ORDER=%s\n", v ? v : "(unset)",
			o ? o : "(unset)");
		fclose(f);
	}
	const char *noise = getenv("FAKECUDA_STDERR_BYTES");
	for (long n = noise ? atol(noise) : 0; n > 0; n -= 64)
		fputs("fakecuda: a warning the driver prints on stderr, 64 bytes long.\n", stderr);
	if (err)
		return atoi(err);
	parse();
	return ndevs == 0 ? 100 : 0; /* CUDA_ERROR_NO_DEVICE, as the driver says when none is visible */
}

API int cuDeviceGetCount(int *n)
{
	if (ndevs < 0)
		return 3; /* CUDA_ERROR_NOT_INITIALIZED */
	*n = ndevs;
	return 0;
}

API int cuDeviceGet(int *d, int ordinal)
{
	if (ordinal < 0 || ordinal >= ndevs)
		return 101; /* CUDA_ERROR_INVALID_DEVICE */
	*d = ordinal;
	return 0;
}

static int get_uuid(CUuuid *u, int d)
{
	if (d < 0 || d >= ndevs)
		return 101;
	*u = devs[d].uuid;
	return 0;
}
API int cuDeviceGetUuid(CUuuid *u, int d) { return get_uuid(u, d); }
API int cuDeviceGetUuid_v2(CUuuid *u, int d) { return get_uuid(u, d); }

API int cuDeviceGetPCIBusId(char *buf, int len, int d)
{
	if (d < 0 || d >= ndevs)
		return 101;
	snprintf(buf, (size_t)len, "%s", devs[d].pci);
	return 0;
}

/* ---- a context and memory (tests/device/cuda-hold.c, issue 27) ----
 * The primary context of a device and cuMemAlloc: the allocation is registered with the stand-in
 * NVML as this process's on the device (a [process] file in FAKENVML_PROC_DIR, gpu = the CUDA
 * ordinal: a test lists the GPUs in NVML order), so nvidia-smi's and gpuctl's process lists see
 * it as they would a real one; cuMemFree and exit take it away (the file is removed). */
typedef unsigned long long CUdeviceptr;
static unsigned long long held_bytes;
static int held_dev = -1;
static char held_path[4096];

static void publish(void)
{
	const char *dir = getenv("FAKENVML_PROC_DIR");
	if (!dir || held_dev < 0)
		return;
	snprintf(held_path, sizeof held_path, "%s/%d", dir, (int)getpid());
	if (!held_bytes) {
		unlink(held_path);
		return;
	}
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", held_path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "[process]\ngpu = %d\npid = %d\nused_memory_mib = %llu\n", held_dev, (int)getpid(),
		(held_bytes + (1ULL << 20) - 1) >> 20);
	fclose(f);
	rename(tmp, held_path);
}

API int cuDevicePrimaryCtxRetain(void **ctx, int d)
{
	if (ndevs < 0)
		return 3;
	if (d < 0 || d >= ndevs || !ctx)
		return 101;
	*ctx = &devs[d];
	held_dev = d;
	return 0;
}

API int cuCtxSetCurrent(void *ctx)
{
	return ctx ? 0 : 201; /* CUDA_ERROR_INVALID_CONTEXT */
}

API int cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
	if (held_dev < 0)
		return 201;
	if (!p || !bytes)
		return 1; /* CUDA_ERROR_INVALID_VALUE */
	held_bytes += bytes;
	*p = 0x7f0000000000ULL + held_bytes;
	publish();
	return 0;
}

API int cuMemFree_v2(CUdeviceptr p)
{
	(void)p;
	held_bytes = 0;
	publish();
	return 0;
}

API int cuDevicePrimaryCtxRelease_v2(int d)
{
	(void)d;
	held_bytes = 0;
	publish();
	held_dev = -1;
	return 0;
}
