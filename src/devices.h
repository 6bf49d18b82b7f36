/* devices.h: what the commands that explain CUDA visibility share: the machine as the visibility
 * model wants it, read from the GPU set, and the environment of a running process. */
#ifndef GPUCTL_DEVICES_H
#define GPUCTL_DEVICES_H

#include "gpu.h"
#include "visibility.h"

struct vis_machine *vis_machine_new(const struct gpu_set *set);
void vis_machine_free(struct vis_machine *m);

/* CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER of process pid as it was started (from
 * /proc/PID/environ). Values are NULL when unset. false with msg set when it cannot be read. */
struct proc_env {
	char *cvd, *order;
	char *lease_id;            /* GPUCTL_LEASE_ID: the process runs under a gpuctl lease */
};
bool read_proc_env(unsigned pid, struct proc_env *env, char *msg, size_t msglen);
/* The parent of pid from /proc/PID/stat, or -1. */
int proc_ppid(unsigned pid);
void proc_env_free(struct proc_env *env);

/* Resolve the visibility for the env of this process, or the values given by --visible/--order.
 * A value of "\x01unset" for visible means: treat as unset. */
struct vis_request {
	const char *visible;       /* NULL: take the environment's */
	bool visible_given;
	const char *order;
	bool order_given;
	unsigned long pid;         /* 0: none */
};
/* Fills cvd/order with the values in effect; returns false with msg on a --pid failure. */
bool vis_request_values(const struct vis_request *rq, struct proc_env *out, char *msg, size_t msglen);

/* What map and which both start from: the variables in effect, the machine, and the model's
 * answer. Returns EXIT_OK, or an exit code after printing why (prefixed with who). */
struct vis_session {
	struct proc_env env;
	struct gpu_set *set;
	struct vis_machine *m;
	struct vis_result *r;
};
int vis_session_open(struct vis_session *s, const struct vis_request *rq, const char *who);
void vis_session_close(struct vis_session *s);

#endif
