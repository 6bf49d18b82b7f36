/* hook.h: the notify hook of a `run` or `env` lease (issue 24's notifications, for the leases
 * that no job runner holds; the runner's own, for submitted jobs, is runner/notify.c). */
#ifndef GPUCTL_HOOK_H
#define GPUCTL_HOOK_H

#include "lease/choose.h"

/* What a hook is told of its lease, copied when granted (the grant may be freed before the
 * job ends). */
struct lhook {
	char *cmd;                /* /bin/sh -c CMD; NULL: no hook */
	double timeout;           /* seconds, then its process group is killed */
	bool job_events;          /* also done/failed at the job's end (run --notify given) */
	char kind[8];             /* run, env */
	char id[17];
	char name[128];
	char gpus[GPU_MAX * 4 + 1];  /* nvidia-smi indices, "0,1" */
	unsigned long long until_ns; /* its time limit (0: none) */
	double limit;                /* seconds it was granted for (0: unknown) */
	bool near_said;
};

/* cmd: the hook (NULL or "": none); job_events: its job's end too. */
void lhook_init(struct lhook *h, const struct grant *g, const char *kind, const char *cmd,
		double timeout, bool job_events);
void lhook_free(struct lhook *h);
/* Runs the hook for event (idle-warn, idle-release, time-near, done, failed), state (running,
 * done, failed) and exit_code (-1: none), detached: it never blocks the caller, is killed past
 * its timeout by a watcher of its own, and leaves no zombie. */
void lhook_fire(const struct lhook *h, const char *event, const char *state, int exit_code);
/* Milliseconds until the time-near event is due (a tenth of the limit before it, 5 min at
 * most, as the runner's); -1: none due (no limit, no hook, or told); 0: due now. */
int lhook_near_ms(const struct lhook *h);
/* Fires time-near when due (once). */
void lhook_near(struct lhook *h);

#endif
