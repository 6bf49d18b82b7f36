/* statedir.c: the daemon's state directory and the files in it (design: daemon.h; the lease
 * table is lease.c's, what a starting daemon recovers of the files recover.c's).
 *
 * Files in the state directory (mode 0700, the daemon's alone; every file 0600, so a descriptor
 * a client holds cannot be reopened through /proc/PID/fd either):
 *   GPU-<uuid>.lock   a fresh inode per lease, flock'ed LOCK_EX, opened read-only, handed over;
 *                     it says whose lease it is (lock_content); retired when the lease ends
 *   lease-<id>.fifo   the lease's FIFO: the client gets the write end, the daemon keeps the read
 *   lease-<id>        the record (proto.h format): who holds what, for `list` after a restart
 *   daemon.lock       one daemon per state directory
 * A fresh lock inode per lease means a process that kept an old lock descriptor after its lease
 * ended holds nothing that matters; the current file is always the current lease's. */
#include "daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

void lease_random_hex(char *out, size_t bytes)
{
	unsigned char b[32];
	if (bytes > sizeof b)
		bytes = sizeof b;
	if (getrandom(b, bytes, 0) != (ssize_t)bytes)
		die(EXIT_FAIL, "getrandom: %s", strerror(errno));
	for (size_t i = 0; i < bytes; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

void lease_lock_name(const struct slot *s, char *buf, size_t n, const char *suffix)
{
	/* UUIDs come from NVML; keep the name to a safe alphabet all the same. */
	char safe[96];
	size_t k = 0;
	for (const char *p = s->uuid; *p && k + 1 < sizeof safe; p++)
		safe[k++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			    (*p >= '0' && *p <= '9') || *p == '-' ? *p : '_';
	safe[k] = '\0';
	snprintf(buf, n, "%s.lock%s", safe, suffix);
}

static bool check_private(int fd, const char *what, struct gpu_error *err)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "%s must be a directory owned by the daemon's user "
			 "(uid %u) that nobody else can write; it is owned by uid %u with mode %04o. Fix or "
			 "remove it", what, (unsigned)geteuid(), (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777));
		return false;
	}
	return true;
}

static bool open_dir(struct daemon *d, struct gpu_error *err)
{
	if (mkdir(d->state_dir, 0700) != 0 && errno != EEXIST) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "cannot create the state directory %s: %s",
			 d->state_dir, strerror(errno));
		return false;
	}
	int fd = open(d->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "cannot open the state directory %s: %s",
			 d->state_dir, strerror(errno));
		return false;
	}
	if (!check_private(fd, d->state_dir, err)) {
		close(fd);
		return false;
	}
	if (d->dirfd >= 0)
		close(d->dirfd);
	d->dirfd = fd;
	return true;
}

bool lease_state_dir_open(struct daemon *d, struct gpu_error *err)
{
	if (!open_dir(d, err))
		return false;
	/* A socket served before whose state directory holds no daemon.lock: the state was removed
	 * (a wipe, a cleaner) while its leases' jobs may still run: recover.c looks at the GPUs. */
	/* STATE/lost: written while leases found that way live, so a restart meanwhile still
	 * trusts NVML about them (found leases have no records). */
	d->state_lost = (d->socket_used && faccessat(d->dirfd, "daemon.lock", F_OK, 0) != 0) ||
			faccessat(d->dirfd, "lost", F_OK, 0) == 0;
	d->lockfd = openat(d->dirfd, "daemon.lock", O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (d->lockfd < 0 || flock(d->lockfd, LOCK_EX | LOCK_NB) != 0) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "another gpuctl daemon already serves %s (%s)",
			 d->state_dir, d->lockfd < 0 ? strerror(errno) : "daemon.lock is locked");
		return false;
	}
	return true;
}

static bool record_write(struct daemon *d, const struct lease *l);

/* Someone (root, or a tmpfs cleaner) removed the state directory under us. The leases live on
 * in memory and in the kernel: make the directory again and write their records back, so the
 * next daemon still finds them (their lock files and FIFOs cannot be brought back). */
