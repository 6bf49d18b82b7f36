/* spawn.h: starting `run`'s job without copying gpuctl (issue 22): the job is cloned sharing
 * this process's memory (CLONE_VM | CLONE_VFORK, as posix_spawn does) and this process sleeps
 * until it has exec'd or failed to, so the start costs no page-table copy and no copy-on-write
 * faults. Before its exec the job keeps the lease's descriptors, applies --bind-cpus and
 * commits the lease itself on its client's connection (a message that carries its own pid as
 * the kernel attests it, SCM_CREDENTIALS) and waits for the daemon's answer, so that once the
 * job runs the daemon names it as the holder. Only async-signal-safe calls run in the job. */
#ifndef GPUCTL_SPAWN_H
#define GPUCTL_SPAWN_H

#include "lease/bind.h"

#include <stdbool.h>
#include <sys/types.h>

struct spawn {
	char *const *argv;         /* looked up in PATH as execvp does (ENOEXEC: run by /bin/sh) */
	char *const *envp;         /* the job's whole environment */
	const int *keep;           /* descriptors the job keeps across exec (CLOEXEC cleared) */
	size_t nkeep;
	const struct cpuset *cpus; /* --bind-cpus: applied in the job (NULL: none) */
	int commit_fd;             /* the client's connection to the daemon (-1: no commit) */
	const char *commit;        /* the message sent on it, and its length */
	size_t commit_len;
	/* Set to the job's pid before this process's signals are let through again (they are
	 * blocked while the job starts, and a handler that forwards them must know whom to). */
	volatile pid_t *pid_out;
	/* out: */
	int exec_err;              /* errno of the exec that failed (0: it ran) */
	int bind_err;              /* errno of sched_setaffinity (0: bound, or not asked) */
	bool committed;            /* the daemon took the job's commit ("ok") */
};

/* The job's pid (to be waited for; once it returns the job has exec'd, or exited 127/126 with
 * s->exec_err set), or -1 with errno (nothing started). Signals caught here are reset to their
 * default in the job; the signal mask is kept. */
pid_t spawn_job(struct spawn *s);

#endif
