/* cmd.c: dispatch (exact name, alias or unique prefix, as tmux does; destructive commands only by
 * their full name; "did you mean" for a typo), the top-level help with the exit codes, and the
 * work every command shares: its options parsed from the entry's template (args.c), the machine
 * opened and the GPU selection resolved once, the shared errors printed here, and what was opened
 * freed here. The table itself is in main.c, so this file links without the commands. */
#include "cmd/cmd.h"
#include "machine/gpu.h"
#include "lease/grant.h"
#include "machine/proc.h"
#include "lease/view.h"
#include "lease/snapshot.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* text from column `indent` (where the caller left the line), folded at spaces to fit 80
 * columns, its next lines indented as much. */
static void fold_at(FILE *f, int indent, const char *text)
{
	size_t width = (size_t)(80 - indent);
	while (*text) {
		size_t n = strlen(text);
		if (n > width) {
			n = width;
			while (n && text[n] != ' ')
				n--;
			n = n ? n : width;
		}
		fprintf(f, "%.*s\n", (int)n, text);
		text += n;
		text += *text == ' ';
		if (*text)
			fprintf(f, "%*s", indent, "");
	}
}

/* text after a 5-column label. */
static void folded(FILE *f, const char *label, const char *text)
{
	fprintf(f, "%5s  ", label);
	fold_at(f, 7, text);
}

static void main_usage(FILE *f, const struct cmd_entry *const *table, size_t n)
{
	fprintf(f, "usage: gpuctl [--version] [--help] COMMAND [ARGS]\n\n"
		   "gpuctl shows and controls the NVIDIA GPUs of a shared server.\n\nCommands:\n");
	for (size_t i = 0; i < n; i++)
		if (!(table[i]->flags & CMD_INTERNAL))
			fprintf(f, "  %-10s %s\n", table[i]->name, table[i]->summary);
	fprintf(f, "\nRun `gpuctl COMMAND --help` for a command's options. A unique prefix names a\n"
		   "command (`gpuctl st`), except those that end things (kill, release, cancel).\n\n"
		   "Exit status:\n");
	for (size_t i = 0; i < exit_code_ndocs; i++) {
		char code[8];
		snprintf(code, sizeof code, "%d", exit_code_docs[i].code);
		folded(f, code, exit_code_docs[i].text);
	}
	folded(f, "", exit_code_passthrough);
	fprintf(f, "\nEnvironment:\n  (a value of gpuctl's own variables that it cannot use is said on stderr,\n"
		   "  with what is done instead)\n");
	for (const struct cmd_env *v = cmd_environment; v->name; v++) {
		fprintf(f, "  %-23s ", v->name);
		fold_at(f, 26, v->text);
	}
}

