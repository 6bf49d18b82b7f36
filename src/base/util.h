/* base/: rank 0, the helpers any C program of this kind needs and no gpuctl concept: util (this
 * header), dl (loading a library at run time), escape (another user's text made safe for an
 * output), json (the writer), term (the terminal), proto (the one message format of sockets and
 * state files), exec (a tool run with an argv and a deadline) and peer (the sockets and loop both
 * servers stand on). Nothing here includes a header from another folder.
 *
 * util.h: process-wide helpers: the exit codes, error reporting, allocation that never fails,
 * string buffers, strict parsers of numbers and values (sizes, durations, booleans), MiB
 * formatting and the GPU_MAX limit.
 * Ownership rule: a function returning char * hands it to the caller; every _new has a _free. */
#ifndef GPUCTL_UTIL_H
#define GPUCTL_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Exit codes. Scripts depend on them: this one list makes the enum, the exit-status text of
 * `gpuctl --help` (cmd.c) and gpuctl(1)'s EXIT STATUS (cmd/man.c; tests/unit/test_exitcodes.c
 * checks the page row by row). The list is the project's one function-like macro (an X-macro). */
#define EXIT_CODES(X)                                                                           \
	X(EXIT_OK, 0, "success")                                                                \
	X(EXIT_FAIL, 1, "unexpected failure (I/O, resources)")                                  \
	X(EXIT_USAGE, 2, "bad arguments or input; usage on stderr")                             \
	X(EXIT_NO_NVML, 3, "the NVML library could not be loaded: no NVIDIA driver? "           \
			   "(`GPUCTL_NVML_LIBRARY` names another)")                             \
	X(EXIT_NVML_INIT, 4, "NVML failed to initialise; NVML's own error text and a hint "     \
			     "are shown")                                                       \
	X(EXIT_GPU_LOST, 5, "a GPU was lost or could not be opened mid-query; the others "      \
			    "are shown")                                                        \
	X(EXIT_NO_SUCH_GPU, 6, "no GPU matches an index, UUID or bus id given")                 \
	X(EXIT_NOT_VISIBLE, 7, "`which`: the CUDA device asked for is not visible")             \
	X(EXIT_NO_CUDA, 8, "`map --verify`: the CUDA driver (`libcuda.so.1`) could not be "      \
			   "loaded or initialised")                                             \
	X(EXIT_MISMATCH, 9, "`map --verify`: the CUDA driver disagrees with gpuctl's model")    \
	X(EXIT_BUSY, 10, "`run`/`env`: not enough free GPUs, and no `--wait`; `status --free`: "  \
			 "no free GPU")                                                         \
	X(EXIT_TIMEOUT, 11, "`run`/`env`: `--wait` ran out; `wait`: `--timeout` ran out")       \
	X(EXIT_DENIED, 12, "`release`, `kill`, `cancel`, `logs`, `wait`: it belongs to another " \
			   "user (or the lease to a running job)")                              \
	X(EXIT_DAEMON, 13, "the gpuctl daemon (or your job runner) could not be reached, or "   \
			   "did not answer in time (`GPUCTL_DAEMON_TIMEOUT`)")                   \
	X(EXIT_PROMETHEUS, 14, "`status --prometheus`: the Prometheus server could not be "     \
			       "reached, or refused the query (its words are shown)")           \
	X(EXIT_CANCELLED, 15, "`wait`: the job was cancelled, or a job it was to run after did " \
			      "not succeed")                                                    \
	X(EXIT_LOST, 16, "`wait`: the job was lost (the machine restarted, or its runner "      \
			 "stopped, while it was queued or running): `gpuctl submit --again ID`; "  \
			 "or Slurm forgot it (its node failed, or it left slurmctld's memory) "   \
			 "before gpuctl saw how it ended")                                      \
	X(EXIT_NO_SUCH_JOB, 17, "`jobs`, `logs`, `cancel`, `wait`, `--after`: no job of yours " \
				"has that id")                                                  \
	X(EXIT_SLURM, 18, "Slurm refused the request (`sbatch`, `squeue`, `scancel`: its words " \
			  "are shown), or could not be asked (its client missing, `slurmctld` "  \
			  "not answering)")                                                     \
	X(EXIT_CANNOT_RUN, 126, "`run`: the command could not be run (not executable); `wait`: " \
				"the job could not be started")                                 \
	X(EXIT_NOT_FOUND, 127, "`run`: the command was not found")

#define EXIT_CODE_ENUM(name, code, text) name = code,
enum exit_code { EXIT_CODES(EXIT_CODE_ENUM) };
#undef EXIT_CODE_ENUM

/* The documented codes in order, for --help and gpuctl(1); and the one status that is
 * not a code of gpuctl's own: `run` passes its job's through. */
struct exit_code_doc {
	int code;
	const char *text;
};
extern const struct exit_code_doc exit_code_docs[];
extern const size_t exit_code_ndocs;
extern const char exit_code_passthrough[];

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

/* A server's loop (the daemon, the job runner) reads TERM, INT and HUP from this signalfd (they
 * are blocked) so that it ends between events, never inside one; SIGPIPE is ignored (a peer
 * that went away is an error of one send). -1 with errno when the kernel refuses. */
int signals_fd(void);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) PRINTF(1, 2);

/* All n bytes written (short writes continued, EINTR retried); false with errno on an error. */
bool write_all(int fd, const void *buf, size_t n);
/* The same, but false once stop() says so (asked before each write: a signal handler's flag
 * ends a write blocked on a terminal, whether the signal cut the write short or interrupted it). */
bool write_all_until(int fd, const void *buf, size_t n, bool (*stop)(void));
/* The same for two pieces in one writev (a frame's head and a mapping's rest: one write, no
 * copy); b may be empty. */
