/* proc.c: owner and command line of GPU processes from /proc, read once per pid per refresh
 * (a process on eight GPUs costs one read, not eight), with user names kept and asked again
 * only once a minute (proc_user_name) since getpwuid can be slow under LDAP.
 *
 * Across refreshes (status -l, the exporter) a process that is still the same keeps its command
 * line: each refresh stats /proc/PID, which it needs anyway for the owner (a process may change
 * its uid), and the inode of /proc/PID tells whether the process is the one read before. procfs
 * makes a new inode, with a new number and time, for each process a pid is given to: an old
 * process's /proc/PID dentry fails revalidation once it has died. Checking the start time in
 * /proc/PID/stat instead would cost more than reading the command line again. A command line can
 * also change (setproctitle: Ray workers rename themselves per task), so each is read again
 * after 0.5 to 1.5 times REREAD_AFTER, spread over refreshes by pid. A loop's cache
 * (proc_cache_watch_exits) skips the stat too while the process is watched and has not exited
 * (exitwatch.c: one poll a refresh tells who exited), until its text is due.
 *
 * With stats on (gpuctl top, status --details), the same visit reads /proc/PID/stat: parent,
 * start, CPU and resident memory (the stat file has them all: no statm read). CPU use is the
 * difference from the counter kept at the previous refresh, when it is the same process (the
 * same start time).
 *
 * Memory is what a big machine costs (10,000 processes): an entry is 40 bytes and the texts live
 * in 64 KiB chunks, compacted when more than half of them is garbage. The Slurm job of each
 * process (its cgroup, read once while it is the same process) lives in an array beside the
 * entries, made only on a machine that runs Slurm jobs; the stats in another (48 bytes an
 * entry), made only when a refresh asks for them, or a lookup asks for one process's (top reads
 * the stat files of the rows it shows only, unless it sorts by them). Its container (the same
 * read of its cgroup) is a pointer beside the entries, to a record made only for one in one. */
#include "machine/pid.h"
#include "machine/proc.h"
#include "machine/proc-cache.h"
#include "machine/slurm.h"
#include "machine/container.h"
#include "machine/exitwatch.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct proc_cache *proc_cache_new(void)
{
	struct proc_cache *pc = xcalloc(1, sizeof(struct proc_cache));
	pc->start = now_mono();
	pc->procfd = -2; /* opened by the first refresh that needs it */
	return pc;
}

void proc_cache_free(struct proc_cache *pc)
{
	if (!pc)
		return;
	proc_close_flush(pc);
	if (pc->procfd >= 0)
		close(pc->procfd);
	free(pc->ents);
	free(pc->slots);
	proc_texts_free(pc->chunks);
	free(pc->scratch);
	free(pc->jobs);
	for (size_t i = 0; pc->ctrs && i < pc->n; i++)
		proc_ctr_drop(&pc->ctrs[i]);
	free(pc->ctrs);
	free(pc->st);
	exit_watch_free(pc->ew);
	for (size_t i = 0; i < pc->nusers; i++)
		free(pc->users[i].name);
	free(pc->users);
	for (size_t i = 0; i < pc->nold; i++)
		free(pc->old_names[i].name);
	free(pc->old_names);
	free(pc);
}

/* A name replaced (or forgotten) in this refresh: freed two refreshes on. */
static void name_retire(struct proc_cache *pc, char *name)
{
	pc->old_names = grow_array(pc->old_names, &pc->old_cap, pc->nold + 1, sizeof *pc->old_names);
	pc->old_names[pc->nold++] = (struct old_name){name, pc->gen};
}

/* uid's name as pid.c gives it (the one lookup), asked of the directory again once it is
 * NAME_TTL old (a number that stood in, or a failed ask: NAME_TTL_MISS; pid.h), at most NAME_ASKS
 * a refresh (users_due): a daemon's cache lives for weeks, and kept its first answer for good
 * (a daemon started before LDAP answered showed numbers until restarted). A failed ask leaves
 * the name as it was. A name replaced stays valid, as the processes' texts do, until two
 * refreshes on. */
