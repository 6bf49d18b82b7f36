/* hook.c: the notify hook of a `run` or `env` lease (see hook.h). [defaults] notify (or
 * `--notify CMD` on run and env) runs as the user, from the user's own gpuctl process (run's,
 * or env's holder), never the daemon, when the daemon warns the lease idle (idle-warn) or
 * releases it for idleness (idle-release), when it nears its time limit (time-near: a tenth of
 * the limit before, 5 min at most, as the runner's hooks), and, for a `run --notify CMD`, when
 * the job ends (done, failed). [defaults] notify alone does not run at every `run`'s end: a
 * hook set for submitted jobs would fire at each interactive command. The environment is the
 * runner's (GPUCTL_EVENT, GPUCTL_JOB_ID empty, GPUCTL_JOB_NAME the lease's name,
 * GPUCTL_JOB_STATE, GPUCTL_EXIT_CODE, GPUCTL_GPUS) plus GPUCTL_LEASE_ID and GPUCTL_LEASE_KIND.
 * Bounded like the runner's: each hook runs in its own process group under a watcher of its
 * own (double fork: the caller waits for nothing and keeps no zombie), which kills the group
 * past notify_timeout; events are the daemon's (one warning per idle spell) and the lease's own,
 * a handful per lease. */
#include "lease/hook.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void lhook_init(struct lhook *h, const struct grant *g, const char *kind, const char *cmd,
		double timeout, bool job_events)
{
	*h = (struct lhook){.cmd = cmd && *cmd ? xstrdup(cmd) : NULL, .timeout = timeout > 0 ? timeout : 30,
			    .job_events = job_events, .until_ns = g->until_ns};
	if (g->until_ns > g->leased_at && g->leased_at)
		h->limit = (double)(g->until_ns - g->leased_at) / 1e9;
	snprintf(h->kind, sizeof h->kind, "%s", kind);
	snprintf(h->id, sizeof h->id, "%s", g->id);
	snprintf(h->name, sizeof h->name, "%s", g->name ? g->name : "");
	size_t k = 0;
	for (size_t i = 0; i < g->n && g->set && k + 5 < sizeof h->gpus; i++)
		k += (size_t)snprintf(h->gpus + k, sizeof h->gpus - k, "%s%u", i ? "," : "",
				      g->set->gpus[g->pos[i]].index);
}

void lhook_free(struct lhook *h)
{
	free(h->cmd);
	h->cmd = NULL;
}

static void NORETURN hook_exec(const struct lhook *h, const char *event, const char *state, int code)
{
	setsid(); /* its own group: killed with whatever it started */
	int null = open("/dev/null", O_RDONLY);
	if (null >= 0) {
		dup2(null, 0);
		close(null);
	}
	dup2(2, 1); /* where the lease's own messages go */
	char num[16] = "";
	if (code >= 0)
		snprintf(num, sizeof num, "%d", code);
	setenv("GPUCTL_EVENT", event, 1);
	setenv("GPUCTL_JOB_ID", "", 1);
	setenv("GPUCTL_JOB_NAME", h->name, 1);
	setenv("GPUCTL_JOB_STATE", state, 1);
	setenv("GPUCTL_EXIT_CODE", num, 1);
	setenv("GPUCTL_GPUS", h->gpus, 1);
	setenv("GPUCTL_LEASE_ID", h->id, 1);
	setenv("GPUCTL_LEASE_KIND", h->kind, 1);
	execl("/bin/sh", "sh", "-c", h->cmd, (char *)NULL);
	_exit(127);
}

/* The watcher: runs the hook, kills its group past the timeout, says so on stderr. */
static void NORETURN watch_hook(const struct lhook *h, const char *event, const char *state, int code)
{
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "gpuctl %s: cannot run the notify hook: fork: %s\n", h->kind, strerror(errno));
		_exit(1);
	}
	if (pid == 0)
		hook_exec(h, event, state, code);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int status;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >= h->timeout) {
			fprintf(stderr, "gpuctl %s: lease %s: notify hook for '%s' still ran after its "
				"timeout (notify_timeout): killed\n", h->kind, h->id, event);
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			_exit(1);
		}
		poll(NULL, 0, 50); /* (only this watcher waits: the lease's process goes on) */
	}
	if (WIFEXITED(status) && WEXITSTATUS(status))
		fprintf(stderr, "gpuctl %s: lease %s: notify hook for '%s' failed (exit status %d)\n",
			h->kind, h->id, event, WEXITSTATUS(status));
	_exit(0);
}

void lhook_fire(const struct lhook *h, const char *event, const char *state, int exit_code)
{
	if (!h->cmd)
		return;
	fflush(NULL);
	pid_t mid = fork();
	if (mid < 0) {
		fprintf(stderr, "gpuctl %s: cannot run the notify hook: fork: %s\n", h->kind, strerror(errno));
		return;
	}
	if (mid == 0) {
		/* Out of the caller's session and handlers (run forwards signals to its job): a
		 * Ctrl-C or hang-up at run's terminal is the job's, not the hook's. */
		static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};
		for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
			signal(sigs[i], SIG_DFL);
		setsid();
		if (fork() == 0) /* the watcher, reparented: nobody waits for it */
			watch_hook(h, event, state, exit_code);
		_exit(0);
	}
	while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
		;
}

int lhook_near_ms(const struct lhook *h)
{
	if (!h->cmd || h->near_said || !h->until_ns || h->limit <= 0)
		return -1;
	double near = h->limit / 10 < 300 ? h->limit / 10 : 300;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	double now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, at = (double)h->until_ns / 1e9 - near;
	return now >= at ? 0 : at - now > 1e6 ? 1000000000 : (int)((at - now) * 1000) + 1;
}

void lhook_near(struct lhook *h)
{
	if (lhook_near_ms(h) == 0) {
		h->near_said = true;
		lhook_fire(h, "time-near", "running", -1);
	}
}
