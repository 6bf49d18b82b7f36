/* cmd-kill.c: `gpuctl kill`: signal GPU processes safely, instead of kill $(ps aux | grep ...).
 * Only processes NVML lists are candidates; another user's are never touched unless root names
 * that user; each signal goes through a pidfd opened on the exact process that was listed (its
 * start time checked), so a pid that is reused meanwhile is never hit. */
#include "devices.h"
#include "gpu.h"
#include "gpuctl.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct target {
	unsigned pid;
	uid_t uid;
	const char *user, *cmd;
	uint64_t mem;            /* GPU memory over all its GPUs, bytes */
	char gpus[64];
	int pidfd;
	unsigned long long start;
	enum { T_PENDING, T_REFUSED, T_GONE, T_ENDED, T_KILLED, T_SURVIVED, T_HIDDEN, T_SIGNALLED } state;
};

static const struct { const char *name; int sig; } signals[] = {
	{"TERM", SIGTERM}, {"INT", SIGINT}, {"HUP", SIGHUP}, {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
	{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"STOP", SIGSTOP}, {"CONT", SIGCONT},
};

static int parse_signal(const char *s)
{
	unsigned long n;
	if (parse_uint(s, &n))
		return n > 0 && n < 65 ? (int)n : -1;
	if (!strncmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
		if (!strcasecmp(s, signals[i].name))
			return signals[i].sig;
	return -1;
}

static const char *signal_name(int sig)
{
	for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
		if (signals[i].sig == sig)
			return signals[i].name;
	return "?";
}

/* Field 22 of /proc/PID/stat: when the process started, in clock ticks since boot. */
static unsigned long long start_time(unsigned pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%u/stat", pid);
	char *text = read_file(path, NULL);
	const char *p = text ? strrchr(text, ')') : NULL;
	unsigned long long st = 0;
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
			       "%*d %*d %llu", &st) != 1)
		st = 0;
	free(text);
	return st;
}