static const char *proc_user_name(struct proc_cache *pc, uid_t uid)
{
	char buf[256];
	for (size_t i = 0; i < pc->nusers; i++) {
		struct user_ent *u = &pc->users[i];
		if (u->uid != uid)
			continue;
		u->used = pc->gen;
		if (u->ask) {
			u->ask = false;
			proc_close_flush(pc); /* NSS opens files of its own: the batch's are closed */
			int r = user_name_ask(uid, buf, sizeof buf);
			u->at_ms = pc->now_ms;
			u->retry = r != 1;
			if (r >= 0 && strcmp(buf, u->name)) {
				name_retire(pc, u->name);
				u->name = xstrdup(buf);
			}
		}
		return u->name;
	}
	proc_close_flush(pc);
	const char *now = user_name(uid, buf, sizeof buf);
	pc->users = grow_array(pc->users, &pc->users_cap, pc->nusers + 1, sizeof *pc->users);
	pc->users[pc->nusers++] = (struct user_ent){.uid = uid, .retry = user_name_missed(uid, now),
						    .at_ms = pc->now_ms, .used = pc->gen,
						    .name = xstrdup(now)};
	return pc->users[pc->nusers - 1].name;
}

/* The uids whose names are due, the longest overdue first, NAME_ASKS at most: asked at their
 * first lookup in this refresh. Taken in lookup order instead, the first due took the budget at
 * every refresh and the rest waited for good. */
static void users_due(struct proc_cache *pc)
{
	for (size_t i = 0; i < pc->nusers; i++)
		pc->users[i].ask = false;
	for (unsigned k = 0; k < NAME_ASKS; k++) {
		struct user_ent *late = NULL;
		uint32_t most = 0;
		for (size_t i = 0; i < pc->nusers; i++) {
			struct user_ent *u = &pc->users[i];
			uint32_t age = pc->now_ms - u->at_ms;
			uint32_t ttl = (uint32_t)((u->retry ? NAME_TTL_MISS : NAME_TTL) * 1000);
			if (!u->ask && age >= ttl && (!late || age - ttl > most)) {
				late = u;
				most = age - ttl;
			}
		}
		if (!late)
			break;
		late->ask = true;
	}
}

/* Every 64 refreshes, the uids no refresh asked for in the last 64 or more are forgotten (65 to
 * 128 refreshes after their last): the users kept are those on the GPUs lately, not every uid a
 * long-lived daemon ever saw (a user's rootless containers may cycle through thousands of
 * subordinate uids, each scanned at every lookup). */
static void users_prune(struct proc_cache *pc)
{
	size_t k = 0;
	for (size_t i = 0; i < pc->nusers; i++) {
		if (pc->gen - pc->users[i].used > 64)
			name_retire(pc, pc->users[i].name);
		else
			pc->users[k++] = pc->users[i];
	}
	pc->nusers = k;
}

/* The names replaced two refreshes ago or more: nothing a refresh since handed out points there. */
static void old_names_free(struct proc_cache *pc)
{
	size_t k = 0;
	for (size_t i = 0; i < pc->nold; i++) {
		if (pc->gen - pc->old_names[i].gen >= 2)
			free(pc->old_names[i].name);
		else
			pc->old_names[k++] = pc->old_names[i];
	}
	pc->nold = k;
}

/* ---- the table ---- */

static void rehash(struct proc_cache *pc, size_t nslots)
{
	free(pc->slots);
	pc->nslots = nslots;
	pc->slots = xcalloc(pc->nslots, sizeof *pc->slots);
	for (size_t i = 0; i < pc->n; i++) {
		size_t h = proc_hash(pc->ents[i].pid) & (pc->nslots - 1);
		while (pc->slots[h])
			h = (h + 1) & (pc->nslots - 1);
		pc->slots[h] = (unsigned)i + 1;
	}
}

