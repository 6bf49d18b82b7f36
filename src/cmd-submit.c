/* cmd-submit.c: `gpuctl submit [OPTIONS] -- COMMAND` (and `--file FILE`, `--again ID`): hands a
 * job to the user's job runner (started on demand) and prints its id alone on stdout at once.
 * What to run travels whole (arguments and environment, in a memfd, so no size limit of the
 * message format applies); the runner checks it, records it and queues it (runner.h). */
#include "jobconn.h"
#include "leaseopts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

enum { S_AFTER = 400, S_RETRIES, S_LOG, S_FILE, S_AGAIN };

/* What every job of this submit shares. */
struct common {
	struct lease_opts o;
	uint64_t *after;
	size_t nafter;
	unsigned long retries;
	char *log, *cwd;
	unsigned umask;
};

static char *join(char **argv)
{
	struct strbuf sb = {0};
	for (int i = 0; argv[i]; i++)
		sb_addf(&sb, "%s%s", i ? " " : "", argv[i]);
	return sb.buf;
}

static void add_common(struct strbuf *sb, const struct common *cm)
{
	const struct grant_req *rq = &cm->o.rq;
	if (rq->count)
		msg_add_u64(sb, "count", rq->count);
	if (rq->gpus)
		msg_add(sb, "gpus", rq->gpus, NULL);
	if (rq->min_free_mib)
		msg_add_u64(sb, "min_free", rq->min_free_mib);
	if (rq->max_util >= 0)
		msg_add_u64(sb, "max_util", (uint64_t)rq->max_util);
	if (rq->prefer >= 0)
		msg_add_u64(sb, "prefer", (uint64_t)rq->prefer);
	if (rq->ignore_usage)
		msg_add_u64(sb, "ignore_usage", 1);
	if (cm->o.uuid)
		msg_add_u64(sb, "uuid", 1);
	if (rq->name)
		msg_add(sb, "name", rq->name, NULL);
	for (size_t i = 0; i < cm->nafter; i++) {
		if (i % 15 == 0)
			msg_key(sb, "after");
		msg_word_u64(sb, cm->after[i]);
	}
	if (cm->retries)
		msg_add_u64(sb, "retries", cm->retries);
	if (cm->log)
		msg_add(sb, "log", cm->log, NULL);
	msg_add(sb, "cwd", cm->cwd, NULL);
	msg_add_u64(sb, "umask", cm->umask);
}

/* One job to the runner; its id on stdout. EXIT_OK or the error's code (printed). */
static int submit_one(struct dclient *dc, const struct common *cm, char **argv, const char *command,
		      uint64_t again, const char *where)
{
	struct strbuf sb = {0}, spec = {0};
	struct gpu_error err = {0};
	struct msg reply;
	int fd = -1;
	msg_begin(&sb, "submit");
	msg_add_u64(&sb, "id", dc->next_id++);
	if (again) {
		msg_add_u64(&sb, "again", again);
	} else {
		add_common(&sb, cm);
		msg_add(&sb, "command", command, NULL);
		spec_build(&spec, argv, environ);
		fd = memfd_create("gpuctl-job", MFD_CLOEXEC);
		if (fd < 0 || write(fd, spec.buf, spec.len) != (ssize_t)spec.len) {
			fprintf(stderr, "gpuctl submit: cannot hold the job's environment in memory "
				"(memfd): %s\n", strerror(errno));
			if (fd >= 0)
				close(fd);
			sb_free(&sb);
			sb_free(&spec);
			return EXIT_FAIL;
		}
	}
	bool ok = runner_call(dc, &sb, &fd, fd >= 0, &reply, &err);
	uint64_t id = 0;
	if (ok) {
		ok = msg_get_u64(&reply, "job", UINT64_MAX, &id);
		const char *priv = msg_get(&reply, "private");
		if (priv)
			client_private_notice(daemon_socket_path(), priv);
		msg_free(&reply);
		if (!ok) {
			err.code = EXIT_DAEMON;
			snprintf(err.msg, sizeof err.msg, "your job runner answered without a job id");
		}
	}
	if (fd >= 0)
		close(fd);
	sb_free(&sb);
	sb_free(&spec);
	if (!ok) {
		fprintf(stderr, "gpuctl submit: %s%s\n", where, err.msg);
		return err.code ? err.code : EXIT_FAIL;
	}
	printf("%llu\n", (unsigned long long)id);
	fflush(stdout);
	return EXIT_OK;
}

static int from_file(struct dclient *dc, const struct common *cm, const char *path)
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
		rc = submit_one(dc, cm, argv, lines[i], 0, where);
		if (rc != EXIT_OK && i)
			fprintf(stderr, "gpuctl submit: the %zu job%s before line %u stay submitted; none after "
				"it was\n", i, i == 1 ? "" : "s", linenos[i]);
	}
	free(lines);
	free(linenos);
	free(text);
	return rc;
}

