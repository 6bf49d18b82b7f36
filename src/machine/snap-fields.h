/* snap-fields.h: the numeric fields of struct gpu as the daemon's snapshot carries them, in
 * order (machine/snap.h's "gn" lines): one table the encoder (snap.c) and the decoder
 * (snap-decode.c) both walk, so the two cannot drift. Internal to the snapshot's files. */
#ifndef GPUCTL_SNAP_FIELDS_H
#define GPUCTL_SNAP_FIELDS_H

#include "machine/gpu.h"
#include "base/util.h"

#include <stddef.h>

enum { U32, I32, U64 };
static const struct snap_field {
	size_t off;
	int type;
} fields[] = {
#define F(name, t) {offsetof(struct gpu, name), t}
	F(errors, U32), F(pci_domain, U32), F(pci_bus, U32), F(pci_dev, U32), F(pci_fn, U32),
	F(valid, U64), F(mem_total, U64), F(mem_used, U64), F(mem_free, U64), F(mem_reserved, U64),
	F(util_gpu, U32), F(util_mem, U32), F(temp, U32), F(power_mw, U32), F(power_limit_mw, U32),
	F(fan, U32), F(clk_gfx, U32), F(clk_sm, U32), F(clk_mem, U32), F(compute_mode, U32),
	F(mig_mode, U32), F(persistence, U32), F(ecc, U32), F(ecc_uncorrected, U64),
	F(cc_major, I32), F(cc_minor, I32), F(pci_device_id, U32), F(cores, U32),
	F(clk_video, U32), F(pstate, U32), F(events_active, U64), F(util_enc, U32),
	F(util_dec, U32), F(temp_mem, U32), F(power_mgmt_limit_mw, U32), F(pcie_gen, U32),
	F(pcie_width, U32), F(pcie_tx_kbs, U32), F(pcie_rx_kbs, U32), F(display_active, U32),
	F(accounting, U32), F(pci_subsys_id, U32), F(events_supported, U64), F(power_min_mw, U32),
	F(power_max_mw, U32), F(power_default_mw, U32), F(clk_max_gfx, U32), F(clk_max_sm, U32),
	F(clk_max_mem, U32), F(clk_max_video, U32), F(pcie_gen_max, U32), F(pcie_gen_gpu_max, U32),
	F(pcie_width_max, U32), F(temp_shutdown, U32), F(temp_slowdown, U32), F(temp_mem_max, U32),
	F(temp_gpu_max, U32), F(display_mode, U32),
#undef F
};
#define NFIELDS ARRAY_SIZE(fields)
#define NPROCFIELDS 15             /* the words after "p" */
#define PER_LINE 15

#endif
