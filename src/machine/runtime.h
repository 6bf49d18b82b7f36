/* runtime.h: the names of the containers GPU processes run in (container.h finds their ids), as
 * their runtimes tell a caller who may ask, kept in a cache across refreshes.
 *
 * Who is asked: Docker's Engine API (GET /containers/ID/json, HTTP/1.1 over its unix socket:
 * $DOCKER_HOST when it is unix://..., else /run/docker.sock), Podman's compatible one
 * ($CONTAINER_HOST, else /run/podman/podman.sock), and for a rootless container of user U only
 * U's own sockets (/run/user/U/podman/podman.sock, /run/user/U/docker.sock): a user can name a
 * cgroup of theirs after anyone's container, so the system's runtime is never asked about one. A
 * Kubernetes pod's names come from the same answer's labels (io.kubernetes.pod.name,
 * .pod.namespace, .container.name: dockershim and cri-dockerd), or from the CRI runtime's state,
 * readable by root: containerd's OCI bundle
 * (/run/containerd/io.containerd.runtime.v2.task/k8s.io/ID/config.json, annotations
 * io.kubernetes.cri.sandbox-name, -namespace, container-name) and CRI-O's
 * (/run/containers/storage/overlay-containers/ID/userdata/config.json, annotations
 * io.kubernetes.pod.name, .pod.namespace, .container.name). The kubelet's pod-resources socket
 * is gRPC and is not asked (no gRPC client here).
 *
 * A slow or absent runtime never slows a refresh: all lookups of one refresh share one deadline
 * (CTR_LOOKUP_BUDGET; $GPUCTL_CONTAINER_TIMEOUT ms when set), each connect is non-blocking, a runtime that fails once is not asked
 * again in that refresh (the system's runtimes are asked first; then each user with rootless
 * containers waiting gets an equal part of what is left, so a user's socket that never answers
 * spends only their own part), and an answer is read up to CTR_ANSWER_MAX bytes and parsed with
 * bounds (base/jsonscan.h). An id once named stays named while it is listed; one that could not
 * be named is asked again after CTR_RETRY seconds. Names are the runtime's text, escaped by
 * each output. */
#ifndef GPUCTL_RUNTIME_H
#define GPUCTL_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"
#include "machine/container.h"

#define CTR_LOOKUP_BUDGET 0.030      /* seconds, all lookups of one refresh */
#define CTR_ANSWER_MAX ((size_t)1 << 20)
#define CTR_RETRY 10.0               /* seconds */
#define CTR_NAME_MAX 256             /* bytes kept of a name */

struct ctr_info {
	struct ctr_ref ref;
	char name[CTR_NAME_MAX];     /* "" unknown */
	char pod[CTR_NAME_MAX];      /* a Kubernetes pod's name, "" unknown */
	char ns[CTR_NAME_MAX];       /* its namespace */
	bool named;                  /* a runtime answered */
	double asked_at;             /* monotonic seconds; 0: never asked */
	unsigned gen;
};

struct ctr_names;
struct ctr_names *ctr_names_new(void);
void ctr_names_free(struct ctr_names *cn);
/* A refresh: begin, add each process's container, resolve, end. An entry added stays valid
 * until the end of the next refresh that does not add it. */
void ctr_names_begin(struct ctr_names *cn);
const struct ctr_info *ctr_names_add(struct ctr_names *cn, const struct ctr_ref *ref);
void ctr_names_resolve(struct ctr_names *cn);
/* The container of process pid by its /proc/PID/cgroup, added; NULL when in none. */
const struct ctr_info *ctr_names_add_pid(struct ctr_names *cn, unsigned pid);
void ctr_names_end(struct ctr_names *cn);

/* ---- the Engine API, for run's containers too ---- */

/* The socket of the Docker (podman false) or Podman Engine API a caller of this environment
 * uses: $DOCKER_HOST / $CONTAINER_HOST when unix://PATH, else the system's. */
void ctr_engine_socket(bool podman, char *path, size_t len);
/* GET path on the Engine API at socket, by the monotonic deadline: the body (up to
 * CTR_ANSWER_MAX, chunked or not) and the HTTP status. false with why set when there is no
 * answer in time. owner >= 0: the server must run as that uid by the kernel's word
 * (SO_PEERCRED), else nothing is sent: a rootless runtime's socket lies in its user's
 * directory, and that user could put any other there (a link to root's docker.sock would name
 * their own process after root's container for everyone). */
bool ctr_engine_get(const char *socket, long owner, const char *path, double deadline,
		    struct strbuf *body, int *status, char *why, size_t whylen);
/* What an inspect answer (GET /containers/ID/json) says: the name (its '/' dropped), the
 * Kubernetes labels, and State.Pid (0 when not running). */
void ctr_parse_inspect(const char *body, size_t len, struct ctr_info *out, long long *pid);

/* What a CRI runtime's OCI bundle (config.json) says of a pod's container: its annotations
 * (containerd's io.kubernetes.cri.*, CRI-O's io.kubernetes.*; runtime CTR_CRIO or not). */
void ctr_parse_oci(const char *text, size_t len, unsigned runtime, struct ctr_info *out);

#endif
