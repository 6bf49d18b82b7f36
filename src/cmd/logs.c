/* logs.c: `gpuctl logs [-f] [-n LINES] ID`: a job's output (stdout and stderr as written), all
 * of it or its last lines; with -f it follows the log as `tail -f` does, woken by inotify, and
 * ends when the job does (jobs/set.c: the runner says so; for a Slurm job, squeue on a timer), never
 * by polling the file. Only the caller's own jobs. */
#include "cmd/cmd.h"
#include "base/escape.h"
#include "jobs/backend.h"
#include "machine/pid.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

enum { L_FOLLOW = 'f', L_LINES = 'n' };

static bool put(const char *buf, size_t n)
{
	return write_all(STDOUT_FILENO, buf, n);
}

/* Everything from *off to the end; false when stdout is gone. A log cut short (truncated)
 * is read again from its start. */
static bool copy(int fd, off_t *off)
{
	struct stat st;
	if (fstat(fd, &st) == 0 && st.st_size < *off)
		*off = 0;
	char buf[65536];
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof buf, *off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return true;
		if (!put(buf, (size_t)n))
			return false;
		*off += n;
	}
}

/* Where the last `lines` lines start (a last line without its newline counts as one). */
static off_t tail_start(int fd, unsigned long lines)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size == 0)
		return 0;
	off_t end = st.st_size, pos = end;
	unsigned long seen = 0;
	char buf[8192], last;
	if (pread(fd, &last, 1, end - 1) == 1 && last == '\n')
		end--; /* the final newline ends the last line; it does not start another */
	pos = end;
	while (pos > 0) {
		size_t n = pos < (off_t)sizeof buf ? (size_t)pos : sizeof buf;
		if (pread(fd, buf, n, pos - (off_t)n) != (ssize_t)n)
			return 0;
		for (size_t i = n; i-- > 0;)
			if (buf[i] == '\n' && ++seen == lines)
				return pos - (off_t)n + (off_t)i + 1;
		pos -= (off_t)n;
	}
	return 0;
}

/* Follows the log until the job's backend says it ended; then prints what is left. */
static int follow(struct jobset *js, int fd, off_t off, const char *path)
{
	const struct job *j = js->jobs[0];
	char id[48];
	int ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ino < 0 || inotify_add_watch(ino, path, IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE) < 0) {
		fprintf(stderr, "gpuctl logs: cannot follow %s: %s\n", path, strerror(errno));
		if (ino >= 0)
			close(ino);
		return EXIT_FAIL;
	}
	if (!copy(fd, &off)) {
		close(ino);
		return EXIT_OK;
	}
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "gpuctl logs: following job %s (%s) until it ends; Ctrl-C stops "
			"following (the job goes on)\n", job_id_text(j->kind, j->id, id, sizeof id),
			job_state_name(j->state));
	struct gpu_error err = {0};
	int rc = EXIT_OK;
	for (int r = jobset_watch(js, false, 0, 0, ino, &err);; r = jobset_wait(js, 0, ino, &err)) {
		if (r == 2) {
			char ev[4096];
			while (read(ino, ev, sizeof ev) > 0)
				;
			if (copy(fd, &off))
				continue;
			break; /* stdout is gone */
		}
		if (r < 0) {
			fprintf(stderr, "gpuctl logs: %s\n", err.msg);
			rc = err.code ? err.code : EXIT_FAIL;
		}
		break;
	}
	copy(fd, &off);
	close(ino);
	return rc;
}

/* A log not there yet: the job has not started (the runner, or Slurm's node, makes it then). -f
 * waits for it, woken by its directory (inotify) and by the job's end. -1 with errno when it did
 * not come. */
static int await_log(struct jobset *js, char **path)
{
	const struct job *j = js->jobs[0];
	const struct job_backend *be = job_backend(j->kind);
	struct gpu_error err = {0};
	char id[48], *slash = *path ? strrchr(*path, '/') : NULL;
	if (!slash || *path[0] != '/') {
		errno = ENOENT;
		return -1;
	}
	char *dir = slash == *path ? xstrdup("/") : xstrndup(*path, (size_t)(slash - *path));
	int ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK), fd = -1;
	if (ino < 0 || inotify_add_watch(ino, dir, IN_CREATE | IN_MOVED_TO) < 0) {
		int e = errno;
		if (ino >= 0)
			close(ino);
		free(dir);
		errno = e;
		return -1;
	}
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "gpuctl logs: job %s has not started (%s); waiting for its output; Ctrl-C "
			"stops waiting (the job goes on)\n", job_id_text(j->kind, j->id, id, sizeof id),
			job_state_name(j->state));
	for (int r = jobset_watch(js, false, 0, 0, ino, &err);; r = jobset_wait(js, 0, ino, &err)) {
		free(*path);
		*path = NULL;
		fd = be->log_open(js->of[j->kind], j, path); /* made while the watch began? */
		if (fd >= 0 || errno != ENOENT || r != 2)
			break;
		char ev[4096];
		while (read(ino, ev, sizeof ev) > 0)
			;
		if (r < 0) {
			fprintf(stderr, "gpuctl logs: %s\n", err.msg);
			errno = EIO;
			break;
		}
	}
	int e = errno;
	close(ino);
	free(dir);
	errno = e;
	return fd;
}

