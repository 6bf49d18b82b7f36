/* fake-health.c: the stand-in's answers to the calls behind nvidia-smi's health and inventory
 * query fields (issue 27): ECC counters by location and the SRAM status, retired pages, remapped
 * rows and their histogram, InfoROM versions and checksum, encoder statistics, JPEG and OFA use,
 * operation, driver, GSP, C2C, addressing and DRAM-encryption modes, the applications clocks and
 * power management mode (deprecated in nvml.h 13), the extended PCI info, vGPU capabilities, and
 * the field values gpuctl asks nvmlDeviceGetFieldValues for besides fake-telemetry.c's. Values come
 * from the machine file (tests/fake/machines/README.md); an absent key answers NOT_SUPPORTED, as
 * the real driver does for what a board lacks. Prototypes are nvml.h's (src/machine/nvml/abi.h).
 *
 * -DFAKE_OLD_DRIVER exports only the calls an R418-era library had (memory error counters,
 * retired pages, encoder statistics, InfoROM, GOM, accounting, applications clocks, power
 * management mode, driver model): gpuctl must print [Function Not Found] for the rest. Test code
 * only. */
#include "fake.h"

#include <stdio.h>
#include <string.h>

/* ---- ECC ---- */

/* A counter of a location the board has (ecc_location_mask, bit = NVML_MEMORY_LOCATION_*): device
 * memory counts come from the ecc_* keys, every other location counts 0. */
static nvmlReturn_t ecc_count(const struct dev *d, int type, int counter, unsigned long long *out)
{
	static const enum fm_num keys[2][2] = {{N_ECC_CORR_VOL, N_ECC_CORR_AGG},
					       {N_ECC_UNCORRECTED, N_ECC_UNC_AGG}};
	if (type < 0 || type > 1 || counter < 0 || counter > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->mg || !has(d, N_ECC) || !val(d, N_ECC))
		return NVML_ERROR_NOT_SUPPORTED;
	enum fm_num k = keys[type][counter];
	*out = has(d, k) ? (unsigned long long)val(d, k) : 0;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMemoryErrorCounter(nvmlDevice_t h, int type, int counter, int location,
						 unsigned long long *count)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!count || location < 0 || location > NVML_MEMORY_LOCATION_SRAM)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!has(&d, N_ECC_LOCATIONS) || !(val(&d, N_ECC_LOCATIONS) >> location & 1))
		return NVML_ERROR_NOT_SUPPORTED;
	unsigned long long n;
	r = ecc_count(&d, type, counter, &n);
	if (r)
		return r;
	*count = location == NVML_MEMORY_LOCATION_DRAM ? n : 0;
	return NVML_SUCCESS;
}

#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetSramEccErrorStatus(nvmlDevice_t h, nvmlEccSramErrorStatus_v1_t *st)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!st)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (st->version != nvmlEccSramErrorStatus_v1)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	if (d.mg || !has(&d, N_SRAM_THRESHOLD))
		return NVML_ERROR_NOT_SUPPORTED;
	unsigned version = st->version;
	memset(st, 0, sizeof *st);
	st->version = version;
	st->bThresholdExceeded = (unsigned)val(&d, N_SRAM_THRESHOLD);
	return NVML_SUCCESS;
}
#endif

/* ---- retired pages and remapped rows ---- */

API nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t h, int cause, unsigned *count,
					   unsigned long long *addresses)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!count || cause < 0 || cause > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	enum fm_num k = cause ? N_RETIRED_DBE : N_RETIRED_SBE;
	if (d.mg || !has(&d, k))
		return NVML_ERROR_NOT_SUPPORTED;
	unsigned n = (unsigned)val(&d, k);
	if (*count < n) {
		bool sizing = *count == 0;
		*count = n;
		return sizing ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned i = 0; i < n && addresses; i++)
		addresses[i] = 0x100000ULL * (i + 1) + (unsigned long long)cause;
	*count = n;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t h, unsigned *pending)
{
	return get_uint(h, __func__, N_RETIRED_PENDING, pending);
}

