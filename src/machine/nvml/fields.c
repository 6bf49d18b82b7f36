/* fields.c: the NVIDIA backend's reads beyond the base refresh, each group only when a command
 * asks for it (REFRESH_* bits), static facts once, and per-process utilisation with NVML's
 * lastSeenTimeStamp protocol. See lib.c for loading and backend.c for the base refresh. */
#include "machine/nvml/fields.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A process's utilisation counts while its newest sample is at most this old. */
#define UTIL_WINDOW_US 1000000ULL

static void read_indexed(struct gpu *g, struct nvml_dev *d, enum gpu_field f, unsigned *dst,
		       nvmlReturn_t (*fn)(nvmlDevice_t, int, unsigned *), int type)
{
	unsigned v;
	if (nvml_have(g, f, (const void *)fn) && !g->lost && nvml_got(g, f, fn(d->h, type, &v))) {
		*dst = v;
		nvml_set(g, f);
	}
}

static void read_mask(struct gpu *g, struct nvml_dev *d, enum gpu_field f, uint64_t *dst,
		      nvmlReturn_t (*fn)(nvmlDevice_t, unsigned long long *))
{
	unsigned long long v;
	if (nvml_have(g, f, (const void *)fn) && !g->lost && nvml_got(g, f, fn(d->h, &v))) {
		*dst = v;
		nvml_set(g, f);
	}
}

static void read_engine(struct gpu *g, struct nvml_dev *d, enum gpu_field f, unsigned *dst,
			nvmlReturn_t (*fn)(nvmlDevice_t, unsigned *, unsigned *))
{
	unsigned v, period_us;
	if (nvml_have(g, f, (const void *)fn) && !g->lost && nvml_got(g, f, fn(d->h, &v, &period_us))) {
		*dst = v;
		nvml_set(g, f);
	}
}

/* A field value as an unsigned number, whatever type the driver chose to report it in. */
static bool field_uint(const nvmlFieldValue_t *v, unsigned *out)
{
	long long x;
	switch (v->valueType) {
	case NVML_VALUE_TYPE_DOUBLE: x = (long long)v->value.dVal; break;
	case NVML_VALUE_TYPE_UNSIGNED_INT: x = v->value.uiVal; break;
	case NVML_VALUE_TYPE_UNSIGNED_LONG: x = (long long)v->value.ulVal; break;
	case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: x = (long long)v->value.ullVal; break;
	case NVML_VALUE_TYPE_SIGNED_LONG_LONG: x = v->value.sllVal; break;
	case NVML_VALUE_TYPE_SIGNED_INT: x = v->value.siVal; break;
	case NVML_VALUE_TYPE_UNSIGNED_SHORT: x = v->value.usVal; break;
	default: return false;
	}
	if (x < 0 || x > 0xFFFFFFFFLL)
		return false;
	*out = (unsigned)x;
	return true;
}

/* Memory (HBM) temperature has no call of its own: it is field 82. The call succeeds when any
 * field could be read, so the entry's own return code decides. */
static void read_mem_temp(struct gpu *g, struct nvml_dev *d)
{
	nvmlFieldValue_t v = {.fieldId = NVML_FI_DEV_MEMORY_TEMP};
	if (!nvml_have(g, GF_TEMP_MEM, (const void *)nvml.field_values) || g->lost ||
	    !nvml_got(g, GF_TEMP_MEM, nvml.field_values(d->h, 1, &v)))
		return;
	if (nvml_got(g, GF_TEMP_MEM, v.nvmlReturn) && field_uint(&v, &g->temp_mem))
		nvml_set(g, GF_TEMP_MEM);
}

/* The refreshes read here, whose functions are resolved the first time one is asked for. */
static const unsigned extra_refreshes = REFRESH_FAN | REFRESH_CLOCKS | REFRESH_MODES |
	REFRESH_ECC_ERRORS | REFRESH_PERF | REFRESH_PCIE | REFRESH_PCIE_THROUGHPUT | REFRESH_ENGINES |
	REFRESH_MEM_TEMP | REFRESH_POWER_MGMT;

