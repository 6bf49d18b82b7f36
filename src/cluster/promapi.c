/* promapi.c: Prometheus's HTTP API through libcurl and json-c, both loaded at run time (see
 * promapi.h). Their ABI is declared here, the subset used: libcurl's option numbers are fixed by
 * its ABI (curl.h: CURLOPTTYPE_* base + number), json-c's types are opaque pointers and an enum.
 * The connection is kept across the calls of one view (keep-alive); every call is bounded in
 * time and in the size of the answer (promapi.h): past it, reading stops at once (the announced
 * Content-Length, or the body as it arrives), so a hostile server costs no more than the bound. */
#include "cluster/promapi.h"
#include "base/dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- libcurl (libcurl.so.4) ---- */
typedef void CURL;
enum {
	CURLE_OK = 0,
	CURLOPT_NOSIGNAL = 99, CURLOPT_TIMEOUT_MS = 155, CURLOPT_CONNECTTIMEOUT_MS = 156,
	CURLOPT_WRITEDATA = 10001, CURLOPT_URL = 10002, CURLOPT_ERRORBUFFER = 10010,
	CURLOPT_USERAGENT = 10018, CURLOPT_PROTOCOLS_STR = 10318, CURLOPT_WRITEFUNCTION = 20011,
	CURLOPT_MAXFILESIZE_LARGE = 30117, CURLINFO_RESPONSE_CODE = 0x200002,
	CURLE_WRITE_ERROR = 23, CURLE_FILESIZE_EXCEEDED = 63,
	CURL_ERROR_SIZE = 256,
};
typedef size_t (*curl_write_cb)(char *ptr, size_t size, size_t n, void *user);

/* ---- json-c (libjson-c.so.5) ---- */
typedef struct pj json_object;
enum json_type {
	json_type_null, json_type_boolean, json_type_double, json_type_int, json_type_object,
	json_type_array, json_type_string,
};

static struct {
	void *curl_dl, *json_dl;
	CURL *(*easy_init)(void);
	int (*easy_setopt)(CURL *, int, ...);
	int (*easy_perform)(CURL *);
	int (*easy_getinfo)(CURL *, int, ...);
	void (*easy_cleanup)(CURL *);
	const char *(*easy_strerror)(int);
	char *(*easy_escape)(CURL *, const char *, int);
	void (*curl_free)(void *);
	json_object *(*parse)(const char *, int *);
	const char *(*error_desc)(int);
	int (*object_get_ex)(const json_object *, const char *, json_object **);
	enum json_type (*get_type)(const json_object *);
	const char *(*get_string)(json_object *);
	size_t (*array_length)(const json_object *);
	json_object *(*array_get_idx)(const json_object *, size_t);
	double (*get_double)(const json_object *);
	int (*put)(json_object *);
} L;

struct prom {
	char *base;
	CURL *curl;
	json_object *root;             /* the last answer */
	struct strbuf body;
	size_t max;                    /* the bound of the answer being read */
	bool too_big;                  /* it went past */
	char cerr[CURL_ERROR_SIZE];
};

