/* parse.h: what config.c (the users' settings and profiles) and daemon.c (the daemon's policy)
 * share of reading one INI file (parse.c): its context, the errors and where a setting came
 * from. Each reader gives its own section callback, so parse.c knows no section and config.c
 * none of the daemon's keys. Private to config/. */
#ifndef GPUCTL_CONFIG_PARSE_H
#define GPUCTL_CONFIG_PARSE_H

#include <stdbool.h>
#include <stdio.h>

struct config;
struct dconf;

#define MAX_CONFIG_BYTES (1024 * 1024)

struct parse_ctx {
	/* Each key = value of the file, under [section]; 1 when handled, as inih's handlers (a bad
	 * value is said with config_bad, and marks the file failed). */
	int (*section)(struct parse_ctx *x, const char *section, const char *key, const char *value);
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

/* Records key = value as set at the current line (a later file's replaces an earlier one's);
 * config.c, which keeps the record in struct config. */
void config_remember(struct parse_ctx *x, const char *key, const char *value);
/* Says what is wrong with key = value at the current line, marks the file failed; returns 1. */
int config_bad(struct parse_ctx *x, const char *key, const char *value, const char *want);
/* " (did you mean 'prefer'?)" when word is a typo or two from one of the NULL-terminated known
 * names (sb_nearest), else "": for the warning about an unknown key or section. Valid until the
 * next call. */
const char *config_near(const char *word, const char *const *known);
/* Parses x->f (closed after) with inih, through x->section; false on a syntax error or a bad
 * value. */
bool config_parse_ini(struct parse_ctx *x);
/* A regular file of at most MAX_CONFIG_BYTES, or /dev/null, opened without blocking; NULL with
 * why set (*missing: there is no such file). */
FILE *config_open(const char *path, char *why, size_t n, bool *missing);

#endif
