/* env.c: `eval "$(gpuctl env -n 1)"`: lease GPUs for an interactive shell or notebook and
 * print the exports. A small background holder keeps the lease's descriptors; it ends, and the
 * lease with it, when the shell it is bound to exits or on `gpuctl release`. */
#include "base/escape.h"
#include "base/json.h"
#include "cmd/leaseopts.h"
#include "lease/holder.h"
#include "lease/hook.h"
#include "machine/pid.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum fmt { F_SH, F_FISH, F_JSON, F_DOCKER };

static volatile sig_atomic_t release_now;

static void on_term(int sig)
{
	(void)sig;
	release_now = 1;
}

/* Whether pid still names the process that started at `start` (no pidfds: looked at now and
 * then). */
static bool still_bound(pid_t pid, unsigned long long start)
{
	struct pid_stat st;
	return pid_stat((unsigned)pid, &st) && st.start == start;
}

/* The holder: no stdio (so $(...) returns), its own session; it holds the lease's descriptors
 * until the bound process exits or it is told to let go (`gpuctl release`: SIGTERM). The bound
 * process is the one a pidfd was opened on when `env` began: if it exited while we were queued
 * and its pid now names another process (anyone's), the lease is not tied to that stranger but
 * ends here, before it is committed; `ready` then closes with nothing written. */
/* -- time limits (issue 24): milliseconds from now to the lease's end (-1: no limit) -- */
static int ms_to(unsigned long long until_ns)
{
	if (!until_ns)
		return -1;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	unsigned long long now = (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
	unsigned long long ms = until_ns > now ? (until_ns - now) / 1000000 + 1 : 0;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* --events-fd (issue 24): a descriptor the caller (Python's lease()) reads the holder's word on
 * the lease from, one line per event; -1: none. */
static int events_fd = -1;
/* Notify hooks (lease/hook.h): --notify CMD, else [defaults] notify, on the lease's events. */
static struct lhook env_hook;

static void hold(struct grant *g, pid_t bound, unsigned long long start, int pfd, int ready)
{
	/* The terminal of the shell, kept to tell it when the lease ends at its limit (the user's
	 * own process writing to the user's own terminal; issue 24). */
	int tty = isatty(STDERR_FILENO) ? fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3) : -1;
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0), dup2(null, 1), dup2(null, 2);
		if (null > 2)
			close(null);
	}
	setsid();
	if (chdir("/") != 0)
		_exit(1);
	struct sigaction sa = {.sa_handler = on_term};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* pfd: opened on the bound process when env began (see env), so it is that process's
	 * whatever its pid names now: readable once it exited, even where a stranger took the pid
	 * within the same clock tick (its start time then the same: the start time alone told them
	 * apart only 10 ms at a time). No pidfds (a kernel before 5.3): the start time. */
	struct pollfd gone = {.fd = pfd, .events = POLLIN};
	if (pfd >= 0 ? poll(&gone, 1, 0) != 0 : !still_bound(bound, start))
		_exit(1);
	grant_hold(g, bound, 1);
	/* The daemon knows the holder (`gpuctl release` can find it from now on), and the bound
	 * process was still there: say so, then close. */
	if (write(ready, "1", 1) != 1)
		_exit(1);
	close(ready);
	/* Idle leases (issue 24): the daemon's warnings go to the shell's terminal; a release for
	 * idleness lets go of the lease. */
	struct lwatch w;
	lwatch_open(&w, g);
	struct pollfd p[2] = {{.fd = pfd, .events = POLLIN}, {.fd = lwatch_fd(&w), .events = POLLIN}};
	int ms;
	bool idle_released = false;
	while (!release_now && pfd >= 0 && (ms = ms_to(g->until_ns)) != 0) {
		p[1].fd = lwatch_fd(&w);
		int near = lhook_near_ms(&env_hook); /* (the notify hook's time-near) */
		int r = poll(p, 2, near >= 0 && (ms < 0 || near < ms) ? near : ms);
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0 && p[0].revents)
			break;
		lhook_near(&env_hook);
		if (r > 0 && p[1].revents) {
			struct lwatch_event ev;
			char line[512];
			lwatch_read(&w, &ev);
			lwatch_text(&ev, "gpuctl env", g->id, line, sizeof line);
			if (line[0] && tty >= 0)
				dprintf(tty, "\n%s", line);
			if (events_fd >= 0 && ev.what == LW_IDLE_WARN)
				dprintf(events_fd, "idle-warn %lu %lu\n", ev.idle, ev.release_in);
			else if (events_fd >= 0 && ev.what == LW_IDLE_RELEASE)
				dprintf(events_fd, "idle-release %lu\n", ev.idle);
			if (ev.what == LW_IDLE_WARN || ev.what == LW_IDLE_RELEASE) /* notify hooks */
				lhook_fire(&env_hook, ev.what == LW_IDLE_WARN ? "idle-warn" : "idle-release",
					   "running", -1);
			if (ev.what == LW_IDLE_RELEASE) {
				idle_released = true;
				break;
			}
		}
	}
	if (idle_released)
		_exit(0);
	while (!release_now && pfd < 0 && still_bound(bound, start) && ms_to(g->until_ns) != 0)
		sleep(1); /* no pidfd (an old kernel): look now and then */
	if (!release_now && ms_to(g->until_ns) == 0 && tty >= 0)
		dprintf(tty, "\ngpuctl env: lease %s reached its time limit (--time) and is released: "
			"stop using its GPUs (CUDA_VISIBLE_DEVICES); `gpuctl env` again for another\n",
			g->id);
	_exit(0); /* the lease ends with this process's descriptors */
}

