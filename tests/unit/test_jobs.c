/* test_jobs.c: the parsers of detached jobs: `submit --file` lines, lists of job ids (--after and
 * the commands' arguments), the spec file (arguments and environment), the record (a round trip
 * with hostile text, refusals), the id in a job's label in the daemon's lists, and a directory
 * of records loaded by id. */
#include "jobs/backend.h"
#include "jobs/local-conn.h"
#include "tap.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <stdlib.h>
#include <unistd.h>

/* The lines jobfile_parse keeps, as "LINENO:TEXT|...", or "error: WHY". */
static const char *lines_of(const char *text, size_t len)
{
	static char out[512];
	char *copy = xmalloc(len + 1), **lines, why[128];
	unsigned *nos;
	size_t n;
	memcpy(copy, text, len);
	copy[len] = '\0';
	if (!jobfile_parse(copy, len, &lines, &nos, &n, why, sizeof why)) {
		snprintf(out, sizeof out, "error: %s", why);
	} else {
		struct strbuf sb = {0};
		sb_add(&sb, "", 0);
		for (size_t i = 0; i < n; i++)
			sb_addf(&sb, "%s%u:%s", i ? "|" : "", nos[i], lines[i]);
		snprintf(out, sizeof out, "%s", sb.buf);
		sb_free(&sb);
		free(lines);
		free(nos);
	}
	free(copy);
	return out;
}

static const char *ids_of(const char *s)
{
	static char out[256];
	struct job_ref *refs = NULL;
	size_t n = 0;
	char why[200];
	if (!parse_job_refs(s, &refs, &n, why, sizeof why)) {
		snprintf(out, sizeof out, "error: %s", why);
		free(refs); /* what it parsed before the error */
		return out;
	}
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s%llu", i ? " " : "",
			 refs[i].kind == JOB_SLURM ? "slurm:" : "", (unsigned long long)refs[i].id);
	free(refs);
	return out;
}

static void test_jobfile(void)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{"python a.py\npython b.py\n", "1:python a.py|2:python b.py"},
		{"\n\n  \t\n# comment\n  # indented comment\necho x", "6:echo x"},
		{"echo 'a  b'   \r\n", "1:echo 'a  b'"},                 /* CRLF, trailing blanks */
		{"  lead\ttab\n", "1:lead\ttab"},
		{"echo '#not a comment'\n", "1:echo '#not a comment'"},
		{"", ""},
		{"# only comments\n\n", ""},
		{"no newline at the end", "1:no newline at the end"},
		{"a\n\nb\n\n\nc\n", "1:a|3:b|6:c"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		CHECK_STR(lines_of(cases[i].text, strlen(cases[i].text)), cases[i].want);
	CHECK_STR(lines_of("ok\nbad\0line\n", 12), "error: line 2 holds a NUL byte (is this a text file?)");
}

