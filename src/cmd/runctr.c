/* runctr.c: run's containers (the design is runctr.h's): the user's words judged (runctr_check;
 * runctr-words.c reads them), the lease's devices and variables added in each runtime's
 * syntax, and a detached container bound to the lease. */
#include "cmd/runctr.h"
#include "base/exec.h"
#include "lease/grant.h"
#include "machine/container.h"
#include "machine/pid.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool runctr_check(const struct runctr *rc, char *why, size_t len)
{
	if (rc->user_gpus && rc->gpus_var) {
		snprintf(why, len, "the command names GPUs itself (%s in %.200s): gpuctl gives the "
			 "container the lease's GPUs; leave %s out of that file", rc->gpus_var,
			 rc->gpus_file, rc->gpus_var);
		return false;
	}
	if (rc->user_gpus) {
		const char *v = rc->user_gpus_val;
		snprintf(why, len, "the command names GPUs itself (%s%s%.200s): gpuctl gives the container "
			 "the lease's GPUs; leave it out", rc->user_gpus, v ? " " : "", v ? v : "");
		return false;
	}
	if (rc->all_nodes) {   /* review 2 follow-up: see exposes() */
		snprintf(why, len, "%s gives the container %s: every GPU's device node, past the lease. "
			 "Leave it out: gpuctl gives the container the lease's GPUs (for other devices "
			 "use --device /dev/NAME, for privileges --cap-add, and mount only the paths "
			 "needed, e.g. -v /dev/shm:/dev/shm)", rc->all_nodes, rc->all_why);
		return false;
	}
	return true;
}

char **runctr_argv(struct runctr *rc, char **argv, const struct grant *g, char *why, size_t len)
{
	if (!runctr_check(rc, why, len))
		return NULL;
	size_t argc = 0;
	while (argv[argc])
		argc++;
	/* The lease's variables, as the container should see them (uuid form: the host's
	 * ordinals mean nothing inside), each an -e of ours; not the profile's (the last ones):
	 * those are for the client, as for any job. Docker's --gpus sets NVIDIA_VISIBLE_DEVICES
	 * itself; podman's CDI devices do not, and an OCI hook of the NVIDIA runtime reads it. */
	char **env = grant_env(g, true);
	size_t nenv = 0, nprof = 0;
	while (env[nenv])
		nenv++;
	while (g->profile_env && g->profile_env[nprof])
		nprof++;
	nenv = nenv >= nprof ? nenv - nprof : 0;
	char **out = xcalloc(argc + 2 * (g->n + nenv) + 6, sizeof *out);
	size_t k = 0;
	rc->owned = 0;
	for (size_t i = 0; i <= rc->run_at; i++)
		out[k++] = argv[i];
	struct strbuf sb = {0};
	/* review 2: a MIG lease names its instance (the NVIDIA toolkit and its CDI specs take MIG
	 * UUIDs): its parent GPU would give the container every instance on it, others' too */
	const char *mig = g->mig_uuid[0] ? g->mig_uuid : NULL;
	size_t ndev = mig ? 1 : g->n;
	if (rc->kind == RUNCTR_DOCKER) {
		sb_adds(&sb, "\"device=");
		for (size_t i = 0; i < ndev; i++)
			sb_addf(&sb, "%s%s", i ? "," : "", mig ? mig : g->set->gpus[g->pos[i]].uuid);
		sb_adds(&sb, "\"");
		out[k++] = "--gpus";
		out[k++] = sb.buf;   /* freed by runctr_argv_free, as every owned pair */
		rc->owned++;
	} else {
		for (size_t i = 0; i < ndev; i++) {
			out[k++] = "--device";
			out[k++] = xasprintf("nvidia.com/gpu=%s", mig ? mig : g->set->gpus[g->pos[i]].uuid);
			rc->owned++;
		}
	}
	for (size_t i = 0; env[i]; i++) {
		if (i < nenv && !(rc->kind == RUNCTR_DOCKER && !strncmp(env[i], "NVIDIA_VISIBLE_DEVICES=", 23))) {
			out[k++] = "-e";
			out[k++] = env[i];
			rc->owned++;
		} else {
			free(env[i]);
		}
	}
	free(env);
	if (!rc->cidfile) {
		const char *tmp = getenv("TMPDIR");
		snprintf(rc->dir, sizeof rc->dir, "%s/gpuctl-cid.XXXXXX",
			 tmp && *tmp && strlen(tmp) < 40 ? tmp : "/tmp");
		if (!mkdtemp(rc->dir)) {
			snprintf(why, len, "cannot make a directory for the container's id (%s): %s", rc->dir,
				 strerror(errno));
			rc->dir[0] = '\0';
			runctr_argv_free(rc, out);
			return NULL;
		}
		snprintf(rc->path, sizeof rc->path, "%s/cid", rc->dir);
		rc->cidfile = rc->path;
		out[k++] = "--cidfile";
		out[k++] = rc->path;
	}
	for (size_t i = rc->run_at + 1; i < argc; i++)
		out[k++] = argv[i];
	out[k] = NULL;
	return out;
}

void runctr_argv_free(struct runctr *rc, char **argv)
{
	if (!argv)
		return;
	for (size_t j = 0; j < rc->owned; j++)
		free(argv[rc->run_at + 2 + 2 * j]);
	free(argv);
}

void runctr_cleanup(struct runctr *rc)
{
	if (rc->dir[0]) {
		unlink(rc->path);
		rmdir(rc->dir);
		rc->dir[0] = '\0';
	}
}

