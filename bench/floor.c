/* floor.c: the least a gpuctl command can cost: the NVML calls whose answers the command prints
 * and one open, read and close per file it must read, printing nothing. It is the minimum, not
 * a mirror of gpuctl's choices: where gpuctl does more than this (a call whose answer it does
 * not print, a second read, a stat it could skip), the bench counts it against gpuctl.
 *
 *   bench-floor status   `status`, `status --json`: the two configuration files and the lease
 *                        state directory (a stat: no daemon runs in the benches); NVML: driver
 *                        and CUDA versions, per GPU name, UUID, PCI bus id, memory, utilisation,
 *                        temperature, power and its limit, compute and MIG modes, the three
 *                        process lists and the per-process utilisation; per distinct pid: a stat
 *                        of /proc/PID (its owner; the name once per uid), /proc/PID/cmdline
 *                        (/proc/PID/comm when it is empty), on a Slurm node or a machine with a
 *                        container runtime /proc/PID/cgroup (its job, its container)
 *   bench-floor apps     `--query-compute-apps=gpu_uuid,pid,process_name,used_memory`: per GPU its
 *                        UUID and the compute and MPS lists; per distinct pid /proc/PID/cmdline
 *   bench-floor gpu      `--query-gpu` of non-extra fields: status's GPU calls, no process lists
 *   bench-floor doctor   `doctor`: status, plus fans, clocks, persistence and ECC, and per live
 *                        pid /proc/PID/environ and /proc/PID/stat (its parent)
 *
 * Every symbol is looked up once and checked: a driver without one (an old one has no
 * nvmlDeviceGetProcessesUtilizationInfo) costs the floor nothing, as it costs gpuctl nothing.
 * A file is read in one read() into a buffer bigger than these files' answers, again only when
 * that read filled it. See doc/performance.md. */
#include "machine/nvml/abi.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <glob.h>
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

/* A function of the library, or NULL: every call below is made only when the driver has it. */
#define SYM(t, n) ((t)dlsym(dl, n))
#define CALL(f, ...) ((f) ? (f)(__VA_ARGS__) : NVML_ERROR_FUNCTION_NOT_FOUND)

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

/* Reads a file (relative to dir, or absolute) to its end: one read() when the answer fits in the
 * buffer (a short read of a /proc or regular file is its end), another only after a full one;
 * returns the bytes read, -1 when it cannot be opened. */
