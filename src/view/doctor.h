/* doctor.h: the findings of `gpuctl doctor` (the classic multi-GPU mistakes, each with a
 * severity, a stable code, the GPUs and pids concerned, what it means and the fix): the engine,
 * shared by the doctor command and by top's process details, which reads them from its own
 * refresh instead of querying the machine again. */
#ifndef GPUCTL_DOCTOR_H
#define GPUCTL_DOCTOR_H

#include "machine/gpu.h"
#include "lease/view.h"
#include "cuda/visibility.h"

struct doctor_ids {
	unsigned *v;
	size_t n, cap;
};

struct doctor_finding {
	enum vis_severity sev;
	const char *code;
	char *message, *fix;
	struct doctor_ids gpus, pids;  /* nvidia-smi indices, pids */
};

struct doctor_report {
	struct doctor_finding *f;
	size_t n, cap;
};

/* Everything: the caller's environment, every GPU process and the machine. set is refreshed with
 * REFRESH_PROCS | REFRESH_EXTRA; lv holds the leases (not present: no lease is checked). */
void doctor_all(struct doctor_report *r, struct gpu_set *set, const struct leaseview *lv);
/* One process (`doctor --pid`): what it sees and uses, and the findings about it. set is
 * refreshed with REFRESH_PROCS at least. */
void doctor_pid(struct doctor_report *r, struct gpu_set *set, const struct leaseview *lv,
		unsigned pid);
bool doctor_has_error(const struct doctor_report *r);
/* A finding into r (its message formatted, at most 1 KiB). */
struct doctor_finding *doctor_report_add(struct doctor_report *r, enum vis_severity sev,
					 const char *code, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void doctor_finding_add_id(struct doctor_ids *l, unsigned id);
/* doctor-guard.c (issue 25; `doctor` adds it to doctor_all's): whether leases bind here (the device guard's state, the nodes'
 * owners and modes), and processes on a GPU that no lease of their user covers. */
void doctor_guard(struct doctor_report *r, const struct gpu_set *set, const struct leaseview *lv);
/* doctor-machine.c (`doctor` adds it to doctor_all's): the GPUs' state, idle leases, shares over their claim. */
void doctor_machine(struct doctor_report *r, const struct gpu_set *set, const struct leaseview *lv);
void doctor_report_free(struct doctor_report *r);

#endif