static int submit(struct cmd *c)
{
	struct common cm = {.o = {.rq = {.max_util = -1, .prefer = -1, .kind = "job",
					 .who = "gpuctl submit"}}};
	struct args *a = &c->args;
	const char *file = args_get(a, S_FILE), *again = args_get(a, S_AGAIN), *log = args_get(a, S_LOG);
	uint64_t again_id = 0;
	int rc = lease_opts_read(c, &cm.o);
	if (rc != EXIT_OK)
		return rc;
	if (!args_uint(a, S_RETRIES, 0, 1000, &cm.retries))
		return cmd_args_error(c);
	if (!!file + !!again + !!a->argc != 1)
		return cmd_bad_usage(c->entry, "give one of: -- COMMAND [ARGS], --file FILE, --again ID");
	if (again && (!word_u64(again, UINT64_MAX, &again_id) || !again_id))
		return cmd_bad_usage(c->entry, "--again wants a job id (from `gpuctl jobs`), not '%s'", again);
	if (args_has(a, LO_WAIT) || args_has(a, LO_DRY) || args_has(a, LO_QUIET))
		return cmd_bad_usage(c->entry, "a submitted job always waits for its GPUs; --wait, "
					       "--dry-run and --quiet are for `gpuctl run`");
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].opt == S_AFTER) {
			char why[256];
			if (!parse_job_ids(a->v[i].value, &cm.after, &cm.nafter, why, sizeof why)) {
				free(cm.after);
				return cmd_bad_usage(c->entry, "--after: %s", why);
			}
		}
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd)) {
		free(cm.after);
		fprintf(stderr, "gpuctl submit: cannot tell the current directory: %s\n", strerror(errno));
		return EXIT_FAIL;
	}
	cm.cwd = cwd;
	mode_t mask = umask(0);
	umask(mask);
	cm.umask = (unsigned)mask;
	if (log)
		cm.log = log[0] == '/' ? xstrdup(log) : xasprintf("%s/%s", cwd, log);
	struct config cfg;
	if (!config_load(&cfg)) {
		free(cm.after);
		free(cm.log);
		return EXIT_USAGE;
	}
	if (!lease_opts_apply(c->entry, &cm.o, &cfg)) {
		config_free(&cfg);
		free(cm.after);
		free(cm.log);
		return EXIT_USAGE;
	}
	struct dclient dc = {.fd = -1, .next_id = 1};
	if (file) {
		rc = from_file(&dc, &cm, file);
	} else if (again) {
		rc = submit_one(&dc, &cm, NULL, NULL, again_id, "");
	} else {
		char *command = join(a->argv);
		rc = submit_one(&dc, &cm, a->argv, command, 0, "");
		free(command);
	}
	dclient_close(&dc);
	config_free(&cfg);
	free(cm.after);
	free(cm.log);
	return rc;
}

static const struct option longopts[] = {
	{"after", required_argument, NULL, S_AFTER}, {"retries", required_argument, NULL, S_RETRIES},
	{"log", required_argument, NULL, S_LOG}, {"file", required_argument, NULL, S_FILE},
	{"again", required_argument, NULL, S_AGAIN}, LEASE_LONGOPTS, {0},
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
		 "  -n, --count N              how many GPUs (default 1, or as many as -g names)\n"
		 "  -g, --gpus LIST            choose among these: indices, UUIDs or prefixes, bus ids\n"
		 "      --min-free-memory SIZE, --max-util PCT, --prefer free-memory|index|util,\n"
		 "      --ignore-usage, --uuid, --profile NAME    as for `gpuctl run`\n"
		 "      --name NAME            shown by `gpuctl jobs`, `leases` and `status`\n"
		 "      --after ID[,ID...]     start only once these jobs of yours have succeeded; if\n"
		 "                             one fails (or is cancelled, or lost) this one is cancelled\n"
		 "      --retries K            run it again, up to K times, while it fails\n"
		 "      --log PATH             its output there (appended) instead of its own log\n"
		 "      --file FILE            one job per line of FILE, queued in order\n"
		 "      --again ID             queue again a job that ended (lost in a reboot, failed)\n\n"
		 "Exit status: 0 (the id printed), 2 bad options or --log not writable, 6 no such GPU,\n"
		 "13 the daemon or the runner cannot be reached, 17 --after names no job of yours.\n",
	.args = {.shorts = "n:", .longs = longopts, .upper = -1},
	.flags = CMD_GPUS | CMD_COMMAND,
	.exec = submit,
};
