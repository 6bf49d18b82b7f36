/* fake-procs.c: the stand-in's process lists (plain 16-byte, _v2 24-byte and _v3 entries, the
 * two-call INSUFFICIENT_SIZE protocol, processes that appear between the two calls) and its
 * per-process utilisation samples, old API and versioned API, with the lastSeenTimeStamp protocol.
 * Test code only.
 *
 * Samples: the driver samples every busy process once per period (proc_sample_period: every N ms
 * since nvmlInit, or `read`: a new period each time a client has read all earlier ones, which
 * makes tests deterministic). A sample exists only for a process with some non-zero utilisation
 * in that period. The driver keeps the newest proc_sample_buffer samples per GPU; a query returns
 * those newer than lastSeenTimeStamp, oldest first, or NOT_FOUND when there are none. */
#include "fake.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RING 256   /* periods remembered in `read` mode */

static bool raced[FM_MAX_GPUS];
static struct {
	unsigned long k;                 /* the newest period; period 0 is at nvmlInit */
	unsigned long long ts[RING];     /* `read` mode: when each of the last RING periods was */
} periods[FM_MAX_GPUS];

/* Processes that start between a client's size query and its fetch (race_grow). */
static void add_race_procs(int idx)
{
	for (int i = 0; i < M.race_grow; i++) {
		M.procs = realloc(M.procs, (M.nprocs + 1) * sizeof *M.procs);
		M.procs[M.nprocs++] = (struct fm_proc){.gpu = idx, .pid = 3900000U + (unsigned)idx * 1000U + (unsigned)i,
						       .used_mib = 100, .type = FP_COMPUTE,
						       .gi = 0xFFFFFFFFU, .ci = 0xFFFFFFFFU};
	}
}

void procs_after_load(void)
{
	for (int i = 0; i < M.ngpus; i++)
		if (raced[i])
			add_race_procs(i);
}

void procs_reset(void)
{
	memset(raced, 0, sizeof raced);
	memset(periods, 0, sizeof periods);
	for (int i = 0; i < FM_MAX_GPUS; i++)
		periods[i].ts[0] = init_us();
}

static void grow_race(int idx)
{
	if (!M.race_grow || raced[idx])
		return;
	raced[idx] = true;
	add_race_procs(idx);
}

/* ---- process lists ---- */

