/* kill.c: `gpuctl kill`: signal GPU processes safely, instead of kill $(ps aux | grep ...).
 * Only processes NVML lists are candidates; another user's are never touched unless root names
 * that user; each signal goes through a pidfd opened on the exact process that was listed (its
 * start time checked), so a pid that is reused meanwhile is never hit. */
#include "base/escape.h"
#include "machine/gpu.h"
#include "cmd/cmd.h"
#include "machine/kill.h"
#include "machine/pid.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct target {
	struct kill_target k;    /* pid, owner, start, pidfd and state: the shared safe path */
	const char *user, *cmd;
	uint64_t mem;            /* GPU memory over all its GPUs, bytes */
	uint64_t gpus;           /* bit i: on the GPU of index i */
};

/* "3" or "0,1,7": the GPUs of a target. */
static const char *gpu_list(uint64_t gpus, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < GPU_MAX && len < n; i++)
		if (gpus >> i & 1)
			len += (size_t)snprintf(buf + len, n - len, "%s%u", len ? "," : "", i);
	return buf;
}

/* Wait up to secs for the pending targets to end (a pidfd becomes readable when its process
 * does); those that do take state `done`. */
static void wait_ended(struct target *t, size_t n, double secs, enum kill_state done)
{
	double end = now_mono() + secs;
	for (;;) {
		struct pollfd fds[256];
		size_t map[256], nf = 0;
		for (size_t i = 0; i < n && nf < 256; i++)
			if (t[i].k.state == KS_PENDING) {
				fds[nf] = (struct pollfd){.fd = t[i].k.pidfd, .events = POLLIN};
				map[nf++] = i;
			}
		double left = end - now_mono();
		int ms = left > 86400 ? 86400000 : (int)(left * 1000) + 1; /* --grace 1e9: no overflow */
		if (!nf || left <= 0 || poll(fds, nf, ms) <= 0)
			return;
		for (size_t k = 0; k < nf; k++)
			if (fds[k].revents)
				t[map[k]].k.state = done;
	}
}

/* What the grace period waits for, on stderr, before it starts: a wait says what it waits for. */
static void say_waiting(const struct target *t, size_t n, int sig, double secs)
{
	size_t pending = 0;
	struct strbuf pids = {0};
	for (size_t i = 0; i < n; i++)
		if (t[i].k.state == KS_PENDING && pending++ < 8)
			sb_addf(&pids, "%s%u", pids.len ? ", " : "", t[i].k.pid);
	if (!pending)
		return;
	if (pending > 8)
		sb_addf(&pids, " and %zu more", pending - 8);
	fprintf(stderr, "gpuctl kill: sent SIG%s; waiting up to %g s for %zu process%s to end "
		"(pid%s %s)%s\n", kill_signal_name(sig), secs, pending, pending == 1 ? "" : "es",
		pending == 1 ? "" : "s", pids.buf, sig == SIGKILL ? "" : ", then SIGKILL");
	sb_free(&pids);
}

/* The pids of --pid LIST, or false when it holds anything else. */
static bool parse_pids(const char *list, unsigned **pids, size_t *n)
{
	char *copy = xstrdup(list), *save = NULL;
	size_t cap = 0;
	bool ok = true;
	*pids = NULL;
	*n = 0;
	for (char *tok = strtok_r(copy, ", ", &save); tok && ok; tok = strtok_r(NULL, ", ", &save)) {
		unsigned long v;
		ok = parse_uint(tok, &v) && v > 0 && v <= 0xFFFFFFFFUL;
		*pids = grow_array(*pids, &cap, *n + 1, sizeof **pids);
		(*pids)[(*n)++] = (unsigned)v;
	}
	free(copy);
	return ok && *n;
}

static bool in_list(const unsigned *pids, size_t n, unsigned v)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == v)
			return true;
	return false;
}

/* Every pid of --pid must name a GPU process (one NVML lists, on any GPU): a pid mistyped, or a
 * process that has ended or never used a GPU, is an error that names it, before anything is
 * signalled, never a quiet "no GPU process matches" and success. The other selectors still
 * narrow what a listed GPU process is (-g, --user, --mine combine). */
static int check_pids(const struct cmd_entry *e, const struct gpu_set *set, const unsigned *pids,
		      size_t npids)
{
	int rc = EXIT_OK;
	for (size_t k = 0; k < npids; k++) {
		bool listed = false;
		for (size_t i = 0; i < set->ngpus && !listed; i++)
			for (size_t j = 0; j < set->gpus[i].nprocs && !listed; j++)
				listed = set->gpus[i].procs[j].pid == pids[k];
		if (listed)
			continue;
		struct pid_stat st;
		char comm[32];
		if (!pid_stat(pids[k], &st))
			fprintf(stderr, "gpuctl %s: --pid %u: no such process (it has ended, or lives in "
				"another PID namespace)\n", e->name, pids[k]);
		else
			fprintf(stderr, "gpuctl %s: --pid %u: process %u (%s) is not a GPU process: NVML "
				"lists it on no GPU (`gpuctl status` shows the GPU processes)\n", e->name,
				pids[k], pids[k], pid_comm(pids[k], comm, sizeof comm) ? esc_str(comm, 0) : "?");
		rc = EXIT_USAGE;
	}
	if (rc != EXIT_OK)
		fprintf(stderr, "gpuctl %s: nothing signalled\n", e->name);
	return rc;
}

