/* pid.c: one process by pid, and user names (see pid.h). */
#include "machine/pid.h"
#include "base/util.h"

#include <errno.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

bool pid_stat(unsigned pid, struct pid_stat *st)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%u/stat", pid);
	char *text = read_file(path, NULL);
	/* The command name in parentheses may hold anything, ')' included: parse after the last. */
	const char *p = text ? strrchr(text, ')') : NULL;
	unsigned long long utime, stime;
	bool ok = p && sscanf(p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d "
				    "%*d %*d %*d %llu %*u %lu", &st->state, &st->ppid, &utime, &stime,
			      &st->start, &st->rss) == 6;
	if (ok)
		st->cpu = utime + stime;
	free(text);
	return ok;
}

bool pid_getenv(unsigned pid, const char *const *names, char **values, size_t n, char *msg,
		size_t msglen)
{
	char path[64];
	size_t len;
	for (size_t k = 0; k < n; k++)
		values[k] = NULL;
	snprintf(path, sizeof path, "/proc/%u/environ", pid);
	char *buf = read_file(path, &len);
	if (!buf) {
		int e = errno;
		struct stat st;
		snprintf(path, sizeof path, "/proc/%u", pid);
		if (e == ENOENT || stat(path, &st) != 0) {
			snprintf(msg, msglen, "no process %u (it has exited, or lives in another PID "
					      "namespace)", pid);
		} else {
			char name[64];
			snprintf(msg, msglen, "cannot read the environment of process %u (owned by %s): "
					      "%s; run as that user or as root", pid,
				 user_name(st.st_uid, name, sizeof name), strerror(e));
		}
		return false;
	}
	for (size_t off = 0; off < len; off += strlen(buf + off) + 1) {
		const char *kv = buf + off, *eq = NULL;
		/* Most of an environment is other variables: one byte tells for most of them. */
		for (size_t k = 0; k < n && !eq; k++)
			if (kv[0] == names[k][0])
				eq = strchr(kv, '=');
		for (size_t k = 0; eq && k < n; k++)
			if (strlen(names[k]) == (size_t)(eq - kv) && !strncmp(kv, names[k], (size_t)(eq - kv))) {
				free(values[k]);
				values[k] = xstrdup(eq + 1);
			}
	}
	free(buf);
	return true;
}

bool pid_comm(unsigned pid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%u/comm", pid);
	char *comm = read_file(path, NULL);
	if (comm)
		snprintf(buf, len, "%.*s", (int)strcspn(comm, "\n"), comm);
	free(comm);
	return comm != NULL;
}

/* The real uid (/proc/PID/status, readable whoever owns the process); false when it is gone. */
static bool real_uid(unsigned pid, unsigned long *uid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%u/status", pid);
	char *text = read_file(path, NULL);
	const char *u = text ? strstr(text, "\nUid:") : NULL;
	bool ok = u && sscanf(u + 5, "%lu", uid) == 1;
	free(text);
	return ok;
}

int pid_is_fork_of(unsigned pid, unsigned parent)
{
	char path[64], comm[32], pcomm[32];
	unsigned long uid, puid;
	if (!pid_comm(pid, comm, sizeof comm) || !pid_comm(parent, pcomm, sizeof pcomm) ||
	    strcmp(comm, pcomm))
		return 0;
	/* A subshell is its shell's user: a shell of another user's (a user's bash started by
	 * root's through setpriv or runuser, which exec it) is no copy, though its map cannot be read. */
	if (real_uid(pid, &uid) && real_uid(parent, &puid) && uid != puid)
		return 0;
	int r = -1;
	/* The kernel keeps the auxiliary vector exec built in the process's memory map, which fork
	 * copies: equal vectors (the stack and AT_RANDOM addresses differ between two execs) mean
	 * pid has run nothing since it was forked from parent. */
	size_t n, pn;
	snprintf(path, sizeof path, "/proc/%u/auxv", pid);
	char *aux = read_file(path, &n);
	snprintf(path, sizeof path, "/proc/%u/auxv", parent);
	char *paux = read_file(path, &pn);
	if (aux && paux && n)
		r = n == pn && !memcmp(aux, paux, n);
	free(aux);
	free(paux);
	return r;
}

