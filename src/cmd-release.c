/* cmd-release.c: `gpuctl release [--gpu LIST] [--user NAME] [--format sh|fish]`: end one's own
 * `env` leases. The daemon says who holds what (the kernel's word on the holder's pid); the
 * holder is signalled through a pidfd checked against the start time the daemon recorded, so a
 * pid reused meanwhile is never hit, and root acts on another user's lease only when it names
 * that user. A `run` lease ends with its job (use `gpuctl kill` for the job). */
#include "escape.h"
#include "gpu.h"
#include "gpuctl.h"
#include "leaseview.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RELEASE_WAIT_MS 5000

/* The variables `gpuctl env` exports (CUDA_DEVICE_ORDER=PCI_BUS_ID stays: it is right anyway). */
static const char *const lease_vars[] = {
	"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "GPUCTL_LEASE_ID", "GPUCTL_LEASE_GPUS",
	"GPUCTL_LEASE_NAME", "GPUCTL_LEASED_AT", "GPUCTL_QUEUED_AT",
};

static bool names_gpu(const struct lease_info *l, const struct gpu_set *set)
{
	for (size_t k = 0; k < l->ngpus; k++)
		for (size_t i = 0; i < set->ngpus; i++)
			if (set->gpus[i].selected && !strcmp(set->gpus[i].uuid, l->uuids[k]))
				return true;
	return false;
}

static unsigned long long start_time(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	char *text = read_file(path, NULL);
	const char *p = text ? strrchr(text, ')') : NULL;
	unsigned long long st = 0;
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
			       "%*d %*d %llu", &st) != 1)
		st = 0;
	free(text);
	return st;
}

/* SIGTERM to the lease's holder, the very process the daemon recorded; waits for it to go. */
static int end_holder(const struct lease_info *l)
{
	int fd = (int)syscall(SYS_pidfd_open, l->pid, 0);
	if (fd < 0 || (l->start && start_time(l->pid) != l->start)) {
		if (fd >= 0)
			close(fd);
		fprintf(stderr, "gpuctl release: lease %s: its holder (pid %d) is gone or its pid was "
			"reused; left alone (the lease ends by itself when its holder does)\n", l->id,
			(int)l->pid);
		return EXIT_FAIL;
	}
	int rc = EXIT_OK;
	if (syscall(SYS_pidfd_send_signal, fd, SIGTERM, NULL, 0) != 0) {
		fprintf(stderr, "gpuctl release: cannot signal the holder of lease %s (pid %d): %s\n",
			l->id, (int)l->pid, strerror(errno));
		rc = EXIT_FAIL;
	} else {
		/* Until it has let go, so that the next command sees the GPU free. */
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, RELEASE_WAIT_MS) != 1) {
			fprintf(stderr, "gpuctl release: the holder of lease %s (pid %d) did not exit within "
				"%d s\n", l->id, (int)l->pid, RELEASE_WAIT_MS / 1000);
			rc = EXIT_FAIL;
		}
	}
	close(fd);
	return rc;
}

/* The shell we run in exports lease id: say so, and print its cleaning line in fmt if asked. */
static void clean_shell(const struct lease_info *l, const char *fmt)
{
	const char *mine = getenv("GPUCTL_LEASE_ID");
	if (!mine || strcmp(mine, l->id))
		return;
	if (fmt) {
		for (size_t i = 0; i < ARRAY_SIZE(lease_vars); i++)
			printf(strcmp(fmt, "fish") ? "unset %s;\n" : "set -e %s;\n", lease_vars[i]);
		return;
	}
	fprintf(stderr, "gpuctl release: this shell still exports lease %s's CUDA_VISIBLE_DEVICES=%s; "
		"clean it with:\n  unset", l->id, esc_str(getenv("CUDA_VISIBLE_DEVICES"), 0));
	for (size_t i = 0; i < ARRAY_SIZE(lease_vars); i++)
		fprintf(stderr, " %s", lease_vars[i]);
	fprintf(stderr, "\n(or next time: eval \"$(gpuctl release --format=sh)\")\n");
}

