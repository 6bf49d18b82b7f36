/* json.c: streaming JSON writer (see json.h). */
#include "base/json.h"
#include "base/escape.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

void json_init(struct json *j, struct strbuf *sb, bool pretty)
{
	*j = (struct json){.sb = sb, .pretty = pretty, .first = true};
}

static void newline(struct json *j)
{
	static const char indent[] = "\n                                                              ";
	if (!j->pretty)
		return;
	size_t n = 1 + 2 * (size_t)j->depth;
	sb_add(j->sb, indent, n < sizeof indent - 1 ? n : sizeof indent - 1);
}

/* The comma, the indent and the quoted key of a member, written after one bounds check: a
 * document of 10,000 processes has 150,000 members, and piece by piece each was five appends. */
static void member(struct json *j, const char *key)
{
	struct strbuf *sb = j->sb;
	size_t klen = key ? strlen(key) : 0;
	size_t ind = j->pretty && j->depth > 0 ? 1 + 2 * (size_t)j->depth : 0;
	if (ind > 63)
		ind = 63;
	/* (room for the indent written whole: 64 bytes of one copy, the excess overwritten) */
	static const char spaces[64] = "                                                               ";
	if (sb->len + klen + 64 + 8 > sb->cap)
		sb_reserve(sb, klen + 64 + 8);
	char *d = sb->buf + sb->len;
	if (j->depth > 0) {
		if (!j->first)
			*d++ = ',';
		if (ind) {
			*d++ = '\n';
			memcpy(d, spaces, sizeof spaces);   /* a fixed size: a few stores, no call */
			d += ind - 1;
		}
	}
	j->first = false;
	if (key) {
		/* Keys are gpuctl's own ASCII literals: nothing to escape. */
		*d++ = '"';
		memcpy(d, key, klen);
		d += klen;
		*d++ = '"';
		*d++ = ':';
		if (j->pretty)
			*d++ = ' ';
	}
	*d = '\0';
	sb->len = (size_t)(d - sb->buf);
}

static void open_(struct json *j, const char *key, char c)
{
	member(j, key);
	sb_addc(j->sb, c);
	j->depth++;
	j->first = true;
}

static void close_(struct json *j, char c)
{
	j->depth--;
	if (!j->first)
		newline(j);
	sb_addc(j->sb, c);
	j->first = false;
}

void json_obj(struct json *j, const char *key) { open_(j, key, '{'); }
void json_arr(struct json *j, const char *key) { open_(j, key, '['); }
void json_end_obj(struct json *j) { close_(j, '}'); }
void json_end_arr(struct json *j) { close_(j, ']'); }

/* Length of the valid UTF-8 sequence at s, or 0. Rejects overlongs, surrogates and > U+10FFFF. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n;
	unsigned min, cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2, min = 0x80, cp = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3, min = 0x800, cp = c & 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4, min = 0x10000, cp = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

/* Bytes that JSON takes as they are: printable ASCII but the quote and the backslash. */
static const unsigned char plain[256] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  /* 0x00 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  /* 0x10 */
	1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  /* 0x20 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  /* 0x30 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  /* 0x40 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,  /* 0x50 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  /* 0x60 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,  /* 0x70 */
};

/* Whether any of the 8 bytes in w needs a look: a control (below 0x20, NUL included), the quote,
 * the backslash, DEL or not ASCII (w + ones sets the top bit of 0x7f and up; a carry out of 0xff
 * is caught by w's own top bit). The "has a byte less than n" and "has a zero byte" tests of the
 * bit-twiddling folklore, which are exact for the question "any?". */
static inline bool word_needs_look(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
	uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
	return (((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b) | w | (w + ones)) & high;
}

/* Runs of bytes that need no escaping are copied whole, found 8 bytes at a time: command lines
 * are mostly plain ASCII, and on 10,000 processes this loop is most of what --json costs beyond
 * the floor. */
void json_escape(struct strbuf *sb, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	const unsigned char *end = s + strlen(str);
	sb_addc(sb, '"');
	while (*s) {
		const unsigned char *run = s;
		for (uint64_t w; end - s >= 8 && (memcpy(&w, s, 8), !word_needs_look(w));)
			s += 8;
		while (plain[*s])
			s++;
		if (s > run)
			sb_add(sb, (const char *)run, (size_t)(s - run));
		if (!*s)
			break;
		size_t n = utf8_len(s);
		if (n == 0) {
			sb_add(sb, "\\ufffd", 6);
			s++;
			continue;
		}
		unsigned cp = n == 2 ? s[0] & 0x1F : n == 3 ? s[0] & 0x0F : s[0] & 0x07;
		for (size_t i = 1; i < n; i++)
			cp = cp << 6 | (s[i] & 0x3F);
		if (n > 1 && (esc_invisible(cp) || cp < 0xA0)) {
			/* The same string, but neither a bidi override nor a C1 control (0x9b: CSI)
			 * acts on a terminal that shows the document. */
			if (cp > 0xFFFF)
				sb_addf(sb, "\\u%04x\\u%04x", 0xD800 + ((cp - 0x10000) >> 10),
					0xDC00 + ((cp - 0x10000) & 0x3FF));
			else
				sb_addf(sb, "\\u%04x", cp);
			s += n;
			continue;
		}
		if (n > 1) {
			sb_add(sb, (const char *)s, n);
			s += n;
			continue;
		}
		unsigned char c = *s++;
		switch (c) {
		case '"': sb_add(sb, "\\\"", 2); break;
		case '\\': sb_add(sb, "\\\\", 2); break;
		case '\n': sb_add(sb, "\\n", 2); break;
		case '\t': sb_add(sb, "\\t", 2); break;
		case '\r': sb_add(sb, "\\r", 2); break;
		default: sb_addf(sb, "\\u%04x", c);
		}
	}
	sb_addc(sb, '"');
}

void json_str(struct json *j, const char *key, const char *s)
{
	member(j, key);
	if (s)
		json_escape(j->sb, s);
	else
		sb_adds(j->sb, "null");
}

void json_uint(struct json *j, const char *key, unsigned long long v)
{
	char buf[24];
	size_t i = sizeof buf;
	member(j, key);
	do
		buf[--i] = (char)('0' + v % 10);
	while (v /= 10);
	sb_add(j->sb, buf + i, sizeof buf - i);
}

void json_int(struct json *j, const char *key, long long v)
{
	member(j, key);
	sb_addf(j->sb, "%lld", v);
}

void json_num(struct json *j, const char *key, double v, int decimals)
{
	member(j, key);
	sb_addf(j->sb, "%.*f", decimals, v);
}

void json_bool(struct json *j, const char *key, bool v)
{
	member(j, key);
	sb_adds(j->sb, v ? "true" : "false");
}

void json_null(struct json *j, const char *key)
{
	member(j, key);
	sb_adds(j->sb, "null");
}

void json_print(struct strbuf *sb)
{
	sb_addc(sb, '\n');
	fputs(sb->buf, stdout);
	sb_free(sb);
}
