/* json.h: a small streaming JSON writer into a strbuf. Keys are NULL inside arrays. Strings are
 * escaped, and bytes that are not valid UTF-8 (command lines can hold anything) become U+FFFD so
 * the document always parses. */
#ifndef GPUCTL_JSON_H
#define GPUCTL_JSON_H

#include "base/util.h"

struct json {
	struct strbuf *sb;
	bool pretty;
	int depth;
	bool first;          /* no member written yet at this depth */
};

void json_init(struct json *j, struct strbuf *sb, bool pretty);
void json_obj(struct json *j, const char *key);
void json_arr(struct json *j, const char *key);
void json_end_obj(struct json *j);
void json_end_arr(struct json *j);
void json_str(struct json *j, const char *key, const char *s);   /* NULL -> null */
void json_uint(struct json *j, const char *key, unsigned long long v);
void json_int(struct json *j, const char *key, long long v);
void json_num(struct json *j, const char *key, double v, int decimals);
void json_bool(struct json *j, const char *key, bool v);
void json_null(struct json *j, const char *key);
void json_escape(struct strbuf *sb, const char *s);
/* A finished document to stdout, with its newline; sb is freed. */
void json_print(struct strbuf *sb);

#endif