#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t h, unsigned *corr, unsigned *unc,
					   unsigned *pending, unsigned *failure)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!corr || !unc || !pending || !failure)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || mig_on(d.g) || !has(&d, N_REMAP_CORR))   /* [N/A] under MIG (H200 capture) */
		return NVML_ERROR_NOT_SUPPORTED;
	*corr = (unsigned)val(&d, N_REMAP_CORR);
	*unc = has(&d, N_REMAP_UNC) ? (unsigned)val(&d, N_REMAP_UNC) : 0;
	*pending = has(&d, N_REMAP_PENDING) ? (unsigned)val(&d, N_REMAP_PENDING) : 0;
	*failure = has(&d, N_REMAP_FAILURE) ? (unsigned)val(&d, N_REMAP_FAILURE) : 0;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetRowRemapperHistogram(nvmlDevice_t h, nvmlRowRemapperHistogramValues_t *v)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!v)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !has(&d, N_REMAP_HIST_MAX))
		return NVML_ERROR_NOT_SUPPORTED;
	const enum fm_num k[5] = {N_REMAP_HIST_MAX, N_REMAP_HIST_HIGH, N_REMAP_HIST_PARTIAL,
				  N_REMAP_HIST_LOW, N_REMAP_HIST_NONE};
	unsigned x[5];
	for (int i = 0; i < 5; i++)
		x[i] = has(&d, k[i]) ? (unsigned)val(&d, k[i]) : 0;
	*v = (nvmlRowRemapperHistogramValues_t){x[0], x[1], x[2], x[3], x[4]};
	return NVML_SUCCESS;
}
#endif

/* ---- InfoROM ---- */

static nvmlReturn_t inforom(nvmlDevice_t h, const char *fn, int i, char *buf, unsigned len)
{
	struct dev d;
	nvmlReturn_t r = enter(h, fn, &d);
	if (r)
		return r;
	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !d.g->inforom[i][0])
		return NVML_ERROR_NOT_SUPPORTED;
	return copy_str(buf, len, d.g->inforom[i]);
}

API nvmlReturn_t nvmlDeviceGetInforomImageVersion(nvmlDevice_t h, char *buf, unsigned len)
{
	return inforom(h, __func__, 0, buf, len);
}

API nvmlReturn_t nvmlDeviceGetInforomVersion(nvmlDevice_t h, int object, char *buf, unsigned len)
{
	if (object < NVML_INFOROM_OEM || object > NVML_INFOROM_DEN) {
		struct dev d;
		nvmlReturn_t r = enter(h, __func__, &d);
		return r ? r : NVML_ERROR_INVALID_ARGUMENT;
	}
	if (object == NVML_INFOROM_DEN) {
		struct dev d;
		nvmlReturn_t r = enter(h, __func__, &d);
		return r ? r : NVML_ERROR_NOT_SUPPORTED;
	}
	return inforom(h, __func__, object + 1, buf, len);
}

API nvmlReturn_t nvmlDeviceValidateInforom(nvmlDevice_t h)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (d.mg || !has(&d, N_INFOROM_VALID))
		return NVML_ERROR_NOT_SUPPORTED;
	return val(&d, N_INFOROM_VALID) ? NVML_SUCCESS : NVML_ERROR_CORRUPTED_INFOROM;
}

/* ---- engines, modes ---- */

API nvmlReturn_t nvmlDeviceGetEncoderStats(nvmlDevice_t h, unsigned *sessions, unsigned *fps,
					   unsigned *latency)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!sessions || !fps || !latency)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !has(&d, N_ENC_SESSIONS))   /* H200 with MIG on still counts (0) */
		return NVML_ERROR_NOT_SUPPORTED;
	*sessions = (unsigned)val(&d, N_ENC_SESSIONS);
	*fps = has(&d, N_ENC_FPS) ? (unsigned)val(&d, N_ENC_FPS) : 0;
	*latency = has(&d, N_ENC_LATENCY) ? (unsigned)val(&d, N_ENC_LATENCY) : 0;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetAccountingBufferSize(nvmlDevice_t h, unsigned *size)
{
	return get_uint(h, __func__, N_ACCT_BUFFER, size);
}

/* Not simulated (no key): the boards of the machine files have no GOM, are not Windows, and
 * their nvidia-smi 590 prints [N/A] for both. */
API nvmlReturn_t nvmlDeviceGetGpuOperationMode(nvmlDevice_t h, unsigned *current, unsigned *pending)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	return !current || !pending ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
}

static nvmlReturn_t driver_model(nvmlDevice_t h, const char *fn, unsigned *current, unsigned *pending)
{
	struct dev d;
	nvmlReturn_t r = enter(h, fn, &d);
	if (r)
		return r;
	return !current || !pending ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
}
API nvmlReturn_t nvmlDeviceGetDriverModel(nvmlDevice_t h, unsigned *c, unsigned *p) { return driver_model(h, __func__, c, p); }
#ifndef FAKE_OLD_DRIVER
API nvmlReturn_t nvmlDeviceGetDriverModel_v2(nvmlDevice_t h, unsigned *c, unsigned *p) { return driver_model(h, __func__, c, p); }
#endif

/* Deprecated in nvml.h 13 (nvidia-smi 590 prints the deprecation token without calling them):
 * the applications clocks are the maximum clocks here, power management is on. */
