/* main.c: the command table (one entry per cmd-*.c file, tmux style) and the entry point. The
 * table lives here, not in cmd.c, so the core and its unit tests link without the commands. */
#include "gpuctl.h"

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
	return cmd_main(commands, ARRAY_SIZE(commands), argc, argv);
}