/* A pidfd on the process that was listed, or -1 when it is gone or another took its pid. */
static int open_exact(struct target *t)
{
	int fd = (int)syscall(SYS_pidfd_open, t->pid, 0);
	if (fd >= 0 && start_time(t->pid) != t->start) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static bool send(const struct target *t, int sig)
{
	return syscall(SYS_pidfd_send_signal, t->pidfd, sig, NULL, 0) == 0;
}

/* Wait up to secs for the pending targets to end (a pidfd becomes readable when its process
 * does); those that do take state `done`. */
static void wait_ended(struct target *t, size_t n, double secs, int done)
{
	double end = now_mono() + secs;
	for (;;) {
		struct pollfd fds[256];
		size_t map[256], nf = 0;
		for (size_t i = 0; i < n && nf < 256; i++)
			if (t[i].state == T_PENDING) {
				fds[nf] = (struct pollfd){.fd = t[i].pidfd, .events = POLLIN};
				map[nf++] = i;
			}
		double left = end - now_mono();
		if (!nf || left <= 0 || poll(fds, nf, (int)(left * 1000) + 1) <= 0)
			return;
		for (size_t k = 0; k < nf; k++)
			if (fds[k].revents)
				t[map[k]].state = done;
	}
}

static bool in_list(const char *list, unsigned v)
{
	char *copy = xstrdup(list), *save = NULL;
	bool hit = false;
	for (char *tok = strtok_r(copy, ", ", &save); tok && !hit; tok = strtok_r(NULL, ", ", &save))
		hit = strtoul(tok, NULL, 10) == v;
	free(copy);
	return hit;
}

static bool confirm(size_t n, int sig)
{
	fprintf(stderr, "Send SIG%s to %zu process%s? [y/N] ", signal_name(sig), n, n == 1 ? "" : "es");
	char buf[16];
	return fgets(buf, sizeof buf, stdin) && (buf[0] == 'y' || buf[0] == 'Y');
}

static int kill_cmd(int argc, char **argv)
{
	const struct cmd_entry *e = &cmd_kill_entry;
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'}, {"gpu", required_argument, NULL, 'g'},
		{"pid", required_argument, NULL, 'p'}, {"user", required_argument, NULL, 'u'},
		{"mine", no_argument, NULL, 'm'}, {"signal", required_argument, NULL, 's'},
		{"grace", required_argument, NULL, 'G'}, {"dry-run", no_argument, NULL, 'n'},
		{"yes", no_argument, NULL, 'y'}, {0},
	};
	const char *gpus = NULL, *pids = NULL, *user = NULL;
	bool mine = false, dry = false, yes = false;
	int sig = SIGTERM, c;
	double grace = 10;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hg:p:u:ms:ny", longopts, NULL)) != -1) {
		switch (c) {
		case 'h': return cmd_usage(e, 0);
		case 'g': gpus = optarg; break;
		case 'p':
			for (const char *q = optarg; *q; q++)
				if (!strchr("0123456789, ", *q))
					return cmd_bad_usage(e, "--pid wants process ids, not '%s'", optarg);
			pids = optarg;
			break;
		case 'u': user = optarg; break;
		case 'm': mine = true; break;
		case 's':
			if ((sig = parse_signal(optarg)) < 0)
				return cmd_bad_usage(e, "unknown signal '%s' (TERM, INT, KILL, HUP, USR1, ...)", optarg);
			break;
		case 'G':
			if (!parse_seconds(optarg, &grace))
				return cmd_bad_usage(e, "--grace wants seconds, not '%s'", optarg);
			break;
		case 'n': dry = true; break;
		case 'y': yes = true; break;
		default: return cmd_option_error(e, c, argv);
		}
	}
	if (optind < argc)
		return cmd_bad_usage(e, "unexpected argument '%s'", argv[optind]);
	if (!gpus && !pids && !user && !mine)
		return cmd_bad_usage(e, "say which processes: --gpu, --pid, --user or --mine");
	uid_t me = getuid(), want_uid = 0;
	if (user) {
		struct passwd *pw = getpwnam(user);
		unsigned long n;
		if (pw)
			want_uid = pw->pw_uid;
		else if (parse_uint(user, &n))
			want_uid = (uid_t)n;
		else
			return cmd_bad_usage(e, "no user '%s'", user);
	}
	struct gpu_error err = {0};
	struct gpu_set *set = gpu_set_open(&err);
	if (!set) {
		fprintf(stderr, "gpuctl: %s\n", err.msg);
		return err.code;
	}
	if (gpus && !gpu_set_select(set, gpus, &err)) {
		fprintf(stderr, "gpuctl kill: %s\n", err.msg);
		gpu_set_free(set);
		return err.code;
	}
	gpu_set_refresh(set, REFRESH_PROCS);
	struct target *t = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		for (size_t j = 0; g->selected && j < g->nprocs; j++) {
			const struct gpu_proc *p = &g->procs[j];
			if (pids && !in_list(pids, p->pid))
				continue;
			if ((user && (!p->uid_valid || p->uid != want_uid)) || (mine && (!p->uid_valid || p->uid != me)))
				continue;
			struct target *x = NULL;
			for (size_t k = 0; k < n; k++)
				if (t[k].pid == p->pid)
					x = &t[k];
			if (!x) {
				t = grow_array(t, &cap, n + 1, sizeof *t);
				x = &t[n++];
				*x = (struct target){.pid = p->pid, .uid = p->uid, .user = p->user, .cmd = p->cmdline,
						     .pidfd = -1};
				x->start = start_time(p->pid);
				/* Root may signal another user's processes only by naming that user. */
				if (!p->uid_valid || !x->start)
					x->state = T_HIDDEN;
				else if (p->uid != me && !(me == 0 && user && p->uid == want_uid))
					x->state = T_REFUSED;
				else if ((x->pidfd = open_exact(x)) < 0)
					x->state = T_GONE;
			}
			x->mem += p->mem_valid ? p->used_mem : 0;
			size_t len = strlen(x->gpus);
			snprintf(x->gpus + len, sizeof x->gpus - len, "%s%u", len ? "," : "", g->index);
		}
	}
	size_t pending = 0;
	for (size_t i = 0; i < n; i++)
		pending += t[i].state == T_PENDING;
	if (!n)
		printf("no GPU process matches\n");
	for (size_t i = 0; i < n && (dry || (pending && isatty(STDIN_FILENO) && isatty(STDERR_FILENO) && !yes)); i++)
		printf("%s pid %u (%s) on GPU %s, %llu MiB: %.60s\n",
		       t[i].state == T_PENDING ? (dry ? "would signal" : "will signal") : "leave",
		       t[i].pid, t[i].user ? t[i].user : "?", t[i].gpus,
		       (unsigned long long)gpu_mib(t[i].mem), t[i].cmd ? t[i].cmd : "?");
	if (dry || (pending && isatty(STDIN_FILENO) && isatty(STDERR_FILENO) && !yes && !confirm(pending, sig))) {
		for (size_t i = 0; i < n; i++)
			if (t[i].pidfd >= 0)
				close(t[i].pidfd);
		free(t);
		gpu_set_free(set);
		return EXIT_OK;
	}
	for (size_t i = 0; i < n; i++)
		if (t[i].state == T_PENDING && !send(&t[i], sig))
			t[i].state = errno == ESRCH ? T_GONE : T_SURVIVED;
	bool ending = sig == SIGTERM || sig == SIGINT || sig == SIGQUIT || sig == SIGKILL;
	if (ending) {
		/* TERM, INT, QUIT get the grace period, then KILL; KILL gets a few seconds to land. */
		wait_ended(t, n, sig == SIGKILL ? 5 : grace, T_ENDED);
		bool escalate = false;
		for (size_t i = 0; i < n; i++)
			if (t[i].state == T_PENDING && sig != SIGKILL && send(&t[i], SIGKILL))
				escalate = true;
		if (escalate)
			wait_ended(t, n, 5, T_KILLED);
	}
	for (size_t i = 0; i < n; i++)
		if (t[i].state == T_PENDING)
			t[i].state = ending ? T_SURVIVED : T_SIGNALLED;
	uint64_t freed = 0;
	int rc = EXIT_OK;
	for (size_t i = 0; i < n; i++) {
		struct target *x = &t[i];
		const char *what = "";
		switch (x->state) {
		case T_ENDED: what = "ended"; break;
		case T_SIGNALLED: what = "signalled"; break;
		case T_KILLED: what = "killed with SIGKILL after the grace period"; break;
		case T_REFUSED: what = "refused: another user's process (root may name the user with --user)"; rc = EXIT_DENIED; break;
		case T_GONE: what = "already gone"; break;
		case T_HIDDEN: what = "not visible here (another PID namespace?): left alone"; break;
		case T_SURVIVED: what = "still running"; rc = rc ? rc : EXIT_FAIL; break;
		case T_PENDING: break;
		}
		if (x->state == T_ENDED || x->state == T_KILLED)
			freed += x->mem;
		printf("pid %u (%s) on GPU %s: %s\n", x->pid, x->user ? x->user : "?", x->gpus, what);
		if (x->pidfd >= 0)
			close(x->pidfd);
	}
	if (n && ending)
		printf("GPU memory freed: %llu MiB\n", (unsigned long long)gpu_mib(freed));
	free(t);
	gpu_set_free(set);
	return rc;
}

const struct cmd_entry cmd_kill_entry = {
	.name = "kill",
	.summary = "signal your GPU processes safely (never anyone else's)",
	.usage = "kill (--gpu LIST | --pid LIST | --user NAME | --mine) [--signal SIG] [--grace S]\n"
		 "            [--dry-run] [-y]\n\n"
		 "Signal GPU processes (as NVML lists them) chosen by GPU, pid, user, or all of yours;\n"
		 "the selectors combine. Another user's processes are never signalled, unless you are\n"
		 "root and name that user with --user. TERM (the default), INT and QUIT escalate to\n"
		 "KILL for those still alive after --grace seconds (default 10). Each process is\n"
		 "signalled through a pidfd, so a pid reused meanwhile is never hit. On a terminal it\n"
		 "asks first, unless -y. Exit 12 if some were refused, 1 if some survived.\n",
	.run = kill_cmd,
};
