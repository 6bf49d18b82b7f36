/* holder.h: a lease's holder told by the daemon what becomes of its lease (issue 24): the
 * connection `run`'s gpuctl and env's holder keep open while the lease lives, on which the
 * daemon says when the lease is warned idle and when it is released for idleness. The holder is
 * the user's own process: it tells the user (a line on the terminal) and ends the job itself
 * (SIGTERM, then SIGKILL after the grace the daemon names); the daemon signals nobody. */
#ifndef GPUCTL_LEASE_HOLDER_H
#define GPUCTL_LEASE_HOLDER_H

#include "lease/choose.h"
#include "lease/client.h"

struct lwatch {
	struct dclient dc;
	bool on;                 /* connected and watching */
};

enum lwatch_what { LW_NONE, LW_IDLE_WARN, LW_IDLE_RELEASE, LW_GONE };

struct lwatch_event {
	enum lwatch_what what;
	unsigned long idle;      /* seconds idle */
	unsigned long release_in; /* seconds until it is released (0: not by idleness) */
	double grace;            /* seconds from SIGTERM to SIGKILL */
};

/* Starts watching g's lease on the daemon that granted it, on the grant's connection where g
 * kept it (taken from g), else on a new one. false: not watched (a daemon that cannot, a
 * private one): the lease holds all the same. */
bool lwatch_open(struct lwatch *w, struct grant *g);
/* Its descriptor, to poll for POLLIN (-1: not watching). */
int lwatch_fd(const struct lwatch *w);
/* Reads what came: ev->what LW_NONE for nothing of interest, LW_GONE when the daemon went away
 * (the watch ends; the lease holds). */
void lwatch_read(struct lwatch *w, struct lwatch_event *ev);
void lwatch_close(struct lwatch *w);
/* The line that tells a user of ev about lease id, into buf. */
void lwatch_text(const struct lwatch_event *ev, const char *who, const char *id, char *buf,
		 size_t n);

#endif
