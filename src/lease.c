/* lease.c: per-GPU flock leases, their records, and liveness from /proc/locks.
 *
 * Why it is safe: flock on a file that is never unlinked is held by the kernel for exactly as long
 * as some process holds the open file, so crashes release it and two holders cannot coexist. The
 * one way around that is to replace the file: its owner can unlink it (the directory is sticky, so
 * nobody else can) and a newcomer would lock a fresh inode. Two checks close it: after locking, the
 * inode must still be the one at the path, and no live record may claim the GPU with another inode
 * that /proc/locks still shows locked. */
#include "lease.h"
#include "pid.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static bool ensure_dir(const char *dir, struct gpu_error *err)
{
	struct stat st;
	if (mkdir(dir, 01777) == 0) {
		/* umask trimmed the mode: every user must be able to create lock files here. */
		chmod(dir, 01777);
		return true;
	}
	if (errno == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return true;
	err->code = EXIT_FAIL;
	snprintf(err->msg, sizeof err->msg,
		 "cannot create the lease directory %s: %s (set GPUCTL_STATE_DIR or state_dir in "
		 "/etc/gpuctl.conf to a directory shared by all users)", dir, strerror(errno));
	return false;
}

bool state_open(struct state *st, const char *dir, struct gpu_error *err)
{
	st->dir = xstrdup(dir);
	st->global_fd = -1;
	char *q = xasprintf("%s/queue", dir), *u = xasprintf("%s/usage", dir);
	bool ok = ensure_dir(dir, err) && ensure_dir(q, err) && ensure_dir(u, err);
	free(q);
	free(u);
	return ok;
}

void state_close(struct state *st)
{
	state_unlock(st);
	free(st->dir);
	st->dir = NULL;
}

/* open+flock with the inode check: a file replaced between open and flock is tried again. */
static int lock_path(const char *path, int how, struct gpu_error *err)
{
	for (int tries = 0; tries < 8; tries++) {
		int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0)
			fchmod(fd, 0644); /* whatever the umask: every user must be able to open it */
		if (fd < 0 && errno == EACCES)
			fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC); /* flock needs no write access */
		if (fd < 0) {
			err->code = EXIT_FAIL;
			snprintf(err->msg, sizeof err->msg, "cannot open %s: %s", path, strerror(errno));
			return -1;
		}
		if (flock(fd, how) != 0) {
			int e = errno;
			close(fd);
			if (e == EINTR && !(how & LOCK_NB))
				continue;
			errno = e;
			return -2;
		}
		struct stat a, b;
		if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return fd;
		close(fd);
	}
	err->code = EXIT_FAIL;
	snprintf(err->msg, sizeof err->msg, "%s keeps being replaced; is someone removing it?", path);
	return -1;
}

bool state_lock(struct state *st, bool exclusive, struct gpu_error *err)
{
	char *path = xasprintf("%s/global.lock", st->dir);
	st->global_fd = lock_path(path, exclusive ? LOCK_EX : LOCK_SH, err);
	free(path);
	return st->global_fd >= 0;
}

void state_unlock(struct state *st)
{
	if (st->global_fd >= 0)
		close(st->global_fd);
	st->global_fd = -1;
}

/* ---- /proc/locks ---- */

void lockset_load(struct lockset *ls, const struct state *st)
{
	size_t cap = 0;
	*ls = (struct lockset){0};
	char *text = read_file("/proc/locks", NULL);
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		/* "1: FLOCK  ADVISORY  WRITE 1234 fe:00:10952770 0 EOF"; "1: -> FLOCK ..." waits. */
		char type[16], dev[64];
		unsigned maj, min;
		unsigned long ino;
		if (strstr(line, "->") || sscanf(line, "%*s %15s %*s %*s %*d %63s", type, dev) != 2 ||
		    strcmp(type, "FLOCK") || sscanf(dev, "%x:%x:%lu", &maj, &min, &ino) != 3)
			continue;
		ls->keys = grow_array(ls->keys, &cap, ls->n + 1, sizeof *ls->keys);
		ls->keys[ls->n++] = (struct lockkey){maj, min, ino};
	}
	free(text);
	/* Trust /proc/locks only if it shows the global lock we hold (overlayfs may name the inode
	 * differently from stat). */
	struct stat sb;
	if (st && st->global_fd >= 0 && fstat(st->global_fd, &sb) == 0)
		ls->usable = lockset_has(&(struct lockset){ls->keys, ls->n, true}, sb.st_dev, sb.st_ino);
}

