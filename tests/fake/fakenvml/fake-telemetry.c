/* fake-telemetry.c: the stand-in's per-device readings: utilisation, temperatures and their
 * thresholds, power and its limits, clocks and their maxima, performance state and clock event
 * reasons, PCIe link and throughput, encoder/decoder use, modes, strings, field values, and the
 * MIG queries. Values come from the machine file (lists advance per read or with time). Test code
 * only. */
#include "fake.h"

#include <stdio.h>
#include <string.h>

/* ---- utilisation ---- */

API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!u)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || mig_on(d.g) || !has(&d, N_UTIL_GPU))
		return NVML_ERROR_NOT_SUPPORTED;
	u->gpu = (unsigned)val(&d, N_UTIL_GPU);
	u->memory = has(&d, N_UTIL_MEM) ? (unsigned)val(&d, N_UTIL_MEM) : 0;
	return NVML_SUCCESS;
}

/* Encoder and decoder: a percentage and the sampling period; not supported with MIG on. */
static nvmlReturn_t engine(nvmlDevice_t h, const char *fn, enum fm_num k, unsigned *util,
			   unsigned *period_us)
{
	struct dev d;
	nvmlReturn_t r = enter(h, fn, &d);
	if (r)
		return r;
	if (!util || !period_us)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || mig_on(d.g) || !has(&d, k))
		return NVML_ERROR_NOT_SUPPORTED;
	*util = (unsigned)val(&d, k);
	*period_us = 167000;
	return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t h, unsigned *u, unsigned *p) { return engine(h, __func__, N_UTIL_ENC, u, p); }
API nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t h, unsigned *u, unsigned *p) { return engine(h, __func__, N_UTIL_DEC, u, p); }

/* ---- temperature ---- */

API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int sensor, unsigned *t)
{
	return get_uint_if(h, __func__, sensor == NVML_TEMPERATURE_GPU, N_TEMP, t);
}

#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t h, nvmlTemperature_v1_t *t)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!t)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (t->version != nvmlTemperature_v1)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	if (t->sensorType != NVML_TEMPERATURE_GPU)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !has(&d, N_TEMP))
		return NVML_ERROR_NOT_SUPPORTED;
	t->temperature = (int)val(&d, N_TEMP);
	return NVML_SUCCESS;
}
#endif

API nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t h, int which, unsigned *t)
{
	/* The acoustic and GPS thresholds (4-7) are not simulated: absent keys. */
	static const enum fm_num keys[NVML_TEMPERATURE_THRESHOLD_COUNT] = {
		N_TEMP_SHUTDOWN, N_TEMP_SLOWDOWN, N_TEMP_MEM_MAX, N_TEMP_GPU_MAX,
		N_COUNT, N_COUNT, N_COUNT, N_COUNT};
	bool known = which >= 0 && which < NVML_TEMPERATURE_THRESHOLD_COUNT;
	enum fm_num k = known ? keys[which] : N_COUNT;
	return get_uint_if(h, __func__, known, k, t);
}

/* ---- power ---- */

API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned *p) { return get_uint(h, __func__, N_POWER, p); }
API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned *p) { return get_uint(h, __func__, N_POWER_LIMIT, p); }
API nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t h, unsigned *p) { return get_uint(h, __func__, N_POWER_MGMT_LIMIT, p); }
API nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t h, unsigned *p) { return get_uint(h, __func__, N_POWER_DEFAULT_LIMIT, p); }

API nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t h, unsigned *min, unsigned *max)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!min || !max)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !has(&d, N_POWER_MIN_LIMIT) || !has(&d, N_POWER_MAX_LIMIT))
		return NVML_ERROR_NOT_SUPPORTED;
	*min = (unsigned)val(&d, N_POWER_MIN_LIMIT);
	*max = (unsigned)val(&d, N_POWER_MAX_LIMIT);
	return NVML_SUCCESS;
}

/* ---- simple readings ---- */

API nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t h, unsigned *p) { return get_uint(h, __func__, N_FAN, p); }
API nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t h, unsigned *p) { return get_uint(h, __func__, N_CORES, p); }
API nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t h, unsigned *p) { return get_uint(h, __func__, N_ARCH, p); }
API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t h, int *m) { return get_uint(h, __func__, N_PERSISTENCE, (unsigned *)m); }
API nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t h, int *m) { return get_uint(h, __func__, N_DISPLAY_MODE, (unsigned *)m); }
API nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t h, int *m) { return get_uint(h, __func__, N_DISPLAY_ACTIVE, (unsigned *)m); }
API nvmlReturn_t nvmlDeviceGetAccountingMode(nvmlDevice_t h, int *m) { return get_uint(h, __func__, N_ACCOUNTING, (unsigned *)m); }

