/* util.c: error reporting, never-failing allocation, string buffers and small parsers (numbers,
 * seconds, sizes, durations, booleans: the command line's and the configuration's alike). */
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define EXIT_CODE_DOC(name, code, text) {code, text},
const struct exit_code_doc exit_code_docs[] = {EXIT_CODES(EXIT_CODE_DOC)};
#undef EXIT_CODE_DOC
const size_t exit_code_ndocs = ARRAY_SIZE(exit_code_docs);
const char exit_code_passthrough[] =
	"`run`, `wait`: otherwise the job's own exit status, 128+N when signal N ended it; 130 "
	"when Ctrl-C ends a wait";

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "gpuctl: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
	exit(code);
}

void warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

static void *oom(size_t n)
{
	fprintf(stderr, "gpuctl: out of memory (%zu bytes)\n", n);
	abort();
}

/* The prefaulted heap (heap_prefault_growth): heap_mark is the end of what has been populated;
 * after each allocation, what the heap grew by since (brk moved) is populated in one call,
 * before the caller writes it. */
static bool heap_hot;
static uintptr_t heap_mark;

static void heap_grown(void)
{
	uintptr_t top = (uintptr_t)sbrk(0);
	if (top > heap_mark)
		mem_prefault((void *)heap_mark, top - heap_mark);
	heap_mark = top;   /* down too, where the heap was trimmed: its regrowth is fresh */
}

void heap_prefault_growth(void)
{
	if (heap_hot)
		return;
	/* Blocks up to 4 MiB from the heap (not a fresh mapping each, faulted again each time), 8
	 * MiB of free top kept (glibc's own rule once it has freed a 4 MiB mapping: what a loop
	 * that falls back to reading a big machine itself keeps is bounded as before), and the
	 * heap grown HEAP_STEP beyond each need, so that growths are few and each populated whole.
	 * The populating comes after malloc wrote the new top's header: one fault a growth. */
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	mallopt(M_TRIM_THRESHOLD, 8 << 20);
	mallopt(M_TOP_PAD, HEAP_STEP);
	heap_mark = (uintptr_t)sbrk(0);
	heap_hot = true;
	/* The heap's free top as it is (the first malloc made 132 KiB, little of it touched yet):
	 * the first allocations come from there, and faulted one page at a time they were a
	 * third of a first view's faults. */
	struct mallinfo2 mi = mallinfo2();
	if (mi.keepcost && mi.keepcost < heap_mark)
		mem_prefault((void *)(heap_mark - mi.keepcost), mi.keepcost);
}

bool heap_prefaulting(void)
{
	return heap_hot;
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (heap_hot)
		heap_grown();
	return p ? p : oom(n);
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (heap_hot)   /* calloc clears no fresh page itself: the heap's new top is zero */
		heap_grown();
	return p ? p : oom(n * size);
}

