/* exec.c: running a tool with an argv (no shell), its output collected and its time bounded; the
 * caller's stop signals end the tool first (see exec.h). */
#include "base/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* A signal that would end gpuctl (Ctrl-C, SIGTERM, SIGHUP) while a tool runs: the tool's process
 * group is killed first, then the signal is raised again with the disposition gpuctl had. */
static volatile sig_atomic_t stop_sig;
static const int stop_sigs[] = {SIGINT, SIGTERM, SIGHUP};

static void on_stop(int sig)
{
	stop_sig = sig;
}

static void child(const char *const *argv, char *const *envp, int in, int out, int errfd)
{
	/* A process group of its own: a tool that forks leaves nothing behind when it is killed.
	 * The signals gpuctl caught are back to their defaults after exec; those it ignored (nohup)
	 * stay ignored, as they were before. */
	setpgid(0, 0);
	int null = in >= 0 ? in : open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
		_exit(126);
	execvpe(argv[0], (char *const *)argv, envp ? envp : environ);
	dprintf(2, "cannot run %s: %s", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

int exec_run(const char *const *argv, double timeout_s, const char *hint, struct strbuf *out,
	     struct strbuf *errtext)
{
	return exec_run_full(argv, NULL, NULL, timeout_s, hint, out, errtext);
}

/* Reads the tool's stdout and stderr until both end, then reaps it; all of it by deadline (a tool
 * that closes its output and hangs is as late as one that never writes). 1: reaped, *st set;
 * 0: the deadline passed; -1: a stop signal came (stop_sig). */
static int collect(pid_t pid, int po, int pe, double deadline, struct strbuf *out,
		   struct strbuf *errtext, int *st)
{
	enum { LIMIT = 1 << 20 };
	struct pollfd fds[2] = {{.fd = po, .events = POLLIN}, {.fd = pe, .events = POLLIN}};
	struct strbuf *dst[2] = {out, errtext};
	int rc = 1;
	while (fds[0].fd >= 0 || fds[1].fd >= 0) {
		double left = deadline - now_mono();
		if (stop_sig || left <= 0) {
			rc = stop_sig ? -1 : 0;
			break;
		}
		int r = poll(fds, 2, (int)(left * 1000) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !fds[i].revents)
				continue;
			char buf[4096];
			ssize_t n = read(fds[i].fd, buf, sizeof buf);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				close(fds[i].fd);
				fds[i].fd = -1;
			} else if (dst[i]->len < LIMIT) {
				sb_add(dst[i], buf, (size_t)n);
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (fds[i].fd >= 0)
			close(fds[i].fd);
	if (rc != 1)
		return rc;
	/* Its output has ended; it normally exits at once. Looked for at growing intervals (1 ms
	 * to 20 ms), never past the deadline. */
	for (long ns = 1000000;;) {
		pid_t w = waitpid(pid, st, WNOHANG);
		if (w == pid)
			return 1;
		if (w < 0 && errno != EINTR)
			return 1; /* not our child any more: nothing left to reap */
		if (stop_sig)
			return -1;
		double left = deadline - now_mono();
		if (left <= 0)
			return 0;
		struct timespec ts = {0, left * 1e9 < ns ? (long)(left * 1e9) + 1 : ns};
		nanosleep(&ts, NULL);
		ns = ns * 2 < 20000000 ? ns * 2 : 20000000;
	}
}

int exec_run_full(const char *const *argv, char *const *envp, const char *in, double timeout_s,
		  const char *hint, struct strbuf *out, struct strbuf *errtext)
{
	int po[2], pe[2], pi[2] = {-1, -1};
	if (in && strlen(in) >= PIPE_BUF) {
		errno = E2BIG;
		goto fail;
	}
	/* stdin's text is in the pipe before the child exists: shorter than PIPE_BUF, it fits, and
	 * no write can meet a reader that has gone (SIGPIPE). */
	if (in && (pipe2(pi, O_CLOEXEC) != 0 || write(pi[1], in, strlen(in)) != (ssize_t)strlen(in))) {
		if (pi[0] >= 0) {
			close(pi[0]);
			close(pi[1]);
		}
		goto fail;
	}
	if (pipe2(po, O_CLOEXEC) != 0) {
		if (in) {
			close(pi[0]);
			close(pi[1]);
		}
		goto fail;
	}
	if (pipe2(pe, O_CLOEXEC) != 0) {
		close(po[0]);
		close(po[1]);
		if (in) {
			close(pi[0]);
			close(pi[1]);
		}
		goto fail;
	}
	/* Caught before the fork, so that no stop signal can fall between it and the tool's end;
	 * one that was ignored stays ignored. */
	struct sigaction old[ARRAY_SIZE(stop_sigs)], sa = {.sa_handler = on_stop};
	bool caught[ARRAY_SIZE(stop_sigs)];
	sigemptyset(&sa.sa_mask);
	stop_sig = 0;
	for (size_t i = 0; i < ARRAY_SIZE(stop_sigs); i++) {
		sigaction(stop_sigs[i], NULL, &old[i]);
		caught[i] = old[i].sa_handler != SIG_IGN;
		if (caught[i])
			sigaction(stop_sigs[i], &sa, NULL);
	}
	pid_t pid = fork();
	if (pid == 0)
		child(argv, envp, pi[0], po[1], pe[1]);
	if (pid > 0)
		setpgid(pid, pid); /* as the child does: whichever runs first, the group exists */
	close(po[1]);
	close(pe[1]);
	if (in) {
		close(pi[0]);
		close(pi[1]);
	}
	int st = 0, got = 1;
	if (pid < 0) {
		int e = errno;
		close(po[0]);
		close(pe[0]);
		errno = e;
	} else {
		got = collect(pid, po[0], pe[0], now_mono() + timeout_s, out, errtext, &st);
		if (got != 1) {
			/* The whole group: a tool's own children too. Then it is reaped at once. */
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
		}
	}
	int sig = stop_sig;
	for (size_t i = 0; i < ARRAY_SIZE(stop_sigs); i++)
		if (caught[i])
			sigaction(stop_sigs[i], &old[i], NULL);
	if (sig)
		raise(sig); /* gpuctl's own disposition: it normally ends here */
	if (pid < 0)
		goto fail;
	if (got < 0) {
		sb_addf(errtext, "%s was stopped: %s came", argv[0], strsignal(sig));
		return -1;
	}
	if (got != 1) {
		sb_addf(errtext, "%s did not answer within %.0f s (stopped%s%s)", argv[0], timeout_s,
			hint ? "; " : "", hint ? hint : "");
		return -1;
	}
	/* The child's own word that the exec failed: not found (127), or found but not runnable or
	 * behind a folder it may not search (126: execvp's EACCES, as a PATH with /root in it gives
	 * another user). */
	if (WIFEXITED(st) && (WEXITSTATUS(st) == 127 || WEXITSTATUS(st) == 126) &&
	    strstr(errtext->buf ? errtext->buf : "", "cannot run"))
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
fail:
	sb_addf(errtext, "cannot run %s: %s", argv[0], strerror(errno));
	return -1;
}