/* pidfd_open(2) itself. EPERM is no answer of its own (it fails only with EINVAL, EMFILE,
 * ENFILE, ENODEV, ENOMEM and ESRCH): it is a seccomp filter that predates pidfds refusing them
 * (an old container runtime's profile, Docker's before 20.10 for one), and then pidfds are not
 * there for gpuctl, as on a kernel without them: ENOSYS, and every caller's fallback holds. Read
 * as a gone process, `kill` said a live one was "already gone" and the runner's jobs ran on
 * forever in `jobs`. */
static int pidfd_open_here(unsigned pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0 && errno == EPERM)
		errno = ENOSYS;
	return fd;
}

int pid_open(unsigned pid, unsigned long long start)
{
	struct pid_stat st;
	int fd = pidfd_open_here(pid);
	/* Checked after opening: a pidfd stays on the process it was opened on, so a match now
	 * means this fd can never signal a successor. */
	if (fd >= 0 && start && (!pid_stat(pid, &st) || st.start != start)) {
		close(fd);
		fd = -1;
		errno = ESRCH;
	}
	return fd;
}

bool pid_owner_is(unsigned pid, uid_t uid)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%u", pid);
	return stat(path, &st) == 0 && st.st_uid == uid;
}

bool pid_runs_as(unsigned pid, uid_t uid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%u/status", pid);
	char *text = read_file(path, NULL);
	const char *u = text ? strstr(text, "\nUid:") : NULL;
	unsigned real, eff;
	bool ok = u && sscanf(u + 5, "%u %u", &real, &eff) == 2 && (real == uid || eff == uid);
	free(text);
	return ok;
}

bool pid_pidfds(void)
{
	int fd = pidfd_open_here((unsigned)getpid());
	if (fd < 0)
		return errno != ENOSYS;
	close(fd);
	return true;
}

bool pid_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) == 0;
}

/* The names of the uids asked for lately, for NAME_TTL seconds: a watch loop or top named the
 * holder of each lease again at every refresh, and each getpwuid_r opened /etc/passwd and asked
 * systemd's and LDAP's modules (over half a loop's CPU, issue 22). A user renamed shows within
 * NAME_TTL; a uid the directory did not name (its number stands in) is asked again after
 * NAME_TTL_MISS (pid.h). Locked: the exporter's threads ask too. */
#define NAME_SLOTS 64
static struct name_slot {
	uid_t uid;
	double at;              /* now_mono() when looked up; 0: empty */
	bool miss;              /* no name had (its number stands in), or the directory failed:
				 * kept NAME_TTL_MISS */
	char name[64];
} names[NAME_SLOTS];
static size_t name_next;
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

static bool name_live(const struct name_slot *n, double now)
{
	return n->at > 0 && now - n->at < (n->miss ? NAME_TTL_MISS : NAME_TTL);
}

/* name (shorter than a slot's room) kept as uid's from now: in uid's slot, else the next in turn.
 * A seed (user_name_seed) only fills a gap: never over a name still kept (the caller's own
 * lookup stands for its NAME_TTL), nor in a slot another uid's kept name holds (more owners
 * than slots would otherwise push out every name at each refresh). */
static void name_keep(uid_t uid, const char *name, bool miss, double now, bool seed)
{
	pthread_mutex_lock(&names_lock);
	struct name_slot *slot = NULL;
	for (size_t i = 0; i < NAME_SLOTS && !slot; i++)
		if (names[i].at > 0 && names[i].uid == uid)
			slot = &names[i];
	if (slot && seed && name_live(slot, now)) {
		slot = NULL;
	} else if (!slot && seed) {
		for (size_t i = 0; i < NAME_SLOTS && !slot; i++)
			if (!name_live(&names[i], now))
				slot = &names[i];
	} else if (!slot) {
		slot = &names[name_next++ % NAME_SLOTS];
	}
	if (!slot) {
		pthread_mutex_unlock(&names_lock);
		return;
	}
	*slot = (struct name_slot){.uid = uid, .at = now, .miss = miss};
	memcpy(slot->name, name, strlen(name) + 1);
	pthread_mutex_unlock(&names_lock);
}