static int release(int argc, char **argv)
{
	const struct cmd_entry *e = &cmd_release_entry;
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'}, {"gpu", required_argument, NULL, 'g'},
		{"gpus", required_argument, NULL, 'g'}, {"user", required_argument, NULL, 'u'},
		{"format", required_argument, NULL, 'f'}, {0},
	};
	const char *ids = NULL, *user = NULL, *fmt = NULL;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hg:u:f:", longopts, NULL)) != -1) {
		if (c == 'h')
			return cmd_usage(e, 0);
		if (c == 'g')
			ids = optarg;
		else if (c == 'u')
			user = optarg;
		else if (c == 'f' && (!strcmp(optarg, "sh") || !strcmp(optarg, "fish")))
			fmt = optarg;
		else if (c == 'f')
			return cmd_bad_usage(e, "--format is sh or fish, not '%s'", optarg);
		else
			return cmd_option_error(e, c, argv);
	}
	if (optind < argc)
		return cmd_bad_usage(e, "unexpected argument '%s'", argv[optind]);
	uid_t me = getuid(), who = me;
	if (user) {
		struct passwd *pw = getpwnam(user);
		unsigned long n;
		if (pw)
			who = pw->pw_uid;
		else if (parse_uint(user, &n))
			who = (uid_t)n;
		else
			return cmd_bad_usage(e, "no user '%s'", user);
		if (who != me && me != 0) {
			fprintf(stderr, "gpuctl release: refused: only root may end another user's lease "
				"(%s's)\n", user);
			return EXIT_DENIED;
		}
	}
	struct gpu_error err = {0};
	struct gpu_set *set = ids ? gpu_set_open(&err) : NULL;
	if (ids && (!set || !gpu_set_select(set, ids, &err))) {
		fprintf(stderr, "gpuctl release: %s\n", err.msg);
		gpu_set_free(set);
		return err.code;
	}
	struct leaseview v;
	if (!leaseview_load(&v, &err)) {
		gpu_set_free(set);
		fprintf(stderr, "gpuctl release: %s\n", err.msg);
		return err.code;
	}
	int rc = EXIT_OK;
	size_t ended = 0;
	for (size_t i = 0; i < v.nleases; i++) {
		const struct lease_info *l = &v.leases[i];
		if (ids && !names_gpu(l, set))
			continue;
		if (l->uid != who) {
			if (ids && !user) {
				fprintf(stderr, "gpuctl release: refused: the lease on %s belongs to %s (pid %d); "
					"only %s%s can end it\n", esc_str(ids, 0), esc_str(l->user, 1), (int)l->pid,
					esc_str(l->user, 2), me == 0 ? " (root: name the user with --user)"
					: " or root");
				rc = EXIT_DENIED;
			}
			continue;
		}
		if (strcmp(l->kind, "env")) {
			if (ids) {
				fprintf(stderr, "gpuctl release: the lease on %s belongs to a running job (pid %d: "
					"%s); it ends when the job does (`gpuctl kill --pid %d` ends the job)\n",
					esc_str(ids, 0), (int)l->pid, esc_str(l->command ? l->command : "", 1),
					(int)l->pid);
				rc = EXIT_DENIED;
			}
			continue;
		}
		int r = end_holder(l);
		if (r != EXIT_OK) {
			rc = rc ? rc : r;
			continue;
		}
		ended++;
		/* With --format, stdout is for the shell to eval: tell the person on stderr. */
		fprintf(fmt ? stderr : stdout, "released lease %s (%zu GPU%s)\n", l->id, l->ngpus,
			l->ngpus == 1 ? "" : "s");
		clean_shell(l, fmt);
	}
	if (!ended && rc == EXIT_OK)
		fprintf(stderr, "gpuctl release: no env lease of %s to release%s%s%s\n",
			user ? esc_str(user, 0) : "yours", ids ? " on " : "", ids ? esc_str(ids, 1) : "",
			v.present ? "" : " (no gpuctl daemon is running)");
	leaseview_free(&v);
	gpu_set_free(set);
	return rc;
}

const struct cmd_entry cmd_release_entry = {
	.name = "release",
	.summary = "end your `gpuctl env` leases",
	.usage = "release [--gpu LIST] [--user NAME] [--format sh|fish]\n\n"
		 "End your own env leases (all, or those on the GPUs listed). Another user's lease is\n"
		 "refused (exit 12) unless you are root and name the user with --user; a run lease ends\n"
		 "with its job. When this shell exports a lease it ends, release says how to clean the\n"
		 "shell; with --format it prints those commands instead:\n"
		 "    eval \"$(gpuctl release --format=sh)\"\n",
	.run = release,
};
