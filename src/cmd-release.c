/* cmd-release.c: `gpuctl release [--gpus LIST]`: end one's own `env` leases. Another user's lease
 * is refused; a `run` lease ends with its job. Never abbreviated: it ends things. */
#include "gpu.h"
#include "gpuctl.h"
#include "leaseview.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Does the lease hold one of the GPUs selected by -g (any, without -g)? */
static bool names_gpu(const struct lease_rec *r, const struct gpu_set *set, const char *ids)
{
	if (!ids)
		return true;
	for (size_t k = 0; k < r->nlocks; k++)
		for (size_t i = 0; i < set->ngpus; i++)
			if (set->gpus[i].selected && !strcmp(set->gpus[i].uuid, r->locks[k].uuid))
				return true;
	return false;
}

static int release(struct cmd *c)
{
	int rc = cmd_open(c); /* the -g selection, resolved as by every command */
	if (rc != EXIT_OK)
		return rc;
	const char *ids = c->gpus;
	struct gpu_set *set = c->set;
	struct gpu_error err = {0};
	struct leaseview v;
	if (!leaseview_load(&v, NULL, &err)) {
		fprintf(stderr, "gpuctl release: %s\n", err.msg);
		return err.code;
	}
	size_t ended = 0;
	uid_t me = getuid();
	for (size_t i = 0; i < v.leases.n; i++) {
		const struct lease_rec *r = &v.leases.recs[i];
		if (!r->live)
			continue;
		if (!names_gpu(r, set, ids))
			continue;
		if (r->uid != me && me != 0) {
			if (ids) {
				fprintf(stderr, "gpuctl release: refused: the lease on %s belongs to %s "
						"(pid %d); only %s or root can end it\n", ids, r->user, (int)r->pid,
					r->user);
				rc = EXIT_DENIED;
			}
			continue;
		}
		if (strcmp(r->kind, "env")) {
			if (ids) {
				fprintf(stderr, "gpuctl release: the lease on %s belongs to a running job "
						"(pid %d: %s); it ends when the job does\n", ids, (int)r->pid,
					r->command ? r->command : "");
				rc = EXIT_DENIED;
			}
			continue;
		}
		if (kill(r->pid, SIGTERM) != 0 && errno != ESRCH) {
			fprintf(stderr, "gpuctl release: cannot signal the holder (pid %d): %s\n", (int)r->pid,
				strerror(errno));
			rc = EXIT_FAIL;
			continue;
		}
		ended++;
		/* Wait (briefly) until the holder has let go, so the next command sees the GPU free. */
		for (int t = 0; t < 200 && kill(r->pid, 0) == 0; t++)
			nanosleep(&(struct timespec){0, 10000000}, NULL);
		printf("released lease %s (%zu GPU%s)\n", r->id, r->nlocks, r->nlocks == 1 ? "" : "s");
	}
	if (!ended && rc == EXIT_OK)
		printf("no env lease of yours to release%s%s\n", ids ? " on " : "", ids ? ids : "");
	leaseview_free(&v);
	return rc;
}

static const struct option longopts[] = {{"gpu", required_argument, NULL, 'g'}, {0}};

const struct cmd_entry cmd_release_entry = {
	.name = "release",
	.summary = "end your `gpuctl env` leases",
	.usage = "release [--gpus LIST]\n\nEnd your own env leases (all, or those on the GPUs listed).\n"
		 "Another user's lease is refused (exit 12); a run lease ends with its job. `release`\n"
		 "is never abbreviated.\n\n"
		 CMD_GPUS_HELP
		 "      --gpu LIST             the same (its older spelling)\n",
	.args = {.longs = longopts},
	.flags = CMD_GPUS | CMD_NO_PREFIX,
	.exec = release,
};
