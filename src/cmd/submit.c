/* submit.c: `gpuctl submit [OPTIONS] -- COMMAND` (and `--file FILE`, `--again ID`): hands a
 * job to a job backend (jobs/backend.h) and prints its id alone on stdout at once: this machine's
 * (the user's job runner, started on demand, queues it in the shared daemon's fair queue) or
 * Slurm's (one sbatch; the id is printed as slurm:N). The backend is chosen here, once: --slurm
 * or --local, else the profile's `backend`, else the configuration's. */
#include "base/escape.h"
#include "cmd/leaseopts.h"
#include "jobs/backend.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { S_AFTER = 400, S_RETRIES, S_LOG, S_FILE, S_AGAIN, S_SLURM, S_LOCAL,
	S_NOTIFY = 420, /* notifications (issue 24) */
};

/* One job; its id on stdout. EXIT_OK or the error's code (printed). */
static int submit_one(const struct job_backend *be, struct submit_req *rq, char **argv,
		      const char *command, const char *where)
{
	struct gpu_error err = {0};
	uint64_t id = 0;
	int rc = be->submit(rq, argv, command, &id, &err);
	if (rc != EXIT_OK) {
		fprintf(stderr, "gpuctl submit: %s%s\n", where, err.msg);
		return rc;
	}
	char text[48];
	printf("%s\n", job_id_text(be->kind, id, text, sizeof text));
	fflush(stdout);
	return EXIT_OK;
}

static int from_file(const struct job_backend *be, struct submit_req *rq, const char *path)
{
	size_t len;
	char *text = !strcmp(path, "-") ? read_file("/dev/stdin", &len) : read_file(path, &len);
	if (!text) {
		fprintf(stderr, "gpuctl submit: cannot read %s: %s\n", path, strerror(errno));
		return EXIT_USAGE;
	}
	char **lines, why[256];
	unsigned *linenos;
	size_t n;
	if (!jobfile_parse(text, len, &lines, &linenos, &n, why, sizeof why)) {
		fprintf(stderr, "gpuctl submit: %s: %s; nothing was submitted\n", path, why);
		free(text);
		return EXIT_USAGE;
	}
	if (!n)
		fprintf(stderr, "gpuctl submit: %s has no commands (only blank lines and comments)\n", path);
	int rc = EXIT_OK;
	for (size_t i = 0; i < n && rc == EXIT_OK; i++) {
		char *argv[] = {"/bin/sh", "-c", lines[i], NULL};
		char where[PATH_MAX + 32];
		snprintf(where, sizeof where, "%s, line %u: ", path, linenos[i]);
		rc = submit_one(be, rq, argv, lines[i], where);
		if (rc != EXIT_OK && i)
			fprintf(stderr, "gpuctl submit: the %zu job%s before line %u stay submitted; none after "
				"it was\n", i, i == 1 ? "" : "s", linenos[i]);
	}
	free(lines);
	free(linenos);
	free(text);
	return rc;
}

/* What the job's execvp will find for prog, looked up now: in the submit's directory (the job's),
 * through the job's PATH (the profile's env.PATH, else ours; unset: execvp's /bin:/usr/bin). A
 * name it would not find, or a file it may not run, is refused at submit, as a --log that cannot
 * be written is, not after the job has waited in the queue. false with why set. */
static bool program_found(const char *prog, char *const *profile_env, char *why, size_t n)
{
	struct stat st;
	if (strchr(prog, '/')) {
		if (stat(prog, &st) != 0)
			snprintf(why, n, "'%s': %s", prog, strerror(errno));
		else if (S_ISDIR(st.st_mode) || access(prog, X_OK) != 0)
			snprintf(why, n, "'%s': %s", prog, S_ISDIR(st.st_mode) ? "a directory"
				 : "not executable (chmod +x it, or run it through its interpreter)");
		else
			return true;
		return false;
	}
	const char *path = getenv("PATH");
	for (char *const *e = profile_env; e && *e; e++)
		if (!strncmp(*e, "PATH=", 5))
			path = *e + 5;
	if (!path)
		path = "/bin:/usr/bin";
	bool unrunnable = false;
	for (const char *p = path;; p++) {
		size_t len = strcspn(p, ":");
		char *file = len ? xasprintf("%.*s/%s", (int)len, p, prog) : xstrdup(prog);
		if (stat(file, &st) == 0 && !S_ISDIR(st.st_mode)) {
			if (access(file, X_OK) == 0) {
				free(file);
				return true;
			}
			unrunnable = true;
		}
		free(file);
		p += len;
		if (!*p)
			break;
	}
	snprintf(why, n, "'%s': %s the job's PATH (%.300s); give its path (./%s) or fix PATH", prog,
		 unrunnable ? "not executable anywhere in" : "not found in", path, prog);
	return false;
}

