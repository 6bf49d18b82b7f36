/* exec.c: a granted job started, and its end (design: runner.h).
 *
 * Starting: what to run (ID.spec), the log opened by the runner (so a log that cannot be
 * written fails the job with the reason, before anything runs), the record marked running before
 * the fork (a runner that dies at this point leaves a job that ran at most once), then the child:
 * a session of its own, the submit's directory, umask and environment with the lease's
 * variables, stdin /dev/null, stdout and stderr to the log, the lease committed (grant_hold),
 * exec. A child that cannot exec says why through a pipe, and in the log, and exits 127 (not
 * found) or 126. Ending: the exit status through the pidfd (waitid P_PIDFD), the record, a
 * retry if any are left, and a warning when the log's filesystem is full. */
#include "runner/runner.h"
#include "machine/pid.h"
#include "lease/bind.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* What a child that could not exec tells the runner. */
struct exec_fail {
	int stage;                   /* 1: chdir, 2: exec */
	int err;
};

static const char *const replaced[] = {
	"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES", "GPUCTL_LEASE_ID",
	"GPUCTL_LEASE_GPUS", "GPUCTL_LEASE_NAME", "GPUCTL_QUEUED_AT", "GPUCTL_LEASED_AT",
	"GPUCTL_JOB_ID",
};

/* The submit's environment, less what the lease sets, plus the lease's variables. The strings
 * of lease and job point into their owners. */
static char **job_environ(char **env, char **lease, char *job)
{
	size_t n = 0, k = 0;
	while (env[n])
		n++;
	for (char **p = lease; *p; p++)
		n++;
	char **out = xcalloc(n + 2, sizeof *out);
	for (char **p = env; *p; p++) {
		bool drop = false;
		for (size_t i = 0; i < ARRAY_SIZE(replaced) && !drop; i++) {
			size_t l = strlen(replaced[i]);
			drop = !strncmp(*p, replaced[i], l) && (*p)[l] == '=';
		}
		if (!drop)
			out[k++] = *p;
	}
	for (char **p = lease; *p; p++)
		out[k++] = *p;
	out[k++] = job;
	return out;
}

static void fail_now(struct runner *r, struct rjob *rj, const char *fmt, ...) PRINTF(3, 4);
static void fail_now(struct runner *r, struct rjob *rj, const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	free(rj->j.reason);
	rj->j.reason = xstrdup(text);
	rj->j.state = JOB_FAILED;
	rjob_finish(r, rj);
}

