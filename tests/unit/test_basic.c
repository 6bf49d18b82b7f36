/* test_basic.c: number, duration and size parsers, JSON escaping and PCI bus id forms:
 * data-driven cases. */
#include "config/config.h"
#include "machine/gpu.h"
#include "base/json.h"
#include "tap.h"
#include "base/util.h"

#include <math.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

void test_util(void)
{
	static const struct { const char *in; bool ok; unsigned long v; } u[] = {
		{"0", true, 0}, {"42", true, 42}, {"", false, 0}, {"-1", false, 0}, {"+1", false, 0},
		{"1x", false, 0}, {" 1", false, 0}, {"99999999999999999999999", false, 0},
	};
	for (size_t i = 0; i < ARRAY_SIZE(u); i++) {
		unsigned long v = 7;
		bool ok = parse_uint(u[i].in, &v);
		CHECK(ok == u[i].ok && (!ok || v == u[i].v));
	}
}

static void on_alarm(int sig)
{
	(void)sig;
}

static bool stop_now(void)
{
	return true;
}

/* write2_all_until: two pieces through a pipe whose reader takes them 1,000 bytes at a time,
 * while a 1 ms timer's signal (no SA_RESTART) cuts the blocked writev short again and again:
 * every byte arrives once, in order. And a stop that says so writes nothing. */
void test_write2(void)
{
	size_t na = 3000001, nb = 5000003;
	char *a = xmalloc(na), *b = xmalloc(nb);
	for (size_t i = 0; i < na + nb; i++)
		*(i < na ? &a[i] : &b[i - na]) = (char)(i * 7 % 251);
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[1]);
		char buf[1000];
		size_t at = 0;
		bool same = true;
		for (ssize_t r; (r = read(p[0], buf, sizeof buf)) != 0;) {
			if (r < 0)
				_exit(2);
			for (ssize_t k = 0; k < r; k++, at++)
				same &= buf[k] == (char)(at * 7 % 251);
		}
		_exit(same && at == na + nb ? 0 : 1);
	}
	close(p[0]);
	struct sigaction sa = {.sa_handler = on_alarm}, old;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, &old);
	struct itimerval tv = {{0, 1000}, {0, 1000}}, off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &tv, NULL);
	CHECK(write2_all_until(p[1], a, na, b, nb, NULL));
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	CHECK(!write2_all_until(p[1], a, 1, NULL, 0, stop_now));
	close(p[1]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	free(a);
	free(b);
}

/* A sanitizer's allocator never grows the heap by brk: the prefaulting does nothing there. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static long minor_faults(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

/* The prefaulted heap (heap_prefault_growth), in a child (it changes malloc for good): what the
 * allocators hand out is what they did (a big realloc moved by hand keeps its bytes, calloc's
 * are zero), and, where the kernel populates (5.14 on) and no sanitizer's allocator stands in
 * for malloc, a 1 MiB block comes from the heap (by brk), whose growth is populated: writing it
 * afresh takes few faults, not one a page (256). Exit bits: 1 bytes lost, 2 calloc not zero, 4
 * faulted, 8 not from the heap. */
static int heap_child(void)
{
	char *probe = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
#ifdef MADV_POPULATE_WRITE
	bool populates = probe != MAP_FAILED && !madvise(probe, 1 << 16, MADV_POPULATE_WRITE);
#else
	bool populates = false;
#endif
	if (probe != MAP_FAILED)
		munmap(probe, 1 << 16);
	heap_prefault_growth();
	int rc = 0;
	unsigned char *a = xmalloc(20000);
	for (size_t i = 0; i < 20000; i++)
		a[i] = (unsigned char)(i * 7);
	a = xrealloc(a, 300000);
	for (size_t i = 0; i < 20000; i++)
		if (a[i] != (unsigned char)(i * 7))
			rc |= 1;
	unsigned char *z = xcalloc(300000, 1);
	for (size_t i = 0; i < 300000; i++)
		if (z[i])
			rc |= 2;
	void *top = sbrk(0);
	char *big = xmalloc(1 << 20);
	long f0 = minor_faults();   /* the populating's own are counted as faults too */
	memset(big, 1, 1 << 20);
	long faults = minor_faults() - f0;
	if (populates && !SANITIZED)
		rc |= sbrk(0) == top ? 8 : faults > 64 ? 4 : 0;
	free(big);
	free(z);
	free(a);
	return rc;
}

void test_heap(void)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		_exit(heap_child());
	int st = -1;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	CHECK(!(WEXITSTATUS(st) & 1));   /* a big realloc, moved by hand, kept its bytes */
	CHECK(!(WEXITSTATUS(st) & 2));   /* calloc's memory is zero */
	CHECK(!(WEXITSTATUS(st) & 4));   /* the heap's growth was populated */
	CHECK(!(WEXITSTATUS(st) & 8));   /* a 1 MiB block came from the heap (M_MMAP_THRESHOLD) */
}

