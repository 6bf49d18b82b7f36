/* floor.c: the least a gpuctl command can cost: the same NVML calls and the same /proc and file
 * reads that it makes, printing nothing. The bench scripts time gpuctl against it, command by
 * command:
 *
 *   bench-floor status   `status`, `status --json`: the configuration files and the lease state
 *                        directory (a stat: no daemon runs in the benches), NVML, then for each
 *                        distinct pid: stat /proc/PID, its owner's name (once per uid, as
 *                        gpuctl caches it), /proc/PID/cmdline to the end (/proc/PID/comm when it
 *                        is empty); on a Slurm node also /proc/PID/cgroup (the process's job)
 *   bench-floor apps     `--query-compute-apps`: the same without the configuration and leases
 *   bench-floor gpu      `--query-gpu` of non-extra fields: no process lists, no /proc
 *   bench-floor doctor   `doctor`: status (the cgroup too), plus the extra fields (fans, clocks, persistence,
 *                        ECC) and per live pid /proc/PID/environ and /proc/PID/stat (its parent)
 *
 * Each reads what gpuctl legitimately needs, no more and no less; see README "Performance". */
#include "machine/nvml/abi.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
typedef nvmlReturn_t (*fn_de)(nvmlDevice_t, int, int, unsigned long long *);
typedef nvmlReturn_t (*fn_proc)(nvmlDevice_t, unsigned *, void *);
typedef nvmlReturn_t (*fn_sys)(char *, unsigned);
typedef nvmlReturn_t (*fn_i)(int *);

#define SYM(t, n) ((t)dlsym(dl, n))

enum mode { STATUS, APPS, GPU, DOCTOR };

/* Distinct pids (open addressing, kept under half full) and uids. */
static unsigned *pidset, npidslots, npids;
static uid_t uids[256];
static unsigned nuids;

static int first_time(unsigned pid)
{
	if (2 * (npids + 1) > npidslots) {
		unsigned *old = pidset, oldn = npidslots;
		npidslots = npidslots ? 2 * npidslots : 1024;
		pidset = calloc(npidslots, sizeof *pidset);
		npids = 0;
		for (unsigned j = 0; j < oldn; j++)
			if (old[j])
				first_time(old[j]);
		free(old);
	}
	unsigned h = (pid * 2654435761U) & (npidslots - 1);
	for (; pidset[h]; h = (h + 1) & (npidslots - 1))
		if (pidset[h] == pid)
			return 0;
	pidset[h] = pid;
	npids++;
	return 1;
}

static void user_name(uid_t uid)
{
	for (unsigned i = 0; i < nuids; i++)
		if (uids[i] == uid)
			return;
	char buf[4096];
	struct passwd pw, *res;
	getpwuid_r(uid, &pw, buf, sizeof buf, &res);
	if (nuids < 256)
		uids[nuids++] = uid;
}

/* Reads a file (relative to dir, or absolute) to its end; returns the bytes read, -1 when it
 * cannot be opened. */
static long slurp_at(int dir, const char *path)
{
	char buf[4096];
	int fd = openat(dir, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	long total = 0;
	ssize_t r;
	while ((r = read(fd, buf, sizeof buf)) > 0)
		total += r;
	close(fd);
	return total;
}

static long slurp(const char *path)
{
	return slurp_at(AT_FDCWD, path);
}

/* As gpuctl (src/machine/proc.c): paths looked up from an open /proc and made by hand; doctor's own
 * reads (environ, stat: src/machine/pid.c) by absolute path, with snprintf. */
static int procfd = -1;

/* On a Slurm node status and doctor name each process's job from its cgroup file: the same test
 * as src/machine/slurm.c's slurm_node() (slurmd's cgroup directories), so that a machine where slurmd
 * ran (a CI machine after the Slurm tests) is compared with a floor doing the same work. */
static int on_slurm_node = -1;

static int slurm_node(void)
{
	static const char *const roots[] = {"freezer", "cpuset", "memory", "devices"};
	char path[320], host[256] = "";
	struct stat st;
	if (stat("/sys/fs/cgroup/system.slice/slurmstepd.scope", &st) == 0)
		return 1;
	if (gethostname(host, sizeof host - 1) == 0)
		host[strcspn(host, ".")] = '\0';
	for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
		snprintf(path, sizeof path, "/sys/fs/cgroup/%s/slurm", roots[i]);
		if (stat(path, &st) == 0)
			return 1;
		snprintf(path, sizeof path, "/sys/fs/cgroup/%s/slurm_%s", roots[i], host);
		if (host[0] && stat(path, &st) == 0)
			return 1;
	}
	return 0;
}

static const char *pid_path(char *buf, unsigned pid, const char *file)
{
	char digits[12];
	size_t k = sizeof digits, n = sizeof digits;
	do
		digits[--k] = (char)('0' + pid % 10);
	while (pid /= 10);
	memcpy(buf, digits + k, n - k);
	n -= k;
	if (file) {
		buf[n++] = '/';
		memcpy(buf + n, file, strlen(file));
		n += strlen(file);
	}
	buf[n] = '\0';
	return buf;
}

