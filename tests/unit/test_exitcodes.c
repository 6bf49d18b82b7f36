/* test_exitcodes.c: gpuctl(1)'s EXIT STATUS, as `make man` wrote it (build/man/gpuctl.1), says
 * exactly what the one list in util.h says (the list also makes the enum and `gpuctl --help`),
 * row by row, in order, ending with the job's own status that run and wait pass through. The
 * page is read as a reader sees it: fonts and roff escapes dropped, so `which` in the list is
 * "which" on the page. $GPUCTL_MAN_PAGE names another page (a doctored copy fails it). */
#include "tap.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* roff to the words a reader sees: \fB \fR \fI \fP and \& dropped, \- a minus, \e a backslash,
 * \(ga a backquote; and the list's `code` quotes dropped, as the page sets them in bold. */
static char *plain(const char *s, bool from_roff)
{
	char *out = xmalloc(strlen(s) + 1), *o = out;
	while (*s) {
		if (from_roff && s[0] == '\\' && s[1] == 'f' && s[2]) {
			s += 3;
		} else if (from_roff && s[0] == '\\' && s[1] == '&') {
			s += 2;
		} else if (from_roff && s[0] == '\\' && (s[1] == '-' || s[1] == 'e')) {
			*o++ = s[1] == '-' ? '-' : '\\';
			s += 2;
		} else if (from_roff && !strncmp(s, "\\(ga", 4)) {
			*o++ = '`';
			s += 4;
		} else if (!from_roff && *s == '`') {
			s++;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

void test_exitcodes(void)
{
	char fallback[4096];
	const char *path = getenv("GPUCTL_MAN_PAGE");
	if (!path) {
		const char *b = getenv("GPUCTL_BUILD") ? getenv("GPUCTL_BUILD") : "build";
		snprintf(fallback, sizeof fallback, "%s/man/gpuctl.1", b);
		path = fallback;
	}
	char *text = read_file(path, NULL);
	CHECK(text != NULL); /* `make man` (part of `make all`) writes it */
	const char *sect = text ? strstr(text, "\n.SH EXIT STATUS\n") : NULL;
	CHECK(sect != NULL);
	if (!sect) {
		free(text);
		return;
	}
	/* Its rows: ".TP", ".B CODE", the text line; the section ends at the next ".SH". */
	char *copy = xstrdup(sect + strlen("\n.SH EXIT STATUS\n")), *save = NULL;
	size_t k = 0, rows = 0;
	bool passthrough = false;
	char *line = strtok_r(copy, "\n", &save);
	while (line && strncmp(line, ".SH", 3)) {
		if (strcmp(line, ".TP")) {
			line = strtok_r(NULL, "\n", &save);
			continue;
		}
		char *code = strtok_r(NULL, "\n", &save), *what = code ? strtok_r(NULL, "\n", &save) : NULL;
		CHECK(code && !strncmp(code, ".B ", 3) && what);
		if (!code || strncmp(code, ".B ", 3) || !what)
			break;
		rows++;
		char *got = plain(what, true);
		if (k < exit_code_ndocs) {
			char want_code[16];
			snprintf(want_code, sizeof want_code, "%d", exit_code_docs[k].code);
			CHECK_STR(code + 3, want_code);
			char *want = plain(exit_code_docs[k].text, false);
			CHECK_STR(got, want);
			free(want);
			k++;
		} else {
			CHECK_STR(code + 3, "other");
			char *want = plain(exit_code_passthrough, false);
			CHECK_STR(got, want);
			free(want);
			passthrough = true;
		}
		free(got);
		line = strtok_r(NULL, "\n", &save);
	}
	CHECK(k == exit_code_ndocs);
	CHECK(rows == exit_code_ndocs + 1);
	CHECK(passthrough);
	free(copy);
	free(text);
}
