/* notify.c: a job's notify hook (issue 24; submit --notify CMD, or [defaults] notify): run by the
 * job runner, as the user, never by the daemon, when the job ends (done), fails or is stopped,
 * and when its lease is warned idle or nears its time limit. CMD runs with /bin/sh -c in the
 * job's directory, stdin /dev/null, its output in the runner's log, and the event in its
 * environment: GPUCTL_EVENT (done, failed, stopped, idle-warn, time-near), GPUCTL_JOB_ID,
 * GPUCTL_JOB_NAME, GPUCTL_JOB_STATE, GPUCTL_EXIT_CODE (empty while running; 128+N after signal
 * N), GPUCTL_GPUS (nvidia-smi indices). A hook that runs past [defaults] notify_timeout (30 s)
 * is killed with its process group and logged; hooks are watched on pidfds like jobs, so none
 * ever blocks the queue or the runner. At most NOTIFY_MAX run at once (more are logged and
 * skipped): a job that fails in a loop cannot fork without bound. */
#include "runner/runner.h"
#include "machine/pid.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOTIFY_MAX 32
#define NOTIFY_TIMEOUT 30.0

struct rhook {
	int ev;                      /* REV_HOOK: the epoll tag of pidfd */
	pid_t pid;
	int pidfd;
	double deadline;
	uint64_t job;
	char event[16];
};

static struct rhook *hooks[NOTIFY_MAX];

static void NORETURN hook_child(const struct job *j, const char *event)
{
	setsid(); /* its own group: killed with whatever it started */
	int null = open("/dev/null", O_RDONLY);
	if (null >= 0) {
		dup2(null, 0);
		close(null);
	}
	dup2(2, 1); /* the runner's log */
	if (j->cwd && chdir(j->cwd) != 0 && chdir("/") != 0)
		_exit(126);
	char num[32], gpus[GPU_MAX * 4 + 1] = "";
	size_t k = 0;
	for (unsigned i = 0; i < j->ngpus && k + 5 < sizeof gpus; i++)
		k += (size_t)snprintf(gpus + k, sizeof gpus - k, "%s%u", i ? "," : "", j->gpus[i]);
	setenv("GPUCTL_EVENT", event, 1);
	snprintf(num, sizeof num, "%llu", (unsigned long long)j->id);
	setenv("GPUCTL_JOB_ID", num, 1);
	setenv("GPUCTL_JOB_NAME", j->name ? j->name : "", 1);
	setenv("GPUCTL_JOB_STATE", job_state_name(j->state), 1);
	num[0] = '\0';
	if (j->exit_code >= 0)
		snprintf(num, sizeof num, "%d", j->exit_code);
	else if (j->signal > 0)
		snprintf(num, sizeof num, "%d", 128 + j->signal);
	setenv("GPUCTL_EXIT_CODE", num, 1);
	setenv("GPUCTL_GPUS", gpus, 1);
	execl("/bin/sh", "sh", "-c", j->notify, (char *)NULL);
	_exit(127);
}

void rhook_run(struct runner *r, const struct job *j, const char *event)
{
	if (!j->notify || !*j->notify)
		return;
	size_t k = 0;
	while (k < NOTIFY_MAX && hooks[k])
		k++;
	if (k == NOTIFY_MAX) {
		fprintf(stderr, "gpuctl runner: job %llu: notify hook for '%s' not run: %d hooks run "
			"already\n", (unsigned long long)j->id, event, NOTIFY_MAX);
		return;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "gpuctl runner: job %llu: cannot run its notify hook: fork: %s\n",
			(unsigned long long)j->id, strerror(errno));
		return;
	}
	if (pid == 0)
		hook_child(j, event);
	struct rhook *h = xcalloc(1, sizeof *h);
	double t = r->cfg.notify_timeout > 0 ? r->cfg.notify_timeout : NOTIFY_TIMEOUT;
	*h = (struct rhook){.ev = REV_HOOK, .pid = pid, .pidfd = pid_open((unsigned)pid, 0),
			    .deadline = r->now + t, .job = j->id};
	snprintf(h->event, sizeof h->event, "%s", event);
	hooks[k] = h;
	if (h->pidfd >= 0)
		peer_watch(&r->loop, h->pidfd, h);
	fprintf(stderr, "gpuctl runner: job %llu: notify hook run for '%s' (pid %d)\n",
		(unsigned long long)j->id, event, (int)pid);
}

static void hook_done(struct runner *r, size_t k, int status)
{
	struct rhook *h = hooks[k];
	if (h->pidfd >= 0) {
		peer_unwatch(&r->loop, h->pidfd);
		close(h->pidfd);
	}
	if (status != 0)
		fprintf(stderr, "gpuctl runner: job %llu: notify hook for '%s' failed (%s %d)\n",
			(unsigned long long)h->job, h->event, WIFEXITED(status) ? "exit status" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	free(h);
	hooks[k] = NULL;
}

void rhook_exited(struct runner *r, void *ptr)
{
	for (size_t k = 0; k < NOTIFY_MAX; k++) {
		int status;
		if (hooks[k] == ptr && waitpid(hooks[k]->pid, &status, WNOHANG) == hooks[k]->pid)
			hook_done(r, k, status);
	}
}

bool rhook_pending(void)
{
	for (size_t k = 0; k < NOTIFY_MAX; k++)
		if (hooks[k])
			return true;
	return false;
}

void rhook_timers(struct runner *r, double *next)
{
	for (size_t k = 0; k < NOTIFY_MAX; k++) {
		struct rhook *h = hooks[k];
		if (!h)
			continue;
		int status;
		if (h->pidfd < 0 && waitpid(h->pid, &status, WNOHANG) == h->pid) {
			hook_done(r, k, status); /* no pidfd: looked at here */
			continue;
		}
		if (r->now >= h->deadline) {
			fprintf(stderr, "gpuctl runner: job %llu: notify hook for '%s' still ran after its "
				"timeout (notify_timeout): killed\n", (unsigned long long)h->job, h->event);
			if (h->pidfd >= 0)
				pid_signal(h->pidfd, SIGKILL);
			kill(-h->pid, SIGKILL); /* its group (setsid: the group is its own) */
			h->deadline = r->now + 3600; /* reaped when it exits */
			continue;
		}
		double t = h->pidfd < 0 && h->deadline > r->now + 1 ? r->now + 1 : h->deadline;
		if (!*next || t < *next)
			*next = t;
	}
}
