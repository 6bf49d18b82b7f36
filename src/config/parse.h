/* config-parse.h: what config.c (the users' settings and profiles) and config-daemon.c (the
 * daemon's policy) share of reading one INI file: its context, the errors and the value
 * parsers. Private to those two files. */
#ifndef CONFIG_PARSE_H
#define CONFIG_PARSE_H

#include "config/config.h"

#include <stdbool.h>
#include <stdio.h>

#define MAX_CONFIG_BYTES (1024 * 1024)

struct parse_ctx {
	struct config *c;
	struct dconf *dc;            /* the daemon's policy, when the daemon reads the file */
	const char *path;
	bool admin;
	bool in_defaults;            /* the daemon reading [defaults] (its older home of admin keys) */
	bool failed;
	int line;
	size_t bytes;                /* read so far: at most MAX_CONFIG_BYTES, even if it grows */
	FILE *f;
};

/* Records key = value as set at the current line (a later file's replaces an earlier one's). */
void remember(struct parse_ctx *x, const char *key, const char *value);
/* Says what is wrong with key = value at the current line, marks the file failed; returns 1. */
int bad(struct parse_ctx *x, const char *key, const char *value, const char *want);
/* Parses x->f (closed after) with inih; false on a syntax error or a bad value. */
bool parse_ini(struct parse_ctx *x);
/* A regular file of at most MAX_CONFIG_BYTES, or /dev/null, opened without blocking; NULL with
 * why set (*missing: there is no such file). */
FILE *open_config(const char *path, char *why, size_t n, bool *missing);
/* A key of [daemon] (or an admin key of [defaults]); 1 when handled, as inih's handlers. */
int daemon_key(struct parse_ctx *x, const char *k, const char *v);

#endif