static nvmlReturn_t list_procs(nvmlDevice_t h, unsigned *count, void *buf, unsigned kind,
			       size_t stride, const char *fn)
{
	struct dev d;
	if (refcount)
		reload_processes();
	nvmlReturn_t r = enter(h, fn, &d);
	if (r)
		return r;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* FAKENVML_PROCS_DELAY_MS: a driver slow to list GPU 0's compute processes, so that a test's
	 * concurrent clients overlap one refresh however loaded the machine is. */
	const char *delay = getenv("FAKENVML_PROCS_DELAY_MS");
	if (delay && kind == FP_COMPUTE && d.idx == 0 && !d.mg) {
		long ms = atol(delay);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		while (ms > 0 && nanosleep(&ts, &ts) != 0)
			;
	}
	/* FAKENVML_PROCS_HANG_FILE: while that file exists, the same query hangs (a driver stuck on a
	 * GPU that fell off the bus); it adds a line "hung" to FILE.hung as it begins, for a test to
	 * wait on. */
	const char *hang = getenv("FAKENVML_PROCS_HANG_FILE");
	if (hang && kind == FP_COMPUTE && d.idx == 0 && !d.mg && access(hang, F_OK) == 0) {
		char mark[4096];
		snprintf(mark, sizeof mark, "%s.hung", hang);
		int fd = open(mark, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd >= 0) {
			if (write(fd, "hung\n", 5) != 5) { /* the test then waits in vain, and says so */ }
			close(fd);
		}
		while (access(hang, F_OK) == 0) {
			struct timespec ts = {0, 20 * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
	bool mig = mig_on(d.g);
	/* Only privileged callers get a MIG parent's aggregate list. */
	if (mig && !d.mg && M.unprivileged)
		return NVML_ERROR_NO_PERMISSION;
	/* The size query sees the list before it grows; the fetch after it finds more. */
	if (*count > 0 && buf)
		grow_race(d.idx);
	unsigned n = 0;
	for (size_t i = 0; i < M.nprocs; i++) {
		const struct fm_proc *p = &M.procs[i];
		if (p->gpu != d.idx || !(p->type & kind) || (d.mg && (p->gi != d.mg->gi || p->ci != d.mg->ci)))
			continue;
		if (n < *count && buf) {
			unsigned char *e = (unsigned char *)buf + n * stride;
			unsigned long long used = p->used_mib < 0 ? NVML_VALUE_NOT_AVAILABLE_ULL
					      : (unsigned long long)p->used_mib << 20;
			unsigned gi = mig ? p->gi : 0xFFFFFFFFU, ci = mig ? p->ci : 0xFFFFFFFFU;
			memset(e, 0, stride);
			memcpy(e, &p->pid, 4);
			memcpy(e + 8, &used, 8);
			if (stride >= 24) {
				memcpy(e + 16, &gi, 4);
				memcpy(e + 20, &ci, 4);
			}
		}
		n++;
	}
	if (n > *count) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	if (n && !buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = n;
	return NVML_SUCCESS;
}

#ifdef FAKE_R535
#define V3_STRIDE 32
#else
#define V3_STRIDE 24
#endif

API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t h, unsigned *c, void *b) { return list_procs(h, c, b, FP_COMPUTE, 16, __func__); }
API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t h, unsigned *c, void *b) { return list_procs(h, c, b, FP_GRAPHICS, 16, __func__); }
API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t h, unsigned *c, void *b) { return list_procs(h, c, b, FP_MPS, 16, __func__); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t h, unsigned *c, void *b) { return list_procs(h, c, b, FP_COMPUTE, 24, __func__); }
API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t h, unsigned *c, void *b) { return list_procs(h, c, b, FP_GRAPHICS, 24, __func__); }
API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t h, unsigned *c, void *b) { return list_procs(h, c, b, FP_MPS, 24, __func__); }
API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned *c, void *b) { return list_procs(h, c, b, FP_COMPUTE, V3_STRIDE, __func__); }
API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t h, unsigned *c, void *b) { return list_procs(h, c, b, FP_GRAPHICS, V3_STRIDE, __func__); }
API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t h, unsigned *c, void *b) { return list_procs(h, c, b, FP_MPS, V3_STRIDE, __func__); }

/* Present in 535 and later; clients use it only as a driver-generation marker. */
API nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t h, void *info)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	(void)info;
	return r ? r : NVML_ERROR_NOT_SUPPORTED;
}
#endif

#if !defined(FAKE_OLD_DRIVER) && !defined(FAKE_R535)
/* Added after 535.86, together with the revert to 24-byte _v3 entries. */
API nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t h, void *list)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	(void)list;
	return r ? r : NVML_ERROR_NOT_SUPPORTED;
}
#endif

/* ---- utilisation samples ---- */

struct sample {
	unsigned pid;
	unsigned long long ts;
	unsigned util[U_COUNT];
};

/* When period k was taken, or 0 when it is no longer known. */
static unsigned long long period_ts(int idx, unsigned long k)
{
	if (M.sample_period_ms)
		return init_us() + (unsigned long long)k * M.sample_period_ms * 1000ULL;
	return k + RING > periods[idx].k ? periods[idx].ts[k % RING] : 0;
}

static unsigned long newest_period(int idx, unsigned long long last_seen)
{
	if (M.sample_period_ms)
		return (unsigned long)((now_us() - init_us()) / (M.sample_period_ms * 1000ULL));
	/* `read` mode: a client that has seen every sample makes the driver take the next one. */
	unsigned long k = periods[idx].k;
	if (periods[idx].ts[k % RING] <= last_seen) {
		unsigned long long t = now_us(), prev = periods[idx].ts[k % RING];
		periods[idx].k = ++k;
		periods[idx].ts[k % RING] = t > prev ? t : prev + 1;
	}
	return k;
}