void lockset_free(struct lockset *ls)
{
	free(ls->keys);
	*ls = (struct lockset){0};
}

bool lockset_has(const struct lockset *ls, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < ls->n; i++)
		if (ls->keys[i].major == major(dev) && ls->keys[i].minor == minor(dev) &&
		    ls->keys[i].ino == (unsigned long)ino)
			return true;
	return false;
}

/* ---- records ---- */

static bool pid_alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

static bool parse_record(const char *path, struct lease_rec *r)
{
	size_t len;
	char *text = read_file(path, &len);
	struct stat st;
	if (!text || stat(path, &st) != 0) {
		free(text);
		return false;
	}
	memset(r, 0, sizeof *r);
	r->uid = st.st_uid;
	user_name(st.st_uid, r->user, sizeof r->user);
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		const char *k = line, *v = eq + 1;
		if (!strcmp(k, "id"))
			snprintf(r->id, sizeof r->id, "%s", v);
		else if (!strcmp(k, "kind"))
			snprintf(r->kind, sizeof r->kind, "%s", v);
		else if (!strcmp(k, "pid"))
			r->pid = atoi(v);
		else if (!strcmp(k, "gpuctl_pid"))
			r->gpuctl_pid = atoi(v);
		else if (!strcmp(k, "bound_pid"))
			r->bound_pid = atoi(v);
		else if (!strcmp(k, "since"))
			r->since = (time_t)atoll(v);
		else if (!strcmp(k, "name") && !r->name)
			r->name = xstrdup(v);
		else if (!strcmp(k, "command") && !r->command)
			r->command = xstrdup(v);
		else if (!strcmp(k, "gpu") && r->nlocks < LEASE_MAX_GPUS) {
			struct lease_lock *l = &r->locks[r->nlocks];
			unsigned long long d, i;
			if (sscanf(v, "%95s %llu %llu", l->uuid, &d, &i) == 3) {
				l->dev = (dev_t)d;
				l->ino = (ino_t)i;
				l->fd = -1;
				r->nlocks++;
			}
		}
	}
	free(text);
	return r->id[0] && r->nlocks;
}

void lease_list_load(struct lease_list *l, const struct state *st, const struct lockset *ls)
{
	size_t cap = 0;
	*l = (struct lease_list){0};
	DIR *d = opendir(st->dir);
	for (struct dirent *e; d && (e = readdir(d));) {
		if (strncmp(e->d_name, "lease-", 6))
			continue;
		char *path = xasprintf("%s/%s", st->dir, e->d_name);
		l->recs = grow_array(l->recs, &cap, l->n + 1, sizeof *l->recs);
		struct lease_rec *r = &l->recs[l->n];
		if (parse_record(path, r)) {
			for (size_t i = 0; i < r->nlocks && !r->live; i++)
				r->live = ls->usable ? lockset_has(ls, r->locks[i].dev, r->locks[i].ino)
						     : pid_alive(r->pid) || pid_alive(r->gpuctl_pid);
			l->n++;
		}
		free(path);
	}
	if (d)
		closedir(d);
}

void lease_list_free(struct lease_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->recs[i].name);
		free(l->recs[i].command);
	}
	free(l->recs);
	*l = (struct lease_list){0};
}

const struct lease_rec *lease_holder(const struct lease_list *l, const char *uuid)
{
	for (size_t i = 0; i < l->n; i++)
		for (size_t j = 0; l->recs[i].live && j < l->recs[i].nlocks; j++)
			if (!strcmp(l->recs[i].locks[j].uuid, uuid))
				return &l->recs[i];
	return NULL;
}

static char *gpu_lock_path(const struct state *st, const char *uuid)
{
	return xasprintf("%s/%s.lock", st->dir, uuid);
}

