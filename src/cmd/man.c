/* man.c: the manual pages, written from the command table, so `gpuctl help run` and
 * `man gpuctl-run` cannot drift: `gpuctl __man [--date DATE] PAGE [FRAGMENT]` prints PAGE in
 * man(7) roff.
 * (hidden: main.c reaches it by its exact name only; `make man` runs it, tools/man.sh.)
 *
 * Why roff written by the binary rather than scdoc or asciidoc sources: the usage texts are
 * already the one description of each command (`--help` prints them), so a page is those texts
 * laid out: the synopsis is the usage's first lines, OPTIONS its "  -x, --long ARG  text" lines,
 * DESCRIPTION its prose, EXIT STATUS its "Exit status" paragraph; gpuctl(1) is the table's
 * summaries, cmd_environment and the exit-code list. Nothing new to build them with (no scdoc
 * or asciidoc at build time), and a command or option another change adds is in its page at
 * the next build. What a usage text has no room for (examples, files, notes) is hand-written
 * roff in doc/man/PAGE.in, the FRAGMENT, pasted in before SEE ALSO; gpuctl.conf(5) is wholly
 * hand-written (doc/man/gpuctl.conf.5) and checked against the parsers by tests/t0013-man.sh.
 *
 * `gpuctl __man --list` prints the pages there are (file names: gpuctl.1, gpuctl-run.1, ...):
 * every command but the internal ones; daemon and exporter, the administrator's, in section 8. */
#include "cmd/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The commands whose page is in section 8 (system administration). */
static const char *const admin_commands[] = {"daemon", "exporter", NULL};

static int section_of(const struct cmd_entry *e)
{
	for (const char *const *a = admin_commands; *a; a++)
		if (!strcmp(e->name, *a))
			return 8;
	return 1;
}

/* ---- roff text ---- */

/* Text for roff: backslashes and minus signs escaped, `code` in bold (when its closing quote is
 * on the line), and a line that would start with a control character made plain. */
static void put_text(FILE *f, const char *s, size_t len)
{
	bool bold = false;
	if (len && (*s == '.' || *s == '\''))
		fputs("\\&", f);
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		if (ch == '\\')
			fputs("\\e", f);
		else if (ch == '-')
			fputs("\\-", f);
		else if (ch == '`' && (bold || memchr(s + i + 1, '`', len - i - 1))) {
			fputs(bold ? "\\fR" : "\\fB", f);
			bold = !bold;
		} else if (ch == '`')
			fputs("\\(ga", f);
		else
			fputc(ch, f);
	}
	if (bold)
		fputs("\\fR", f);
}

static void put_line(FILE *f, const char *s)
{
	put_text(f, s, strlen(s));
	fputc('\n', f);
}

/* An option's tag ("-n, --count N", "--wait[=DURATION]"): the options in bold, their values in
 * italics. */
static void put_tag(FILE *f, const char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		size_t w = i;
		while (w < len && s[w] != ' ')
			w++;
		if (s[i] == '-') {
			size_t o = i;
			while (o < w && s[o] != '=' && s[o] != '[' && s[o] != ',')
				o++;
			fputs("\\fB", f);
			put_text(f, s + i, o - i);
			fputs("\\fR", f);
			put_text(f, s + o, w - o);
		} else {
			fputs("\\fI", f);
			put_text(f, s + i, w - i);
			fputs("\\fR", f);
		}
		while (w < len && s[w] == ' ') {
			fputc(' ', f);
			w++;
		}
		i = w;
	}
}

static void header(FILE *f, const char *name, int section, const char *date)
{
	char up[64];
	size_t i = 0;
	for (; name[i] && i + 1 < sizeof up; i++)
		up[i] = name[i] >= 'a' && name[i] <= 'z' ? (char)(name[i] - 32) : name[i];
	up[i] = '\0';
	fprintf(f, ".\\\" Written by `gpuctl __man` from the command table (src/cmd/man.c); do not edit.\n"
		   ".TH ");
	put_text(f, up, strlen(up));
	fprintf(f, " %d \"%s\" \"gpuctl " GPUCTL_VERSION "\" \"%s\"\n", section, date,
		section == 8 ? "System Administration" : "User Commands");
}

/* ---- a command's usage text, taken apart ---- */

enum block { B_PROSE, B_OPTIONS, B_EXIT };

static size_t indent_of(const char *l)
{
	return strspn(l, " ");
}

/* Where an option line's text starts: after the first run of two or more spaces past the tag;
 * without one, at the column the block's earlier lines used, when a space is there (LEASE_USAGE's
 * "--min-free-memory SIZE each ..." fills its tag column). 0: the line is all tag. */
