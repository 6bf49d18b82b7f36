/* pid.h: one process, by pid: its state, parent and start time (/proc/PID/stat), variables of its
 * environment as it was started (/proc/PID/environ), a pidfd on exactly that process (never on a
 * later one given the same pid), and the names of users. The one home of these facts: doctor,
 * kill, map/which --pid and the per-refresh process cache (proc.c) read them here. */
#ifndef GPUCTL_PID_H
#define GPUCTL_PID_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct pid_stat {
	char state;                  /* R, S, D, T (stopped), Z, ... */
	int ppid;
	unsigned long long start;    /* clock ticks after boot: with the pid, names the process */
	unsigned long long cpu;      /* clock ticks of CPU used, user and system */
	unsigned long rss;           /* pages resident */
};
/* false when the process is gone (or in another PID namespace). */
bool pid_stat(unsigned pid, struct pid_stat *st);

/* values[i] = the value of names[i] in the process's environment as it was started, or NULL when
 * unset (the caller frees them). false, with msg saying why and what to do, when it cannot be
 * read: gone, or another user's. */
bool pid_getenv(unsigned pid, const char *const *names, char **values, size_t n, char *msg,
		size_t msglen);

/* The process's command name (/proc/PID/comm: the program's file name, 15 bytes at most, unless
 * it renamed itself), into buf; false when it is gone. */
bool pid_comm(unsigned pid, char *buf, size_t len);
/* Whether pid is a copy of parent that has run no other program since fork (a shell's subshell):
 * 1 yes, 0 no (another command name, another user, or another program's exec), -1 cannot tell
 * (same name and user, but the memory maps of one or the other cannot be read: not dumpable). */
int pid_is_fork_of(unsigned pid, unsigned parent);

/* A pidfd on pid if it is still the process that started at `start`; -1 when it is gone or its
 * pid now names another process (errno ESRCH). start 0: whichever process has the pid now (to
 * wait for it). errno ENOSYS: there are no pidfds here (a kernel before 5.3, valgrind, or a
 * seccomp filter that refuses them); then nothing may be signalled, since a bare pid can be
 * reused (PID_NO_PIDFD says so). */
int pid_open(unsigned pid, unsigned long long start);
/* Whether pidfds work here (pidfd_open, waitid P_PIDFD: Linux 5.4 or later, and no seccomp
 * filter refusing them). */
bool pid_pidfds(void);
/* Why not, said the same by every command that needs them. */
#define PID_NONE_HERE "pidfd_open is refused here (a kernel before Linux 5.3, or a seccomp " \
	"filter older than pidfds: an old container runtime's profile)"
#define PID_NO_PIDFD PID_NONE_HERE ", and gpuctl signals a process only through a pidfd, so " \
	"that a pid reused by someone else's process is never signalled"
/* Whether /proc/PID belongs to uid (where the process list reads owners). Asked after a pidfd
 * pinned the process, it tells whether the process pinned is the one whose owner was checked:
 * with no start time to compare, a pid reused by another user's process is caught here. */
bool pid_owner_is(unsigned pid, uid_t uid);
/* Whether the process runs as uid: its real or effective uid (/proc/PID/status, readable even
 * when /proc/PID is root's because the process is not dumpable). */
bool pid_runs_as(unsigned pid, uid_t uid);
/* Signal through a pidfd: false with errno set (ESRCH: it has ended). */
bool pid_signal(int pidfd, int sig);

/* How long a user's name is kept before the directory is asked again (pid.c, and the /proc
 * cache's names, proc.c): a name a minute, so a rename shows; a uid the directory did not name
 * (its number shown), or a failed ask, 20 s, as nscd keeps a miss (a daemon started before
 * LDAP answered names its users soon after it does), not less: each is a question to the
 * directory server. */
#define NAME_TTL 60.0
#define NAME_TTL_MISS 20.0
/* The user's name, or the uid as a number when it has none; written into buf. Kept NAME_TTL
 * (NAME_TTL_MISS): a loop asks for the same few at every refresh. */
const char *user_name(uid_t uid, char *buf, size_t len);
/* The directory asked now, past the names kept (what NAME_TTL bounds: a caller with names of
 * its own asks this once they are that old), the answer kept: 1 named; 0 not named (the number
 * in buf); -1 the directory failed (the name kept last in buf, else the number: a failure is no
 * rename). */
int user_name_ask(uid_t uid, char *buf, size_t len);
/* Whether name is uid's number: what user_name says for a uid the directory did not name. */
bool user_name_missed(uid_t uid, const char *name);
/* What the daemon's view named uid (the owner of a process in it): user_name answers it for
 * NAME_TTL (its number: NAME_TTL_MISS), as if it had looked it up. A client shown the daemon's
 * view names a lease's holder as the view names the holder's processes, and makes no directory
 * lookup of its own (for a uid not in /etc/passwd, systemd's NSS module alone was 200 system
 * calls of a first view). Only where no name is kept: one this process looked up itself stands
 * for its NAME_TTL. */
void user_name_seed(uid_t uid, const char *name);
/* A user by name, or by number; false when there is no such user. */
bool user_uid(const char *name, uid_t *uid);

#endif