static void test_ids(void)
{
	static const struct {
		const char *s, *want;
	} cases[] = {
		{"3", "3"},
		{"3,5,7", "3 5 7"},
		{"5,3,5", "5 3"},                                         /* repeats once */
		{"5,slurm:5,5", "5 slurm:5"},                             /* two kinds of id */
		{"18446744073709551615", "18446744073709551615"},
		{"", "error: an empty list of job ids"},
		{"3,", "error: '3,' is not a list of job ids such as 3,5,7 or slurm:42"},
		{",3", "error: ',3' is not a list of job ids such as 3,5,7 or slurm:42"},
		{"3,,5", "error: '3,,5' is not a list of job ids such as 3,5,7 or slurm:42"},
		{"0", "error: '0' is not a job id (a number from `gpuctl jobs`, or slurm:N for Slurm's job N)"},
		{"-1", "error: '-1' is not a job id (a number from `gpuctl jobs`, or slurm:N for Slurm's job N)"},
		{"3 5", "error: '3 5' is not a job id (a number from `gpuctl jobs`, or slurm:N for Slurm's job N)"},
		{"3-7", "error: '3-7' is not a job id (a number from `gpuctl jobs`, or slurm:N for Slurm's job N)"},
		{"x", "error: 'x' is not a job id (a number from `gpuctl jobs`, or slurm:N for Slurm's job N)"},
		{"18446744073709551616", "error: '18446744073709551616' is not a job id (a number from `gpuctl jobs`, or slurm:N for Slurm's job N)"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		CHECK_STR(ids_of(cases[i].s), cases[i].want);
	uint64_t v;
	CHECK(job_label_id("#17 train", &v) && v == 17);
	CHECK(job_label_id("#17", &v) && v == 17);
	CHECK(!job_label_id("#17train", &v));
	CHECK(!job_label_id("17", &v));
	CHECK(!job_label_id("# 17", &v));
	CHECK(!job_label_id(NULL, &v));
}

static void test_spec(void)
{
	char *argv[] = {"python", "train.py", "--lr", "", "a b\nc", NULL};
	char *env[] = {"PATH=/usr/bin", "EMPTY=", "NOEQUALS", "X=y=z", NULL};
	struct strbuf sb = {0};
	spec_build(&sb, argv, env);
	char **a, **e, why[128];
	CHECK(spec_parse(sb.buf, sb.len, &a, &e, why, sizeof why));
	CHECK_STR(a[0], "python");
	CHECK_STR(a[3], "");                                      /* an empty argument survives */
	CHECK_STR(a[4], "a b\nc");
	CHECK(a[5] == NULL);
	CHECK_STR(e[0], "PATH=/usr/bin");
	CHECK_STR(e[1], "EMPTY=");
	CHECK_STR(e[2], "X=y=z");                                 /* NOEQUALS is no variable */
	CHECK(e[3] == NULL);
	free(a);
	free(e);
	CHECK(!spec_parse(sb.buf, sb.len - 1, &a, &e, why, sizeof why)); /* cut short */
	CHECK_STR(why, "truncated (no NUL at the end)");
	CHECK(!spec_parse("garbage", 8, &a, &e, why, sizeof why));
	static const char many[] = "gpuctl-spec-1\0" "9\0only\0two\0";
	CHECK(!spec_parse((char *)many, sizeof many - 1, &a, &e, why, sizeof why));
	static const char zero[] = "gpuctl-spec-1\0" "0\0";
	CHECK(!spec_parse((char *)zero, sizeof zero - 1, &a, &e, why, sizeof why));
	sb_free(&sb);
}

static void test_record(void)
{
	struct job j = {.id = 42, .uid = 1000, .state = JOB_FAILED, .exit_code = 3, .max_util = -1,
			.prefer = 1, .count = 2, .attempt = 2, .retries = 3, .umask = 022, .pid = 4242,
			.pid_start = 123456789ULL, .submitted = 1700000000123456789ULL, .ngpus = 2,
			.gpus = {3, 5}};
	const char *hostile = "x\nstate done\r\x1b[2J %41 ";
	snprintf(j.boot, sizeof j.boot, "1cd3455e-f94c-4217-95a7-f6f0802e72cb");
	j.name = xstrdup(hostile);
	j.command = xstrdup("python train.py --name 'a b'");
	j.cwd = xstrdup("/home/a b");
	j.log = xstrdup("/tmp/log");
	j.reason = xstrdup(hostile);
	uint64_t after[17];
	for (size_t i = 0; i < 17; i++)
		after[i] = 100 + i;                                   /* over one line's 15 words */
	j.after = xmalloc(sizeof after);
	memcpy(j.after, after, sizeof after);
	j.nafter = 17;
	j.uuids = xcalloc(2, sizeof *j.uuids);
	snprintf(j.uuids[0], sizeof *j.uuids, "GPU-aaa");
	snprintf(j.uuids[1], sizeof *j.uuids, "GPU-bbb");
	struct strbuf sb = {0};
	job_encode(&j, &sb);
	struct job k;
	char why[160];
	CHECK(job_decode(&k, sb.buf, sb.len, why, sizeof why));
	CHECK(k.id == 42 && k.uid == 1000 && k.state == JOB_FAILED && k.exit_code == 3 && !k.signal);
	CHECK_STR(k.name, hostile);
	CHECK_STR(k.reason, hostile);
	CHECK_STR(k.cwd, "/home/a b");
	CHECK(k.nafter == 17 && k.after[16] == 116);
	CHECK(k.ngpus == 2 && k.gpus[1] == 5);
	CHECK_STR(k.uuids[1], "GPU-bbb");
	CHECK(k.max_util == -1 && k.prefer == 1 && k.umask == 022 && k.pid == 4242 &&
	      k.pid_start == 123456789ULL && k.submitted == 1700000000123456789ULL);
	CHECK(!k.started && !k.ended && k.retries == 3 && k.attempt == 2);
	job_free(&k);
	/* Refused: another verb, a bad state, a missing command. */
	static const char *bad[] = {
		"lease\nid 1\nboot b\ncommand c",
		"job\nid 1\nboot b\ncommand c\nstate sleeping",
		"job\nid 1\nboot b",
		"job\nid 1\nboot b\ncommand c\nexit 300",
		"job\nid 1\nboot b\ncommand c\ngpus 1\nuuids GPU-a GPU-b",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(!job_decode(&k, bad[i], strlen(bad[i]), why, sizeof why));
	/* A newer gpuctl's key is skipped. */
	static const char newer[] = "job\nid 1\nboot b\ncommand c\nfuture 1 2 3";
	CHECK(job_decode(&k, newer, strlen(newer), why, sizeof why) && k.id == 1);
	job_free(&k);
	job_free(&j);
	sb_free(&sb);
	CHECK_STR(job_state_name(JOB_LOST), "lost");
	CHECK(job_final(JOB_CANCELLED) && !job_final(JOB_RUNNING));
}

/* A directory of records: loaded by id whatever the directory's order, names that are not a
 * record's own ("007.job", "x.job") left out; found by id. */
static void test_dir(void)
{
	char dir[] = "/tmp/gpuctl-jobs-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	static const uint64_t ids[] = {7, 3, 12, 1, 9, 5, 2, 40, 11};
	struct gpu_error err = {0};
	for (size_t i = 0; i < ARRAY_SIZE(ids); i++) {
		struct job j = {.id = ids[i], .uid = geteuid(), .exit_code = -1, .max_util = -1,
				.prefer = -1, .command = (char *)"true"};
		snprintf(j.boot, sizeof j.boot, "b");
		CHECK(job_write(fd, &j, &err));
	}
	CHECK(symlinkat("7.job", fd, "007.job") == 0 && symlinkat("7.job", fd, "x.job") == 0);
	struct job *jobs;
	size_t n = job_load_all(fd, &jobs, JOB_LOAD_FILES);
	bool by_id = n == ARRAY_SIZE(ids);
	for (size_t i = 1; by_id && i < n; i++)
		by_id = jobs[i - 1].id < jobs[i].id;
	CHECK(by_id && jobs[0].id == 1 && jobs[n - 1].id == 40);
	struct jobctx x = {.dirfd = -1, .jobs = jobs, .n = n};
	CHECK(jobctx_find(&x, 9) && jobctx_find(&x, 9)->id == 9 && jobctx_find(&x, 1) == &jobs[0]);
	CHECK(!jobctx_find(&x, 4) && !jobctx_find(&x, 41) && !jobctx_find(&x, 0));
	jobs_free(jobs, n);
	for (size_t i = 0; i < ARRAY_SIZE(ids); i++) {
		char name[32];
		snprintf(name, sizeof name, "%llu.job", (unsigned long long)ids[i]);
		unlinkat(fd, name, 0);
	}
	unlinkat(fd, "007.job", 0);
	unlinkat(fd, "x.job", 0);
	close(fd);
	CHECK(rmdir(dir) == 0);
}

/* The copy's header as cache.c writes it for the directory as it is now. */
static char *header_now(int fd)
{
	struct stat ds;
	if (fstat(fd, &ds) != 0)
		return xstrdup("?");
	return xasprintf("gpuctl-records 1 %llu %llu %lld %ld %s\n", (unsigned long long)ds.st_dev,
			 (unsigned long long)ds.st_ino, (long long)ds.st_ctim.tv_sec, ds.st_ctim.tv_nsec,
			 job_boot_id());
}

/* A copy is there and made from the directory as it is now. */
static bool cache_current(int fd)
{
	char got[256] = "", *want = header_now(fd);
	int r = openat(fd, ".cache/records", O_RDONLY | O_CLOEXEC);
	ssize_t n = r >= 0 ? read(r, got, sizeof got - 1) : -1;
	if (r >= 0)
		close(r);
	bool ok = n > 0 && !strncmp(got, want, strlen(want));
	free(want);
	return ok;
}

static void put_copy(int fd, const char *text)
{
	int r = openat(fd, ".cache/records", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(r >= 0 && write(r, text, strlen(text)) == (ssize_t)strlen(text));
	if (r >= 0)
		close(r);
}

/* Cached loads until the copy is current: each once the file system's clock is past the
 * directory's last change (a copy made in that tick is racy and not kept), which a file
 * created in another directory of the same file system tells. Waits for that tick (the event
 * waited for; bounded at 10 s), three loads at most: the first may make the copy's directory,
 * itself a change. */
static void cache_settle(int fd, const char *dir)
{
	char *tick = xasprintf("%s.tick", dir);
	for (int round = 0; round < 3 && !cache_current(fd); round++) {
		struct stat ds, ts;
		for (int i = 0; i < 10000; i++) {
			unlink(tick);
			int t = open(tick, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
			bool past = t >= 0 && fstat(t, &ts) == 0 && fstat(fd, &ds) == 0 &&
				    (ts.st_ctim.tv_sec > ds.st_ctim.tv_sec ||
				     (ts.st_ctim.tv_sec == ds.st_ctim.tv_sec &&
				      ts.st_ctim.tv_nsec > ds.st_ctim.tv_nsec));
			if (t >= 0)
				close(t);
			if (past)
				break;
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
		}
		struct job *jobs;
		size_t n = job_load_all(fd, &jobs, JOB_LOAD_MAKE);
		jobs_free(jobs, n);
	}
	CHECK(cache_current(fd));
	unlink(tick);
	free(tick);
}

static char *command_of(int fd, uint64_t id, enum job_load how)
{
	struct job *jobs;
	char *c = NULL;
	size_t n = job_load_all(fd, &jobs, how);
	for (size_t i = 0; i < n; i++)
		if (jobs[i].id == id)
			c = xstrdup(jobs[i].command ? jobs[i].command : "");
	jobs_free(jobs, n);
	return c ? c : xstrdup("(none)");
}

static void put(int fd, uint64_t id, const char *command)
{
	struct gpu_error err = {0};
	struct job j = {.id = id, .uid = geteuid(), .exit_code = -1, .max_util = -1, .prefer = -1,
			.command = (char *)command};
	snprintf(j.boot, sizeof j.boot, "b");
	CHECK(job_write(fd, &j, &err));
}

/* A record rewritten in place (same inode, the directory unchanged), as gpuctl never does: the
 * one way to tell from outside whether a load read the copy or the file. */
static void edit_in_place(int fd, uint64_t id, const char *command)
{
	struct job j = {.id = id, .uid = geteuid(), .exit_code = -1, .max_util = -1, .prefer = -1,
			.command = (char *)command};
	struct strbuf sb = {0};
	char name[32];
	snprintf(j.boot, sizeof j.boot, "b");
	snprintf(name, sizeof name, "%llu.job", (unsigned long long)id);
	job_encode(&j, &sb);
	int r = openat(fd, name, O_WRONLY | O_TRUNC | O_CLOEXEC);
	CHECK(r >= 0 && write(r, sb.buf, sb.len) == (ssize_t)sb.len);
	if (r >= 0)
		close(r);
	sb_free(&sb);
}

#define CHECK_CMD(fd, id, how, want) do { \
		char *got_ = command_of(fd, id, how); \
		CHECK_STR(got_, want); \
		free(got_); \
	} while (0)

/* The copy of the records: made once the clock is past the last change, used while the
 * directory's change time is the one it names, and only then: not after any record is
 * written (even one given back its old inode) or removed, or anything else in the directory
 * changes; not when it is garbage, truncated, or names another inode for a record (then
 * removed); a command that only uses copies makes none. */
static void test_cache(void)
{
	char dir[] = "/tmp/gpuctl-cache-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (uint64_t id = 1; id <= 30; id++)
		put(fd, id, id == 7 ? "seven" : "other");
	CHECK_CMD(fd, 7, JOB_LOAD_COPY, "seven");
	CHECK(faccessat(fd, ".cache", F_OK, AT_SYMLINK_NOFOLLOW) != 0); /* COPY makes none */
	cache_settle(fd, dir);
	edit_in_place(fd, 7, "edited");
	CHECK_CMD(fd, 7, JOB_LOAD_COPY, "seven");   /* the copy is what is read */
	CHECK_CMD(fd, 7, JOB_LOAD_MAKE, "seven");
	CHECK_CMD(fd, 7, JOB_LOAD_FILES, "edited");
	/* the directory's change time alone: a file made and removed, no record touched */
	CHECK(mkdirat(fd, "x", 0700) == 0 && unlinkat(fd, "x", AT_REMOVEDIR) == 0);
	CHECK_CMD(fd, 7, JOB_LOAD_COPY, "edited");
	/* a record written as gpuctl writes them (renamed over): read again */
	cache_settle(fd, dir);
	put(fd, 7, "rewritten");
	CHECK_CMD(fd, 7, JOB_LOAD_MAKE, "rewritten");
	cache_settle(fd, dir);
	CHECK_CMD(fd, 7, JOB_LOAD_COPY, "rewritten");
	CHECK(unlinkat(fd, "7.job", 0) == 0);
	CHECK_CMD(fd, 7, JOB_LOAD_COPY, "(none)");
	put(fd, 31, "new");
	CHECK_CMD(fd, 31, JOB_LOAD_COPY, "new");
	/* garbage, truncated or hostile copies, with a wrong header and with the right one: the
	 * files are read (8.job edited in place each time, which only they show) */
	static const char *const junk[] = {"", "x", "gpuctl-records 1\n", "gpuctl-records 1 1 2 3 4 b\n",
					   "1 2 4000000000\n", "1 2 18446744073709551615\n", "8 2 3\nab",
					   "8 2 3\nabc", "8 2 3\nabcd", "9 1 1\nx\n8 1 1\nx\n",
					   "8 1 99999999999999999999\n", "8 1 1\n", "8 1 -1\nx\n", " 8 1 1\nx\n"};
	for (size_t k = 0; k < 2 * ARRAY_SIZE(junk); k++) {
		char *h = header_now(fd), *text = xasprintf("%s%s", k % 2 ? h : "", junk[k / 2]);
		put_copy(fd, text);
		free(text);
		free(h);
		char want[32];
		snprintf(want, sizeof want, "eight-%zu", k);
		edit_in_place(fd, 8, want);
		CHECK_CMD(fd, 8, JOB_LOAD_COPY, want);
		CHECK_CMD(fd, 9, JOB_LOAD_COPY, "other");
	}
	/* a copy naming the right directory state but another inode for a record: that record is
	 * read from its file, and the copy removed */
	cache_settle(fd, dir);
	struct stat rs;
	CHECK(fstatat(fd, "9.job", &rs, 0) == 0);
	char *h = header_now(fd), *forged = xasprintf("%s9 %llu 3\nxyz\n", h, (unsigned long long)rs.st_ino + 1);
	put_copy(fd, forged);
	free(forged);
	free(h);
	CHECK_CMD(fd, 9, JOB_LOAD_COPY, "other");
	CHECK(faccessat(fd, ".cache/records", F_OK, AT_SYMLINK_NOFOLLOW) != 0);
	/* a copy behind a link is not read */
	cache_settle(fd, dir);
	edit_in_place(fd, 9, "nine");
	CHECK(renameat(fd, ".cache", fd, ".cache-real") == 0 && symlinkat(".cache-real", fd, ".cache") == 0);
	CHECK_CMD(fd, 9, JOB_LOAD_COPY, "nine");
	unlinkat(fd, ".cache", 0);
	unlinkat(fd, ".cache-real/records", 0);
	unlinkat(fd, ".cache-real", AT_REMOVEDIR);
	/* clean up: every record, the copy, its directory */
	for (uint64_t id = 1; id <= 31; id++) {
		char name[32];
		snprintf(name, sizeof name, "%llu.job", (unsigned long long)id);
		unlinkat(fd, name, 0);
	}
	unlinkat(fd, ".cache/records", 0);
	unlinkat(fd, ".cache", AT_REMOVEDIR);
	close(fd);
	CHECK(rmdir(dir) == 0);
}

void test_jobs(void)
{
	test_jobfile();
	test_ids();
	test_spec();
	test_record();
	test_dir();
	test_cache();
}