static size_t option_split(const char *l, size_t col)
{
	size_t i = indent_of(l);
	const char *gap = strstr(l + i, "  ");
	if (gap)
		return (size_t)(gap - l) + strspn(gap, " ");
	if (col && strlen(l) > col && l[col - 1] == ' ')
		return col;
	return 0;
}

struct page {
	FILE *f;
	enum block in;               /* what the lines so far are part of */
	bool open;                   /* a paragraph or item has text on its line */
	size_t col;                  /* the options' text column */
};

static void end_par(struct page *p)
{
	if (p->open)
		fputc('\n', p->f);
	p->open = false;
}

/* Text joined into the open paragraph, each source line a roff line. */
static void add_words(struct page *p, const char *s)
{
	s += indent_of(s);
	if (!*s)
		return;
	put_line(p->f, s);
	p->open = false;
}

/* The lines of a usage text from the first blank line on, as one section's blocks: kind says
 * which blocks to print (the others are skipped). */
static void body(FILE *f, const char *usage, enum block kind)
{
	bool fresh = true; /* right after .SH: no .PP */
	const char *rest = strstr(usage, "\n\n");
	if (!rest) { /* which's usage: prose right under the synopsis */
		rest = strchr(usage, '\n');
		rest = rest ? rest + 1 : "";
		for (; *rest && (*rest == ' ' || !strncmp(rest, "gpuctl ", 7));) {
			const char *nl = strchr(rest, '\n');
			rest = nl ? nl + 1 : "";
		}
	}
	struct page p = {.f = f};
	enum block cur = B_PROSE;
	bool started = false, code = false;
	char *copy = xstrdup(rest);
	for (char *line = copy, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		size_t ind = indent_of(line);
		if (!line[ind]) { /* a blank line ends a block */
			if (code && cur == kind)
				fputs(".fi\n.RE\n", f);
			code = false;
			if (cur != B_OPTIONS)
				cur = B_PROSE;
			started = false;
			p.col = 0;
			continue;
		}
		bool option = ind >= 1 && ind <= 8 && line[ind] == '-';
		if (option) {
			if (code && cur == kind)
				fputs(".fi\n.RE\n", f);
			code = false;
			cur = B_OPTIONS;
			if (cur != kind)
				continue;
			size_t at = option_split(line, p.col);
			if (at)
				p.col = at;
			size_t taglen = at ? at : strlen(line);
			while (taglen > ind && line[taglen - 1] == ' ')
				taglen--;
			fputs(".TP\n", f);
			put_tag(f, line + ind, taglen - ind);
			fputc('\n', f);
			if (at)
				add_words(&p, line + at);
			continue;
		}
		if (cur == B_OPTIONS && ind > 8) { /* an option's text, continued */
			if (kind == B_OPTIONS)
				add_words(&p, line);
			continue;
		}
		if (cur == B_OPTIONS && ind == 0)
			started = false; /* prose right after the options (which) */
		if (!started) {
			cur = !strncmp(line + ind, "Exit status", 11) ? B_EXIT : B_PROSE;
			started = true;
			if (cur == kind && !fresh)
				fputs(".PP\n", f);
			fresh &= cur != kind;
		}
		if (cur != kind)
			continue;
		if (ind >= 4 && !code) { /* an example line */
			fputs(".RS\n.nf\n", f);
			code = true;
		} else if (ind < 4 && code) {
			fputs(".fi\n.RE\n", f);
			code = false;
		}
		if (code)
			put_line(f, line + ind);
		else
			add_words(&p, line);
	}
	if (code && cur == kind)
		fputs(".fi\n.RE\n", f);
	end_par(&p);
	free(copy);
}

static bool has_block(const char *usage, enum block kind)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return true;
	body(m, usage, kind);
	fclose(m);
	bool any = len > 0;
	free(buf);
	return any;
}

/* The usage's first line(s): "gpuctl run [OPTIONS] ...", with its continuation lines and the
 * other forms (submit's three); "(alias: ls)" is said in DESCRIPTION instead. */
static void synopsis(FILE *f, const struct cmd_entry *e)
{
	fputs(".SH SYNOPSIS\n.nf\n", f);
	const char *s = e->usage;
	bool first = true;
	while (*s && *s != '\n') {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		char *line = xstrndup(s, len);
		char *alias = strstr(line, "(alias:");
		if (alias) {
			while (alias > line && alias[-1] == ' ')
				alias--;
			*alias = '\0';
		}
		char *l = line + indent_of(line);
		if (first || !strncmp(l, "gpuctl ", 7)) {
			if (!first)
				l += 7;
			size_t w = strcspn(l, " ");
			fputs("\\fBgpuctl ", f);
			put_text(f, l, w);
			fputs("\\fR", f);
			put_line(f, l + w);
		} else {
			fputs("        ", f);
			put_line(f, l);
		}
		free(line);
		first = false;
		s = nl ? nl + 1 : s + len;
		if (*s == '\n' || !(*s == ' ' || !strncmp(s, "gpuctl ", 7)))
			break;
	}
	fputs(".fi\n", f);
}

