/* test_slurmjobs.c: the pure half of the Slurm job backend (src/jobs/slurm-spec.c): squeue's rows
 * (lines captured from Debian 12's Slurm 22.05 with tests/lib/slurm.sh: running, pending for
 * resources and for a dependency, failed with a status and by a signal, a dependency never
 * satisfied), Slurm's states in gpuctl's terms, `scontrol show job -d` (a job name holding a
 * newline and a fake "JobId=" line), sbatch's argv for a request (GPUs, name, log, --after, the
 * site's memory mappings), and the job ids of both backends. */
#include "jobs/backend.h"
#include "jobs/local-conn.h"
#include "jobs/slurm-jobs.h"
#include "tap.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* As squeue printed them (SQUEUE_FORMAT; the job in the first ran `exit 3`). */
static const char squeue_text[] =
	"3|0|COMPLETED|0|2026-11-30T21:56:30|2026-11-30T21:56:35|2026-11-30T21:56:35|vm|None|\n"
	"1|0|FAILED|768|2026-11-30T21:56:30|2026-11-30T21:56:33|2026-11-30T21:56:34|vm|NonZeroExitCode|\n"
	"2|1000|FAILED|9|2026-11-30T21:56:30|2026-11-30T21:56:33|2026-11-30T21:56:33|vm|JobLaunchFailure|\n"
	"4|0|PENDING|0|2026-11-30T21:56:30|N/A|N/A||DependencyNeverSatisfied|\n"
	"12|0|RUNNING|0|2026-11-30T21:56:30|2026-11-30T21:56:33|NONE|vm|None|\n"
	"13|0|PENDING|0|2026-11-30T21:56:30|N/A|N/A||Resources|";

static void squeue_rows(void)
{
	struct squeue_row *r;
	size_t n = 0;
	char why[160];
	CHECK(squeue_parse(squeue_text, &r, &n, why, sizeof why));
	CHECK(n == 6);
	if (n != 6) {
		free(r);
		return;
	}
	CHECK(r[0].id == 1 && r[1].id == 2 && r[2].id == 3 && r[3].id == 4 && r[5].id == 13);
	CHECK_STR(r[0].state, "FAILED");
	CHECK(r[0].status == 768 && r[0].uid == 0);
	CHECK(r[1].uid == 1000 && r[1].status == 9);
	CHECK_STR(r[0].nodes, "vm");
	CHECK_STR(r[0].reason, "NonZeroExitCode");
	CHECK(r[0].submitted == slurm_time_ns("2026-11-30T21:56:30"));
	CHECK(r[0].ended - r[0].started == 1000000000ULL);
	CHECK(r[3].started == 0 && r[3].ended == 0 && r[3].nodes[0] == '\0');
	CHECK(r[4].started != 0 && r[4].ended == 0); /* RUNNING: EndTime NONE */
	CHECK_STR(r[5].reason, "Resources");
	free(r);

	struct squeue_row one;
	const char *bad[] = {
		"", "1|0|RUNNING", "x|0|RUNNING|0|N/A|N/A|N/A||None|", "0|0|RUNNING|0|N/A|N/A|N/A||None|",
		"5|0|running|0|N/A|N/A|N/A||None|", "5|0||0|N/A|N/A|N/A||None|",
		"5|-1|RUNNING|0|N/A|N/A|N/A||None|",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char what[120];
		snprintf(what, sizeof what, "squeue: '%s' is not a row", bad[i]);
		tap_check(!squeue_parse_line(bad[i], strlen(bad[i]), &one), what, __FILE__, __LINE__);
	}
	/* The Reason is last: a '|' in it cannot shift a field. */
	const char *odd = "7|0|PENDING|0|N/A|N/A|N/A|(null)|a|b|";
	CHECK(squeue_parse_line(odd, strlen(odd), &one));
	CHECK_STR(one.reason, "a|b");
	CHECK_STR(one.nodes, "");
	CHECK(one.submitted == 0);
	CHECK(slurm_time_ns("Unknown") == 0 && slurm_time_ns("N/A") == 0 && slurm_time_ns("NONE") == 0);
	CHECK(slurm_time_ns("2026-11-30T21:56:30x") == 0);
	/* A row whose Reason ends short (no closing '|') is a part of a row. */
	const char *part = "7|0|PENDING|0|N/A|N/A|N/A||a";
	CHECK(!squeue_parse_line(part, strlen(part), &one));
}

