/* grant.c: from a request to held GPU locks (see grant.h).
 *
 * Every decision is taken under the global lock, from a consistent view: live leases, live queue
 * tickets and the GPUs' observed use. Waiting happens outside it, in poll(2) on an inotify watch
 * of the state directory (a lease record or ticket removed) and on pidfds of the jobs holding
 * wanted GPUs, with a slow timer as the only fallback: no busy polling. */
#include "grant.h"
#include "pid.h"
#include "visenv.h"
#include "queue.h"
#include "visibility.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FALLBACK_SECONDS 5

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

/* GPU positions the request may use: -g, then the caller's CUDA_VISIBLE_DEVICES (a Slurm step
 * or container restricts us), never a lost one. */
static bool candidates(struct gpu_set *set, const struct grant_req *rq, uint64_t *cand,
		       unsigned *count, struct gpu_error *err)
{
	uint64_t m = 0;
	for (size_t i = 0; i < set->ngpus && i < LEASE_MAX_GPUS; i++)
		if (!set->gpus[i].lost && !set->gpus[i].inaccessible && set->gpus[i].uuid[0])
			m |= 1ULL << i;
	unsigned listed = 0;
	if (rq->gpus) {
		if (!gpu_set_select(set, rq->gpus, err))
			return false;
		uint64_t g = 0;
		for (size_t i = 0; i < set->ngpus && i < LEASE_MAX_GPUS; i++)
			if (set->gpus[i].selected)
				g |= 1ULL << i, listed++;
		m &= g;
		for (size_t i = 0; i < set->ngpus; i++)
			set->gpus[i].selected = true;
	}
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	if (cvd) {
		struct vis_machine *vm = vis_machine_new(set);
		struct vis_result *r = vis_resolve(vm, cvd, getenv("CUDA_DEVICE_ORDER"));
		uint64_t vis = 0;
		for (size_t i = 0; i < r->ndevs; i++)
			if (r->devs[i].mig < 0 && r->devs[i].gpu < LEASE_MAX_GPUS)
				vis |= 1ULL << r->devs[i].gpu;
		vis_result_free(r);
		vis_machine_free(vm);
		if (!vis) {
			err->code = EXIT_USAGE;
			snprintf(err->msg, sizeof err->msg, "your CUDA_VISIBLE_DEVICES='%s' makes no whole GPU "
				 "visible, so there is nothing to choose from (see `gpuctl map`); unset "
				 "it to choose among all GPUs", cvd);
			return false;
		}
		m &= vis;
	}
	*count = rq->count ? rq->count : listed ? listed : 1;
	*cand = m;
	unsigned have = (unsigned)__builtin_popcountll(m);
	if (*count > have) {
		err->code = EXIT_USAGE;
		snprintf(err->msg, sizeof err->msg, "%u GPU%s wanted, but only %u can be chosen here%s",
			 *count, *count == 1 ? "" : "s", have,
			 cvd ? " (CUDA_VISIBLE_DEVICES restricts the choice)" : rq->gpus ? " (-g restricts the choice)" : "");
		return false;
	}
	return true;
}

static uint64_t reserved_mask(struct gpu_set *set, const struct config *cfg)
{
	uint64_t m = 0;
	struct gpu_error e;
	if (!cfg->reserved || !gpu_set_select(set, cfg->reserved, &e)) {
		if (cfg->reserved)
			warn("/etc/gpuctl.conf: reserved_gpus: %s", e.msg);
		for (size_t i = 0; i < set->ngpus; i++)
			set->gpus[i].selected = true;
		return 0;
	}
	for (size_t i = 0; i < set->ngpus && i < LEASE_MAX_GPUS; i++) {
		if (set->gpus[i].selected)
			m |= 1ULL << i;
		set->gpus[i].selected = true;
	}
	return m;
}

struct view;
static void view_usage(struct view *v, const struct gpu_set *set);

struct view {
	struct alloc_gpu g[LEASE_MAX_GPUS];
	size_t n;
	struct lockset ls;
	struct lease_list leases;
	struct ticket_list queue;
};