/* The samples newer than last_seen, oldest first; *n their number. The caller frees. */
static struct sample *gather(const struct dev *d, unsigned long long last_seen, size_t *n)
{
	size_t cap = M.sample_buffer;
	struct sample *s = calloc(cap ? cap : 1, sizeof *s);
	*n = 0;
	if (!s)
		return NULL;
	unsigned long newest = newest_period(d->idx, last_seen);
	/* The driver's history is bounded: RING periods at most. */
	for (unsigned long k = newest + 1; k-- > 0 && *n < cap && newest - k < RING;) {
		unsigned long long ts = period_ts(d->idx, k);
		if (!ts || ts <= last_seen)
			break;
		for (size_t i = 0; i < M.nprocs && *n < cap; i++) {
			const struct fm_proc *p = &M.procs[i];
			if (p->gpu != d->idx)
				continue;
			struct sample x = {.pid = p->pid, .ts = ts};
			unsigned any = 0;
			for (int u = 0; u < U_COUNT; u++)
				any |= x.util[u] = (unsigned)fm_spec_at(&p->util[u], k, (ts - init_us()) / 1000U);
			if (any)
				s[(*n)++] = x;
		}
	}
	for (size_t i = 0; i < *n / 2; i++) {
		struct sample t = s[i];
		s[i] = s[*n - 1 - i];
		s[*n - 1 - i] = t;
	}
	return s;
}

/* The shared checks: initialised, a whole GPU with MIG off. */
static nvmlReturn_t util_enter(nvmlDevice_t h, const char *fn, struct dev *d)
{
	if (refcount)
		reload_processes();
	nvmlReturn_t r = enter(h, fn, d);
	if (r)
		return r;
	return d->mg || mig_on(d->g) ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t h, nvmlProcessUtilizationSample_t *out,
						  unsigned *count, unsigned long long last_seen)
{
	struct dev d;
	nvmlReturn_t r = util_enter(h, __func__, &d);
	if (r)
		return r;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	size_t n;
	struct sample *s = gather(&d, last_seen, &n);
	if (!s)
		return NVML_ERROR_MEMORY;
	if (!n)
		r = NVML_ERROR_NOT_FOUND;
	else if (!out || *count < n) {
		/* Some drivers answer 100 to the sizing call whatever the count (go-nvml#11). */
		*count = M.util_count_quirk && n < 100 ? 100 : (unsigned)n;
		r = NVML_ERROR_INSUFFICIENT_SIZE;
	} else {
		for (size_t i = 0; i < n; i++)
			out[i] = (nvmlProcessUtilizationSample_t){
				.pid = s[i].pid, .timeStamp = s[i].ts, .smUtil = s[i].util[U_SM],
				.memUtil = s[i].util[U_MEM], .encUtil = s[i].util[U_ENC],
				.decUtil = s[i].util[U_DEC]};
		*count = (unsigned)n;
	}
	free(s);
	return r;
}

/* The versioned call of R550 and later. */
#if !defined(FAKE_OLD_DRIVER) && !defined(FAKE_R535)
API nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t h, nvmlProcessesUtilizationInfo_v1_t *info)
{
	struct dev d;
	nvmlReturn_t r = util_enter(h, __func__, &d);
	if (r)
		return r;
	if (!info)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (info->version != nvmlProcessesUtilizationInfo_v1)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	size_t n;
	struct sample *s = gather(&d, info->lastSeenTimeStamp, &n);
	if (!s)
		return NVML_ERROR_MEMORY;
	if (!n)
		r = NVML_ERROR_NOT_FOUND;
	else if (!info->procUtilArray || info->processSamplesCount < n) {
		info->processSamplesCount = (unsigned)n;
		r = NVML_ERROR_INSUFFICIENT_SIZE;
	} else {
		for (size_t i = 0; i < n; i++)
			info->procUtilArray[i] = (nvmlProcessUtilizationInfo_v1_t){
				.timeStamp = s[i].ts, .pid = s[i].pid, .smUtil = s[i].util[U_SM],
				.memUtil = s[i].util[U_MEM], .encUtil = s[i].util[U_ENC],
				.decUtil = s[i].util[U_DEC]};
		info->processSamplesCount = (unsigned)n;
	}
	free(s);
	return r;
}
#endif
