/* cache.c: a copy of every record of the user's jobs directory in one file, DIR/.cache/records,
 * so that `jobs` with a thousand records makes a handful of system calls, not three thousand
 * (issue 22: the opens, reads and closes were half its time).
 *
 * Why a copy can be trusted. Every record is written by renaming a new file over it and removed
 * by unlinking it (dir.c, the runner), and each of these sets the directory's change time
 * (ctime, which no user can set back, unlike mtime). A copy names the ctime the directory had
 * when its records were read; a reader that finds the same ctime (and the same device and inode)
 * knows no record was written or removed since. What makes that sound is the order in which the
 * copy is made, as in git's "racy git" rule: the copy's temporary file is created first, and
 * its own ctime taken (the file system's clock, the NFS server's on NFS, never ours); then the
 * directory's ctime; then the records are read. A change after that stat is stamped no earlier
 * than the temporary file, so a copy is kept only when the temporary file's ctime is strictly
 * later than the directory's: any later change then shows as a ctime the copy does not name.
 * When the two fall in one tick of the file system's clock, the copy is dropped and the next
 * reader makes one. Each entry also names the inode its record's directory entry had, and a
 * reader checks it against readdir's: a copy that disagrees (a file system whose inode numbers
 * are not stable, a change its ctime missed) is removed and the files read instead. That is no
 * guard against a clock set back (ext4 gives a record rewritten twice its first inode again):
 * a copy does not outlive the boot (the NTP step after a boot with a wrong clock), and within
 * one boot a change stamped, after the clock went back, with the very time a copy names (on a
 * file system with 1 or 2 s timestamps: in that second) goes unseen until the next change.
 *
 * What it does not see: a record edited in place (not renamed over) by hand. gpuctl never
 * writes one so, and `rm DIR/.cache/records` (or any record written since) makes a new copy.
 * Only the per-host jobs directory has a copy: the Slurm records' directory is shared between
 * hosts, whose NFS clients keep directory attributes for up to a minute.
 *
 * The file: "gpuctl-records 1 DEV INO SEC NSEC BOOT\n", then per record in id order "ID INO LEN\n",
 * LEN bytes of the record as its file holds it, "\n". Anything else is not a copy. */
#include "jobs/cache.h"
#include "jobs/job.h"

#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CACHE_MAX (32u << 20) /* a bigger copy is not made: the files are read */
#define CACHE_FILE ".cache/records"

/* The directory's state, and the boot: a copy from before a restart is not trusted, since the
 * clock a machine boots with may be set back after (an NTP step), and a later change could then
 * land on the very time a copy names. */
void rcache_header(char *out, size_t n, const struct stat *ds)
{
	snprintf(out, n, "gpuctl-records 1 %llu %llu %lld %ld %.36s\n", (unsigned long long)ds->st_dev,
		 (unsigned long long)ds->st_ino, (long long)ds->st_ctim.tv_sec, ds->st_ctim.tv_nsec,
		 job_boot_id());
}