/* The shell env was run from: its parent, unless that is a subshell the shell forked to run it.
 * bash forks one for `x=$(gpuctl env 2>&1)` or `docker run $(gpuctl env --format=docker
 * 2>/dev/null) IMAGE` (a command substitution with a redirection, or a pipeline) and it exits a
 * moment after env does: bound to it, the lease would end at once while the shell goes on using
 * the GPUs, and the daemon would give them to the next job. Such copies are walked past up to the
 * shell they were forked from (a `( ... )` subshell too: its lease lives as long as the shell,
 * longer than needed but never shorter). 0 with why set: cannot tell, and guessing either way
 * could be wrong. */
static pid_t invoking_shell(char *why, size_t len)
{
	pid_t p = getppid();
	for (int depth = 0; depth < 64; depth++) {
		struct pid_stat st;
		if (!pid_stat((unsigned)p, &st) || st.ppid <= 1)
			return p;
		int forked = pid_is_fork_of((unsigned)p, (unsigned)st.ppid);
		if (forked < 0) {
			snprintf(why, len, "cannot tell which shell the lease is for: process %d looks like "
				 "a subshell of process %d, but their memory maps cannot be read to be sure; "
				 "name the shell: eval \"$(gpuctl env --hold-pid $$ ...)\"", (int)p, st.ppid);
			return 0;
		}
		if (!forked)
			return p;
		p = st.ppid;
	}
	return p;
}

/* fish: in single quotes, backslash escapes a quote and a backslash; nothing else is special. */
static void quote_fish(struct strbuf *sb, const char *v)
{
	sb_addc(sb, '\'');
	for (const char *p = v; *p; p++) {
		if (*p == '\'' || *p == '\\')
			sb_addc(sb, '\\');
		sb_addc(sb, *p);
	}
	sb_addc(sb, '\'');
}