const struct cmd_env cmd_environment[] = {
	{"GPUCTL_CONFIG_NOSYSTEM", "when set and not empty, the system file (/etc/gpuctl.conf) is "
				   "not read", false},
	{"XDG_CONFIG_HOME", "your file is $XDG_CONFIG_HOME/gpuctl/config (else "
			    "~/.config/gpuctl/config)", false},
	{"GPUCTL_SOCKET", "the shared daemon's socket, instead of /run/gpuctl/gpuctl.sock", false},
	{"GPUCTL_STATE_DIR", "where your private daemon keeps its socket and state when no shared "
			     "daemon is installed (else $XDG_RUNTIME_DIR/gpuctl, else /tmp/gpuctl-UID, or "
			     "~/.gpuctl-private where another user made that first); "
			     "a directory that must be yours and private", false},
	{"XDG_RUNTIME_DIR", "holds your private daemon's directory, gpuctl/ (see GPUCTL_STATE_DIR)",
	 false},
	{"GPUCTL_DAEMON_TIMEOUT", "how long to wait for an answer of the daemon or of your job "
				  "runner before giving up (exit 13): a duration such as 5, 30s or 2m "
				  "(default 5 s)", false},
	{"GPUCTL_NVML_LIBRARY", "the libnvidia-ml.so.1 to load instead of the system's", false},
	/* issue 22: the daemon's shared snapshot */
	{"GPUCTL_SNAPSHOT", "0, off or no: status, top, doctor and the exporter read the machine "
			    "themselves, never the daemon's shared view", false},
	{"GPUCTL_SNAPSHOT_AGE", "the oldest daemon's view those take, in seconds (0-60; default: "
				"none older than the ask, a loop's period)", false},
	{"GPUCTL_NVML_REPORT", "a file to which NVML's loading appends which name filled each "
			       "function and which fallbacks ran (tests/device/check.sh)", false},
	{"GPUCTL_CUDA_LIBRARY", "the libcuda.so.1 map --verify loads instead of the system's", false},
	{"GPUCTL_SYSTEM_CONFIG", "the system file to read instead of /etc/gpuctl.conf (also the "
				 "daemon's [daemon] policy when it runs without --config)", false},
	{"CUDA_VISIBLE_DEVICES", "as CUDA reads it (`gpuctl map` explains it): restricts the GPUs "
				 "run, env and submit choose among", false},
	{"CUDA_DEVICE_ORDER", "how CUDA numbers the GPUs: map, which and doctor read it as CUDA "
			      "does", false},
	{"GPUCTL_LEASE_ID", "set by run and env: the lease a shell or job runs under (release "
			    "says when the shell still exports an ended one)", false},
	{"COLUMNS", "the width of tables (40 or more), also when the output is not a terminal",
	 false},
	{"LINES", "the height of gpuctl top's screen (5 or more)", false},
	{"NO_COLOR", "when set and not empty, no colour unless --color=always", false},
	/* containers (issue 28) */
	{"GPUCTL_CONTAINER_TIMEOUT", "how long one refresh may wait for container runtimes to name "
				     "their containers, in milliseconds (default 30, at most 2000); "
				     "DOCKER_HOST and CONTAINER_HOST (unix://PATH) name their sockets",
	 false},
	{"GPUCTL_BINARY", "the Python module (import gpuctl) runs this gpuctl binary instead of the "
			  "first one on PATH", true},
	{NULL, NULL, false},
};

static void usage(const struct cmd_entry *e, FILE *f)
{
	fprintf(f, "usage: gpuctl %s", e->usage);
}

int cmd_bad_usage(const struct cmd_entry *e, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "gpuctl %s: ", e->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry `gpuctl %s --help`.\n", e->name);
	return EXIT_USAGE;
}

int cmd_args_error(struct cmd *c)
{
	return cmd_bad_usage(c->entry, "%s", c->args.err);
}

int cmd_fail(const struct cmd *c, const struct gpu_error *err)
{
	fprintf(stderr, "gpuctl %s: %s\n", c->entry->name, err->msg);
	return err->code ? err->code : EXIT_FAIL;
}

/* ---- lookup ---- */

/* "unknown command": with the names within a typo or two of it, when there are any. */
static void unknown(const struct cmd_entry *const *table, size_t n, const char *name, char *err,
		    size_t errlen)
{
	const char **names = xcalloc(2 * n + 1, sizeof *names);
	for (size_t i = 0; i < n; i++)
		if (!(table[i]->flags & CMD_INTERNAL)) {
			names[2 * i] = table[i]->name;
			names[2 * i + 1] = table[i]->alias;
		}
	struct strbuf sb = {0};
	if (sb_nearest(&sb, name, names, 2 * n, "`gpuctl ", "`"))
		snprintf(err, errlen, "unknown command '%s'. Did you mean %s? (`gpuctl --help` lists the "
				      "commands)", name, sb.buf);
	else
		snprintf(err, errlen, "unknown command '%s'; `gpuctl --help` lists the commands", name);
	sb_free(&sb);
	free(names);
}

const struct cmd_entry *cmd_find(const struct cmd_entry *const *table, size_t n, const char *name,
				 char *err, size_t errlen)
{
	const struct cmd_entry *hit = NULL, *whole = NULL;
	size_t len = strlen(name), nhits = 0;
	struct strbuf could = {0};
	for (size_t i = 0; i < n; i++) {
		const struct cmd_entry *e = table[i];
		if (!strcmp(e->name, name) || (e->alias && !strcmp(e->alias, name))) {
			sb_free(&could);
			return e;
		}
		if (len && !(e->flags & CMD_INTERNAL) && !strncmp(e->name, name, len)) {
			sb_addf(&could, " %s", e->name);
			nhits++;
			if (e->flags & CMD_NO_PREFIX)
				whole = e;
			else
				hit = e;
		}
	}
	/* A prefix shared with a destructive command is ambiguous: naming one never runs it. */
	if (nhits == 1 && hit) {
		sb_free(&could);
		return hit;
	}
	if (nhits > 1)
		snprintf(err, errlen, "ambiguous command '%s', could be:%s", name, could.buf);
	else if (whole)
		snprintf(err, errlen, "'%s' is not a command: `gpuctl %s` ends things, so it is never "
				      "abbreviated; type it in full", name, whole->name);
	else
		unknown(table, n, name, err, errlen);
	sb_free(&could);
	return NULL;
}