static int open_log(struct runner *r, const struct job *j)
{
	if (j->own_log) {
		char name[40];
		snprintf(name, sizeof name, "%llu.log", (unsigned long long)j->id);
		return openat(r->dirfd, name, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	return job_log_create(j->log, j->umask);
}

static bool disk_full(int fd)
{
	struct statvfs vs;
	return fstatvfs(fd, &vs) == 0 && vs.f_bavail == 0 && vs.f_blocks > 0;
}

static void NORETURN child(const struct job *j, struct grant *g, char **argv, char **envp,
			   int logfd, int errfd)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	setsid();
	struct exec_fail f = {0};
	int null = open("/dev/null", O_RDWR);
	dup2(null >= 0 ? null : logfd, 0);
	dup2(logfd, 1);
	dup2(logfd, 2);
	if (chdir(j->cwd) != 0) {
		f = (struct exec_fail){1, errno};
		fprintf(stderr, "gpuctl: job %llu: cannot enter the directory %s: %s\n",
			(unsigned long long)j->id, j->cwd, strerror(f.err));
		(void)!write(errfd, &f, sizeof f);
		_exit(EXIT_CANNOT_RUN);
	}
	umask((mode_t)j->umask);
	if (j->bind_cpus) {   /* issue 26: into the log, as run says it on stderr */
		struct cpuset set;
		char msg[1024];
		int e = 0;
		if (grant_bind_plan(g, &set, msg, sizeof msg) == BIND_NARROW && (e = grant_bind_apply(&set)))
			snprintf(msg, sizeof msg, "--bind-cpus: sched_setaffinity: %s; the job runs unbound",
				 strerror(e));
		fprintf(stderr, "gpuctl: job %llu: %s\n", (unsigned long long)j->id, msg);
	}
	grant_hold(g, 0, 1);
	environ = envp;
	execvp(argv[0], argv);
	f = (struct exec_fail){2, errno};
	fprintf(stderr, "gpuctl: job %llu: cannot run '%s': %s\n", (unsigned long long)j->id, argv[0],
		strerror(f.err));
	(void)!write(errfd, &f, sizeof f);
	_exit(f.err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
}

static void watch(struct runner *r, struct rjob *rj)
{
	peer_watch(&r->loop, rj->pidfd, rj);
}

void rjob_start(struct runner *r, struct rjob *rj, struct grant *g)
{
	struct job *j = &rj->j;
	struct strbuf spec = {0};
	char **argv = NULL, **env = NULL, why[200];
	if (!rjob_read_spec(r, j->id, &spec) || !spec_parse(spec.buf, spec.len, &argv, &env, why,
							     sizeof why)) {
		grant_free(g);
		sb_free(&spec);
		fail_now(r, rj, "what to run (%s/%llu.spec) is missing or unreadable; nothing was run",
			 r->dir, (unsigned long long)j->id);
		return;
	}
	int logfd = open_log(r, j);
	if (logfd < 0 || disk_full(logfd)) {
		int e = errno;
		grant_free(g);
		sb_free(&spec);
		free(argv);
		free(env);
		if (logfd >= 0) {
			close(logfd);
			fail_now(r, rj, "the filesystem of its log %s is full; nothing was run (free some "
				 "space, then `gpuctl submit --again %llu`)", j->log,
				 (unsigned long long)j->id);
		} else {
			fail_now(r, rj, "cannot open its log %s: %s; nothing was run", j->log, job_log_error(e));
		}
		return;
	}
	if (j->attempt > 1)
		dprintf(logfd, "gpuctl: job %llu, attempt %u of %u\n", (unsigned long long)j->id, j->attempt,
			j->retries + 1);
	/* What it was given, recorded before it runs: a runner that dies now leaves a job that
	 * ran at most once (the next runner calls it lost, never starts it again). */
	j->state = JOB_RUNNING;
	j->started = job_now_ns();
	j->queued_at = g->queued_at;
	j->ended = 0;
	j->exit_code = -1;
	j->signal = 0;
	j->pid = 0;
	j->ngpus = (unsigned)g->n;
	free(j->uuids);
	j->uuids = xcalloc(g->n + 1, sizeof *j->uuids);
	for (size_t i = 0; i < g->n; i++) {
		j->gpus[i] = g->set->gpus[g->pos[i]].index;
		snprintf(j->uuids[i], sizeof *j->uuids, "%s", g->set->gpus[g->pos[i]].uuid);
	}
	snprintf(j->lease, sizeof j->lease, "%s", g->id);
	rj->share_stop = g->mem_mib && g->stop_over; /* memory shares (issue 23) */
	rj->share_over = false;
	j->ticket[0] = '\0';
	/* time limits (issue 24): SIGTERM at the lease's end, SIGKILL its grace later (job.c) */
	rj->limit_at = 0;
	rj->timed_out = false;
	rj->idle_released = false;
	rj->near_said = false;
	snprintf(rj->token, sizeof rj->token, "%s", g->token); /* idle leases: to watch it */
	if (g->until_ns) {
		uint64_t now = job_now_ns();
		rj->limit_at = r->now + (g->until_ns > now ? (double)(g->until_ns - now) / 1e9 : 0);
		rj->grace = g->grace;
	}
	rjob_save(r, rj);
	char **lease = grant_env(g, j->uuid);
	char *idvar = xasprintf("GPUCTL_JOB_ID=%llu", (unsigned long long)j->id);
	char **envp = job_environ(env, lease, idvar);
	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) != 0)
		die(EXIT_FAIL, "pipe: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		child(j, g, argv, envp, logfd, errpipe[1]);
	close(errpipe[1]);
	grant_free(g); /* the job holds the lease now */
	free(envp);
	free(idvar);
	grant_env_free(lease);
	free(argv);
	free(env);
	sb_free(&spec);
	if (pid < 0) {
		close(errpipe[0]);
		close(logfd);
		fail_now(r, rj, "cannot start it: fork: %s", strerror(errno));
		return;
	}
	struct pid_stat st;
	j->pid = pid;
	j->pid_start = pid_stat((unsigned)pid, &st) ? st.start : 0;
	rj->pidfd = pid_open((unsigned)pid, 0);
	rj->child = true;
	rj->logfd = logfd;
	rj->errpipe = errpipe[0];
	rjob_save(r, rj);
	watch(r, rj);
	if (j->lease[0]) { /* idle leases (issue 24): the daemon tells us of its lease */
		struct strbuf wm = {0};
		rjob_watch_message(rj, &wm);
		runner_daemon_send(r, &wm);
		sb_free(&wm);
	}
	struct strbuf gpus = {0};
	for (size_t i = 0; i < j->ngpus; i++)
		sb_addf(&gpus, "%s%u", i ? "," : "", j->gpus[i]);
	fprintf(stderr, "gpuctl runner: job %llu started: pid %d on GPU %s (lease %s)\n",
		(unsigned long long)j->id, (int)pid, gpus.buf, j->lease);
	sb_free(&gpus);
}

void rjob_adopt(struct runner *r, struct rjob *rj)
{
	rj->pidfd = rj->j.pid > 0 ? pid_open((unsigned)rj->j.pid, rj->j.pid_start) : -1;
	if (rj->pidfd < 0) {
		rj->j.state = JOB_LOST;
		free(rj->j.reason);
		rj->j.reason = xstrdup(rj->j.pid > 0 ? "it ended while no runner watched it (the runner "
				       "had stopped): its exit status is unknown"
				     : "the runner stopped while starting it: it may not have run");
		rjob_finish(r, rj);
		return;
	}
	fprintf(stderr, "gpuctl runner: job %llu still runs (pid %d): watching it again\n",
		(unsigned long long)rj->j.id, (int)rj->j.pid);
	watch(r, rj);
}

void rjob_exited(struct runner *r, struct rjob *rj)
{
	struct job *j = &rj->j;
	siginfo_t si = {0};
	if (rj->child && (waitid(P_PIDFD, (id_t)rj->pidfd, &si, WEXITED | WNOHANG) != 0 || !si.si_pid))
		return; /* not yet (a spurious wake-up) */
	peer_unwatch(&r->loop, rj->pidfd);
	close(rj->pidfd);
	rj->pidfd = -1;
	j->ended = job_now_ns();
	bool cannot_run = false;
	if (!rj->child) {
		/* Not ours to reap: how it ended is its parent's to know (init, now). */
		j->state = rj->cancelling ? JOB_CANCELLED : JOB_LOST;
		free(j->reason);
		j->reason = xstrdup(rj->cancelling ? "cancelled while running (`gpuctl cancel`); its exit "
				    "status is unknown (the runner that started it had stopped)"
				    : "its exit status is unknown: the runner that started it had stopped "
				    "(it was watched again, but only its parent can read how it ended)");
	} else {
		if (si.si_code == CLD_EXITED)
			j->exit_code = si.si_status;
		else
			j->signal = si.si_status;
		struct exec_fail f;
		if (read(rj->errpipe, &f, sizeof f) == sizeof f) {
			free(j->reason);
			if (f.stage == 1)
				j->reason = xasprintf("cannot enter the directory %s: %s", j->cwd,
						      strerror(f.err));
			else
				j->reason = xasprintf("cannot run '%.*s': %s", (int)strcspn(j->command, " "),
						      j->command, strerror(f.err));
			cannot_run = true;
		}
		j->state = rj->cancelling ? JOB_CANCELLED : j->exit_code == 0 ? JOB_DONE : JOB_FAILED;
		if (rj->timed_out && !rj->cancelling) { /* time limits (issue 24) */
			j->state = JOB_FAILED;
			free(j->reason);
			if (rj->idle_released)
				j->reason = xasprintf("its lease was released for idleness (the daemon's "
						      "idle_release): SIGTERM%s",
						      j->signal == SIGKILL ? ", then SIGKILL" : "");
			else
				j->reason = xasprintf("reached its time limit (%llu s): SIGTERM%s",
						      (unsigned long long)(j->time_ms ? j->time_ms / 1000 : 0),
						      j->signal == SIGKILL ? ", then SIGKILL" : "");
			cannot_run = true; /* not retried: it would reach the limit again */
		}
		if (rj->cancelling) {
			free(j->reason);
			j->reason = xstrdup("cancelled while running (`gpuctl cancel`)");
		}
		if (rj->share_over) { /* memory shares (issue 23) */
			j->state = JOB_FAILED;
			free(j->reason);
			j->reason = xstrdup("stopped: its processes used more of a GPU's memory than its "
					    "share (--mem) claims, and the administrator's share_overuse "
					    "is stop");
		}
	}
	if (rj->logfd >= 0 && disk_full(rj->logfd)) {
		free(j->warning);
		j->warning = xasprintf("the filesystem of its log %s was full when it ended: output "
				       "written after it filled up was lost", j->log);
	}
	int fds[] = {rj->logfd, rj->errpipe};
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	rj->logfd = rj->errpipe = -1;
	if (j->state == JOB_FAILED && !cannot_run && j->attempt <= j->retries) {
		char h[64];
		if (j->exit_code >= 0)
			snprintf(h, sizeof h, "exit status %d", j->exit_code);
		else
			snprintf(h, sizeof h, "signal %d", j->signal);
		fprintf(stderr, "gpuctl runner: job %llu, attempt %u of %u ended with %s: queued again\n",
			(unsigned long long)j->id, j->attempt, j->retries + 1, h);
		free(j->reason);
		j->reason = xasprintf("attempt %u ended with %s", j->attempt, h);
		j->attempt++;
		j->state = JOB_QUEUED;
		j->exit_code = -1;
		j->signal = 0;
		j->pid = 0;
		j->started = j->ended = 0;
		rjob_save(r, rj);
		rjob_request(r, rj);
		return;
	}
	if (j->state == JOB_FAILED && !cannot_run && j->attempt > 1) {
		free(j->reason);
		j->reason = xasprintf("all %u attempts failed", j->attempt);
	}
	rjob_finish(r, rj);
}
