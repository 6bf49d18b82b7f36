/* test_slurm.c: Slurm on a node (src/machine/slurm.c): job attribution from the /proc/PID/cgroup
 * fixtures of tests/fake/cgroup/ (both cgroup layouts, and the names a user could fake), the
 * allocation's variables, Slurm's GPU ids mapped onto a machine (with and without a device
 * cgroup), scontrol's job text on hostlists, and Slurm's tools run through exec. */
#include "machine/gpu.h"
#include "machine/slurm.h"
#include "base/exec.h"
#include "tap.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

static void cgroup_cases(void)
{
	char *cases = read_file("tests/fake/cgroup/cases", NULL);
	CHECK(cases != NULL);
	int n = 0;
	for (char *line = cases, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (line[0] == '#' || !line[0])
			continue;
		char *tab = strchr(line, '\t');
		if (!tab) {
			CHECK(!"tests/fake/cgroup/cases: FILE<TAB>JOB");
			continue;
		}
		*tab = '\0';
		char path[256], what[320];
		snprintf(path, sizeof path, "tests/fake/cgroup/%s", line);
		char *text = read_file(path, NULL);
		unsigned long want = strtoul(tab + 1, NULL, 10);
		unsigned got = text ? slurm_cgroup_job(text) : 0xFFFFFFFFU;
		snprintf(what, sizeof what, "cgroup %s: job %lu (got %u)", line, want, got);
		tap_check(text && got == want, what, __FILE__, __LINE__);
		free(text);
		n++;
	}
	CHECK(n >= 20);
	free(cases);
}

struct kv {
	const char *const *pairs;    /* name, value, ..., NULL */
};

static const char *kv_lookup(const char *name, void *arg)
{
	const struct kv *kv = arg;
	for (const char *const *p = kv->pairs; *p; p += 2)
		if (!strcmp(p[0], name))
			return p[1];
	return NULL;
}

static void alloc_vars(void)
{
	struct slurm_alloc a;
	const char *const none[] = {"CUDA_VISIBLE_DEVICES", "0", NULL};
	slurm_alloc_read(&a, kv_lookup, &(struct kv){none});
	CHECK(!a.in_job && !a.var);
	const char *const batch[] = {"SLURM_JOB_ID", "12", "SLURM_JOB_GPUS", "2,3", NULL};
	slurm_alloc_read(&a, kv_lookup, &(struct kv){batch});
	CHECK(a.in_job && !strcmp(a.var, "SLURM_JOB_GPUS") && !strcmp(a.gpus, "2,3"));
	const char *const step[] = {"SLURM_JOB_ID", "12", "SLURM_JOB_GPUS", "2,3",
				    "SLURM_STEP_ID", "0", "SLURM_STEP_GPUS", "3", NULL};
	slurm_alloc_read(&a, kv_lookup, &(struct kv){step});
	CHECK(a.in_job && !strcmp(a.var, "SLURM_STEP_GPUS") && !strcmp(a.gpus, "3") &&
	      !strcmp(a.step_id, "0"));
	const char *const nogpu[] = {"SLURM_JOB_ID", "12", "SLURM_JOB_GPUS", "", NULL};
	slurm_alloc_read(&a, kv_lookup, &(struct kv){nogpu});
	CHECK(a.in_job && !a.var);
	/* Variables of a finished job left in a shell mean nothing without SLURM_JOB_ID. */
	const char *const stray[] = {"SLURM_JOB_GPUS", "1", NULL};
	slurm_alloc_read(&a, kv_lookup, &(struct kv){stray});
	CHECK(!a.in_job && !a.var);
}

static struct gpu_set *machine(size_t n)
{
	struct gpu_set *s = xcalloc(1, sizeof *s);
	s->ngpus = n;
	s->gpus = xcalloc(n, sizeof *s->gpus);
	for (unsigned i = 0; i < n; i++) {
		s->gpus[i].index = i;
		snprintf(s->gpus[i].uuid, sizeof s->gpus[i].uuid,
			 "GPU-%08x-0000-0000-0000-000000000000", 0xabc0 + i);
	}
	return s;
}