/* A decimal number ending at end (a space or newline) within [*p, lim): strict, no sign. */
static bool number(const char **p, const char *lim, char end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	if (s >= lim || *s < '0' || *s > '9')
		return false;
	for (; s < lim && *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');
		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	if (s >= lim || *s != end)
		return false;
	*p = s + 1;
	*v = x;
	return true;
}

bool rcache_parse(struct rcache *c, const struct stat *ds)
{
	char want[RCACHE_HEADER_MAX];
	rcache_header(want, sizeof want, ds);
	size_t hl = strlen(want), cap = 0;
	if (c->len < hl || memcmp(c->buf, want, hl))
		return false;
	const char *p = c->buf + hl, *lim = c->buf + c->len;
	while (p < lim) {
		uint64_t id, ino, len;
		if (!number(&p, lim, ' ', &id) || !number(&p, lim, ' ', &ino) ||
		    !number(&p, lim, '\n', &len) || len >= (uint64_t)(lim - p) || p[len] != '\n' ||
		    (c->n && c->e[c->n - 1].id >= id))
			return false;
		c->e = grow_array(c->e, &cap, c->n + 1, sizeof *c->e);
		c->e[c->n++] = (struct rentry){id, ino, (size_t)(p - c->buf), (size_t)len};
		p += len + 1;
	}
	return true;
}

bool rcache_load(struct rcache *c, int dirfd, const struct stat *ds)
{
	*c = (struct rcache){0};
	/* neither component followed if it is a link: the copy is the directory's own */
	int cfd = openat(dirfd, ".cache", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int fd = cfd < 0 ? -1 : openat(cfd, "records", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (cfd >= 0)
		close(cfd);
	if (fd < 0)
		return false;
	/* the directory is the user's own and private (dir.c): so is what is in it, but a copy
	 * must be a plain file of theirs all the same */
	char want[RCACHE_HEADER_MAX], got[RCACHE_HEADER_MAX];
	rcache_header(want, sizeof want, ds);
	size_t hl = strlen(want);
	/* its header first: a copy of another state (the directory changed since) is not read
	 * whole only to be thrown away */
	bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ds->st_uid &&
		  st.st_size > 0 && (uint64_t)st.st_size <= CACHE_MAX &&
		  pread(fd, got, hl, 0) == (ssize_t)hl && !memcmp(got, want, hl);
	if (ok) {
		c->buf = xmalloc((size_t)st.st_size + 1);
		mem_prefault(c->buf, (size_t)st.st_size);
		while (c->len < (size_t)st.st_size) {
			ssize_t r = read(fd, c->buf + c->len, (size_t)st.st_size - c->len);
			if (r <= 0)
				break;
			c->len += (size_t)r;
		}
		ok = c->len == (size_t)st.st_size;
		c->buf[c->len] = '\0';
	}
	close(fd);
	if (!(ok && rcache_parse(c, ds))) {
		rcache_free(c);
		return false;
	}
	return true;
}

bool rcache_find(struct rcache *c, uint64_t id, uint64_t ino, const char **rec, size_t *len)
{
	while (c->next < c->n && c->e[c->next].id < id)
		c->next++;
	if (c->next >= c->n || c->e[c->next].id != id || c->e[c->next].ino != ino)
		return false;
	*rec = c->buf + c->e[c->next].off;
	*len = c->e[c->next].len;
	return true;
}

void rcache_free(struct rcache *c)
{
	free(c->buf);
	free(c->e);
	*c = (struct rcache){0};
}

void rcache_drop(int dirfd)
{
	unlinkat(dirfd, CACHE_FILE, 0);
}

bool rcache_begin(struct rcache_new *w, int dirfd)
{
	struct stat ds, cs, ts;
	*w = (struct rcache_new){.cfd = -1, .fd = -1};
	if ((mkdirat(dirfd, ".cache", 0700) != 0 && errno != EEXIST) || fstat(dirfd, &ds) != 0)
		return false;
	w->cfd = openat(dirfd, ".cache", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (w->cfd < 0 || fstat(w->cfd, &cs) != 0 || cs.st_uid != ds.st_uid || (cs.st_mode & 077)) {
		rcache_abandon(w);
		return false;
	}
	/* each maker its own temporary file: two `jobs` at once each make a copy, and the later
	 * rename wins (a copy of an older state is then simply not used) */
	snprintf(w->tmp, sizeof w->tmp, ".records.%ld.tmp", (long)getpid());
	w->fd = openat(w->cfd, w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w->fd < 0 && errno == EEXIST && unlinkat(w->cfd, w->tmp, 0) == 0) /* a dead maker's */
		w->fd = openat(w->cfd, w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w->fd < 0 || fstat(w->fd, &ts) != 0) {
		rcache_abandon(w);
		return false;
	}
	w->made = ts.st_ctim;
	return true;
}

void rcache_add(struct rcache_new *w, uint64_t id, uint64_t ino, const char *rec, size_t len)
{
	char line[72];
	int hl = snprintf(line, sizeof line, "%llu %llu %zu\n", (unsigned long long)id,
			  (unsigned long long)ino, len);
	if (w->failed || w->len + (size_t)hl + len + 1 > CACHE_MAX - RCACHE_HEADER_MAX) {
		w->failed = true;
		return;
	}
	if (w->len + (size_t)hl + len + 1 > w->cap) {
		w->cap = w->cap ? w->cap : 64 << 10;
		while (w->cap < w->len + (size_t)hl + len + 1)
			w->cap *= 2;
		w->buf = xrealloc(w->buf, w->cap);
	}
	memcpy(w->buf + w->len, line, (size_t)hl);
	memcpy(w->buf + w->len + hl, rec, len);
	w->buf[w->len + (size_t)hl + len] = '\n';
	w->len += (size_t)hl + len + 1;
}

static bool later(struct timespec a, struct timespec b)
{
	return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

void rcache_commit(struct rcache_new *w, const struct stat *ds)
{
	char h[RCACHE_HEADER_MAX];
	rcache_header(h, sizeof h, ds);
	/* racy (one tick of the clock holds the directory's last change and the copy's making),
	 * too big, or a record that could not be read: no copy */
	bool ok = !w->failed && later(w->made, ds->st_ctim) &&
		  write_all(w->fd, h, strlen(h)) && write_all(w->fd, w->buf, w->len);
	ok &= close(w->fd) == 0;
	w->fd = -1;
	if (!ok || renameat(w->cfd, w->tmp, w->cfd, "records") != 0)
		unlinkat(w->cfd, w->tmp, 0);
	w->tmp[0] = '\0';
	rcache_abandon(w);
}

void rcache_abandon(struct rcache_new *w)
{
	if (w->fd >= 0)
		close(w->fd);
	if (w->cfd >= 0 && w->tmp[0])
		unlinkat(w->cfd, w->tmp, 0);
	if (w->cfd >= 0)
		close(w->cfd);
	free(w->buf);
	*w = (struct rcache_new){.cfd = -1, .fd = -1};
}
