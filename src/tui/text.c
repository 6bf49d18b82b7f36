/* text.c: top's frames and text (see tui.h): rows of styled text built left to right, cut
 * and padded by display width (UTF-8 decoded here, widths from wcwidth in the terminal's
 * locale), bars, history graphs and the compact number formats of the columns. Pure: nothing
 * here reads the machine or writes to the terminal. */
#include "base/escape.h"
#include "tui/tui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

void tui_frame_init(struct tui_frame *f, int rows, int cols, bool utf8)
{
	*f = (struct tui_frame){.rows = rows, .cols = cols, .utf8 = utf8};
	f->row = xcalloc((size_t)rows, sizeof *f->row);
	f->x = xcalloc((size_t)rows, sizeof *f->x);
}

void tui_frame_free(struct tui_frame *f)
{
	for (int i = 0; f->row && i < f->rows; i++)
		sb_free(&f->row[i]);
	free(f->row);
	free(f->x);
	*f = (struct tui_frame){0};
}

/* The code point at s (its length in *len), or -1 for a byte that does not start valid UTF-8. */
static long decode(const unsigned char *s, size_t *len)
{
	unsigned c = s[0];
	size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
	*len = 1;
	if (!n)
		return -1;
	long cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return -1;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	*len = n;
	return cp;
}

/* Columns of the character at s; *len its bytes; *show whether it can be shown as it is (else
 * it is replaced by '?': no valid UTF-8, unprintable, or not ASCII on a terminal without UTF-8). */
static int char_width(const char *s, bool utf8, size_t *len, bool *show)
{
	long cp = decode((const unsigned char *)s, len);
	*show = cp >= 0x20 && cp != 0x7f && (cp < 0x80 || utf8);
	if (!*show || cp < 0x80)
		return 1;
	int w = wcwidth((wchar_t)cp);
	if (w < 0) {
		*show = false;
		return 1;
	}
	return w;
}

int tui_width(const char *s, bool utf8)
{
	int w = 0;
	while (*s) {
		size_t len;
		bool show;
		w += char_width(s, utf8, &len, &show);
		s += len;
	}
	return w;
}

size_t tui_cut(const char *s, int w, bool utf8)
{
	const char *p = s;
	int used = 0;
	while (*p) {
		size_t len;
		bool show;
		int cw = char_width(p, utf8, &len, &show);
		if (used + cw > w && p > s)
			break;
		used += cw;
		p += len;
	}
	return (size_t)(p - s);
}

size_t tui_wrap(const char *s, int w, bool utf8, size_t *next)
{
	size_t cut = tui_cut(s, w, utf8), end = cut, lead = strspn(s, " ");
	if (s[cut] && s[cut] != ' ') {
		/* Mid-word: back to the last space after the line's own indent, if there is one; a
		 * word longer than the line is broken where the line ends. */
		size_t sp = cut;
		while (sp > lead && s[sp - 1] != ' ')
			sp--;
		if (sp > lead)
			end = cut = sp;
	}
	while (end > lead && s[end - 1] == ' ')
		end--;
	*next = cut + strspn(s + cut, " ");
	return end;
}

/* Appends s cut to at most w columns; returns the columns used. */
static int fit(struct strbuf *sb, const char *s, int w, bool utf8)
{
	int used = 0;
	while (*s) {
		size_t len;
		bool show;
		int cw = char_width(s, utf8, &len, &show);
		if (used + cw > w)
			break;
		if (show)
			sb_add(sb, s, len);
		else
			sb_addc(sb, '?');
		used += cw;
		s += len;
	}
	return used;
}

static void mark(struct strbuf *sb, enum tui_style st)
{
	sb_addc(sb, TUI_MARK);
	sb_addc(sb, (char)('A' + st));
}

static void spaces(struct strbuf *sb, int n)
{
	for (int i = 0; i < n; i++)
		sb_addc(sb, ' ');
}

int tui_put(struct tui_frame *f, int y, int x, int w, enum tui_style st, bool right, const char *s)
{
	if (y < 0 || y >= f->rows)
		return x;
	struct strbuf *row = &f->row[y];
	if (x < f->x[y])
		x = f->x[y];    /* written left to right: what is written stays */
	if (x >= f->cols)
		return x;
	if (x > f->x[y]) {
		mark(row, ST_NORMAL);
		spaces(row, x - f->x[y]);
	}
	int room = f->cols - x, tw = tui_width(s, f->utf8);
	if (w < 0 || w > room)
		w = w < 0 && tw < room ? tw : room;
	mark(row, st);
	int pad = w - (tw < w ? tw : w);
	if (right)
		spaces(row, pad);
	int used = fit(row, s, w - (right ? pad : 0), f->utf8);
	spaces(row, w - used - (right ? pad : 0));
	f->x[y] = x + w;
	return x + w;
}

int tui_put_hostile(struct tui_frame *f, int y, int x, int w, enum tui_style st, const char *s)
{
	struct strbuf sb = {0};
	esc_printable_n(&sb, s ? s : "", 4096);   /* more than any screen shows */
	int r = tui_put(f, y, x, w, st, false, sb.buf ? sb.buf : "");
	sb_free(&sb);
	return r;
}