static bool load(struct gpu_error *err)
{
	if (L.curl_dl && L.json_dl)
		return true;
	const struct dl_sym curl_syms[] = {
		{&L.easy_init, {"curl_easy_init"}}, {&L.easy_setopt, {"curl_easy_setopt"}},
		{&L.easy_perform, {"curl_easy_perform"}}, {&L.easy_getinfo, {"curl_easy_getinfo"}},
		{&L.easy_cleanup, {"curl_easy_cleanup"}}, {&L.easy_strerror, {"curl_easy_strerror"}},
		{&L.easy_escape, {"curl_easy_escape"}}, {&L.curl_free, {"curl_free"}},
	};
	const struct dl_sym json_syms[] = {
		{&L.parse, {"json_tokener_parse_verbose"}}, {&L.error_desc, {"json_tokener_error_desc"}},
		{&L.object_get_ex, {"json_object_object_get_ex"}}, {&L.get_type, {"json_object_get_type"}},
		{&L.get_string, {"json_object_get_string"}}, {&L.array_length, {"json_object_array_length"}},
		{&L.array_get_idx, {"json_object_array_get_idx"}}, {&L.get_double, {"json_object_get_double"}},
		{&L.put, {"json_object_put"}},
	};
	static const char *const curl_names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", NULL};
	static const char *const json_names[] = {"libjson-c.so.5", NULL};
	char why[768];
	err->code = EXIT_FAIL;
	if (!(L.curl_dl = dl_load(curl_names, curl_syms, ARRAY_SIZE(curl_syms), why, sizeof why))) {
		snprintf(err->msg, sizeof err->msg, "%s; install libcurl (Debian: apt-get install "
			 "libcurl4)", why);
		return false;
	}
	if (!(L.json_dl = dl_load(json_names, json_syms, ARRAY_SIZE(json_syms), why, sizeof why))) {
		dlclose(L.curl_dl);
		L.curl_dl = NULL;
		snprintf(err->msg, sizeof err->msg, "%s; install json-c (Debian: apt-get install "
			 "libjson-c5)", why);
		return false;
	}
	return true;
}

struct prom *prom_open(const char *base, struct gpu_error *err)
{
	size_t n = strlen(base);
	if ((strncmp(base, "http://", 7) && strncmp(base, "https://", 8)) || n < 9 || n > 2000 ||
	    strpbrk(base, " \t\r\n?#")) {
		err->code = EXIT_USAGE;
		snprintf(err->msg, sizeof err->msg, "--prometheus wants the server's URL, "
			 "http://HOST:PORT (as Grafana's data source names it), not '%.200s'", base);
		return NULL;
	}
	if (!load(err))
		return NULL;
	struct prom *p = xcalloc(1, sizeof *p);
	p->base = xstrndup(base, n);
	while (n > 8 && p->base[n - 1] == '/')
		p->base[--n] = '\0';
	p->curl = L.easy_init();
	if (!p->curl) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "libcurl could not start a session");
		prom_close(p);
		return NULL;
	}
	return p;
}

void prom_close(struct prom *p)
{
	if (!p)
		return;
	if (p->curl)
		L.easy_cleanup(p->curl);
	if (p->root)
		L.put(p->root);
	sb_free(&p->body);
	free(p->base);
	free(p);
}

static size_t on_body(char *ptr, size_t size, size_t n, void *user)
{
	struct prom *p = user;
	if (size * n > p->max - p->body.len) {
		p->too_big = true;
		return 0; /* libcurl stops with a write error: nothing more is read */
	}
	sb_add(&p->body, ptr, size * n);
	return size * n;
}

size_t prom_query_max(size_t ntargets)
{
	return ntargets < (PROM_QUERY_MAX - PROM_QUERY_BASE) / PROM_QUERY_PER_TARGET
		       ? PROM_QUERY_BASE + ntargets * PROM_QUERY_PER_TARGET : PROM_QUERY_MAX;
}

/* A size in MiB for a message, as exactly as it is set (1.5 MiB, 64 MiB). */
static double mib_of(size_t n)
{
	return (double)n / (1 << 20);
}