/* Answers that must not be read at all: a Reason holding a newline, after which a line looks like
 * a row of another of the user's jobs (or of the same one); a line that is not a row. */
static void squeue_hostile(void)
{
	static const char *const bad[] = {
		/* job 12's Reason is "x\n13|...|None": a second row for 13 */
		"12|0|PENDING|0|2026-11-30T21:56:30|N/A|N/A||x\n"
		"13|0|COMPLETED|0|2026-11-30T21:56:30|2026-11-30T21:56:31|2026-11-30T21:56:32|vm|None|\n"
		"13|0|RUNNING|0|2026-11-30T21:56:30|2026-11-30T21:56:33|NONE|vm|None|\n",
		/* the Reason ends with '|' before its newline: two well-formed rows for 12 */
		"12|0|PENDING|0|2026-11-30T21:56:30|N/A|N/A||a|\n"
		"12|0|COMPLETED|0|2026-11-30T21:56:30|2026-11-30T21:56:31|2026-11-30T21:56:32|vm|None|\n",
		/* a line that is no row, among rows */
		"12|0|RUNNING|0|2026-11-30T21:56:30|2026-11-30T21:56:33|NONE|vm|None|\nnot a row\n",
		/* an empty line (a Reason ending in a newline) */
		"12|0|PENDING|0|2026-11-30T21:56:30|N/A|N/A||a|\n\n",
		/* an array's task beside a job of the same id */
		"12|0|RUNNING|0|2026-11-30T21:56:30|2026-11-30T21:56:33|NONE|vm|None|\n"
		"12_1|0|RUNNING|0|2026-11-30T21:56:30|2026-11-30T21:56:33|NONE|vm|None|\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct squeue_row *r = NULL;
		size_t n = 99;
		char why[160] = "", what[80];
		bool ok = squeue_parse(bad[i], &r, &n, why, sizeof why);
		snprintf(what, sizeof what, "squeue: hostile answer %zu refused, not read", i);
		tap_check(!ok && n == 0 && !r && why[0], what, __FILE__, __LINE__);
		free(r);
	}
	/* The tasks of an array: one id, marked as an array (gpuctl does not follow them). */
	const char *arr = "123_[3-4%2]|0|PENDING|0|2026-11-30T21:56:30|N/A|N/A||JobArrayTaskLimit|\n"
			  "123_1|0|RUNNING|0|2026-11-30T21:56:30|2026-11-30T21:56:33|NONE|vm|None|\n"
			  "123_2|0|COMPLETED|0|2026-11-30T21:56:30|2026-11-30T21:56:33|2026-11-30T21:56:34|vm|None|\n";
	struct squeue_row *r;
	size_t n = 0;
	char why[160];
	CHECK(squeue_parse(arr, &r, &n, why, sizeof why));
	CHECK(n == 3 && r && r[0].id == 123 && r[0].array && r[1].array && r[2].array);
	free(r);
	struct squeue_row one;
	const char *bad_task[] = {"123_|0|RUNNING|0|N/A|N/A|N/A||None|", "123_x|0|RUNNING|0|N/A|N/A|N/A||None|",
				  "_1|0|RUNNING|0|N/A|N/A|N/A||None|"};
	for (size_t i = 0; i < ARRAY_SIZE(bad_task); i++)
		tap_check(!squeue_parse_line(bad_task[i], strlen(bad_task[i]), &one), bad_task[i], __FILE__,
			  __LINE__);
	/* An empty answer: no rows, read. */
	CHECK(squeue_parse("", &r, &n, why, sizeof why) && n == 0);
	free(r);
}

/* One row in gpuctl's terms. */
static void apply(const char *line, struct job *j)
{
	struct squeue_row r;
	job_free(j);
	*j = (struct job){.exit_code = -1};
	if (!squeue_parse_line(line, strlen(line), &r))
		tap_check(false, line, __FILE__, __LINE__);
	else
		slurm_row_apply(&r, j);
}

