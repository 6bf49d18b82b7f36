/* proto.h: the messages between gpuctl clients and `gpuctl daemon`, and the daemon's own state
 * files, in one text format with one strict decoder (fuzzed: tests/fuzz/fuzz_proto.c).
 *
 * A message is lines separated by '\n'. Each line is one or more words separated by single
 * spaces; the first word of the first line is the verb, the first word of every other line its
 * key. A word is percent-encoded: the bytes 0x00-0x20, '%' and 0x7f appear as %XX, so names and
 * command lines of any content (hostile ones included) travel intact and never split a line or
 * a word. The decoder refuses anything else (empty words, a NUL after decoding, bad escapes, too
 * many lines or words, an over-long message) with a reason, and never reads past len. */
#ifndef GPUCTL_PROTO_H
#define GPUCTL_PROTO_H

#include "base/util.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_MAX_MSG 65536       /* bytes in one message (a SOCK_SEQPACKET datagram) */
#define PROTO_MAX_LINES 1024
#define PROTO_MAX_WORDS 16        /* per line, the key included */
#define PROTO_MAX_FDS 70          /* one pipe end and a lock per GPU (64 at most) */

struct msg_line {
	size_t nwords;
	char *w[PROTO_MAX_WORDS];     /* decoded, NUL-terminated; w[0] is the key (or the verb) */
};

struct msg {
	size_t nlines;
	struct msg_line *lines;       /* lines[0] holds the verb */
	char *store;                  /* the decoded words live here */
};

/* Decodes buf[0..len). false (why filled, m left empty) on anything malformed. */
bool msg_decode(struct msg *m, const char *buf, size_t len, char *why, size_t whylen);
void msg_free(struct msg *m);
const char *msg_verb(const struct msg *m);
/* The first line with this key, or NULL. */
const struct msg_line *msg_line(const struct msg *m, const char *key);
/* Its first value word, or NULL when the key is absent or has no value. */
const char *msg_get(const struct msg *m, const char *key);
/* A decimal value; false when absent, malformed or above max. */
bool msg_get_u64(const struct msg *m, const char *key, uint64_t max, uint64_t *out);
bool word_u64(const char *w, uint64_t max, uint64_t *out);

/* Building a message: msg_begin(sb, verb), then lines. */
void msg_begin(struct strbuf *sb, const char *verb);
/* The one answer that refuses request id: "error", its exit code and the message for the user
 * (the daemon's and the job runner's). */
void msg_error(struct strbuf *sb, uint64_t id, int code, const char *text);
/* msg_error, its message formatted (at most 2 KiB of it). */
void msg_verrorf(struct strbuf *sb, uint64_t id, int code, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
/* err from an `error` answer: its code and message (fallback when it has none). */
void msg_error_read(const struct msg *m, const char *fallback, struct gpu_error *err);
/* A line of words: key and a NULL-terminated list of values. */
void msg_add(struct strbuf *sb, const char *key, ...) __attribute__((sentinel));
void msg_add_u64(struct strbuf *sb, const char *key, uint64_t v);
void msg_add_i64(struct strbuf *sb, const char *key, int64_t v);
/* Starts a line with key; then msg_word for each value. */
void msg_key(struct strbuf *sb, const char *key);
void msg_word(struct strbuf *sb, const char *w);
void msg_word_u64(struct strbuf *sb, uint64_t v);

/* Sends one message with nfds (at most PROTO_MAX_FDS) descriptors attached (SCM_RIGHTS), again
 * on EINTR; sendmsg's result. The one home of the control-message layout for both sides. */
ssize_t proto_send(int sock, const void *buf, size_t len, const int *fds, size_t nfds, int flags);
/* Receives one message without waiting (MSG_DONTWAIT, descriptors close-on-exec) into buf (len
 * bytes) and its first maxfds descriptors into fds (*nfds of them); any further descriptor is
 * closed here, so a peer cannot make the receiver leak them. recvmsg's result; *cut is true when
 * the message or its descriptors did not fit (MSG_TRUNC, MSG_CTRUNC). */
ssize_t proto_recv(int sock, char *buf, size_t len, int *fds, size_t maxfds, size_t *nfds, bool *cut);

#endif
