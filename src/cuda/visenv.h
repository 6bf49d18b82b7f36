/* visenv.h: the visibility model (visibility.h, pure) applied to this machine and to an
 * environment: the caller's, one given by options (--visible, --unset, --order), or a running
 * process's as it was started (--pid). What map, which, doctor, the lease choice and the test
 * workload share. Reading those options is cmd/visopts.c's. */
#ifndef GPUCTL_VISENV_H
#define GPUCTL_VISENV_H

#include "machine/gpu.h"
#include "machine/slurm.h"
#include "cuda/visibility.h"

/* The GPU set as the model wants it; it points into set, which must outlive it. */
struct vis_machine *vis_machine_new(const struct gpu_set *set);
void vis_machine_free(struct vis_machine *m);

/* CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER and GPUCTL_LEASE_ID of a process as it was started
 * (NULL when unset). false with msg set when they cannot be read (see pid_getenv). */
struct proc_env {
	char *cvd, *order;
	char *lease_id;              /* the process runs under a gpuctl lease */
	/* What Slurm set for the process's job and step (NULL: unset). */
	char *slurm_job_id, *slurm_step_id, *slurm_job_gpus, *slurm_step_gpus;
};
bool vis_proc_env_read(unsigned pid, struct proc_env *env, char *msg, size_t msglen);
void vis_proc_env_free(struct proc_env *env);

/* Which environment to explain (map and which read it from --visible, --unset, --order and
 * --pid: cmd/visopts.h). */
struct vis_request {
	const char *visible;         /* with visible_given: this value, NULL for --unset */
	bool visible_given;
	const char *order;           /* NULL: the environment's */
	unsigned long pid;           /* 0: none */
};
/* The variables in effect for rq: the process's (pid) or the caller's, then rq's own values.
 * false with msg set when the process's cannot be read (see pid_getenv). */
bool vis_request_env(const struct vis_request *rq, struct proc_env *out, char *msg, size_t msglen);

/* What map and which both start from: the variables in effect, the machine as the model sees
 * it, and the model's answer (cmd/visopts.h opens one from the options). */
struct vis_session {
	struct proc_env env;
	struct vis_machine *m;
	struct vis_result *r;
};
/* The session of env (taken over by s) on set, which must outlive it. */
void vis_session_init(struct vis_session *s, const struct proc_env *env, const struct gpu_set *set);
void vis_session_close(struct vis_session *s);

/* The Slurm allocation of the session's environment next to what CUDA_VISIBLE_DEVICES makes
 * visible: false when the environment is in no Slurm job. */
struct vis_slurm {
	struct slurm_alloc a;        /* strings point into the session's env */
	bool mapped;                 /* Slurm's GPU ids name GPUs here (else why says why) */
	char why[256];
	uint64_t gpus;               /* the allocation's GPUs: bits of positions in the machine */
	size_t outside[GPU_MAX];     /* CUDA devices (logical indices) whose GPU is outside it */
	size_t noutside;
	uint64_t unseen;             /* allocated GPUs that CUDA does not see */
};
bool vis_slurm_read(const struct vis_session *s, const struct gpu_set *set, struct vis_slurm *out);
/* The nvidia-smi indices of a GPU mask, "0,1", into sb. */
void vis_indices(struct strbuf *sb, const struct vis_machine *m, uint64_t mask);

#endif