static void states(void)
{
	struct job j = {0};
	apply("12|0|RUNNING|0|2026-11-30T21:56:30|2026-11-30T21:56:33|NONE|vm|None|", &j);
	CHECK(j.state == JOB_RUNNING && j.started && !j.ended && !j.reason && j.exit_code == -1);
	CHECK_STR(j.node, "vm");
	CHECK_STR(j.slurm_state, "RUNNING");
	apply("12|0|COMPLETING|0|2026-11-30T21:56:30|2026-11-30T21:56:33|NONE|vm|None|", &j);
	CHECK(j.state == JOB_RUNNING);
	CHECK_STR(j.reason, "Slurm: COMPLETING");
	apply("13|0|PENDING|0|2026-11-30T21:56:30|N/A|N/A||Resources|", &j);
	CHECK(j.state == JOB_QUEUED && !j.never && !j.started);
	CHECK_STR(j.reason, "Slurm: Resources");
	apply("13|0|PENDING|0|2026-11-30T21:56:30|N/A|N/A||None|", &j);
	CHECK(j.state == JOB_QUEUED && !j.reason);
	apply("4|0|PENDING|0|2026-11-30T21:56:30|N/A|N/A||DependencyNeverSatisfied|", &j);
	CHECK(j.state == JOB_QUEUED && j.never);
	CHECK(j.reason && strstr(j.reason, "will never start"));
	apply("3|0|COMPLETED|0|2026-11-30T21:56:30|2026-11-30T21:56:35|2026-11-30T21:56:35|vm|None|", &j);
	CHECK(j.state == JOB_DONE && j.exit_code == 0 && j.signal == 0 && j.ended && !j.reason);
	CHECK(job_exit_status(&j) == 0);
	apply("1|0|FAILED|768|2026-11-30T21:56:30|2026-11-30T21:56:33|2026-11-30T21:56:34|vm|NonZeroExitCode|", &j);
	CHECK(j.state == JOB_FAILED && j.exit_code == 3 && j.signal == 0 && !j.reason);
	CHECK(job_exit_status(&j) == 3);
	apply("2|0|FAILED|9|2026-11-30T21:56:30|2026-11-30T21:56:33|2026-11-30T21:56:33|vm|JobLaunchFailure|", &j);
	CHECK(j.state == JOB_FAILED && j.exit_code == -1 && j.signal == 9);
	CHECK(j.reason == NULL); /* Slurm's JobLaunchFailure for a script it signalled: not shown */
	CHECK(job_exit_status(&j) == 137);
	apply("2|0|FAILED|256|2026-11-30T21:56:30|N/A|2026-11-30T21:56:33||JobLaunchFailure|", &j);
	CHECK_STR(j.reason, "Slurm: FAILED (JobLaunchFailure)");
	apply("5|0|CANCELLED|15|2026-11-30T21:56:30|2026-11-30T21:56:33|2026-11-30T21:56:40|vm|None|", &j);
	CHECK(j.state == JOB_CANCELLED && j.signal == 15 && job_exit_status(&j) == EXIT_CANCELLED);
	CHECK_STR(j.reason, "cancelled in Slurm while it ran");
	apply("6|0|CANCELLED|0|2026-11-30T21:56:30|N/A|2026-11-30T21:56:40||None|", &j);
	CHECK(j.state == JOB_CANCELLED && !j.started && !j.node);
	CHECK_STR(j.reason, "cancelled in Slurm before it started");
	apply("6|0|CANCELLED|0|2026-11-30T21:56:30|N/A|2026-11-30T21:56:40||DependencyNeverSatisfied|", &j);
	CHECK(j.reason && strstr(j.reason, "a job it was to run after did not succeed"));
	apply("8|0|TIMEOUT|15|2026-11-30T21:56:30|2026-11-30T21:56:33|2026-11-30T21:57:33|vm|TimeLimit|", &j);
	CHECK(j.state == JOB_FAILED && j.signal == 15);
	CHECK_STR(j.reason, "its time limit ran out (Slurm: TIMEOUT)");
	apply("9|0|NODE_FAIL|0|2026-11-30T21:56:30|2026-11-30T21:56:33|2026-11-30T21:57:33|vm|NodeDown|", &j);
	CHECK(j.state == JOB_LOST && job_exit_status(&j) == EXIT_LOST);
	apply("10|0|OUT_OF_MEMORY|0|2026-11-30T21:56:30|2026-11-30T21:56:33|2026-11-30T21:57:33|vm|OutOfMemory|", &j);
	CHECK(j.state == JOB_FAILED);
	CHECK_STR(j.reason, "it ran out of memory (Slurm: OUT_OF_MEMORY)");
	/* Requeued and held after a special exit: queued (it can run again once released). */
	apply("11|0|SPECIAL_EXIT|256|2026-11-30T21:56:30|2026-11-30T21:56:33|2026-11-30T21:57:33|vm|JobHeldAdmin|", &j);
	CHECK(j.state == JOB_QUEUED && !j.never && j.exit_code == -1 && !job_final(j.state));
	CHECK_STR(j.reason, "requeued and held by Slurm (Slurm: SPECIAL_EXIT, JobHeldAdmin): `scontrol "
		  "release 11` lets it start again");
	apply("11|0|REQUEUE_HOLD|0|2026-11-30T21:56:30|N/A|N/A||JobHeldAdmin|", &j);
	CHECK(j.state == JOB_QUEUED && j.reason && strstr(j.reason, "scontrol release 11"));
	job_free(&j);
}

