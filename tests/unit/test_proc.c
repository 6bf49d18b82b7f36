/* test_proc.c: the /proc cache (src/machine/proc.c): what it reads, that a process still the same is not
 * read again across refreshes, that one gone is seen gone, that texts survive the compaction of
 * their chunks, and one process's stats read on demand; a loop's cache (exitwatch.c) sees an
 * exited process gone at the next refresh, as the stat did. */
#include "machine/proc.h"
#include "machine/exitwatch.h"
#include "machine/pid.h"
#include "machine/proc-cache.h"
#include "tap.h"
#include "base/util.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The command line as status shows it: arguments joined by spaces. */
static char *joined_cmdline(pid_t pid, char **argv0)
{
	char path[64];
	size_t len;
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	char *s = read_file(path, &len);
	if (!s)
		return NULL;
	while (len && s[len - 1] == '\0')
		len--;
	*argv0 = xstrdup(s);
	for (size_t i = 0; i < len; i++)
		if (!s[i])
			s[i] = ' ';
	s[len] = '\0';
	return s;
}

static pid_t start_sleep(void)
{
	pid_t p = fork();
	if (p == 0) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	/* Wait (up to 5 s) for the exec: before it, the child's command line is ours. */
	for (int i = 0; i < 500; i++) {
		char *a0 = NULL, *s = joined_cmdline(p, &a0);
		bool done = s && !strcmp(s, "sleep 30");
		free(s);
		free(a0);
		if (done)
			break;
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	return p;
}

/* A loop's cache: no stat of a process watched and alive, but one that exited is gone at the
 * next refresh; the watch itself: alive until the exit, then forgotten; its budget holds. */
static void test_watched(void)
{
	struct proc_cache *pc = proc_cache_new();
	proc_cache_watch_exits(pc, 2);
	struct proc_info kid, again;
	pid_t p = start_sleep();
	for (int i = 0; i < 3; i++) {
		proc_cache_begin(pc);
		proc_lookup(pc, (unsigned)p, i ? &again : &kid);
		proc_cache_end(pc);
	}
	CHECK(kid.found && kid.uid == getuid() && kid.user != NULL);
	CHECK_STR(kid.cmdline, "sleep 30");
	CHECK(again.found && again.uid == kid.uid && again.cmdline == kid.cmdline); /* kept */
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	proc_cache_begin(pc);
	proc_lookup(pc, (unsigned)p, &again);
	proc_cache_end(pc);
	CHECK(!again.found && !again.cmdline && !again.user);
	proc_cache_free(pc);

	struct exit_watch *w = exit_watch_new_max(1);
	pid_t a = start_sleep(), b = start_sleep();
	exit_watch_begin(w);
	exit_watch_add(w, (unsigned)a);
	exit_watch_add(w, (unsigned)b);        /* over the budget of 1: not watched */
	exit_watch_begin(w);
	bool alive_a = exit_watch_alive(w, (unsigned)a), alive_b = exit_watch_alive(w, (unsigned)b);
	CHECK(alive_a && !alive_b);
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	exit_watch_begin(w);                   /* the exit seen: forgotten */
	CHECK(!exit_watch_alive(w, (unsigned)a));
	exit_watch_add(w, (unsigned)b);        /* room again */
	exit_watch_begin(w);
	CHECK(exit_watch_alive(w, (unsigned)b));
	exit_watch_begin(w);                   /* not asked for by the last refresh: forgotten */
	exit_watch_begin(w);
	CHECK(!exit_watch_alive(w, (unsigned)b));
	kill(b, SIGKILL);
	waitpid(b, NULL, 0);
	exit_watch_free(w);
}

/* A refresh that looks up this process (out), or n that look up nothing. */
static void refresh_me(struct proc_cache *pc, struct proc_info *out)
{
	proc_cache_begin(pc);
	proc_lookup(pc, (unsigned)getpid(), out);
	proc_cache_end(pc);
}

static void refreshes(struct proc_cache *pc, int n)
{
	for (int i = 0; i < n; i++) {
		proc_cache_begin(pc);
		proc_cache_end(pc);
	}
}

/* The names a long-lived cache keeps: a uid no refresh asked for in 64 or more is forgotten
 * (its name freed two refreshes later: ASan sees a use after), and named anew when it comes
 * back. */
static void test_names_kept(void)
{
	struct proc_cache *pc = proc_cache_new();
	struct proc_info a, b;
	refresh_me(pc, &a);
	char *first = a.user ? xstrdup(a.user) : NULL;
	CHECK(a.found && first && pc->nusers == 1);
	refreshes(pc, 64);   /* a.user stays valid while asked for: until pruned */
	CHECK(pc->nusers == 1 && a.user && first && !strcmp(a.user, first));
	refreshes(pc, 130);
	CHECK(pc->nusers == 0 && pc->nold == 0);
	refresh_me(pc, &b);
	CHECK(pc->nusers == 1 && b.user && first && !strcmp(b.user, first));
	free(first);
	proc_cache_free(pc);
}

/* A name grown old is asked of the directory again: one that changed replaces the kept one
 * (the old stays readable for two refreshes); past NAME_ASKS due at once, the longest overdue
 * go first. */
static void test_names_asked(void)
{
	struct proc_cache *pc = proc_cache_new();
	struct proc_info a, b;
	refresh_me(pc, &a);
	char *real = a.user ? xstrdup(a.user) : NULL;
	CHECK(real && pc->nusers == 1);
	if (!real || pc->nusers != 1) {
		free(real);
		proc_cache_free(pc);
		return;
	}
	/* as if the directory had said another name a minute ago */
	free(pc->users[0].name);
	pc->users[0].name = xstrdup("renamed-since");
	pc->users[0].at_ms = pc->now_ms - (uint32_t)(NAME_TTL * 1000) - 1000;
	pc->users[0].retry = false;
	/* and twenty other uids due, overdue by 1..20 s: uid 3000000000+i by i s */
	for (unsigned i = 1; i <= 20; i++) {
		pc->users = grow_array(pc->users, &pc->users_cap, pc->nusers + 1, sizeof *pc->users);
		pc->users[pc->nusers++] = (struct user_ent){.uid = 3000000000u + i, .used = pc->gen,
			.at_ms = pc->now_ms - (uint32_t)(NAME_TTL * 1000) - i * 1000,
			.name = xstrdup("x")};
	}
	const char *old = pc->users[0].name;
	proc_cache_begin(pc);
	unsigned asked = 0, oldest = 0;
	for (size_t i = 1; i < pc->nusers; i++)
		if (pc->users[i].ask) {
			asked++;
			oldest += pc->users[i].uid - 3000000000u > 20 - NAME_ASKS;
		}
	CHECK(asked == NAME_ASKS && oldest == NAME_ASKS);   /* the 8 most overdue */
	CHECK(!pc->users[0].ask);                          /* ours, 1 s over, waits */
	proc_cache_end(pc);
	/* the others asked since: ours is asked at its next lookup, and the new name replaces */
	for (size_t i = 1; i < pc->nusers; i++)
		pc->users[i].at_ms = pc->now_ms;
	proc_cache_begin(pc);
	CHECK(pc->users[0].ask);
	proc_lookup(pc, (unsigned)getpid(), &b);
	proc_cache_end(pc);
	CHECK_STR(b.user, real);
	CHECK(!strcmp(old, "renamed-since"));       /* the replaced name, still readable */
	refreshes(pc, 2);
	CHECK(pc->nold == 0);                       /* and freed since */
	free(real);
	proc_cache_free(pc);
}

void test_proc(void)
{
	test_watched();
	test_names_kept();
	test_names_asked();
	struct proc_cache *pc = proc_cache_new();
	struct proc_info me, none, kid, again;
	char *argv0 = NULL, *want = joined_cmdline(getpid(), &argv0);

	proc_cache_begin(pc);
	proc_lookup(pc, (unsigned)getpid(), &me);
	proc_lookup(pc, 0x7ffffff0U, &none);
	proc_cache_end(pc);
	CHECK(me.found && me.uid == getuid() && me.user != NULL);
	CHECK_STR(me.cmdline, want);
	CHECK_STR(me.name, argv0);
	CHECK(!none.found && !none.cmdline && !none.name && !none.user);

	pid_t p = start_sleep();
	proc_cache_begin(pc);
	proc_lookup(pc, (unsigned)p, &kid);
	proc_lookup(pc, (unsigned)p, &again);   /* a process on two GPUs: one read */
	proc_cache_end(pc);
	CHECK_STR(kid.cmdline, "sleep 30");
	CHECK_STR(kid.name, "sleep");
	CHECK(again.cmdline == kid.cmdline);
	proc_cache_begin(pc);
	proc_lookup(pc, (unsigned)p, &again);
	proc_cache_end(pc);
	CHECK(again.found && again.cmdline == kid.cmdline); /* the same process: not read again */
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	proc_cache_begin(pc);
	proc_lookup(pc, (unsigned)p, &again);
	proc_cache_end(pc);
	CHECK(!again.found && !again.cmdline);

	/* A process listed, then not, then again, thousands of times: its text is dropped and read
	 * again each time, so the chunks fill with garbage and get compacted, moving the text of a
	 * process listed all along. */
	p = start_sleep();
	bool right = true;
	for (int i = 0; i < 10000 && right; i++) {
		proc_cache_begin(pc);
		proc_lookup(pc, (unsigned)p, &kid);
		right = kid.cmdline && !strcmp(kid.cmdline, "sleep 30") && !strcmp(kid.name, "sleep");
		if (i % 2 == 0) {
			proc_lookup(pc, (unsigned)getpid(), &me);
			right &= me.cmdline && !strcmp(me.cmdline, want) && !strcmp(me.name, argv0);
		}
		proc_cache_end(pc);
	}
	CHECK(right);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	free(want);
	free(argv0);
	proc_cache_free(pc);

	/* Stats off for the refresh, one process's read on demand (top's rows on screen): the
	 * lookups that follow in the same refresh have them; the next refresh has none until asked,
	 * and then the CPU use since that reading. */
	pc = proc_cache_new();
	proc_cache_begin(pc);
	proc_lookup(pc, (unsigned)getpid(), &me);
	CHECK(me.found && !me.stat_valid);
	proc_lookup_stats(pc, (unsigned)getpid(), &me);
	CHECK(me.stat_valid && me.start > 0 && me.rss > 0 && !me.cpu_valid);
	proc_lookup(pc, (unsigned)getpid(), &me);
	CHECK(me.stat_valid);
	proc_cache_end(pc);
	struct timespec pause = {0, 20000000};
	nanosleep(&pause, NULL);
	proc_cache_begin(pc);
	proc_lookup(pc, (unsigned)getpid(), &me);
	CHECK(me.found && !me.stat_valid);
	proc_lookup_stats(pc, (unsigned)getpid(), &me);
	CHECK(me.stat_valid && me.cpu_valid && me.cpu_pct >= 0);
	proc_cache_end(pc);
	proc_cache_free(pc);

	/* The first refresh of a cache with stats off, a process's read on demand (top's first
	 * frame): its run time counts to now, as with stats on (it was 0: the refresh had not
	 * read the clock, there being no stats yet). pid 1 has run a while. */
	struct proc_info ref, first;
	pc = proc_cache_new();
	proc_cache_stats(pc, true);
	proc_cache_begin(pc);
	proc_lookup(pc, 1, &ref);
	proc_cache_end(pc);
	proc_cache_free(pc);
	pc = proc_cache_new();
	proc_cache_begin(pc);
	proc_lookup_stats(pc, 1, &first);
	proc_cache_end(pc);
	proc_cache_free(pc);
	if (ref.stat_valid && ref.elapsed > 2)
		CHECK(first.stat_valid && first.elapsed > ref.elapsed - 1 && first.elapsed < ref.elapsed + 1);
}