static unsigned leased_by(const struct lease_list *l, uid_t uid)
{
	unsigned n = 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->recs[i].live && l->recs[i].uid == uid)
			n += (unsigned)l->recs[i].nlocks;
	return n;
}

/* Usage snapshots (STATE/usage/<uid>): a release wakes every waiter, and each evaluates in turn
 * under the global lock; one NVML refresh per event is enough. A snapshot is used only when it
 * was taken after the reader woke up, so it is never older than the event being handled. */
static bool usage_read(const struct state *st, struct view *v, const struct gpu_set *set, double since)
{
	char *dir = xasprintf("%s/usage", st->dir);
	DIR *d = opendir(dir);
	char *best = NULL;
	double best_ts = since;
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char *path = xasprintf("%s/%s", dir, e->d_name), *text = read_file(path, NULL);
		double ts;
		if (text && sscanf(text, "ts %lf", &ts) == 1 && ts >= best_ts) {
			free(best);
			best = text;
			best_ts = ts;
			text = NULL;
		}
		free(text);
		free(path);
	}
	if (d)
		closedir(d);
	free(dir);
	size_t found = 0;
	for (char *line = best ? strchr(best, '\n') : NULL; line && *++line; line = strchr(line, '\n')) {
		char uuid[96];
		unsigned mv, uv, util, procs;
		unsigned long long used, freem;
		if (sscanf(line, "%95s %u %llu %llu %u %u %u", uuid, &mv, &used, &freem, &uv, &util, &procs) != 7)
			break;
		for (size_t i = 0; i < v->n; i++)
			if (!strcmp(set->gpus[i].uuid, uuid)) {
				struct alloc_gpu *a = &v->g[i];
				a->mem_valid = mv, a->used_mib = used, a->free_mib = freem;
				a->util_valid = uv, a->util = util, a->procs = procs;
				found++;
			}
	}
	free(best);
	return found == v->n && v->n > 0;
}

static void usage_write(const struct state *st, const struct view *v, const struct gpu_set *set, double ts)
{
	struct strbuf sb = {0};
	sb_addf(&sb, "ts %.6f\n", ts);
	for (size_t i = 0; i < v->n; i++) {
		const struct alloc_gpu *a = &v->g[i];
		sb_addf(&sb, "%s %u %llu %llu %u %u %u\n", set->gpus[i].uuid, a->mem_valid,
			(unsigned long long)a->used_mib, (unsigned long long)a->free_mib, a->util_valid,
			a->util, a->procs);
	}
	char *tmp = xasprintf("%s/usage/.%u.tmp", st->dir, (unsigned)getuid());
	char *path = xasprintf("%s/usage/%u", st->dir, (unsigned)getuid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd >= 0) {
		bool ok = fchmod(fd, 0644) == 0 && write(fd, sb.buf, sb.len) == (ssize_t)sb.len;
		close(fd);
		if (!ok || rename(tmp, path) != 0)
			unlink(tmp);
	}
	free(tmp);
	free(path);
	sb_free(&sb);
}

static void view_load(struct view *v, struct grant *g, uint64_t reserved, double woke)
{
	struct gpu_set *set = g->set;
	v->n = set->ngpus < LEASE_MAX_GPUS ? set->ngpus : LEASE_MAX_GPUS;
	bool shared = usage_read(&g->st, v, set, woke);
	if (!shared) {
		double ts = now_mono();
		gpu_set_refresh(set, REFRESH_PROCS | REFRESH_NO_PROC_INFO);
		view_usage(v, set);
		usage_write(&g->st, v, set, ts);
	}
	lockset_load(&v->ls, &g->st);
	lease_list_load(&v->leases, &g->st, &v->ls);
	lease_gc(&g->st, &v->leases);
	queue_load(&g->st, &v->queue);
	for (size_t i = 0; i < v->n; i++) {
		const struct gpu *gp = &set->gpus[i];
		v->g[i].index = gp->index;
		v->g[i].leased = gp->uuid[0] && lease_gpu_busy(&g->st, gp->uuid, &v->leases, &v->ls);
		v->g[i].reserved = reserved >> i & 1;
	}
}

