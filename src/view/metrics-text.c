/* metrics-text.c: the pieces of the Prometheus text format that every family's samples are made
 * of (metrics.c writes the families): a label value made valid UTF-8 and escaped, a family's
 * HELP and TYPE, a GPU's and a MIG device's labels, and a process's command, owner and container
 * labels. */
#include "view/metrics-text.h"
#include "base/escape.h"
#include "machine/runtime.h"

#include <stdio.h>
#include <string.h>

#define REPLACEMENT "\xef\xbf\xbd"    /* U+FFFD, for a byte that is not UTF-8 */

/* A label value: valid UTF-8 (Prometheus refuses the whole scrape otherwise, and a process
 * name may hold any bytes: those that are not UTF-8 become U+FFFD), with backslash, double
 * quote and newline escaped as the text format wants. */
void metrics_label(struct strbuf *sb, const char *v)
{
	const unsigned char *p = (const unsigned char *)(v ? v : "");
	for (size_t len = strlen((const char *)p), n; *p; p += n, len -= n) {
		n = utf8_seq_len(p, len);
		if (!n) {
			sb_adds(sb, REPLACEMENT);
			n = 1;
		} else if (*p == '\\' || *p == '"') {
			sb_addc(sb, '\\');
			sb_addc(sb, (char)*p);
		} else if (*p == '\n') {
			sb_adds(sb, "\\n");
		} else {
			sb_add(sb, (const char *)p, n);
		}
	}
}

void metrics_family(struct strbuf *sb, const char *name, const char *type, const char *help)
{
	sb_addf(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* On a Slurm node, the jobs whose processes use the GPU, as dcgm-exporter's hpc_job label: one
 * job id, or several joined by commas in ascending order (dcgm-exporter repeats the series per
 * job instead, which double-counts in sum()); no label for a GPU no job uses. */
static void hpc_job(struct strbuf *sb, const struct gpu *g)
{
	unsigned last = 0;
	for (;;) {
		unsigned next = 0;
		for (size_t i = 0; i < g->nprocs; i++) {
			unsigned j = g->procs[i].slurm_job;
			if (j > last && (!next || j < next))
				next = j;
		}
		if (!next)
			break;
		sb_addf(sb, last ? ",%u" : ",hpc_job=\"%u", next);
		last = next;
	}
	if (last)
		sb_addc(sb, '"');
}

/* name{gpu="0",uuid="...",name="...",hostname="..."[,hpc_job="..."][,extra]}; gpu_jobs: the
 * GPU's jobs as hpc_job (a process's series name its own job in extra instead). */
void metrics_sample_head(struct strbuf *sb, const char *metric, const struct gpu *g,
			const struct metrics_opts *o, const char *extra, bool gpu_jobs)
{
	sb_addf(sb, "%s{gpu=\"%u\",uuid=\"", metric, g->index);
	metrics_label(sb, g->uuid);
	sb_adds(sb, "\",name=\"");
	metrics_label(sb, g->name);
	sb_adds(sb, "\",hostname=\"");
	metrics_label(sb, o->hostname);
	sb_addc(sb, '"');
	if (o->slurm && gpu_jobs)
		hpc_job(sb, g);
	sb_addf(sb, "%s%s} ", extra ? "," : "", extra ? extra : "");
}

void metrics_gpu_sample(struct strbuf *sb, const char *metric, const struct gpu *g,
		       const struct metrics_opts *o, const char *extra)
{
	metrics_sample_head(sb, metric, g, o, extra, true);
}

void metrics_mig_sample(struct strbuf *sb, const char *metric, const struct gpu *g,
		       const struct mig_dev *m, const struct metrics_opts *o, uint64_t value)
{
	if (!m->mem_valid)
		return;
	struct strbuf x = {0};
	sb_adds(&x, "mig_uuid=\"");
	metrics_label(&x, m->uuid);
	sb_addf(&x, "\",gpu_instance=\"%u\",compute_instance=\"%u\"", m->gi, m->ci);
	metrics_gpu_sample(sb, metric, g, o, x.buf);
	sb_addf(sb, "%llu\n", (unsigned long long)value);
	sb_free(&x);
}

/* The program's base name as a label: at most MAX_COMMAND_LABEL bytes, cut between characters
 * (a name cut inside an "é" would not be UTF-8), bytes that are not UTF-8 already U+FFFD. */
const char *metrics_base_name(const char *cmd, char buf[MAX_COMMAND_LABEL + 1])
{
	if (!cmd)
		return "";
	size_t len = strcspn(cmd, " ");
	const char *start = cmd;
	for (const char *p = cmd; p < cmd + len; p++)
		if (*p == '/')
			start = p + 1;
	const unsigned char *p = (const unsigned char *)start, *end = (const unsigned char *)cmd + len;
	size_t k = 0;
	for (size_t n; p < end; p += n) {
		n = utf8_seq_len(p, (size_t)(end - p));
		const char *add = n ? (const char *)p : REPLACEMENT;
		size_t alen = n ? n : 3;
		if (k + alen > MAX_COMMAND_LABEL)
			break;
		memcpy(buf + k, add, alen);
		k += alen;
		n = n ? n : 1;
	}
	buf[k] = '\0';
	return buf;
}

/* A process's owner as a label: user="NAME", or user="" for one whose owner is not known (gone
 * between NVML's list and /proc, or in another PID namespace: machine.c then knows no uid either).
 * No account can be named "", so no real user's series merges with theirs (as "unknown" did). */
void metrics_owner_label(struct strbuf *sb, const struct gpu_proc *p)
{
	sb_adds(sb, "user=\"");
	metrics_label(sb, p->user);
	sb_addc(sb, '"');
}

/* containers (issue 28): a process's container as dcgm-exporter labels it, container (its name,
 * or the 12-digit id when no runtime named it), pod and namespace (a Kubernetes pod's, when
 * known); none for a process in no container. */
void metrics_ctr_labels(struct strbuf *sb, const struct gpu_proc *p)
{
	const struct ctr_info *c = p->ctr;
	if (!c)
		return;
	char id[13];
	ctr_short_id(c->ref.id, id);
	sb_adds(sb, ",container=\"");
	metrics_label(sb, c->name[0] ? c->name : id);
	sb_addc(sb, '"');
	if (c->pod[0]) {
		sb_adds(sb, ",pod=\"");
		metrics_label(sb, c->pod);
		sb_addc(sb, '"');
	}
	if (c->ns[0]) {
		sb_adds(sb, ",namespace=\"");
		metrics_label(sb, c->ns);
		sb_addc(sb, '"');
	}
}
