/* container.h: a GPU process's container as each view shows it (issue 28): the JSON keys, the
 * compact label of the table and top, and the one line said when host pids cannot be mapped. The
 * names are the runtime's text: each output escapes them (the table and top through
 * base/escape.h, JSON through its writer, the exporter through metrics_label: its labels are
 * metrics.c's). */
#ifndef GPUCTL_VIEW_CONTAINER_H
#define GPUCTL_VIEW_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf;
struct ctr_info;
struct json;
struct gpu_proc;
struct gpu_set;

/* status --json's keys of a process: container_id, container (its name), runtime, pod,
 * pod_uid, namespace; null where not in a container or not known. */
void ctr_json(struct json *j, const struct gpu_proc *p);
/* "trainer", "ns/pod/ctr" (a pod's), or the 12-digit id when no name is known; NULL when not in
 * a container. In buf (len bytes). */
const char *ctr_label(const struct gpu_proc *p, char *buf, size_t len);
/* The line to say once when none of the processes NVML lists is in this /proc (gpuctl in a
 * container without the host's PID namespace), or NULL. */
const char *ctr_pidns_note(const struct gpu_set *set, char *buf, size_t len);

/* `leases`: "held by docker container NAME (ID)[ until it stops]", the name escaped. */
void ctr_holder_line(struct strbuf *sb, const struct ctr_info *c, bool bound);

#endif
