/* queue.c: ticket files of the waiting queue (see queue.h). */
#include "pid.h"
#include "queue.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

bool queue_enter(const struct state *st, struct ticket *t, int *fd, struct gpu_error *err)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* Arrival order is name order: taken under the global lock, the clock is consistent with it. */
	snprintf(t->file, sizeof t->file, "%020llu-%010d",
		 (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec, (int)getpid());
	struct strbuf sb = {0};
	sb_addf(&sb, "pid=%d\nsince=%lld\ncount=%u\nmin_free_mib=%llu\nmax_util=%d\nignore_usage=%d\n"
		     "prefer=%d\n", (int)getpid(), (long long)t->since, t->req.count,
		(unsigned long long)t->req.min_free_mib, t->req.max_util, t->req.ignore_usage,
		(int)t->req.prefer);
	if (t->name)
		sb_addf(&sb, "name=%s\n", t->name);
	for (size_t i = 0; i < t->ncand; i++)
		sb_addf(&sb, "gpu=%s\n", t->cand[i]);
	char *path = xasprintf("%s/queue/%s", st->dir, t->file);
	*fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	bool ok = *fd >= 0 && fchmod(*fd, 0644) == 0 && flock(*fd, LOCK_EX) == 0 &&
		  write(*fd, sb.buf, sb.len) == (ssize_t)sb.len;
	if (!ok) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "cannot join the queue (%s): %s", path, strerror(errno));
		if (*fd >= 0)
			close(*fd);
		unlink(path);
	}
	free(path);
	sb_free(&sb);
	return ok;
}

void queue_leave(const struct state *st, const struct ticket *t, int fd)
{
	char *path = xasprintf("%s/queue/%s", st->dir, t->file);
	unlink(path);
	free(path);
	if (fd >= 0)
		close(fd);
}

static bool parse_ticket(const char *path, struct ticket *t)
{
	char *text = read_file(path, NULL);
	if (!text)
		return false;
	for (char *line = text, *next; *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		const char *k = line, *v = eq + 1;
		if (!strcmp(k, "pid"))
			t->pid = atoi(v);
		else if (!strcmp(k, "since"))
			t->since = atoll(v);
		else if (!strcmp(k, "count"))
			t->req.count = (unsigned)atoi(v);
		else if (!strcmp(k, "min_free_mib"))
			t->req.min_free_mib = strtoull(v, NULL, 10);
		else if (!strcmp(k, "max_util"))
			t->req.max_util = atoi(v);
		else if (!strcmp(k, "ignore_usage"))
			t->req.ignore_usage = atoi(v) != 0;
		else if (!strcmp(k, "prefer"))
			t->req.prefer = (enum prefer)atoi(v);
		else if (!strcmp(k, "name") && !t->name)
			t->name = xstrdup(v);
		else if (!strcmp(k, "gpu") && t->ncand < LEASE_MAX_GPUS)
			snprintf(t->cand[t->ncand++], sizeof t->cand[0], "%s", v);
	}
	free(text);
	return t->req.count > 0;
}

/* A waiter stopped with Ctrl-Z would hold up everyone behind it: leave it out until it goes on. */
static bool stopped(pid_t pid)
{
	struct pid_stat st;
	return pid_stat((unsigned)pid, &st) && (st.state == 'T' || st.state == 't');
}

static int by_file(const void *a, const void *b)
{
	return strcmp(((const struct ticket *)a)->file, ((const struct ticket *)b)->file);
}

void queue_load(const struct state *st, struct ticket_list *l)
{
	size_t cap = 0;
	*l = (struct ticket_list){0};
	char *dir = xasprintf("%s/queue", st->dir);
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof l->t->file)
			continue;
		char *path = xasprintf("%s/%s", dir, e->d_name);
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		struct stat sb;
		/* A ticket its waiter still locks is live; one we can lock belongs to a dead waiter. */
		if (fd >= 0 && fstat(fd, &sb) == 0 && flock(fd, LOCK_SH | LOCK_NB) == 0) {
			if (sb.st_uid == getuid())
				unlink(path);
			close(fd);
			free(path);
			continue;
		}
		if (fd >= 0)
			close(fd);
		l->t = grow_array(l->t, &cap, l->n + 1, sizeof *l->t);
		struct ticket *t = &l->t[l->n];
		memset(t, 0, sizeof *t);
		snprintf(t->file, sizeof t->file, "%.63s", e->d_name);
		t->uid = sb.st_uid;
		user_name(sb.st_uid, t->user, sizeof t->user);
		if (fd >= 0 && parse_ticket(path, t) && !stopped(t->pid))
			l->n++;
		else
			free(t->name);
		free(path);
	}
	if (d)
		closedir(d);
	free(dir);
	if (l->n)
		qsort(l->t, l->n, sizeof *l->t, by_file);
}

void queue_free(struct ticket_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->t[i].name);
	free(l->t);
	*l = (struct ticket_list){0};
}
