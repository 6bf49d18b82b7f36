/* cache.h: one file holding a copy of every record of a jobs directory, so that `jobs` reads its
 * records in one read, not one open, read and close each (issue 22). Private to jobs/: dir.c's
 * job_load_all is its only user; cache.c says why a copy is known to be current. */
#ifndef GPUCTL_JOBS_CACHE_H
#define GPUCTL_JOBS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define RCACHE_HEADER_MAX 192   /* rcache_header's line at most */

/* The copy read back: valid only for the directory state it was made from. */
struct rentry {
	uint64_t id, ino;            /* the record's id, and its directory entry's inode */
	size_t off, len;             /* its bytes in buf */
};
struct rcache {
	char *buf;                   /* the whole file */
	size_t len;
	struct rentry *e;            /* by id */
	size_t n, next;              /* next: where the lookup in id order goes on */
};

/* Reads DIR/.cache/records into c. true only when it was made from the directory as dir_st
 * shows it now (the directory's change time, device and inode); false (c empty) otherwise. */
bool rcache_load(struct rcache *c, int dirfd, const struct stat *dir_st);
/* The header line a copy of the directory as ds shows it starts with. */
void rcache_header(char *out, size_t n, const struct stat *ds);
/* c->buf[0..c->len) as a copy of the directory as ds shows it: true with c->e[0..c->n) its
 * entries, by id (tests/fuzz/fuzz_records.c feeds it arbitrary bytes). */
bool rcache_parse(struct rcache *c, const struct stat *ds);
/* The copy of record id whose directory entry is inode ino: true with its bytes. Lookups come in
 * increasing id order (job_load_all's), each from where the last ended. */
bool rcache_find(struct rcache *c, uint64_t id, uint64_t ino, const char **rec, size_t *len);
void rcache_free(struct rcache *c);
/* The copy is wrong about the directory (a record it lacks or holds another inode of): removed,
 * so that the next reader makes a new one. */
void rcache_drop(int dirfd);

/* A new copy, made while the records are read. begin: before the directory is looked at (its
 * stat and readdir), since the order is what makes the copy trustworthy; false: no copy is made
 * this time (the records are read all the same). */
struct rcache_new {
	int cfd, fd;                 /* DIR/.cache, and the temporary file in it */
	char tmp[48];
	struct timespec made;        /* the temporary file's change time: the file system's clock */
	char *buf;
	size_t len, cap;
	bool failed;
};
bool rcache_begin(struct rcache_new *w, int dirfd);
void rcache_add(struct rcache_new *w, uint64_t id, uint64_t ino, const char *rec, size_t len);
/* Writes the copy for the directory as dir_st showed it before it was read, and frees w. */
void rcache_commit(struct rcache_new *w, const struct stat *dir_st);
void rcache_abandon(struct rcache_new *w);

#endif
