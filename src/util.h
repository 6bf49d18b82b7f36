/* util.h: process-wide helpers: error reporting, allocation that never fails, string buffers.
 * Ownership rule: a function returning char * hands it to the caller; every _new has a _free. */
#ifndef GPUCTL_UTIL_H
#define GPUCTL_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes: documented in README.md and `gpuctl --help`; scripts depend on them. */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,        /* unexpected runtime failure (I/O, resources) */
	EXIT_USAGE = 2,       /* bad arguments or input */
	EXIT_NO_NVML = 3,     /* libnvidia-ml could not be loaded: no driver? */
	EXIT_NVML_INIT = 4,   /* NVML loaded but failed to initialise */
	EXIT_GPU_LOST = 5,    /* a GPU was lost or failed mid-query; the others were shown */
	EXIT_NO_SUCH_GPU = 6, /* a GPU named on the command line does not exist */
	EXIT_NOT_VISIBLE = 7, /* `which`: the logical device is not visible */
	EXIT_NO_CUDA = 8,     /* `map --verify`: libcuda could not be loaded or initialised */
	EXIT_MISMATCH = 9,    /* `map --verify`: the driver disagrees with the model */
	EXIT_BUSY = 10,       /* run/env: not enough free GPUs and no --wait */
	EXIT_TIMEOUT = 11,    /* run/env: --wait ran out */
	EXIT_DENIED = 12,     /* release: the lease belongs to someone else */
};

/* An error to report: its exit code and a message that says what failed and what to do. */
struct gpu_error {
	int code;                 /* EXIT_* */
	char msg[4096];
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__)
#define PRINTF(f, a) __attribute__((format(printf, f, a)))
#define NORETURN __attribute__((noreturn))
#else
#define PRINTF(f, a)
#define NORETURN
#endif

void die(int code, const char *fmt, ...) PRINTF(2, 3) NORETURN;
void warn(const char *fmt, ...) PRINTF(1, 2);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) PRINTF(1, 2);

/* Grow *p (holding *cap elements of size) to at least want elements. */
void *grow_array(void *p, size_t *cap, size_t want, size_t size);

/* sink: when set, a buffer holding 32 KiB or more writes it there before growing, so a long
 * output (status --json on 10,000 processes) needs 64 KiB, not its whole size, in memory; the
 * caller writes what is left and checks ferror(sink). Only for output nothing reads back. */
struct strbuf {
	char *buf;
	size_t len, cap;
	FILE *sink;
};
void sb_add(struct strbuf *sb, const char *s, size_t n);
void sb_adds(struct strbuf *sb, const char *s);
void sb_addc(struct strbuf *sb, char c);
void sb_addf(struct strbuf *sb, const char *fmt, ...) PRINTF(2, 3);
void sb_reset(struct strbuf *sb);
void sb_free(struct strbuf *sb);

/* Whole-file read; NULL with errno set on failure. *len excludes the added NUL. */
char *read_file(const char *path, size_t *len);

/* Strict number parsers: whole string, no sign surprises; false on any junk. */
bool parse_uint(const char *s, unsigned long *out);
bool parse_seconds(const char *s, double *out);

/* Monotonic clock in seconds. */
double now_mono(void);

#endif
