/* frame.h: the table laid out by the daemon, a one-shot's and each refresh of a loop's (issue 22;
 * the ask: machine/snap.h). Ten users' `status -l` loops or `watch gpuctl status` then cost the
 * daemon one decoding and one layout a view, and each command a request, a mapped memfd and a
 * write: not the decoding and layout of the whole view each. Where the daemon does not lay one
 * out (it refuses, says why, or does not answer), the command lays out the view itself, as
 * without frames (lease/snapshot.h); a loop asks again every FRAME_RETRY_SECONDS after a refusal
 * (a lost GPU, a user's share of the daemon's CPU spent, a daemon restarted: each passes), after
 * no answer or one it does not read never again (a hung daemon would hold up each such ask for
 * SNAPSHOT_TIMEOUT). */
#ifndef GPUCTL_LEASE_FRAME_H
#define GPUCTL_LEASE_FRAME_H

#include "machine/snap.h"

struct frame {
	const char *bytes;        /* the frame, mapped read-only (sealed: it cannot change) */
	size_t len;
};

struct frame_source;
/* A source on the shared daemon's socket (connected at the first fetch). */
struct frame_source *frame_source_new(void);
void frame_source_free(struct frame_source *fs);
/* The frame of a view at most max_age old (under the age of the last frame's view, so each
 * period shows a view made since): 1 (f: frame_release it), 0 (none: err says why; lay out the
 * view yourself), -1 (the loop's stop flag was set while waiting: snapshot_stop_flag). */
int frame_fetch(struct frame_source *fs, const struct snap_frame_ask *a, double max_age,
		struct frame *f, struct gpu_error *err);
void frame_release(struct frame *f);
/* Whether a refused loop stops asking: the last fetch had no answer, or one not read. */
bool frame_source_settled(const struct frame_source *fs);
/* Whether the daemon did not answer the last ask in time (SNAPSHOT_TIMEOUT): read the machine. */
bool frame_source_hung(const struct frame_source *fs);

#define FRAME_RETRY_SECONDS 5.0

#endif