/* Why the log cannot be read. A backend refuses a file it cannot trust (log_open in
 * jobs/backend.h): EPERM, another user's; EINVAL, not a regular file. */
static int cannot_read(const struct job *j, const char *path, int e)
{
	char id[48], user[64] = "another user";
	struct stat st;
	job_id_text(j->kind, j->id, id, sizeof id);
	if (e == EPERM) {
		if (stat(path, &st) == 0)
			user_name(st.st_uid, user, sizeof user);
		fprintf(stderr, "gpuctl logs: the log of job %s, %s, is %s's, not yours: another user "
			"could have put it there, so it is not shown (give --log a path in a directory of "
			"your own)\n", id, esc_str(path, 0), esc_str(user, 1));
		return EXIT_DENIED;
	}
	if (e == EINVAL)
		fprintf(stderr, "gpuctl logs: the log of job %s, %s, is not a regular file (a FIFO or a "
			"device), so it is not read\n", id, esc_str(path, 0));
	else
		fprintf(stderr, "gpuctl logs: cannot read the log of job %s, %s: %s\n", id,
			esc_str(path, 0), strerror(e));
	return EXIT_FAIL;
}

static int logs(struct cmd *c)
{
	unsigned long lines = 0;
	bool tail = args_has(&c->args, L_LINES), fol = args_has(&c->args, L_FOLLOW);
	if (!args_uint(&c->args, L_LINES, 0, 100000000, &lines))
		return cmd_args_error(c);
	struct job_ref *refs;
	size_t nids;
	struct gpu_error err = {0};
	if (!jobset_ids(c->args.argc, c->args.argv, &refs, &nids, &err))
		return cmd_fail(c, &err);
	if (nids != 1) {
		free(refs);
		return cmd_bad_usage(c->entry, "one job id, please");
	}
	struct jobset js = {0};
	int rc = jobset_find(&js, refs, 1, fol, "gpuctl logs");
	struct job *j = rc == EXIT_OK ? js.jobs[0] : NULL;
	const struct job_backend *be = j ? job_backend(j->kind) : NULL;
	char *path = NULL, id[48];
	int fd = j ? be->log_open(js.of[j->kind], j, &path) : -1;
	if (j && fd < 0 && errno == ENOENT && !j->started && !job_final(j->state)) {
		if (fol) {
			fd = await_log(&js, &path);
			if (fd < 0 && errno == ENOENT && job_final(j->state) && !j->started) {
				fprintf(stderr, "gpuctl logs: job %s ended (%s) before it started: no output\n",
					job_id_text(j->kind, j->id, id, sizeof id), job_state_name(j->state));
				jobset_free(&js);
				free(path);
				return EXIT_OK;
			}
		} else {
			fprintf(stderr, "gpuctl logs: job %s has not started (%s): no output yet\n",
				job_id_text(j->kind, j->id, id, sizeof id), job_state_name(j->state));
			jobset_free(&js);
			free(path);
			return EXIT_OK;
		}
	}
	if (j && fd < 0)
		rc = cannot_read(j, path ? path : "?", errno);
	if (fd >= 0) {
		off_t off = tail ? tail_start(fd, lines) : 0;
		if (tail && lines == 0) {
			struct stat st;
			off = fstat(fd, &st) == 0 ? st.st_size : 0;
		}
		if (fol && !job_final(j->state))
			rc = follow(&js, fd, off, path);
		else
			copy(fd, &off);
		if (j->warning)
			fprintf(stderr, "gpuctl logs: warning: %s\n", j->warning);
		close(fd);
	}
	free(path);
	jobset_free(&js);
	return rc;
}

static const struct option longopts[] = {
	{"follow", no_argument, NULL, L_FOLLOW}, {"lines", required_argument, NULL, L_LINES}, {0},
};

const struct cmd_entry cmd_logs_entry = {
	.name = "logs",
	.summary = "a job's output; -f follows it until the job ends",
	.usage = "logs [-f] [-n LINES] ID\n\n"
		 "The output of one of your jobs (its stdout and stderr, interleaved as written).\n\n"
		 "  -n, --lines N  only the last N lines\n"
		 "  -f, --follow   keep printing what it writes, as `tail -f`, until the job ends\n\n"
		 "A Slurm job's (slurm:N) log is its --log, or slurm-N.out in the directory it was\n"
		 "submitted from (for a job gpuctl did not submit: its StdOut, as scontrol shows it).\n",
	.args = {.shorts = "fn:", .longs = longopts, .lower = 1, .upper = 1},
	.exec = logs,
};
