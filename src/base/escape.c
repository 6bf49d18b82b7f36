/* escape.c: showing hostile text safely (see escape.h). */
#include "base/escape.h"

#include <locale.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

size_t utf8_seq_len(const unsigned char *s, size_t avail)
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

const char *text_head(char *buf, size_t bufsize, const char *s, size_t max)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	size_t len = strlen((const char *)u), i = 0;
	if (max + 4 > bufsize)
		max = bufsize > 4 ? bufsize - 4 : 0;
	if (len <= max) {
		memcpy(buf, u, len + 1);
		return buf;
	}
	for (size_t n; i < len; i += n) {
		n = utf8_seq_len(u + i, len - i);
		n = n ? n : 1;
		if (i + n > max)
			break;
	}
	memcpy(buf, u, i);
	memcpy(buf + i, "\xe2\x80\xa6", 4);   /* the ellipsis and the NUL */
	return buf;
}

bool esc_invisible(unsigned cp)
{
	/* Format characters (Unicode category Cf) that reorder or hide text, and the line and
	 * paragraph separators. Kept: the zero-width joiner and non-joiner (U+200C, U+200D), which
	 * scripts and emoji sequences need and which change no order. */
	return cp == 0x00AD || cp == 0x061C || cp == 0x180E || cp == 0x200B || cp == 0x200E ||
	       cp == 0x200F || (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x206F) ||
	       cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB) || (cp >= 0xE0000 && cp <= 0xE007F);
}

/* The code point of the valid UTF-8 sequence of n bytes at s. */
static unsigned utf8_cp(const unsigned char *s, size_t n)
{
	unsigned cp = n == 1 ? s[0] : n == 2 ? s[0] & 0x1F : n == 3 ? s[0] & 0x0F : s[0] & 0x07;
	for (size_t i = 1; i < n; i++)
		cp = cp << 6 | (s[i] & 0x3F);
	return cp;
}

