/* cmd.c: the subcommand table, dispatch (exact name, alias or unique prefix, as tmux does) and
 * the top-level help, which documents the exit codes. */
#include "gpuctl.h"
#include "util.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const struct cmd_entry *const commands[] = {
	&cmd_status_entry,
	&cmd_map_entry,
	&cmd_which_entry,
	&cmd_run_entry,
	&cmd_env_entry,
	&cmd_leases_entry,
	&cmd_release_entry,
	&cmd_doctor_entry,
	&cmd_kill_entry,
	&cmd_exporter_entry,
	&cmd_daemon_entry,
	&cmd_cuda_probe_entry,
};

static const char exit_codes[] =
	"Exit status:\n"
	"  0  success\n"
	"  1  unexpected failure (I/O, resources)\n"
	"  2  bad arguments or input (usage on stderr)\n"
	"  3  NVML library not found: no NVIDIA driver? (GPUCTL_NVML_LIBRARY=/path overrides)\n"
	"  4  NVML failed to initialise (NVML's own error is shown)\n"
	"  5  a GPU was lost or inaccessible mid-query; the other GPUs were still shown\n"
	"  6  no GPU matches the index, UUID or bus id given\n"
	"  7  which: the CUDA device asked for is not visible\n"
	"  8  map --verify: the CUDA driver (libcuda.so.1) could not be loaded or initialised\n"
	"  9  map --verify: the CUDA driver disagrees with gpuctl's model\n"
	" 10  run/env: not enough free GPUs (and no --wait)\n"
	" 11  run/env: --wait ran out\n"
	" 12  release: the lease belongs to another user\n"
	"     run passes its job's exit status through (128+N when signal N ended it)\n";

static void main_usage(FILE *f)
{
	fprintf(f, "usage: gpuctl [--version] [--help] COMMAND [ARGS]\n\n"
		   "gpuctl shows and controls the NVIDIA GPUs of a shared server.\n\nCommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (commands[i]->summary) /* internal commands have none */
			fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
	fprintf(f, "\nRun `gpuctl COMMAND --help` for a command's options.\n\n%s"
		   "\nEnvironment:\n"
		   "  GPUCTL_NVML_LIBRARY  path of libnvidia-ml.so.1 to load instead of the system's\n"
		   "  GPUCTL_CUDA_LIBRARY  path of libcuda.so.1 for map --verify\n"
		   "  NO_COLOR             when set and not empty, no colour unless --color=always\n",
		exit_codes);
}

int cmd_usage(const struct cmd_entry *e, int code)
{
	FILE *f = code ? stderr : stdout;
	fprintf(f, "usage: gpuctl %s\n", e->usage);
	return code;
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

int cmd_option_error(const struct cmd_entry *e, int c, char **argv)
{
	if (c == ':')
		return cmd_bad_usage(e, "option '%s' needs a value", argv[optind - 1]);
	return cmd_bad_usage(e, "unknown option '%s'", argv[optind - 1]);
}

static const struct cmd_entry *find(const char *name)
{
	const struct cmd_entry *hit = NULL;
	size_t n = strlen(name), nhits = 0;
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		const struct cmd_entry *e = commands[i];
		if (!strcmp(e->name, name) || (e->alias && !strcmp(e->alias, name)))
			return e;
		if (e->summary && !strncmp(e->name, name, n)) {
			hit = e;
			nhits++;
		}
	}
	if (nhits == 1)
		return hit;
	if (nhits > 1) {
		fprintf(stderr, "gpuctl: ambiguous command: %s, could be:", name);
		for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
			if (commands[i]->summary && !strncmp(commands[i]->name, name, n))
				fprintf(stderr, " %s", commands[i]->name);
		fputc('\n', stderr);
		exit(EXIT_USAGE);
	}
	return NULL;
}

int cmd_main(int argc, char **argv)
{
	if (argc < 2) {
		main_usage(stderr);
		return EXIT_USAGE;
	}
	const char *name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
		if (argc > 2 && strcmp(name, "help") == 0) {
			const struct cmd_entry *e = find(argv[2]);
			if (e)
				return cmd_usage(e, 0);
		}
		main_usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
		printf("gpuctl %s\n", GPUCTL_VERSION);
		return EXIT_OK;
	}
	const struct cmd_entry *e = find(name);
	if (!e) {
		fprintf(stderr, "gpuctl: unknown command '%s'; run `gpuctl --help` for the list\n",
			name);
		return EXIT_USAGE;
	}
	return e->run(argc - 1, argv + 1);
}
