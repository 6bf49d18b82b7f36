/* fake.h: what the parts of the stand-in libnvidia-ml.so.1 share. Test code only. Everything
 * here is hidden (the library is built with -fvisibility=hidden); only the NVML functions marked
 * API are exported, so a client sees NVML's symbols and nothing else. */
#ifndef FAKENVML_FAKE_H
#define FAKENVML_FAKE_H

#include "machine.h"
#include "machine/nvml/abi.h"

#define API __attribute__((visibility("default")))

extern struct fm_machine M;
extern int refcount;

/* The device a call is about: a GPU, or a MIG device and its parent GPU. */
struct dev {
	struct fm_gpu *g;
	struct fm_mig *mg;     /* NULL for a whole GPU */
	int idx;               /* the GPU's position in M.gpus */
};

/* Every device call starts here: counted, initialised, a valid handle, then injected failures
 * (and lost_after). fn is the caller's __func__. */
nvmlReturn_t enter(nvmlDevice_t h, const char *fn, struct dev *d);
/* System calls: counted, initialised, injected failures. */
nvmlReturn_t enter_system(const char *fn);
void count_call(const char *fn);
/* Re-read the machine file (when it changed) and the process directory. */
void reload_processes(void);

bool has(const struct dev *d, enum fm_num k);
/* The current value of a [gpu] key: lists advance per read or with time. */
long long val(const struct dev *d, enum fm_num k);
/* The usual shape: NOT_SUPPORTED on a MIG device or when the key is absent, else the value. */
nvmlReturn_t get_uint(nvmlDevice_t h, const char *fn, enum fm_num k, unsigned *out);
/* The same for calls with an enumerated argument: INVALID_ARGUMENT unless arg_ok. */
nvmlReturn_t get_uint_if(nvmlDevice_t h, const char *fn, bool arg_ok, enum fm_num k, unsigned *out);
bool mig_on(const struct fm_gpu *g);
nvmlReturn_t copy_str(char *dst, unsigned len, const char *src);

/* Wall clock in microseconds since the epoch (the driver's sample timestamps), and since init. */
unsigned long long now_us(void);
unsigned long long init_us(void);

/* fake-procs.c */
void procs_reset(void);         /* at init */
void procs_after_load(void);    /* after the machine file was (re-)read */

/* fake-health.c (smi, issue 27): a field value of nvmlDeviceGetFieldValues it answers; false
 * leaves the entry NOT_SUPPORTED. */
bool health_field(const struct dev *d, nvmlFieldValue_t *v);

#endif
