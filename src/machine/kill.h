/* kill.h: the one safe path for signalling a listed GPU process, shared by `gpuctl kill` and
 * `gpuctl top`: who may signal whom (one's own processes; another user's only when root names
 * that user), a pidfd opened on exactly the process that was listed (its start time checked, so
 * a pid reused meanwhile is never hit), and which signals escalate to KILL. */
#ifndef GPUCTL_KILL_H
#define GPUCTL_KILL_H

#include <stdbool.h>
#include <sys/types.h>

enum kill_state {
	KS_PENDING,      /* may be signalled: pidfd is open on it */
	KS_REFUSED,      /* another user's */
	KS_GONE,         /* exited, or its pid now names another process (another owner) */
	KS_ENDED,        /* ended after the signal */
	KS_KILLED,       /* ended after the escalation to KILL */
	KS_SURVIVED,     /* still running (or the kernel refused the signal) */
	KS_HIDDEN,       /* not visible here (another PID namespace?): left alone */
	KS_SIGNALLED,    /* a signal that does not end it was delivered */
	KS_NO_PIDFD,     /* no pidfds here: never signalled by a bare pid (PID_NO_PIDFD) */
};

struct kill_target {
	unsigned pid;
	bool uid_valid;              /* its owner is known (it is in /proc) */
	uid_t uid;
	unsigned long long start;    /* its start time as listed; 0: read it now */
	int pidfd;                   /* -1 until opened */
	enum kill_state state;
};

/* Decides whether the caller (uid me) may signal t and opens a pidfd on it: KS_PENDING with
 * t->pidfd open, or KS_REFUSED (another user's, unless me is root and named is true with
 * named_uid the owner), KS_HIDDEN, KS_GONE or KS_NO_PIDFD. */
void kill_target_open(struct kill_target *t, uid_t me, bool named, uid_t named_uid);
/* Sends sig through the pidfd. false when it was not delivered: state KS_GONE (it has ended) or
 * KS_SURVIVED (the kernel refused). */
bool kill_target_signal(struct kill_target *t, int sig);
void kill_target_close(struct kill_target *t);

/* TERM, INT, QUIT and KILL end a process: the first three escalate to KILL after a grace
 * period, KILL gets a few seconds to land. */
bool kill_ends(int sig);
enum { KILL_LAND_SECONDS = 5 };
/* "TERM", "SIGTERM", "term" or a number (1-64); -1 when unknown. */
int kill_parse_signal(const char *s);
const char *kill_signal_name(int sig);

#endif
