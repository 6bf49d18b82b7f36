/* spawn.c: the job started with clone(CLONE_VM | CLONE_VFORK) (design: spawn.h). The child runs
 * on a stack of its own in this process's memory, with every signal blocked until its handlers
 * are reset, and calls nothing that allocates or locks: PATH is searched into a buffer on its
 * stack, the environment and an argv for /bin/sh were built by the parent. */
#include "lease/spawn.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define STACK_BYTES (64 * 1024)    /* a PATH_MAX buffer and a few frames */
#define COMMIT_WAIT_MS 1000        /* a daemon that does not answer delays the job this much */

struct child {
	struct spawn *s;
	char **sh_argv;            /* "/bin/sh", PATH, argv[1..]: a script without #! (ENOEXEC) */
	const char *path;          /* PATH, read by the parent */
	sigset_t mask;             /* the mask to exec with */
};

/* The commit, sent with the job's own credentials (the kernel refuses a pid or uid that is not
 * the sender's unless it is privileged); the answer awaited, whatever it says. */
static void commit(struct spawn *s)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct ucred cr = {.pid = getpid(), .uid = getuid(), .gid = getgid()};
	struct iovec iov = {(void *)s->commit, s->commit_len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof u.buf};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_CREDENTIALS;
	cm->cmsg_len = CMSG_LEN(sizeof cr);
	memcpy(CMSG_DATA(cm), &cr, sizeof cr);
	ssize_t n;
	struct pollfd p = {.fd = s->commit_fd, .events = POLLOUT};
	while ((n = sendmsg(s->commit_fd, &mh, MSG_NOSIGNAL)) < 0 &&
	       (errno == EINTR || (errno == EAGAIN && poll(&p, 1, COMMIT_WAIT_MS) == 1)))
		;
	if (n < 0)
		return; /* the daemon went away: the lease holds regardless (its FIFO) */
	p.events = POLLIN;
	char buf[512];
	while (poll(&p, 1, COMMIT_WAIT_MS) == 1) {
		/* The answer is the next message with id 0 (an error too: the lease is held all the
		 * same); one to a question asked while queued (a `where`, id 1) may come first. */
		n = recv(s->commit_fd, buf, sizeof buf, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return;
		if ((n >= 7 && !memcmp(buf, "ok\nid 0", 7) && (n == 7 || buf[7] == '\n')) ||
		    (n >= 10 && !memcmp(buf, "error\nid 0", 10) && (n == 10 || buf[10] == '\n'))) {
			s->committed = buf[0] == 'o';
			return;
		}
	}
}

static void exec_in_path(struct child *c)
{
	char *const *argv = c->s->argv;
	const char *file = argv[0];
	if (!*file) { /* as execvp: an empty name is not looked up in PATH */
		errno = ENOENT;
		return;
	}
	if (strchr(file, '/')) {
		execve(file, argv, c->s->envp);
		if (errno == ENOEXEC) {
			c->sh_argv[1] = (char *)file;
			execve("/bin/sh", c->sh_argv, c->s->envp);
		}
		return;
	}
	size_t flen = strlen(file);
	char buf[PATH_MAX];
	bool denied = false;
	int e = ENOENT;
	for (const char *p = c->path; ; p++) {
		const char *end = strchrnul(p, ':');
		size_t dlen = (size_t)(end - p);
		if (dlen + 1 + flen + 1 <= sizeof buf) {
			memcpy(buf, p, dlen);
			if (!dlen) /* an empty entry is the current directory */
				buf[dlen++] = '.';
			buf[dlen] = '/';
			memcpy(buf + dlen + 1, file, flen + 1);
			execve(buf, argv, c->s->envp);
			e = errno;
			if (e == ENOEXEC) {
				c->sh_argv[1] = buf;
				execve("/bin/sh", c->sh_argv, c->s->envp);
				return;
			}
			if (e == EACCES)
				denied = true;
			else if (e != ENOENT && e != ENOTDIR && e != ESTALE && e != ENODEV && e != ETIMEDOUT)
				return; /* as execvp: a file found that cannot be run ends the search */
		}
		if (!*end)
			break;
		p = end;
	}
	errno = denied ? EACCES : e;
}

static int child_main(void *arg)
{
	struct child *c = arg;
	struct spawn *s = c->s;
	/* The parent's handlers are no use here (and would act on its variables): reset before
	 * any signal is let through. */
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;
		if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &sa) != 0)
			continue;
		if (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN) {
			sa.sa_handler = SIG_DFL;
			sa.sa_flags = 0;
			sigaction(sig, &sa, NULL);
		}
	}
	for (size_t i = 0; i < s->nkeep; i++)
		fcntl(s->keep[i], F_SETFD, 0);
	if (s->cpus && sched_setaffinity(0, sizeof s->cpus->w, (const cpu_set_t *)(const void *)s->cpus->w))
		s->bind_err = errno;
	if (s->commit_fd >= 0)
		commit(s);
	sigprocmask(SIG_SETMASK, &c->mask, NULL);
	exec_in_path(c);
	s->exec_err = errno;
	_exit(s->exec_err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
}

pid_t spawn_job(struct spawn *s)
{
	size_t argc = 0;
	while (s->argv[argc])
		argc++;
	char **sh_argv = calloc(argc + 2, sizeof *sh_argv);
	void *stack = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (!sh_argv || stack == MAP_FAILED) {
		free(sh_argv);
		if (stack != MAP_FAILED)
			munmap(stack, STACK_BYTES);
		errno = ENOMEM;
		return -1;
	}
	sh_argv[0] = "/bin/sh";
	for (size_t i = 1; i < argc; i++)
		sh_argv[i + 1] = s->argv[i];
	const char *path = getenv("PATH");
	struct child c = {.s = s, .sh_argv = sh_argv, .path = path ? path : "/bin:/usr/bin"};
	s->exec_err = s->bind_err = 0;
	s->committed = false;
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &c.mask);
	pid_t pid = clone(child_main, (char *)stack + STACK_BYTES, CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
	int e = errno;
	/* A signal sent to gpuctl while the job committed (up to COMMIT_WAIT_MS) is pending: it
	 * is delivered below, once the caller's handler knows the job's pid, and passed on. */
	if (pid > 0 && s->pid_out)
		*s->pid_out = pid;
	sigprocmask(SIG_SETMASK, &c.mask, NULL);
	munmap(stack, STACK_BYTES);
	free(sh_argv);
	errno = e;
	return pid;
}
