/* snapshot.h: the machine as the daemon last saw it (its shared snapshot, daemon/snapshot.c),
 * for `status`, `top`, `doctor` and the exporter: one socket round trip instead of NVML and a
 * /proc read per process, and one refresh in the daemon for every user's watch loop.
 *
 * snapshot_open gives a gpu_set like gpu_set_open's (every GPU, to select from), whose backend
 * asks the daemon again at each gpu_set_refresh for a view at most max_age old. Where the
 * daemon does not answer in a short bounded time (SNAPSHOT_TIMEOUT), refuses, or sends what this
 * gpuctl cannot read, the set reads the machine itself from then on (NVML and /proc, as without
 * a daemon); only where that fails too are the GPUs shown lost, with both reasons. */
#ifndef GPUCTL_SNAPSHOT_H
#define GPUCTL_SNAPSHOT_H

#include "machine/gpu.h"
#include "base/util.h"

#include <signal.h>

#define SNAPSHOT_TIMEOUT 2.0        /* s: the whole answer, or the client reads the machine */
/* s: the oldest view a one-shot command takes: none older than its ask (a refresh made for it,
 * shared only with the asks that arrive with it), so a one-shot shows what is there now, as
 * without a daemon; GPUCTL_SNAPSHOT_AGE lets it take an older one. A loop's bound is its period
 * or under the age of the view it holds (snapshot.c). */
#define SNAPSHOT_AGE_DEFAULT 0.0

/* A loop's flag that its SIGINT/SIGTERM handler sets: a wait for the daemon's view ends at once
 * when it is set (a refresh then keeps the view held), not at SNAPSHOT_TIMEOUT. */
void snapshot_stop_flag(volatile sig_atomic_t *flag);
/* Whether that flag is set. */
bool snapshot_stop_asked(void);
/* A connection to the shared daemon into dc (fd -1 before), or false with err: only the shared
 * daemon's socket, a connect that does not wait, SNAPSHOT_TIMEOUT for answers; none in another
 * PID namespace (its pids are not this one's). */
struct dclient;
bool snapshot_connect(struct dclient *dc, struct gpu_error *err);
/* The bound a loop's ask states: max_age, or under the age the view it holds has now (made:
 * when that was made, monotonic; 0: none), so each period shows a view made since the last. */
double snapshot_ask_age(double max_age, double made);
/* A snapshot request begun into req: its bound (age, at most 60 s) and what it wants (the
 * containers' ids where it wants containers: their names are the asker's own). */
struct strbuf;
void snapshot_ask_begin(struct strbuf *req, unsigned what, double age);
/* req sent on dc, connected; reused: the connection was kept from an earlier ask, and if the
 * daemon closed it since, req goes once more on a new one (then *reused is false). */
bool snapshot_send(struct dclient *dc, bool *reused, const struct strbuf *req, struct gpu_error *err);
/* Whether the snapshot may be asked for: not where GPUCTL_SNAPSHOT is 0, off or no. */
bool snapshot_wanted(void);
/* The freshness bound: GPUCTL_SNAPSHOT_AGE (seconds, 0-60) when set, else def. */
double snapshot_max_age(double def);
/* The machine from the daemon, fetched now with the groups of what (the first refresh with no
 * more than those uses this answer). NULL with err when no daemon answered with one. prefault:
 * once a daemon answers, the heap is prefaulted as it grows (heap_prefault_growth, base/util.h):
 * for a client, never a server. */
struct gpu_set *snapshot_open(unsigned what, double max_age, bool leases, bool prefault,
			      struct gpu_error *err);
/* leases in the snapshot (issue 22): with leases, each fetch asks for `list`'s answer too (after
 * the view, in the same round trip). What the last refresh's answer carried: 1 with *out (the
 * caller's to free, as leaseview_load's), 0 with err (the daemon's list failed, as
 * leaseview_load's would), -1 none (not served by the daemon now, or not asked: the caller asks
 * `list` itself). Each answer's leases are taken once. */
struct leaseview;
int snapshot_leases(struct gpu_set *set, struct leaseview *out, struct gpu_error *err);
/* The owners' names a view carries, seeded for the lookups of its leases' holders (pid.h's
 * user_name_seed): a holder is named as the view names its processes. */
void snapshot_seed_names(const struct gpu_set *set);
/* Whether set is (still) served by the daemon's snapshot. */
bool snapshot_serves(const struct gpu_set *set);
/* When the view the last refresh showed was made (monotonic seconds, now_mono's clock), as its
 * answer said; 0 where set is not served by the daemon (a refresh reads the machine as it goes:
 * the caller's clock says when). A cache of what the view shows is as old as this, not as old as
 * the refresh that fetched it. */
double snapshot_made(const struct gpu_set *set);
/* Why a set stopped being served by the daemon (the last time one did, in this process): its
 * refresh then read the machine itself, as every later one does. "" where none has. */
const char *snapshot_left_why(void);

#endif
