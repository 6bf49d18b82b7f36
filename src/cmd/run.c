/* run.c: `gpuctl run [OPTIONS] -- COMMAND`: lease GPUs, run the job with the right
 * CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER and NVIDIA_VISIBLE_DEVICES, and release on exit.
 * The lock descriptors are inherited by the job, so the lease outlives gpuctl itself (even
 * SIGKILL) and ends with the job and whatever it started. */
#include "base/escape.h"
#include "cmd/leaseopts.h"
#include "lease/holder.h"
#include "lease/hook.h"
#include "machine/pid.h"
#include "cmd/runctr.h"
#include "lease/bind.h"
#include "lease/spawn.h"
#include "lease/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile pid_t child;
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

/* A signal the terminal sent reached the job already (same process group): forwarding it would
 * deliver it twice. Anything sent to gpuctl alone (kill, a scheduler) is passed on. */
static void forward(int sig, siginfo_t *info, void *ctx)
{
	(void)ctx;
	if (child > 0 && info->si_code != SI_KERNEL)
		kill(child, sig);
}

/* -- time limits (issue 24): at the lease's end the job gets SIGTERM, then SIGKILL after the
 * daemon's kill_grace; this process is the user's own, so it may signal the job (the daemon
 * signals nobody; it ends the lease once the grace has passed). -- */
static volatile sig_atomic_t limit_stage;
static double limit_grace;

static void arm(double secs)
{
	struct itimerval it = {{0, 0}, {(time_t)secs, (suseconds_t)((secs - (double)(time_t)secs) * 1e6)}};
	if (!it.it_value.tv_sec && !it.it_value.tv_usec)
		it.it_value.tv_usec = 1;
	setitimer(ITIMER_REAL, &it, NULL);
}

static void on_limit(int sig)
{
	(void)sig;
	if (child <= 0)
		return;
	if (limit_stage++ == 0) {
		static const char say[] = "gpuctl run: the lease reached its time limit (--time): "
					  "SIGTERM to the job\n";
		(void)!write(STDERR_FILENO, say, sizeof say - 1);
		kill(child, SIGTERM);
		arm(limit_grace);
	} else {
		static const char say[] = "gpuctl run: the job outlived its grace (kill_grace) after "
					  "SIGTERM: SIGKILL\n";
		(void)!write(STDERR_FILENO, say, sizeof say - 1);
		kill(child, SIGKILL);
	}
}

