/* main.c: the command table (one entry per cmd-*.c file, tmux style) and the entry point. The
 * table lives here, not in cmd.c, so the core and its unit tests link without the commands. */
#include "gpuctl.h"

#include <string.h>

static const struct cmd_entry *const commands[] = {
	&cmd_status_entry,
	&cmd_top_entry,
	&cmd_map_entry,
	&cmd_topo_entry,      /* issue 26 */
	&cmd_which_entry,
	&cmd_run_entry,
	&cmd_env_entry,
	&cmd_leases_entry,
	&cmd_release_entry,
	&cmd_doctor_entry,
	&cmd_kill_entry,
	&cmd_exporter_entry,
	&cmd_submit_entry,
	&cmd_jobs_entry,
	&cmd_logs_entry,
	&cmd_cancel_entry,
	&cmd_wait_entry,
	&cmd_daemon_entry,
	&cmd_config_entry,
	&cmd_runner_entry,
	&cmd_cuda_probe_entry,
};

int main(int argc, char **argv)
{
	/* Hidden, for the build and the shells: the pages and completions written from the table
	 * (cmd/man.c, cmd/complete.c), by exact name only. */
	if (argc > 1 && !strcmp(argv[1], "__man"))
		return cmd_man(commands, ARRAY_SIZE(commands), argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "__complete"))
		return cmd_complete(commands, ARRAY_SIZE(commands), argc - 2, argv + 2);
	return cmd_main(commands, ARRAY_SIZE(commands), argc, argv);
}