void *xrealloc(void *p, size_t n)
{
	/* A move by realloc copies into the new block before heap_grown could populate it: with
	 * the heap prefaulted, a big block that grows by half or more (grow_array's doubling)
	 * moves here instead (a new block, then the copy). A growth by an element is realloc's,
	 * in place where it can be: moved each time, an array grown by one would be quadratic. */
	if (heap_hot && p && n >= 16384) {
		size_t old = malloc_usable_size(p);
		if (n >= old + old / 2) {
			void *q = xmalloc(n);
			memcpy(q, p, old);
			free(p);
			return q;
		}
	}
	void *q = realloc(p, n ? n : 1);
	if (heap_hot)
		heap_grown();
	return q ? q : oom(n);
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

/* At most n bytes of s, as POSIX strndup: never reads past its NUL. */
char *xstrndup(const char *s, size_t n)
{
	n = strnlen(s, n);
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	struct strbuf sb = {0};
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	sb.buf = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(sb.buf, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return sb.buf;
}

bool write_all(int fd, const void *buf, size_t n)
{
	return write_all_until(fd, buf, n, NULL);
}

bool write_all_until(int fd, const void *buf, size_t n, bool (*stop)(void))
{
	return write2_all_until(fd, buf, n, NULL, 0, stop);
}

bool write2_all_until(int fd, const void *a, size_t na, const void *b, size_t nb,
		      bool (*stop)(void))
{
	struct iovec iov[2] = {{(void *)a, na}, {(void *)b, nb}};
	size_t first = 0;   /* the piece not yet all out */
	while (first < 2) {
		if (!iov[first].iov_len) {
			first++;
			continue;
		}
		if (stop && stop())
			return false;
		ssize_t r = writev(fd, iov + first, (int)(2 - first));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		for (size_t k = (size_t)r; k && first < 2;) {   /* past what went out */
			size_t t = k < iov[first].iov_len ? k : iov[first].iov_len;
			iov[first].iov_base = (char *)iov[first].iov_base + t;
			iov[first].iov_len -= t;
			k -= t;
			if (!iov[first].iov_len)
				first++;
		}
	}
	return true;
}

void mem_prefault(void *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = ((uintptr_t)p + page - 1) & ~(page - 1),
		  b = ((uintptr_t)p + n) & ~(page - 1);
	if (b > a + 4 * page)
		madvise((void *)a, b - a, MADV_POPULATE_WRITE); /* older kernels: EINVAL, no harm */
#else
	(void)p, (void)n;
#endif
}

void *grow_array(void *p, size_t *cap, size_t want, size_t size)
{
	if (want <= *cap)
		return p;
	size_t n = *cap ? *cap : 8;
	while (n < want)
		n *= 2;
	p = xrealloc(p, n * size);
	*cap = n;
	return p;
}

void sb_reserve(struct strbuf *sb, size_t extra)
{
	if (sb->sink && sb->len >= 32768 && sb->len + extra + 1 > sb->cap) {
		fwrite(sb->buf, 1, sb->len, sb->sink);
		sb->len = 0;
	}
	sb->buf = grow_array(sb->buf, &sb->cap, sb->len + extra + 1, 1);
}

void sb_reserve_exact(struct strbuf *sb, size_t extra)
{
	if (sb->len + extra + 1 > sb->cap) {
		sb->cap = sb->len + extra + 1;
		sb->buf = xrealloc(sb->buf, sb->cap);
	}
}

void sb_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	sb_reserve(sb, 64);
	va_start(ap, fmt);
	int n = vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sb->cap - sb->len) {
		sb_reserve(sb, (size_t)n);
		va_start(ap, fmt);
		vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
		va_end(ap);
	}
	sb->len += (size_t)n;
}

void sb_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

void sb_free(struct strbuf *sb)
{
	free(sb->buf);
	*sb = (struct strbuf){0};
}

char *read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	/* A /proc file's short read is its end (see proc.c's read_scratch), which saves the second
	 * read() that would return 0; a pipe (/dev/stdin) or another file may return less before
	 * its end, so elsewhere only 0 ends it. */
	bool short_is_end = strncmp(path, "/proc/", 6) == 0;
	struct strbuf sb = {0};
	sb_reserve(&sb, 4096);
	for (;;) {
		size_t want = sb.cap - sb.len - 1;
		ssize_t r = read(fd, sb.buf + sb.len, want);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			sb_free(&sb);
			errno = e;
			return NULL;
		}
		if (r == 0)
			break;
		sb.len += (size_t)r;
		if (short_is_end && (size_t)r < want)
			break;
		if (sb.cap - sb.len < 2)
			sb_reserve(&sb, sb.cap);
	}
	close(fd);
	sb.buf[sb.len] = '\0';
	if (len)
		*len = sb.len;
	return sb.buf;
}

