/* lease/: rank 3, the daemon's clients (the daemon itself is daemon/, a program they never link;
 * they share base/proto.h with it): finding or starting it (client.c), one request's exchange
 * (request.c, without I/O), the candidates and the job's environment (choose.c), a lease acquired
 * and held (grant.c, this header) and who holds what (view.c). Order: client, choose < request <
 * grant; client < view.
 *
 * grant.h: getting a lease from the daemon: which GPUs may be chosen (-g, the caller's
 * CUDA_VISIBLE_DEVICES, read against the machine as the daemon describes it, so that no NVML is
 * loaded in a process that starts jobs), for `run` and `env` the one request and the wait in the queue (no CPU,
 * signals honoured, a progress line on a terminal, a daemon restart survived; request.h holds
 * the exchange itself, which the job runner shares), the descriptors that are the lease, and the
 * job's environment (choose.h). */
#ifndef GPUCTL_GRANT_H
#define GPUCTL_GRANT_H

#include "lease/choose.h"
#include "lease/request.h"

/* EXIT_OK: the lease is held in g->fds (for dry runs: g->pos says what would be chosen), its
 * GPUs positions in *setp. *setp NULL: the machine is the daemon's description of it (no NVML
 * loaded here; NVML only when the daemon cannot describe it), left in *setp for the caller to
 * free (gpu_set_free) whatever the outcome. Otherwise an EXIT_* code with err, nothing held. */
int grant_acquire(struct gpu_set **setp, const struct config *cfg, const struct grant_req *rq,
		  struct grant *g, struct gpu_error *err);
/* The machine as the daemon at socket describes it (socket NULL: the daemon dclient_open finds
 * or starts; NVML here only when none answers, or an older daemon cannot say), for a process
 * that leases and starts jobs and should not map the driver's library into them (the job
 * runner). Free with gpu_set_free. */
struct gpu_set *grant_machine_at(const char *socket, struct gpu_error *err);
/* The device guard (issue 25): the machine as the running shared daemon describes it, never
 * NVML here (NULL with err: no daemon, or it cannot say). */
struct gpu_set *grant_machine_shared(struct gpu_error *err);
/* In the process that will hold the lease (the job just before exec, env's holder): keep the
 * lease's descriptors across exec, and tell the daemon this process holds it, waiting up to
 * wait seconds for its answer (a job's start is delayed by it; a container's holder, which no
 * job waits on, waits longer so that a loaded daemon still learns the container in time). */
void grant_hold(const struct grant *g, pid_t bound, double wait);

#endif
