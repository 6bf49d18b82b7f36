/* args.c: a command's options parsed once from its entry's template (see cmd.h), and typed
 * accessors that say what was wrong with a value. Nothing here prints or exits: the caller
 * (cmd.c, or a unit test) decides what an error means. */
#include "cmd/cmd.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add(struct args *a, int opt, const char *value, const char *spelling)
{
	a->v = grow_array(a->v, &a->cap, a->n + 1, sizeof *a->v);
	struct args_value *x = &a->v[a->n++];
	x->opt = opt;
	x->value = value;
	snprintf(x->spelling, sizeof x->spelling, "%s", spelling);
}

/* Why getopt rejected an option (c: ':' a value missing, '?' unknown or a value where none goes),
 * naming it as it was written: "--name" (without "=value") or "-c". */
static void rejected(struct args *a, int c, const struct option *longs, int argc, char **argv)
{
	const char *prev = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	char name[48];
	bool with_value = false;
	if (!strncmp(prev, "--", 2) && prev[2]) {
		size_t len = strcspn(prev, "=");
		snprintf(name, sizeof name, "%.*s", (int)len, prev);
		for (size_t i = 0; longs[i].name && prev[len]; i++)
			with_value |= strlen(longs[i].name) == len - 2 && !strncmp(longs[i].name, prev + 2, len - 2);
	} else if (optopt > 0 && optopt < 128) {
		snprintf(name, sizeof name, "-%c", optopt);
	} else {
		snprintf(name, sizeof name, "%s", prev);
	}
	snprintf(a->err, sizeof a->err, c == ':' ? "option '%s' needs a value"
				  : with_value ? "option '%s' takes no value" : "unknown option '%s'", name);
}

/* The getopt strings: what every command shares, then the entry's own. */
static void template(const struct cmd_entry *e, char *shorts, size_t n, struct option **longs)
{
	bool gpus = e->flags & CMD_GPUS;
	char alias[3] = "";
	if (gpus && e->args.gpus_alias)
		snprintf(alias, sizeof alias, "%c:", e->args.gpus_alias);
	/* "+": a command's own options are its business; ":": a missing value is told apart. */
	snprintf(shorts, n, "%s:h%s%s%s", e->flags & CMD_COMMAND ? "+" : "", gpus ? "g:" : "", alias,
		 e->args.shorts ? e->args.shorts : "");
	size_t k = 0;
	while (e->args.longs && e->args.longs[k].name)
		k++;
	*longs = xcalloc(k + 3, sizeof **longs);
	if (k)
		memcpy(*longs, e->args.longs, k * sizeof **longs);
	(*longs)[k++] = (struct option){"help", no_argument, NULL, 'h'};
	if (gpus)
		(*longs)[k++] = (struct option){"gpus", required_argument, NULL, 'g'};
}

enum args_status args_parse(struct args *a, const struct cmd_entry *e, int argc, char **argv)
{
	char shorts[128];
	struct option *longs;
	memset(a, 0, sizeof *a);
	template(e, shorts, sizeof shorts, &longs);
	for (int i = 1; e->args.words && i < argc && strcmp(argv[i], "--"); i++)
		for (const char *const *w = e->args.words; *w; w += 2)
			if (!strcmp(argv[i], w[0]))
				argv[i] = (char *)w[1];
	enum args_status st = ARGS_OK;
	optind = 0; /* glibc: start over, whatever an earlier parse left behind */
	opterr = 0;
	for (;;) {
		int li = -1;
		int c = getopt_long(argc, argv, shorts, longs, &li);
		if (c == -1)
			break;
		if (c == 'h') {
			st = ARGS_HELP;
			break;
		}
		if (c == ':' || c == '?') {
			rejected(a, c, longs, argc, argv);
			st = ARGS_ERROR;
			break;
		}
		char name[48];
		if (li >= 0)
			snprintf(name, sizeof name, "--%s", longs[li].name);
		else
			snprintf(name, sizeof name, "-%c", c);
		add(a, c == e->args.gpus_alias && (e->flags & CMD_GPUS) ? 'g' : c, optarg, name);
	}
	free(longs);
	if (st != ARGS_OK)
		return st;
	a->argv = argv + optind;
	a->argc = argc - optind;
	if (e->args.upper >= 0 && a->argc > e->args.upper) {
		snprintf(a->err, sizeof a->err, "unexpected argument '%s'", a->argv[e->args.upper]);
		return ARGS_ERROR;
	}
	if (a->argc < e->args.lower) {
		snprintf(a->err, sizeof a->err, "missing argument: usage: gpuctl %.*s",
			 (int)strcspn(e->usage, "\n"), e->usage);
		return ARGS_ERROR;
	}
	return ARGS_OK;
}

void args_free(struct args *a)
{
	free(a->v);
	memset(a, 0, sizeof *a);
}

static const struct args_value *last(const struct args *a, int opt)
{
	for (size_t i = a->n; i-- > 0;)
		if (a->v[i].opt == opt)
			return &a->v[i];
	return NULL;
}

bool args_has(const struct args *a, int opt)
{
	return last(a, opt) != NULL;
}

const char *args_get(const struct args *a, int opt)
{
	const struct args_value *x = last(a, opt);
	return x ? x->value : NULL;
}

bool args_uint(struct args *a, int opt, unsigned long min, unsigned long max, unsigned long *v)
{
	const struct args_value *x = last(a, opt);
	unsigned long n;
	if (!x)
		return true;
	if (x->value && parse_uint(x->value, &n) && n >= min && n <= max) {
		*v = n;
		return true;
	}
	if (max == ULONG_MAX)
		snprintf(a->err, sizeof a->err, "%s wants a whole number of at least %lu, not '%s'",
			 x->spelling, min, x->value ? x->value : "");
	else
		snprintf(a->err, sizeof a->err, "%s wants a whole number from %lu to %lu, not '%s'",
			 x->spelling, min, max, x->value ? x->value : "");
	return false;
}

bool args_seconds(struct args *a, int opt, double min, double *v)
{
	const struct args_value *x = last(a, opt);
	double d;
	if (!x)
		return true;
	if (x->value && parse_duration(x->value, MAX_SECONDS, &d) && d >= min) {
		*v = d;
		return true;
	}
	snprintf(a->err, sizeof a->err, "%s wants seconds from %g to %.0f (fractions allowed) or a "
		 "duration such as 500ms, 30s or 5m, not '%s'", x->spelling, min, MAX_SECONDS,
		 x->value ? x->value : "");
	return false;
}

int args_choice(struct args *a, int opt, const char *const *choices, int def)
{
	const struct args_value *x = last(a, opt);
	if (!x)
		return def;
	for (int i = 0; choices[i]; i++)
		if (x->value && !strcmp(x->value, choices[i]))
			return i;
	struct strbuf sb = {0};
	for (int i = 0; choices[i]; i++)
		sb_addf(&sb, "%s%s", i == 0 ? "" : choices[i + 1] ? ", " : " or ", choices[i]);
	snprintf(a->err, sizeof a->err, "%s is %s, not '%s'", x->spelling, sb.buf,
		 x->value ? x->value : "");
	sb_free(&sb);
	return -1;
}
