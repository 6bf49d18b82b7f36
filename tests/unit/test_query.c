/* test_query.c: nvidia-smi query fields, header text, units, [N/A], and naming GPUs by -i. */
#include "machine/gpu.h"
#include "view/query.h"
#include "tap.h"
#include "base/util.h"

#include <stdlib.h>

static void valid(struct gpu *g, enum gpu_field f)
{
	g->valid |= 1ULL << f;
}

static struct gpu_set *fake_set(void)
{
	struct gpu_set *s = xcalloc(1, sizeof *s);
	s->ngpus = 3;
	s->gpus = xcalloc(3, sizeof *s->gpus);
	snprintf(s->driver_version, sizeof s->driver_version, "550.54.15");
	s->has_driver_version = true;
	const char *uuids[] = {"GPU-aaaa1111-0000-0000-0000-000000000000",
			       "GPU-aaaa2222-0000-0000-0000-000000000000",
			       "GPU-bbbb0000-0000-0000-0000-000000000000"};
	for (unsigned i = 0; i < 3; i++) {
		struct gpu *g = &s->gpus[i];
		g->index = i;
		g->selected = true;
		snprintf(g->uuid, sizeof g->uuid, "%s", uuids[i]);
		snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3");
		g->pci_bus = 0x18 + i;
		snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:%02X:00.0", g->pci_bus);
	}
	struct gpu *g = &s->gpus[0];
	g->mem_total = 81559ULL << 20;
	valid(g, GF_MEM_TOTAL);
	g->mem_used = (1234ULL << 20) + 1000;
	valid(g, GF_MEM_USED);  /* a partial MiB counts as one, as in nvidia-smi */
	g->util_gpu = 100;
	valid(g, GF_UTIL_GPU);
	g->power_mw = 70316;
	valid(g, GF_POWER);
	g->compute_mode = 3;
	valid(g, GF_COMPUTE_MODE);
	g->temp = 34;
	valid(g, GF_TEMP);
	g->cc_major = 9;
	valid(g, GF_CC);
	g->procs = xcalloc(2, sizeof *g->procs);
	g->nprocs = 2;
	g->procs[0] = (struct gpu_proc){.pid = 10309, .type = PROC_COMPUTE, .mem_valid = true,
					.used_mem = 28234ULL << 20, .name = "./gpu_burn"};
	g->procs[1] = (struct gpu_proc){.pid = 77, .type = PROC_GRAPHICS, .name = "Xorg"};
	return s;
}

static void free_set(struct gpu_set *s)
{
	free(s->gpus[0].procs);
	free(s->gpus);
	free(s);
}

static char *run_query(struct gpu_set *s, enum query_kind k, const char *fields, unsigned flags)
{
	struct gpu_error err;
	struct query *q = query_parse(k, fields, &err);
	if (!q)
		return xstrdup(err.msg);
	struct strbuf sb = {0};
	if (!(flags & QF_NOHEADER))
		query_header(&sb, q);
	query_rows(&sb, q, s, flags, "2026/11/29 12:00:00.000");
	query_free(q);
	return sb.buf;
}

