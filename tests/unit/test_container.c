/* test_container.c: a process's container and pod from its /proc/PID/cgroup (src/machine/
 * container.c): one recorded layout per runtime, cgroup driver and version
 * (tests/fake/cgroup/containers), the near misses a user could make, and the runtime API's
 * answers read with bounds (src/machine/runtime.c). */
#include "machine/container.h"
#include "tap.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void layouts(void)
{
	char *cases = read_file("tests/fake/cgroup/containers", NULL);
	CHECK(cases != NULL);
	int n = 0;
	for (char *line = cases, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (line[0] == '#' || !line[0])
			continue;
		char *f[5] = {line};
		size_t k = 1;
		for (char *t = line; k < 5 && (t = strchr(t, '\t')); k++) {
			*t++ = '\0';
			f[k] = t;
		}
		if (k != 5) {
			CHECK(!"tests/fake/cgroup/containers: FILE RUNTIME ID POD OWNER");
			continue;
		}
		char path[256], what[512];
		snprintf(path, sizeof path, "tests/fake/cgroup/%s", f[0]);
		char *text = read_file(path, NULL);
		struct ctr_ref r;
		bool got = text && ctr_from_cgroup(text, &r);
		bool want = strcmp(f[1], "-") != 0;
		bool ok = text && got == want;
		if (ok && want) {
			ok = !strcmp(ctr_runtime_name(r.runtime), f[1]) && !strcmp(r.id, f[2]) &&
			     !strcmp(r.pod_uid, strcmp(f[3], "-") ? f[3] : "") &&
			     (strcmp(f[4], "-") ? r.rootless && r.owner_uid == (uid_t)atoi(f[4]) : !r.rootless);
		}
		snprintf(what, sizeof what, "cgroup %s: %s %.12s pod %s (got %s %.12s pod %s%s)", f[0],
			 f[1], f[2], f[3], got ? ctr_runtime_name(r.runtime) : "none", got ? r.id : "",
			 got && r.pod_uid[0] ? r.pod_uid : "-", got && r.rootless ? " rootless" : "");
		tap_check(ok, what, __FILE__, __LINE__);
		free(text);
		n++;
	}
	CHECK(n >= 25);
	free(cases);
}

void test_container(void)
{
	layouts();
	char id[13];
	ctr_short_id("4f5e6a7b8c9d0e1f2a3b", id);
	CHECK(!strcmp(id, "4f5e6a7b8c9d"));
	CHECK(ctr_runtime_name(CTR_NONE) == NULL && ctr_runtime_name(99) == NULL);
}