/* As `scontrol show job -d` printed it for a job named "na|me\nJobId=7 UserId=x". */
static const char scontrol_text[] =
	"JobId=1 JobName=na|me\n"
	"JobId=7 UserId=x\n"
	"   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
	"   JobState=RUNNING Reason=None Dependency=(null)\n"
	"   NodeList=vm\n"
	"   JOB_GRES=gpu:2\n"
	"     Nodes=vm CPU_IDs=0 Mem=0 GRES=gpu:2(IDX:0-1)\n"
	"   Command=(null)\n"
	"   WorkDir=/tmp/a b\n"
	"   StdErr=/tmp/a b/a.out\n"
	"   StdIn=/dev/null\n"
	"   StdOut=/tmp/a b/a.out\n"
	"   Power=\n\n";

static void scontrol(void)
{
	struct scontrol_job sj;
	scontrol_parse_job(scontrol_text, "vm", &sj);
	CHECK_STR(sj.name, "na|me");
	CHECK(sj.command == NULL);
	CHECK_STR(sj.workdir, "/tmp/a b");
	CHECK_STR(sj.stdout_path, "/tmp/a b/a.out");
	CHECK_STR(sj.gpus, "0-1");
	scontrol_job_free(&sj);
	scontrol_parse_job(scontrol_text, "v", &sj);
	CHECK_STR(sj.gpus, ""); /* another node's name is not a prefix match */
	scontrol_job_free(&sj);
	/* A name's newline cannot fake Slurm's lines: they are indented, the name's rest is not. */
	scontrol_parse_job("JobId=2 JobName=x\nStdOut=/etc/shadow\n   StdOut=/home/a/o\n", NULL, &sj);
	CHECK_STR(sj.stdout_path, "/home/a/o");
	scontrol_job_free(&sj);

	unsigned g[8], n;
	CHECK(slurm_idx_list("0-1,3", g, &n, 8) && n == 3 && g[0] == 0 && g[1] == 1 && g[2] == 3);
	CHECK(slurm_idx_list("", g, &n, 8) && n == 0);
	CHECK(!slurm_idx_list("1-", g, &n, 8));
	CHECK(!slurm_idx_list("3-1", g, &n, 8));
	CHECK(!slurm_idx_list("a", g, &n, 8));
	CHECK(!slurm_idx_list("1,", g, &n, 8));
}

/* The argv as one line, for comparison. */
static char *joined(char **v)
{
	struct strbuf sb = {0};
	for (size_t i = 0; v && v[i]; i++)
		sb_addf(&sb, "%s%s", i ? " " : "", v[i]);
	return sb.buf ? sb.buf : xstrdup("(none)");
}

static void check_argv(const struct sbatch_req *rq, char *const *cmd, const char *want, const char *what)
{
	char why[512] = "", **v = sbatch_argv(rq, cmd, why, sizeof why);
	char *got = v ? joined(v) : xstrdup(why);
	tap_check_str(got, want, what, __FILE__, __LINE__);
	free(got);
	slurm_argv_free(v);
}

