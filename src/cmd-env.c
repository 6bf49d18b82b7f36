/* cmd-env.c: `eval "$(gpuctl env -n 1)"`: lease GPUs for an interactive shell or notebook and
 * print the exports. A small background holder keeps the locks; it ends, releasing them, when
 * the shell it is bound to exits or on `gpuctl release`. */
#include "json.h"
#include "leaseopts.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum fmt { F_SH, F_FISH, F_JSON, F_DOCKER };

static volatile sig_atomic_t release_now;

static void on_term(int sig)
{
	(void)sig;
	release_now = 1;
}

/* The holder: no stdio (so $(...) returns), its own session; it holds the lease's descriptors
 * until the bound process exits or it is told to let go (`gpuctl release`: SIGTERM). */
static void hold(struct grant *g, pid_t bound)
{
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
	grant_hold(g, bound);
	int pfd = (int)syscall(SYS_pidfd_open, bound, 0);
	struct pollfd p = {.fd = pfd, .events = POLLIN};
	while (!release_now && pfd >= 0 && poll(&p, 1, -1) == 0)
		;
	while (!release_now && pfd < 0 && kill(bound, 0) == 0)
		sleep(5); /* no pidfd (an old kernel): look now and then */
	_exit(0); /* the lease ends with this process's descriptors */
}

/* POSIX sh (and bash, zsh): in single quotes nothing is special but the quote itself. */
static void quote_sh(struct strbuf *sb, const char *v)
{
	sb_addc(sb, '\'');
	for (const char *p = v; *p; p++)
		if (*p == '\'')
			sb_adds(sb, "'\\''");
		else
			sb_addc(sb, *p);
	sb_addc(sb, '\'');
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
		for (size_t i = 0; i < g->n; i++) {
			const struct gpu *gp = &g->set->gpus[g->pos[i]];
			if (uuid)
				sb_addf(&sb, "%s%s", i ? "," : "", gp->uuid);
			else
				sb_addf(&sb, "%s%u", i ? "," : "", gp->index);
		}
		sb_adds(&sb, "\"\n");
	} else if (fmt == F_JSON) {
		json_init(&j, &sb, false);
		json_obj(&j, NULL);
	}
	for (char **p = env; fmt != F_DOCKER && *p; p++) {
		char *eq = strchr(*p, '=');
		*eq = '\0';
		if (fmt == F_SH) {
			sb_addf(&sb, "export %s=", *p);
			quote_sh(&sb, eq + 1);
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

static int env_cmd(int argc, char **argv)
{
	const struct cmd_entry *e = &cmd_env_entry;
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'}, {"format", required_argument, NULL, 'f'},
		{"hold-pid", required_argument, NULL, 'H'}, LEASE_LONGOPTS, {0},
	};
	struct lease_opts o = {.rq = {.max_util = -1, .prefer = -1, .kind = "env", .who = "gpuctl env"}};
	enum fmt fmt = F_SH;
	unsigned long bound = (unsigned long)getppid();
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hn:g:f:q", longopts, NULL)) != -1) {
		int k = lease_option(e, c, optarg, &o);
		if (k < 0)
			return EXIT_USAGE;
		if (k)
			continue;
		switch (c) {
		case 'h': return cmd_usage(e, 0);
		case 'f':
			if (!strcmp(optarg, "sh"))
				fmt = F_SH;
			else if (!strcmp(optarg, "fish"))
				fmt = F_FISH;
			else if (!strcmp(optarg, "json"))
				fmt = F_JSON;
			else if (!strcmp(optarg, "docker"))
				fmt = F_DOCKER;
			else
				return cmd_bad_usage(e, "--format is sh, fish, json or docker, not '%s'", optarg);
			break;
		case 'H':
			if (!parse_uint(optarg, &bound) || bound < 1 || bound > INT32_MAX ||
			    (kill((pid_t)bound, 0) != 0 && errno != EPERM))
				return cmd_bad_usage(e, "--hold-pid wants the pid of a running process, not '%s'", optarg);
			break;
		default: return cmd_option_error(e, c, argv);
		}
	}
	if (optind < argc)
		return cmd_bad_usage(e, "unexpected argument '%s' (to run a command, use gpuctl run)", argv[optind]);
	char *command = xasprintf("(env lease for pid %lu)", bound);
	o.rq.command = command;
	struct config cfg;
	struct gpu_set *set;
	struct grant g;
	int rc = lease_begin(e, &o, &cfg, &set, &g);
	if (rc != EXIT_OK) {
		free(command);
		return rc;
	}
	if (o.rq.dry_run) {
		char **env = grant_env(&g, o.uuid);
		print_exports(env, fmt, &g, o.uuid);
		grant_env_free(env);
		grant_free(&g);
	} else {
		char **env = grant_env(&g, o.uuid);
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0)
			die(EXIT_FAIL, "fork: %s", strerror(errno));
		if (pid == 0)
			hold(&g, (pid_t)bound);
		print_exports(env, fmt, &g, o.uuid);
		if (!o.quiet) {
			fprintf(stderr, "gpuctl env: leased GPU");
			for (size_t i = 0; i < g.n; i++)
				fprintf(stderr, "%s%u", i ? "," : " ", set->gpus[g.pos[i]].index);
			fprintf(stderr, " (lease %s) until process %lu exits or `gpuctl release`\n", g.id,
				bound);
		}
		grant_free(&g); /* the holder keeps its own copies */
		grant_env_free(env);
	}
	gpu_set_free(set);
	free(command);
	config_free(&cfg);
	return rc;
}

const struct cmd_entry cmd_env_entry = {
	.name = "env",
	.summary = "lease GPUs for this shell or notebook: eval \"$(gpuctl env -n 1)\"",
	.usage = "env [OPTIONS]\n\n"
		 "Lease GPUs and print the variables to export. A background holder keeps the lease\n"
		 "until the calling shell (or --hold-pid PID) exits, or `gpuctl release`. Set them\n"
		 "before CUDA starts: in Python, before `import torch` touches the GPU.\n\n"
		 "  -f, --format sh|fish|json|docker   (docker: --gpus \"device=...\" for\n"
		 "                             `docker run $(gpuctl env --format=docker) IMAGE`)\n"
		 "      --hold-pid PID        bind the lease to this process instead of the parent\n"
		 LEASE_USAGE,
	.run = env_cmd,
};