void tui_fill(struct tui_frame *f, int y, int x, enum tui_style st)
{
	if (y >= 0 && y < f->rows && f->x[y] < x)
		tui_put(f, y, f->x[y], x - f->x[y], st, false, "");
}

char *tui_frame_text(const struct tui_frame *f)
{
	struct strbuf out = {0};
	for (int y = 0; y < f->rows; y++) {
		const char *s = f->row[y].buf ? f->row[y].buf : "";
		for (; *s; s++) {
			if (*s == TUI_MARK && s[1])
				s++;
			else
				sb_addc(&out, *s);
		}
		sb_addc(&out, '\n');
	}
	return out.buf ? out.buf : xstrdup("");
}

void tui_bar(struct tui_frame *f, int y, int x, int w, double frac, const char *label,
	     enum tui_style fill)
{
	int inner = w - 2, lw = tui_width(label, f->utf8);
	if (inner < 1)
		return;
	int filled = frac < 0 ? 0 : (int)(frac * inner + 0.5);
	if (frac > 0 && filled == 0)
		filled = 1;          /* a little is not nothing */
	if (filled > inner)
		filled = inner;
	int lstart = lw <= inner ? inner - lw : inner;
	char cells[512];
	int n = inner < (int)sizeof cells - 1 ? inner : (int)sizeof cells - 1;
	x = tui_put(f, y, x, 1, ST_NORMAL, false, "[");
	/* The bar up to the label, then the label over what is left of it. */
	int bar = filled < lstart ? filled : lstart;
	memset(cells, '|', (size_t)bar);
	cells[bar] = '\0';
	x = tui_put(f, y, x, bar, fill, false, cells);
	x = tui_put(f, y, x, lstart - bar, ST_NORMAL, false, "");
	x = tui_put(f, y, x, n - lstart, frac < 0 ? ST_DIM : ST_NORMAL, true, label);
	tui_put(f, y, x, 1, ST_NORMAL, false, "]");
}

void tui_graph(struct tui_frame *f, int y, int x, int w, int h, const unsigned char *samples,
	       size_t n, enum tui_style st)
{
	static const char *const blocks[] = {" ", "\u2581", "\u2582", "\u2583", "\u2584", "\u2585",
					     "\u2586", "\u2587", "\u2588"};
	static const char ascii[] = " ..::==##";
	if (w <= 0 || h <= 0)
		return;
	size_t take = n < (size_t)w ? n : (size_t)w;
	const unsigned char *s = samples + (n - take);
	int lead = w - (int)take;  /* no samples yet on the left */
	struct strbuf sb = {0};
	for (int r = 0; r < h; r++) {
		sb_reset(&sb);
		spaces(&sb, lead);
		for (size_t c = 0; c < take; c++) {
			int eighths = 0;
			if (s[c] != TUI_NA) {
				eighths = (int)(s[c] * h * 8 / 100.0 + 0.5);
				if (s[c] > 0 && eighths == 0)
					eighths = 1;
			}
			int fill = eighths - (h - 1 - r) * 8;
			fill = fill < 0 ? 0 : fill > 8 ? 8 : fill;
			if (f->utf8)
				sb_adds(&sb, blocks[fill]);
			else
				sb_addc(&sb, ascii[fill]);
		}
		tui_put(f, y + r, x, w, st, false, sb.buf ? sb.buf : "");
	}
	sb_free(&sb);
}

void tui_bytes(char *buf, size_t n, uint64_t bytes)
{
	double k = (double)bytes / 1024;
	if (k < 1024)
		snprintf(buf, n, "%.0fK", k);
	else if (k < 10 * 1024)
		snprintf(buf, n, "%.1fM", k / 1024);
	else if (k < 1000 * 1024)
		snprintf(buf, n, "%.0fM", k / 1024);
	else if (k < 1000.0 * 1024 * 1024)
		snprintf(buf, n, "%.1fG", k / 1024 / 1024);
	else
		snprintf(buf, n, "%.1fT", k / 1024 / 1024 / 1024);
}

void tui_duration(char *buf, size_t n, double secs)
{
	unsigned long s = secs > 0 ? (unsigned long)secs : 0;
	if (s < 3600)
		snprintf(buf, n, "%lu:%02lu", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, n, "%lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
	else if (s < 1000 * 86400UL)
		snprintf(buf, n, "%lud%02luh", s / 86400, s / 3600 % 24);
	else
		snprintf(buf, n, "%lud", s / 86400);
}

void tui_rate(char *buf, size_t n, unsigned kbs)
{
	if (kbs < 1000)
		snprintf(buf, n, "%uK/s", kbs);
	else if (kbs < 1000 * 1024)
		snprintf(buf, n, "%.1fM/s", kbs / 1024.0);
	else
		snprintf(buf, n, "%.1fG/s", kbs / 1024.0 / 1024);
}

enum tui_style tui_level(double pct)
{
	return pct >= 90 ? ST_HIGH : pct >= 50 ? ST_MID : ST_LOW;
}
