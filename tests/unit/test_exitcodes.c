/* test_exitcodes.c: the README's exit-status table says exactly what the one list in util.h says
 * (the list also makes the enum and `gpuctl --help`), row by row, in order. */
#include "tap.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* "| 12 | text |" -> "12" and "text"; false for other lines. */
static bool row(char *line, char **code, char **text)
{
	if (line[0] != '|')
		return false;
	char *bar = strchr(line + 1, '|');
	if (!bar)
		return false;
	*bar = '\0';
	*code = line + 1;
	*text = bar + 1;
	char *end = strrchr(*text, '|');
	if (end)
		*end = '\0';
	for (char **s = code; s; s = s == code ? text : NULL) {
		while (**s == ' ')
			(*s)++;
		size_t n = strlen(*s);
		while (n && (*s)[n - 1] == ' ')
			(*s)[--n] = '\0';
	}
	return true;
}

void test_exitcodes(void)
{
	const char *path = getenv("GPUCTL_README") ? getenv("GPUCTL_README") : "README.md";
	char *text = read_file(path, NULL);
	CHECK(text != NULL);
	const char *table = text ? strstr(text, "\n### Exit status\n") : NULL;
	CHECK(table != NULL);
	if (!table) {
		free(text);
		return;
	}
	char *copy = xstrdup(table + 1), *save = NULL;
	size_t k = 0;
	bool header = true, passthrough = false, in_table = false;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *code, *what;
		if (!row(line, &code, &what)) {
			if (in_table)
				break;   /* the table ends at its first line that is not a row */
			continue;
		}
		in_table = true;
		if (header || !strncmp(code, "---", 3)) {
			header = false;
			continue;
		}
		if (k < exit_code_ndocs) {
			char want[16];
			snprintf(want, sizeof want, "%d", exit_code_docs[k].code);
			CHECK_STR(code, want);
			CHECK_STR(what, exit_code_docs[k].text);
			k++;
		} else {
			CHECK_STR(code, "other");
			CHECK_STR(what, exit_code_passthrough);
			passthrough = true;
		}
	}
	CHECK(k == exit_code_ndocs);
	CHECK(passthrough);
	free(copy);
	free(text);
}
