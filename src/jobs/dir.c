/* dir.c: the user's jobs directory (see job.h): made private (0700, the user's own, every
 * component checked), a record read by id or all of them in id order (through the copy of them
 * all, cache.c, where it is current), a record written atomically, a job's log opened; the
 * record's format is job.c's. */
#include "jobs/job.h"

#include "jobs/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define RECORD_MAX PROTO_MAX_MSG   /* a record is one message */

/* Our effective uid, asked once: every record's owner is checked against it (a thousand
 * geteuid calls were a thousand system calls per `jobs`). */
static uid_t euid(void)
{
	static uid_t u = (uid_t)-1;   /* never a process's: the kernel keeps it for "unchanged" */
	if (u == (uid_t)-1)
		u = geteuid();
	return u;
}

static bool private_dir(int fd, const char *path, struct gpu_error *err)
{
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == euid() && !(st.st_mode & 077))
		return true;
	err->code = EXIT_FAIL;
	snprintf(err->msg, sizeof err->msg, "%s is not a private directory of yours (owner, mode "
		 "0700); fix or remove it", path);
	return false;
}

/* mkdir -p with mode 0700, opening each level without following links. */
static int make_dirs(const char *path, struct gpu_error *err)
{
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char *copy = xstrdup(path), *save = NULL;
	bool ok = fd >= 0;
	for (char *part = strtok_r(copy, "/", &save); ok && part; part = strtok_r(NULL, "/", &save)) {
		if (mkdirat(fd, part, 0700) != 0 && errno != EEXIST) {
			ok = false;
			break;
		}
		int next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
		ok = fd >= 0;
	}
	if (!ok) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "cannot create the jobs directory %s: %s", path,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	free(copy);
	return fd;
}

/* $XDG_STATE_HOME/gpuctl/SUB (default ~/.local/state), made private if missing. */
static int state_dir_open(const char *sub, char **path, struct gpu_error *err)
{
	const char *x = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char *base;
	if (x && *x == '/')
		base = xstrdup(x);
	else if (home && *home == '/')
		base = xasprintf("%s/.local/state", home);
	else {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "neither XDG_STATE_HOME nor HOME names a directory "
			 "for your jobs' records; set one");
		return -1;
	}
	*path = xasprintf("%s/gpuctl/%s", base, sub);
	free(base);
	int fd = make_dirs(*path, err);
	if (fd >= 0 && !private_dir(fd, *path, err)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		free(*path);
		*path = NULL;
	}
	return fd;
}

int job_dir_open(char **path, struct gpu_error *err)
{
	char host[72] = "", sub[96];
	gethostname(host, sizeof host - 1);
	for (char *p = host; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '-' || *p == '.' || *p == '_') || (p == host && *p == '.'))
			*p = '_';
	snprintf(sub, sizeof sub, "jobs/%s", host[0] ? host : "localhost");
	return state_dir_open(sub, path, err);
}

int job_slurm_dir_open(char **path, struct gpu_error *err)
{
	return state_dir_open("slurm", path, err);
}

/* Reads the record called name (ID.job) into buf (RECORD_MAX + 1 bytes, the caller's, so a
 * directory of records is read through one buffer): its length, or -1. typed: readdir said it
 * is a regular file (d_type): no fstat, one open, read and close a record (issue 22: `jobs` with
 * 1,001 records made 4,000 system calls). The directory is the user's own and private
 * (private_dir), so what is in it is theirs; O_NONBLOCK all the same, so that a FIFO put there
 * since never blocks the read. */
static ssize_t read_raw(int dirfd, const char *name, char *buf, bool typed)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	ssize_t n = typed || (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == euid())
		    ? read(fd, buf, RECORD_MAX + 1) : -1;
	close(fd);
	errno = EINVAL;
	return n > 0 && n <= RECORD_MAX ? n : -1;
}

static bool decode(const char *buf, ssize_t n, uint64_t id, struct job *j)
{
	char why[160];
	errno = EINVAL;
	return n > 0 && job_decode(j, buf, (size_t)n, why, sizeof why) && j->id == id;
}

static bool read_record(int dirfd, const char *name, uint64_t id, struct job *j, char *buf, bool typed)
{
	return decode(buf, read_raw(dirfd, name, buf, typed), id, j);
}