bool parse_uint(const char *s, unsigned long *out)
{
	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

/* A plain decimal at the start of s: digits, a fraction or both; no sign, exponent, hex, inf
 * or nan (so "1e300T" is not a size). *end: the first character after it. */
static bool parse_decimal(const char *s, double *out, const char **end)
{
	const char *p = s ? s : "";
	size_t whole = strspn(p, "0123456789"), frac = 0;
	if (p[whole] == '.')
		frac = strspn(p + whole + 1, "0123456789");
	size_t len = whole + (p[whole] == '.' ? 1 + frac : 0);
	char num[64];
	if (!whole && !frac)
		return false;
	if (len >= sizeof num)
		return false; /* 63 digits are past any size or duration gpuctl takes */
	memcpy(num, p, len);
	num[len] = '\0';
	errno = 0;
	double v = strtod(num, NULL);
	if (errno || !isfinite(v))
		return false;
	*out = v;
	*end = p + len;
	return true;
}

bool parse_size_mib(const char *s, uint64_t *mib)
{
	const char *end;
	double v, mul = 1;
	if (!parse_decimal(s, &v, &end))
		return false;
	if (*end == 'G' || *end == 'g')
		mul = 1024, end++;
	else if (*end == 'T' || *end == 't')
		mul = 1024 * 1024, end++;
	else if (*end == 'M' || *end == 'm')
		end++;
	if ((*end == 'i' && end[1] == 'B') || *end == 'B')
		end += *end == 'i' ? 2 : 1;
	/* Compared as a double before any conversion: 20000000000000T does not fit 64 bits. */
	if (*end || v * mul > (double)MAX_SIZE_MIB)
		return false;
	*mib = (uint64_t)(v * mul);
	return true;
}

/* Longest first: "5ms" is milliseconds, not 5 minutes and junk. A year is 365 days, as
 * Prometheus counts it. */
static const struct {
	const char *name;
	double mul, div;          /* seconds = number * mul / div: 500ms is 0.5 exactly */
} duration_units[] = {
	{"ms", 1, 1000}, {"s", 1, 1}, {"m", 60, 1}, {"h", 3600, 1}, {"d", 86400, 1},
	{"w", 7 * 86400, 1}, {"y", 365 * 86400, 1},
};

bool parse_duration(const char *s, double max, double *secs)
{
	const char *end;
	double v, total = 0;
	if (!parse_decimal(s, &v, &end))
		return false;
	if (!*end)
		total = v; /* plain seconds */
	while (*end) {
		size_t u = 0;
		while (u < ARRAY_SIZE(duration_units) &&
		       strncmp(end, duration_units[u].name, strlen(duration_units[u].name)))
			u++;
		if (u == ARRAY_SIZE(duration_units))
			return false;
		total += v * duration_units[u].mul / duration_units[u].div;
		end += strlen(duration_units[u].name);
		/* the next term: a number and its unit ("1m30s"; "1m30" is not one) */
		if (*end && (!parse_decimal(end, &v, &end) || !*end))
			return false;
	}
	if (total > max)
		return false;
	*secs = total;
	return true;
}

bool parse_bool(const char *v, bool *out)
{
	if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
		*out = true;
	else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
		*out = false;
	else
		return false;
	return true;
}

/* nvidia-smi's rule, from real captures: a partial MiB counts as a whole one (so reserved +
 * used + free can exceed total by a MiB or two, as nvidia-smi's do). */
unsigned long long mib(uint64_t bytes)
{
	return (unsigned long long)((bytes >> 20) + ((bytes & ((1U << 20) - 1)) != 0));
}

struct mib_text mib_text(uint64_t bytes)
{
	struct mib_text t;
	snprintf(t.s, sizeof t.s, "%llu MiB", mib(bytes));
	return t;
}

struct mib_text mib_of_text(uint64_t used, uint64_t total)
{
	struct mib_text t;
	snprintf(t.s, sizeof t.s, "%llu / %llu MiB", mib(used), mib(total));
	return t;
}

double now_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int signals_fd(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* Edits (insert, delete, substitute, swap two neighbours) from a to b; names are short. */
static size_t distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b), d[33][33];
	if (n > 32 || m > 32)
		return 99;
	for (size_t i = 0; i <= n; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[n][m];
}

bool sb_nearest(struct strbuf *sb, const char *word, const char *const *names, size_t n,
		const char *pre, const char *post)
{
	size_t best = strlen(word) <= 3 ? 1 : 2, start = sb->len;
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		size_t d = names[i] ? distance(word, names[i]) : 99;
		if (d > best)
			continue;
		if (d < best && any) {
			sb->len = start;
			sb->buf[start] = '\0';
		}
		sb_addf(sb, "%s%s%s%s", sb->len > start ? " or " : "", pre, names[i], post);
		best = d;
		any = true;
	}
	return any;
}

void env_bad(volatile int *said, const char *name, const char *value, const char *want,
	     const char *instead)
{
	/* Once, even where the exporter's threads ask at once (one of them says it). */
	if (__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		return;
	char shown[64 * 4 + 4], *o = shown; /* its first 64 bytes, control bytes as \xNN */
	for (const unsigned char *p = (const unsigned char *)value; *p && p - (const unsigned char *)value < 64; p++)
		o += *p < 0x20 || *p == 0x7f ? sprintf(o, "\\x%02x", *p) : sprintf(o, "%c", *p);
	fprintf(stderr, "gpuctl: warning: %s='%s%s' is not %s; %s\n", name, shown,
		strlen(value) > 64 ? "..." : "", want, instead);
}
