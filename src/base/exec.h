/* exec.h: running a tool (Slurm's squeue, sbatch, scontrol...) with an argv, never a shell: its
 * stdout and stderr collected, bounded in time and in size, its words kept verbatim for the
 * caller's message. Knows no tool: what to check when one is late is the caller's hint. Unit-tested
 * (tests/unit/test_slurm.c). */
#ifndef GPUCTL_EXEC_H
#define GPUCTL_EXEC_H

#include "base/util.h"

/* Runs argv (argv[0] looked up in PATH) with no shell, stdin from /dev/null, in a process group
 * of its own, for at most timeout_s seconds in all (its output and its exit; then the group is
 * killed). SIGINT, SIGTERM or SIGHUP meanwhile kill the group first, then end gpuctl as they
 * would have (raised again with its own disposition). Its stdout is appended to out, its stderr
 * to errtext (both bounded to 1 MiB). Returns its exit status (128+N after signal N), or -1 when
 * it could not be run or ran out of time (errtext says which; hint, when not NULL, is what to
 * check, put in the words for a tool out of time). */
int exec_run(const char *const *argv, double timeout_s, const char *hint, struct strbuf *out,
	     struct strbuf *errtext);
/* The same with envp as its environment (NULL: this process's) and in (NULL: /dev/null; shorter
 * than PIPE_BUF, so it is written whole before anything is read) as its stdin. */
int exec_run_full(const char *const *argv, char *const *envp, const char *in, double timeout_s,
		  const char *hint, struct strbuf *out, struct strbuf *errtext);

#endif
