/* parse.c: reading one INI file for config.c (the users' settings and profiles) and daemon.c
 * (the daemon's policy): opening it safely, inih loaded when there is a file, lines counted for
 * the errors, each key = value handed to the reader's own section callback (parse.h), and where
 * each setting came from recorded for `gpuctl config`. */
#include "config/parse.h"
#include "base/dl.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int config_bad(struct parse_ctx *x, const char *key, const char *value, const char *want)
{
	fprintf(stderr, "gpuctl: %s:%d: bad value '%s' for %s: %s\n", x->path, x->line, value, key, want);
	x->failed = true;
	return 1;
}

/* inih's handler has no line number: count the lines as inih reads them. inih reads a line
 * into a buffer of its own size (INI_MAX_LINE, 200 in Debian's build): a longer line came in
 * pieces, each parsed as a line of its own, so the tail of a commented-out setting became a
 * live one, at a line number the file does not have. Now a long comment is read as its head
 * (a comment all the same), and a long setting is refused whole: an error at its own number
 * (the file fails, as for a bad value), and inih sees an empty line. */
static char *reader(char *buf, int size, void *stream)
{
	struct parse_ctx *x = stream;
	if (x->bytes >= MAX_CONFIG_BYTES)
		return NULL; /* grew after it was opened: read no more than the cap */
	char *r = fgets(buf, size, x->f);
	if (!r)
		return NULL;
	x->line++;
	size_t n = strlen(r);
	x->bytes += n;
	if (n && r[n - 1] != '\n') {
		int c = getc(x->f);
		if (c == '\n' || c == EOF)
			return r; /* exactly the buffer's length, or the last line without a newline */
		size_t more = 1;
		while ((c = getc(x->f)) != EOF && c != '\n')
			more++;
		x->bytes += more;
		const char *t = r + strspn(r, " \t");
		if (*t == '#' || *t == ';')
			return r; /* a comment: its head is as much a comment as all of it */
		fprintf(stderr, "gpuctl: %s:%d: a line of %zu bytes: a setting's line may have at most "
			"%d\n", x->path, x->line, n + more, size - 1);
		x->failed = true;
		snprintf(buf, (size_t)size, "\n");
	}
	return r;
}

/* inih is loaded when there is a file to parse, as the exporter loads libmicrohttpd: most runs
 * find no configuration file, and every run would otherwise pay for loading the library at its
 * start (a tenth of a millisecond, a tenth of a `status --query-gpu`). */
typedef int (*parse_stream_fn)(ini_reader, void *, ini_handler, void *);

static parse_stream_fn load_inih(void)
{
	static parse_stream_fn parse;
	static const char *const sonames[] = {"libinih.so.1", NULL};
	static const char *const names[] = {"ini_parse_stream", NULL};
	char why[512];
	const char *loaded;
	void *dl;
	if (!parse && (!(dl = dl_open(sonames, &loaded, why, sizeof why)) ||
		       dl_resolve(dl, &parse, names) < 0))
		fprintf(stderr, "gpuctl: cannot load the INI parser libinih.so.1 (%s); install it "
			"(Debian: apt-get install libinih1)\n", dl ? "no ini_parse_stream" : why);
	return parse;
}

/* inih's handler: the key goes to the section callback of whoever reads the file. */
static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *x = user;
	return x->section(x, section, name, value);
}

/* Parses x->f (open) into x->c or x->dc; false (said why) on a syntax error or a bad value. */
bool config_parse_ini(struct parse_ctx *x)
{
	parse_stream_fn parse = load_inih();
	int r = parse ? parse(reader, x, handler, x) : 0;
	fclose(x->f);
	if (!parse)
		return false;
	if (r > 0) {
		fprintf(stderr, "gpuctl: %s:%d: not INI syntax (expected [section] or key = value)\n",
			x->path, r);
		return false;
	}
	return !x->failed;
}

/* A configuration file opened for reading: a regular file of at most MAX_CONFIG_BYTES (or
 * /dev/null, which reads as empty). Opened
 * without blocking, so a FIFO put in its place is refused, not waited on. NULL with why set;
 * *missing when there is no such file (not an error). */
FILE *config_open(const char *path, char *why, size_t n, bool *missing)
{
	*missing = false;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		*missing = errno == ENOENT;
		snprintf(why, n, "%s", strerror(errno));
		return NULL;
	}
	/* /dev/null is the usual way to say "no configuration" (GIT_CONFIG_GLOBAL=/dev/null). */
	bool null = fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
		    minor(st.st_rdev) == 3;
	if (!null && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_CONFIG_BYTES)) {
		snprintf(why, n, "%s", !S_ISREG(st.st_mode) ? "not a regular file"
				       : "larger than 1 MiB: not a configuration file");
		close(fd);
		return NULL;
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		snprintf(why, n, "%s", strerror(errno));
		close(fd);
	}
	return f;
}


const char *config_near(const char *word, const char *const *known)
{
	static char out[256];
	size_t n = 0;
	while (known[n])
		n++;
	struct strbuf sb = {0};
	out[0] = '\0';
	if (sb_nearest(&sb, word, known, n, "'", "'"))
		snprintf(out, sizeof out, " (did you mean %s?)", sb.buf);
	sb_free(&sb);
	return out;
}