bool lease_gpu_busy(const struct state *st, const char *uuid, const struct lease_list *l,
		    const struct lockset *ls)
{
	if (lease_holder(l, uuid))
		return true;
	char *path = gpu_lock_path(st, uuid);
	struct stat sb;
	bool busy = false;
	if (lstat(path, &sb) == 0) {
		if (ls->usable) {
			busy = lockset_has(ls, sb.st_dev, sb.st_ino);
		} else {
			/* Without a trustworthy /proc/locks, probe: safe under the global lock, since
			 * every acquirer takes it first. */
			int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0) {
				busy = flock(fd, LOCK_SH | LOCK_NB) != 0;
				close(fd);
			}
		}
	}
	free(path);
	return busy;
}

void lease_release(struct lease_lock *locks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (locks[i].fd >= 0) {
			close(locks[i].fd);
			locks[i].fd = -1;
		}
}

bool lease_acquire(const struct state *st, const char *const *uuids, size_t n,
		   const struct lease_list *l, struct lease_lock *out, struct gpu_error *err)
{
	for (size_t i = 0; i < n; i++)
		out[i].fd = -1;
	for (size_t i = 0; i < n; i++) {
		char *path = gpu_lock_path(st, uuids[i]);
		int fd = lock_path(path, LOCK_EX | LOCK_NB, err);
		free(path);
		if (fd >= 0 && lease_holder(l, uuids[i])) {
			/* We got the lock, yet a live lease claims the GPU: it holds another inode, so
			 * the file was replaced under its holder. Refuse: never two holders. */
			close(fd);
			fd = -2;
		}
		if (fd < 0) {
			lease_release(out, i);
			if (fd == -2) {
				err->code = EXIT_FAIL;
				snprintf(err->msg, sizeof err->msg, "GPU %s is leased", uuids[i]);
			}
			return false;
		}
		struct stat sb2;
		fstat(fd, &sb2);
		snprintf(out[i].uuid, sizeof out[i].uuid, "%s", uuids[i]);
		out[i].fd = fd;
		out[i].dev = sb2.st_dev;
		out[i].ino = sb2.st_ino;
	}
	return true;
}

void lease_new_id(char id[40])
{
	unsigned char b[8];
	if (getrandom(b, sizeof b, 0) != sizeof b) {
		unsigned long long t = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 32);
		memcpy(b, &t, sizeof b);
	}
	for (int i = 0; i < 8; i++)
		snprintf(id + 2 * i, 3, "%02x", b[i]);
}

bool lease_record_write(const struct state *st, struct lease_rec *r, struct gpu_error *err)
{
	if (!r->id[0])
		lease_new_id(r->id);
	struct strbuf sb = {0};
	sb_addf(&sb, "id=%s\nkind=%s\npid=%d\ngpuctl_pid=%d\nbound_pid=%d\nsince=%lld\n", r->id,
		r->kind, (int)r->pid, (int)r->gpuctl_pid, (int)r->bound_pid, (long long)r->since);
	/* Newlines would split a value into forged keys: flatten them. */
	for (int k = 0; k < 2; k++) {
		const char *v = k ? r->command : r->name;
		if (!v)
			continue;
		sb_adds(&sb, k ? "command=" : "name=");
		for (const char *p = v; *p; p++)
			sb_addc(&sb, *p == '\n' ? ' ' : *p);
		sb_addc(&sb, '\n');
	}
	for (size_t i = 0; i < r->nlocks; i++)
		sb_addf(&sb, "gpu=%s %llu %llu\n", r->locks[i].uuid, (unsigned long long)r->locks[i].dev,
			(unsigned long long)r->locks[i].ino);
	char *tmp = xasprintf("%s/.tmp-%s", st->dir, r->id), *path = xasprintf("%s/lease-%s", st->dir, r->id);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	/* Readable by all whatever the umask: everyone must see who holds what. */
	bool ok = fd >= 0 && fchmod(fd, 0644) == 0 && write(fd, sb.buf, sb.len) == (ssize_t)sb.len;
	if (fd >= 0)
		close(fd);
	ok = ok && rename(tmp, path) == 0;
	if (!ok) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "cannot write the lease record %s: %s", path,
			 strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	free(path);
	sb_free(&sb);
	return ok;
}

void lease_record_remove(const struct state *st, const char *id)
{
	char *path = xasprintf("%s/lease-%s", st->dir, id);
	unlink(path);
	free(path);
}

void lease_gc(const struct state *st, const struct lease_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (!l->recs[i].live && l->recs[i].uid == getuid())
			lease_record_remove(st, l->recs[i].id);
}