static void read_proc(unsigned pid, enum mode m)
{
	char path[64];
	struct stat st;
	if (procfd < 0)
		procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fstatat(procfd, pid_path(path, pid, NULL), &st, 0) != 0)
		return;
	user_name(st.st_uid);
	if (slurp_at(procfd, pid_path(path, pid, "cmdline")) <= 0)
		slurp_at(procfd, pid_path(path, pid, "comm"));
	if (m == STATUS || m == DOCTOR) {
		if (on_slurm_node < 0)
			on_slurm_node = slurm_node();
		if (on_slurm_node)
			slurp_at(procfd, pid_path(path, pid, "cgroup"));
	}
	if (m == DOCTOR) {
		snprintf(path, sizeof path, "/proc/%u/environ", pid);
		slurp(path);
		snprintf(path, sizeof path, "/proc/%u/stat", pid);
		slurp(path);
	}
}

/* gpuctl reads its configuration to find the lease state; leases are off in the benches. */
static void configuration(void)
{
	char path[4096];
	const char *sys = getenv("GPUCTL_SYSTEM_CONFIG"), *xdg = getenv("XDG_CONFIG_HOME");
	const char *dir = getenv("GPUCTL_STATE_DIR");
	struct stat st;
	slurp(sys ? sys : "/etc/gpuctl.conf");
	if (xdg && *xdg)
		snprintf(path, sizeof path, "%s/gpuctl/config", xdg);
	else
		snprintf(path, sizeof path, "%s/.config/gpuctl/config", getenv("HOME") ? getenv("HOME") : "");
	slurp(path);
	stat(dir && *dir ? dir : "/run/lock/gpuctl", &st);
}

int main(int argc, char **argv)
{
	const char *ms = argc > 1 ? argv[1] : "status";
	enum mode m = !strcmp(ms, "doctor") ? DOCTOR : !strcmp(ms, "apps") ? APPS
		    : !strcmp(ms, "gpu") ? GPU : STATUS;
	if (m == STATUS || m == DOCTOR)
		configuration();
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
	nvmlDevice_t *h = calloc(n ? n : 1, sizeof *h);
	for (unsigned i = 0; i < n; i++) {
		unsigned u, u2;
		int a, b;
		SYM(fn_hi, "nvmlDeviceGetHandleByIndex_v2")(i, &h[i]);
		SYM(fn_s, "nvmlDeviceGetName")(h[i], s, sizeof s);
		SYM(fn_s, "nvmlDeviceGetUUID")(h[i], s, sizeof s);
		nvmlPciInfo_t pci;
		SYM(fn_dp, "nvmlDeviceGetPciInfo_v3")(h[i], &pci);
		SYM(fn_dii, "nvmlDeviceGetCudaComputeCapability")(h[i], &a, &b);
		SYM(fn_du, "nvmlDeviceGetNumGpuCores")(h[i], &u);
		SYM(fn_duu, "nvmlDeviceGetMigMode")(h[i], &u, &u2);
	}
	nvmlProcessInfo_v2_t *buf = NULL;
	unsigned cap = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned u;
		int a, b;
		unsigned long long e;
		nvmlMemory_v2_t mem = {.version = nvmlMemory_v2};
		SYM(fn_dp, "nvmlDeviceGetMemoryInfo_v2")(h[i], &mem);
		nvmlUtilization_t ut;
		SYM(fn_dp, "nvmlDeviceGetUtilizationRates")(h[i], &ut);
		SYM(fn_dt, "nvmlDeviceGetTemperature")(h[i], 0, &u);
		SYM(fn_du, "nvmlDeviceGetPowerUsage")(h[i], &u);
		SYM(fn_du, "nvmlDeviceGetEnforcedPowerLimit")(h[i], &u);
		SYM(fn_du, "nvmlDeviceGetComputeMode")(h[i], &u);
		if (m == DOCTOR) {
			SYM(fn_du, "nvmlDeviceGetFanSpeed")(h[i], &u);
			for (int c = 0; c < 3; c++)
				SYM(fn_dt, "nvmlDeviceGetClockInfo")(h[i], c, &u);
			SYM(fn_du, "nvmlDeviceGetPersistenceMode")(h[i], &u);
			SYM(fn_dii, "nvmlDeviceGetEccMode")(h[i], &a, &b);
			SYM(fn_de, "nvmlDeviceGetTotalEccErrors")(h[i], 1, 1, &e);
		}
		if (m == GPU)
			continue;
		/* NVML's two-call protocol as gpuctl runs it: ask with the buffer it has (none at
		 * first); when that is too small, grow it to 2n+5 entries and ask again. The buffer
		 * serves every GPU and list. */
		for (int k = 0; k < 3; k++) {
			unsigned c = cap;
			nvmlReturn_t r;
			while ((r = procs[k](h[i], &c, cap ? buf : NULL)) == NVML_ERROR_INSUFFICIENT_SIZE) {
				cap = 2 * c + 5 > 2 * cap ? 2 * c + 5 : 2 * cap;
				buf = realloc(buf, cap * 32); /* the widest layout's entries, as gpuctl */
				c = cap;
			}
			if (r != NVML_SUCCESS || c > cap)
				continue;
			for (unsigned j = 0; j < c; j++)
				if (first_time(buf[j].pid))
					read_proc(buf[j].pid, m);
		}
	}
	SYM(fn_v, "nvmlShutdown")();
	if (procfd >= 0)
		close(procfd);
	free(buf);
	free(pidset);
	free(h);
	return 0;
}
