/* bind.c: --bind-cpus's plan and its application (bind.h). The local CPUs come from the daemon
 * (its NVML view: nvmlDeviceGetCpuAffinityWithinScope), so a process that starts jobs loads no
 * driver library; the caller's allowed CPUs from sched_getaffinity, the kernel's word. */
#include "lease/bind.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

static void gpu_list(const struct grant *g, struct strbuf *sb)
{
	for (size_t i = 0; i < g->n; i++)
		sb_addf(sb, "%s%u", i ? "," : "", g->set->gpus[g->pos[i]].index);
}

enum bind_plan grant_bind_plan(const struct grant *g, struct cpuset *set, char *msg, size_t len)
{
	struct cpuset local, allowed;
	struct strbuf a = {0}, b = {0}, gpus = {0};
	enum bind_plan plan;
	gpu_list(g, &gpus);
	memset(&allowed, 0, sizeof allowed);
	if (!g->cpus[0] || !cpuset_parse(g->cpus, &local)) {
		snprintf(msg, len, "--bind-cpus: the driver does not say which CPUs are local to GPU %s; "
			 "the job runs unbound", gpus.buf);
		sb_free(&gpus);
		return BIND_UNKNOWN;
	}
	if (sched_getaffinity(0, sizeof allowed.w, (cpu_set_t *)(void *)allowed.w) != 0) {
		snprintf(msg, len, "--bind-cpus: cannot read this process's CPU affinity (%s); the job "
			 "runs unbound", strerror(errno));
		sb_free(&gpus);
		return BIND_FAILED;
	}
	*set = local;
	cpuset_and(set, &allowed);
	cpuset_format(&local, &a);
	cpuset_format(&allowed, &b);
	if (cpuset_empty(set)) {
		snprintf(msg, len, "--bind-cpus: none of GPU %s's local CPUs (%s) is among those you may "
			 "use (%s); the job runs unbound", gpus.buf, a.buf, b.buf);
		plan = BIND_DISJOINT;
	} else if (cpuset_equal(set, &allowed)) {
		snprintf(msg, len, "--bind-cpus: every CPU you may use (%s) is local to GPU %s (%s): "
			 "nothing to narrow", b.buf, gpus.buf, a.buf);
		plan = BIND_ALL;
	} else {
		struct strbuf c = {0};
		cpuset_format(set, &c);
		snprintf(msg, len, "bound to CPUs %s (local to GPU %s%s%s%s)", c.buf, gpus.buf,
			 g->numa[0] ? "; NUMA node " : "", g->numa, cpuset_equal(set, &local) ? ""
			 : "; those of its CPUs you may use");
		sb_free(&c);
		plan = BIND_NARROW;
	}
	sb_free(&a);
	sb_free(&b);
	sb_free(&gpus);
	return plan;
}

int grant_bind_apply(const struct cpuset *set)
{
	return sched_setaffinity(0, sizeof set->w, (const cpu_set_t *)(const void *)set->w) ? errno : 0;
}