/* This refresh's time since boot, what run times are reckoned from. */
static void boot_clock(struct proc_cache *pc)
{
	struct timespec ts;   /* start times count from boot, suspend included */
	clock_gettime(CLOCK_BOOTTIME, &ts);
	pc->boot_now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Milliseconds since the cache began, through 64 bits: after 49.7 days they pass UINT32_MAX,
 * and a double cast to uint32_t straight saturates on aarch64 (wraps on x86): differences wrap
 * right. */
static uint32_t cache_ms(const struct proc_cache *pc)
{
	return (uint32_t)(uint64_t)((now_mono() - pc->start) * 1000);
}

void proc_cache_begin(struct proc_cache *pc)
{
	if (pc->procfd == -2)
		pc->procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	/* The batch of files to close holds up to 32 descriptors: only where the limit leaves
	 * room for them (a `ulimit -n 8` would otherwise leave NSS none for the owners' names). */
	struct rlimit rl;
	pc->batch_closes = getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
			   (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= PROC_CLOSE_MIN_NOFILE);
	proc_text_compact(pc);
	if (pc->ew)
		exit_watch_begin(pc->ew);
	pc->gen++;
	if (pc->nold)
		old_names_free(pc);
	if (pc->gen % 64 == 0)
		users_prune(pc);
	pc->nseen = 0;
	pc->now_ms = cache_ms(pc);
	if (pc->nusers)
		users_due(pc);
	if (pc->stats || pc->st)     /* pc->st: proc_lookup_stats may read some */
		boot_clock(pc);
}

/* Room for n entries before the lookups, so that a refresh that lists them grows the table and
 * its slots once instead of doubling its way there (and rehashing at each step). */
void proc_cache_expect(struct proc_cache *pc, size_t n)
{
	pc->ents = grow_array(pc->ents, &pc->cap, n, sizeof *pc->ents);
	size_t nslots = pc->nslots ? pc->nslots : 256;
	while (3 * nslots < 4 * (n + 1))
		nslots *= 2;
	if (nslots != pc->nslots)
		rehash(pc, nslots);
}

/* Processes no longer listed are forgotten, so the cache holds one refresh's worth. Their
 * texts stay where they are until the next proc_cache_begin. */
void proc_cache_end(struct proc_cache *pc)
{
	proc_close_flush(pc);
	if (pc->nseen == pc->n)
		return;
	size_t k = 0;
	for (size_t i = 0; i < pc->n; i++) {
		if (pc->ents[i].gen == pc->gen) {
			if (pc->jobs)
				pc->jobs[k] = pc->jobs[i];
			if (pc->ctrs)
				pc->ctrs[k] = pc->ctrs[i];
			if (pc->st)
				pc->st[k] = pc->st[i];
			pc->ents[k++] = pc->ents[i];
		} else {
			proc_text_drop(pc, &pc->ents[i]);
			if (pc->ctrs)
				proc_ctr_drop(&pc->ctrs[i]);
		}
	}
	pc->n = k;
	size_t nslots = 256;
	while (3 * nslots < 4 * (pc->n + 1))
		nslots *= 2;
	rehash(pc, nslots);
}

static struct proc_ent *find_ent(const struct proc_cache *pc, unsigned pid)
{
	for (size_t h = pc->nslots ? proc_hash(pid) & (pc->nslots - 1) : 0; pc->nslots && pc->slots[h];
	     h = (h + 1) & (pc->nslots - 1))
		if (pc->ents[pc->slots[h] - 1].pid == pid)
			return &pc->ents[pc->slots[h] - 1];
	return NULL;
}

/* The stats part of a lookup's answer, when this refresh read them. */
static void stats_out(const struct proc_cache *pc, const struct proc_ent *e, struct proc_info *out)
{
	const struct stat_ent *s = pc->st ? &pc->st[e - pc->ents] : NULL;
	if (s && out->found && s->start && s->gen == pc->gen) {
		out->stat_valid = true;
		out->state = s->state;
		out->ppid = s->ppid;
		out->start = s->start;
		out->cpu_time = (double)s->cpu * pc->tick;
		out->rss = (uint64_t)s->rss * pc->page;
		out->elapsed = pc->boot_now - (double)s->start * pc->tick;
		if (out->elapsed < 0)
			out->elapsed = 0;
		out->cpu_valid = s->cpu_valid;
		out->cpu_pct = s->cpu_pct;
	}
}

/* named: the owner's name wanted (user); without, no directory is asked for it (top's stats
 * of rows whose names the daemon's view gave). */
static void lookup(struct proc_cache *pc, unsigned pid, struct proc_info *out, bool named)
{
	if (4 * (pc->n + 1) > 3 * pc->nslots) /* at most 3/4 full */
		rehash(pc, pc->nslots ? 2 * pc->nslots : 256);
	size_t h = proc_hash(pid) & (pc->nslots - 1);
	struct proc_ent *e = NULL;
	for (; pc->slots[h]; h = (h + 1) & (pc->nslots - 1))
		if (pc->ents[pc->slots[h] - 1].pid == pid) {
			e = &pc->ents[pc->slots[h] - 1];
			break;
		}
	if (!e) {
		pc->ents = grow_array(pc->ents, &pc->cap, pc->n + 1, sizeof *pc->ents);
		if (pc->jobs) {
			size_t old = pc->jobs_cap;
			pc->jobs = grow_array(pc->jobs, &pc->jobs_cap, pc->cap, sizeof *pc->jobs);
			for (size_t i = old; i < pc->jobs_cap; i++)
				pc->jobs[i] = JOB_UNREAD;
			pc->jobs[pc->n] = JOB_UNREAD;
		}
		if (pc->ctrs) { /* slots from n on own nothing: a compaction copied them down */
			pc->ctrs = grow_array(pc->ctrs, &pc->ctrs_cap, pc->cap, sizeof *pc->ctrs);
			pc->ctrs[pc->n] = PROC_CTR_UNREAD;
		}
		if (pc->st) {
			pc->st = grow_array(pc->st, &pc->st_cap, pc->cap, sizeof *pc->st);
			pc->st[pc->n] = (struct stat_ent){0};
		}
		e = &pc->ents[pc->n];
		*e = (struct proc_ent){.pid = pid};
		pc->slots[h] = (unsigned)++pc->n;
	}
	if (e->gen != pc->gen) {
		e->gen = pc->gen;
		pc->nseen++;
		proc_refresh_ent(pc, e);
	}
	bool found = pc->no_owner ? e->text != NULL : e->ident != 0;
	uint32_t job = 0;
	const struct ctr_ref *ctr = NULL;
	if ((pc->want_jobs || pc->want_ctrs) && found) {
		proc_read_cgroup(pc, e);
		job = pc->want_jobs ? pc->jobs[e - pc->ents] : 0;
		ctr = pc->want_ctrs ? pc->ctrs[e - pc->ents] : NULL;
	}
	*out = (struct proc_info){.pid = pid, .found = found, .uid = e->uid, .slurm_job = job, .ctr = ctr,
				  .user = found && named && !pc->no_owner ? proc_user_name(pc, e->uid) : NULL,
				  .cmdline = e->text, .name = e->text ? e->text + e->name_off : NULL};
	stats_out(pc, e, out);
}

void proc_lookup(struct proc_cache *pc, unsigned pid, struct proc_info *out)
{
	lookup(pc, pid, out, true);
}

void proc_lookup_stats(struct proc_cache *pc, unsigned pid, struct proc_info *out)
{
	if (!pc->st) {
		bool on = pc->stats;
		proc_cache_stats(pc, true);   /* the array and the clock's units, not the mode */
		pc->stats = on;
		/* proc_cache_begin read no clock, there being no stats then: without it every run
		 * time of top's first frame was 0:00 (now minus a start, clamped). */
		boot_clock(pc);
	}
	lookup(pc, pid, out, false);
	struct proc_ent *e = find_ent(pc, pid);
	if (!e || !out->found || pc->st[e - pc->ents].gen == pc->gen)
		return;
	/* Read now, perhaps well after the refresh began (a row scrolled into view): CPU use is
	 * reckoned from this moment. */
	proc_read_stats(pc, e, cache_ms(pc));
	stats_out(pc, e, out);
}
