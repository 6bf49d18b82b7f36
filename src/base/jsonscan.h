/* jsonscan.h: one value of a JSON text read by its path of object keys ("Config", "Labels",
 * "io.kubernetes.pod.name"), without building a tree: for the few fields gpuctl needs of a
 * container runtime's answer (the Engine API's inspect, an OCI config.json). The text is another
 * program's and may be hostile: nesting is bounded, every read stays inside the length given,
 * and a text that is not JSON up to the value reads as "absent". base/json.c is the writer;
 * json-c (cluster/promapi.c) is loaded for Prometheus's large answers only. */
#ifndef GPUCTL_JSONSCAN_H
#define GPUCTL_JSONSCAN_H

#include <stdbool.h>
#include <stddef.h>

#define JSONSCAN_DEPTH 32     /* the deepest nesting walked through */

/* The string at keys[0..n) of the text's top object, decoded (\uXXXX as UTF-8; a NUL or an
 * unpaired surrogate as U+FFFD) into out (cut at outlen-1 bytes). false: absent, not a string,
 * or the text is not JSON up to it. */
bool jsonscan_str(const char *text, size_t len, const char *const *keys, size_t n, char *out,
		  size_t outlen);
/* The number there, when it is an integer of at most 18 digits. */
bool jsonscan_int(const char *text, size_t len, const char *const *keys, size_t n, long long *out);

#endif