/* The observed use of each GPU, from a fresh refresh. */
static void view_usage(struct view *v, const struct gpu_set *set)
{
	for (size_t i = 0; i < v->n; i++) {
		const struct gpu *gp = &set->gpus[i];
		unsigned procs = 0;
		for (size_t j = 0; j < gp->nprocs; j++)
			procs += (gp->procs[j].type & PROC_COMPUTE) != 0;
		v->g[i] = (struct alloc_gpu){
			.mem_valid = GPU_HAS(gp, GF_MEM_USED) && GPU_HAS(gp, GF_MEM_FREE),
			.used_mib = mib(gp->mem_used),
			.free_mib = mib(gp->mem_free),
			.util_valid = GPU_HAS(gp, GF_UTIL_GPU),
			.util = gp->util_gpu,
			.procs = procs,
		};
	}
}

static void view_free(struct view *v)
{
	lockset_free(&v->ls);
	lease_list_free(&v->leases);
	queue_free(&v->queue);
}

/* The request of a queued ticket, with its candidates as positions in this machine. */
static struct alloc_req ticket_req(const struct ticket *t, const struct gpu_set *set,
				   const struct config *cfg, const struct lease_list *l)
{
	struct alloc_req r = t->req;
	r.cand = 0;
	for (size_t c = 0; c < t->ncand; c++)
		for (size_t i = 0; i < set->ngpus && i < LEASE_MAX_GPUS; i++)
			if (!strcmp(set->gpus[i].uuid, t->cand[c]))
				r.cand |= 1ULL << i;
	r.capped = cfg->max_gpus_per_user && leased_by(l, t->uid) + r.count > cfg->max_gpus_per_user;
	return r;
}

static void explain_busy(const struct grant *g, const struct view *v, const struct alloc_req *me,
			 const struct alloc_policy *pol, const struct grant_req *rq, size_t ahead,
			 struct gpu_error *err)
{
	struct strbuf sb = {0};
	sb_addf(&sb, "%u GPU%s wanted, not enough free now%s:\n", me->count, me->count == 1 ? "" : "s",
		me->capped ? " (you are at the per-user GPU cap)" : "");
	for (size_t i = 0; i < v->n; i++) {
		if (!(me->cand >> i & 1))
			continue;
		const struct gpu *gp = &g->set->gpus[i];
		const struct lease_rec *h = lease_holder(&v->leases, gp->uuid);
		sb_addf(&sb, "  GPU %u (%.12s): ", gp->index, gp->uuid);
		if (h) {
			char when[32];
			strftime(when, sizeof when, "%H:%M", localtime(&h->since));
			sb_addf(&sb, "leased by %s, pid %d%s%s%s, since %s\n", h->user, (int)h->pid,
				h->name ? " '" : "", h->name ? h->name : "", h->name ? "'" : "", when);
		} else {
			const char *why = alloc_why_not(&v->g[i], me, pol);
			sb_addf(&sb, "%s", why ? why : "free");
			if (why && !v->g[i].leased && v->g[i].mem_valid)
				sb_addf(&sb, " (%llu MiB used, %s%u%%, %u process%s)",
					(unsigned long long)v->g[i].used_mib, v->g[i].util_valid ? "" : "util N/A ",
					v->g[i].util, v->g[i].procs, v->g[i].procs == 1 ? "" : "es");
			sb_addc(&sb, '\n');
		}
	}
	if (ahead)
		sb_addf(&sb, "  %zu request%s already waiting (see `gpuctl leases`)\n", ahead, ahead == 1 ? "" : "s");
	sb_addf(&sb, "Use --wait to queue%s.", rq->ignore_usage ? "" : ", or --ignore-usage to disregard observed use");
	err->code = EXIT_BUSY;
	snprintf(err->msg, sizeof err->msg, "%s", sb.buf);
	sb_free(&sb);
}