static void gpu_ids(void)
{
	struct gpu_set *s = machine(8);
	uint64_t m;
	char err[256];
	CHECK(slurm_gpu_mask(s, "0,1", &m, err, sizeof err) && m == 0x3);
	CHECK(slurm_gpu_mask(s, "2-4,7", &m, err, sizeof err) && m == 0x9c);
	CHECK(slurm_gpu_mask(s, "GPU-0000abc5", &m, err, sizeof err) && m == 0x20);
	CHECK(!slurm_gpu_mask(s, "9", &m, err, sizeof err) && strstr(err, "index 9"));
	CHECK(!slurm_gpu_mask(s, "3-1", &m, err, sizeof err));
	CHECK(!slurm_gpu_mask(s, "x", &m, err, sizeof err));
	CHECK(slurm_gpu_mask(s, "0-7", &m, err, sizeof err) && m == 0xff);
	free(s->gpus);
	free(s);
	/* A device cgroup: NVML shows the job's two GPUs as 0 and 1; Slurm still says 5,6. */
	s = machine(2);
	CHECK(slurm_gpu_mask(s, "5,6", &m, err, sizeof err) && m == 0x3);
	CHECK(!slurm_gpu_mask(s, "5", &m, err, sizeof err));
	free(s->gpus);
	free(s);
}

static void scontrol_text(void)
{
	static const char job[] =
		"JobId=7 JobName=wrap\n   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
		"   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*\n"
		"   ReqNodeList=(null) ExcNodeList=(null)\n   NodeList=vm\n"
		"   JOB_GRES=gpu:2\n     Nodes=vm CPU_IDs=0 Mem=0 GRES=gpu:2(IDX:0-1)\n"
		"   MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0\n";
	char ids[64];
	CHECK(slurm_parse_job_gpus(job, "vm", ids, sizeof ids) && !strcmp(ids, "0-1"));
	CHECK(!slurm_parse_job_gpus(job, "node1", ids, sizeof ids));
	static const char multi[] =
		"JobId=9\n     Nodes=gpu[01-02,05] CPU_IDs=0-3 Mem=0 GRES=gpu:a100:1(IDX:3)\n"
		"     Nodes=gpu07 CPU_IDs=0 Mem=0 GRES=mps:100(IDX:0),gpu:2(IDX:1,4)\n";
	CHECK(slurm_parse_job_gpus(multi, "gpu02", ids, sizeof ids) && !strcmp(ids, "3"));
	CHECK(slurm_parse_job_gpus(multi, "gpu05", ids, sizeof ids) && !strcmp(ids, "3"));
	CHECK(!slurm_parse_job_gpus(multi, "gpu03", ids, sizeof ids));
	CHECK(!slurm_parse_job_gpus(multi, "gpu2", ids, sizeof ids));
	CHECK(slurm_parse_job_gpus(multi, "gpu07", ids, sizeof ids) && !strcmp(ids, "1,4"));
	CHECK(!slurm_parse_job_gpus("JobId=3\n     Nodes=vm CPU_IDs=0 Mem=0\n", "vm", ids, sizeof ids));
}

static void exec_tools(void)
{
	struct strbuf out = {0}, err = {0};
	const char *const echo[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
	CHECK(exec_run(echo, 10, NULL, &out, &err) == 3 && !strcmp(out.buf, "out\n") &&
	      !strcmp(err.buf, "err\n"));
	sb_reset(&out);
	sb_reset(&err);
	const char *const missing[] = {"gpuctl-no-such-tool", NULL};
	CHECK(exec_run(missing, 10, NULL, &out, &err) == -1 && strstr(err.buf, "cannot run"));
	sb_reset(&err);
	const char *const slow[] = {"sleep", "10", NULL};
	double t0 = now_mono();
	CHECK(exec_run(slow, 0.2, SLURM_LATE, &out, &err) == -1 && now_mono() - t0 < 5);
	/* The caller's hint is all exec says of Slurm: the words stay the ones gpuctl always gave. */
	CHECK(!strcmp(err.buf, "sleep did not answer within 0 s (stopped; is slurmctld up and "
			       "answering? `scontrol ping` says)"));
	sb_reset(&err);
	CHECK(exec_run(slow, 0.2, NULL, &out, &err) == -1 &&
	      !strcmp(err.buf, "sleep did not answer within 0 s (stopped)"));
	sb_free(&out);
	sb_free(&err);
}

void test_slurm(void)
{
	cgroup_cases();
	alloc_vars();
	gpu_ids();
	scontrol_text();
	exec_tools();
}