/* Performance state: 0-15, or NVML_PSTATE_UNKNOWN (32). nvmlDeviceGetPowerState is its old name. */
API nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t h, int *p) { return get_uint(h, __func__, N_PSTATE, (unsigned *)p); }
API nvmlReturn_t nvmlDeviceGetPowerState(nvmlDevice_t h, int *p) { return get_uint(h, __func__, N_PSTATE, (unsigned *)p); }

/* ---- clocks ---- */

static nvmlReturn_t clock_of(nvmlDevice_t h, const char *fn, const enum fm_num keys[4], int type,
			     unsigned *c)
{
	bool known = type >= NVML_CLOCK_GRAPHICS && type <= NVML_CLOCK_VIDEO;
	return get_uint_if(h, fn, known, known ? keys[type] : N_COUNT, c);
}

API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned *c)
{
	static const enum fm_num keys[4] = {N_CLK_GFX, N_CLK_SM, N_CLK_MEM, N_CLK_VIDEO};
	return clock_of(h, __func__, keys, type, c);
}

API nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t h, int type, unsigned *c)
{
	static const enum fm_num keys[4] = {N_MAX_CLK_GFX, N_MAX_CLK_SM, N_MAX_CLK_MEM, N_MAX_CLK_VIDEO};
	return clock_of(h, __func__, keys, type, c);
}

static nvmlReturn_t mask(nvmlDevice_t h, const char *fn, enum fm_num k, unsigned long long *out)
{
	struct dev d;
	nvmlReturn_t r = enter(h, fn, &d);
	if (r)
		return r;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !has(&d, k))
		return NVML_ERROR_NOT_SUPPORTED;
	*out = (unsigned long long)val(&d, k);
	return NVML_SUCCESS;
}
/* The event names came with 535; both spellings are exported since. */
API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t h, unsigned long long *m) { return mask(h, __func__, N_EVENTS, m); }
API nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t h, unsigned long long *m) { return mask(h, __func__, N_EVENTS_SUPPORTED, m); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t h, unsigned long long *m) { return mask(h, __func__, N_EVENTS, m); }
API nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t h, unsigned long long *m) { return mask(h, __func__, N_EVENTS_SUPPORTED, m); }
#endif

/* ---- PCIe ---- */

API nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t h, unsigned *v) { return get_uint(h, __func__, N_PCIE_GEN, v); }
API nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t h, unsigned *v) { return get_uint(h, __func__, N_PCIE_WIDTH, v); }
API nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t h, unsigned *v) { return get_uint(h, __func__, N_PCIE_GEN_MAX, v); }
API nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t h, unsigned *v) { return get_uint(h, __func__, N_PCIE_WIDTH_MAX, v); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t h, unsigned *v) { return get_uint(h, __func__, N_PCIE_GEN_GPU_MAX, v); }
#endif

/* KB/s over the driver's 20 ms window (the real call blocks that long; this one does not). */
API nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t h, int counter, unsigned *v)
{
	bool known = counter == NVML_PCIE_UTIL_TX_BYTES || counter == NVML_PCIE_UTIL_RX_BYTES;
	return get_uint_if(h, __func__, known, counter == NVML_PCIE_UTIL_TX_BYTES ? N_PCIE_TX : N_PCIE_RX, v);
}

/* ---- strings ---- */

static nvmlReturn_t string(nvmlDevice_t h, const char *fn, bool serial, char *buf, unsigned len)
{
	struct dev d;
	nvmlReturn_t r = enter(h, fn, &d);
	if (r)
		return r;
	const char *s = serial ? d.g->serial : d.g->vbios;
	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !*s)
		return NVML_ERROR_NOT_SUPPORTED;
	return copy_str(buf, len, s);
}
API nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t h, char *s, unsigned len) { return string(h, __func__, true, s, len); }
API nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t h, char *s, unsigned len) { return string(h, __func__, false, s, len); }

/* ---- field values: memory temperature and the power quantities ---- */