static int inotify_watch(const struct state *st)
{
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (fd < 0)
		return -1;
	char *q = xasprintf("%s/queue", st->dir);
	/* Only removals: a lease that ends, a waiter that leaves. Opening lock files must not wake
	 * anyone, or waiters would wake each other forever. */
	inotify_add_watch(fd, st->dir, IN_DELETE);
	inotify_add_watch(fd, q, IN_DELETE);
	free(q);
	return fd;
}

/* Sleep until something that could free a wanted GPU happens, the deadline, or a signal. */
static void wait_event(int ino, const struct view *v, const struct gpu_set *set, uint64_t cand,
		       double deadline, bool tty, double started, size_t place, unsigned count)
{
	struct pollfd fds[LEASE_MAX_GPUS + 1];
	nfds_t n = 0;
	fds[n++] = (struct pollfd){.fd = ino, .events = POLLIN};
	for (size_t i = 0; i < v->n && n < ARRAY_SIZE(fds); i++) {
		const struct lease_rec *h = (cand >> i & 1) ? lease_holder(&v->leases, set->gpus[i].uuid) : NULL;
		int pfd = h && h->pid > 0 ? pid_open((unsigned)h->pid, 0) : -1;
		if (pfd >= 0)
			fds[n++] = (struct pollfd){.fd = pfd, .events = POLLIN};
	}
	double end = now_mono() + FALLBACK_SECONDS;
	if (deadline > 0 && deadline < end)
		end = deadline;
	while (!interrupted) {
		double now = now_mono();
		if (tty) {
			int secs = (int)(now - started);
			fprintf(stderr, "\rgpuctl: waiting for %u GPU%s, %zu%s in queue, %d:%02d\033[K", count,
				count == 1 ? "" : "s", place, place == 1 ? "st" : place == 2 ? "nd" : place == 3 ? "rd" : "th",
				secs / 60, secs % 60);
		}
		if (now >= end)
			break;
		double left = end - now;
		int ms = (int)((tty && left > 1 ? 1 : left) * 1000) + 1;
		int r = poll(fds, n, ms);
		if (r > 0)
			break;
	}
	char buf[4096];
	while (read(ino, buf, sizeof buf) > 0)
		;
	for (nfds_t i = 1; i < n; i++)
		close(fds[i].fd);
}

static void install_wait_signals(struct sigaction *old)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
}

static void restore_signals(struct sigaction *old)
{
	int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
}

