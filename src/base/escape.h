/* escape.h: making text that another user controls (process names, lease names, command
 * lines) safe to show: on a terminal no control byte of theirs may reach it; and words quoted
 * for a shell to read back (sh_quote, sh_join). */
#ifndef GPUCTL_ESCAPE_H
#define GPUCTL_ESCAPE_H

#include "base/util.h"

/* Appends s with control bytes written as escapes, as ls -b and ps do: \e \n \r \t \a \b,
 * \xHH for other C0 bytes, DEL and bytes that are not UTF-8, \uHHHH for C1 controls and the
 * invisible format characters (esc_invisible: bidi overrides, U+202E as \u202e), and a
 * backslash doubled so an escape can never be faked. Other valid UTF-8 text passes unchanged. */
void esc_printable(struct strbuf *sb, const char *s);
/* The same for at most max bytes of s. */
void esc_printable_n(struct strbuf *sb, const char *s, size_t max);
/* A static-buffer form for one printf argument: valid until the next call with the same slot
 * (0-3). Longer than ESC_STR_MAX - 1 bytes once escaped: cut between escapes and characters
 * and marked with an ellipsis. */
enum { ESC_STR_MAX = 1024 };
const char *esc_str(const char *s, int slot);
/* Whether code point cp is one of the invisible format characters escaped as \uHHHH (or
 * \UHHHHHHHH) like a control: bidirectional overrides, embeddings, isolates and marks
 * (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C), zero-width and invisible ones
 * (U+200B, U+2060-U+2064, U+FEFF, U+00AD, U+180E), line and paragraph separators, tags. Another
 * user's "txt.exe" shown as "exe.txt" is a lie told on our screen. */
bool esc_invisible(unsigned cp);
/* s escaped as above and fitted into cols terminal columns (a character takes its width: 2
 * for CJK and most emoji, 0 for a combining mark; an escape such as \e takes its length): cut on a character or escape boundary and marked with an ellipsis
 * when longer, never mid-escape. cols < 0: no limit. pad: spaces to cols. Returns the columns
 * written. */
int esc_fit(struct strbuf *sb, const char *s, int cols, bool pad);
/* The columns s takes once escaped (esc_fit's measure). */
int esc_cols(const char *s);
/* Columns of text already made printable (escaped, or our own): each character its width. */
int text_cols(const char *s);
/* At most max bytes of s into buf (bufsize: max + 4 or more), cut between characters (a byte
 * that is not UTF-8 counts alone) and marked with an ellipsis when something was cut: a printf
 * "%.60s" cuts inside a character, and says nothing. Returns buf. */
const char *text_head(char *buf, size_t bufsize, const char *s, size_t max);
/* s in POSIX sh single quotes, as every sh (bash, dash, zsh) reads it back: nothing inside is
 * special but the quote itself, written '\''. For a terminal it still needs esc_printable. */
void sh_quote(struct strbuf *sb, const char *s);
/* A command line as one would type it (what `gpuctl leases` and `gpuctl jobs` show): each word as it is where no shell would change it
 * ("train.py", "--lr=0.1"), else quoted (sh_quote): `sh -c 'echo boom; exit 3'`, never the
 * ambiguous `sh -c echo boom; exit 3`. */
char *sh_join(char *const *argv);   /* the caller frees */
/* Length of the valid UTF-8 sequence at s (1-4, at most avail bytes), or 0 when it is not one
 * (overlong forms, surrogates and values past U+10FFFF included). */
size_t utf8_seq_len(const unsigned char *s, size_t avail);

#endif
