/* runner.c: `gpuctl runner` (internal): the user's job runner (runner.h), started detached by
 * the job commands when it is not running. */
#include "cmd/cmd.h"
#include "machine/pid.h"
#include "runner/runner.h"

static int runner_cmd(struct cmd *c)
{
	(void)c;
	if (!pid_pidfds())
		die(EXIT_FAIL, "the job runner needs pidfds to watch its jobs without ever mistaking "
		    "a reused pid: " PID_NONE_HERE);
	return runner_main();
}

const struct cmd_entry cmd_runner_entry = {
	.name = "runner",
	.summary = "internal: your job runner, started by `gpuctl submit`",
	.usage = "runner   (internal: started by `gpuctl submit` and the other job commands)\n",
	.args = {.upper = 0},
	.flags = CMD_INTERNAL,
	.exec = runner_cmd,
};
