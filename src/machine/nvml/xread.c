/* xread.c: the NVIDIA backend's reads of the values only nvidia-smi's query language prints
 * (ECC counters by location, the SRAM status, retired pages and remapped rows, field values such
 * as the average and instant power draw, InfoROM versions, encoder statistics, operation modes...):
 * one source (GX_* of gpu.h) and its argument name one NVML call, made when a query cell asks for
 * it and never by a refresh, so that status and the other views pay nothing for them.
 *
 * Each answer is told apart as nvidia-smi tells it: NOT_SUPPORTED is "not available here"
 * (GX_NA, printed [N/A]); a function the library does not export is GX_NO_FUNCTION ([Function
 * Not Found]); any other failure keeps the driver's words (GX_ERROR, printed in brackets). A
 * deprecated call is only read where the library has it; its successor, where there is one, is
 * preferred (lib.c resolves each with its fallbacks). */
#include "machine/nvml/fields.h"

#include <stdio.h>
#include <string.h>

static void answer(struct gpu_xval *out, nvmlReturn_t r)
{
	if (r == NVML_SUCCESS)
		out->st = GX_OK;
	else if (r == NVML_ERROR_NOT_SUPPORTED)
		out->st = GX_NA;
	else if (r == NVML_ERROR_FUNCTION_NOT_FOUND)
		out->st = GX_NO_FUNCTION;
	else {
		out->st = GX_ERROR;
		out->why = nvml_errstr(r);
	}
}

/* A field value into out (u, or d when the driver answers a double; negative numbers do not
 * fit a count and are refused). The call succeeds when any field could be read, so the entry's
 * own return code decides. */
static nvmlReturn_t field_value(nvmlDevice_t h, unsigned id, unsigned scope, struct gpu_xval *out)
{
	if (!nvml.field_values)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	nvmlFieldValue_t v = {.fieldId = id, .scopeId = scope};
	nvmlReturn_t r = nvml.field_values(h, 1, &v);
	if (r != NVML_SUCCESS)
		return r;
	if (v.nvmlReturn != NVML_SUCCESS)
		return v.nvmlReturn;
	long long x = 0;
	switch (v.valueType) {
	case NVML_VALUE_TYPE_DOUBLE: out->d = v.value.dVal; out->is_double = true; return NVML_SUCCESS;
	case NVML_VALUE_TYPE_UNSIGNED_INT: out->u = v.value.uiVal; return NVML_SUCCESS;
	case NVML_VALUE_TYPE_UNSIGNED_LONG: out->u = v.value.ulVal; return NVML_SUCCESS;
	case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: out->u = v.value.ullVal; return NVML_SUCCESS;
	case NVML_VALUE_TYPE_SIGNED_LONG_LONG: x = v.value.sllVal; break;
	case NVML_VALUE_TYPE_SIGNED_INT: x = v.value.siVal; break;
	case NVML_VALUE_TYPE_UNSIGNED_SHORT: out->u = v.value.usVal; return NVML_SUCCESS;
	default: return NVML_ERROR_UNKNOWN;
	}
	if (x < 0)
		return NVML_ERROR_UNKNOWN;
	out->u = (unsigned long long)x;
	return NVML_SUCCESS;
}

static nvmlReturn_t sram(nvmlDevice_t h, unsigned arg, struct gpu_xval *out)
{
	if (!nvml.sram_status)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	nvmlEccSramErrorStatus_v1_t st = {.version = nvmlEccSramErrorStatus_v1};
	nvmlReturn_t r = nvml.sram_status(h, &st);
	if (r != NVML_SUCCESS)
		return r;
	const unsigned long long c[] = {
		st.aggregateUncParity, st.aggregateUncSecDed, st.aggregateCor, st.volatileUncParity,
		st.volatileUncSecDed, st.volatileCor, st.aggregateUncBucketL2, st.aggregateUncBucketSm,
		st.aggregateUncBucketPcie, st.aggregateUncBucketMcu, st.aggregateUncBucketOther};
	out->u = arg < ARRAY_SIZE(c) ? c[arg] : st.bThresholdExceeded;
	return NVML_SUCCESS;
}

/* Calls that answer two values (current and pending, or default): arg picks one. */
static nvmlReturn_t pair(nvmlReturn_t (*fn)(nvmlDevice_t, unsigned *, unsigned *), nvmlDevice_t h,
			 unsigned arg, struct gpu_xval *out)
{
	unsigned a, b;
	if (!fn)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	nvmlReturn_t r = fn(h, &a, &b);
	out->u = arg ? b : a;
	return r;
}

static nvmlReturn_t engine(nvmlReturn_t (*fn)(nvmlDevice_t, unsigned *, unsigned *), nvmlDevice_t h,
			   struct gpu_xval *out)
{
	unsigned u, period;
	if (!fn)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	nvmlReturn_t r = fn(h, &u, &period);
	out->u = u;
	return r;
}

