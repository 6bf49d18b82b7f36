/* cuda-hold.c: tests/device/check.sh's CUDA workload: a process that holds a context and a
 * memory allocation on one GPU, so that nvidia-smi and gpuctl both list it. The CUDA driver API
 * is loaded at run time (dlopen libcuda.so.1, or GPUCTL_CUDA_LIBRARY, as `gpuctl map --verify`
 * does), so no CUDA toolkit is needed to build it. Test code.
 *
 *   cuda-hold ORDINAL MIB     retains ORDINAL's primary context, allocates MIB MiB, prints
 *                             "ready PID" on stdout, holds them until stdin ends (EOF), then
 *                             frees them and exits 0; any failure is one line on stderr, exit 1. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static void *sym(void *dl, const char *name)
{
	void *p = dlsym(dl, name);
	if (!p) {
		fprintf(stderr, "cuda-hold: the CUDA driver has no %s\n", name);
		exit(1);
	}
	return p;
}

static void check(CUresult r, const char *what)
{
	if (r != 0) {
		fprintf(stderr, "cuda-hold: %s failed: CUDA error %d\n", what, r);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: cuda-hold ORDINAL MIB\n");
		return 2;
	}
	int ordinal = atoi(argv[1]);
	size_t mib = strtoul(argv[2], NULL, 10);
	const char *lib = getenv("GPUCTL_CUDA_LIBRARY");
	void *dl = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		fprintf(stderr, "cuda-hold: cannot load the CUDA driver: %s\n", dlerror());
		return 1;
	}
	CUresult (*init)(unsigned) = (CUresult(*)(unsigned))sym(dl, "cuInit");
	CUresult (*get)(int *, int) = (CUresult(*)(int *, int))sym(dl, "cuDeviceGet");
	CUresult (*retain)(void **, int) = (CUresult(*)(void **, int))sym(dl, "cuDevicePrimaryCtxRetain");
	CUresult (*set)(void *) = (CUresult(*)(void *))sym(dl, "cuCtxSetCurrent");
	CUresult (*alloc)(CUdeviceptr *, size_t) = (CUresult(*)(CUdeviceptr *, size_t))sym(dl, "cuMemAlloc_v2");
	CUresult (*release)(int) = (CUresult(*)(int))sym(dl, "cuDevicePrimaryCtxRelease_v2");
	CUresult (*mfree)(CUdeviceptr) = (CUresult(*)(CUdeviceptr))sym(dl, "cuMemFree_v2");
	int dev;
	void *ctx;
	CUdeviceptr p;
	check(init(0), "cuInit");
	check(get(&dev, ordinal), "cuDeviceGet");
	check(retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
	check(set(ctx), "cuCtxSetCurrent");
	check(alloc(&p, mib << 20), "cuMemAlloc");
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	char buf[256];
	while (read(0, buf, sizeof buf) > 0)
		;
	check(mfree(p), "cuMemFree");
	check(release(dev), "cuDevicePrimaryCtxRelease");
	return 0;
}
