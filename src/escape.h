/* escape.h: making text that another user controls (process names, lease names, command
 * lines) safe to show: on a terminal no control byte of theirs may reach it. */
#ifndef GPUCTL_ESCAPE_H
#define GPUCTL_ESCAPE_H

#include "util.h"

/* Appends s with control bytes written as escapes, as ls -b and ps do: \e \n \r \t \a \b,
 * \xHH for other C0 bytes, DEL and bytes that are not UTF-8, \uHHHH for C1 controls, and a
 * backslash doubled so an escape can never be faked. Valid UTF-8 text passes unchanged. */
void esc_printable(struct strbuf *sb, const char *s);
/* The same for at most max bytes of s. */
void esc_printable_n(struct strbuf *sb, const char *s, size_t max);
/* A static-buffer form for one printf argument: valid until the next call with the same slot
 * (0-3), cut to fit the buffer. */
const char *esc_str(const char *s, int slot);

#endif