static bool ensure_dir(struct daemon *d)
{
	struct stat st;
	if (d->dirfd >= 0 && fstat(d->dirfd, &st) == 0 && st.st_nlink > 0)
		return true;
	struct gpu_error err = {0};
	fprintf(stderr, "gpuctl daemon: the state directory %s was removed; making it again\n",
		d->state_dir);
	if (!open_dir(d, &err)) {
		fprintf(stderr, "gpuctl daemon: %s\n", err.msg);
		return false;
	}
	if (d->lockfd >= 0)
		close(d->lockfd);
	d->lockfd = openat(d->dirfd, "daemon.lock", O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (d->lockfd >= 0)
		flock(d->lockfd, LOCK_EX | LOCK_NB);
	for (size_t i = 0; i < d->nleases; i++)
		if (!d->leases[i]->found)
			record_write(d, d->leases[i]);
	d->queue_dirty = true;
	return true;
}

/* Writes name in the state directory atomically (a temporary file, then rename). */
static bool write_state(struct daemon *d, const char *name, const char *buf, size_t len)
{
	if (!ensure_dir(d))
		return false;
	char tmp[128];
	snprintf(tmp, sizeof tmp, "%s.tmp", name);
	int fd = openat(d->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	ssize_t n = fd >= 0 ? write(fd, buf, len) : -1;
	if (n >= 0 && n < (ssize_t)len)
		errno = ENOSPC; /* a short write: the file system is full */
	bool ok = n == (ssize_t)len;
	if (fd >= 0 && close(fd) != 0)
		ok = false;
	ok = ok && renameat(d->dirfd, tmp, d->dirfd, name) == 0;
	/* Not only logged: `leases` tells the users that what they see would not survive a
	 * restart (the queue's order, the lease records), until a write works again. */
	if (!ok) {
		snprintf(d->state_error, sizeof d->state_error, "cannot write %.120s/%.40s: %s",
			 d->state_dir, name, strerror(errno));
		snprintf(d->state_error_file, sizeof d->state_error_file, "%.40s", name);
		fprintf(stderr, "gpuctl daemon: %s\n", d->state_error);
		unlinkat(d->dirfd, tmp, 0);
	} else if (!strcmp(d->state_error_file, name)) {
		d->state_error[0] = d->state_error_file[0] = '\0';
	}
	return ok;
}

bool daemon_write_state(struct daemon *d, const char *name, const char *buf, size_t len)
{
	return write_state(d, name, buf, len);
}

bool lease_state_dir_check(struct daemon *d)
{
	return ensure_dir(d);
}

static bool record_write(struct daemon *d, const struct lease *l)
{
	struct strbuf sb = {0};
	msg_begin(&sb, "lease");
	msg_add(&sb, "id", l->id, NULL);
	msg_add(&sb, "token", l->token, NULL);
	msg_add_u64(&sb, "uid", l->uid);
	msg_add_u64(&sb, "pid", (uint64_t)l->pid);
	msg_add_u64(&sb, "start", l->start);
	msg_add_u64(&sb, "bound", (uint64_t)l->bound);
	if (l->bound_start)
		msg_add_u64(&sb, "bound_start", l->bound_start);
	msg_add(&sb, "kind", l->kind, NULL);
	msg_add_i64(&sb, "since", (int64_t)l->since);
	if (l->seq)
		msg_add_u64(&sb, "seq", l->seq);
	if (l->name)
		msg_add(&sb, "name", l->name, NULL);
	if (l->command)
		msg_add(&sb, "command", l->command, NULL);
	if (l->until_ns) /* time limits (issue 24) */
		msg_add_u64(&sb, "until", l->until_ns);
	if (l->mem_mib)
		msg_add_u64(&sb, "mem", l->mem_mib);
	if (l->mig)
		msg_add_u64(&sb, "mig", (uint64_t)l->mig);
	if (l->mig_uuid[0]) /* (a restart finds the instance by it: mig_recover) */
		msg_add(&sb, "mig_uuid", l->mig_uuid, NULL);
	for (size_t i = 0; i < d->nslots; i++)
		if (l->gpus >> i & 1)
			msg_add(&sb, "gpu", d->slots[i].uuid, NULL);
	char name[64];
	snprintf(name, sizeof name, "lease-%s", l->id);
	bool ok = write_state(d, name, sb.buf, sb.len);
	sb_free(&sb);
	return ok;
}

/* review 4b: recover.c's way to rewrite a recovered lease's record. */
bool lease_record_save(struct daemon *d, const struct lease *l)
{
	return record_write(d, l);
}