static nvmlReturn_t app_clock(nvmlDevice_t h, const char *fn, int type, unsigned *mhz)
{
	static const enum fm_num keys[] = {N_MAX_CLK_GFX, N_MAX_CLK_SM, N_MAX_CLK_MEM, N_MAX_CLK_VIDEO};
	bool known = type >= NVML_CLOCK_GRAPHICS && type <= NVML_CLOCK_VIDEO;
	return get_uint_if(h, fn, known, known ? keys[type] : N_COUNT, mhz);
}
API nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t h, int t, unsigned *m) { return app_clock(h, __func__, t, m); }
API nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t h, int t, unsigned *m) { return app_clock(h, __func__, t, m); }

API nvmlReturn_t nvmlDeviceGetPowerManagementMode(nvmlDevice_t h, unsigned *mode)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!mode)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !has(&d, N_POWER_MGMT_LIMIT))
		return NVML_ERROR_NOT_SUPPORTED;
	*mode = 1;
	return NVML_SUCCESS;
}

#ifndef FAKE_OLD_DRIVER
static nvmlReturn_t engine2(nvmlDevice_t h, const char *fn, enum fm_num k, unsigned *util, unsigned *period)
{
	struct dev d;
	nvmlReturn_t r = enter(h, fn, &d);
	if (r)
		return r;
	if (!util || !period)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || mig_on(d.g) || !has(&d, k))
		return NVML_ERROR_NOT_SUPPORTED;
	*util = (unsigned)val(&d, k);
	*period = 167000;
	return NVML_SUCCESS;
}
API nvmlReturn_t nvmlDeviceGetJpgUtilization(nvmlDevice_t h, unsigned *u, unsigned *p) { return engine2(h, __func__, N_UTIL_JPG, u, p); }
API nvmlReturn_t nvmlDeviceGetOfaUtilization(nvmlDevice_t h, unsigned *u, unsigned *p) { return engine2(h, __func__, N_UTIL_OFA, u, p); }

API nvmlReturn_t nvmlDeviceGetGspFirmwareMode(nvmlDevice_t h, unsigned *enabled, unsigned *dflt)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!enabled || !dflt)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !has(&d, N_GSP))
		return NVML_ERROR_NOT_SUPPORTED;
	*enabled = (unsigned)val(&d, N_GSP);
	*dflt = has(&d, N_GSP_DEFAULT) ? (unsigned)val(&d, N_GSP_DEFAULT) : *enabled;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetC2cModeInfoV(nvmlDevice_t h, nvmlC2cModeInfo_v1_t *info)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!info)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !has(&d, N_C2C))
		return NVML_ERROR_NOT_SUPPORTED;
	info->isC2cEnabled = (unsigned)val(&d, N_C2C);
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetAddressingMode(nvmlDevice_t h, nvmlDeviceAddressingMode_v1_t *mode)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!mode)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (mode->version != nvmlDeviceAddressingMode_v1)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	if (d.mg || !has(&d, N_ADDRESSING))
		return NVML_ERROR_NOT_SUPPORTED;
	mode->value = (unsigned)val(&d, N_ADDRESSING);
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetDramEncryptionMode(nvmlDevice_t h, nvmlDramEncryptionInfo_v1_t *cur,
						 nvmlDramEncryptionInfo_v1_t *pending)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!cur || !pending)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (cur->version != nvmlDramEncryptionInfo_v1 || pending->version != nvmlDramEncryptionInfo_v1)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	return NVML_ERROR_NOT_SUPPORTED;   /* no simulated board encrypts its DRAM */
}

API nvmlReturn_t nvmlDeviceGetPciInfoExt(nvmlDevice_t h, nvmlPciInfoExt_v1_t *pci)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (pci->version != nvmlPciInfoExt_v1)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	if (d.mg)
		return NVML_ERROR_NOT_SUPPORTED;
	unsigned version = pci->version;
	memset(pci, 0, sizeof *pci);
	pci->version = version;
	pci->domain = d.g->dom;
	pci->bus = d.g->bus;
	pci->device = d.g->dev;
	pci->pciDeviceId = has(&d, N_PCI_DEVICE_ID) ? (unsigned)val(&d, N_PCI_DEVICE_ID) : 0;
	pci->pciSubSystemId = has(&d, N_PCI_SUBSYS_ID) ? (unsigned)val(&d, N_PCI_SUBSYS_ID) : 0;
	/* 0x03 0x02: a 3D controller, as NVIDIA's data-centre boards report (H200 capture). */
	pci->baseClass = has(&d, N_PCI_BASE_CLASS) ? (unsigned)val(&d, N_PCI_BASE_CLASS) : 0x3;
	pci->subClass = has(&d, N_PCI_SUB_CLASS) ? (unsigned)val(&d, N_PCI_SUB_CLASS) : 0x2;
	snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", d.g->dom, d.g->bus, d.g->dev, d.g->fn);
	return NVML_SUCCESS;
}

