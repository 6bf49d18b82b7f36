/* container.c: a GPU process's container in the views (container.h): one home for how each
 * output names it, so the table, top, JSON, the exporter, doctor and leases agree. */
#include "view/container.h"
#include "base/json.h"
#include "machine/gpu.h"
#include "machine/runtime.h"
#include "base/escape.h"

#include <stdio.h>
#include <sys/stat.h>

void ctr_json(struct json *j, const struct gpu_proc *p)
{
	const struct ctr_info *c = p->ctr;
	json_str(j, "container_id", c ? c->ref.id : NULL);
	json_str(j, "container", c && c->name[0] ? c->name : NULL);
	json_str(j, "runtime", c ? ctr_runtime_name(c->ref.runtime) : NULL);
	json_str(j, "pod", c && c->pod[0] ? c->pod : NULL);
	json_str(j, "pod_uid", c && c->ref.pod_uid[0] ? c->ref.pod_uid : NULL);
	json_str(j, "namespace", c && c->ns[0] ? c->ns : NULL);
}

const char *ctr_label(const struct gpu_proc *p, char *buf, size_t len)
{
	const struct ctr_info *c = p->ctr;
	if (!c)
		return NULL;
	char id[13];
	ctr_short_id(c->ref.id, id);
	const char *name = c->name[0] ? c->name : id;
	if (c->pod[0])
		snprintf(buf, len, "%s%s%s/%s", c->ns, c->ns[0] ? "/" : "", c->pod, name);
	else
		snprintf(buf, len, "%s", name);
	return buf;
}

const char *ctr_pidns_note(const struct gpu_set *set, char *buf, size_t len)
{
	/* Every listed process missing: on a host one that just exited is missing alone. Inside a
	 * container without the host's PID namespace NVML still names host pids, and none is here
	 * (the rule depends on nothing but the list and /proc, so every machine says the same). */
	if (!set->procs_listed || set->procs_unmapped < set->procs_listed)
		return NULL;
	/* /proc mounted with hidepid hides other users' processes, pid 1 among them: that is not
	 * another PID namespace (whose /proc has its own pid 1). */
	struct stat st;
	if (stat("/proc/1", &st) != 0)
		return NULL;
	snprintf(buf, len, "none of the %zu GPU processes is in this /proc: gpuctl runs in a "
		 "container without the host's PID namespace (or they all just exited), so their "
		 "owners, commands and containers cannot be known here; run it on the host, or with "
		 "`docker run --pid=host`", set->procs_listed);
	return buf;
}

void ctr_holder_line(struct strbuf *sb, const struct ctr_info *c, bool bound)
{
	char id[13];
	ctr_short_id(c->ref.id, id);
	sb_addf(sb, "held by %s container ", ctr_runtime_name(c->ref.runtime));
	esc_printable_n(sb, c->name[0] ? c->name : id, 64);
	sb_addf(sb, " (%s)%s", id, bound ? " until it stops" : "");
}