/* A hand-written part (doc/man/PAGE.in) as it is: roff, checked by the lint. part: 0 all of it,
 * 1 what comes before its ".SH EXAMPLES" (gpuctl(1)'s DESCRIPTION, under the synopsis), 2 the
 * rest (before SEE ALSO, where examples go). */
static bool paste(FILE *f, const char *path, int part)
{
	if (!path)
		return true;
	size_t len;
	char *text = read_file(path, &len);
	if (!text) {
		fprintf(stderr, "gpuctl __man: cannot read %s\n", path);
		return false;
	}
	const char *ex = !strncmp(text, ".SH EXAMPLES", 12) ? text : strstr(text, "\n.SH EXAMPLES");
	size_t cut = ex ? (size_t)(ex - text) + (ex != text) : len;
	const char *from = part == 2 ? text + cut : text;
	size_t n = part == 0 ? len : part == 1 ? cut : len - cut;
	fwrite(from, 1, n, f);
	if (n && from[n - 1] != '\n')
		fputc('\n', f);
	free(text);
	return true;
}

/* SEE ALSO: gpuctl(1), gpuctl.conf(5), and the pages of the commands the usage names
 * (`gpuctl leases`). */
static void see_also(FILE *f, const struct cmd_entry *const *table, size_t n,
		     const struct cmd_entry *self)
{
	fputs(".SH SEE ALSO\n.BR gpuctl (1),\n.BR gpuctl.conf (5)", f);
	for (size_t i = 0; i < n; i++) {
		const struct cmd_entry *e = table[i];
		if (e == self || (e->flags & CMD_INTERNAL))
			continue;
		char word[80];
		snprintf(word, sizeof word, "gpuctl %s", e->name);
		for (const char *s = strstr(self->usage, word); s; s = strstr(s + 1, word)) {
			char after = s[strlen(word)];
			if (after == '`' || after == ' ' || after == '\'' || after == ',') {
				fprintf(f, ",\n.BR gpuctl\\-%s (%d)", e->name, section_of(e));
				break;
			}
		}
	}
	fputc('\n', f);
}

static void command_page(FILE *f, const struct cmd_entry *const *table, size_t n,
			 const struct cmd_entry *e, const char *date, const char *fragment, bool *ok)
{
	char name[64];
	snprintf(name, sizeof name, "gpuctl-%s", e->name);
	header(f, name, section_of(e), date);
	fprintf(f, ".SH NAME\ngpuctl\\-%s \\- ", e->name);
	put_line(f, e->summary);
	synopsis(f, e);
	fputs(".SH DESCRIPTION\n", f);
	body(f, e->usage, B_PROSE);
	if (e->alias)
		fprintf(f, ".PP\n\\fBgpuctl %s\\fR is the same command.\n", e->alias);
	if (e->flags & CMD_NO_PREFIX)
		fprintf(f, ".PP\nIt ends things, so it is run by its full name only, never by a prefix "
			   "of it.\n");
	else
		fprintf(f, ".PP\nA unique prefix of its name names it too.\n");
	fputs(".SH OPTIONS\n", f);
	body(f, e->usage, B_OPTIONS);
	if (!strstr(e->usage, "--help "))
		fputs(".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nthe usage text, as this page says it\n", f);
	if (has_block(e->usage, B_EXIT)) {
		fputs(".SH EXIT STATUS\n", f);
		body(f, e->usage, B_EXIT);
		fputs(".PP\nThe other codes are those of every command: see \\fBgpuctl\\fR(1).\n", f);
	}
	*ok = paste(f, fragment, 0);
	see_also(f, table, n, e);
}