static nvmlReturn_t uint_call(uint_fn fn, nvmlDevice_t h, struct gpu_xval *out)
{
	unsigned v;
	if (!fn)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	nvmlReturn_t r = fn(h, &v);
	out->u = v;
	return r;
}

static nvmlReturn_t indexed(nvmlReturn_t (*fn)(nvmlDevice_t, int, unsigned *), nvmlDevice_t h,
			    unsigned arg, struct gpu_xval *out)
{
	unsigned v;
	if (!fn)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	nvmlReturn_t r = fn(h, (int)arg, &v);
	out->u = v;
	return r;
}

/* The fabric probe: a GPU whose probe is not supported (state 0) has no fabric facts at all. */
static nvmlReturn_t fabric(nvmlDevice_t h, unsigned arg, struct gpu_xval *out)
{
	nvmlGpuFabricInfo_v2_t f = {.version = nvmlGpuFabricInfo_v2};
	if (!nvml.fabric)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	nvmlReturn_t r = nvml.fabric(h, &f);
	if (r != NVML_SUCCESS)
		return r;
	if (f.state == NVML_GPU_FABRIC_STATE_NOT_SUPPORTED)
		return NVML_ERROR_NOT_SUPPORTED;
	const unsigned char *u = f.clusterUuid;
	switch (arg) {
	case 0: out->u = f.state; break;
	case 1: snprintf(out->s, sizeof out->s, "%s", f.status == NVML_SUCCESS ? "Success" : nvml_errstr(f.status)); break;
	case 2: out->u = f.cliqueId; break;
	default:
		snprintf(out->s, sizeof out->s,
			 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
			 u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	}
	return NVML_SUCCESS;
}

static nvmlReturn_t platform(nvmlDevice_t h, unsigned arg, struct gpu_xval *out)
{
	nvmlPlatformInfo_v2_t p = {.version = nvmlPlatformInfo_v2};
	if (!nvml.platform)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	nvmlReturn_t r = nvml.platform(h, &p);
	if (r != NVML_SUCCESS)
		return r;
	const unsigned char v[] = {0, p.slotNumber, p.trayIndex, p.hostId, p.peerType, p.moduleId};
	if (arg == 0) {
		size_t n = strnlen((const char *)p.chassisSerialNumber, sizeof p.chassisSerialNumber);
		memcpy(out->s, p.chassisSerialNumber, n);
		out->s[n] = '\0';
	} else if (arg < ARRAY_SIZE(v)) {
		out->u = v[arg];
	} else {
		for (int i = 0; i < 8; i++)
			out->u = out->u << 8 | p.ibGuid[i];
	}
	return NVML_SUCCESS;
}

static nvmlReturn_t read_one(const struct gpu *g, nvmlDevice_t h, unsigned src, unsigned arg,
			     struct gpu_xval *out)
{
	nvmlReturn_t r;
	unsigned a[4];
	switch ((enum gpu_xsrc)src) {
	case GX_NONE:
		return NVML_ERROR_NOT_SUPPORTED;
	case GX_PCI_MODEL:
		if (!g->pci_bus_id[0])
			return NVML_ERROR_NOT_SUPPORTED;
		out->u = arg == 0 ? g->pci_domain : arg == 1 ? g->pci_bus : g->pci_dev;
		return NVML_SUCCESS;
	case GX_ECC_COUNTER:
		if (!nvml.mem_error_counter)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		return nvml.mem_error_counter(h, (int)(arg >> 8), (int)(arg >> 4 & 0xF), (int)(arg & 0xF), &out->u);
	case GX_ECC_TOTAL:
		if (!nvml.ecc_errors)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		return nvml.ecc_errors(h, (int)(arg >> 4), (int)(arg & 0xF), &out->u);
	case GX_SRAM:
		return sram(h, arg, out);
	case GX_RETIRED:
		if (!nvml.retired_pages)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		a[0] = 0;   /* a count of 0 asks for the number only */
		r = nvml.retired_pages(h, (int)arg, &a[0], NULL);
		out->u = a[0];
		return r == NVML_ERROR_INSUFFICIENT_SIZE ? NVML_SUCCESS : r;
	case GX_RETIRED_PENDING:
		return uint_call(nvml.retired_pending, h, out);
	case GX_REMAPPED:
		if (!nvml.remapped_rows)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		r = nvml.remapped_rows(h, &a[0], &a[1], &a[2], &a[3]);
		out->u = a[arg & 3];
		return r;
	case GX_REMAP_HISTOGRAM: {
		nvmlRowRemapperHistogramValues_t v;
		if (!nvml.remap_histogram)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		r = nvml.remap_histogram(h, &v);
		const unsigned c[] = {v.max, v.high, v.partial, v.low, v.none};
		out->u = c[arg < 5 ? arg : 0];
		return r;
	}
	case GX_FIELD:
		return field_value(h, arg & 0xFFFF, arg >> 16, out);
	case GX_APP_CLOCK:
		return indexed(nvml.app_clock, h, arg, out);
	case GX_DEFAULT_APP_CLOCK:
		return indexed(nvml.default_app_clock, h, arg, out);
	case GX_POWER_MGMT_MODE:
		return uint_call(nvml.power_mgmt_mode, h, out);
	case GX_PCI_EXT: {
		nvmlPciInfoExt_v1_t p = {.version = nvmlPciInfoExt_v1};
		if (!nvml.pci_ext)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		r = nvml.pci_ext(h, &p);
		out->u = arg ? p.subClass : p.baseClass;
		return r;
	}
	case GX_ECC_MODE:
		return pair(nvml.ecc, h, arg, out);
	case GX_MIG_MODE:
		return pair(nvml.mig_mode, h, arg, out);
	case GX_GOM:
		return pair(nvml.gom, h, arg, out);
	case GX_DRIVER_MODEL:
		return pair(nvml.driver_model, h, arg, out);
	case GX_GSP:
		return pair(nvml.gsp, h, arg, out);
	case GX_ENCODER_STATS:
		if (!nvml.encoder_stats)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		r = nvml.encoder_stats(h, &a[0], &a[1], &a[2]);
		out->u = a[arg < 3 ? arg : 0];
		return r;
	case GX_INFOROM_IMAGE:
		if (!nvml.inforom_image)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		r = nvml.inforom_image(h, out->s, sizeof out->s);
		out->s[sizeof out->s - 1] = '\0';
		return r;
	case GX_INFOROM:
		if (!nvml.inforom)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		r = nvml.inforom(h, (int)arg, out->s, sizeof out->s);
		out->s[sizeof out->s - 1] = '\0';
		return r;
	case GX_INFOROM_VALID:
		if (!nvml.inforom_validate)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		r = nvml.inforom_validate(h);
		/* A checksum that does not match is an answer, not a failure. */
		out->u = r == NVML_SUCCESS;
		return r == NVML_ERROR_CORRUPTED_INFOROM ? NVML_SUCCESS : r;
	case GX_ACCOUNTING_BUFFER:
		return uint_call(nvml.accounting_buffer, h, out);
	case GX_JPG_UTIL:
		return engine(nvml.jpg, h, out);
	case GX_OFA_UTIL:
		return engine(nvml.ofa, h, out);
	case GX_ADDRESSING_MODE: {
		nvmlDeviceAddressingMode_v1_t m = {.version = nvmlDeviceAddressingMode_v1};
		if (!nvml.addressing)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		r = nvml.addressing(h, &m);
		out->u = m.value;
		return r;
	}
	case GX_C2C_MODE: {
		nvmlC2cModeInfo_v1_t m = {0};
		if (!nvml.c2c)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		r = nvml.c2c(h, &m);
		out->u = m.isC2cEnabled;
		return r;
	}
	case GX_DRAM_ENCRYPTION: {
		nvmlDramEncryptionInfo_v1_t cur = {.version = nvmlDramEncryptionInfo_v1}, pend = cur;
		if (!nvml.dram_encryption)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		r = nvml.dram_encryption(h, &cur, &pend);
		out->u = arg ? pend.encryptionState : cur.encryptionState;
		return r;
	}
	case GX_VGPU_DRIVER_CAP:
		if (!nvml.vgpu_driver_cap)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		r = nvml.vgpu_driver_cap((int)arg, &a[0]);
		out->u = a[0];
		return r;
	case GX_VGPU_DEVICE_CAP:
		return indexed(nvml.vgpu_device_cap, h, arg, out);
	case GX_FABRIC:
		return fabric(h, arg, out);
	case GX_PLATFORM:
		return platform(h, arg, out);
	case GX_HOSTNAME: {
		nvmlHostname_v1_t n = {{0}};
		if (!nvml.hostname)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		r = nvml.hostname(h, &n);
		n.value[sizeof n.value - 1] = '\0';
		snprintf(out->s, sizeof out->s, "%s", n.value);
		return r;
	}
	case GX_PROTECTED_MEM: {
		nvmlMemory_t m;
		if (!nvml.protected_mem)
			return NVML_ERROR_FUNCTION_NOT_FOUND;
		r = nvml.protected_mem(h, &m);
		out->u = arg == 0 ? m.total : arg == 1 ? m.used : m.free;
		return r;
	}
	}
	return NVML_ERROR_NOT_SUPPORTED;
}

void nvml_read_x(const struct gpu_set *set, const struct gpu *g, unsigned src, unsigned arg,
		 struct gpu_xval *out)
{
	(void)set;
	const struct nvml_dev *d = g->priv;
	*out = (struct gpu_xval){0};
	nvml_need(NEED_FIELDS);
	if (!d) {
		out->st = GX_NA;
		return;
	}
	answer(out, read_one(g, d->h, src, arg, out));
}