static void print_exports(char **env, enum fmt fmt, const struct grant *g, bool uuid)
{
	struct strbuf sb = {0};
	struct json j;
	if (fmt == F_DOCKER) {
		/* `docker run $(gpuctl env --format=docker) IMAGE`: after command substitution the
		 * words are split but no quotes removed, so print none but the ones docker's CSV
		 * parser of --gpus wants around a list ("device=0,1" is one field). */
		sb_adds(&sb, "--gpus \"device=");
		/* review 2 follow-up: a MIG lease names its instance (as runctr.c does): its parent
		 * GPU would give the container every instance on it, others' too */
		if (g->mig_uuid[0])
			sb_adds(&sb, g->mig_uuid);
		for (size_t i = 0; !g->mig_uuid[0] && i < g->n; i++) {
			const struct gpu *gp = &g->set->gpus[g->pos[i]];
			if (uuid)
				sb_addf(&sb, "%s%s", i ? "," : "", gp->uuid);
			else
				sb_addf(&sb, "%s%u", i ? "," : "", gp->index);
		}
		sb_adds(&sb, "\"");
		/* containers (issue 28, review 2 follow-up): the lease's variables as `run -- docker
		 * run` gives them, by UUID (the host's ordinals mean other GPUs inside):
		 * CUDA_VISIBLE_DEVICES narrows CUDA to the lease whatever nodes the container has,
		 * and a share's limits reach it. Not NVIDIA_VISIBLE_DEVICES (--gpus sets it), not the
		 * profile's (below), only words that survive splitting. */
		char **lease = grant_env(g, true);
		size_t nl = 0, np = 0;
		while (lease[nl])
			nl++;
		while (g->profile_env && g->profile_env[np])
			np++;
		for (size_t i = 0; i + np < nl; i++) {
			if (!strncmp(lease[i], "NVIDIA_VISIBLE_DEVICES=", 23))
				continue;
			if (strpbrk(lease[i], " \t\n*?[\\'\"$`")) {
				fprintf(stderr, "gpuctl env: %.*s is not passed to docker: its value does not "
					"survive $(...) word splitting\n", (int)strcspn(lease[i], "="), lease[i]);
				continue;
			}
			sb_addf(&sb, " -e %s", lease[i]);
		}
		grant_env_free(lease);
		/* The profile's variables as -e words: only values that survive word splitting and
		 * pathname expansion unchanged can be passed this way. */
		for (char **p = g->profile_env; p && *p; p++) {
			if (strpbrk(*p, " \t\n*?[\\'\"$`")) {
				fprintf(stderr, "gpuctl env: %.*s is not passed to docker: its value does not "
					"survive $(...) word splitting (use --format=sh and docker run -e)\n",
					(int)strcspn(*p, "="), *p);
				continue;
			}
			sb_addf(&sb, " -e %s", *p);
		}
		sb_addc(&sb, '\n');
	} else if (fmt == F_JSON) {
		json_init(&j, &sb, false);
		json_obj(&j, NULL);
	}
	for (char **p = env; fmt != F_DOCKER && *p; p++) {
		char *eq = strchr(*p, '=');
		*eq = '\0';
		if (fmt == F_SH) {
			sb_addf(&sb, "export %s=", *p);
			sh_quote(&sb, eq + 1); /* also bash and zsh */
			sb_adds(&sb, ";\n");
		} else if (fmt == F_FISH) {
			sb_addf(&sb, "set -gx %s ", *p);
			quote_fish(&sb, eq + 1);
			sb_adds(&sb, ";\n");
		} else {
			json_str(&j, *p, eq + 1);
		}
		*eq = '=';
	}
	if (fmt == F_JSON) {
		json_end_obj(&j);
		sb_addc(&sb, '\n');
	}
	fputs(sb.buf, stdout);
	fflush(stdout);
	sb_free(&sb);
}

enum { O_FORMAT = 'f', O_HOLD = 'H', O_EVENTS = 380 /* issue 24 (390: --time, 360s: --bind-cpus) */ };
enum { O_NOTIFY_ENV = LO_NOTIFY }; /* notify hooks (NOTIFY_LONGOPTS) */