static bool confirm(size_t n, int sig)
{
	fprintf(stderr, "Send SIG%s to %zu process%s? [y/N] ", kill_signal_name(sig), n,
		n == 1 ? "" : "es");
	char buf[16];
	return fgets(buf, sizeof buf, stdin) && (buf[0] == 'y' || buf[0] == 'Y');
}

enum { O_PID = 'p', O_USER = 'u', O_MINE = 'm', O_SIGNAL = 's', O_GRACE = 'G', O_DRY = 'n',
       O_YES = 'y' };

/* What became of a target, in words (the dry run's "leave ... (why)" too). */
static const char *outcome(enum kill_state st)
{
	switch (st) {
	case KS_ENDED: return "ended";
	case KS_SIGNALLED: return "signalled";
	case KS_KILLED: return "killed with SIGKILL after the grace period";
	case KS_REFUSED: return "refused: another user's process (root may name the user with --user)";
	case KS_GONE: return "already gone";
	case KS_HIDDEN: return "not visible here (another PID namespace?): left alone";
	case KS_NO_PIDFD: return "left alone: " PID_NO_PIDFD;
	case KS_SURVIVED: return "still running";
	case KS_PENDING: break;
	}
	return "";
}

static int kill_cmd(struct cmd *c)
{
	const struct cmd_entry *e = c->entry;
	struct args *a = &c->args;
	const char *user = args_get(a, O_USER), *pidlist = args_get(a, O_PID);
	bool mine = args_has(a, O_MINE), dry = args_has(a, O_DRY), yes = args_has(a, O_YES);
	int sig = SIGTERM;
	double grace = 10;
	unsigned *pids = NULL;
	size_t npids = 0;
	if (!args_seconds(a, O_GRACE, 0, &grace))
		return cmd_args_error(c);
	if (args_has(a, O_SIGNAL) && (sig = kill_parse_signal(args_get(a, O_SIGNAL))) < 0)
		return cmd_bad_usage(e, "unknown signal '%s' (TERM, INT, KILL, HUP, USR1, ...)",
				     args_get(a, O_SIGNAL));
	if (!args_has(a, 'g') && !pidlist && !user && !mine)
		return cmd_bad_usage(e, "say which processes: --gpus, --pid, --user or --mine");
	uid_t me = getuid(), want_uid = 0;
	if (user && !user_uid(user, &want_uid))
		return cmd_bad_usage(e, "no user '%s'", user);
	if (pidlist && !parse_pids(pidlist, &pids, &npids)) {
		free(pids);
		return cmd_bad_usage(e, "--pid wants process ids, not '%s'", pidlist);
	}
	int rc = cmd_open(c);
	if (rc != EXIT_OK) {
		free(pids);
		return rc;
	}
	struct gpu_set *set = c->set;
	gpu_set_refresh(set, REFRESH_PROCS);
	if (pidlist && (rc = check_pids(e, set, pids, npids)) != EXIT_OK) {
		free(pids);
		return rc;
	}
	struct target *t = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		for (size_t j = 0; g->selected && j < g->nprocs; j++) {
			const struct gpu_proc *p = &g->procs[j];
			if (pidlist && !in_list(pids, npids, p->pid))
				continue;
			if ((user && (!p->uid_valid || p->uid != want_uid)) || (mine && (!p->uid_valid || p->uid != me)))
				continue;
			struct target *x = NULL;
			for (size_t k = 0; k < n; k++)
				if (t[k].k.pid == p->pid)
					x = &t[k];
			if (!x) {
				t = grow_array(t, &cap, n + 1, sizeof *t);
				x = &t[n++];
				*x = (struct target){.k = {.pid = p->pid, .uid = p->uid, .uid_valid = p->uid_valid},
						     .user = p->user, .cmd = p->cmdline};
				kill_target_open(&x->k, me, user != NULL, want_uid);
			}
			x->mem += p->mem_valid ? p->used_mem : 0;
			x->gpus |= 1ULL << g->index;
		}
	}
	size_t pending = 0;
	for (size_t i = 0; i < n; i++)
		pending += t[i].k.state == KS_PENDING;
	if (!n)
		printf("no GPU process matches\n");
	bool ask = pending && isatty(STDIN_FILENO) && isatty(STDERR_FILENO) && !yes;
	char gl[200];
	/* The user and command line are another user's text: escaped (esc_str, esc_fit). */
	for (size_t i = 0; i < n && (dry || ask); i++) {
		struct strbuf cmd = {0};
		esc_fit(&cmd, t[i].cmd ? t[i].cmd : "?", 60, false);
		printf("%s pid %u (%s) on GPU %s, %s: %s", t[i].k.state == KS_PENDING ?
		       (dry ? "would signal" : "will signal") : "leave",
		       t[i].k.pid, esc_str(t[i].user ? t[i].user : "?", 0),
		       gpu_list(t[i].gpus, gl, sizeof gl), mib_text(t[i].mem).s, cmd.buf);
		if (t[i].k.state != KS_PENDING) /* why not */
			printf(" (%s)", outcome(t[i].k.state));
		putchar('\n');
		sb_free(&cmd);
	}
	if (dry || (ask && !confirm(pending, sig))) {
		for (size_t i = 0; i < n; i++)
			kill_target_close(&t[i].k);
		free(t);
		free(pids);
		return EXIT_OK;
	}
	for (size_t i = 0; i < n; i++)
		if (t[i].k.state == KS_PENDING)
			kill_target_signal(&t[i].k, sig);
	bool ending = kill_ends(sig);
	if (ending) {
		/* TERM, INT, QUIT get the grace period, then KILL; KILL gets a few seconds to land. */
		say_waiting(t, n, sig, sig == SIGKILL ? KILL_LAND_SECONDS : grace);
		wait_ended(t, n, sig == SIGKILL ? KILL_LAND_SECONDS : grace, KS_ENDED);
		bool escalate = false;
		for (size_t i = 0; i < n; i++) {
			if (t[i].k.state != KS_PENDING || sig == SIGKILL)
				continue;
			if (kill_target_signal(&t[i].k, SIGKILL))
				escalate = true;
			else if (t[i].k.state == KS_GONE)
				t[i].k.state = KS_ENDED;   /* it ended just before the KILL */
		}
		if (escalate)
			wait_ended(t, n, KILL_LAND_SECONDS, KS_KILLED);
	}
	for (size_t i = 0; i < n; i++)
		if (t[i].k.state == KS_PENDING)
			t[i].k.state = ending ? KS_SURVIVED : KS_SIGNALLED;
	uint64_t freed = 0;
	for (size_t i = 0; i < n; i++) {
		struct target *x = &t[i];
		const char *what = outcome(x->k.state);
		if (x->k.state == KS_REFUSED)
			rc = EXIT_DENIED;
		/* A process named by --pid and not signalled is a failure: the one asked for runs on. */
		else if (x->k.state == KS_NO_PIDFD || x->k.state == KS_SURVIVED ||
			 (x->k.state == KS_HIDDEN && pidlist))
			rc = rc ? rc : EXIT_FAIL;
		if (x->k.state == KS_ENDED || x->k.state == KS_KILLED)
			freed += x->mem;
		printf("pid %u (%s) on GPU %s: %s\n", x->k.pid, esc_str(x->user ? x->user : "?", 0),
		       gpu_list(x->gpus, gl, sizeof gl), what);
		kill_target_close(&x->k);
	}
	if (n && ending)
		printf("GPU memory freed: %s\n", mib_text(freed).s);
	free(t);
	free(pids);
	return rc;
}

