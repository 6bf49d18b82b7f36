/* watch.c: a share's claim watched from the client's side (memory shares, issue 23). Under
 * [daemon] share_overuse = stop the daemon grants a share with "overuse stop", and the process
 * that started the job (`gpuctl run`, as the job's own user) stops it once the daemon counts its
 * processes over the claim: the daemon itself never signals anyone's processes. The wait is on
 * the job's pidfd (its end is an event); the daemon is asked every WATCH_SECONDS, within the
 * answer rate `list` allows each user. */
#include "lease/watch.h"
#include "lease/view.h"
#include "machine/pid.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WATCH_SECONDS 1.0          /* how often the daemon is asked */
#define STOP_GRACE 10.0            /* SIGTERM, then SIGKILL this much later */
#define TREE_MAX 1024              /* descendants of the job stopped with it, at most */

/* Whether the daemon counts lease id over its claim; *mem, *used: its claim and most use. */
static bool over_claim(const char *id, uint64_t *mem, uint64_t *used)
{
	struct leaseview v;
	struct gpu_error err = {0};
	bool over = false;
	if (!leaseview_load_within(&v, 2, &err))
		return false; /* no answer this time: asked again */
	for (size_t i = 0; i < v.nleases; i++) {
		const struct lease_info *l = &v.leases[i];
		if (strcmp(l->id, id) || !l->mem_mib)
			continue;
		over = l->over;
		*mem = l->mem_mib;
		*used = 0;
		for (size_t k = 0; k < l->nused; k++)
			if (l->used[k] > *used)
				*used = l->used[k];
	}
	leaseview_free(&v);
	return over;
}

/* The job's descendants as of now (a wrapper's children: `sh -c 'train & wait'`), each opened
 * as a pidfd so that the SIGKILL later reaches the same processes, never a pid's successor; the
 * job's own SIGTERM alone left them running over the claim. Returns how many (fds[]). */
static size_t open_tree(pid_t root, int *fds)
{
	struct node { unsigned pid, ppid; unsigned long long start; } *all = NULL;
	size_t n = 0, cap = 0, k = 0;
	DIR *dir = opendir("/proc");
	for (struct dirent *e; dir && (e = readdir(dir));) {
		char *end;
		unsigned long v = strtoul(e->d_name, &end, 10);
		struct pid_stat st;
		if (*end || !v || !pid_stat((unsigned)v, &st) || st.ppid <= 0)
			continue;
		if (n == cap)
			all = xrealloc(all, (cap = cap ? 2 * cap : 256) * sizeof *all);
		all[n++] = (struct node){(unsigned)v, (unsigned)st.ppid, st.start};
	}
	if (dir)
		closedir(dir);
	unsigned *tree = xmalloc(TREE_MAX * sizeof *tree);
	size_t nt = 0;
	tree[nt++] = (unsigned)root;
	for (size_t t = 0; t < nt; t++) /* breadth first: each found process's children */
		for (size_t i = 0; i < n && nt < TREE_MAX; i++)
			if (all[i].ppid == tree[t]) {
				int fd = pid_open(all[i].pid, all[i].start);
				tree[nt++] = all[i].pid;
				if (fd >= 0)
					fds[k++] = fd;
			}
	free(tree);
	free(all);
	return k;
}

static void signal_tree(const int *fds, size_t n, int sig)
{
	for (size_t i = 0; i < n; i++)
		pid_signal(fds[i], sig);
}

int share_watch_wait(pid_t pid, const char *id, const char *who, struct lwatch *w, struct lhook *hook)
{
	int tree[TREE_MAX];
	size_t ntree = 0;
	int status = 0, pfd = pid_open((unsigned)pid, 0);
	double next = now_mono() + WATCH_SECONDS, kill_at = 0;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			break;
		double t = now_mono();
		if (kill_at && t >= kill_at) {
			kill(pid, SIGKILL);
			signal_tree(tree, ntree, SIGKILL);
			kill_at = 0;
		}
		uint64_t mem = 0, used = 0;
		if (!kill_at && t >= next) {
			if (over_claim(id, &mem, &used)) {
				fprintf(stderr, "%s: the job's processes use %llu MiB of a GPU, over its share "
					"of %llu MiB: stopping it (the administrator's share_overuse = stop)\n",
					who, (unsigned long long)used, (unsigned long long)mem);
				ntree = open_tree(pid, tree);
				signal_tree(tree, ntree, SIGTERM);
				kill(pid, SIGTERM);
				kill_at = t + STOP_GRACE;
			}
			next = t + WATCH_SECONDS;
		}
		lhook_near(hook); /* (checked at least every WATCH_SECONDS) */
		double until = kill_at ? kill_at : next;
		int ms = (int)((until - now_mono()) * 1000) + 1;
		struct pollfd p[2] = {{.fd = pfd, .events = POLLIN}, {.fd = lwatch_fd(w), .events = POLLIN}};
		if (pfd >= 0)
			poll(p, 2, ms > 0 ? ms : 0);
		else
			usleep(100000); /* no pidfds (old kernel): look ten times a second */
		if (pfd < 0 || !(p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		/* idle leases (issue 24): the daemon's word, as run's watch_job takes it */
		struct lwatch_event ev;
		char line[512];
		lwatch_read(w, &ev);
		lwatch_text(&ev, who, id, line, sizeof line);
		if (line[0])
			fputs(line, stderr);
		if (ev.what == LW_IDLE_WARN || ev.what == LW_IDLE_RELEASE)
			lhook_fire(hook, ev.what == LW_IDLE_WARN ? "idle-warn" : "idle-release", "running", -1);
		if (ev.what == LW_IDLE_RELEASE && !kill_at) {
			ntree = open_tree(pid, tree);
			signal_tree(tree, ntree, SIGTERM);
			kill(pid, SIGTERM);
			kill_at = now_mono() + (ev.grace > 0 ? ev.grace : 0.001);
		}
	}
	if (pfd >= 0)
		close(pfd);
	for (size_t i = 0; i < ntree; i++)
		close(tree[i]);
	return status;
}