int grant_acquire(struct gpu_set *set, const struct config *cfg, const struct grant_req *rq,
		  struct grant *g, struct gpu_error *err)
{
	memset(g, 0, sizeof *g);
	g->st.global_fd = -1;
	g->set = set;
	struct alloc_req me = {.max_util = rq->max_util, .min_free_mib = rq->min_free_mib,
			       .ignore_usage = rq->ignore_usage,
			       .prefer = rq->prefer >= 0 ? (enum prefer)rq->prefer : cfg->prefer};
	struct alloc_policy pol = {cfg->free_max_used_mib, cfg->free_max_util, cfg->free_allow_processes};
	if (!candidates(set, rq, &me.cand, &me.count, err))
		return err->code;
	if (cfg->max_gpus_per_user && me.count > cfg->max_gpus_per_user) {
		err->code = EXIT_USAGE;
		snprintf(err->msg, sizeof err->msg, "%u GPUs wanted, but the administrator caps each user "
			 "at %u (max_gpus_per_user in /etc/gpuctl.conf)", me.count, cfg->max_gpus_per_user);
		return err->code;
	}
	/* The id is known before the holder forks, so the holder can remove its own record. */
	lease_new_id(g->rec.id);
	g->rec.name = rq->name ? xstrdup(rq->name) : NULL;
	g->rec.command = rq->command ? xstrdup(rq->command) : NULL;
	uint64_t reserved = reserved_mask(set, cfg);
	if (!state_open(&g->st, cfg->state_dir, err))
		return err->code;
	struct ticket t = {.since = time(NULL), .req = me, .name = (char *)rq->name};
	for (size_t i = 0; i < set->ngpus && i < LEASE_MAX_GPUS; i++)
		if (me.cand >> i & 1)
			snprintf(t.cand[t.ncand++], sizeof t.cand[0], "%s", set->gpus[i].uuid);
	int tfd = -1;
	bool queued = false, tty = isatty(STDERR_FILENO);
	double started = now_mono(), deadline = rq->wait > 0 ? started + rq->wait : 0;
	int ino = -1, rc = EXIT_OK;
	double woke = now_mono();   /* a usage snapshot older than this may predate the event */
	struct sigaction old[3];
	interrupted = 0;
	if (rq->wait >= 0)
		install_wait_signals(old);
	for (;;) {
		if (!state_lock(&g->st, true, err)) {
			rc = err->code;
			break;
		}
		struct view v;
		view_load(&v, g, reserved, woke);
		struct alloc_req reqs[256];
		size_t nreq = 0, mine = SIZE_MAX;
		for (size_t i = 0; i < v.queue.n && nreq < ARRAY_SIZE(reqs) - 1; i++) {
			if (queued && !strcmp(v.queue.t[i].file, t.file))
				mine = nreq;
			reqs[nreq++] = ticket_req(&v.queue.t[i], set, cfg, &v.leases);
		}
		me.capped = cfg->max_gpus_per_user && leased_by(&v.leases, getuid()) + me.count > cfg->max_gpus_per_user;
		if (mine == SIZE_MAX) {
			mine = nreq;
			reqs[nreq++] = me;
		} else {
			reqs[mine].capped = me.capped;
		}
		/* A waiter is granted only once everyone ahead that can run has taken its GPUs (each
		 * removal wakes the next): grants follow arrival order exactly. */
		uint64_t pick = alloc_queue(v.g, v.n, reqs, nreq, mine, &pol, rq->wait >= 0 && !rq->dry_run);
		if (pick && rq->dry_run) {
			for (size_t i = 0; i < v.n; i++)
				if (pick >> i & 1)
					g->pos[g->n++] = i;
			view_free(&v);
			state_unlock(&g->st);
			break;
		}
		if (pick) {
			const char *uuids[LEASE_MAX_GPUS];
			g->n = 0;
			for (size_t i = 0; i < v.n; i++)
				if (pick >> i & 1) {
					uuids[g->n] = set->gpus[i].uuid;
					g->pos[g->n++] = i;
				}
			if (lease_acquire(&g->st, uuids, g->n, &v.leases, g->locks, err)) {
				struct timespec ts;
				clock_gettime(CLOCK_REALTIME, &ts);
				g->leased_at = (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
				if (queued)
					queue_leave(&g->st, &t, tfd);
				view_free(&v);
				if (tty && queued)
					fputs("\r\033[K", stderr);
				break; /* global lock still held: grant_commit releases it */
			}
			g->n = 0; /* raced with a holder that bypassed the queue; wait like any other */
		}
		if (rq->wait < 0 || rq->dry_run) {
			explain_busy(g, &v, &reqs[mine], &pol, rq, mine, err);
			view_free(&v);
			state_unlock(&g->st);
			rc = err->code;
			break;
		}
		if (!queued) {
			if (!queue_enter(&g->st, &t, &tfd, err)) {
				view_free(&v);
				state_unlock(&g->st);
				rc = err->code;
				break;
			}
			queued = true;
			g->queued_at = strtoull(t.file, NULL, 10);
			ino = inotify_watch(&g->st);
		}
		state_unlock(&g->st);
		wait_event(ino, &v, set, me.cand, deadline, tty, started, mine + 1, me.count);
		woke = now_mono();
		view_free(&v);
		if (interrupted || (deadline > 0 && now_mono() >= deadline)) {
			if (tty)
				fputs("\r\033[K", stderr);
			queue_leave(&g->st, &t, tfd);
			err->code = interrupted ? 128 + interrupted : EXIT_TIMEOUT;
			snprintf(err->msg, sizeof err->msg, interrupted ? "interrupted while waiting; left the queue"
								: "no GPU became free within --wait; left the queue");
			rc = err->code;
			break;
		}
	}
	if (ino >= 0)
		close(ino);
	if (rq->wait >= 0)
		restore_signals(old);
	if (rc != EXIT_OK) {
		grant_free(g);
	}
	return rc;
}

bool grant_commit(struct grant *g, pid_t pid, pid_t bound, struct gpu_error *err)
{
	struct lease_rec *r = &g->rec;
	snprintf(r->kind, sizeof r->kind, "%s", bound ? "env" : "run");
	r->pid = pid;
	r->gpuctl_pid = getpid();
	r->bound_pid = bound;
	r->since = time(NULL);
	r->nlocks = g->n;
	for (size_t i = 0; i < g->n; i++)
		r->locks[i] = g->locks[i];
	bool ok = lease_record_write(&g->st, r, err);
	state_unlock(&g->st);
	return ok;
}

void grant_end(struct grant *g)
{
	lease_release(g->locks, g->n);
	/* Children that inherited the locks may still hold them: then the record stays (it is live
	 * for as long as they do, and its owner's next gpuctl removes it once stale). */
	if (g->rec.id[0] && state_lock(&g->st, false, &(struct gpu_error){0})) {
		struct lockset ls;
		lockset_load(&ls, &g->st);
		bool held = false;
		for (size_t i = 0; i < g->rec.nlocks; i++)
			held |= lockset_has(&ls, g->rec.locks[i].dev, g->rec.locks[i].ino);
		if (!held || !ls.usable)
			lease_record_remove(&g->st, g->rec.id);
		lockset_free(&ls);
		state_unlock(&g->st);
	}
	grant_free(g);
}

void grant_free(struct grant *g)
{
	state_close(&g->st);
	free(g->rec.name);
	free(g->rec.command);
	g->rec.name = g->rec.command = NULL;
}

char **grant_env(const struct grant *g, bool uuid)
{
	/* With CUDA_DEVICE_ORDER=PCI_BUS_ID, CUDA's ordinal of a GPU is its rank in PCI order;
	 * usually nvidia-smi's index, computed rather than assumed. */
	struct vis_machine *vm = vis_machine_new(g->set);
	struct vis_result *vr = vis_resolve(vm, NULL, "PCI_BUS_ID");
	struct strbuf ids = {0}, smi = {0}, uuids = {0};
	for (size_t i = 0; i < g->n; i++) {
		const struct gpu *gp = &g->set->gpus[g->pos[i]];
		sb_addf(&ids, "%s%d", i ? "," : "", vis_rank(vm, vr->pci, g->pos[i]));
		sb_addf(&smi, "%s%u", i ? "," : "", gp->index);
		sb_addf(&uuids, "%s%s", i ? "," : "", gp->uuid);
	}
	char **env = xcalloc(10, sizeof *env);
	size_t k = 0;
	env[k++] = xasprintf("CUDA_VISIBLE_DEVICES=%s", uuid ? uuids.buf : ids.buf);
	env[k++] = xstrdup("CUDA_DEVICE_ORDER=PCI_BUS_ID");
	env[k++] = xasprintf("NVIDIA_VISIBLE_DEVICES=%s", uuid ? uuids.buf : smi.buf);
	env[k++] = xasprintf("GPUCTL_LEASE_ID=%s", g->rec.id[0] ? g->rec.id : "dry-run");
	env[k++] = xasprintf("GPUCTL_LEASE_GPUS=%s", uuids.buf);
	if (g->rec.name)
		env[k++] = xasprintf("GPUCTL_LEASE_NAME=%s", g->rec.name);
	if (g->queued_at)
		env[k++] = xasprintf("GPUCTL_QUEUED_AT=%llu", g->queued_at);
	if (g->leased_at)
		env[k++] = xasprintf("GPUCTL_LEASED_AT=%llu", g->leased_at);
	sb_free(&ids);
	sb_free(&smi);
	sb_free(&uuids);
	vis_result_free(vr);
	vis_machine_free(vm);
	return env;
}

void grant_env_free(char **env)
{
	for (char **p = env; p && *p; p++)
		free(*p);
	free(env);
}
