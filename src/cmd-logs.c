/* cmd-logs.c: `gpuctl logs [-f] [-n LINES] ID`: a job's output (stdout and stderr as written), all
 * of it or its last lines; with -f it follows the log as `tail -f` does, woken by inotify, and
 * ends when the job does (the runner says so), never by polling. Only the caller's own jobs. */
#include "gpuctl.h"
#include "jobconn.h"

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

static int open_log(struct jobctx *x, const struct job *j, char **path)
{
	if (j->own_log) {
		char name[40];
		snprintf(name, sizeof name, "%llu.log", (unsigned long long)j->id);
		*path = xasprintf("%s/%s", x->dir, name);
		return openat(x->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	}
	*path = xstrdup(j->log);
	return open(j->log, O_RDONLY | O_NOCTTY | O_CLOEXEC);
}

static bool put(const char *buf, size_t n)
{
	while (n) {
		ssize_t w = write(STDOUT_FILENO, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		buf += w;
		n -= (size_t)w;
	}
	return true;
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

/* Follows the log until the runner says the job ended; then prints what is left. */
static int follow(struct jobctx *x, struct job *j, int fd, off_t off, const char *path)
{
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
	struct dclient dc = {.fd = -1};
	struct gpu_error err = {0};
	int rc = EXIT_OK;
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "gpuctl logs: following job %llu (%s) until it ends; Ctrl-C stops "
			"following (the job goes on)\n", (unsigned long long)j->id, job_state_name(j->state));
	for (int tries = 0; tries < 4; tries++) {
		struct strbuf req = {0};
		msg_begin(&req, "wait");
		msg_add_u64(&req, "id", 1);
		msg_add_u64(&req, "job", j->id);
		bool sent = runner_open(&dc, RUNNER_START, &err) && dclient_send(&dc, &req, &err);
		sb_free(&req);
		if (!sent) {
			fprintf(stderr, "gpuctl logs: %s\n", err.msg);
			rc = err.code;
			break;
		}
		bool ended = false, gone = false;
		while (!ended && !gone) {
			struct pollfd p[2] = {{.fd = ino, .events = POLLIN}, {.fd = dc.fd, .events = POLLIN}};
			if (poll(p, 2, -1) < 0 && errno != EINTR)
				break;
			if (p[0].revents) {
				char ev[4096];
				while (read(ino, ev, sizeof ev) > 0)
					;
				if (!copy(fd, &off)) {
					ended = true;
					break;
				}
			}
			if (p[1].revents) {
				struct msg m;
				int r = runner_recv(&dc, &m, now_mono(), &err);
				if (r == 1) {
					ended = !strcmp(msg_verb(&m), "ended") || !strcmp(msg_verb(&m), "error");
					msg_free(&m);
				}
				gone = r < 0;
			}
		}
		dclient_close(&dc);
		if (ended)
			break;
		/* The runner went away: the record says whether the job ended meanwhile. */
		struct job now;
		if (job_read(x->dirfd, j->id, &now)) {
			bool final = job_final(now.state);
			job_free(&now);
			if (final)
				break;
		}
	}
	copy(fd, &off);
	close(ino);
	return rc;
}

static int logs(struct cmd *c)
{
	unsigned long lines = 0;
	bool tail = args_has(&c->args, L_LINES), fol = args_has(&c->args, L_FOLLOW);
	if (!args_uint(&c->args, L_LINES, 0, 100000000, &lines))
		return cmd_args_error(c);
	uint64_t *ids;
	size_t nids;
	if (!jobctx_ids(c->args.argc, c->args.argv, &ids, &nids, "gpuctl logs"))
		return EXIT_USAGE;
	if (nids != 1) {
		free(ids);
		return cmd_bad_usage(c->entry, "one job id, please");
	}
	struct jobctx x;
	struct gpu_error err = {0};
	if (!jobctx_load(&x, fol, &err)) {
		fprintf(stderr, "gpuctl logs: %s\n", err.msg);
		free(ids);
		return err.code;
	}
	int rc = jobctx_check(&x, ids, 1, "gpuctl logs");
	struct job *j = rc == EXIT_OK ? jobctx_find(&x, ids[0]) : NULL;
	char *path = NULL;
	int fd = j ? open_log(&x, j, &path) : -1;
	if (j && fd < 0) {
		fprintf(stderr, "gpuctl logs: cannot read the log of job %llu, %s: %s\n",
			(unsigned long long)j->id, path, strerror(errno));
		rc = EXIT_FAIL;
	}
	if (fd >= 0) {
		off_t off = tail ? tail_start(fd, lines) : 0;
		if (tail && lines == 0) {
			struct stat st;
			off = fstat(fd, &st) == 0 ? st.st_size : 0;
		}
		if (fol && !job_final(j->state))
			rc = follow(&x, j, fd, off, path);
		else
			copy(fd, &off);
		if (j->warning)
			fprintf(stderr, "gpuctl logs: warning: %s\n", j->warning);
		close(fd);
	}
	free(path);
	jobctx_free(&x);
	free(ids);
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
		 "  -f, --follow   keep printing what it writes, as `tail -f`, until the job ends\n",
	.args = {.shorts = "fn:", .longs = longopts, .lower = 1, .upper = 1},
	.exec = logs,
};
