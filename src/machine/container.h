/* container.h: which container (and Kubernetes pod) a process runs in, from its /proc/PID/cgroup,
 * and the cgroup file's one line reader (slurm.c reads the same lines for Slurm jobs).
 *
 * The kernel names the cgroup; the container runtime chose its name when it made it, by a
 * documented form per runtime and cgroup driver, so the id comes from the kernel's own text and
 * no runtime is asked for it:
 *   Docker     cgroupfs:  /docker/<64hex>                          (v1 and v2)
 *              systemd:   /system.slice/docker-<64hex>.scope
 *   Podman     systemd:   /machine.slice/libpod-<64hex>.scope[/container]
 *              rootless:  /user.slice/user-U.slice/user@U.service/user.slice/libpod-<64hex>.scope[/container]
 *              cgroupfs:  /libpod_parent/libpod-<64hex>[/ctr]
 *   containerd (CRI)      .../cri-containerd-<64hex>.scope, or on cgroup v1 with the systemd
 *                         driver the flat form .../kubepods-...-pod<uid>.slice:cri-containerd:<64hex>
 *   CRI-O                 .../crio-<64hex>.scope (v1 flat form: ...:crio:<64hex>)
 *   Kubernetes pods       systemd: kubepods[-QOS]-pod<uid, '-' written '_'>.slice above the
 *                         container's scope; cgroupfs: /kubepods[/QOS]/pod<uid>/<64hex>
 * The conmon/shim scopes beside a container (libpod-conmon-, crio-conmon-) are not the container.
 * A user may make cgroups of any name inside what systemd delegated to them (user@U.service), so
 * a container found there is a rootless one of user U (owner_uid): only U's own runtime socket is
 * asked its name, never the system's, or a user could borrow another's container name.
 * The parser is pure and unit-tested (tests/unit/test_container.c, tests/fake/cgroup/). */
#ifndef GPUCTL_CONTAINER_H
#define GPUCTL_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* ---- the cgroup file's lines ---- */

/* The next line "ID:CONTROLLERS:PATH" of a /proc/PID/cgroup text at *cursor: the path (from its
 * first '/', not NUL-terminated) and its length; lines without two colons are skipped. false at
 * the end. *cursor starts at the text. */
bool cgroup_next_path(const char **cursor, const char **path, size_t *len);

/* ---- containers ---- */

enum ctr_runtime { CTR_NONE, CTR_DOCKER, CTR_PODMAN, CTR_CONTAINERD, CTR_CRIO, CTR_KUBERNETES };

#define CTR_ID_LEN 64
#define CTR_UID_LEN 36      /* a pod uid, 8-4-4-4-12 */

struct ctr_ref {
	unsigned char runtime;      /* enum ctr_runtime; CTR_KUBERNETES: a pod's container of a
				     * runtime the cgroupfs form does not tell */
	bool rootless;              /* under user@U.service: owner_uid's own runtime */
	uid_t owner_uid;
	char id[CTR_ID_LEN + 1];    /* lowercase hex */
	char pod_uid[CTR_UID_LEN + 1]; /* "" when not a Kubernetes pod's */
};

/* The container the cgroup text places a process in: true with *out filled, false (out
 * zeroed) when none. */
bool ctr_from_cgroup(const char *text, struct ctr_ref *out);
/* review 2: the same, but a container that is not rootless is one only when the cgroup it was
 * made in (its container cgroup's parent, under root, the cgroup mount: /sys/fs/cgroup) is
 * root's: a user to whom systemd or Slurm delegated a subtree outside user.slice can name a
 * cgroup there docker-<root's container id>.scope. One stat. */
bool ctr_from_cgroup_at(const char *root, const char *text, struct ctr_ref *out);
/* "docker", "podman", "containerd", "cri-o", "kubernetes"; NULL for CTR_NONE. */
const char *ctr_runtime_name(unsigned runtime);
/* Whether this machine runs containers at all: a few stats of what the runtimes install (their
 * sockets, state and storage directories: Docker, containerd, Podman root and rootless, CRI-O,
 * the kubelet), or DOCKER_HOST / CONTAINER_HOST set. The stats are made again at most every
 * 10 s in a process (a watch loop asks every refresh); false on a machine without a runtime, so
 * no process's cgroup file is read there for containers. */
bool ctr_host_has_runtime(void);
/* The short form people see in `docker ps`: the first 12 characters of the id. */
void ctr_short_id(const char *id, char out[13]);

#endif