/* The container's id from the cidfile: 64 hex digits. */
static bool read_cid(const char *path, char id[CTR_ID_LEN + 1])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	char buf[128];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < CTR_ID_LEN)
		return false;
	for (int i = 0; i < CTR_ID_LEN; i++)
		if (!((buf[i] >= '0' && buf[i] <= '9') || (buf[i] >= 'a' && buf[i] <= 'f')))
			return false;
	memcpy(id, buf, CTR_ID_LEN);
	id[CTR_ID_LEN] = '\0';
	return n == CTR_ID_LEN || buf[CTR_ID_LEN] == '\n';
}

/* How long the holder waits for the daemon to take its commit. No job waits on it (the
 * container runs already), and `gpuctl run` returns once it has: a loaded daemon that answers
 * in two seconds still has `gpuctl leases` name the container straight after. */
#define COMMIT_WAIT 5

/* The holder: the lease's descriptors, bound to the container's init through a pidfd. */
static void hold(struct grant *g, int pfd, pid_t init, int ready)
{
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0), dup2(null, 1), dup2(null, 2);
		if (null > 2)
			close(null);
	}
	setsid();
	if (chdir("/") != 0)
		_exit(1);
	signal(SIGHUP, SIG_IGN);
	grant_hold(g, init, COMMIT_WAIT);
	/* Committed (or the daemon did not answer in time): `gpuctl run` may return now, and a
	 * `gpuctl leases` after it names the container. */
	close(ready);
	struct pollfd p = {.fd = pfd, .events = POLLIN};
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	_exit(0); /* the lease ends with this process's descriptors: the container stopped */
}

bool runctr_bind(struct runctr *rc, char **argv, struct grant *g, bool quiet, char *why, size_t len)
{
	char id[CTR_ID_LEN + 1];
	bool ok = rc->cidfile && read_cid(rc->cidfile, id);
	runctr_cleanup(rc);
	if (!ok) {
		if (rc->detached)
			snprintf(why, len, "the client wrote no container id to %s",
				 rc->cidfile ? rc->cidfile : "a cidfile");
		return false;
	}
	/* The client as the user ran it, with its global flags (context, host): only "inspect". */
	const char *av[64];
	size_t n = 0;
	for (size_t i = 0; i < rc->run_at && n < 58; i++)
		av[n++] = argv[i];
	if (n && !strcmp(av[n - 1], "container"))
		n--;
	av[n++] = "inspect";
	av[n++] = "--format";
	av[n++] = "{{.State.Pid}}";
	av[n++] = id;
	av[n] = NULL;
	struct strbuf out = {0}, err = {0};
	int rcode = exec_run(av, 10, "is the container runtime answering?", &out, &err);
	unsigned long pid = 0;
	if (out.buf)
		out.buf[strcspn(out.buf, "\n")] = '\0';
	ok = rcode == 0 && out.buf && parse_uint(out.buf, &pid) && pid > 1 && pid < 0x7FFFFFFF;
	/* A foreground container that ended with its client (or was removed: --rm) is the usual
	 * case, not an error: the lease simply ends. */
	if (!ok && rc->detached)
		snprintf(why, len, "`%s inspect` gave no running process for container %.12s: %s", argv[0], id,
			 err.buf && *err.buf ? err.buf : out.buf ? out.buf : "no answer");
	sb_free(&out);
	sb_free(&err);
	if (!ok)
		return false;
	/* The pidfd first, then the kernel's word that it is in that container: a pid reused
	 * since inspect answered is not in it. */
	int pfd = pid_open((unsigned)pid, 0);
	char path[64];
	snprintf(path, sizeof path, "/proc/%lu/cgroup", pid);
	char *text = pfd >= 0 ? read_file(path, NULL) : NULL;
	struct ctr_ref r;
	ok = text && ctr_from_cgroup(text, &r) && !strcmp(r.id, id);
	free(text);
	if (!ok) {
		snprintf(why, len, "process %lu is not in container %.12s by its cgroup (%s)", pid, id,
			 pfd < 0 ? strerror(errno) : "another cgroup");
		if (pfd >= 0)
			close(pfd);
		return false;
	}
	int ready[2];
	if (pipe2(ready, O_CLOEXEC) < 0) {
		snprintf(why, len, "pipe: %s", strerror(errno));
		close(pfd);
		return false;
	}
	fflush(NULL);
	pid_t h = fork();
	if (h < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		close(pfd);
		close(ready[0]), close(ready[1]);
		return false;
	}
	if (h == 0) {
		close(ready[0]);
		hold(g, pfd, (pid_t)pid, ready[1]);
	}
	close(pfd);
	close(ready[1]);
	/* Until the holder has told the daemon whom the lease is bound to: its commit waits
	 * COMMIT_WAIT at most for the answer, after starting a private daemon again where the last
	 * one lingered out (up to about 12 s: client.c's SPAWN_SECONDS and its connects); never
	 * forever. The lease holds regardless: only `gpuctl leases` naming it waits on this. */
	struct pollfd rp = {.fd = ready[0], .events = POLLIN};
	double until = now_mono() + COMMIT_WAIT + 14;
	for (double left; (left = until - now_mono()) > 0;)
		if (poll(&rp, 1, (int)(left * 1000) + 1) >= 0 || errno != EINTR)
			break;
	close(ready[0]);
	if (!quiet)
		fprintf(stderr, "gpuctl run: lease %s is held by container %.12s (its process %lu) until it "
			"stops, or `gpuctl release --lease %s`\n", g->id, id, pid, g->id);
	return true;
}
