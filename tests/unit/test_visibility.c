/* test_visibility.c: the CUDA visibility model against tests/unit/visibility.cases. */
#include "tap.h"
#include "base/util.h"
#include "cuda/visibility.h"

#include <stdlib.h>
#include <string.h>

#define H100(i, bus, uuid) {i, uuid, "NVIDIA H100 80GB HBM3", "", 0, bus, 0, 0, 90, 16896, false}
static const struct vis_gpu six[] = {
	H100(0, 0x18, "GPU-00000000-0000-0000-0000-000000000000"),
	H100(1, 0x2a, "GPU-11111111-0000-0000-0000-000000000000"),
	H100(2, 0x3a, "GPU-22222222-0000-0000-0000-000000000000"),
	H100(3, 0x5d, "GPU-33333333-0000-0000-0000-000000000000"),
	H100(4, 0x9a, "GPU-44444444-0000-0000-0000-000000000000"),
	H100(5, 0xab, "GPU-55555555-0000-0000-0000-000000000000"),
};
static const struct vis_gpu pt8[] = {
	H100(0, 0x10, "GPU-9942190a-aa31-4ff1-4aa9-c388d80f85f1"),
	H100(1, 0x11, "GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293"),
	H100(2, 0x12, "GPU-e429a63e-c61c-4795-b757-5132caeb8e70"),
	H100(3, 0x13, "GPU-eee1dfbc-0a0f-6ad8-5ff6-dc942a8b9d98"),
	H100(4, 0x14, "GPU-bbcd6503-5150-4e92-c266-97cc4390d04e"),
	H100(5, 0x15, "GPU-472ea263-58d7-410d-cc82-f7fdece5bd28"),
	H100(6, 0x16, "GPU-e56257c4-947f-6a5b-7ec9-0f45567ccf4e"),
	H100(7, 0x17, "GPU-1c20e77d-1c1a-d9ed-fe37-18b8466a78ad"),
};
static const struct vis_gpu mixed[] = {
	{0, "GPU-a1000000-0000-0000-0000-000000000000", "NVIDIA T400 4GB", "", 0, 0x01, 0, 0, 75, 384, false},
	{1, "GPU-a2000000-0000-0000-0000-000000000000", "NVIDIA GeForce RTX 3090", "", 0, 0x21, 0, 0, 86, 10496, false},
	{2, "GPU-a3000000-0000-0000-0000-000000000000", "NVIDIA GeForce RTX 4090", "", 0, 0x41, 0, 0, 89, 16384, false},
};
static const struct vis_gpu a100[] = {
	{0, "GPU-c0000000-0000-0000-0000-000000000000", "NVIDIA A100-SXM4-40GB", "", 0, 0x07, 0, 0, 80, 6912, true},
	{1, "GPU-d0000000-0000-0000-0000-000000000000", "NVIDIA A100-SXM4-40GB", "", 0, 0x0f, 0, 0, 80, 6912, false},
};
static const struct vis_mig migs[] = {
	{0, 0, 1, 0, "MIG-11111111-0000-0000-0000-000000000001"},
	{0, 1, 2, 0, "MIG-22222222-0000-0000-0000-000000000002"},
	{0, 2, 7, 0, "MIG-33333333-0000-0000-0000-000000000003"},
};

static const struct { const char *name; struct vis_machine m; } machines[] = {
	{"six", {six, 6, NULL, 0, 550}},
	{"two", {six, 2, NULL, 0, 550}},
	{"pt8", {pt8, 8, NULL, 0, 525}},
	{"mixed", {mixed, 3, NULL, 0, 535}},
	{"mig", {a100, 2, migs, 3, 550}},
	{"mig570", {a100, 2, migs, 3, 570}},
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_case(const char *line, int lineno)
{
	char *copy = xstrdup(line), *f[5];
	int n = 0;
	for (char *p = copy; n < 5; n++) {
		f[n] = p;
		p = strchr(p, '\t');
		if (!p) {
			n++;
			break;
		}
		*p++ = '\0';
	}
	if (n != 5) {
		char what[64];
		snprintf(what, sizeof what, "visibility.cases:%d: 5 tab-separated fields", lineno);
		tap_check(false, what, __FILE__, __LINE__);
		free(copy);
		return;
	}
	const struct vis_machine *m = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(machines); i++)
		if (!strcmp(machines[i].name, f[0]))
			m = &machines[i].m;
	char *cvd = NULL;
	if (strcmp(f[1], "unset")) {
		cvd = f[1] + 1;
		cvd[strlen(cvd) - 1] = '\0';
	}
	struct vis_result *r = vis_resolve(m, cvd, strcmp(f[2], "-") ? f[2] : NULL);
	struct strbuf got = {0};
	for (size_t i = 0; i < r->ndevs; i++) {
		const struct vis_dev *d = &r->devs[i];
		sb_addf(&got, "%s%u", i ? "," : "", m->gpus[d->gpu].nvml_index);
		if (d->mig >= 0)
			sb_addf(&got, ":%u", m->migs[d->mig].slot);
	}
	if (!r->ndevs)
		sb_adds(&got, "-");
	const char **codes = xcalloc(r->nwarns + 1, sizeof *codes);
	for (size_t i = 0; i < r->nwarns; i++)
		codes[i] = r->warns[i].code;
	qsort(codes, r->nwarns, sizeof *codes, cmp_str);
	sb_addc(&got, '\t');
	for (size_t i = 0; i < r->nwarns; i++)
		sb_addf(&got, "%s%s", i ? " " : "", codes[i]);
	if (!r->nwarns)
		sb_adds(&got, "-");
	char *want = xasprintf("%s\t%s", f[3], f[4]);
	bool ok = !strcmp(got.buf, want);
	char what[256];
	snprintf(what, sizeof what, "visibility.cases:%d %s CUDA_VISIBLE_DEVICES=%s order=%s", lineno,
		 f[0], cvd ? f[1] : "unset", f[2]);
	tap_check(ok, what, __FILE__, __LINE__);
	if (!ok) {
		printf("#   want: %s\n#   got:  %s\n", want, got.buf);
		for (size_t i = 0; i < r->nwarns; i++)
			printf("#   %s: %s\n", r->warns[i].code, r->warns[i].message);
	}
	free(want);
	free(codes);
	sb_free(&got);
	vis_result_free(r);
	free(copy);
}

void test_visibility(void)
{
	const char *path = getenv("VISIBILITY_CASES");
	char *text = read_file(path ? path : "tests/unit/visibility.cases", NULL);
	CHECK(text != NULL);
	if (!text)
		return;
	int lineno = 0, cases = 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		if (*line && *line != '#') {
			run_case(line, lineno);
			cases++;
		}
	}
	CHECK(cases >= 60);
	free(text);

	/* Unusual but possible: unknown compute capability leaves FASTEST_FIRST unestimated. */
	struct vis_gpu unk[2] = {mixed[0], mixed[2]};
	unk[1].cc = -1;
	struct vis_machine um = {unk, 2, NULL, 0, 0};
	struct vis_result *r = vis_resolve(&um, NULL, NULL);
	CHECK(!r->order_exact && r->devs[0].gpu == 0);
	vis_result_free(r);
	r = vis_resolve(&machines[3].m, "0", NULL);
	CHECK(!r->order_exact && !r->fastest_exact);
	vis_result_free(r);
	r = vis_resolve(&machines[0].m, "3,1", NULL);
	CHECK(r->order_exact && vis_logical(r, 3, -1) == 0 && vis_logical(r, 0, -1) == -1);
	vis_result_free(r);
}
