/* metrics-text.h: the pieces of the Prometheus text format shared by metrics.c's families
 * (metrics-text.c): escaped label values, HELP and TYPE, the GPU's, MIG device's and process's
 * labels. Inside view/ only; the exposition itself is metrics.h. */
#ifndef GPUCTL_METRICS_TEXT_H
#define GPUCTL_METRICS_TEXT_H

#include "view/metrics.h"

#define MAX_COMMAND_LABEL 64  /* bytes of a process's command label, cut between characters */

/* A label value: valid UTF-8 (a byte that is not becomes U+FFFD), \ " and newline escaped. */
void metrics_label(struct strbuf *sb, const char *v);
/* A family's # HELP and # TYPE lines. */
void metrics_family(struct strbuf *sb, const char *name, const char *type, const char *help);
/* name{gpu=,uuid=,name=,hostname=[,hpc_job=][,extra]} and a space; gpu_jobs: the GPU's Slurm
 * jobs as hpc_job. metrics_gpu_sample is the same with gpu_jobs. */
void metrics_sample_head(struct strbuf *sb, const char *metric, const struct gpu *g,
			 const struct metrics_opts *o, const char *extra, bool gpu_jobs);
void metrics_gpu_sample(struct strbuf *sb, const char *metric, const struct gpu *g,
			const struct metrics_opts *o, const char *extra);
/* A MIG device's sample with its labels and value; nothing when its memory is not known. */
void metrics_mig_sample(struct strbuf *sb, const char *metric, const struct gpu *g,
			const struct mig_dev *m, const struct metrics_opts *o, uint64_t value);
/* The program's base name of a command line, at most MAX_COMMAND_LABEL bytes, in buf. */
const char *metrics_base_name(const char *cmd, char buf[MAX_COMMAND_LABEL + 1]);
/* user="NAME" (user="" when not known); the container, pod and namespace labels, if any. */
void metrics_owner_label(struct strbuf *sb, const struct gpu_proc *p);
void metrics_ctr_labels(struct strbuf *sb, const struct gpu_proc *p);

#endif
