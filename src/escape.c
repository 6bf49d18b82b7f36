/* escape.c: showing hostile text safely (see escape.h). */
#include "escape.h"

#include <stdio.h>
#include <string.h>

/* Length of the UTF-8 sequence at s (1-4), or 0 when it is not valid UTF-8 (overlong forms,
 * surrogates and values past U+10FFFF included). */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
	unsigned c = s[0];
	size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
	if (!n || n > avail)
		return 0;
	unsigned cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
	if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

void esc_printable_n(struct strbuf *sb, const char *str, size_t max)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t len = strnlen(str, max);
	for (size_t i = 0; i < len;) {
		unsigned c = s[i];
		size_t n = utf8_len(s + i, len - i);
		if (n == 2 && c == 0xC2 && s[i + 1] < 0xA0) {
			sb_addf(sb, "\\u%04x", (unsigned)s[i + 1]); /* C1 control, e.g. CSI */
		} else if (n > 1) {
			sb_add(sb, (const char *)s + i, n);
		} else if (n == 1 && c >= 0x20 && c != 0x7f) {
			if (c == '\\')
				sb_addc(sb, '\\');
			sb_addc(sb, (char)c);
		} else {
			const char *e = c == 0x1b ? "\\e" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t"
				      : c == 0x07 ? "\\a" : c == 0x08 ? "\\b" : NULL;
			if (e)
				sb_adds(sb, e);
			else
				sb_addf(sb, "\\x%02x", c);
			n = 1;
		}
		i += n ? n : 1;
	}
}

void esc_printable(struct strbuf *sb, const char *s)
{
	esc_printable_n(sb, s, (size_t)-1);
}

const char *esc_str(const char *s, int slot)
{
	static char bufs[4][1024];
	char *out = bufs[slot & 3];
	struct strbuf sb = {0};
	esc_printable(&sb, s ? s : "");
	snprintf(out, sizeof bufs[0], "%s", sb.buf ? sb.buf : "");
	sb_free(&sb);
	return out;
}
