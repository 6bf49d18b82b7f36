/* runctr.h: `gpuctl run -- docker run ...` and `podman run ...` (issue 28): the lease's GPUs
 * given to the container in its runtime's own device syntax, and a detached container
 * (`run -d`) holding the lease for its whole life.
 *
 * Device syntax, added right after `run` (the user's own flags follow and may not name GPUs):
 *   docker: --gpus "device=UUID,UUID"   (Docker 19.03+ with the NVIDIA Container Toolkit; the
 *           double quotes are part of the word: docker reads the value as CSV)
 *   podman: --device nvidia.com/gpu=UUID, once per GPU (CDI: `nvidia-ctk cdi generate` names
 *           each GPU by index and by UUID; UUIDs do not depend on the numbering)
 * Then the lease's variables, each as -e NAME=VALUE (grant_env's, by UUID, without the profile's):
 * CUDA_VISIBLE_DEVICES narrows CUDA to the lease whatever nodes the container has, a memory
 * share's GPUCTL_LEASE_MEM and framework limits reach it; podman also gets NVIDIA_VISIBLE_DEVICES
 * (docker's --gpus sets it). Refused besides the user's GPU flags: the words that give the
 * container every GPU's device node (--privileged, a mount of the host's / or /dev, --device
 * /dev, a device cgroup rule allowing major 195: runctr-words.c).
 * Every run also gets --cidfile (the user's own is used when given). When the client has ended
 * (a detached one: exited 0 at once; a foreground one: with its container, or killed, or
 * detached from it with the detach keys) the container's id is read from it, its init process
 * asked of the client (`inspect --format {{.State.Pid}}`, the runtime's own view, whatever
 * socket or context it uses), and that process checked by the kernel's word: its
 * /proc/PID/cgroup must name that container (container.h). A holder, in a session of its own,
 * then keeps the lease's descriptors bound to that process (a pidfd): the lease ends when the
 * container stops (its init exits), `gpuctl release`, or the holder is killed; `leases` names
 * the container. A container that is no longer running (a foreground one that ended, --rm) has
 * nothing to bind: the lease ends with the client, and a detached one's failure is said. */
#ifndef GPUCTL_RUNCTR_H
#define GPUCTL_RUNCTR_H

#include <stdbool.h>
#include <stddef.h>

struct grant;

enum runctr_kind { RUNCTR_NONE, RUNCTR_DOCKER, RUNCTR_PODMAN };

struct runctr {
	enum runctr_kind kind;
	bool detached;               /* -d / --detach */
	size_t run_at;               /* argv index of "run" */
	const char *user_gpus;       /* a GPU flag the user gave (refused: the lease chooses), */
	const char *user_gpus_val;   /* and its value when a word of its own (NULL: none) */
	const char *gpus_var, *gpus_file; /* user_gpus is an --env-file: its variable naming GPUs */
	const char *all_nodes;       /* a word giving every GPU's device node (refused), */
	const char *all_why;         /* and what it gives */
	size_t owned;                /* (flag, value) pairs after `run` whose values are ours */
	const char *cidfile;         /* the user's --cidfile, or ours */
	char dir[64];                /* our private directory for the cidfile, "" when none */
	char path[96];
};

/* What argv runs: a docker or podman `run` (or `container run`), detached or not, and the
 * user's words that runctr_check refuses; kind NONE for anything else (runctr-words.c). Pure
 * but for bind sources' links resolved and --env-file files read: unit-tested
 * (tests/unit/test_container.c). */
void runctr_detect(char **argv, struct runctr *rc);
/* Whether the user's words may run (false with why: they name GPUs themselves, or give the
 * container every GPU's device node): asked before the lease is, so nothing waits for GPUs
 * that a refusal would give back. */
bool runctr_check(const struct runctr *rc, char *why, size_t len);
/* argv with the lease's devices (and our --cidfile) inserted after `run`; free with
 * runctr_argv_free. NULL with why set: runctr_check's refusal, or no directory for the
 * cidfile could be made. */
char **runctr_argv(struct runctr *rc, char **argv, const struct grant *g, char *why, size_t len);
void runctr_argv_free(struct runctr *rc, char **argv);
/* Removes our cidfile and its directory (also when runctr_bind is not called). */
void runctr_cleanup(struct runctr *rc);
/* After the client ended: bind the lease to the container still running (see above), in a holder
 * forked from here. false when there is none (why set for a detached run: it should have one);
 * the lease then ends with this process. */
bool runctr_bind(struct runctr *rc, char **argv, struct grant *g, bool quiet, char *why, size_t len);

#endif