void test_query(void)
{
	struct gpu_set *s = fake_set();
	s->gpus[1].selected = s->gpus[2].selected = false;
	static const struct { enum query_kind k; const char *fields; unsigned flags; const char *want; } c[] = {
		{Q_GPU, "index,uuid,name,memory.total,memory.used,utilization.gpu", 0,
		 "index, uuid, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%]\n"
		 "0, GPU-aaaa1111-0000-0000-0000-000000000000, NVIDIA H100 80GB HBM3, 81559 MiB, 1235 MiB, 100 %\n"},
		{Q_GPU, "memory.total,utilization.gpu,power.draw", QF_NOUNITS,
		 "memory.total [MiB], utilization.gpu [%], power.draw [W]\n81559, 100, 70.32\n"},
		{Q_GPU, "memory.free,utilization.memory,power.limit,fan.speed", QF_NOHEADER,
		 "[N/A], [N/A], [N/A], [N/A]\n"},
		{Q_GPU, "gpu_name,gpu_bus_id,gpu_uuid,compute_mode,temperature.gpu", QF_NOHEADER,
		 "NVIDIA H100 80GB HBM3, 00000000:18:00.0, GPU-aaaa1111-0000-0000-0000-000000000000, "
		 "Exclusive_Process, 34\n"},
		{Q_GPU, "driver_version, count ,timestamp", QF_NOHEADER, "550.54.15, 3, 2026/11/29 12:00:00.000\n"},
		{Q_GPU, "clocks.sm,clocks.gr", 0, "clocks.current.sm [MHz], clocks.current.graphics [MHz]\n[N/A], [N/A]\n"},
		{Q_GPU, "compute_cap,mig.mode.current", QF_NOHEADER, "9.0, [N/A]\n"},
		{Q_APPS, "pid,process_name,used_memory,gpu_uuid", 0,
		 "pid, process_name, used_gpu_memory [MiB], gpu_uuid\n"
		 "10309, ./gpu_burn, 28234 MiB, GPU-aaaa1111-0000-0000-0000-000000000000\n"},
		{Q_APPS, "pid,used_gpu_memory,gpu_bus_id,gpu_name", QF_NOUNITS | QF_NOHEADER,
		 "10309, 28234, 00000000:18:00.0, NVIDIA H100 80GB HBM3\n"},
		{Q_GPU, "index,bogus", 0,
		 "Field \"bogus\" is not a valid field to query."},   /* nvidia-smi's words */
		{Q_APPS, "index", 0,
		 "Field \"index\" is not a valid field to query."},
		{Q_GPU, "index,", 0,
		 "Field \"\" is not a valid field to query."},
	};
	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		char *got = run_query(s, c[i].k, c[i].fields, c[i].flags);
		CHECK_STR(got, c[i].want);
		free(got);
	}
	unsigned f;
	CHECK(query_parse_format("csv", &f) && f == 0);
	CHECK(query_parse_format("csv,noheader,nounits", &f) && f == (QF_NOHEADER | QF_NOUNITS));
	CHECK(!query_parse_format("noheader", &f));
	CHECK(!query_parse_format("csv,xml", &f));
	CHECK(!query_parse_format("", &f));
	struct gpu_error err;
	struct query *with = query_parse(Q_GPU, "index,timestamp", &err);
	struct query *without = query_parse(Q_APPS, "pid,used_memory", &err);
	CHECK(with && query_shows_time(with));
	CHECK(without && !query_shows_time(without));
	query_free(with);
	query_free(without);
	free_set(s);
}

void test_find(void)
{
	struct gpu_set *s = fake_set();
	struct gpu_error err;
	static const struct { const char *id; int want; int code; } c[] = {
		{"0", 0, 0}, {"2", 2, 0}, {"3", -1, EXIT_NO_SUCH_GPU},
		{"GPU-aaaa1111", 0, 0}, {"gpu-BBBB", 2, 0}, {"GPU-aaaa", -1, EXIT_NO_SUCH_GPU},
		{"GPU-cccc", -1, EXIT_NO_SUCH_GPU}, {"00000000:19:00.0", 1, 0}, {"19:00.0", 1, 0},
		{"0000:1a:00.0", 2, 0}, {"0000:1b:00.0", -1, EXIT_NO_SUCH_GPU},
		{"MIG-1234", -1, EXIT_NO_SUCH_GPU}, {"first", -1, EXIT_USAGE}, {"-1", -1, EXIT_USAGE},
	};
	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		struct gpu *g = gpu_find(s, c[i].id, &err);
		CHECK(c[i].want < 0 ? !g && err.code == c[i].code : g == &s->gpus[c[i].want]);
	}
	CHECK(gpu_set_select(s, "2, 0", &err) && s->gpus[0].selected && !s->gpus[1].selected &&
	      s->gpus[2].selected);
	CHECK(!gpu_set_select(s, "0,9", &err) && err.code == EXIT_NO_SUCH_GPU);
	CHECK(!gpu_set_select(s, ",", &err) && err.code == EXIT_USAGE);
	free_set(s);
}
