/* frame.h: a table loop's frame laid out in the daemon (issue 22; machine/snap.h's frames). */
#ifndef GPUCTL_FRAME_H
#define GPUCTL_FRAME_H

#include "machine/snap.h"

/* The daemon's renderer (daemon.h's snap_frame_fn, set by cmd/daemon.c): view decoded and
 * narrowed as a client decodes it (lease/snapshot.c), the leases from list's answer as the
 * client takes them, then table_render with the ask's layout: the bytes the client would
 * have laid out itself, but for the clock in the first line's last 8 columns (the client
 * writes its own). Refused (false, why) wherever the client's frame would depend on the client:
 * the device guard (which GPUs it may open), containers (their names are each caller's), a
 * GPU lost (its report and exit status), another time zone. */
bool frame_render(const struct snap_parts *view, const struct strbuf *list, size_t nlist,
		  const struct snap_frame_ask *a, struct strbuf *out, bool *timed, char *why,
		  size_t whylen);

#endif