#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t h, int count, nvmlFieldValue_t *values)
{
	static const struct { unsigned id; enum fm_num key; } map[] = {
		{NVML_FI_DEV_MEMORY_TEMP, N_TEMP_MEM}, {NVML_FI_DEV_POWER_MIN_LIMIT, N_POWER_MIN_LIMIT},
		{NVML_FI_DEV_POWER_MAX_LIMIT, N_POWER_MAX_LIMIT},
		{NVML_FI_DEV_POWER_DEFAULT_LIMIT, N_POWER_DEFAULT_LIMIT},
		{NVML_FI_DEV_POWER_CURRENT_LIMIT, N_POWER_LIMIT},
		{NVML_FI_DEV_POWER_REQUESTED_LIMIT, N_POWER_MGMT_LIMIT},
	};
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (count < 0 || (count && !values))
		return NVML_ERROR_INVALID_ARGUMENT;
	/* Each entry has its own answer; the call succeeds even when none could be read. */
	for (int i = 0; i < count; i++) {
		nvmlFieldValue_t *v = &values[i];
		v->timestamp = (long long)now_us();
		v->latencyUsec = 0;
		v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
		for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
			if (map[k].id == v->fieldId && !d.mg && v->scopeId == 0 && has(&d, map[k].key)) {
				v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
				v->value.uiVal = (unsigned)val(&d, map[k].key);
				v->nvmlReturn = NVML_SUCCESS;
			}
		if (v->nvmlReturn != NVML_SUCCESS)
			health_field(&d, v);   /* smi (issue 27) */
	}
	return NVML_SUCCESS;
}
#endif

/* ---- modes ---- */

/* Under MIG the mode is the parent GPU's, whichever handle asks. */
API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t h, int *m)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!has(&d, N_COMPUTE_MODE))
		return NVML_ERROR_NOT_SUPPORTED;
	*m = (int)val(&d, N_COMPUTE_MODE);
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t h, int *cur, int *pending)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!cur || !pending)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !has(&d, N_ECC))
		return NVML_ERROR_NOT_SUPPORTED;
	*cur = *pending = (int)val(&d, N_ECC);
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t h, int type, int counter,
					      unsigned long long *n)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!n || type < 0 || type > 1 || counter < 0 || counter > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !has(&d, N_ECC) || !val(&d, N_ECC))
		return NVML_ERROR_NOT_SUPPORTED;   /* no counts with ECC off */
	/* The machine file gives each count (device memory: fake-health.c adds 0 for the rest);
	 * an absent one is 0. */
	static const enum fm_num keys[2][2] = {{N_ECC_CORR_VOL, N_ECC_CORR_AGG},
					       {N_ECC_UNCORRECTED, N_ECC_UNC_AGG}};
	enum fm_num k = keys[type][counter];
	*n = has(&d, k) ? (unsigned long long)val(&d, k) : 0;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t h, int *major, int *minor)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!major || !minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!has(&d, N_CC))
		return NVML_ERROR_NOT_SUPPORTED;
	long long cc = val(&d, N_CC);
	*major = (int)(cc / 10);
	*minor = (int)(cc % 10);
	return NVML_SUCCESS;
}

/* ---- MIG ---- */

API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t h, unsigned *cur, unsigned *pending)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!cur || !pending)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !has(&d, N_MIG_MODE))
		return NVML_ERROR_NOT_SUPPORTED;
	*cur = *pending = (unsigned)val(&d, N_MIG_MODE);
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t h, unsigned *p)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!p)
		return NVML_ERROR_INVALID_ARGUMENT;
	*p = mig_on(d.g) && has(&d, N_MAX_MIG) ? (unsigned)val(&d, N_MAX_MIG) : 0;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t h, unsigned i, nvmlDevice_t *out)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (d.mg || !out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mig_on(d.g))
		return NVML_ERROR_NOT_SUPPORTED;
	for (int j = 0; j < d.g->nmigs; j++)
		if (d.g->migs[j].slot == i) {
			*out = (nvmlDevice_t)&d.g->migs[j];
			return NVML_SUCCESS;
		}
	return NVML_ERROR_NOT_FOUND;
}

API nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t h, unsigned *is)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!is)
		return NVML_ERROR_INVALID_ARGUMENT;
	*is = d.mg != NULL;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t h, nvmlDevice_t *out)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!d.mg || !out)
		return NVML_ERROR_INVALID_ARGUMENT;
	*out = (nvmlDevice_t)d.g;
	return NVML_SUCCESS;
}

static nvmlReturn_t instance_id(nvmlDevice_t h, const char *fn, bool gi, unsigned *id)
{
	struct dev d;
	nvmlReturn_t r = enter(h, fn, &d);
	if (r)
		return r;
	if (!id)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!d.mg)
		return NVML_ERROR_NOT_SUPPORTED;
	*id = gi ? d.mg->gi : d.mg->ci;
	return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t h, unsigned *id) { return instance_id(h, __func__, true, id); }
API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t h, unsigned *id) { return instance_id(h, __func__, false, id); }
