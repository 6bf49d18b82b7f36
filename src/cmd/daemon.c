/* daemon.c: `gpuctl daemon`: the trusted writer of shared GPU state, in the foreground (run
 * by systemd as the unprivileged user gpuctl; see contrib/gpuctl.service). The design is in
 * daemon.h. */
#include "lease/client.h"
#include "daemon/daemon.h"
#include "cmd/cmd.h"
#include "view/frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_STATE_DIR "/run/gpuctl/state"

enum { O_SOCKET = 256, O_STATE, O_CONFIG, O_PRIVATE, O_DEVDIR, O_PROCDIR };

static int daemon_cmd(struct cmd *c)
{
	const char *sock = args_get(&c->args, O_SOCKET), *state = args_get(&c->args, O_STATE);
	const char *config = args_get(&c->args, O_CONFIG);
	bool priv = args_has(&c->args, O_PRIVATE);
	const char *dev = args_get(&c->args, O_DEVDIR); /* the device guard's nodes (issue 25) */
	if (!dev)
		dev = "/dev";
	if (*dev != '/')
		return cmd_bad_usage(c->entry, "--dev-dir wants an absolute path");
	const char *proc = args_get(&c->args, O_PROCDIR); /* its MIG capabilities */
	if (!proc)
		proc = "/proc/driver/nvidia";
	if (*proc != '/')
		return cmd_bad_usage(c->entry, "--proc-dir wants an absolute path");
	if (!sock)
		sock = client_socket_path();
	if (!state)
		state = DEFAULT_STATE_DIR;
	if (*sock != '/' || *state != '/')
		return cmd_bad_usage(c->entry, "--socket and --state-dir want absolute paths");
	/* A user's private daemon honours the environment's choice to skip /etc (tests do). */
	if (priv && !config && getenv("GPUCTL_CONFIG_NOSYSTEM"))
		config = "/dev/null";
	/* a table loop's frames (issue 22): laid out with the view layer's table */
	snap_frame_renderer(frame_render);
	return daemon_main(sock, state, config, priv, dev, proc);
}

static const struct option longopts[] = {
	{"socket", required_argument, NULL, O_SOCKET}, {"state-dir", required_argument, NULL, O_STATE},
	{"config", required_argument, NULL, O_CONFIG}, {"private", no_argument, NULL, O_PRIVATE},
	{"dev-dir", required_argument, NULL, O_DEVDIR},
	{"proc-dir", required_argument, NULL, O_PROCDIR}, {0},
};

const struct cmd_entry cmd_daemon_entry = {
	.name = "daemon",
	.summary = "the lease daemon (run by systemd as user gpuctl)",
	.usage = "daemon [--socket PATH] [--state-dir DIR] [--config FILE] [--dev-dir DIR]\n"
		 "       [--proc-dir DIR]\n\n"
		 "Serve GPU leases to every user of this machine, in the foreground. Clients find it at\n"
		 "$GPUCTL_SOCKET or " DEFAULT_SOCKET "; it keeps its state in DIR (default\n"
		 DEFAULT_STATE_DIR ", which must be its own and private), and reads its policy from\n"
		 "the [daemon] section of FILE (default $GPUCTL_SYSTEM_CONFIG, else /etc/gpuctl.conf;\n"
		 "`gpuctl config` shows what it says). It takes NVML from\n"
		 "GPUCTL_NVML_LIBRARY like every command. Leases outlive it: a restarted daemon finds\n"
		 "them again. With [daemon] guard = acl it gives each lease's user access to the\n"
		 "device nodes of its GPUs under --dev-dir, and a MIG lease's user to its instance's\n"
		 "capability nodes (DIR/nvidia-caps/nvidia-capN, N as --proc-dir's\n"
		 "capabilities/gpuM/mig/giG[/ciC]/access files say). See gpuctl-daemon(8), THE\n"
		 "DEVICE GUARD.\n\n"
		 "  --socket PATH     listen here instead\n"
		 "  --state-dir DIR   keep the state here instead\n"
		 "  --config FILE     read the [daemon] policy from FILE instead\n"
		 "  --private         a user's own daemon, which the clients start when no shared one\n"
		 "                    is installed (not for systemd)\n"
		 "  --dev-dir DIR     the device guard's NVIDIA device nodes (default /dev)\n"
		 "  --proc-dir DIR    the driver's /proc/driver/nvidia (default), where the guard finds\n"
		 "                    the MIG capabilities' minor numbers\n",
	.args = {.longs = longopts},
	.flags = CMD_NO_PREFIX,
	.exec = daemon_cmd,
};
