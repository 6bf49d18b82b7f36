/* watch.c: a share's claim watched from the client's side (memory shares, issue 23). Under
 * [daemon] share_overuse = stop the daemon grants a share with "overuse stop", and the process
 * that started the job (`gpuctl run`, as the job's own user) stops it once the daemon counts its
 * processes over the claim: the daemon itself never signals anyone's processes. The wait is on
 * the job's pidfd (its end is an event); the daemon is asked every WATCH_SECONDS, within the
 * answer rate `list` allows each user. */
#include "lease/watch.h"
#include "lease/view.h"
#include "machine/pid.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WATCH_SECONDS 1.0          /* how often the daemon is asked */
#define STOP_GRACE 10.0            /* SIGTERM, then SIGKILL this much later */

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

int share_watch_wait(pid_t pid, const char *id, const char *who)
{
	int status = 0, pfd = pid_open((unsigned)pid, 0);
	double next = now_mono() + WATCH_SECONDS, kill_at = 0;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			break;
		double t = now_mono();
		if (kill_at && t >= kill_at) {
			kill(pid, SIGKILL);
			kill_at = 0;
		}
		uint64_t mem = 0, used = 0;
		if (!kill_at && t >= next) {
			if (over_claim(id, &mem, &used)) {
				fprintf(stderr, "%s: the job's processes use %llu MiB of a GPU, over its share "
					"of %llu MiB: stopping it (the administrator's share_overuse = stop)\n",
					who, (unsigned long long)used, (unsigned long long)mem);
				kill(pid, SIGTERM);
				kill_at = t + STOP_GRACE;
			}
			next = t + WATCH_SECONDS;
		}
		double until = kill_at ? kill_at : next;
		int ms = (int)((until - now_mono()) * 1000) + 1;
		struct pollfd p = {.fd = pfd, .events = POLLIN};
		if (pfd >= 0)
			poll(&p, 1, ms > 0 ? ms : 0);
		else
			usleep(100000); /* no pidfds (old kernel): look ten times a second */
	}
	if (pfd >= 0)
		close(pfd);
	return status;
}
