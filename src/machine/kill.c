/* kill.c: the safe path for signalling a listed GPU process (see kill.h). */
#include "machine/kill.h"
#include "machine/pid.h"
#include "base/util.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const struct { const char *name; int sig; } signals[] = {
	{"TERM", SIGTERM}, {"INT", SIGINT}, {"HUP", SIGHUP}, {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
	{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"STOP", SIGSTOP}, {"CONT", SIGCONT},
};

int kill_parse_signal(const char *s)
{
	unsigned long n;
	if (parse_uint(s, &n))
		return n > 0 && n < 65 ? (int)n : -1;
	if (!strncmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
		if (!strcasecmp(s, signals[i].name))
			return signals[i].sig;
	return -1;
}

const char *kill_signal_name(int sig)
{
	for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
		if (signals[i].sig == sig)
			return signals[i].name;
	return "?";
}

bool kill_ends(int sig)
{
	return sig == SIGTERM || sig == SIGINT || sig == SIGQUIT || sig == SIGKILL;
}

void kill_target_open(struct kill_target *t, uid_t me, bool named, uid_t named_uid)
{
	t->pidfd = -1;
	if (!t->start) {
		struct pid_stat st;
		t->start = pid_stat(t->pid, &st) ? st.start : 0;
	}
	/* Root may signal another user's processes only by naming that user. */
	if (!t->uid_valid || !t->start)
		t->state = KS_HIDDEN;
	else if (t->uid != me && !(me == 0 && named && t->uid == named_uid))
		t->state = KS_REFUSED;
	else if ((t->pidfd = pid_open(t->pid, t->start)) < 0)
		t->state = errno == ENOSYS ? KS_NO_PIDFD : KS_GONE;
	else if (!pid_owner_is(t->pid, t->uid)) {
		/* The start time may be read only now (t->start 0: the pid NVML listed a moment ago), so
		 * the process pinned could be a successor that took the pid: then the owner checked
		 * above was its predecessor's, and root naming one user must not reach another's. */
		close(t->pidfd);
		t->pidfd = -1;
		t->state = KS_GONE;
	} else {
		t->state = KS_PENDING;
	}
}

bool kill_target_signal(struct kill_target *t, int sig)
{
	if (t->pidfd < 0)
		return false;
	if (pid_signal(t->pidfd, sig))
		return true;
	t->state = errno == ESRCH ? KS_GONE : KS_SURVIVED;
	return false;
}

void kill_target_close(struct kill_target *t)
{
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
}
