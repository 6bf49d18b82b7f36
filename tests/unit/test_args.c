/* test_args.c: the command-line parser (args.c) and command lookup (cmd.c), data-driven: what is
 * accepted, what each rejection says, and which names reach which command. */
#include "cmd/cmd.h"
#include "tap.h"
#include "base/util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static int no_exec(struct cmd *c)
{
	(void)c;
	return 0;
}

enum { O_JSON = 256, O_LOOP_MS };
static const struct option plain_longs[] = {
	{"id", required_argument, NULL, 'g'}, {"json", no_argument, NULL, O_JSON},
	{"loop", required_argument, NULL, 'l'}, {"loop-ms", required_argument, NULL, O_LOOP_MS},
	{"count", required_argument, NULL, 'c'}, {"color", required_argument, NULL, 'C'}, {0},
};
/* status-like: -g with an alias, values, no positional arguments */
static const struct cmd_entry plain = {
	.name = "plain", .usage = "plain [OPTIONS]\n",
	.args = {.shorts = "l:c:", .longs = plain_longs, .gpus_alias = 'i'},
	.flags = CMD_GPUS, .exec = no_exec,
};
/* run-like: options end at the command */
static const struct cmd_entry command = {
	.name = "command", .usage = "command [OPTIONS] -- COMMAND\n",
	.args = {.shorts = "n:", .upper = -1}, .flags = CMD_COMMAND, .exec = no_exec,
};
/* which-like: one positional argument at most, mixed with options; no -g */
static const struct cmd_entry one = {
	.name = "one", .usage = "one [N]\n",
	.args = {.shorts = "f:", .upper = 1}, .exec = no_exec,
};
static const struct cmd_entry two = {
	.name = "two", .usage = "two A B\n",
	.args = {.lower = 2, .upper = 2}, .exec = no_exec,
};

/* Up to 8 words, split at spaces. */
static int split(char *line, char **argv)
{
	int n = 0;
	for (char *save = NULL, *w = strtok_r(line, " ", &save); w && n < 8; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n] = NULL;
	return n;
}

