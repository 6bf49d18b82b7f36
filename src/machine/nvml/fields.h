/* fields.h: what backend.c asks of fields.c: the per-device state both keep (struct nvml_dev) and
 * the reads beyond the base refresh (REFRESH_* groups, static facts, per-process utilisation).
 * Not for other modules: they read struct gpu. */
#ifndef GPUCTL_NVML_FIELDS_H
#define GPUCTL_NVML_FIELDS_H

#include "machine/nvml/lib.h"

/* The newest utilisation sample of a process, kept across refreshes. */
struct util_sample {
	unsigned pid;
	uint64_t ts;
	unsigned sm, mem, enc, dec;
};

struct nvml_dev {
	nvmlDevice_t h;
	nvmlDevice_t *mig_h;
	bool static_read;        /* REFRESH_STATIC done */
	uint64_t last_seen;      /* the newest utilisation sample taken, microseconds */
	void *ubuf;              /* utilisation entries as NVML writes them, reused */
	size_t ubuf_cap;
	struct util_sample *samples;
	size_t nsamples, samples_cap;
};

/* The REFRESH_* groups in what, beside the base refresh. */
void nvml_refresh_extra(struct gpu *g, struct nvml_dev *d, unsigned what);
/* The static facts (REFRESH_STATIC), read once. */
void nvml_read_static(struct gpu *g, struct nvml_dev *d);
/* Each listed process's newest utilisation sample (REFRESH_PROC_UTIL). */
void nvml_refresh_proc_util(struct gpu *g, struct nvml_dev *d);
void nvml_dev_free(struct nvml_dev *d);
/* smi (issue 27): one query value, read now (xread.c). */
void nvml_read_x(const struct gpu_set *set, const struct gpu *g, unsigned src, unsigned arg,
		 struct gpu_xval *out);

#endif
