/* cmd/: rank 6, git's builtin/: the only folder that reads argv or prints usage. cmd.c and args.c
 * do the shared work once; every other file is one command (or options several share:
 * leaseopts.c, visopts.c) and exports its entry, which main.c lists.
 *
 * cmd.h: the command table's entry and the shared work every command gets from cmd.c and args.c
 * (tmux's cmd_entry and args_parse): options parsed once from the entry's template into one
 * structure the command reads with small accessors, the machine opened and the GPU selection
 * resolved once, the shared errors printed in one place and what was opened freed in one place.
 * Parsing and command lookup return their errors instead of exiting, so both are unit-tested. */
#ifndef GPUCTL_CMD_H
#define GPUCTL_CMD_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

#define GPUCTL_VERSION "0.1.0"

struct cmd;
struct gpu_set;

/* What a command needs from cmd.c. */
enum cmd_flags {
	CMD_NVML = 1,        /* cmd_open opens the GPU set */
	CMD_GPUS = 2,        /* takes -g, --gpus LIST; cmd_open resolves it, opening the set for it */
	CMD_COMMAND = 4,     /* options end at the first non-option: the rest is a command (run) */
	CMD_NO_PREFIX = 8,   /* destructive: reached by its full name only, never an abbreviation */
	/* the device guard (issue 25): where NVML cannot start for this user (the guard keeps
	 * /dev/nvidiactl to lease holders), cmd_open takes the GPUs from the daemon's description,
	 * each marked not this user's to open */
	CMD_GUARD_VIEW = 1 << 10,
	CMD_INTERNAL = 16,   /* not listed, abbreviated or suggested (the cuda-probe child) */
};

struct cmd_entry {
	const char *name;
	const char *alias;           /* NULL when none */
	const char *summary;         /* one line for `gpuctl --help` */
	const char *usage;           /* full usage text for `gpuctl CMD --help` */
	struct {
		const char *shorts;          /* its own getopt letters ("n:f:"); -h and -g come from cmd */
		const struct option *longs;  /* ends with {0}; NULL when none */
		int lower, upper;            /* positional arguments: at least, at most (-1: any) */
		int gpus_alias;              /* another letter for -g (status: 'i', as in nvidia-smi) */
		/* nvidia-smi's long options written with one dash, each followed by the long option
		 * it is ("-lms", "--loop-ms"); NULL-ended. getopt read "-lms 500" as -l "ms". */
		const char *const *words;
	} args;
	unsigned flags;              /* CMD_* */
	int (*exec)(struct cmd *c);  /* returns the exit status */
};

/* The option text every command with CMD_GPUS shows, so the selection reads the same everywhere. */
#define CMD_GPUS_HELP                                                                            \
	"  -g, --gpus LIST            only these GPUs: indices, UUIDs (or unique prefixes) or PCI\n" \
	"                             bus ids, separated by commas\n"

/* ---- args.c: the options as given ---- */

enum args_status { ARGS_OK, ARGS_HELP, ARGS_ERROR };

struct args_value {
	int opt;                     /* the short letter, or the long option's val */
	const char *value;           /* NULL for a flag */
	char spelling[48];           /* as written: "-l", "--loop" (for messages) */
};

struct args {
	struct args_value *v;        /* in the order given */
	size_t n, cap;
	char **argv;                 /* positional arguments (run: the command and its arguments) */
	int argc;
	char err[512];               /* why parsing or an accessor failed */
};

/* argv[0] is the command's name. ARGS_HELP: -h/--help was given; ARGS_ERROR: a->err says why.
 * a is always the caller's to free. */
enum args_status args_parse(struct args *a, const struct cmd_entry *e, int argc, char **argv);
void args_free(struct args *a);
bool args_has(const struct args *a, int opt);
/* The last value given for opt (an option given twice: the last wins); NULL when absent. */
const char *args_get(const struct args *a, int opt);
/* Typed values. Absent: true, *v unchanged (the caller's default). A bad value: false, a->err
 * set. */
bool args_uint(struct args *a, int opt, unsigned long min, unsigned long max, unsigned long *v);
/* Seconds from min to MAX_SECONDS, as any duration gpuctl reads (parse_duration: 90, 1.5,
 * 500ms, 30s, 5m). */
bool args_seconds(struct args *a, int opt, double min, double *v);
/* The position of the value in the NULL-terminated choices; def when absent; -1 when bad. */
int args_choice(struct args *a, int opt, const char *const *choices, int def);