static const struct option longopts[] = {
	{"gpu", required_argument, NULL, 'g'}, {"pid", required_argument, NULL, O_PID},
	{"user", required_argument, NULL, O_USER}, {"mine", no_argument, NULL, O_MINE},
	{"signal", required_argument, NULL, O_SIGNAL}, {"grace", required_argument, NULL, O_GRACE},
	{"dry-run", no_argument, NULL, O_DRY}, {"yes", no_argument, NULL, O_YES}, {0},
};

const struct cmd_entry cmd_kill_entry = {
	.name = "kill",
	.summary = "signal your GPU processes safely (never anyone else's)",
	.usage = "kill (--gpus LIST | --pid LIST | --user NAME | --mine) [--signal SIG] [--grace S]\n"
		 "            [--dry-run] [-y]\n\n"
		 "Signal GPU processes (as NVML lists them) chosen by GPU, pid, user, or all of yours;\n"
		 "the selectors combine. Another user's processes are never signalled, unless you are\n"
		 "root and name that user with --user. TERM (the default), INT and QUIT escalate to\n"
		 "KILL for those still alive after --grace seconds (default 10). Each process is\n"
		 "signalled through a pidfd, so a pid reused meanwhile is never hit. On a terminal it\n"
		 "asks first, unless -y. Exit 12 if some were refused, 1 if some survived or a\n"
		 "--pid was left alone (not visible here, no pidfds), 2 if a --pid is no GPU process\n"
		 "(then nothing is signalled). `kill` is never abbreviated.\n\n"
		 CMD_GPUS_HELP
		 "      --gpu LIST             the same (its older spelling)\n"
		 "  -p, --pid LIST             these processes\n"
		 "  -u, --user NAME            this user's processes (another user's: root only)\n"
		 "  -m, --mine                 all of your GPU processes\n"
		 "  -s, --signal SIG           TERM (default), INT, QUIT, KILL, HUP, USR1, ... or a number\n"
		 "      --grace SECONDS        before TERM, INT or QUIT escalate to KILL (default 10)\n"
		 "  -n, --dry-run              list what would be signalled (-n: as make -n; kill takes\n"
		 "                             no count)\n"
		 "  -y, --yes                  do not ask on a terminal\n",
	.args = {.shorts = "p:u:ms:ny", .longs = longopts},
	.flags = CMD_NVML | CMD_GPUS | CMD_NO_PREFIX,
	.exec = kill_cmd,
};