const struct pj *prom_get(struct prom *p, const char *path, size_t max, struct gpu_error *err)
{
	char *url = xasprintf("%s%s", p->base, path);
	if (p->root)
		L.put(p->root);
	p->root = NULL;
	sb_reset(&p->body);
	p->max = max;
	p->too_big = false;
	p->cerr[0] = '\0';
	L.easy_setopt(p->curl, CURLOPT_URL, url);
	L.easy_setopt(p->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	L.easy_setopt(p->curl, CURLOPT_NOSIGNAL, 1L);
	L.easy_setopt(p->curl, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
	L.easy_setopt(p->curl, CURLOPT_TIMEOUT_MS, 15000L);
	L.easy_setopt(p->curl, CURLOPT_USERAGENT, "gpuctl");
	L.easy_setopt(p->curl, CURLOPT_ERRORBUFFER, p->cerr);
	L.easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, (curl_write_cb)on_body);
	L.easy_setopt(p->curl, CURLOPT_WRITEDATA, p);
	L.easy_setopt(p->curl, CURLOPT_MAXFILESIZE_LARGE, (long long)max); /* curl_off_t: 64 bits */
	int rc = L.easy_perform(p->curl);
	long status = 0;
	L.easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
	free(url);
	err->code = EXIT_PROMETHEUS;
	if (rc == CURLE_FILESIZE_EXCEEDED || (rc == CURLE_WRITE_ERROR && p->too_big)) {
		snprintf(err->msg, sizeof err->msg, "%s sent an answer larger than the %.1f MiB allowed "
			 "for it (%s): not a Prometheus answer to this query, or a cluster larger than the "
			 "cluster view handles", p->base, mib_of(max), max == PROM_TARGETS_MAX ?
			 "the list of scrape targets" : "1 MiB and 0.5 MiB per scrape target, at most 64 MiB");
		return NULL;
	}
	if (rc != CURLE_OK) {
		snprintf(err->msg, sizeof err->msg, "cannot query Prometheus at %s: %s; is the server "
			 "running, and is that its URL?", p->base, p->cerr[0] ? p->cerr : L.easy_strerror(rc));
		return NULL;
	}
	int jerr = 0;
	p->root = p->body.buf ? L.parse(p->body.buf, &jerr) : NULL;
	const char *st = pj_str(pj_get(p->root, "status"));
	if (!st) {
		snprintf(err->msg, sizeof err->msg, "%s answered HTTP %ld with no Prometheus API answer "
			 "(%s): is it a Prometheus server (not an exporter or Grafana)?", p->base, status,
			 p->root ? "JSON without \"status\"" : jerr ? L.error_desc(jerr) : "empty");
		return NULL;
	}
	if (strcmp(st, "success")) {
		const char *type = pj_str(pj_get(p->root, "errorType")), *e = pj_str(pj_get(p->root, "error"));
		snprintf(err->msg, sizeof err->msg, "Prometheus at %s refused the query (HTTP %ld, %s): %s",
			 p->base, status, type ? type : "no type", e ? e : "no reason given");
		return NULL;
	}
	const struct pj *data = pj_get(p->root, "data");
	if (!data)
		snprintf(err->msg, sizeof err->msg, "Prometheus at %s answered without data", p->base);
	return data;
}

const struct pj *prom_query(struct prom *p, const char *promql, size_t max, struct gpu_error *err)
{
	char *q = L.easy_escape(p->curl, promql, (int)strlen(promql));
	char *path = xasprintf("/api/v1/query?query=%s", q ? q : "");
	L.curl_free(q);
	const struct pj *data = prom_get(p, path, max, err);
	free(path);
	return data;
}

const struct pj *pj_get(const struct pj *obj, const char *key)
{
	json_object *v = NULL;
	if (!obj || L.get_type(obj) != json_type_object || !L.object_get_ex(obj, key, &v))
		return NULL;
	return v;
}

const char *pj_str(const struct pj *v)
{
	return v && L.get_type(v) == json_type_string ? L.get_string((json_object *)v) : NULL;
}

size_t pj_len(const struct pj *arr)
{
	return arr && L.get_type(arr) == json_type_array ? L.array_length(arr) : 0;
}

const struct pj *pj_at(const struct pj *arr, size_t i)
{
	return i < pj_len(arr) ? L.array_get_idx(arr, i) : NULL;
}

bool pj_num(const struct pj *v, double *out)
{
	if (!v || (L.get_type(v) != json_type_double && L.get_type(v) != json_type_int))
		return false;
	*out = L.get_double(v);
	return true;
}
