/* leaseview.h: a read-only snapshot of leases and the queue, for `leases`, `release`, `status`,
 * `doctor` and the exporter. Taken under the shared global lock, so it never sees half an
 * acquisition. */
#ifndef GPUCTL_LEASEVIEW_H
#define GPUCTL_LEASEVIEW_H

#include "lease.h"
#include "queue.h"

struct leaseview {
	bool present;            /* the state directory exists */
	struct state st;
	struct lockset ls;
	struct lease_list leases;
	struct ticket_list queue;
};

/* Never creates the state directory: a machine nobody leased on has no leases. state_dir NULL:
 * read it from the configuration (commands that refresh often pass it, read once). */
bool leaseview_load(struct leaseview *v, const char *state_dir, struct gpu_error *err);
/* The configured state directory (caller frees), or NULL when the configuration is broken. */
char *leaseview_state_dir(void);
void leaseview_free(struct leaseview *v);

#endif
