/* cuda-probe.c: `gpuctl cuda-probe`, internal: the child that `map --verify` runs with the
 * environment under test (cuda/probe.c). It loads the CUDA driver, which reads
 * CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER as it initialises, and prints the devices it then
 * shows, in the form cuda/probe.h describes. Not listed, abbreviated or suggested. */
#include "base/dl.h"
#include "cmd/cmd.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* The CUDA driver API's own types, declared here: nothing NVIDIA is needed to build. */
typedef int CUresult;
typedef int CUdevice;
typedef struct {
	unsigned char bytes[16];
} CUuuid;
enum { CUDA_SUCCESS = 0, CUDA_ERROR_NO_DEVICE = 100 };

static struct {
	CUresult (*init)(unsigned);
	CUresult (*count)(int *);
	CUresult (*get)(CUdevice *, int);
	CUresult (*uuid)(CUuuid *, CUdevice);
	CUresult (*pci)(char *, int, CUdevice);
} C;

static int list(void)
{
	int n = 0;
	CUresult r = C.init(0);
	if (r == CUDA_ERROR_NO_DEVICE) {
		printf("count 0\n");
		return EXIT_OK;
	}
	if (r != CUDA_SUCCESS || C.count(&n) != CUDA_SUCCESS) {
		fprintf(stderr, "cuInit failed with CUDA error %d\n", r);
		return EXIT_NO_CUDA;
	}
	printf("count %d\n", n);
	for (int i = 0; i < n; i++) {
		CUdevice d;
		CUuuid u;
		char bus[32] = "?";
		if (C.get(&d, i) != CUDA_SUCCESS || C.uuid(&u, d) != CUDA_SUCCESS) {
			fprintf(stderr, "CUDA device %d did not answer\n", i);
			return EXIT_NO_CUDA;
		}
		C.pci(bus, sizeof bus, d);
		printf("dev %d ", i);
		for (int b = 0; b < 16; b++)
			printf("%02x", u.bytes[b]);
		printf(" %s\n", bus);
	}
	return EXIT_OK;
}

static int probe(struct cmd *c)
{
	(void)c;
	const struct dl_sym syms[] = {
		{&C.init, {"cuInit"}},
		{&C.count, {"cuDeviceGetCount"}},
		{&C.get, {"cuDeviceGet"}},
		{&C.uuid, {"cuDeviceGetUuid_v2", "cuDeviceGetUuid"}},
		{&C.pci, {"cuDeviceGetPCIBusId"}},
	};
	const char *lib = getenv("GPUCTL_CUDA_LIBRARY");
	const char *sonames[] = {lib && *lib ? lib : "libcuda.so.1", NULL};
	char err[1024];
	void *dl = dl_load(sonames, syms, ARRAY_SIZE(syms), err, sizeof err);
	if (!dl) {
		fprintf(stderr, "%s: %s\n", err, C.init ? "the CUDA driver is too old for --verify"
							 : "no CUDA driver library on this machine");
		return EXIT_NO_CUDA;
	}
	return list(); /* the driver stays loaded: this process ends now */
}

const struct cmd_entry cmd_cuda_probe_entry = {
	.name = "cuda-probe",
	.summary = "internal: the child of `map --verify`",
	.usage = "cuda-probe   (internal: run by `gpuctl map --verify`)\n",
	.args = {.upper = 0},
	.flags = CMD_INTERNAL,
	.exec = probe,
};