bool user_name_missed(uid_t uid, const char *name)
{
	char num[16];
	snprintf(num, sizeof num, "%u", (unsigned)uid);
	return !strcmp(name, num);
}

/* The name kept last for uid, however old (not its number, which stood in): true and in buf. */
static bool last_name(uid_t uid, char *buf, size_t len)
{
	bool got = false;
	pthread_mutex_lock(&names_lock);
	for (size_t i = 0; i < NAME_SLOTS && !got; i++)
		if (names[i].at > 0 && names[i].uid == uid && !user_name_missed(uid, names[i].name)) {
			snprintf(buf, len, "%s", names[i].name);
			got = true;
		}
	pthread_mutex_unlock(&names_lock);
	return got;
}

/* The directory asked now, unlocked (a slow directory service holds up only this caller), and
 * its answer kept: 1 named; 0 not named (the number in buf); -1 the directory failed: the name
 * kept last stands, or the number, kept as a miss so that it is asked again soon (an LDAP blip
 * is no rename: the exporter's user labels and the daemon's view stay as they were). */
static int ask_directory(uid_t uid, char *buf, size_t len, double now)
{
	static int failing;   /* said once an outage, again after an answer (threads: atomic) */
	char small[4096], *pwbuf = small, *big = NULL;
	size_t cap = sizeof small;
	struct passwd pw, *res = NULL;
	int rc;
	/* ERANGE: an entry longer than the buffer (many groups' worth of gecos): a bigger one */
	while ((rc = getpwuid_r(uid, &pw, pwbuf, cap, &res)) == ERANGE && cap < (1u << 20)) {
		cap *= 4;
		free(big);
		pwbuf = big = xmalloc(cap);
	}
	char name[64];
	if (rc == 0 && res) {
		__atomic_store_n(&failing, 0, __ATOMIC_RELAXED);
		/* a name too long for a slot is not kept (a cut name would be a wrong one) */
		if (strlen(res->pw_name) < sizeof names[0].name)
			name_keep(uid, res->pw_name, false, now, false);
		snprintf(buf, len, "%s", res->pw_name);
		free(big);
		return 1;
	}
	/* glibc: no such user is 0 and no result; anything else is the directory failing (nslcd
	 * unreachable says ENOENT): the name kept last stands */
	if (rc == 0 || !last_name(uid, name, sizeof name))
		snprintf(name, sizeof name, "%u", (unsigned)uid);
	if (rc != 0 && !__atomic_exchange_n(&failing, 1, __ATOMIC_RELAXED))
		warn("the user directory (NSS) failed for uid %u: %s; users are named as last known, "
		     "or by number, until it answers", (unsigned)uid, strerror(rc));
	name_keep(uid, name, true, now, false);
	snprintf(buf, len, "%s", name);
	free(big);
	return rc == 0 ? 0 : -1;
}

const char *user_name(uid_t uid, char *buf, size_t len)
{
	double now = now_mono();
	bool hit = false;
	pthread_mutex_lock(&names_lock);
	for (size_t i = 0; i < NAME_SLOTS && !hit; i++)
		if (names[i].uid == uid && name_live(&names[i], now)) {
			snprintf(buf, len, "%s", names[i].name);
			hit = true;
		}
	pthread_mutex_unlock(&names_lock);
	if (hit)
		return buf;
	ask_directory(uid, buf, len, now);
	return buf;
}

int user_name_ask(uid_t uid, char *buf, size_t len)
{
	return ask_directory(uid, buf, len, now_mono());
}

void user_name_seed(uid_t uid, const char *name)
{
	size_t n = strlen(name);
	if (n && n < sizeof names[0].name)   /* as user_name: a cut name would be a wrong one */
		name_keep(uid, name, user_name_missed(uid, name), now_mono(), true);
}

bool user_uid(const char *name, uid_t *uid)
{
	char pwbuf[4096];
	struct passwd pw, *res = NULL;
	unsigned long n;
	if (getpwnam_r(name, &pw, pwbuf, sizeof pwbuf, &res) == 0 && res)
		*uid = res->pw_uid;
	else if (parse_uint(name, &n) && n < (uid_t)-1)
		*uid = (uid_t)n;
	else
		return false;
	return true;
}
