/* gpuctl.h: the subcommand table (tmux/git style): each cmd-*.c file exports one entry. */
#ifndef GPUCTL_H
#define GPUCTL_H

#include <stdio.h>

#define GPUCTL_VERSION "0.1.0"

struct cmd_entry {
	const char *name;
	const char *alias;       /* NULL when none */
	const char *summary;     /* one line for `gpuctl --help` */
	const char *usage;       /* full usage text for `gpuctl CMD --help` */
	int (*run)(int argc, char **argv);
};

extern const struct cmd_entry cmd_status_entry;
extern const struct cmd_entry cmd_map_entry;
extern const struct cmd_entry cmd_which_entry;
extern const struct cmd_entry cmd_cuda_probe_entry;
extern const struct cmd_entry cmd_run_entry;
extern const struct cmd_entry cmd_env_entry;
extern const struct cmd_entry cmd_leases_entry;
extern const struct cmd_entry cmd_release_entry;
extern const struct cmd_entry cmd_doctor_entry;
extern const struct cmd_entry cmd_kill_entry;
extern const struct cmd_entry cmd_exporter_entry;
extern const struct cmd_entry cmd_daemon_entry;

struct vis_request;
/* map and which share --visible/--unset/--order/--pid (long options 'V','U','O','P'). */
int vis_option(const struct cmd_entry *e, int c, const char *arg, struct vis_request *rq);

int cmd_main(int argc, char **argv);
/* Print the command's usage: to stdout with status 0 for --help, to stderr otherwise. */
int cmd_usage(const struct cmd_entry *e, int code);
/* getopt_long's ':' (missing value) or '?' (unknown option) as a usage error (optstrings start
 * with ':' so the two can be told apart). */
int cmd_option_error(const struct cmd_entry *e, int c, char **argv);
/* Usage error: message, a pointer to --help, exit status 2. */
int cmd_bad_usage(const struct cmd_entry *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* term.c */
enum color_when { COLOR_AUTO, COLOR_ALWAYS, COLOR_NEVER };
int parse_color_when(const char *s);    /* -1 when invalid */
int use_color(enum color_when w, int fd);
int term_width(int fd);

#endif