/* --slurm or --local, else the profile's backend, else the configuration's; why: what chose it. */
static const struct job_backend *choose(struct cmd *c, const struct config *cfg, const char *profile,
					const char **why)
{
	const struct profile *p = profile ? config_profile(cfg, profile) : NULL;
	static char text[160];
	const char *name = "local";
	*why = "the default";
	if (args_has(&c->args, S_SLURM) || args_has(&c->args, S_LOCAL)) {
		name = args_has(&c->args, S_SLURM) ? "slurm" : "local";
		*why = args_has(&c->args, S_SLURM) ? "--slurm" : "--local";
	} else if (p && p->backend) {
		name = p->backend;
		snprintf(text, sizeof text, "backend = %s in [profile %s]", name, profile);
		*why = text;
	} else if (cfg->backend) {
		name = cfg->backend;
		snprintf(text, sizeof text, "backend = %s in the configuration", name);
		*why = text;
	}
	return job_backend(strcmp(name, "slurm") ? JOB_LOCAL : JOB_SLURM);
}

static void req_free(struct submit_req *rq)
{
	free(rq->after);
	free(rq->log);
}

static int submit(struct cmd *c)
{
	struct submit_req rq = {.o = {.rq = {.max_util = -1, .prefer = -1, .kind = "job",
					     .who = "gpuctl submit"}}};
	struct args *a = &c->args;
	const char *file = args_get(a, S_FILE), *again = args_get(a, S_AGAIN), *log = args_get(a, S_LOG);
	rq.o.cpu_ok = true; /* -n 0: a CPU-only step (issue 24) */
	int rc = lease_opts_read(c, &rq.o);
	if (rc != EXIT_OK)
		return rc;
	if (rq.o.cpu_only && (rq.o.rq.gpus || rq.o.rq.time_limit > 0))
		return cmd_bad_usage(c->entry, "-n 0 is a step without GPUs: -g and --time are for "
				     "jobs that lease GPUs");
	if (!args_uint(a, S_RETRIES, 0, 1000, &rq.retries))
		return cmd_args_error(c);
	if (!!file + !!again + !!a->argc != 1)
		return cmd_bad_usage(c->entry, "give one of: -- COMMAND [ARGS], --file FILE, --again ID");
	if (args_has(a, S_SLURM) && args_has(a, S_LOCAL))
		return cmd_bad_usage(c->entry, "--slurm or --local, not both");
	if (again && (!word_u64(again, UINT64_MAX, &rq.again) || !rq.again))
		return cmd_bad_usage(c->entry, "--again wants the id of a job of this machine (from "
				     "`gpuctl jobs`), not '%s'", again);
	if (args_has(a, LO_WAIT) || args_has(a, LO_DRY) || args_has(a, LO_QUIET))
		return cmd_bad_usage(c->entry, "a submitted job always waits for its GPUs; --wait, "
					       "--dry-run and --quiet are for `gpuctl run`");
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].opt == S_AFTER) {
			char why[256];
			if (!parse_job_refs(a->v[i].value, &rq.after, &rq.nafter, why, sizeof why)) {
				req_free(&rq);
				return cmd_bad_usage(c->entry, "--after: %s", why);
			}
		}
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd)) {
		req_free(&rq);
		fprintf(stderr, "gpuctl submit: cannot tell the current directory: %s\n", strerror(errno));
		return EXIT_FAIL;
	}
	rq.cwd = cwd;
	mode_t mask = umask(0);
	umask(mask);
	rq.umask = (unsigned)mask;
	if (log)
		rq.log = log[0] == '/' ? xstrdup(log) : xasprintf("%s/%s", cwd, log);
	struct config cfg;
	if (!config_load(&cfg)) {
		req_free(&rq);
		return EXIT_USAGE;
	}
	rq.cfg = &cfg;
	/* notifications (issue 24): --notify, else [defaults] notify */
	rq.notify = args_get(a, S_NOTIFY) ? args_get(a, S_NOTIFY) : cfg.notify;
	if (rq.notify && !*rq.notify)
		rq.notify = NULL;
	const struct job_backend *be = choose(c, &cfg, rq.o.profile, &rq.backend_why);
	/* The options as given first (what a backend cannot do is refused), then the profile's. */
	struct gpu_error err = {0};
	rc = be->submit_check(&rq, &err);
	if (rc != EXIT_OK)
		rc = cmd_bad_usage(c->entry, "%s", err.msg);
	if (rc == EXIT_OK && !lease_opts_apply(c->entry, &rq.o, &cfg))
		rc = EXIT_USAGE;
	char why[PATH_MAX + 512];
	if (rc == EXIT_OK) {
		if (file) {
			rc = from_file(be, &rq, file);
		} else if (again) {
			rc = submit_one(be, &rq, NULL, NULL, "");
		} else if (be->kind == JOB_LOCAL && !program_found(a->argv[0], rq.o.rq.profile_env, why,
								sizeof why)) {
			/* A Slurm job runs on its node, whose files and PATH are not this one's. */
			fprintf(stderr, "gpuctl submit: cannot run %s; nothing was submitted\n", why);
			rc = EXIT_USAGE;
		} else {
			char *command = sh_join(a->argv);
			rc = submit_one(be, &rq, a->argv, command, "");
			free(command);
		}
		be->submit_end(&rq);
	}
	config_free(&cfg);
	req_free(&rq);
	return rc;
}