static long slurp_at(int dir, const char *path)
{
	static char buf[65536];
	int fd = openat(dir, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	long total = 0;
	ssize_t r;
	while ((r = read(fd, buf, sizeof buf)) > 0) {
		total += r;
		if ((size_t)r < sizeof buf)
			break;
	}
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

/* On a machine with a container runtime status and doctor name each process's container from
 * its cgroup file (the same read as the Slurm job's): the same test as src/machine/container.c's
 * ctr_host_has_runtime(), so that a container host is compared with a floor doing that read. */
static int on_ctr_host = -1;

static int ctr_host(void)
{
	static const char *const marks[] = {
		"/run/docker.sock", "/var/lib/docker", "/run/containerd", "/var/lib/containerd",
		"/run/podman", "/var/lib/containers", "/run/crio", "/var/lib/kubelet", "/run/libpod",
	};
	const char *dh = getenv("DOCKER_HOST"), *ch = getenv("CONTAINER_HOST");
	struct stat st;
	if ((dh && *dh) || (ch && *ch))
		return 1;
	for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
		if (stat(marks[i], &st) == 0)
			return 1;
	static const char *const user_marks[] = {"/run/user/*/libpod", "/run/user/*/containers",
						 "/run/user/*/docker.sock"};
	for (size_t i = 0; i < sizeof user_marks / sizeof *user_marks; i++) {
		glob_t g = {0};
		int r = glob(user_marks[i], GLOB_NOSORT, NULL, &g);
		globfree(&g);
		if (r == 0)
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
	/* The owner: status prints it; --query-compute-apps does not (nvidia-smi's fields). */
	if (m != APPS) {
		if (fstatat(procfd, pid_path(path, pid, NULL), &st, 0) != 0)
			return;
		user_name(st.st_uid);
	}
	if (slurp_at(procfd, pid_path(path, pid, "cmdline")) <= 0)
		slurp_at(procfd, pid_path(path, pid, "comm"));
	if (m == STATUS || m == DOCTOR) {
		if (on_slurm_node < 0)
			on_slurm_node = slurm_node();
		if (on_ctr_host < 0)
			on_ctr_host = ctr_host();
		if (on_slurm_node || on_ctr_host)
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
	fn_v init = SYM(fn_v, "nvmlInit_v2"), shutdown = SYM(fn_v, "nvmlShutdown");
	fn_u count = SYM(fn_u, "nvmlDeviceGetCount_v2");
	fn_hi handle = SYM(fn_hi, "nvmlDeviceGetHandleByIndex_v2");
	fn_s uuid = SYM(fn_s, "nvmlDeviceGetUUID");
	if (CALL(init) != NVML_SUCCESS)
		return 1;
	unsigned n = 0;
	CALL(count, &n);
	char s[96];
	int ci;
	/* What apps prints is the GPU's UUID and its compute processes; the rest is status's. */
	if (m != APPS) {
		CALL(SYM(fn_sys, "nvmlSystemGetDriverVersion"), s, sizeof s);
		CALL(SYM(fn_i, "nvmlSystemGetCudaDriverVersion_v2"), &ci);
	}
	fn_s name = SYM(fn_s, "nvmlDeviceGetName");
	fn_dp pci = SYM(fn_dp, "nvmlDeviceGetPciInfo_v3"), meminfo = SYM(fn_dp, "nvmlDeviceGetMemoryInfo_v2");
	fn_dp util = SYM(fn_dp, "nvmlDeviceGetUtilizationRates");
	fn_dt temp = SYM(fn_dt, "nvmlDeviceGetTemperature"), clock = SYM(fn_dt, "nvmlDeviceGetClockInfo");
	fn_du power = SYM(fn_du, "nvmlDeviceGetPowerUsage"), limit = SYM(fn_du, "nvmlDeviceGetEnforcedPowerLimit");
	fn_du cmode = SYM(fn_du, "nvmlDeviceGetComputeMode"), fan = SYM(fn_du, "nvmlDeviceGetFanSpeed");
	fn_du persist = SYM(fn_du, "nvmlDeviceGetPersistenceMode");
	fn_duu mig = SYM(fn_duu, "nvmlDeviceGetMigMode");
	fn_dii ecc = SYM(fn_dii, "nvmlDeviceGetEccMode");
	fn_de eccerr = SYM(fn_de, "nvmlDeviceGetTotalEccErrors");
	fn_dp putil = SYM(fn_dp, "nvmlDeviceGetProcessesUtilizationInfo");
	fn_proc procs[3] = {SYM(fn_proc, "nvmlDeviceGetComputeRunningProcesses_v3"),
			    SYM(fn_proc, "nvmlDeviceGetMPSComputeRunningProcesses_v3"),
			    m == APPS ? NULL : SYM(fn_proc, "nvmlDeviceGetGraphicsRunningProcesses_v3")};
	nvmlProcessInfo_v2_t *buf = NULL;
	nvmlProcessUtilizationInfo_v1_t *ubuf = NULL;
	unsigned cap = 0, ucap = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned u, u2;
		int a, b;
		unsigned long long e;
		nvmlDevice_t h;
		if (CALL(handle, i, &h) != NVML_SUCCESS)
			continue;
		CALL(uuid, h, s, sizeof s);
		if (m != APPS) {
			nvmlPciInfo_t pi;
			nvmlMemory_v2_t mem = {.version = nvmlMemory_v2};
			nvmlUtilization_t ut;
			CALL(name, h, s, sizeof s);
			CALL(pci, h, &pi);
			CALL(meminfo, h, &mem);
			CALL(util, h, &ut);
			CALL(temp, h, 0, &u);
			CALL(power, h, &u);
			CALL(limit, h, &u);
			CALL(cmode, h, &u);
			CALL(mig, h, &u, &u2);
		}
		if (m == DOCTOR) {
			CALL(fan, h, &u);
			for (int c = 0; c < 3; c++)
				CALL(clock, h, c, &u);
			CALL(persist, h, &u);
			CALL(ecc, h, &a, &b);
			CALL(eccerr, h, 1, 1, &e);
		}
		if (m == GPU)
			continue;
		/* NVML's two-call protocol: ask with the buffer there is (none at first); when that
		 * is too small, grow it to what NVML said it needs, with room, and ask again. One
		 * buffer serves every GPU and list. */
		unsigned listed = 0;
		for (int k = 0; k < 3; k++) {
			unsigned c = cap;
			nvmlReturn_t r;
			while ((r = CALL(procs[k], h, &c, cap ? buf : NULL)) == NVML_ERROR_INSUFFICIENT_SIZE) {
				cap = 2 * c + 5 > 2 * cap ? 2 * c + 5 : 2 * cap;
				buf = realloc(buf, cap * 32); /* the widest layout's entries */
				c = cap;
			}
			if (r != NVML_SUCCESS || c > cap)
				continue;
			listed += c;
			for (unsigned j = 0; j < c; j++)
				if (first_time(buf[j].pid))
					read_proc(buf[j].pid, m);
		}
		/* status shows each process's SM and memory use: one call, sized by the lists. */
		if (m != APPS && putil && listed) {
			if (ucap < listed + 8) {
				ucap = 2 * listed + 8;
				ubuf = realloc(ubuf, ucap * sizeof *ubuf);
			}
			nvmlProcessesUtilizationInfo_v1_t info = {
				.version = nvmlProcessesUtilizationInfo_v1, .processSamplesCount = ucap,
				.procUtilArray = ubuf};
			putil(h, &info);
		}
	}
	CALL(shutdown);
	if (procfd >= 0)
		close(procfd);
	free(buf);
	free(ubuf);
	free(pidset);
	return 0;
}