void nvml_refresh_extra(struct gpu *g, struct nvml_dev *d, unsigned what)
{
	nvmlDevice_t h = d->h;
	if (what & extra_refreshes)
		nvml_need(NEED_FIELDS);
	if (what & REFRESH_FAN)
		nvml_read_uint(g, GF_FAN, &g->fan, nvml.fan, h);
	if (what & REFRESH_CLOCKS) {
		read_indexed(g, d, GF_CLK_GFX, &g->clk_gfx, nvml.clock, NVML_CLOCK_GRAPHICS);
		read_indexed(g, d, GF_CLK_SM, &g->clk_sm, nvml.clock, NVML_CLOCK_SM);
		read_indexed(g, d, GF_CLK_MEM, &g->clk_mem, nvml.clock, NVML_CLOCK_MEM);
		read_indexed(g, d, GF_CLK_VIDEO, &g->clk_video, nvml.clock, NVML_CLOCK_VIDEO);
	}
	if (what & REFRESH_MODES) {
		nvml_read_uint(g, GF_PERSISTENCE, &g->persistence, nvml.persistence, h);
		unsigned cur, pending;
		if (nvml_have(g, GF_ECC, (const void *)nvml.ecc) && !g->lost && nvml_got(g, GF_ECC, nvml.ecc(h, &cur, &pending))) {
			g->ecc = cur;
			nvml_set(g, GF_ECC);
		}
		nvml_read_uint(g, GF_DISPLAY_ACTIVE, &g->display_active, nvml.display_active, h);
		nvml_read_uint(g, GF_ACCOUNTING, &g->accounting, nvml.accounting, h);
	}
	unsigned long long n;
	if ((what & REFRESH_ECC_ERRORS) && nvml_have(g, GF_ECC_UNCORRECTED, (const void *)nvml.ecc_errors) && !g->lost &&
	    nvml_got(g, GF_ECC_UNCORRECTED, nvml.ecc_errors(h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
							  NVML_VOLATILE_ECC, &n))) {
		g->ecc_uncorrected = n;
		nvml_set(g, GF_ECC_UNCORRECTED);
	}
	if (what & REFRESH_PERF) {
		nvml_read_uint(g, GF_PSTATE, &g->pstate, nvml.pstate, h);
		if (gpu_has(g, GF_PSTATE) && g->pstate > 15)   /* NVML_PSTATE_UNKNOWN */
			g->valid &= ~(1ULL << GF_PSTATE);
		read_mask(g, d, GF_EVENTS_ACTIVE, &g->events_active, nvml.events);
	}
	if (what & REFRESH_PCIE) {
		nvml_read_uint(g, GF_PCIE_GEN, &g->pcie_gen, nvml.pcie_gen, h);
		nvml_read_uint(g, GF_PCIE_WIDTH, &g->pcie_width, nvml.pcie_width, h);
	}
	if (what & REFRESH_PCIE_THROUGHPUT) {
		read_indexed(g, d, GF_PCIE_TX, &g->pcie_tx_kbs, nvml.pcie_throughput, NVML_PCIE_UTIL_TX_BYTES);
		read_indexed(g, d, GF_PCIE_RX, &g->pcie_rx_kbs, nvml.pcie_throughput, NVML_PCIE_UTIL_RX_BYTES);
	}
	if (what & REFRESH_ENGINES) {
		read_engine(g, d, GF_UTIL_ENC, &g->util_enc, nvml.encoder);
		read_engine(g, d, GF_UTIL_DEC, &g->util_dec, nvml.decoder);
	}
	if (what & REFRESH_MEM_TEMP)
		read_mem_temp(g, d);
	if (what & REFRESH_POWER_MGMT)
		nvml_read_uint(g, GF_POWER_MGMT_LIMIT, &g->power_mgmt_limit_mw, nvml.mgmt_limit, h);
}