static int env_cmd(struct cmd *c)
{
	static const char *const formats[] = {"sh", "fish", "json", "docker", NULL}; /* enum fmt */
	struct lease_opts o = {.rq = {.max_util = -1, .prefer = -1, .kind = "env", .who = "gpuctl env"}};
	unsigned long bound = 0;
	/* fish runs `gpuctl env | source` itself (it forks no copy of itself for it), and exports
	 * nothing that says it is fish ($FISH_VERSION is its own): its parent's name tells. */
	char parent[32];
	bool fish = pid_comm((unsigned)getppid(), parent, sizeof parent) && !strcmp(parent, "fish");
	int fmt = args_choice(&c->args, O_FORMAT, formats, fish ? F_FISH : F_SH);
	unsigned long efd = 0;
	if (fmt < 0 || !args_uint(&c->args, O_HOLD, 1, INT_MAX, &bound) ||
	    !args_uint(&c->args, O_EVENTS, 3, INT_MAX, &efd))
		return cmd_args_error(c);
	if (args_has(&c->args, O_EVENTS)) { /* issue 24: must be an open descriptor */
		if (fcntl((int)efd, F_GETFD) < 0)
			return cmd_bad_usage(c->entry, "--events-fd %lu is not an open descriptor", efd);
		events_fd = (int)efd;
		fcntl(events_fd, F_SETFD, FD_CLOEXEC);
	}
	if (!args_has(&c->args, O_HOLD)) {
		char why[512];
		pid_t shell = invoking_shell(why, sizeof why);
		if (!shell)
			return cmd_bad_usage(c->entry, "%s", why);
		bound = (unsigned long)shell;
	}
	/* Another user's process may be bound too (harmless: it only decides when this lease ends). */
	if (args_has(&c->args, O_HOLD) && kill((pid_t)bound, 0) != 0 && errno != EPERM)
		return cmd_bad_usage(c->entry, "--hold-pid wants the pid of a running process, not '%s'",
				     args_get(&c->args, O_HOLD));
	if (c->args.argc)
		return cmd_bad_usage(c->entry, "unexpected argument '%s' (to run a command, use gpuctl run)",
				     c->args.argv[0]);
	/* The pid and its start time name the process: a pid alone may be another's by the time
	 * the lease is granted (a queue wait is long enough for the pid to come round again). It is
	 * pinned now, before that wait, by a pidfd (hold reads its exit from it): opened first, its
	 * start time checked after, so it is on that process or fails. No pidfds here (ENOSYS: a
	 * kernel before 5.3, or a container's seccomp filter that predates them): the start time
	 * alone, as before pidfds. */
	struct pid_stat bst;
	int bpfd = -1;
	bool exited = !pid_stat((unsigned)bound, &bst);
	if (!exited) {
		bpfd = pid_open((unsigned)bound, bst.start);
		exited = bpfd < 0 && errno == ESRCH;
	}
	if (exited) {
		if (args_has(&c->args, O_HOLD))
			return cmd_bad_usage(c->entry, "--hold-pid: cannot read /proc/%lu/stat (the process "
					     "exited, or lives in another PID namespace)", bound);
		fprintf(stderr, "gpuctl env: the process that started it (pid %lu) has already exited; "
			"nothing leased\n", bound);
		return EXIT_FAIL;
	}
	int rc = lease_opts_read(c, &o);
	if (rc != EXIT_OK) {
		if (bpfd >= 0)
			close(bpfd);
		return rc;
	}
	char *command = xasprintf("(env lease for pid %lu)", bound);
	o.rq.command = command;
	struct config cfg;
	struct grant g;
	rc = lease_begin(c, &o, &cfg, &g);
	if (rc != EXIT_OK) {
		free(command);
		if (bpfd >= 0)
			close(bpfd);
		return rc;
	}
	struct gpu_set *set = g.set;
	if (o.rq.dry_run) {
		char **env = grant_env(&g, o.uuid);
		print_exports(env, fmt, &g, o.uuid);
		grant_env_free(env);
		grant_free(&g);
	} else {
		char **env = grant_env(&g, o.uuid);
		fflush(NULL);
		int ready[2];
		if (pipe2(ready, O_CLOEXEC) != 0)
			die(EXIT_FAIL, "pipe: %s", strerror(errno));
		pid_t pid = fork();
		if (pid < 0)
			die(EXIT_FAIL, "fork: %s", strerror(errno));
		if (pid == 0) {
			close(ready[0]);
			grant_env_free(env); /* the parent's to print */
			const char *notify = args_get(&c->args, O_NOTIFY_ENV);
			lhook_init(&env_hook, &g, "env", notify ? notify : cfg.notify, cfg.notify_timeout, false);
			hold(&g, (pid_t)bound, bst.start, bpfd, ready[1]);
		}
		close(ready[1]);
		struct pollfd rp = {.fd = ready[0], .events = POLLIN};
		char ok = 0;
		/* A byte once it committed; EOF alone when it gave up, the lease with it (the bound
		 * process is gone); nothing yet: a slow daemon, and the lease holds regardless. */
		bool gone = poll(&rp, 1, 2000) == 1 && read(ready[0], &ok, 1) == 0;
		close(ready[0]);
		if (gone) {
			fprintf(stderr, "gpuctl env: process %lu, which the lease was to be bound to, exited "
				"before the lease was granted (its pid may name another process now); the "
				"lease (%s) is released and nothing is exported\n", bound, g.id);
			rc = EXIT_FAIL;
		} else {
			print_exports(env, fmt, &g, o.uuid);
		}
		if (!o.quiet && !gone) {
			fprintf(stderr, "gpuctl env: leased GPU");
			for (size_t i = 0; i < g.n; i++)
				fprintf(stderr, "%s%u", i ? "," : " ", set->gpus[g.pos[i]].index);
			fprintf(stderr, " (lease %s) until process %lu exits or `gpuctl release`\n", g.id,
				bound);
		}
		grant_free(&g); /* the holder keeps its own copies */
		grant_env_free(env);
	}
	if (bpfd >= 0)
		close(bpfd);
	free(command);
	config_free(&cfg);
	return rc;
}

