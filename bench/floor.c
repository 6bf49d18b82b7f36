/* floor.c: the least a status query can cost: the same NVML calls that `gpuctl status --json`
 * makes and the same /proc reads, printing nothing. bench/run.sh times gpuctl against it. */
#include "nvml_abi.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

typedef nvmlReturn_t (*fn_v)(void);
typedef nvmlReturn_t (*fn_u)(unsigned *);
typedef nvmlReturn_t (*fn_hi)(unsigned, nvmlDevice_t *);
typedef nvmlReturn_t (*fn_s)(nvmlDevice_t, char *, unsigned);
typedef nvmlReturn_t (*fn_du)(nvmlDevice_t, unsigned *);
typedef nvmlReturn_t (*fn_dp)(nvmlDevice_t, void *);
typedef nvmlReturn_t (*fn_dii)(nvmlDevice_t, int *, int *);
typedef nvmlReturn_t (*fn_duu)(nvmlDevice_t, unsigned *, unsigned *);
typedef nvmlReturn_t (*fn_dt)(nvmlDevice_t, int, unsigned *);
typedef nvmlReturn_t (*fn_proc)(nvmlDevice_t, unsigned *, void *);
typedef nvmlReturn_t (*fn_sys)(char *, unsigned);
typedef nvmlReturn_t (*fn_i)(int *);

#define SYM(t, n) ((t)dlsym(dl, n))

static void read_proc(unsigned pid)
{
	char path[64], buf[4096];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%u", pid);
	if (stat(path, &st) != 0)
		return;
	snprintf(path, sizeof path, "/proc/%u/cmdline", pid);
	int fd = open(path, O_RDONLY);
	if (fd >= 0) {
		if (read(fd, buf, sizeof buf) < 0)
			buf[0] = 0;
		close(fd);
	}
}

int main(void)
{
	const char *lib = getenv("GPUCTL_NVML_LIBRARY");
	void *dl = dlopen(lib ? lib : "libnvidia-ml.so.1", RTLD_NOW);
	if (!dl)
		return 1;
	SYM(fn_v, "nvmlInit_v2")();
	unsigned n = 0;
	SYM(fn_u, "nvmlDeviceGetCount_v2")(&n);
	char s[96];
	int ci;
	SYM(fn_sys, "nvmlSystemGetDriverVersion")(s, sizeof s);
	SYM(fn_i, "nvmlSystemGetCudaDriverVersion_v2")(&ci);
	fn_proc procs[3] = {SYM(fn_proc, "nvmlDeviceGetComputeRunningProcesses_v3"),
			    SYM(fn_proc, "nvmlDeviceGetGraphicsRunningProcesses_v3"),
			    SYM(fn_proc, "nvmlDeviceGetMPSComputeRunningProcesses_v3")};
	static unsigned seen[1 << 16];
	static nvmlProcessInfo_v2_t buf[4096];
	for (unsigned i = 0; i < n; i++) {
		nvmlDevice_t h;
		unsigned u, u2;
		int a, b;
		SYM(fn_hi, "nvmlDeviceGetHandleByIndex_v2")(i, &h);
		SYM(fn_s, "nvmlDeviceGetName")(h, s, sizeof s);
		SYM(fn_s, "nvmlDeviceGetUUID")(h, s, sizeof s);
		nvmlPciInfo_t pci;
		SYM(fn_dp, "nvmlDeviceGetPciInfo_v3")(h, &pci);
		SYM(fn_dii, "nvmlDeviceGetCudaComputeCapability")(h, &a, &b);
		SYM(fn_du, "nvmlDeviceGetNumGpuCores")(h, &u);
		SYM(fn_duu, "nvmlDeviceGetMigMode")(h, &u, &u2);
		nvmlMemory_v2_t m = {.version = nvmlMemory_v2};
		SYM(fn_dp, "nvmlDeviceGetMemoryInfo_v2")(h, &m);
		nvmlUtilization_t ut;
		SYM(fn_dp, "nvmlDeviceGetUtilizationRates")(h, &ut);
		SYM(fn_dt, "nvmlDeviceGetTemperature")(h, 0, &u);
		SYM(fn_du, "nvmlDeviceGetPowerUsage")(h, &u);
		SYM(fn_du, "nvmlDeviceGetEnforcedPowerLimit")(h, &u);
		SYM(fn_du, "nvmlDeviceGetComputeMode")(h, &u);
		for (int k = 0; k < 3; k++) {
			unsigned c = 0;
			if (procs[k](h, &c, NULL) == NVML_ERROR_INSUFFICIENT_SIZE) {
				c = 4096;
				procs[k](h, &c, buf);
				for (unsigned j = 0; j < c; j++)
					if (!seen[buf[j].pid & 0xFFFF]++)
						read_proc(buf[j].pid);
			}
		}
	}
	SYM(fn_v, "nvmlShutdown")();
	return 0;
}