void nvml_read_static(struct gpu *g, struct nvml_dev *d)
{
	nvmlDevice_t h = d->h;
	d->static_read = true;
	nvml_need(NEED_FIELDS);
	if (nvml_have(g, GF_SERIAL, (const void *)nvml.serial) && !g->lost && nvml_got(g, GF_SERIAL, nvml.serial(h, g->serial, sizeof g->serial)))
		nvml_set(g, GF_SERIAL);
	if (nvml_have(g, GF_VBIOS, (const void *)nvml.vbios) && !g->lost && nvml_got(g, GF_VBIOS, nvml.vbios(h, g->vbios, sizeof g->vbios)))
		nvml_set(g, GF_VBIOS);
	read_mask(g, d, GF_EVENTS_SUPPORTED, &g->events_supported, nvml.events_supported);
	unsigned lo, hi;
	if (nvml_have(g, GF_POWER_MIN_LIMIT, (const void *)nvml.limit_constraints) && !g->lost &&
	    nvml_got(g, GF_POWER_MIN_LIMIT, nvml.limit_constraints(h, &lo, &hi))) {
		g->power_min_mw = lo;
		g->power_max_mw = hi;
		nvml_set(g, GF_POWER_MIN_LIMIT);
		nvml_set(g, GF_POWER_MAX_LIMIT);
	}
	g->why[GF_POWER_MAX_LIMIT] = g->why[GF_POWER_MIN_LIMIT];
	nvml_read_uint(g, GF_POWER_DEFAULT_LIMIT, &g->power_default_mw, nvml.default_limit, h);
	read_indexed(g, d, GF_CLK_MAX_GFX, &g->clk_max_gfx, nvml.max_clock, NVML_CLOCK_GRAPHICS);
	read_indexed(g, d, GF_CLK_MAX_SM, &g->clk_max_sm, nvml.max_clock, NVML_CLOCK_SM);
	read_indexed(g, d, GF_CLK_MAX_MEM, &g->clk_max_mem, nvml.max_clock, NVML_CLOCK_MEM);
	read_indexed(g, d, GF_CLK_MAX_VIDEO, &g->clk_max_video, nvml.max_clock, NVML_CLOCK_VIDEO);
	nvml_read_uint(g, GF_PCIE_GEN_MAX, &g->pcie_gen_max, nvml.pcie_gen_max, h);
	nvml_read_uint(g, GF_PCIE_GEN_GPU_MAX, &g->pcie_gen_gpu_max, nvml.pcie_gen_gpu_max, h);
	nvml_read_uint(g, GF_PCIE_WIDTH_MAX, &g->pcie_width_max, nvml.pcie_width_max, h);
	read_indexed(g, d, GF_TEMP_SHUTDOWN, &g->temp_shutdown, nvml.threshold, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN);
	read_indexed(g, d, GF_TEMP_SLOWDOWN, &g->temp_slowdown, nvml.threshold, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN);
	read_indexed(g, d, GF_TEMP_MEM_MAX, &g->temp_mem_max, nvml.threshold, NVML_TEMPERATURE_THRESHOLD_MEM_MAX);
	read_indexed(g, d, GF_TEMP_GPU_MAX, &g->temp_gpu_max, nvml.threshold, NVML_TEMPERATURE_THRESHOLD_GPU_MAX);
	nvml_read_uint(g, GF_DISPLAY_MODE, &g->display_mode, nvml.display_mode, h);
}

/* ---- per-process utilisation ---- */

static uint64_t wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000U + (uint64_t)ts.tv_nsec / 1000U;
}

/* Ask for the samples newer than `since` into d->ubuf, growing it on INSUFFICIENT_SIZE (the buffer
 * is kept, so a steady machine costs one call). The versioned call (R550+) first; a driver that
 * rejects its version word is asked with the old call from then on. */
static nvmlReturn_t fetch_samples(struct nvml_dev *d, uint64_t since, unsigned *count)
{
	for (int tries = 0; tries < 6; tries++) {
		nvmlReturn_t r;
		unsigned n = (unsigned)d->ubuf_cap;
		if (nvml.proc_util_info) {
			nvmlProcessesUtilizationInfo_v1_t info = {
				.version = nvmlProcessesUtilizationInfo_v1, .processSamplesCount = n,
				.lastSeenTimeStamp = since, .procUtilArray = d->ubuf_cap ? d->ubuf : NULL};
			r = nvml.proc_util_info(d->h, &info);
			if (r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
				nvml_report_fallback("nvmlDeviceGetProcessesUtilizationInfo",
						     "nvmlDeviceGetProcessUtilization", r);
				nvml.proc_util_info = NULL;
				continue;
			}
			n = info.processSamplesCount;
		} else if (nvml.proc_util) {
			r = nvml.proc_util(d->h, d->ubuf_cap ? d->ubuf : NULL, &n, since);
		} else {
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		}
		if (r != NVML_ERROR_INSUFFICIENT_SIZE) {
			*count = r == NVML_SUCCESS ? (n < d->ubuf_cap ? n : (unsigned)d->ubuf_cap) : 0;
			return r;
		}
		size_t want = (size_t)n + 8;
		if (want <= d->ubuf_cap)
			want = 2 * d->ubuf_cap;
		/* Sized for the wider entry, so a fallback to the old call needs no new buffer. */
		d->ubuf = xrealloc(d->ubuf, want * sizeof(nvmlProcessUtilizationInfo_v1_t));
		d->ubuf_cap = want;
	}
	return NVML_ERROR_INSUFFICIENT_SIZE;
}

