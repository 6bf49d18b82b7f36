/* table.h: the `gpuctl status` table, laid out for the terminal it is drawn on (table.c). */
#ifndef GPUCTL_TABLE_H
#define GPUCTL_TABLE_H

#include "machine/gpu.h"
#include "lease/view.h"

struct table_opts {
	bool color, no_procs;
	bool slurm;                     /* a Slurm node: each process's job beside its user */
	int width;                      /* columns; 0: no limit (piped: nothing is cut) */
	int rows;                       /* lines a frame may take (a loop on a terminal); 0: any */
	const struct leaseview *leases; /* each GPU's holder; NULL: none shown */
	const char *leases_missing;     /* why the leases could not be had: a line says so */
	struct table_cache *cache;      /* a loop's rows of the last frame (table_cache_new); NULL */
};

/* A loop's process rows, per GPU, kept from frame to frame: a GPU whose processes the daemon's
 * delta kept (gpu.h: procs_from) has its rows copied, not formatted again, when the columns are
 * the same (issue 22: a watch loop's CPU per refresh is mostly its table). Rows with a container
 * are always made again (a name is the caller's, asked each refresh). */
struct table_cache *table_cache_new(void);
void table_cache_free(struct table_cache *c);

/* Whether the table has a JOB column: on a Slurm node whose GPUs run a job's process (a login
 * node, or one whose GPUs serve no job now, keeps the plain table). */
bool table_job_column(const struct gpu_set *set);
/* The table, header first. Cuts are marked with an ellipsis; names and command lines escaped. */
void table_render(struct strbuf *sb, const struct table_opts *o, const struct gpu_set *set);
/* For a frame redrawn in place: each line cut to width columns and cleared to its end, the rest
 * of the screen cleared (sb is replaced). */
void table_fit_frame(struct strbuf *sb, int width);

#endif