bool job_read(int dirfd, uint64_t id, struct job *j)
{
	char name[40], buf[RECORD_MAX + 1];
	snprintf(name, sizeof name, "%llu.job", (unsigned long long)id);
	return read_record(dirfd, name, id, j, buf, false);
}

/* A full disk (or quota) refuses the new file a record is written to, and then a job that ended
 * stayed "running" in `jobs` (its output, beside it, is what filled the disk, as often as not).
 * The record already there has its block: the new one is written over it when it fits there.
 * Not atomic as the rename is, so only then, and only by the runner, the one writer of its
 * records (a Slurm record has several): a reader that catches it half written finds a record
 * that does not decode, and leaves it out of that one listing. The directory's ctime is
 * set after (a timestamp set needs no space), as a rename would have set it, so that no copy of
 * the records (cache.c) made before the write is trusted after it. */
static bool write_in_place(int dirfd, const char *name, const struct strbuf *sb)
{
	int fd = openat(dirfd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	bool ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		  (unsigned long long)st.st_blocks * 512 >= sb->len &&
		  pwrite(fd, sb->buf, sb->len, 0) == (ssize_t)sb->len && ftruncate(fd, (off_t)sb->len) == 0;
	if (fd >= 0 && close(fd) != 0)
		ok = false;
	const struct timespec now[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_NOW}};
	return ok && futimens(dirfd, now) == 0;
}

bool job_write(int dirfd, const struct job *j, struct gpu_error *err)
{
	return job_write_how(dirfd, j, false, err);
}

bool job_write_how(int dirfd, const struct job *j, bool in_place, struct gpu_error *err)
{
	char name[40], tmp[64];
	struct strbuf sb = {0};
	job_encode(j, &sb);
	snprintf(name, sizeof name, "%llu.job", (unsigned long long)j->id);
	/* Each writer its own temporary file: a Slurm job's record is written by whichever gpuctl
	 * saw it change (two at once: `jobs` and `wait`), and two writers of one file interleave. */
	snprintf(tmp, sizeof tmp, ".%s.%ld.tmp", name, (long)getpid());
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST && unlinkat(dirfd, tmp, 0) == 0) /* a dead writer's, same pid */
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	bool ok = fd >= 0 && sb.len <= RECORD_MAX && write(fd, sb.buf, sb.len) == (ssize_t)sb.len;
	int e = errno;
	if (fd >= 0 && close(fd) != 0 && ok) {
		ok = false;
		e = errno;
	}
	if (ok && renameat(dirfd, tmp, dirfd, name) != 0) {
		ok = false;
		e = errno;
	}
	if (!ok && fd >= 0)
		unlinkat(dirfd, tmp, 0);
	if (!ok && in_place && (e == ENOSPC || e == EDQUOT) && sb.len <= RECORD_MAX &&
	    write_in_place(dirfd, name, &sb))
		ok = true;
	if (!ok) {
		err->code = EXIT_FAIL;
		snprintf(err->msg, sizeof err->msg, "cannot write the record of job %llu: %s",
			 (unsigned long long)j->id, sb.len > RECORD_MAX ? "it is too long" : strerror(e));
	}
	sb_free(&sb);
	errno = ok ? 0 : sb.len > RECORD_MAX ? E2BIG : e;
	return ok;
}

struct id_ix {
	uint64_t id, ino;          /* ino: readdir's, for the copy (cache.c) */
	bool typed;                /* readdir said a regular file */
};