bool write2_all_until(int fd, const void *a, size_t na, const void *b, size_t nb,
		      bool (*stop)(void));

/* A big fresh buffer about to be filled (a thousand job records decoded into an array, a file
 * read into one): the kernel maps its whole pages in one call, not a fault each as they are
 * first touched (on a virtual machine a fault costs several microseconds). Only for memory
 * that will all be written; nothing happens on a kernel before 5.14 (MADV_POPULATE_WRITE). */
void mem_prefault(void *p, size_t n);
/* From now on the heap is prefaulted as it grows (x*alloc populate what it grew by, in steps of
 * HEAP_STEP): for a client about to decode a big view (the daemon's snapshot: 1,000 processes
 * touch about 1.2 MiB) whose faults were most of its first refresh on a virtual machine. Not for
 * a server (its heap is left as malloc keeps it) nor a threaded process (the mark is not locked).
 * The step is what a growth populates beyond its need, in use or not: 256 KiB left a first view
 * with up to that much populated for nothing (a fresh page costs about 3 us here: issue 22). */
#define HEAP_STEP (64 << 10)
void heap_prefault_growth(void);
/* Whether heap_prefault_growth was called: a big static buffer is then worth prefaulting too. */
bool heap_prefaulting(void);

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
/* Room for extra more bytes and the NUL (for the sink, see above). */
void sb_reserve(struct strbuf *sb, size_t extra);
/* The same in a block of just that room, not a power of two: for a big buffer whose size is
 * foretold (a loop's first frame: doubled past its need, its pages were populated for nothing). */
void sb_reserve_exact(struct strbuf *sb, size_t extra);
/* The appends are inline: output is built from thousands of short pieces (keys, numbers,
 * separators), and inlined, a literal's strlen and a short memcpy become a few stores instead
 * of two calls each. */
static inline void sb_add(struct strbuf *sb, const char *s, size_t n)
{
	if (sb->len + n + 1 > sb->cap)
		sb_reserve(sb, n);
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}
static inline void sb_adds(struct strbuf *sb, const char *s)
{
	sb_add(sb, s, strlen(s));
}
static inline void sb_addc(struct strbuf *sb, char c)
{
	if (sb->len + 2 > sb->cap)
		sb_reserve(sb, 1);
	sb->buf[sb->len++] = c;
	sb->buf[sb->len] = '\0';
}
void sb_addf(struct strbuf *sb, const char *fmt, ...) PRINTF(2, 3);
void sb_reset(struct strbuf *sb);
void sb_free(struct strbuf *sb);

/* "Did you mean": the names within a typo or two of word (one edit when word has 3 characters
 * or fewer), the nearest ones, each between pre and post and joined with " or ", appended to sb
 * (for unknown commands, config keys, profile names). false when none is close. NULL names are
 * skipped. */
bool sb_nearest(struct strbuf *sb, const char *word, const char *const *names, size_t n,
		const char *pre, const char *post);

/* Whole-file read; NULL with errno set on failure. *len excludes the added NUL. Under /proc/ a
 * short read is taken as the end (one read per file): true of the one-record files read so far
 * (stat, status, comm, environ, auxv, cmdline), not of seq files such as mountinfo or cpuinfo,
 * which return a page a read: read those another way. */
char *read_file(const char *path, size_t *len);

/* Strict number parsers: whole string, no sign surprises; false on any junk. */
bool parse_uint(const char *s, unsigned long *out);
/* "20G", "512M", "1024" (MiB) -> MiB, at most MAX_SIZE_MIB (what the text says). */
#define MAX_SIZE_MIB (1024ULL * 1024 * 1024)
#define MAX_SIZE_TEXT "1024T"
bool parse_size_mib(const char *s, uint64_t *mib);
/* gpuctl's one reader of a duration, for options, the configuration and Prometheus's answers:
 * plain seconds ("90", "1.5", ".25") or terms of a number and a unit, ms, s, m, h, d, w or y
 * (365 d), as Prometheus writes them ("500ms", "30s", "5m", "2h", "1m30s"); no sign, exponent,
 * hex or space. At most max seconds: MAX_SECONDS for an option's seconds (every wait and period
 * converts to milliseconds in an int without overflow), MAX_DURATION for the configuration's
 * and run --wait's. false on anything else, *secs untouched. */
#define MAX_SECONDS 1000000.0
#define MAX_DURATION (365 * 86400.0)
#define MAX_DURATION_TEXT "8760h"
bool parse_duration(const char *s, double max, double *secs);
/* true, yes, 1 or false, no, 0. */
bool parse_bool(const char *v, bool *out);
/* An environment variable of gpuctl's (GPUCTL_DAEMON_TIMEOUT, ...) whose value cannot be used:
 * said on stderr once per process (*said, the caller's), with what it wants and what is done
 * instead, so that a mistyped value is never taken silently for the default. */
void env_bad(volatile int *said, const char *name, const char *value, const char *want,
	     const char *instead);

/* Memory as nvidia-smi shows it: whole MiB, a partial MiB counted as one (its rule in real
 * captures); as text, "71234 MiB" and "71234 / 81559 MiB" (returned by value: use .s within the
 * same expression). */
unsigned long long mib(uint64_t bytes);
struct mib_text {
	char s[48];
};
struct mib_text mib_text(uint64_t bytes);
struct mib_text mib_of_text(uint64_t used, uint64_t total);

/* The most GPUs gpuctl handles on one machine: choices and masks are 64-bit sets. A backend
 * that finds more uses the first GPU_MAX. Here, below every layer, so that the configuration
 * (a profile's count) and the machine's model share it. */
enum { GPU_MAX = 64 };

/* Monotonic clock in seconds. */
double now_mono(void);

#endif
