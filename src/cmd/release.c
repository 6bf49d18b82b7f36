/* release.c: `gpuctl release [--gpu LIST] [--lease ID] [--user NAME] [--format sh|fish]`: end
 * one's own `env` leases (all, those on some GPUs, or one named by its id: the Python module ends
 * exactly the lease it took). The daemon says who holds what (the kernel's word on the holder's
 * pid); the holder is signalled through a pidfd checked against the start time the daemon
 * recorded, so a pid reused meanwhile is never hit, and root acts on another user's lease only
 * when it names that user. A `run` lease ends with its job (use `gpuctl kill` for the job). Never
 * abbreviated: it ends things. */
#include "base/escape.h"
#include "machine/gpu.h"
#include "cmd/cmd.h"
#include "lease/view.h"
#include "machine/pid.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* SIGTERM to the lease's holder, the very process the daemon recorded; waits for it to go. */
static int end_holder(const struct lease_info *l)
{
	char why[512];
	int fd = leaseview_end_holder(l, why, sizeof why);
	if (fd < 0) {
		fprintf(stderr, "gpuctl release: %s\n", why);
		return EXIT_FAIL;
	}
	int rc = EXIT_OK;
	/* Until it has let go, so that the next command sees the GPU free. */
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, RELEASE_WAIT_MS) != 1) {
		fprintf(stderr, "gpuctl release: the holder of lease %s (pid %d) did not exit within "
			"%d s\n", l->id, (int)l->pid, RELEASE_WAIT_MS / 1000);
		rc = EXIT_FAIL;
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

/* What the caller named, for the refusals: "the lease on 0,1" or "lease 0123abcd...". */
static const char *named(const char *ids, const char *lease_id)
{
	static char buf[128];
	if (ids)
		snprintf(buf, sizeof buf, "the lease on %s", esc_str(ids, 0));
	else
		snprintf(buf, sizeof buf, "lease %s", esc_str(lease_id, 0));
	return buf;
}

enum { O_USER = 'u', O_FORMAT = 'f', O_LEASE = 'l' };

static int release(struct cmd *c)
{
	static const char *const formats[] = {"sh", "fish", NULL};
	int f = args_choice(&c->args, O_FORMAT, formats, -2);
	if (f == -1)
		return cmd_args_error(c);
	const char *fmt = f >= 0 ? formats[f] : NULL, *user = args_get(&c->args, O_USER);
	const char *lease_id = args_get(&c->args, O_LEASE);
	uid_t me = getuid(), who = me;
	if (lease_id && !*lease_id)
		return cmd_bad_usage(c->entry, "--lease wants a lease id (gpuctl leases lists them), "
				     "not an empty word");
	if (user && !user_uid(user, &who))
		return cmd_bad_usage(c->entry, "no user '%s'", user);
	if (who != me && me != 0) {
		fprintf(stderr, "gpuctl release: refused: only root may end another user's lease "
			"(%s's)\n", esc_str(user, 0));
		return EXIT_DENIED;
	}
	int rc = cmd_open(c); /* the -g selection, resolved as by every command */
	if (rc != EXIT_OK)
		return rc;
	const char *ids = c->gpus;
	struct gpu_set *set = c->set;
	struct gpu_error err = {0};
	struct leaseview v;
	if (!leaseview_load(&v, &err)) {
		fprintf(stderr, "gpuctl release: %s\n", err.msg);
		return err.code;
	}
	size_t ended = 0;
	for (size_t i = 0; i < v.nleases; i++) {
		const struct lease_info *l = &v.leases[i];
		if (ids && !names_gpu(l, set))
			continue;
		if (lease_id && strcmp(l->id, lease_id))
			continue;
		if (l->uid != who) {
			if ((ids || lease_id) && !user) {
				fprintf(stderr, "gpuctl release: refused: %s belongs to %s (pid %d); "
					"only %s%s can end it\n", named(ids, lease_id), esc_str(l->user, 1), (int)l->pid,
					esc_str(l->user, 2), me == 0 ? " (root: name the user with --user)"
					: " or root");
				rc = EXIT_DENIED;
			}
			continue;
		}
		if (strcmp(l->kind, "env")) {
			pid_t live[1];
			size_t nlive;
			if ((ids || lease_id) && leaseview_holder_alive(l)) {
				fprintf(stderr, "gpuctl release: %s belongs to a running job (pid %d: "
					"%s); it ends when the job does (`gpuctl kill --pid %d` ends the job)\n",
					named(ids, lease_id), (int)l->pid, esc_str(l->command ? l->command : "", 1),
					(int)l->pid);
				rc = EXIT_DENIED;
			} else if ((ids || lease_id) && (nlive = leaseview_live_holders(l, live, 1))) {
				/* The job's own process has exited: a dead pid is not "a running job". */
				fprintf(stderr, "gpuctl release: %s belongs to a job whose process (pid %d: "
					"%s) has exited; pid %d%s still holds it, and it ends when %s (`gpuctl "
					"kill --pid %d`)\n", named(ids, lease_id), (int)l->pid,
					esc_str(l->command ? l->command : "", 1), (int)live[0], nlive > 1 ?
					" and others it started," : ", which it started,", nlive > 1 ? "they do"
					: "that process does", (int)live[0]);
				rc = EXIT_DENIED;
			} else if (ids || lease_id) {
				fprintf(stderr, "gpuctl release: %s belongs to a job whose process (pid %d: "
					"%s) has exited; a process it started still holds it, and it ends when "
					"that process does\n", named(ids, lease_id), (int)l->pid,
					esc_str(l->command ? l->command : "", 1));
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
		fprintf(stderr, "gpuctl release: no env lease %s%sof %s to release%s%s%s\n",
			lease_id ? esc_str(lease_id, 2) : "", lease_id ? " " : "",
			user ? esc_str(user, 0) : "yours", ids ? " on " : "", ids ? esc_str(ids, 1) : "",
			v.present ? (lease_id ? " (it has ended, or never was)" : "") : " (no gpuctl daemon is running)");
	leaseview_free(&v);
	return rc;
}

static const struct option longopts[] = {
	{"gpu", required_argument, NULL, 'g'}, {"user", required_argument, NULL, O_USER},
	{"format", required_argument, NULL, O_FORMAT}, {"lease", required_argument, NULL, O_LEASE}, {0},
};

const struct cmd_entry cmd_release_entry = {
	.name = "release",
	.summary = "end your `gpuctl env` leases",
	.usage = "release [--gpus LIST] [--lease ID] [--user NAME] [--format sh|fish]\n\n"
		 "End your own env leases (all, those on the GPUs listed, or the one named by its id,\n"
		 "$GPUCTL_LEASE_ID in the shell it was leased for). Another user's lease is\n"
		 "refused (exit 12) unless you are root and name the user with --user; a run lease ends\n"
		 "with its job. `release` is never abbreviated. When this shell exports a lease it ends,\n"
		 "release says how to clean the shell; with --format it prints those commands instead:\n"
		 "    eval \"$(gpuctl release --format=sh)\"\n\n"
		 CMD_GPUS_HELP
		 "      --gpu LIST             the same (its older spelling)\n"
		 "  -l, --lease ID             only the lease with this id (as `gpuctl leases` shows it)\n"
		 "  -u, --user NAME            root: end NAME's env leases\n"
		 "  -f, --format sh|fish       print the commands that clean this shell\n",
	.args = {.shorts = "u:f:l:", .longs = longopts},
	.flags = CMD_GPUS | CMD_NO_PREFIX,
	.exec = release,
};