/* ---- the shared work ---- */

/* The device guard (issue 25): NVML could not start for this user, and the shared daemon says
 * its guard binds (it keeps /dev/nvidiactl to lease holders): the GPUs as the daemon describes
 * them, each marked not this user's to open (status says so, and does not fail for it). NULL,
 * err untouched, where that is not the reason. */
static struct gpu_set *guard_view(struct gpu_error *err)
{
	struct leaseview lv;
	struct gpu_error e = {0};
	if (!leaseview_load(&lv, &e))
		return NULL;
	bool binding = leaseview_binding(&lv);
	leaseview_free(&lv);
	struct gpu_set *set = binding ? grant_machine_shared(&e) : NULL;
	if (!set)
		return NULL;
	if (!set->pc) /* refreshed as any set is (its backend reads nothing) */
		set->pc = proc_cache_new();
	for (size_t i = 0; i < set->ngpus; i++)
		if (!set->gpus[i].lost) {
			set->gpus[i].inaccessible = true;
			free(set->gpus[i].error);
			set->gpus[i].error = xasprintf("%s", err->msg);
		}
	return set;
}

int cmd_open(struct cmd *c)
{
	const struct cmd_entry *e = c->entry;
	c->gpus = e->flags & CMD_GPUS ? args_get(&c->args, 'g') : NULL;
	if (c->set || (!(e->flags & CMD_NVML) && !c->gpus))
		return EXIT_OK;
	struct gpu_error err = {0};
	/* The daemon's view where it serves one; otherwise (or if it does not answer in time) the
	 * machine read here, as without a daemon. */
	if (c->snap && snapshot_wanted())
		c->set = snapshot_open(c->snap_what, c->snap_age, c->snap_leases, !c->snap_server,
				      &err);
	if (!c->set) {
		err = (struct gpu_error){0};
		c->set = gpu_set_open(&err);
	}
	if (!c->set && err.code == EXIT_NVML_INIT && (e->flags & CMD_GUARD_VIEW))
		c->set = guard_view(&err);
	if (!c->set) {
		fprintf(stderr, "gpuctl: %s\n", err.msg);
		return err.code;
	}
	if (c->gpus && !gpu_set_select(c->set, c->gpus, &err)) {
		fprintf(stderr, "gpuctl %s: %s\n", e->name, err.msg);
		return err.code;
	}
	return EXIT_OK;
}

static int run(const struct cmd_entry *e, int argc, char **argv)
{
	struct cmd c = {.entry = e};
	int rc;
	switch (args_parse(&c.args, e, argc, argv)) {
	case ARGS_HELP:
		usage(e, stdout);
		rc = EXIT_OK;
		break;
	case ARGS_ERROR:
		rc = cmd_args_error(&c);
		break;
	default:
		rc = e->exec(&c);
		break;
	}
	if (c.set)
		c.set->at_exit = true;   /* main returns rc: no nvmlShutdown before the exit */
	gpu_set_free(c.set);
	args_free(&c.args);
	return rc;
}

int cmd_main(const struct cmd_entry *const *table, size_t n, int argc, char **argv)
{
	char err[512];
	if (argc < 2) {
		main_usage(stderr, table, n);
		return EXIT_USAGE;
	}
	const char *name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
		const struct cmd_entry *e = argc > 2 && !strcmp(name, "help")
						    ? cmd_find(table, n, argv[2], err, sizeof err) : NULL;
		if (e)
			usage(e, stdout);
		else
			main_usage(stdout, table, n);
		return EXIT_OK;
	}
	if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
		printf("gpuctl %s\n", GPUCTL_VERSION);
		return EXIT_OK;
	}
	const struct cmd_entry *e = cmd_find(table, n, name, err, sizeof err);
	if (!e) {
		fprintf(stderr, "gpuctl: %s\n", err);
		return EXIT_USAGE;
	}
	return run(e, argc - 1, argv + 1);
}