static void limit_start(const struct grant *g)
{
	struct sigaction sa = {.sa_handler = on_limit, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	limit_grace = g->grace > 0 ? g->grace : 10;
	if (!g->until_ns)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	unsigned long long now = (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
	arm(g->until_ns > now ? (double)(g->until_ns - now) / 1e9 : 0);
}

/* Idle leases (issue 24): while the job runs, the daemon's word on the lease (lease/holder.h):
 * a warning is a line on the user's terminal; a release ends the job as the time limit does. */
static void watch_job(struct lwatch *w, pid_t pid, const char *id, struct lhook *hook)
{
	int pfd = pid_open((unsigned)pid, 0);
	if (pfd < 0)
		return; /* no pidfd: the job is waited for plainly, unwatched */
	struct pollfd p[2] = {{.fd = pfd, .events = POLLIN}, {.fd = lwatch_fd(w), .events = POLLIN}};
	while (lwatch_fd(w) >= 0 || lhook_near_ms(hook) >= 0) {
		p[1].fd = lwatch_fd(w);
		int r = poll(p, 2, lhook_near_ms(hook)); /* (the notify hook's time-near) */
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (r > 0 && p[0].revents))
			break;
		lhook_near(hook);
		if (r == 0 || !p[1].revents)
			continue;
		struct lwatch_event ev;
		char line[512];
		lwatch_read(w, &ev);
		lwatch_text(&ev, "gpuctl run", id, line, sizeof line);
		if (line[0])
			fputs(line, stderr);
		if (ev.what == LW_IDLE_WARN || ev.what == LW_IDLE_RELEASE) /* notify hooks */
			lhook_fire(hook, ev.what == LW_IDLE_WARN ? "idle-warn" : "idle-release", "running", -1);
		if (ev.what == LW_IDLE_RELEASE && !limit_stage) {
			limit_stage = 1;
			limit_grace = ev.grace > 0 ? ev.grace : 0.001;
			fprintf(stderr, "gpuctl run: SIGTERM to the job, SIGKILL in %.0f s if it is still "
				"running\n", ev.grace);
			kill(child, SIGTERM);
			arm(limit_grace);
		}
	}
	close(pfd);
}
/* -- end of time limits -- */

static void print_env(char **env, FILE *f)
{
	for (char **p = env; *p; p++)
		fprintf(f, "%s\n", *p);
}

/* One line on stderr: what the job got, and how long it waited for it. */
static void say_leased(const struct grant *g)
{
	struct strbuf sb = {0};
	sb_addf(&sb, "gpuctl run: leased GPU");
	for (size_t i = 0; i < g->n; i++)
		sb_addf(&sb, "%s%u", i ? "," : " ", g->set->gpus[g->pos[i]].index);
	if (g->queued_at) {
		int s = (int)(g->waited + 0.5);
		sb_addf(&sb, " after waiting %d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
	}
	sb_addf(&sb, " (lease %s)\n", g->id);
	if (strchr(g->placement, ':'))   /* issue 26: why that set, where the daemon weighed more
					  * than the order ("GPUs 0,1: NV12 ...") */
		sb_addf(&sb, "gpuctl run: %s\n", g->placement);
	fputs(sb.buf, stderr);
	sb_free(&sb);
}

/* --bind-cpus (issue 26): the plan made here, where it can be said; the job applies it. */
static bool bind_plan(const struct grant *g, bool quiet, struct cpuset *set)
{
	char msg[1024];
	enum bind_plan p = grant_bind_plan(g, set, msg, sizeof msg);
	if (p != BIND_NARROW || !quiet)
		fprintf(stderr, "gpuctl run: %s\n", msg);
	return p == BIND_NARROW;
}

/* A daemon older than the self commit (spawn.h): the job is forked and commits on a connection
 * of its own (grant_hold), as before. */
static pid_t fork_job(struct grant *g, char **argv, char **env, const struct cpuset *cpus,
		      const bool *ignored, int errfd)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	for (size_t i = 0; i < ARRAY_SIZE(forwarded); i++)
		if (!ignored[i])
			signal(forwarded[i], SIG_DFL);
	/* The job inherits the lease's descriptors and holds the lease, even if gpuctl dies. */
	grant_hold(g, 0, 1);
	int be;
	if (cpus && (be = grant_bind_apply(cpus)))
		fprintf(stderr, "gpuctl run: --bind-cpus: sched_setaffinity: %s; the job runs "
			"unbound\n", strerror(be));
	for (char **p = env; *p; p++)
		putenv(*p);
	execvp(argv[0], argv);
	int e = errno;
	if (write(errfd, &e, sizeof e) < 0)
		_exit(127);
	_exit(e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
}

/* The job cloned without copying this process (spawn.h), committing the lease on the grant's
 * connection itself. Returns its pid; *e: the errno of an exec that failed, else 0. */
static pid_t spawn_of(struct grant *g, char **argv, char **env, const struct cpuset *cpus, int *e)
{
	extern char **environ;
	char **envp = grant_env_profile(environ, env);
	struct strbuf msg = {0};
	msg_begin(&msg, "commit");
	msg_add(&msg, "lease", g->id, NULL);
	msg_add(&msg, "token", g->token, NULL);
	msg_add_u64(&msg, "self", 1);
	struct spawn s = {.argv = argv, .envp = envp, .keep = g->fds, .nkeep = g->nfds, .cpus = cpus,
			  .commit_fd = g->conn, .commit = msg.buf, .commit_len = msg.len,
			  .pid_out = &child};
	pid_t pid = spawn_job(&s);
	if (pid < 0)
		die(EXIT_FAIL, "clone: %s", strerror(errno));
	if (s.bind_err)
		fprintf(stderr, "gpuctl run: --bind-cpus: sched_setaffinity: %s; the job runs "
			"unbound\n", strerror(s.bind_err));
	*e = s.exec_err;
	sb_free(&msg);
	free(envp);
	return pid;
}

static int start_job(struct grant *g, char **argv, bool uuid, struct runctr *rc, bool bind,
		     bool quiet, struct lhook *hook)
{
	struct cpuset cpus;
	bind = bind && bind_plan(g, quiet, &cpus);
	char **env = grant_env(g, uuid);
	int errpipe[2] = {-1, -1};
	bool spawned = g->has_conn;
	if (!spawned && pipe2(errpipe, O_CLOEXEC) != 0)
		die(EXIT_FAIL, "pipe: %s", strerror(errno));
	/* Signals ignored when gpuctl started (nohup) stay ignored, for gpuctl and for the job, as
	 * with env, time and nice; the others are passed on to the job. */
	bool ignored[ARRAY_SIZE(forwarded)];
	struct sigaction sa = {.sa_sigaction = forward, .sa_flags = SA_SIGINFO | SA_RESTART};
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(forwarded); i++) {
		struct sigaction old;
		sigaction(forwarded[i], NULL, &old);
		ignored[i] = old.sa_handler == SIG_IGN;
		if (!ignored[i])
			sigaction(forwarded[i], &sa, NULL);
	}
	fflush(NULL);
	int e = 0;
	pid_t pid = spawned ? spawn_of(g, argv, env, bind ? &cpus : NULL, &e)
			    : fork_job(g, argv, env, bind ? &cpus : NULL, ignored, errpipe[1]);
	if (pid < 0)
		die(EXIT_FAIL, "fork: %s", strerror(errno));
	child = pid;
	limit_start(g); /* time limits (issue 24) */
	struct lwatch w; /* idle leases (issue 24) */
	lwatch_open(&w, g);
	/* The job holds the lease now: it ends with the job and what it started. A container's
	 * client may end before its container (a detached one at once): this process keeps the
	 * lease until it knows, and binds it to the container that outlived it (runctr.h). */
	char id[sizeof g->id]; /* memory shares: the daemon's word on its claim, under stop */
	snprintf(id, sizeof id, "%s", g->id);
	bool watch = g->mem_mib && g->stop_over;
	if (!rc->kind)
		grant_free(g);
	if (!spawned) {
		ssize_t r;
		close(errpipe[1]);
		while ((r = read(errpipe[0], &e, sizeof e)) < 0 && errno == EINTR)
			;
		close(errpipe[0]);
		if (r != sizeof e)
			e = 0;
	}
	bool failed = e != 0; /* the command could not be run */
	if (failed)
		fprintf(stderr, "gpuctl run: cannot run '%s': %s\n", argv[0], strerror(e));
	else if (!watch) /* (a share watched over its claim: share_watch_wait waits, below) */
		watch_job(&w, pid, id, hook);
	int status;
	if (watch)
		status = share_watch_wait(pid, id, "gpuctl run", &w, hook);
	else
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	lwatch_close(&w);
	child = 0;
	grant_env_free(env);
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (hook->job_events && !failed) /* run --notify: the job's end */
		lhook_fire(hook, code ? "failed" : "done", code ? "failed" : "done", code);
	if (rc->kind) {
		char why[512] = "";
		if ((code == 0 || !rc->detached) && !failed &&
		    !runctr_bind(rc, argv, g, quiet, why, sizeof why) && why[0])
			fprintf(stderr, "gpuctl run: lease %s released: %s\n", g->id, why);
		runctr_cleanup(rc);
		grant_free(g);
	}
	return code;
}

static int run(struct cmd *c)
{
	struct lease_opts o = {.rq = {.max_util = -1, .prefer = -1, .kind = "run", .who = "gpuctl run",
				       .keep_conn = true}};
	int rc = lease_opts_read(c, &o);
	if (rc != EXIT_OK)
		return rc;
	char **argv = c->args.argv;
	if (!c->args.argc && !o.rq.dry_run)
		return cmd_bad_usage(c->entry, "no command given: gpuctl run [OPTIONS] -- COMMAND [ARGS...]");
	/* containers (issue 28): docker/podman run get the lease's GPUs in their syntax; what
	 * they refuse is said before any lease is asked for (or waited for) */
	struct runctr ctr;
	char why[512];
	runctr_detect(c->args.argc ? argv : NULL, &ctr);
	if (ctr.kind && !runctr_check(&ctr, why, sizeof why))
		return cmd_bad_usage(c->entry, "%s", why);
	char *command = c->args.argc ? sh_join(argv) : NULL;
	o.rq.command = command;
	struct config cfg;
	struct grant g;
	rc = lease_begin(c, &o, &cfg, &g);
	if (rc != EXIT_OK) {
		free(command);
		return rc;
	}
	struct gpu_set *set = g.set;
	if (o.rq.dry_run) {
		printf("would lease:");
		for (size_t i = 0; i < g.n; i++)
			printf(" GPU %u (%s)", set->gpus[g.pos[i]].index, set->gpus[g.pos[i]].uuid);
		if (g.placement[0])   /* issue 26 */
			printf("\nwhy: %s", g.placement);
		/* a container run as it would be rewritten (its cidfile's directory made and removed) */
		char **job = ctr.kind ? runctr_argv(&ctr, argv, &g, why, sizeof why) : NULL;
		char *shown = job ? sh_join(job) : NULL;
		runctr_argv_free(&ctr, job);
		runctr_cleanup(&ctr);
		printf("\nwould run%s%s with:\n", command ? ": " : "", shown ? shown : command ? command : "");
		free(shown);
		char **env = grant_env(&g, o.uuid);
		print_env(env, stdout);
		grant_env_free(env);
		grant_free(&g);
	} else {
		char **job = ctr.kind ? runctr_argv(&ctr, argv, &g, why, sizeof why) : argv;
		if (!job) {
			grant_free(&g);
			free(command);
			config_free(&cfg);
			return cmd_bad_usage(c->entry, "%s", why);
		}
		if (!o.quiet)
			say_leased(&g);
		/* notify hooks: --notify CMD (the job's end too), else [defaults] notify (the lease's
		 * events only) */
		struct lhook hook;
		const char *notify = args_get(&c->args, LO_NOTIFY);
		lhook_init(&hook, &g, "run", notify ? notify : cfg.notify, cfg.notify_timeout,
			   notify && *notify);
		rc = start_job(&g, job, o.uuid, &ctr, o.bind_cpus || (cfg.bind_cpus && !o.no_bind),
			       o.quiet, &hook);
		lhook_free(&hook);
		if (job != argv)
			runctr_argv_free(&ctr, job);
	}
	free(command);
	config_free(&cfg);
	return rc;
}

static const struct option longopts[] = {LEASE_LONGOPTS, BIND_LONGOPTS, NOTIFY_LONGOPTS, {0}};

const struct cmd_entry cmd_run_entry = {
	.name = "run",
	.summary = "lease free GPUs and run a job on them; released when it ends",
	.usage = "run [OPTIONS] -- COMMAND [ARGS...]\n\n"
		 "Lease GPUs (no other job gets them until this one and everything it started has\n"
		 "ended, even if gpuctl is killed) and run COMMAND with CUDA_VISIBLE_DEVICES (nvidia-smi\n"
		 "numbering), CUDA_DEVICE_ORDER=PCI_BUS_ID, NVIDIA_VISIBLE_DEVICES and GPUCTL_LEASE_*.\n"
		 "An existing CUDA_VISIBLE_DEVICES restricts the choice. The exit status is the job's\n"
		 "(128+N if signal N ended it); INT, TERM, HUP, QUIT, USR1, USR2 reach the job.\n\n"
		 LEASE_USAGE
		 BIND_USAGE
		 "      --notify CMD           run CMD (/bin/sh -c, as you) when the job ends (done,\n"
		 "                             failed), when the lease is warned idle or released for\n"
		 "                             it (idle-warn, idle-release), and near its --time\n"
		 "                             (time-near); GPUCTL_EVENT, GPUCTL_LEASE_ID, GPUCTL_GPUS,\n"
		 "                             GPUCTL_JOB_STATE, GPUCTL_EXIT_CODE in its environment.\n"
		 "                             [defaults] notify: the same for the lease's events, not\n"
		 "                             the job's end (killed after notify_timeout)\n"
		 /* containers (issue 28; review 2 follow-up) */
		 "\nContainers: a COMMAND that is `docker run` or `podman run` (or `container run`) gives\n"
		 "the container the lease's GPUs in its runtime's syntax (docker: --gpus \"device=UUID,...\";\n"
		 "podman: --device nvidia.com/gpu=UUID, CDI) and the lease's variables as -e\n"
		 "(CUDA_VISIBLE_DEVICES by UUID, CUDA_DEVICE_ORDER, GPUCTL_LEASE_*, a memory share's\n"
		 "limits; for podman NVIDIA_VISIBLE_DEVICES too; not a profile's, which stay the client's).\n"
		 "A detached container (-d) holds the lease until it stops. Refused (exit 2), since they\n"
		 "give the container GPUs past the lease: --gpus, a --device or mount of a GPU's node\n"
		 "(/dev/nvidiaN, nvidia.com/gpu=...), NVIDIA_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES in\n"
		 "-e or --env-file, and what gives it every GPU's node: --privileged, a mount of the\n"
		 "host's / or /dev (-v, --mount), --device /dev, a --device-cgroup-rule allowing major\n"
		 "195. Use --device /dev/NAME, --cap-add and mounts of only the paths needed\n"
		 "(-v /dev/shm:/dev/shm) instead.\n"
		 "\nExit status when no job ran: 10 not enough free GPUs (without --wait), 11 --wait ran\n"
		 "out, 2 bad request, 126/127 the command could not be run.\n",
	.args = {.shorts = "n:q", .longs = longopts, .upper = -1},
	.flags = CMD_GPUS | CMD_COMMAND,
	.exec = run,
};