static void sbatch(void)
{
	char *cmd[] = {"/usr/bin/python3", "train.py", "--lr", "0.1", NULL};
	const uint64_t after[] = {41, 42};
	struct mem_map gres, feat;
	char why[256];
	CHECK(config_parse_mem_map("a100:40G h100:80G,l4:24G", &gres, why, sizeof why) && gres.n == 3);
	CHECK(gres.e[1].mib == 80 * 1024 && !strcmp(gres.e[2].name, "l4"));
	CHECK(config_parse_mem_map("gpu40g:40G gpu80g:80G", &feat, why, sizeof why));
	struct mem_map bad;
	CHECK(!config_parse_mem_map("", &bad, why, sizeof why));
	CHECK(!config_parse_mem_map("a100", &bad, why, sizeof why));
	CHECK(!config_parse_mem_map("a100:lots", &bad, why, sizeof why));
	CHECK(!config_parse_mem_map("a|b:40G", &bad, why, sizeof why)); /* would be an OR in --constraint */
	CHECK(!config_parse_mem_map(":40G", &bad, why, sizeof why));

	struct sbatch_req rq = {.count = 2, .cwd = "/home/a/x y"};
	check_argv(&rq, cmd, "sbatch --parsable --nodes=1 --ntasks=1 --gres=gpu:2 --job-name=python3 "
		   "--chdir=/home/a/x y --export=ALL --output=slurm-%j.out --open-mode=append /dev/stdin "
		   "/usr/bin/python3 train.py --lr 0.1", "sbatch: -n 2, the program's name, slurm-%j.out");
	rq = (struct sbatch_req){.count = 1, .cwd = "/w", .name = "lr 0.1", .log = "/w/100%.log",
				 .after = after, .nafter = 2};
	check_argv(&rq, cmd, "sbatch --parsable --nodes=1 --ntasks=1 --gres=gpu:1 --job-name=lr 0.1 "
		   "--chdir=/w --export=ALL --output=/w/100%%.log --open-mode=append --dependency=afterok:41:42 "
		   "--kill-on-invalid-dep=yes /dev/stdin /usr/bin/python3 train.py --lr 0.1",
		   "sbatch: --name, --log (its % meant as written), --after as afterok");
	rq = (struct sbatch_req){.count = 1, .cwd = "/w", .min_free_mib = 30 * 1024, .gres_mem = &gres};
	check_argv(&rq, cmd, "sbatch --parsable --nodes=1 --ntasks=1 --gres=gpu:a100:1 --job-name=python3 "
		   "--chdir=/w --export=ALL --output=slurm-%j.out --open-mode=append /dev/stdin /usr/bin/python3 train.py "
		   "--lr 0.1", "sbatch: --min-free-memory 30G as the smallest GPU type that has it");
	rq.feature_mem = &feat;
	check_argv(&rq, cmd, "sbatch --parsable --nodes=1 --ntasks=1 --gres=gpu:1 --constraint=gpu40g|gpu80g "
		   "--job-name=python3 --chdir=/w --export=ALL --output=slurm-%j.out --open-mode=append /dev/stdin "
		   "/usr/bin/python3 train.py --lr 0.1",
		   "sbatch: --min-free-memory as any node feature that has it (features first)");
	rq.min_free_mib = 100 * 1024;
	check_argv(&rq, cmd, "no GPU node feature of this site has 102400 MiB (the most is 81920 MiB, by "
		   "[slurm] features_by_memory)", "sbatch: more memory than any feature: refused");
	rq.feature_mem = NULL;
	rq.gres_mem = NULL;
	rq.min_free_mib = 1;
	char w[512];
	char **v = sbatch_argv(&rq, cmd, w, sizeof w);
	CHECK(v == NULL && strstr(w, "gres_by_memory or features_by_memory"));
	slurm_argv_free(v);
	CHECK(strstr(sbatch_script, "exec \"$@\"") && strstr(sbatch_script, "CUDA_DEVICE_ORDER=PCI_BUS_ID"));

	char *p = slurm_path_pattern("/a/%j%");
	CHECK_STR(p, "/a/%%j%%");
	free(p);
	p = slurm_path_pattern("/a\\b/%j");
	CHECK_STR(p, "/a\\b/%j");
	free(p);
	uint64_t id = 0;
	CHECK(sbatch_parse_id("42\n", &id) && id == 42);
	CHECK(sbatch_parse_id("43;cluster\n", &id) && id == 43);
	CHECK(!sbatch_parse_id("", &id) && !sbatch_parse_id("0\n", &id) && !sbatch_parse_id("x\n", &id));
	CHECK(!sbatch_parse_id("42 x\n", &id));
}

