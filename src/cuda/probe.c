/* probe.c: `gpuctl map --verify` asks the CUDA driver itself. A child process (the internal
 * command `gpuctl cuda-probe`, cmd/cuda-probe.c, exec'd with the environment under test) loads
 * libcuda.so.1, calls cuInit and prints each device's UUID and PCI bus id; this side starts it
 * and reads its answer, which map compares with the model. A child keeps the driver's state out
 * of gpuctl and gives it exactly the environment being explained. */
#include "cuda/probe.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define PROBE_SECONDS 30                  /* cuInit takes seconds at worst (persistence off) */
#define PROBE_MAX_OUTPUT (1024 * 1024)    /* kept of each stream; the rest is read and dropped */

bool probe_uuid_hex(const char *uuid, char out[33])
{
	size_t n = 0;
	if (!uuid || (strncmp(uuid, "GPU-", 4) && strncmp(uuid, "MIG-", 4)))
		return false;
	for (const char *p = uuid + 4; *p && n < 33; p++) {
		if (*p == '-')
			continue;
		if (!isxdigit((unsigned char)*p))
			return false;
		out[n++] = (char)tolower((unsigned char)*p);
	}
	out[n < 33 ? n : 32] = '\0';
	return n == 32;
}

/* The caller's environment with the CUDA variables replaced by those under test (owned[] keeps
 * the two strings this adds, for the caller to free). */
static char **probe_env(const struct proc_env *env, char *owned[2])
{
	size_t n = 0, k = 0;
	while (environ[n])
		n++;
	char **e = xcalloc(n + 3, sizeof *e);
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21) &&
		    strncmp(environ[i], "CUDA_DEVICE_ORDER=", 18))
			e[k++] = environ[i];
	owned[0] = env->cvd ? xasprintf("CUDA_VISIBLE_DEVICES=%s", env->cvd) : NULL;
	owned[1] = env->order ? xasprintf("CUDA_DEVICE_ORDER=%s", env->order) : NULL;
	for (int i = 0; i < 2; i++)
		if (owned[i])
			e[k++] = owned[i];
	return e;
}

int cuda_probe(const struct proc_env *env, struct cuda_dev **devs, char *msg, size_t msglen)
{
	int out[2], err[2];
	*devs = NULL;
	if (pipe(out) || pipe(err)) {
		snprintf(msg, msglen, "pipe: %s", strerror(errno));
		return -1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
	posix_spawn_file_actions_addclose(&fa, out[0]);
	posix_spawn_file_actions_addclose(&fa, err[0]);
	char *argv[] = {"gpuctl", "cuda-probe", NULL};
	char *owned[2];
	char **e = probe_env(env, owned);
	pid_t pid;
	int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, e);
	posix_spawn_file_actions_destroy(&fa);
	free(owned[0]);
	free(owned[1]);
	free(e);
	close(out[1]);
	close(err[1]);
	if (rc) {
		snprintf(msg, msglen, "cannot start the CUDA probe: %s", strerror(rc));
		close(out[0]);
		close(err[0]);
		return -1;
	}
	/* Both pipes at once: a child that fills one while we wait on the other would wait for us
	 * forever (a driver writing pages of warnings to stderr). Bounded in size and in time. */
	struct strbuf so = {0}, se = {0};
	struct pollfd pf[2] = {{.fd = out[0], .events = POLLIN}, {.fd = err[0], .events = POLLIN}};
	struct strbuf *sink[2] = {&so, &se};
	double deadline = now_mono() + PROBE_SECONDS;
	bool late = false;
	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		double left = deadline - now_mono();
		if (left <= 0) {
			late = true;
			kill(pid, SIGKILL);
			break;
		}
		if (poll(pf, 2, (int)(left * 1000) + 1) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			if (pf[i].fd < 0 || !pf[i].revents)
				continue;
			char buf[4096];
			ssize_t r = read(pf[i].fd, buf, sizeof buf);
			if (r > 0 && sink[i]->len < PROBE_MAX_OUTPUT)
				sb_add(sink[i], buf, (size_t)r);
			else if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
				close(pf[i].fd);
				pf[i].fd = -1;
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (pf[i].fd >= 0)
			close(pf[i].fd);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (late) {
		snprintf(msg, msglen, "the CUDA probe (cuInit in a child process) did not answer within "
			 "%d s; the driver may be hung (check `dmesg` and nvidia-smi)", PROBE_SECONDS);
		sb_free(&so);
		sb_free(&se);
		return -1;
	}
	int n = -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !so.buf ||
	    sscanf(so.buf, "count %d", &n) != 1 || n < 0 || n > 4096) {
		snprintf(msg, msglen, "%s", se.buf && *se.buf ? se.buf : "the CUDA probe failed");
		msg[strcspn(msg, "\n")] = '\0';
		n = -1;
	} else {
		*devs = xcalloc((size_t)n + 1, sizeof **devs);
		const char *p = strchr(so.buf, '\n');
		for (int i = 0; i < n && p; i++) {
			int idx;
			if (sscanf(p + 1, "dev %d %32s %31s", &idx, (*devs)[i].uuid_hex, (*devs)[i].pci) != 3)
				break;
			p = strchr(p + 1, '\n');
		}
	}
	sb_free(&so);
	sb_free(&se);
	return n;
}