void esc_printable_n(struct strbuf *sb, const char *str, size_t max)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t len = strnlen(str, max);
	for (size_t i = 0; i < len;) {
		size_t run = i;
		while (run < len && s[run] >= 0x20 && s[run] < 0x7f && s[run] != '\\')
			run++;
		if (run > i) { /* plain ASCII, most of any text: one copy */
			sb_add(sb, str + i, run - i);
			i = run;
			continue;
		}
		unsigned c = s[i];
		size_t n = utf8_seq_len(s + i, len - i);
		if (n == 2 && c == 0xC2 && s[i + 1] < 0xA0) {
			sb_addf(sb, "\\u%04x", (unsigned)s[i + 1]); /* C1 control, e.g. CSI */
		} else if (n > 1 && esc_invisible(utf8_cp(s + i, n))) {
			/* A right-to-left override can make "gpt.py" of "yp.tpg": shown as \u202e. */
			unsigned cp = utf8_cp(s + i, n);
			sb_addf(sb, cp > 0xFFFF ? "\\U%08x" : "\\u%04x", cp);
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

/* Widths come from the C library's tables for UTF-8 (C.UTF-8, whatever the caller's locale:
 * the text is UTF-8 either way); without that locale every character counts one. */
static locale_t utf8_loc;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void utf8_loc_init(void)
{
	utf8_loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* Columns of the character of n bytes at s (valid UTF-8): 2 for the wide (CJK, most emoji), 0
 * for combining marks and the like, else 1. A column count that says 1 for a wide character
 * lets another user's command line overflow the terminal's line. */
static int char_cols(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	if (n <= 1)
		return 1;
	unsigned cp = n == 2 ? u[0] & 0x1F : n == 3 ? u[0] & 0x0F : u[0] & 0x07;
	for (size_t i = 1; i < n; i++)
		cp = cp << 6 | (u[i] & 0x3F);
	if (cp < 0x300)
		return 1;   /* Latin, Greek: no table needed */
	pthread_once(&utf8_once, utf8_loc_init);
	if (!utf8_loc)
		return 1;
	locale_t old = uselocale(utf8_loc);
	int w = wcwidth((wchar_t)cp);
	uselocale(old);
	return w < 0 ? 1 : w;
}

int text_cols(const char *s)
{
	int n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t len = utf8_seq_len(p, strnlen((const char *)p, 4));
		len = len ? len : 1;
		n += char_cols((const char *)p, len);
		p += len;
	}
	return n;
}

/* Bytes of the unit at s in escaped text: an escape (\\, \e, \xHH, \uHHHH, \UHHHHHHHH) or one
 * character.
 * *w: the columns it takes (an escape is ASCII: one per byte; a character: its width). */
static size_t unit_len(const char *s, int *w)
{
	size_t n = 1;
	if (*s == '\\')
		n = s[1] == 'x' ? 4 : s[1] == 'u' ? 6 : s[1] == 'U' ? 10 : 2;
	else
		while ((s[n] & 0xC0) == 0x80)
			n++;
	n = strnlen(s, n);
	*w = *s == '\\' ? (int)n : char_cols(s, n);
	return n;
}

/* Bytes of plain text at the start of s, at most limit: printable ASCII that escaping leaves as
 * it is. (A column cuts a command line of kilobytes to its width: only that much is read.) */
static size_t plain_len_max(const char *s, size_t limit)
{
	/* Eight bytes at a time while none is a control (NUL included), DEL, not ASCII or the
	 * backslash: the tests of json.c's word_needs_look, exact for "any?". A status table
	 * fits a command line per process (issue 22). */
	const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
	const unsigned char *p = (const unsigned char *)s, *end = p + strnlen(s, limit);
	for (uint64_t w, b; end - p >= 8; p += 8) {
		memcpy(&w, p, 8);
		b = w ^ (ones * '\\');
		if ((((w - ones * 0x20) & ~w) | ((b - ones) & ~b) | w | (w + ones)) & high)
			break;
	}
	while (p < end && *p >= 0x20 && *p < 0x7f && *p != '\\')
		p++;
	return (size_t)(p - (const unsigned char *)s);
}

static size_t plain_len(const char *s)
{
	return plain_len_max(s, SIZE_MAX);
}

/* n spaces, in one append. */
static void pad_to(struct strbuf *sb, int used, int cols)
{
	if (used >= cols)
		return;
	size_t n = (size_t)(cols - used);
	if (sb->len + n + 1 > sb->cap)
		sb_reserve(sb, n);
	memset(sb->buf + sb->len, ' ', n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

const char *esc_str(const char *s, int slot)
{
	static char bufs[4][ESC_STR_MAX];
	char *out = bufs[slot & 3];
	struct strbuf sb = {0};
	esc_printable(&sb, s ? s : "");
	const char *t = sb.buf ? sb.buf : "";
	size_t len = sb.len;
	if (len >= sizeof bufs[0]) {
		/* Cut between escapes and characters (never "\x1" of "\x1b"), and say so. */
		size_t keep = 0;
		int w;
		for (size_t u; t[keep] && keep + (u = unit_len(t + keep, &w)) <= sizeof bufs[0] - 4;)
			keep += u;
		memcpy(out, t, keep);
		memcpy(out + keep, "\xe2\x80\xa6", 4); /* the ellipsis and the NUL */
	} else {
		memcpy(out, t, len + 1);
	}
	sb_free(&sb);
	return out;
}

int esc_cols(const char *s)
{
	size_t n = plain_len(s);
	if (!s[n])
		return (int)n;
	struct strbuf e = {0};
	esc_printable(&e, s + n);
	int cols = (int)n + text_cols(e.buf ? e.buf : "");
	sb_free(&e);
	return cols;
}

int esc_fit(struct strbuf *sb, const char *s, int cols, bool pad)
{
	s = s ? s : "";
	/* Read up to one byte past the width: more than that is cut either way. */
	size_t plain = plain_len_max(s, cols < 0 ? SIZE_MAX : (size_t)cols + 1);
	if (!s[plain] && (cols < 0 || plain <= (size_t)cols)) {
		/* The common case, one pass and no copy: a status table of 10,000 processes. */
		sb_add(sb, s, plain);
		if (pad)
			pad_to(sb, (int)plain, cols);
		return cols >= 0 && pad ? cols : (int)plain;
	}
	if (plain >= (size_t)cols && cols > 0) {
		sb_add(sb, s, (size_t)cols - 1);
		sb_adds(sb, "\xe2\x80\xa6");
		return cols;
	}
	struct strbuf e = {0};
	esc_printable(&e, s);
	const char *t = e.buf ? e.buf : "";
	int total = 0, used = 0, w;
	for (const char *p = t; *p; total += w)
		p += unit_len(p, &w);
	if (cols < 0 || total <= cols) {
		sb_adds(sb, t);
		used = total;
	} else if (cols > 0) {
		const char *p = t;
		for (size_t u; *p && (u = unit_len(p, &w), used + w <= cols - 1); p += u)
			used += w;
		sb_add(sb, t, (size_t)(p - t));
		sb_adds(sb, "\xe2\x80\xa6"); /* the ellipsis: something was cut here */
		used++;
	}
	for (; pad && used < cols; used++)
		sb_addc(sb, ' ');
	sb_free(&e);
	return used;
}

void sh_quote(struct strbuf *sb, const char *s)
{
	sb_addc(sb, '\'');
	for (const char *p = s; *p; p++)
		if (*p == '\'')
			sb_adds(sb, "'\\''");
		else
			sb_addc(sb, *p);
	sb_addc(sb, '\'');
}

char *sh_join(char *const *argv)
{
	struct strbuf line = {0}, *sb = &line;
	/* Words of these characters alone mean themselves to every shell (no expansion, no
	 * splitting, no globbing); any other word is quoted. But a word that begins with '=' (zsh
	 * expands "=ls" to ls's path), and a first word with '=' (an assignment, not the program)
	 * or beginning with '%' (bash's job, not a program) are quoted too. */
	static const char plain[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
				    "_@%+=:,./-";
	for (int i = 0; argv[i]; i++) {
		if (i)
			sb_addc(sb, ' ');
		const char *w = argv[i];
		if (w[0] && w[strspn(w, plain)] == '\0' && w[0] != '=' &&
		    (i || (!strchr(w, '=') && w[0] != '%')))
			sb_adds(sb, argv[i]);
		else
			sh_quote(sb, argv[i]);
	}
	return line.buf ? line.buf : xstrdup("");
}