static void refs(void)
{
	struct job_ref *r = NULL;
	size_t n = 0;
	char why[256], buf[48];
	CHECK(parse_job_refs("3,slurm:5,3", &r, &n, why, sizeof why) && n == 2);
	CHECK(n == 2 && r[0].kind == JOB_LOCAL && r[0].id == 3 && r[1].kind == JOB_SLURM && r[1].id == 5);
	CHECK(parse_job_refs("slurm:3", &r, &n, why, sizeof why) && n == 3 && r[2].kind == JOB_SLURM);
	free(r);
	const char *bad[] = {"", "slurm:", "slurm:x", "slurm:0", "3,,4", "SLURM:3", "slurm:-1", "3,"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		r = NULL;
		n = 0;
		char what[80];
		snprintf(what, sizeof what, "job ids: '%s' refused", bad[i]);
		tap_check(!parse_job_refs(bad[i], &r, &n, why, sizeof why), what, __FILE__, __LINE__);
		free(r);
	}
	/* A task of a job array: refused, saying so. */
	r = NULL;
	n = 0;
	CHECK(!parse_job_refs("slurm:123_4", &r, &n, why, sizeof why));
	CHECK(strstr(why, "a task of Slurm's job array 123") && strstr(why, "does not follow job arrays"));
	free(r);
	CHECK_STR(job_id_text(JOB_SLURM, 42, buf, sizeof buf), "slurm:42");
	CHECK_STR(job_id_text(JOB_LOCAL, 17, buf, sizeof buf), "17");
}

/* sacct --parsable2 --noheader --format=SACCT_FORMAT. Hand-written from Slurm 22.05's sacct(1)
 * (JobIDRaw is ID or ID.STEP, State may be "CANCELLED by UID", ExitCode is EXIT:SIGNAL, times
 * YYYY-MM-DDTHH:MM:SS or Unknown/None, NodeList "None assigned" for a job that never ran), not
 * captured: the test machine's Slurm has no slurmdbd, so its sacct answers nothing. */
#define T0 "2026-11-30T21:56:30"
#define T1 "2026-11-30T21:56:31"
#define T2 "2026-11-30T21:56:35"
static const char sacct_text[] =
	"41|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|vm\n"
	"41.batch|1000|COMPLETED|0:0|" T1 "|" T1 "|" T2 "|vm\n"
	"41.extern|1000|COMPLETED|0:0|" T1 "|" T1 "|" T2 "|vm\n"
	"42|1000|FAILED|3:0|" T0 "|" T1 "|" T2 "|gpu[01-02]\n"
	"42.batch|1000|FAILED|3:0|" T1 "|" T1 "|" T2 "|gpu01\n"
	"43|1000|FAILED|0:0|" T0 "|" T1 "|" T2 "|vm\n"
	"43.batch|1000|FAILED|0:9|" T1 "|" T1 "|" T2 "|vm\n"
	"44|1000|CANCELLED by 1000|0:0|" T0 "|None|" T2 "|None assigned\n"
	"45|1000|TIMEOUT|0:0|" T0 "|" T1 "|" T2 "|vm\n"
	"45.batch|1000|CANCELLED|0:15|" T1 "|" T1 "|" T2 "|vm\n"
	"45.0|1000|CANCELLED|0:15|" T1 "|" T1 "|" T2 "|vm\n"
	"46|1000|RUNNING|0:0|" T0 "|" T1 "|Unknown|vm\n";

static int sacct_wait(const struct squeue_row *r, enum job_state *st)
{
	struct job j = {.exit_code = -1};
	slurm_row_apply(r, &j);
	*st = j.state;
	int rc = job_exit_status(&j);
	job_free(&j);
	return rc;
}