/* The NVLink fabric probe (fabric_state: 0 not supported .. 3 completed; a zero cluster UUID, as
 * the masked capture shows), the platform's placement (platform_* keys; no chassis serial, a zero
 * IB GUID) and the confidential-computing protected memory (protected_memory_mib, none used). */
API nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t h, nvmlGpuFabricInfo_v2_t *f)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!f)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (f->version != nvmlGpuFabricInfo_v2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	if (d.mg || !has(&d, N_FABRIC_STATE))
		return NVML_ERROR_NOT_SUPPORTED;
	unsigned version = f->version;
	memset(f, 0, sizeof *f);
	f->version = version;
	f->state = (unsigned char)val(&d, N_FABRIC_STATE);
	f->status = NVML_SUCCESS;
	f->cliqueId = has(&d, N_FABRIC_CLIQUE) ? (unsigned)val(&d, N_FABRIC_CLIQUE) : 0;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPlatformInfo(nvmlDevice_t h, nvmlPlatformInfo_v2_t *p)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!p)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (p->version != nvmlPlatformInfo_v2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	if (d.mg || !has(&d, N_PLATFORM_HOST))
		return NVML_ERROR_NOT_SUPPORTED;
	unsigned version = p->version;
	memset(p, 0, sizeof *p);
	p->version = version;
	p->slotNumber = has(&d, N_PLATFORM_SLOT) ? (unsigned char)val(&d, N_PLATFORM_SLOT) : 0;
	p->trayIndex = has(&d, N_PLATFORM_TRAY) ? (unsigned char)val(&d, N_PLATFORM_TRAY) : 0;
	p->hostId = (unsigned char)val(&d, N_PLATFORM_HOST);
	p->peerType = has(&d, N_PLATFORM_PEER) ? (unsigned char)val(&d, N_PLATFORM_PEER) : 0;
	p->moduleId = has(&d, N_PLATFORM_MODULE) ? (unsigned char)val(&d, N_PLATFORM_MODULE) : 0;
	return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetConfComputeProtectedMemoryUsage(nvmlDevice_t h, nvmlMemory_t *m)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d.mg || !has(&d, N_PROTECTED_MEM))
		return NVML_ERROR_NOT_SUPPORTED;
	m->total = (unsigned long long)val(&d, N_PROTECTED_MEM) << 20;
	m->used = 0;
	m->free = m->total;
	return NVML_SUCCESS;
}

/* No simulated board is a Blackwell: none keeps a host name (nvidia-smi 590 on H200: [N/A]). */
API nvmlReturn_t nvmlDeviceGetHostname_v1(nvmlDevice_t h, nvmlHostname_v1_t *name)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	return name ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
}

/* Bare metal: no vGPU capability is supported (nvidia-smi 590 on an H200 prints [N/A]). */
API nvmlReturn_t nvmlGetVgpuDriverCapabilities(int cap, unsigned *result)
{
	nvmlReturn_t r = enter_system(__func__);
	if (r)
		return r;
	return !result || cap < 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
}

API nvmlReturn_t nvmlDeviceGetVgpuCapabilities(nvmlDevice_t h, int cap, unsigned *result)
{
	struct dev d;
	nvmlReturn_t r = enter(h, __func__, &d);
	if (r)
		return r;
	return !result || cap < 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
}
#endif

/* ---- field values (called by fake-telemetry.c's nvmlDeviceGetFieldValues) ---- */

bool health_field(const struct dev *d, nvmlFieldValue_t *v)
{
	static const struct { unsigned id; enum fm_num key; } map[] = {
		{NVML_FI_DEV_POWER_AVERAGE, N_POWER_AVERAGE}, {NVML_FI_DEV_POWER_INSTANT, N_POWER_INSTANT},
		{NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT, N_TEMP_TLIMIT},
		{NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, N_RECOVERY_ACTION},
		{NVML_FI_DEV_PERF_POLICY_POWER, N_EVENT_COUNTERS},
		{NVML_FI_DEV_PERF_POLICY_SYNC_BOOST, N_EVENT_COUNTERS},
		{NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN, N_EVENT_COUNTERS},
		{NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN, N_EVENT_COUNTERS},
		{NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN, N_EVENT_COUNTERS},
		{NVML_FI_DEV_EDPP_MULTIPLIER, N_EDPP},
	};
	for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
		if (map[k].id == v->fieldId) {
			/* The module scope is Grace Hopper's; no simulated board has one. */
			if (d->mg || v->scopeId != NVML_POWER_SCOPE_GPU || !has(d, map[k].key))
				return false;
			v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
			v->value.ullVal = (unsigned long long)val(d, map[k].key);
			v->nvmlReturn = NVML_SUCCESS;
			return true;
		}
	return false;
}
