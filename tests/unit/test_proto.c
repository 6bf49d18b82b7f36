/* test_proto.c: the daemon's message format (round trips, refusals) and the escaping of hostile
 * text for terminals. */
#include "base/escape.h"
#include "base/proto.h"
#include "tap.h"

static bool decodes(const char *s)
{
	struct msg m;
	char why[160];
	bool ok = msg_decode(&m, s, strlen(s), why, sizeof why);
	msg_free(&m);
	return ok;
}

/* esc_fit into cols columns; *used: what it said it took. */
static const char *fitted(const char *s, int cols, bool pad, int *used)
{
	static char out[256];
	struct strbuf sb = {0};
	*used = esc_fit(&sb, s, cols, pad);
	snprintf(out, sizeof out, "%s", sb.buf ? sb.buf : "");
	sb_free(&sb);
	return out;
}

static const char *escaped(const char *s)
{
	static char out[256];
	struct strbuf sb = {0};
	esc_printable(&sb, s);
	snprintf(out, sizeof out, "%s", sb.buf ? sb.buf : "");
	sb_free(&sb);
	return out;
}

void test_proto(void)
{
	struct strbuf sb = {0};
	struct msg m;
	char why[160];
	const char *hostile = "x\", \"CUDA_VISIBLE_DEVICES\": \"0,1\nid 9\r\x1b[2J %41 ";
	msg_begin(&sb, "acquire");
	msg_add_u64(&sb, "id", 7);
	msg_add(&sb, "name", hostile, NULL);
	msg_add(&sb, "empty", "", NULL);
	msg_add(&sb, "gpu", "GPU-a", "GPU-b", NULL);
	CHECK(strchr(sb.buf, '\r') == NULL && strchr(sb.buf, 0x1b) == NULL);
	CHECK(msg_decode(&m, sb.buf, sb.len, why, sizeof why));
	CHECK_STR(msg_verb(&m), "acquire");
	CHECK_STR(msg_get(&m, "name"), hostile);           /* any bytes travel intact */
	CHECK_STR(msg_get(&m, "empty"), "");
	CHECK(msg_line(&m, "gpu") && msg_line(&m, "gpu")->nwords == 3);
	uint64_t v = 0;
	CHECK(msg_get_u64(&m, "id", 100, &v) && v == 7);
	CHECK(!msg_get_u64(&m, "id", 6, &v));                /* above the bound */
	CHECK(!msg_get_u64(&m, "name", 100, &v));
	CHECK(msg_get(&m, "missing") == NULL);
	msg_free(&m);
	sb_free(&sb);

	CHECK(decodes("ping"));
	CHECK(decodes("ping\n"));
	CHECK(!decodes(""));
	CHECK(!decodes("\n"));
	CHECK(!decodes("ping\n\nid 1"));                     /* empty line */
	CHECK(!decodes("ping\nid  1"));                      /* empty word */
	CHECK(!decodes("ping\nid 1 "));
	CHECK(!decodes("ping\nname a%0"));                   /* truncated escape */
	CHECK(!decodes("ping\nname a%zz"));
	CHECK(!decodes("ping\nname a%00b"));                 /* NUL */
	CHECK(!decodes("ping\nname a\tb"));                  /* raw control byte */
	CHECK(!decodes("ping\nname a\rb"));
	CHECK(!decodes("a b c d e f g h i j k l m n o p q")); /* 17 words */
	CHECK(decodes("a b c d e f g h i j k l m n o p"));
	char big[PROTO_MAX_MSG + 2];
	memset(big, 'a', sizeof big);
	big[sizeof big - 1] = '\0';
	CHECK(!msg_decode(&m, big, sizeof big - 1, why, sizeof why)); /* over the size limit */
	struct strbuf lines = {0};
	sb_adds(&lines, "v");
	for (int i = 0; i < PROTO_MAX_LINES; i++)
		sb_adds(&lines, "\nk");
	CHECK(!decodes(lines.buf));                          /* too many lines */
	sb_free(&lines);

	/* Long words are scanned eight bytes at a time (issue 22): every byte that ends or escapes
	 * a run is found at each of the 24 places in and around those eight, and any bytes the
	 * encoder wrote (UTF-8 and 0x80-0xff among them) come back intact, at every length. */
	{
		static const char stops[] = {' ', '\n', '%', '\t', '\r', 0x01, 0x1f, 0x7f};
		bool all = true;
		for (size_t k = 0; k < sizeof stops; k++)
			for (size_t at = 0; at < 24; at++) {
				char text[64] = "ping\nname ";
				size_t h = strlen(text);
				memset(text + h, 'a', 30);
				text[h + 30] = '\0';
				text[h + at] = stops[k];
				const char *wnt = NULL;   /* the word expected, or NULL: refused */
				char word[40];
				if (stops[k] == ' ' || stops[k] == '\n') {
					/* a word ends there: "aaa" then another (or "aaa" then a line "aaa...") */
					snprintf(word, sizeof word, "%.*s", (int)at, text + h);
					wnt = at ? word : NULL;   /* at 0: an empty word, refused */
				} else if (stops[k] == '%') {
					text[h + at + 1] = '4', text[h + at + 2] = '1';   /* "%41": 'A' */
					snprintf(word, sizeof word, "%.*sA%s", (int)at, text + h, text + h + at + 3);
					wnt = word;
				}
				struct msg mm;
				bool ok = msg_decode(&mm, text, strlen(text), why, sizeof why);
				bool good = wnt ? ok && mm.nlines >= 2 && !strcmp(mm.lines[1].w[1], wnt) : !ok;
				if (!good) {
					all = false;
					printf("# stop 0x%02x at %zu: %s\n", (unsigned)(unsigned char)stops[k], at,
					       ok ? mm.lines[1].w[1] : why);
				}
				msg_free(&mm);
			}
		CHECK(all);
		unsigned seed = 22;
		bool round = true;
		for (int t = 0; t < 400 && round; t++) {
			char w[200];
			size_t n = (size_t)t % 150;
			for (size_t i = 0; i < n; i++) {
				seed = seed * 1103515245u + 12345u;
				unsigned char c = (unsigned char)(seed >> 16);
				w[i] = c ? (char)c : 'z';
			}
			w[n] = '\0';
			struct strbuf e = {0};
			msg_begin(&e, "v");
			msg_add(&e, "w", w, w, NULL);
			struct msg mm;
			round = msg_decode(&mm, e.buf, e.len, why, sizeof why) &&
				!strcmp(msg_get(&mm, "w"), w) && !strcmp(msg_line(&mm, "w")->w[2], w);
			msg_free(&mm);
			sb_free(&e);
		}
		CHECK(round);
	}

	CHECK_STR(escaped("plain text"), "plain text");
	CHECK_STR(escaped("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");
	CHECK_STR(escaped("a\x1b]0;pwned\x07z"), "a\\e]0;pwned\\az");
	CHECK_STR(escaped("l1\nl2\rx\ty\x7f"), "l1\\nl2\\rx\\ty\\x7f");
	CHECK_STR(escaped("back\\slash"), "back\\\\slash");
	CHECK_STR(escaped("bad\xff utf8 \xc3"), "bad\\xff utf8 \\xc3");
	CHECK_STR(escaped("csi\xc2\x9b" "31m"), "csi\\u009b31m");   /* C1 control */
	CHECK_STR(escaped("\xed\xa0\x80"), "\\xed\\xa0\\x80");       /* a surrogate */
	CHECK_STR(escaped("\xc0\xaf"), "\\xc0\\xaf");                /* overlong */
	/* Bidi controls and other invisible format characters: another user's "evil\u202egpj.py"
	 * must not show as "evilyp.jpg". */
	CHECK_STR(escaped("evil\xe2\x80\xaegpj.py"), "evil\\u202egpj.py");
	CHECK_STR(escaped("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad"), "\\u202a\\u202b\\u202c\\u202d");
	CHECK_STR(escaped("\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9"), "\\u2066\\u2067\\u2068\\u2069");
	CHECK_STR(escaped("\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c"), "\\u200e\\u200f\\u061c");
	CHECK_STR(escaped("ro\xe2\x80\x8bot\xef\xbb\xbf"), "ro\\u200bot\\ufeff"); /* zero width */
	CHECK_STR(escaped("\xe2\x80\xa8"), "\\u2028");                /* line separator */
	CHECK_STR(escaped("\xf3\xa0\x80\x81"), "\\U000e0001");       /* a tag character */
	CHECK_STR(escaped("\xe2\x80\x8d\xe2\x80\x8c\xd7\x90"), "\xe2\x80\x8d\xe2\x80\x8c\xd7\x90"); /* ZWJ, ZWNJ, alef */
	CHECK(!esc_invisible(0x200D) && esc_invisible(0x202E) && esc_invisible(0x2066));
	/* Fitting into columns: an ellipsis marks a cut, never inside an escape or a character. */
	int used;
	CHECK_STR(fitted("abc", 5, true, &used), "abc  ");
	CHECK(used == 5);
	CHECK_STR(fitted("abcdef", 4, false, &used), "abc\xe2\x80\xa6");
	CHECK(used == 4);
	CHECK_STR(fitted("abcdef", -1, false, &used), "abcdef");
	CHECK_STR(fitted("a\x1b" "bcdef", 4, false, &used), "a\\e\xe2\x80\xa6");
	CHECK_STR(fitted("a\x1b" "bcdef", 3, false, &used), "a\xe2\x80\xa6"); /* not "a\\" */
	CHECK(used == 2);
	CHECK_STR(fitted("a\x1b" "bcdef", 3, true, &used), "a\xe2\x80\xa6 ");
	CHECK_STR(fitted("caf\xc3\xa9 au lait", 6, false, &used), "caf\xc3\xa9 \xe2\x80\xa6");
	CHECK(used == 6);
	CHECK_STR(fitted("caf\xc3\xa9", 4, true, &used), "caf\xc3\xa9");
	CHECK_STR(fitted("back\\slash", -1, false, &used), "back\\\\slash");
	/* Only a byte past the width is read (issue 22): the cut is the same at every boundary,
	 * an escape just past it too, and a long line past it ends in the same ellipsis. */
	CHECK_STR(fitted("abcd", 4, false, &used), "abcd");
	CHECK(used == 4);
	CHECK_STR(fitted("abcde", 4, false, &used), "abc\xe2\x80\xa6");
	CHECK_STR(fitted("abcd\x1b", 4, false, &used), "abc\xe2\x80\xa6");
	CHECK_STR(fitted("abc\x1b", 4, false, &used), "abc\xe2\x80\xa6");   /* "abc\\e" is 5 columns */
	CHECK_STR(fitted("abc\x1b", 5, false, &used), "abc\\e");
	CHECK_STR(fitted("abcd\\", 4, false, &used), "abc\xe2\x80\xa6");
	CHECK_STR(fitted("abc", 0, false, &used), "");
	CHECK(used == 0);
	{
		char wide[5000];
		memset(wide, 'x', sizeof wide - 1);
		wide[sizeof wide - 1] = '\0';
		wide[4000] = '\x1b';
		CHECK_STR(fitted(wide, 3, false, &used), "xx\xe2\x80\xa6");
		fitted(wide, -1, false, &used);
		CHECK(used == (int)sizeof wide); /* the whole line, its escape 2 columns */
	}
	CHECK(esc_cols("a\x1b") == 3 && esc_cols("caf\xc3\xa9") == 4 && esc_cols("x\xff") == 5);
	/* Wide characters take two columns, combining marks none: another user's CJK command line
	 * fits the terminal's line instead of overflowing it by half. */
	CHECK(esc_cols("\xe8\xae\xad\xe7\xbb\x83") == 4 && esc_cols("e\xcc\x81") == 1);
	CHECK(text_cols("\xe8\xae\xad\xe7\xbb\x83") == 4);
	CHECK_STR(fitted("\xe8\xae\xad\xe7\xbb\x83\xe8\xae\xad\xe7\xbb\x83", 6, true, &used),
		  "\xe8\xae\xad\xe7\xbb\x83\xe2\x80\xa6 ");
	CHECK(used == 6);
	/* An escape counts its length in columns, also the long form, and is never cut. */
	CHECK_STR(fitted("a\xe2\x80\xae" "bcdefgh", 8, false, &used), "a\\u202e\xe2\x80\xa6");
	CHECK(esc_cols("\xe2\x80\xae") == 6 && esc_cols("\xf3\xa0\x80\x81") == 10);
	/* esc_str: a long text is cut between escapes, never inside one, and marked. */
	char longtext[ESC_STR_MAX + 8];
	for (size_t off = 0; off < 4; off++) {
		memset(longtext, 'a', sizeof longtext - 1);
		longtext[sizeof longtext - 1] = '\0';
		for (size_t i = off; i + 1 < sizeof longtext; i += 4)
			longtext[i] = 0x1b;                  /* \e: 2 bytes, so cuts fall everywhere */
		longtext[ESC_STR_MAX - 3 + off] = 0x01;   /* \x01 around the end of the buffer */
		const char *e = esc_str(longtext, 1);
		size_t n = strlen(e);
		CHECK(n < ESC_STR_MAX && n > ESC_STR_MAX - 16);
		CHECK(n >= 3 && !strcmp(e + n - 3, "\xe2\x80\xa6"));
		/* Whole escapes only before the ellipsis: walking them ends exactly there. */
		size_t i = 0;
		while (i < n - 3)
			i += e[i] != '\\' ? 1 : e[i + 1] == 'x' ? 4 : 2;
		CHECK(i == n - 3);
	}
	CHECK_STR(esc_str("short\x01", 2), "short\\x01");      /* unchanged when it fits */
	/* text_head: cut between characters, and said. */
	char head[16];
	CHECK_STR(text_head(head, sizeof head, "caf\xc3\xa9", 5), "caf\xc3\xa9");
	CHECK_STR(text_head(head, sizeof head, "caf\xc3\xa9 au", 4), "caf\xe2\x80\xa6");
	CHECK_STR(text_head(head, sizeof head, "ab\xff\xfe", 3), "ab\xff\xe2\x80\xa6");
	CHECK_STR(text_head(head, sizeof head, "0123456789abcdefghij", 40), "0123456789ab\xe2\x80\xa6");
}
