/* promapi.h: a client of Prometheus's HTTP API (/api/v1/query, /api/v1/targets) for the cluster
 * view. HTTP is libcurl's (libcurl.so.4) and JSON parsing json-c's (libjson-c.so.5): both loaded
 * through dl.c only when `status --prometheus` runs, so no other command pays for them. Answers
 * are read through the small accessors below; a value of the wrong type reads as absent. */
#ifndef GPUCTL_PROMAPI_H
#define GPUCTL_PROMAPI_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

struct prom;
struct pj;                           /* a JSON value of an answer (json-c's object) */

/* base: http(s)://HOST:PORT[/PREFIX]. NULL with err set (and err->code) when the libraries
 * cannot be loaded or the URL is not one. */
struct prom *prom_open(const char *base, struct gpu_error *err);
void prom_close(struct prom *p);
/* The most an answer may hold, in bytes: the server is another machine, and json-c's tree of an
 * answer takes about seven times its size, so what is read and parsed is bounded by what the
 * question can legitimately get back. The targets: PROM_TARGETS_MAX (8 MiB: some 15,000 targets
 * of 550 bytes, as Prometheus 2.42 lists them). A query of the cluster view's series:
 * PROM_QUERY_BASE (1 MiB) and PROM_QUERY_PER_TARGET (512 KiB: an exporter of 32 GPUs with 20
 * processes each; an 8-GPU host with 6 processes answers 25 KB) per scrape target, at most
 * PROM_QUERY_MAX (64 MiB). */
#define PROM_TARGETS_MAX ((size_t)8 << 20)
#define PROM_QUERY_BASE ((size_t)1 << 20)
#define PROM_QUERY_PER_TARGET ((size_t)512 << 10)
#define PROM_QUERY_MAX ((size_t)64 << 20)
size_t prom_query_max(size_t ntargets);

/* GET base+path (path with its query string, already escaped), an answer of at most max bytes;
 * the answer's "data" member, owned by p until the next call. NULL with err set (EXIT_PROMETHEUS):
 * unreachable, an HTTP error, an answer larger than max (not read further), one that is not
 * Prometheus's JSON, or Prometheus's own error (its words, verbatim). */
const struct pj *prom_get(struct prom *p, const char *path, size_t max, struct gpu_error *err);
/* A PromQL instant query at the server's now; the "data" member (resultType, result). */
const struct pj *prom_query(struct prom *p, const char *promql, size_t max, struct gpu_error *err);

const struct pj *pj_get(const struct pj *obj, const char *key);   /* NULL: absent */
const char *pj_str(const struct pj *v);                           /* NULL: not a string */
size_t pj_len(const struct pj *arr);                              /* 0: not an array */
const struct pj *pj_at(const struct pj *arr, size_t i);
bool pj_num(const struct pj *v, double *out);                     /* a JSON number */

#endif