static struct util_sample entry(const struct nvml_dev *d, unsigned i)
{
	if (nvml.proc_util_info) {
		const nvmlProcessUtilizationInfo_v1_t *e = (const nvmlProcessUtilizationInfo_v1_t *)d->ubuf + i;
		return (struct util_sample){e->pid, e->timeStamp, e->smUtil, e->memUtil, e->encUtil, e->decUtil};
	}
	const nvmlProcessUtilizationSample_t *e = (const nvmlProcessUtilizationSample_t *)d->ubuf + i;
	return (struct util_sample){e->pid, e->timeStamp, e->smUtil, e->memUtil, e->encUtil, e->decUtil};
}

static struct gpu_proc *find_proc(struct gpu *g, unsigned pid)
{
	for (size_t i = 0; i < g->nprocs; i++)
		if (g->procs[i].pid == pid)
			return &g->procs[i];
	return NULL;
}

static struct util_sample *find_sample(struct nvml_dev *d, unsigned pid)
{
	for (size_t i = 0; i < d->nsamples; i++)
		if (d->samples[i].pid == pid)
			return &d->samples[i];
	return NULL;
}

/* nvtop's and nvitop's protocol: ask for what is newer than the newest sample already seen (at
 * first, the last second); keep a sample only for a listed process, with sane percentages (drivers
 * have reported dead pids and values over 100). The newest sample of each process is kept across
 * refreshes while it is under a second old, so a refresh between two driver samples loses none. */
void nvml_refresh_proc_util(struct gpu *g, struct nvml_dev *d)
{
	nvml_need(NEED_PROCS);
	if (g->lost || !gpu_has(g, GF_PROCESSES) || (!nvml.proc_util_info && !nvml.proc_util))
		return;
	if (gpu_has(g, GF_MIG_MODE) && g->mig_mode) {
		d->nsamples = 0;   /* not supported under MIG: not worth a call per refresh */
		return;
	}
	uint64_t now = wall_us(), window = now > UTIL_WINDOW_US ? now - UTIL_WINDOW_US : 0;
	uint64_t since = d->last_seen > window ? d->last_seen : window;
	unsigned n = 0;
	nvmlReturn_t r = fetch_samples(d, since, &n);
	if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_FOUND) {   /* NOT_FOUND: nothing newer */
		nvml_got(g, GF_PROC_UTIL, r);
		d->nsamples = 0;
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		struct util_sample s = entry(d, i);
		if (s.ts <= since || s.sm > 100 || s.mem > 100 || s.enc > 100 || s.dec > 100 ||
		    !find_proc(g, s.pid))
			continue;
		struct util_sample *have = find_sample(d, s.pid);
		if (!have) {
			d->samples = grow_array(d->samples, &d->samples_cap, d->nsamples + 1, sizeof *d->samples);
			have = &d->samples[d->nsamples++];
			*have = s;
		} else if (s.ts > have->ts) {
			*have = s;
		}
		if (s.ts > d->last_seen)
			d->last_seen = s.ts;
	}
	/* Forget samples that aged out or whose process is gone, then hand the rest out. */
	size_t kept = 0;
	for (size_t i = 0; i < d->nsamples; i++)
		if (d->samples[i].ts > window && find_proc(g, d->samples[i].pid))
			d->samples[kept++] = d->samples[i];
	d->nsamples = kept;
	for (size_t i = 0; i < d->nsamples; i++) {
		const struct util_sample *s = &d->samples[i];
		struct gpu_proc *p = find_proc(g, s->pid);
		p->util_valid = true;
		p->sm_util = s->sm;
		p->mem_util = s->mem;
		p->enc_util = s->enc;
		p->dec_util = s->dec;
		p->util_time_us = s->ts;
	}
	nvml_set(g, GF_PROC_UTIL);
}

void nvml_dev_free(struct nvml_dev *d)
{
	if (!d)
		return;
	free(d->mig_h);
	free(d->ubuf);
	free(d->samples);
	free(d);
}
