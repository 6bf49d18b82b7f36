/* cmd-daemon.c: `gpuctl daemon`: the trusted writer of shared GPU state, in the foreground (run
 * by systemd as the unprivileged user gpuctl; see contrib/gpuctl.service). The design is in
 * daemon.h. */
#include "client.h"
#include "daemon.h"
#include "gpuctl.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_STATE_DIR "/run/gpuctl/state"

static int daemon_cmd(int argc, char **argv)
{
	const struct cmd_entry *e = &cmd_daemon_entry;
	enum { O_SOCKET = 256, O_STATE, O_CONFIG, O_PRIVATE };
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'}, {"socket", required_argument, NULL, O_SOCKET},
		{"state-dir", required_argument, NULL, O_STATE}, {"config", required_argument, NULL, O_CONFIG},
		{"private", no_argument, NULL, O_PRIVATE}, {0},
	};
	const char *sock = NULL, *state = DEFAULT_STATE_DIR, *config = NULL;
	bool priv = false;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h': return cmd_usage(e, 0);
		case O_SOCKET: sock = optarg; break;
		case O_STATE: state = optarg; break;
		case O_CONFIG: config = optarg; break;
		case O_PRIVATE: priv = true; break;
		default: return cmd_option_error(e, c, argv);
		}
	}
	if (optind < argc)
		return cmd_bad_usage(e, "unexpected argument '%s'", argv[optind]);
	if (!sock)
		sock = daemon_socket_path();
	if (*sock != '/' || *state != '/')
		return cmd_bad_usage(e, "--socket and --state-dir want absolute paths");
	/* A user's private daemon honours the environment's choice to skip /etc (tests do). */
	if (priv && !config && getenv("GPUCTL_CONFIG_NOSYSTEM"))
		config = "/dev/null";
	return daemon_main(sock, state, config, priv);
}

const struct cmd_entry cmd_daemon_entry = {
	.name = "daemon",
	.summary = "the lease daemon (run by systemd as user gpuctl)",
	.usage = "daemon [--socket PATH] [--state-dir DIR] [--config FILE]\n\n"
		 "Serve GPU leases to every user of this machine, in the foreground. Clients find it at\n"
		 "$GPUCTL_SOCKET or " DEFAULT_SOCKET "; it keeps its state in DIR (default\n"
		 DEFAULT_STATE_DIR ", which must be its own and private), and reads its policy from\n"
		 "the [daemon] section of FILE (default /etc/gpuctl.conf). It takes NVML from\n"
		 "GPUCTL_NVML_LIBRARY like every command. Leases outlive it: a restarted daemon finds\n"
		 "them again. See README: Administration.\n",
	.run = daemon_cmd,
};