static const struct option longopts[] = {
	{"format", required_argument, NULL, O_FORMAT}, {"hold-pid", required_argument, NULL, O_HOLD},
	{"events-fd", required_argument, NULL, O_EVENTS}, /* issue 24 */
	NOTIFY_LONGOPTS, /* notify hooks */
	LEASE_LONGOPTS, {0},
};

const struct cmd_entry cmd_env_entry = {
	.name = "env",
	.summary = "lease GPUs for this shell or notebook: eval \"$(gpuctl env -n 1)\"",
	.usage = "env [OPTIONS]\n\n"
		 "Lease GPUs and print the variables to export. A background holder keeps the lease\n"
		 "until the calling shell (or --hold-pid PID) exits, or `gpuctl release`. Set them\n"
		 "before CUDA starts: in Python, before `import torch` touches the GPU.\n\n"
		 "  -f, --format sh|fish|json|docker   (docker: --gpus \"device=...\" and -e words for\n"
		 "                             `docker run $(gpuctl env --format=docker) IMAGE`:\n"
		 "                             CUDA_VISIBLE_DEVICES by UUID, GPUCTL_LEASE_*, a share's\n"
		 "                             limits, the profile's;\n"
		 "                             default: fish when run from fish, else sh)\n"
		 "      --hold-pid PID        bind the lease to this process instead of the calling shell\n"
		 "                             (a subshell forked for $(...) is skipped: the shell itself)\n"
		 "      --events-fd FD        the holder writes a line on FD when the lease is warned idle\n"
		 "                             (idle-warn IDLE RELEASE_IN) or released (idle-release IDLE)\n"
		 "      --notify CMD           the holder runs CMD (/bin/sh -c, as you) when the lease is\n"
		 "                             warned idle or released for it (idle-warn, idle-release)\n"
		 "                             and near its --time (time-near); GPUCTL_EVENT,\n"
		 "                             GPUCTL_LEASE_ID, GPUCTL_GPUS in its environment (default:\n"
		 "                             [defaults] notify; killed after notify_timeout)\n"
		 LEASE_USAGE,
	.args = {.shorts = "n:f:q", .longs = longopts, .upper = -1}, /* extra words: a hint, below */
	.flags = CMD_GPUS,
	.exec = env_cmd,
};