/* ---- cmd.c: dispatch and the shared work ---- */

struct cmd {
	const struct cmd_entry *entry;
	struct args args;
	struct gpu_set *set;         /* after cmd_open: the machine (CMD_NVML, or -g given) */
	const char *gpus;            /* -g LIST as given (its GPUs are the selected ones), or NULL */
	/* Set before cmd_open by a command that shows the machine (status, top, doctor, the
	 * exporter): the set is the daemon's shared snapshot where one answers (lease/snapshot.h),
	 * fetched with the groups of snap_what and at most snap_age seconds old. */
	bool snap;
	unsigned snap_what;
	double snap_age;
	bool snap_leases;           /* issue 22: `list`'s answer in the same round trip (status) */
	bool snap_server;           /* a server (the exporter): its heap is left as malloc keeps it */
};

int cmd_main(const struct cmd_entry *const *table, size_t n, int argc, char **argv);
/* Exact name or alias, else a unique prefix (never of a CMD_NO_PREFIX or internal command).
 * NULL with err set: unknown (with the nearest names, when one is close), ambiguous, or a prefix
 * of a command that must be typed in full. */
const struct cmd_entry *cmd_find(const struct cmd_entry *const *table, size_t n, const char *name,
				 char *err, size_t errlen);
/* Opens what the entry's flags ask for: the GPU set (CMD_NVML, or CMD_GPUS with -g given) and the
 * -g selection resolved against it. A command calls it once its own option values are checked,
 * so a usage error never depends on the driver. EXIT_OK, or the status to return (the error
 * printed). cmd_main frees what it opened after exec. */
int cmd_open(struct cmd *c);
/* Usage errors: the message, a pointer to --help; returns EXIT_USAGE. */
int cmd_bad_usage(const struct cmd_entry *e, const char *fmt, ...) PRINTF(2, 3);
int cmd_args_error(struct cmd *c);   /* the message an args_* accessor left */
/* An error a lower layer returned: "gpuctl CMD: message" on stderr; returns its code. */
int cmd_fail(const struct cmd *c, const struct gpu_error *err);

/* The environment variables that change what gpuctl does, each with what it does, in the order
 * gpuctl(1) documents them: `gpuctl --help` lists them, `gpuctl config` shows the ones set. One
 * table, so the two cannot drift apart (tests/t0010 checks every getenv'd GPUCTL_ name is in it). */
struct cmd_env {
	const char *name;
	const char *text;            /* for --help, folded there */
	bool python;                 /* read by the Python module, not by the binary */
};
extern const struct cmd_env cmd_environment[];   /* ends with {NULL} */

/* ---- man.c, complete.c: the manual pages and the shells' completions, written from the table
 * (hidden commands `gpuctl __man`, `gpuctl __complete`, which main.c reaches by exact name) ---- */
int cmd_man(const struct cmd_entry *const *table, size_t n, int argc, char **argv);
int cmd_complete(const struct cmd_entry *const *table, size_t n, int argc, char **argv);

/* ---- the commands: one file each, its entry carries its option template; main.c lists them ---- */

extern const struct cmd_entry cmd_status_entry;
extern const struct cmd_entry cmd_map_entry;
extern const struct cmd_entry cmd_which_entry;
extern const struct cmd_entry cmd_run_entry;
extern const struct cmd_entry cmd_env_entry;
extern const struct cmd_entry cmd_leases_entry;
extern const struct cmd_entry cmd_release_entry;
extern const struct cmd_entry cmd_doctor_entry;
extern const struct cmd_entry cmd_kill_entry;
extern const struct cmd_entry cmd_top_entry;
extern const struct cmd_entry cmd_exporter_entry;
extern const struct cmd_entry cmd_daemon_entry;
extern const struct cmd_entry cmd_submit_entry;
extern const struct cmd_entry cmd_jobs_entry;
extern const struct cmd_entry cmd_logs_entry;
extern const struct cmd_entry cmd_cancel_entry;
extern const struct cmd_entry cmd_wait_entry;
extern const struct cmd_entry cmd_runner_entry;
extern const struct cmd_entry cmd_config_entry;
extern const struct cmd_entry cmd_cuda_probe_entry;
extern const struct cmd_entry cmd_topo_entry;        /* issue 26 */

#endif