/* The one reader of durations (options, the configuration, Prometheus's answers), at the bounds
 * its callers give: MAX_SECONDS for an option's, MAX_DURATION for the configuration's, none for
 * Prometheus's. */
void test_duration(void)
{
	static const struct { const char *in; double max; bool ok; double s; } d[] = {
		/* plain seconds, fractions allowed */
		{"90", MAX_SECONDS, true, 90}, {"1.5", MAX_SECONDS, true, 1.5},
		{"0.5", MAX_SECONDS, true, 0.5}, {".25", MAX_SECONDS, true, 0.25},
		{"2.", MAX_SECONDS, true, 2}, {"0", MAX_SECONDS, true, 0},
		/* a unit: run --wait's, the configuration's and Prometheus's */
		{"30s", MAX_SECONDS, true, 30}, {"5m", MAX_SECONDS, true, 300},
		{"2h", MAX_SECONDS, true, 7200}, {"500ms", MAX_SECONDS, true, 0.5},
		{"1.5m", MAX_SECONDS, true, 90}, {"0.3s", MAX_SECONDS, true, 0.3},
		{"5d", MAX_SECONDS, true, 432000}, {"1w", MAX_SECONDS, true, 604800},
		{"1y", MAX_DURATION, true, 31536000},
		/* Prometheus's terms */
		{"1m30s", MAX_SECONDS, true, 90}, {"1h30m", MAX_SECONDS, true, 5400},
		{"15s", HUGE_VAL, true, 15}, {"2y", HUGE_VAL, true, 63072000},
		/* not durations */
		{"", MAX_SECONDS, false, 0}, {"5x", MAX_SECONDS, false, 0}, {"-1", MAX_SECONDS, false, 0},
		{"+1", MAX_SECONDS, false, 0}, {"m", MAX_SECONDS, false, 0}, {"s", HUGE_VAL, false, 0},
		{"ms", MAX_SECONDS, false, 0}, {"5S", MAX_SECONDS, false, 0}, {"5mm", MAX_SECONDS, false, 0},
		{"1m30", MAX_SECONDS, false, 0}, {"1 s", MAX_SECONDS, false, 0},
		{" 1", MAX_SECONDS, false, 0}, {"1s ", MAX_SECONDS, false, 0}, {".", MAX_SECONDS, false, 0},
		{"nan", MAX_SECONDS, false, 0}, {"inf", HUGE_VAL, false, 0}, {"0x10", MAX_SECONDS, false, 0},
		/* no exponent, and no overflow past the bound (every option's converts to int ms) */
		{"1e999", HUGE_VAL, false, 0}, {"1e3", MAX_SECONDS, false, 0},
		{"1e306h", MAX_DURATION, false, 0}, {"1000000", MAX_SECONDS, true, 1000000},
		{"1000000.5", MAX_SECONDS, false, 0}, {"16667m", MAX_SECONDS, false, 0},
		{"99999999999999999999", MAX_SECONDS, false, 0}, {"8760h", MAX_DURATION, true, 31536000},
		{"8761h", MAX_DURATION, false, 0}, {"8759h60m1s", MAX_DURATION, false, 0},
		{"99999999999999999999999999999999999999999999999999999999999999999s", HUGE_VAL, false, 0},
	};
	for (size_t i = 0; i < ARRAY_SIZE(d); i++) {
		double v = -7;
		bool ok = parse_duration(d[i].in, d[i].max, &v);
		char what[160];
		snprintf(what, sizeof what, "parse_duration(\"%s\", %g)", d[i].in, d[i].max);
		tap_check(ok == d[i].ok && v == (ok ? d[i].s : -7), what, __FILE__, __LINE__);
	}
}

