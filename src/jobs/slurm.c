/* slurm.c: the Slurm job backend's table (backend.h): its two halves, slurm-jobs.c (the user's
 * jobs, watching them) and slurm-submit.c (sbatch), put behind the one interface the commands
 * use. Alone in its file, as the top of the backend, so that neither half needs the other's
 * table and the halves stand in a row: submit -> jobs -> sacct -> spec. */
#include "jobs/backend.h"
#include "jobs/slurm-jobs.h"

const struct job_backend job_backend_slurm = {
	.name = "slurm",
	.kind = JOB_SLURM,
	.open = slurm_jobs_open,
	.close = slurm_jobs_close,
	.list = slurm_jobs_list,
	.find = slurm_jobs_find,
	.log_open = slurm_jobs_log_open,
	.watch = slurm_jobs_watch,
	.watch_fd = slurm_jobs_watch_fd,
	.watching = slurm_jobs_watching,
	.watch_step = slurm_jobs_watch_step,
	.clean = slurm_jobs_clean,
	.submit_check = slurm_submit_check,
	.submit = slurm_submit,
	.submit_end = slurm_submit_end,
	.deadline = slurm_jobs_deadline,
};