/* gpuctl(1): the commands, the environment and the exit codes, from the tables --help prints. */
static void main_page(FILE *f, const struct cmd_entry *const *table, size_t n, const char *date,
		      const char *fragment, bool *ok)
{
	header(f, "gpuctl", 1, date);
	fputs(".SH NAME\ngpuctl \\- show and control the NVIDIA GPUs of a shared server\n"
	      ".SH SYNOPSIS\n.nf\n\\fBgpuctl\\fR [\\fB\\-\\-version\\fR] [\\fB\\-\\-help\\fR] "
	      "\\fICOMMAND\\fR [\\fIARGS\\fR]\n\\fBgpuctl help\\fR \\fICOMMAND\\fR\n.fi\n", f);
	*ok = paste(f, fragment, 1); /* DESCRIPTION, written by hand */
	fputs(".SH COMMANDS\n", f);
	for (size_t i = 0; i < n; i++) {
		const struct cmd_entry *e = table[i];
		if (e->flags & CMD_INTERNAL)
			continue;
		fprintf(f, ".TP\n\\fBgpuctl\\-%s\\fR(%d)", e->name, section_of(e));
		if (e->alias)
			fprintf(f, ", \\fB%s\\fR", e->alias);
		fputc('\n', f);
		put_line(f, e->summary);
	}
	fputs(".PP\nA unique prefix names a command (\\fBgpuctl st\\fR), except those that end things "
	      "(", f);
	bool first = true;
	for (size_t i = 0; i < n; i++)
		if ((table[i]->flags & CMD_NO_PREFIX) && !(table[i]->flags & CMD_INTERNAL)) {
			fprintf(f, "%s%s", first ? "" : ", ", table[i]->name);
			first = false;
		}
	fputs("), which are typed in full.\n.SH ENVIRONMENT\n", f);
	for (const struct cmd_env *v = cmd_environment; v->name; v++) {
		fputs(".TP\n.B ", f);
		put_line(f, v->name);
		put_text(f, v->text, strlen(v->text));
		fputs(v->python ? " (read by the Python module)\n" : "\n", f);
	}
	fputs(".SH EXIT STATUS\n", f);
	for (size_t i = 0; i < exit_code_ndocs; i++) {
		fprintf(f, ".TP\n.B %d\n", exit_code_docs[i].code);
		put_line(f, exit_code_docs[i].text);
	}
	fputs(".TP\n.B other\n", f);
	put_line(f, exit_code_passthrough);
	fputs(".SH FILES\n.TP\n.I /etc/gpuctl.conf\nthe administrator's settings and the daemon's "
	      "policy: \\fBgpuctl.conf\\fR(5)\n.TP\n.I ~/.config/gpuctl/config\nyour own settings "
	      "and profiles\n.TP\n.I /run/gpuctl/gpuctl.sock\nthe shared daemon's socket: "
	      "\\fBgpuctl\\-daemon\\fR(8)\n", f);
	*ok &= paste(f, fragment, 2); /* EXAMPLES */
	fputs(".SH SEE ALSO\n.BR gpuctl.conf (5)", f);
	for (size_t i = 0; i < n; i++)
		if (!(table[i]->flags & CMD_INTERNAL))
			fprintf(f, ",\n.BR gpuctl\\-%s (%d)", table[i]->name, section_of(table[i]));
	fputs(",\n.BR nvidia\\-smi (1)\n", f);
}

int cmd_man(const struct cmd_entry *const *table, size_t n, int argc, char **argv)
{
	const char *date = "";
	if (argc >= 2 && !strcmp(argv[0], "--date")) {
		date = argv[1];
		argc -= 2;
		argv += 2;
	}
	if (argc == 1 && !strcmp(argv[0], "--list")) {
		printf("gpuctl.1\n");
		for (size_t i = 0; i < n; i++)
			if (!(table[i]->flags & CMD_INTERNAL))
				printf("gpuctl-%s.%d\n", table[i]->name, section_of(table[i]));
		return EXIT_OK;
	}
	if (argc < 1 || argc > 2) {
		fprintf(stderr, "usage: gpuctl __man --list | [--date DATE] PAGE [FRAGMENT]  (PAGE: "
				"gpuctl, or a command)\n");
		return EXIT_USAGE;
	}
	const char *page = argv[0], *fragment = argc > 1 ? argv[1] : NULL;
	bool ok = true;
	if (!strcmp(page, "gpuctl")) {
		main_page(stdout, table, n, date, fragment, &ok);
	} else {
		const struct cmd_entry *e = NULL;
		for (size_t i = 0; i < n && !e; i++)
			if (!strcmp(table[i]->name, page) && !(table[i]->flags & CMD_INTERNAL))
				e = table[i];
		if (!e) {
			fprintf(stderr, "gpuctl __man: no command '%s' (gpuctl __man --list)\n", page);
			return EXIT_USAGE;
		}
		command_page(stdout, table, n, e, date, fragment, &ok);
	}
	if (fflush(stdout) != 0 || ferror(stdout))
		return EXIT_FAIL;
	return ok ? EXIT_OK : EXIT_FAIL;
}