static int by_id(const void *a, const void *b)
{
	const struct id_ix *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The directory lists records in its hash order: their ids are gathered and sorted first, then
 * each record is read into its place in an array of the right size (sorting the records
 * themselves moved several hundred bytes per comparison, and an array grown by doubling was
 * moved and faulted in again: issue 22). The copy of them all (cache.c) as job.h says. */
size_t job_load_all(int dirfd, struct job **jobs, enum job_load how)
{
	struct stat ds;
	struct rcache c = {0};
	struct rcache_new w = {.cfd = -1, .fd = -1};
	bool have = false, making = false;
	if (how != JOB_LOAD_FILES && fstat(dirfd, &ds) == 0 && !(have = rcache_load(&c, dirfd, &ds)) &&
	    how == JOB_LOAD_MAKE)
		/* the copy's file first, then the directory's stat: the order is what makes a copy
		 * trustworthy (cache.c) */
		making = rcache_begin(&w, dirfd) && fstat(dirfd, &ds) == 0;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	size_t n = 0, cap = 0, got = 0;
	struct id_ix *ix = NULL;
	*jobs = NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		rcache_free(&c);
		rcache_abandon(&w);
		return 0;
	}
	for (struct dirent *e; (e = readdir(dir));) {
		const char *d = e->d_name;
		size_t digits = strspn(d, "0123456789");
		uint64_t id = 0;
		/* ID.job, ID without leading zeros (a record names itself: "007.job" is not 7's) */
		if (!digits || digits > 20 || d[0] == '0' || strcmp(d + digits, ".job"))
			continue;
		bool over = false;
		for (size_t i = 0; i < digits; i++) {
			unsigned v = (unsigned)(d[i] - '0');
			over |= id > (UINT64_MAX - v) / 10;
			id = id * 10 + v;
		}
		if (over)
			continue;
		ix = grow_array(ix, &cap, n + 1, sizeof *ix);
		ix[n++] = (struct id_ix){id, (uint64_t)e->d_ino, e->d_type == DT_REG};
	}
	bool wrong = false;
	if (n) {
		bool sorted = true;
		for (size_t i = 1; i < n; i++)
			sorted &= ix[i - 1].id < ix[i].id;
		if (!sorted)
			qsort(ix, n, sizeof *ix, by_id);
		char *buf = xmalloc(RECORD_MAX + 1), name[40];
		*jobs = xmalloc(n * sizeof **jobs);
		mem_prefault(*jobs, n * sizeof **jobs); /* its faults were most of job_decode's samples */
		for (size_t i = 0; i < n; i++) {
			const char *rec;
			size_t len;
			if (have && rcache_find(&c, ix[i].id, ix[i].ino, &rec, &len) &&
			    decode(rec, (ssize_t)len, ix[i].id, &(*jobs)[got])) {
				got++;
				continue;
			}
			snprintf(name, sizeof name, "%llu.job", (unsigned long long)ix[i].id);
			ssize_t r = read_raw(dirfd, name, buf, ix[i].typed);
			if (!decode(buf, r, ix[i].id, &(*jobs)[got]))
				continue; /* unreadable: the copy lacks it too */
			got++;
			wrong |= have; /* a record the copy lacks or holds another version of */
			if (making)
				rcache_add(&w, ix[i].id, ix[i].ino, buf, (size_t)r);
		}
		free(buf);
	}
	if (wrong)
		rcache_drop(dirfd);
	if (making)
		rcache_commit(&w, &ds);
	else
		rcache_abandon(&w); /* begun, and the directory's stat failed; or nothing */
	rcache_free(&c);
	free(ix);
	closedir(dir);
	if (!got) {
		free(*jobs);
		*jobs = NULL;
	}
	return got;
}

/* The checks of both opens: a regular file of the caller's (to write to, also /dev/null or a
 * terminal of the caller's own: `--log $(tty)`). */
static int log_checked(int fd, bool dev_ok)
{
	struct stat st;
	if (fd < 0)
		return -1;
	bool null = dev_ok && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
		    ((major(st.st_rdev) == 1 && minor(st.st_rdev) == 3) || st.st_uid == euid());
	int e = null ? 0 : fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL
		: st.st_uid != euid() ? EPERM : 0;
	int fl = e ? 0 : fcntl(fd, F_GETFL);
	if (!e && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0))
		e = errno;
	if (e) {
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int job_log_open(const char *path)
{
	return log_checked(open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC), false);
}

int job_log_create(const char *path, unsigned umask)
{
	/* O_NOFOLLOW: the file is opened again when the job starts, maybe hours after the submit
	 * checked it, and a symbolic link another user put in its place meanwhile (a shared
	 * directory) sent the output into any file of the user's (~/.bashrc). */
	return log_checked(open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY | O_NONBLOCK |
				O_NOFOLLOW | O_CLOEXEC, job_log_mode(umask)), true);
}

const char *job_log_error(int e)
{
	return e == EPERM ? "it is another user's file"
	     : e == EINVAL ? "it is not a regular file (a FIFO or a device)"
	     : e == ENXIO ? "it is a FIFO"
	     : e == ELOOP ? "it is a symbolic link (name the file it points to)" : strerror(e);
}