static void sacct(void)
{
	struct squeue_row *r = NULL;
	size_t n = 0;
	char why[160] = "";
	CHECK(sacct_parse(sacct_text, &r, &n, why, sizeof why));
	CHECK(n == 6);
	if (n != 6) {
		free(r);
		return;
	}
	enum job_state st;
	CHECK(r[0].id == 41 && r[0].uid == 1000 && r[0].status == 0);
	CHECK_STR(r[0].state, "COMPLETED");
	CHECK_STR(r[0].nodes, "vm");
	CHECK(r[0].submitted == slurm_time_ns(T0) && r[0].ended == slurm_time_ns(T2));
	CHECK(sacct_wait(&r[0], &st) == 0 && st == JOB_DONE);
	CHECK(r[1].id == 42 && r[1].status == 3 << 8);
	CHECK_STR(r[1].nodes, "gpu[01-02]");
	CHECK(sacct_wait(&r[1], &st) == 3 && st == JOB_FAILED);
	/* the job's line says 0:0, its batch step the signal: 128+9 */
	CHECK(r[2].id == 43 && r[2].status == 9);
	CHECK(sacct_wait(&r[2], &st) == 128 + 9 && st == JOB_FAILED);
	CHECK(r[3].id == 44 && r[3].started == 0 && r[3].nodes[0] == '\0');
	CHECK_STR(r[3].state, "CANCELLED");
	CHECK(sacct_wait(&r[3], &st) == EXIT_CANCELLED && st == JOB_CANCELLED);
	CHECK(r[4].id == 45 && r[4].status == 15);
	CHECK(sacct_wait(&r[4], &st) == 128 + 15 && st == JOB_FAILED);
	CHECK(r[5].id == 46 && r[5].ended == 0);
	sacct_wait(&r[5], &st);
	CHECK(!job_final(st)); /* still running by sacct: not an answer for a forgotten job */
	free(r);

	CHECK(sacct_parse("", &r, &n, why, sizeof why) && n == 0);
	free(r);

	/* Lines that are not of the format (a job name cannot be among the fields, but a site's
	 * SLURM_TIME_FORMAT, another Slurm's fields or a broken answer can), and answers whose lines
	 * cannot be told apart: none of it is read. */
	static const char *const bad[] = {
		"41|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|vm|x\n",
		"41|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "\n",
		"41|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|vm|\n",
		"41|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|v m\n",
		"41|1000|Completed|0:0|" T0 "|" T1 "|" T2 "|vm\n",
		"41|1000|CANCELLED by|0:0|" T0 "|" T1 "|" T2 "|vm\n",
		"41|1000|CANCELLED by x|0:0|" T0 "|" T1 "|" T2 "|vm\n",
		"41|1000|COMPLETED+|0:0|" T0 "|" T1 "|" T2 "|vm\n",
		"41|1000|COMPLETED|0|" T0 "|" T1 "|" T2 "|vm\n",
		"41|1000|COMPLETED|0:300|" T0 "|" T1 "|" T2 "|vm\n",
		"41|1000|COMPLETED|256:0|" T0 "|" T1 "|" T2 "|vm\n",
		"41|1000|COMPLETED|-1:0|" T0 "|" T1 "|" T2 "|vm\n",
		"41|x|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|vm\n",
		"0|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|vm\n",
		"41_2|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|vm\n",
		"41|1000|COMPLETED|0:0|2 minutes ago|" T1 "|" T2 "|vm\n",
		"41|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|vm\n\n",
		"41|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|vm\nsacct: error: x\n",
		/* a step with an empty or odd name, a step without its job */
		"41|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|vm\n41.|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|vm\n",
		"41|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|vm\n41.ba tch|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|vm\n",
		"41.batch|1000|FAILED|0:9|" T0 "|" T1 "|" T2 "|vm\n",
		/* a job twice (a requeued job's records with --duplicates, two clusters), a batch step twice */
		"41|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|vm\n41|1000|FAILED|1:0|" T0 "|" T1 "|" T2 "|vm\n",
		"41|1000|FAILED|0:0|" T0 "|" T1 "|" T2 "|vm\n41.batch|1000|FAILED|0:9|" T0 "|" T1 "|" T2
		"|vm\n41.batch|1000|COMPLETED|0:0|" T0 "|" T1 "|" T2 "|vm\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		r = NULL;
		n = 99;
		why[0] = '\0';
		char what[80];
		bool ok = sacct_parse(bad[i], &r, &n, why, sizeof why);
		snprintf(what, sizeof what, "sacct: odd answer %zu refused, not read", i);
		tap_check(!ok && n == 0 && !r && why[0], what, __FILE__, __LINE__);
		free(r);
	}
}

void test_slurmjobs(void)
{
	squeue_rows();
	squeue_hostile();
	sacct();
	states();
	scontrol();
	sbatch();
	refs();
}
