/* act.h: top's actions that reach outside the view (see act.c): signalling a process,
 * releasing a lease, the details of a process. */
#ifndef GPUCTL_TUI_ACT_H
#define GPUCTL_TUI_ACT_H

#include "machine/kill.h"
#include "tui/tui.h"

struct pollfd;

/* A signal or a release in flight, watched through its pidfd (k.pidfd). */
struct tui_pending {
	enum { PEND_TERM, PEND_KILL, PEND_RELEASE } stage;
	struct kill_target k;
	char what[96];               /* "pid 4242", "lease 9f2c..." */
	double deadline;             /* monotonic: KILL after TERM, or give up */
};

struct tui_acts {
	struct tui_pending *p;
	size_t n, cap;
};

/* k on the selected process: refuses, or asks (y/N; root naming another user's process types
 * the owner's name). */
void tui_kill_ask(struct tui_view *v, const struct tui_model *m);
/* The answer was yes: SIGTERM through machine/kill.c's safe path; KILL follows after v->grace. */
void tui_kill(struct tui_acts *a, struct tui_view *v, const struct tui_model *m);
/* R: the env lease of the GPU in focus, if it is the caller's. */
void tui_release_ask(struct tui_view *v, const struct tui_model *m);
void tui_release(struct tui_acts *a, struct tui_view *v, const struct tui_model *m);
/* Enter: the selected process's details into v->info, and the overlay opened. */
void tui_info(struct tui_view *v, struct tui_model *m);

/* The pidfds to poll, and the next deadline (0: none). */
size_t tui_acts_fds(const struct tui_acts *a, struct pollfd *fds, size_t max);
double tui_acts_deadline(const struct tui_acts *a);
/* After a poll, at v->now: ends what ended, escalates or gives up what is due. true when a
 * process ended (a refresh shows the difference). */
bool tui_acts_step(struct tui_acts *a, struct tui_view *v);
/* On quitting: what is still under way, on stderr (a SIGKILL that will not follow, a holder not
 * yet ended): the screen that would have said so is gone. */
void tui_acts_report(const struct tui_acts *a);
void tui_acts_free(struct tui_acts *a);

#endif
