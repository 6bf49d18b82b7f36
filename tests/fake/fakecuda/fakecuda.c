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