static const struct option longopts[] = {
	{"after", required_argument, NULL, S_AFTER}, {"retries", required_argument, NULL, S_RETRIES},
	{"log", required_argument, NULL, S_LOG}, {"file", required_argument, NULL, S_FILE},
	{"again", required_argument, NULL, S_AGAIN}, {"slurm", no_argument, NULL, S_SLURM},
	{"local", no_argument, NULL, S_LOCAL}, LEASE_LONGOPTS, BIND_LONGOPTS,
	{"notify", required_argument, NULL, S_NOTIFY}, /* notifications (issue 24) */
	{0},
};

const struct cmd_entry cmd_submit_entry = {
	.name = "submit",
	.summary = "queue a job to run detached once its GPUs are free; prints its id",
	.usage = "submit [OPTIONS] -- COMMAND [ARGS...]\n"
		 "       gpuctl submit [OPTIONS] --file FILE     (one job per line; - reads stdin)\n"
		 "       gpuctl submit --again ID\n\n"
		 "Queue a job in the shared fair queue (the one `run --wait` joins) and return at once,\n"
		 "printing its id alone on stdout (messages go to stderr). Your job runner (one per user\n"
		 "and machine, started on demand, detached: it survives logout) starts the job when its\n"
		 "GPUs are granted: in a session of its own, stdin /dev/null, in this directory with\n"
		 "this environment and umask, and CUDA_VISIBLE_DEVICES etc. as `run` sets them, plus\n"
		 "GPUCTL_JOB_ID. Its stdout and stderr go to its log (`gpuctl logs ID`). A --file line\n"
		 "runs with /bin/sh -c; blank lines and lines starting with # are skipped.\n\n"
		 "  -n, --count N              how many GPUs (default 1, or as many as -g names; 0: a\n"
		 "                             CPU-only step, run without a lease, also in chains)\n"
		 "  -g, --gpus LIST            choose among these: indices, UUIDs or prefixes, bus ids\n"
		 "      --min-free-memory SIZE, --max-util PCT, --prefer free-memory|index|util,\n"
		 "      --ignore-usage, --uuid, --profile NAME, --mem SIZE, --mig PROFILE\n"
		 "                             as for `gpuctl run` (-g GPU:INSTANCE: a MIG instance)\n"
		 "      --bind-cpus, --no-bind-cpus  as for `gpuctl run`; the log says what was bound\n"
		 "      --name NAME            shown by `gpuctl jobs`, `leases` and `status`\n"
		 "      --after ID[,ID...]     start only once these jobs of yours have succeeded; if\n"
		 "                             one fails (or is cancelled, or lost) this one is cancelled\n"
		 "      --retries K            run it again, up to K times, while it fails\n"
		 "      --log PATH             its output there (appended) instead of its own log\n"
		 "      --file FILE            one job per line of FILE, queued in order\n"
		 "      --again ID             queue again a job that ended (lost in a reboot, failed)\n"
		 "      --time DURATION        its lease's time limit: SIGTERM then (as for `run`)\n"
		 "      --notify CMD           run CMD (/bin/sh -c, as you) when the job ends, fails or\n"
		 "                             is stopped, or its lease is warned idle or near its limit;\n"
		 "                             GPUCTL_EVENT, GPUCTL_JOB_ID, GPUCTL_JOB_NAME,\n"
		 "                             GPUCTL_JOB_STATE, GPUCTL_EXIT_CODE, GPUCTL_GPUS say what\n"
		 "                             (default: [defaults] notify; killed after notify_timeout)\n"
		 "      --slurm, --local       submit to Slurm (sbatch), or to this machine, whatever\n"
		 "                             the profile's or configuration's `backend` says\n"
		 "      --wait, --dry-run, -q, --quiet   refused: a job waits in the queue anyway,\n"
		 "                             and they are `gpuctl run`'s\n\n"
		 "With Slurm (--slurm, or backend = slurm) the job is one sbatch and its id prints as\n"
		 "slurm:N: -n N is --gres=gpu:N on one node; --name, --log (default slurm-N.out in this\n"
		 "directory), --after slurm:ID (afterok; the job is cancelled if one fails), this\n"
		 "directory and environment, and CUDA_DEVICE_ORDER=PCI_BUS_ID as for `run`.\n"
		 "--min-free-memory needs the site's [slurm] gres_by_memory or features_by_memory;\n"
		 "-g, --max-util, --prefer, --ignore-usage, --uuid, --retries and --again are refused.\n\n"
		 "Exit status: 0 (the id printed), 2 bad options, --log not writable or COMMAND not\n"
		 "found (looked up in PATH as the job will: a job of this machine), 6 no such GPU,\n"
		 "13 the daemon or the runner cannot be reached, 17 --after names no job of yours,\n"
		 "18 Slurm refused the job (its words are shown) or could not be reached.\n",
	.args = {.shorts = "n:", .longs = longopts, .upper = -1},
	.flags = CMD_GPUS | CMD_COMMAND,
	.exec = submit,
};