void test_json(void)
{
	static const struct { const char *in, *out; } esc[] = {
		{"plain", "\"plain\""},
		{"a\"b\\c", "\"a\\\"b\\\\c\""},
		{"tab\tnl\n", "\"tab\\tnl\\n\""},
		{"\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\""},
		{"caf\xc3\xa9", "\"caf\xc3\xa9\""},                 /* valid UTF-8 kept */
		{"\xe2\x82\xac", "\"\xe2\x82\xac\""},
		{"\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\""},
		{"bad\xff", "\"bad\\ufffd\""},                      /* invalid byte */
		{"\xc0\xaf", "\"\\ufffd\\ufffd\""},                 /* overlong */
		{"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},      /* surrogate */
		{"\xe2\x82", "\"\\ufffd\\ufffd\""},                 /* truncated */
		/* Bidi overrides and other invisible format characters: the same string, escaped. */
		{"a\xe2\x80\xae" "b", "\"a\\u202eb\""},
		{"\xe2\x81\xa6x\xe2\x81\xa9\xe2\x80\x8f", "\"\\u2066x\\u2069\\u200f\""},
		{"\xf3\xa0\x80\x81", "\"\\udb40\\udc01\""},     /* U+E0001, a tag: a surrogate pair */
		{"\xe2\x80\x8d", "\"\xe2\x80\x8d\""},              /* the zero-width joiner stays */
		{"csi\xc2\x9b" "1m\xc2\xa0", "\"csi\\u009b1m\xc2\xa0\""},  /* C1 control escaped, NBSP kept */
	};
	for (size_t i = 0; i < ARRAY_SIZE(esc); i++) {
		struct strbuf sb = {0};
		json_escape(&sb, esc[i].in);
		CHECK_STR(sb.buf, esc[i].out);
		sb_free(&sb);
	}
	struct strbuf sb = {0};
	struct json j;
	json_init(&j, &sb, false);
	json_obj(&j, NULL);
	json_str(&j, "a", NULL);
	json_arr(&j, "b");
	json_uint(&j, NULL, 1);
	json_obj(&j, NULL);
	json_end_obj(&j);
	json_arr(&j, NULL);
	json_end_arr(&j);
	json_end_arr(&j);
	json_num(&j, "c", 1.5, 3);
	json_bool(&j, "d", true);
	json_end_obj(&j);
	CHECK_STR(sb.buf, "{\"a\":null,\"b\":[1,{},[]],\"c\":1.500,\"d\":true}");
	sb_reset(&sb);
	json_init(&j, &sb, true);
	json_obj(&j, NULL);
	json_arr(&j, "x");
	json_uint(&j, NULL, 1);
	json_end_arr(&j);
	json_end_obj(&j);
	CHECK_STR(sb.buf, "{\n  \"x\": [\n    1\n  ]\n}");
	sb_free(&sb);
}

void test_pci(void)
{
	static const struct { const char *in; bool ok; unsigned d, b, dv, f; } c[] = {
		{"00000000:3B:00.0", true, 0, 0x3b, 0, 0},
		{"0000:3b:00.0", true, 0, 0x3b, 0, 0},
		{"0001:af:1f.7", true, 1, 0xaf, 0x1f, 7},
		{"0000:3B:00", true, 0, 0x3b, 0, 0},
		{"3B:00.0", true, 0, 0x3b, 0, 0},
		{"3B:00", false, 0, 0, 0, 0},
		{"0000:3B:00.8", false, 0, 0, 0, 0},
		{"0000:3B:20.0", false, 0, 0, 0, 0},
		{"0000:100:00.0", false, 0, 0, 0, 0},
		{"0000:3B:00.0x", false, 0, 0, 0, 0},
		{"GPU-abc", false, 0, 0, 0, 0},
		{"", false, 0, 0, 0, 0},
		{"000000000:3B:00.0", false, 0, 0, 0, 0},
	};
	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		unsigned d = 99, b = 99, dv = 99, f = 99;
		bool ok = parse_pci_bus_id(c[i].in, &d, &b, &dv, &f);
		CHECK(ok == c[i].ok && (!ok || (d == c[i].d && b == c[i].b && dv == c[i].dv && f == c[i].f)));
	}
}

void test_config_values(void)
{
	static const struct { const char *in; bool ok; uint64_t mib; } sizes[] = {
		{"20G", true, 20480}, {"20g", true, 20480}, {"512M", true, 512}, {"1024", true, 1024},
		{"1.5G", true, 1536}, {"2T", true, 2097152}, {"20GiB", true, 20480}, {"20GB", true, 20480},
		{"", false, 0}, {"G", false, 0}, {"-1G", false, 0}, {"20X", false, 0}, {"20 G", false, 0},
		/* issue 11.18: no overflow into a lease (UBSan saw it), no exponent or hex */
		{"20000000000000T", false, 0}, {"1e300T", false, 0}, {"1e3G", false, 0},
		{"0x10G", false, 0}, {"infG", false, 0}, {"1024T", true, 1073741824ULL},
		{"1024.5T", false, 0}, {"18446744073709551616", false, 0}, {".5G", true, 512},
	};
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint64_t v = 7;
		bool ok = parse_size_mib(sizes[i].in, &v);
		CHECK(ok == sizes[i].ok && (!ok || v == sizes[i].mib));
	}
	enum prefer p;
	CHECK(config_parse_prefer("free-memory", &p) && p == PREFER_FREE_MEMORY);
	CHECK(config_parse_prefer("index", &p) && p == PREFER_INDEX);
	CHECK(config_parse_prefer("util", &p) && p == PREFER_UTIL);
	CHECK(!config_parse_prefer("fastest", &p));
}