static void test_parse_cases(void)
{
	static const struct {
		const struct cmd_entry *e;
		const char *argv;
		enum args_status st;
		const char *want;       /* the error, or a summary of what was parsed */
	} cases[] = {
		{&plain, "plain", ARGS_OK, "argc=0"},
		{&plain, "plain --json -l 2 -c 3", ARGS_OK, "json l=2 c=3 argc=0"},
		{&plain, "plain -i 3", ARGS_OK, "g=3 spelled -i argc=0"},
		{&plain, "plain --id=GPU-8d11", ARGS_OK, "g=GPU-8d11 spelled --id argc=0"},
		{&plain, "plain --gpus 0,1 -g 2", ARGS_OK, "g=2 spelled -g argc=0"},
		{&plain, "plain --cou 1", ARGS_OK, "c=1 argc=0"},      /* a unique prefix */
		{&plain, "plain --lo 1", ARGS_ERROR, "unknown option '--lo'"},  /* ambiguous */
		{&plain, "plain -h", ARGS_HELP, ""},
		{&plain, "plain --json --help --bogus", ARGS_HELP, ""},
		{&plain, "plain --bogus", ARGS_ERROR, "unknown option '--bogus'"},
		{&plain, "plain --bogus=3", ARGS_ERROR, "unknown option '--bogus'"},
		{&plain, "plain -x", ARGS_ERROR, "unknown option '-x'"},
		{&plain, "plain --json=1", ARGS_ERROR, "option '--json' takes no value"},
		{&plain, "plain -i", ARGS_ERROR, "option '-i' needs a value"},
		{&plain, "plain --count", ARGS_ERROR, "option '--count' needs a value"},
		{&plain, "plain --co 1", ARGS_ERROR, "unknown option '--co'"}, /* ambiguous */
		{&plain, "plain extra", ARGS_ERROR, "unexpected argument 'extra'"},
		{&plain, "plain --json extra -l 1", ARGS_ERROR, "unexpected argument 'extra'"},
		{&command, "command -n 2 -- python -n 3", ARGS_OK, "n=2 argc=3 python"},
		{&command, "command -n 2 python -n 3", ARGS_OK, "n=2 argc=3 python"},
		{&command, "command", ARGS_OK, "argc=0"},
		{&command, "command -g 1 -- x", ARGS_ERROR, "unknown option '-g'"},  /* no CMD_GPUS */
		{&one, "one 1 -f uuid", ARGS_OK, "f=uuid argc=1 1"},          /* options after it */
		{&one, "one 1 2", ARGS_ERROR, "unexpected argument '2'"},
		{&two, "two a", ARGS_ERROR, "missing argument: usage: gpuctl two A B"},
		{&two, "two a b", ARGS_OK, "argc=2 a"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char line[256], *argv[9];
		snprintf(line, sizeof line, "%s", cases[i].argv);
		int argc = split(line, argv);
		struct args a;
		enum args_status st = args_parse(&a, cases[i].e, argc, argv);
		struct strbuf got = {0};
		if (st == ARGS_ERROR) {
			sb_adds(&got, a.err);
		} else if (st == ARGS_OK) {
			if (args_has(&a, O_JSON))
				sb_adds(&got, "json ");
			const int opts[] = {'g', 'l', 'c', 'n', 'f'};
			for (size_t k = 0; k < ARRAY_SIZE(opts); k++)
				if (args_get(&a, opts[k]))
					sb_addf(&got, "%c=%s ", opts[k], args_get(&a, opts[k]));
			for (size_t k = 0; k < a.n; k++)
				if (a.v[k].opt == 'g' && k == a.n - 1)
					sb_addf(&got, "spelled %s ", a.v[k].spelling);
			sb_addf(&got, "argc=%d", a.argc);
			if (a.argc)
				sb_addf(&got, " %s", a.argv[0]);
		}
		char what[300];
		snprintf(what, sizeof what, "args_parse(%s)", cases[i].argv);
		tap_check(st == cases[i].st, what, __FILE__, __LINE__);
		tap_check_str(got.buf ? got.buf : "", cases[i].want, what, __FILE__, __LINE__);
		sb_free(&got);
		args_free(&a);
	}
}

static void test_accessors(void)
{
	static const char *const colors[] = {"auto", "always", "never", NULL};
	char line[] = "plain -l 0.5 -c 0 --loop-ms 5 --color=sometimes";
	char *argv[9];
	int argc = split(line, argv);
	struct args a;
	CHECK(args_parse(&a, &plain, argc, argv) == ARGS_OK);
	double loop = 7;
	CHECK(args_seconds(&a, 'l', 0.01, &loop) && loop == 0.5);
	CHECK(!args_seconds(&a, 'l', 1, &loop) && loop == 0.5);
	CHECK_STR(a.err, "-l wants seconds from 1 to 1000000 (fractions allowed) or a duration such as "
		  "500ms, 30s or 5m, not '0.5'");
	unsigned long n = 9;
	CHECK(!args_uint(&a, 'c', 1, ULONG_MAX, &n) && n == 9);
	CHECK_STR(a.err, "-c wants a whole number of at least 1, not '0'");
	CHECK(!args_uint(&a, O_LOOP_MS, 10, 100, &n));
	CHECK_STR(a.err, "--loop-ms wants a whole number from 10 to 100, not '5'");
	CHECK(args_uint(&a, 'x', 1, 2, &n) && n == 9);          /* absent: the default stays */
	CHECK(args_choice(&a, 'C', colors, 0) == -1);
	CHECK_STR(a.err, "--color is auto, always or never, not 'sometimes'");
	CHECK(args_choice(&a, 'x', colors, 2) == 2);
	CHECK(!args_has(&a, 'g') && !args_get(&a, 'g'));
	args_free(&a);
}

/* Every option of seconds (wait --timeout, cancel and kill --grace, top -d, status -l) takes the
 * durations run --wait does, within its own bounds. */
static void test_seconds(void)
{
	static const struct {
		const char *value;
		double min;
		bool ok;
		double v;
	} cases[] = {
		{"90", 0, true, 90}, {"1.5", 0, true, 1.5}, {"30s", 0, true, 30}, {"5m", 0, true, 300},
		{"1m", 0, true, 60}, {"2h", 0, true, 7200}, {"500ms", 0.05, true, 0.5},
		{"50ms", 0.05, true, 0.05}, {"0", 0, true, 0},
		{"10ms", 0.05, false, 0}, {"", 0, false, 0}, {"5x", 0, false, 0}, {"-1", 0, false, 0},
		{"m", 0, false, 0}, {"1e999", 0, false, 0}, {"1e300", 0, false, 0},
		{"1000001", 0, false, 0}, {"16667m", 0, false, 0}, {"278h", 0, false, 0},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *argv[] = {"plain", "-l", (char *)cases[i].value, NULL};
		struct args a;
		double v = -7;
		char what[128];
		snprintf(what, sizeof what, "args_seconds(-l '%s', min %g)", cases[i].value, cases[i].min);
		bool parsed = args_parse(&a, &plain, 3, argv) == ARGS_OK;
		bool ok = parsed && args_seconds(&a, 'l', cases[i].min, &v);
		/* a refusal says what a duration is */
		bool said = ok || strstr(a.err, "or a duration such as 500ms, 30s or 5m, not '");
		tap_check(parsed && ok == cases[i].ok && v == (ok ? cases[i].v : -7) && said, what,
			  __FILE__, __LINE__);
		args_free(&a);
	}
}

/* ---- command lookup ---- */

static const struct cmd_entry t_status = {.name = "status", .alias = "ls", .exec = no_exec};
static const struct cmd_entry t_map = {.name = "map", .exec = no_exec};
static const struct cmd_entry t_run = {.name = "run", .exec = no_exec};
static const struct cmd_entry t_leases = {.name = "leases", .exec = no_exec};
static const struct cmd_entry t_release = {.name = "release", .flags = CMD_NO_PREFIX, .exec = no_exec};
static const struct cmd_entry t_kill = {.name = "kill", .flags = CMD_NO_PREFIX, .exec = no_exec};
static const struct cmd_entry t_probe = {.name = "cuda-probe", .flags = CMD_INTERNAL, .exec = no_exec};
static const struct cmd_entry *const table[] = {&t_status, &t_map, &t_run, &t_leases, &t_release,
						&t_kill, &t_probe};

static void test_lookup(void)
{
	static const struct {
		const char *name;
		const char *found;      /* NULL: an error containing `err` */
		const char *err;
	} cases[] = {
		{"status", "status", NULL},
		{"ls", "status", NULL},
		{"st", "status", NULL},
		{"m", "map", NULL},
		{"ru", "run", NULL},
		{"le", "leases", NULL},
		{"release", "release", NULL},
		{"kill", "kill", NULL},
		{"cuda-probe", "cuda-probe", NULL},
		{"r", NULL, "ambiguous command 'r', could be: run release"},
		{"rel", NULL, "`gpuctl release` ends things, so it is never abbreviated"},
		{"k", NULL, "`gpuctl kill` ends things"},
		{"staus", NULL, "Did you mean `gpuctl status`?"},
		{"sttaus", NULL, "Did you mean `gpuctl status`?"},
		{"relase", NULL, "Did you mean `gpuctl release`?"},
		{"lss", NULL, "Did you mean `gpuctl ls`?"},
		{"mpa", NULL, "Did you mean `gpuctl map`?"},
		{"cuda", NULL, "unknown command 'cuda'; `gpuctl --help`"},
		{"cuda-prob", NULL, "unknown command 'cuda-prob'; "},
		{"frobnicate", NULL, "unknown command 'frobnicate'; `gpuctl --help` lists the commands"},
		{"", NULL, "unknown command ''"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char err[512] = "", what[128];
		const struct cmd_entry *e = cmd_find(table, ARRAY_SIZE(table), cases[i].name, err,
						     sizeof err);
		snprintf(what, sizeof what, "cmd_find(\"%s\")", cases[i].name);
		if (cases[i].found) {
			tap_check_str(e ? e->name : NULL, cases[i].found, what, __FILE__, __LINE__);
		} else {
			tap_check(!e && strstr(err, cases[i].err), what, __FILE__, __LINE__);
			if (e || !strstr(err, cases[i].err))
				printf("#   want: ...%s...\n#   got:  %s\n", cases[i].err, err);
		}
	}
}

void test_args(void)
{
	test_parse_cases();
	test_accessors();
	test_seconds();
	test_lookup();
}
