/* config.c: INI configuration through inih (Debian's libinih). Errors name the file and line;
 * an unknown key is a warning, a bad value an error. Admin keys are honoured only from /etc, so a
 * user cannot lift a cap or use a reserved GPU by writing their own file. */
#include "config.h"
#include "daemon.h"
#include "dl.h"
#include "gpu.h"
#include "util.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYSTEM_CONFIG "/etc/gpuctl.conf"

struct parse_ctx {
	struct config *c;
	struct dconf *dc;            /* the daemon's policy, when the daemon reads the file */
	const char *path;
	bool admin;
	bool failed;
	int line;
	FILE *f;
};

bool parse_prefer(const char *s, enum prefer *out)
{
	if (!strcmp(s, "free-memory"))
		*out = PREFER_FREE_MEMORY;
	else if (!strcmp(s, "index"))
		*out = PREFER_INDEX;
	else if (!strcmp(s, "util"))
		*out = PREFER_UTIL;
	else
		return false;
	return true;
}

bool parse_size_mib(const char *s, uint64_t *mib)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || v < 0)
		return false;
	double mul = 1;
	if (*end == 'G' || *end == 'g')
		mul = 1024, end++;
	else if (*end == 'T' || *end == 't')
		mul = 1024 * 1024, end++;
	else if (*end == 'M' || *end == 'm')
		end++;
	if ((*end == 'i' && end[1] == 'B') || *end == 'B')
		end += *end == 'i' ? 2 : 1;
	if (*end)
		return false;
	*mib = (uint64_t)(v * mul);
	return true;
}

bool parse_duration(const char *s, double *secs)
{
	char *end;
	if (!s || ((*s < '0' || *s > '9') && *s != '.'))
		return false;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || v < 0)
		return false;
	if (!strcmp(end, "m"))
		v *= 60;
	else if (!strcmp(end, "h"))
		v *= 3600;
	else if (*end && strcmp(end, "s"))
		return false;
	*secs = v;
	return true;
}

static bool parse_bool(const char *v, bool *out)
{
	if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
		*out = true;
	else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
		*out = false;
	else
		return false;
	return true;
}

static int bad(struct parse_ctx *x, const char *key, const char *value, const char *want)
{
	fprintf(stderr, "gpuctl: %s:%d: bad value '%s' for %s: %s\n", x->path, x->line, value, key, want);
	x->failed = true;
	return 1;
}

/* Keys the daemon reads from /etc/gpuctl.conf: the machine's rules, not one user's choice. */
static const char *const daemon_keys[] = {
	"reserved_gpus", "max_gpus_per_user", "free_max_memory_used", "free_max_util",
	"free_allow_processes", NULL,
};

static int defaults_key(struct parse_ctx *x, const char *k, const char *v)
{
	struct config *c = x->c;
	double d;
	for (const char *const *dk = daemon_keys; *dk; dk++)
		if (!strcmp(k, *dk)) {
			if (!x->admin)
				fprintf(stderr, "gpuctl: warning: %s:%d: %s is the administrator's, honoured only "
					"in %s (the daemon reads it); ignored\n", x->path, x->line, k, SYSTEM_CONFIG);
			return 1;
		}
	if (!strcmp(k, "state_dir")) {
		fprintf(stderr, "gpuctl: warning: %s:%d: state_dir is no longer read: the daemon keeps "
			"the state (gpuctl daemon --state-dir); ignored\n", x->path, x->line);
	} else if (!strcmp(k, "prefer")) {
		if (!parse_prefer(v, &c->prefer))
			return bad(x, k, v, "free-memory, index or util");
	} else if (!strcmp(k, "prometheus")) {
		free(c->prometheus);
		c->prometheus = *v ? xstrdup(v) : NULL;
	} else if (!strcmp(k, "wait")) {
		if (!strcmp(v, "no"))
			c->wait = -1;
		else if (!strcmp(v, "forever"))
			c->wait = 0;
		else if (parse_duration(v, &d) && d > 0)
			c->wait = d;
		else
			return bad(x, k, v, "no, forever, or a duration such as 30m");
	} else {
		fprintf(stderr, "gpuctl: warning: %s:%d: unknown key '%s' in [defaults]; ignored\n",
			x->path, x->line, k);
	}
	return 1;
}

static int profile_key(struct parse_ctx *x, struct profile *p, const char *k, const char *v)
{
	unsigned long n;
	enum prefer pr;
	bool b;
	if (!strcmp(k, "count")) {
		if (!parse_uint(v, &n) || n == 0 || n > GPU_MAX)
			return bad(x, k, v, "a number of GPUs, 1-64");
		p->count = (unsigned)n;
	} else if (!strcmp(k, "min_free_memory")) {
		if (!parse_size_mib(v, &p->min_free_mib))
			return bad(x, k, v, "a size such as 20G");
	} else if (!strcmp(k, "max_util")) {
		if (!parse_uint(v, &n) || n > 100)
			return bad(x, k, v, "a percentage 0-100");
		p->max_util = (int)n;
	} else if (!strcmp(k, "prefer")) {
		if (!parse_prefer(v, &pr))
			return bad(x, k, v, "free-memory, index or util");
		p->prefer = (int)pr;
	} else if (!strcmp(k, "uuid")) {
		if (!parse_bool(v, &b))
			return bad(x, k, v, "true or false");
		p->uuid = b;
	} else if (!strcmp(k, "gpus")) {
		free(p->gpus);
		p->gpus = xstrdup(v);
	} else {
		fprintf(stderr, "gpuctl: warning: %s:%d: unknown key '%s' in [profile %s]; ignored\n",
			x->path, x->line, k, p->name);
	}
	return 1;
}

static struct profile *profile_get(struct config *c, const char *name)
{
	for (struct profile *p = c->profiles; p; p = p->next)
		if (!strcmp(p->name, name))
			return p;
	struct profile *p = xcalloc(1, sizeof *p);
	p->name = xstrdup(name);
	p->max_util = p->prefer = p->uuid = -1;
	p->next = c->profiles;
	c->profiles = p;
	return p;
}

static int daemon_key(struct parse_ctx *x, const char *k, const char *v);

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *x = user;
	if (x->dc)
		return !strcmp(section, "daemon") || !strcmp(section, "defaults") ? daemon_key(x, name, value)
										  : 1;
	if (!strcmp(section, "daemon"))
		return 1; /* the daemon's section: read by `gpuctl daemon` */
	if (!strcmp(section, "defaults"))
		return defaults_key(x, name, value);
	if (!strncmp(section, "profile ", 8) && section[8])
		return profile_key(x, profile_get(x->c, section + 8), name, value);
	fprintf(stderr, "gpuctl: warning: %s:%d: unknown section [%s]; ignored\n", x->path, x->line,
		section);
	return 1;
}

/* inih's handler has no line number: count the lines as inih reads them. */
static char *reader(char *buf, int size, void *stream)
{
	struct parse_ctx *x = stream;
	char *r = fgets(buf, size, x->f);
	if (r)
		x->line++;
	return r;
}

/* inih is loaded when there is a file to parse, as the exporter loads libmicrohttpd: most runs
 * find no configuration file, and every run would otherwise pay for loading the library at its
 * start (a tenth of a millisecond, a tenth of a `status --query-gpu`). */
typedef int (*parse_stream_fn)(ini_reader, void *, ini_handler, void *);

static parse_stream_fn load_inih(void)
{
	static parse_stream_fn parse;
	static const char *const sonames[] = {"libinih.so.1", NULL};
	static const char *const names[] = {"ini_parse_stream", NULL};
	char why[512];
	const char *loaded;
	void *dl;
	if (!parse && (!(dl = dl_open(sonames, &loaded, why, sizeof why)) ||
		       dl_resolve(dl, &parse, names) < 0))
		fprintf(stderr, "gpuctl: cannot load the INI parser libinih.so.1 (%s); install it "
			"(Debian: apt-get install libinih1)\n", dl ? "no ini_parse_stream" : why);
	return parse;
}

/* Parses x->f (open) into x->c or x->dc; false (said why) on a syntax error or a bad value. */
static bool parse_ini(struct parse_ctx *x)
{
	parse_stream_fn parse = load_inih();
	int r = parse ? parse(reader, x, handler, x) : 0;
	fclose(x->f);
	if (!parse)
		return false;
	if (r > 0) {
		fprintf(stderr, "gpuctl: %s:%d: not INI syntax (expected [section] or key = value)\n",
			x->path, r);
		return false;
	}
	return !x->failed;
}

static bool load_file(struct config *c, const char *path, bool admin)
{
	struct parse_ctx x = {.c = c, .path = path, .admin = admin};
	x.f = fopen(path, "r");
	if (!x.f) {
		if (errno == ENOENT)
			return true;
		fprintf(stderr, "gpuctl: cannot read %s: %s\n", path, strerror(errno));
		return false;
	}
	return parse_ini(&x);
}

bool config_load(struct config *c)
{
	*c = (struct config){
		.prefer = PREFER_FREE_MEMORY,
		.wait = -1,
	};
	/* Like git's GIT_CONFIG_NOSYSTEM: the system file holds defaults and profiles only (the
	 * admin's rules are the daemon's), so a user may skip it; tests do, to stay hermetic. */
	const char *nosys = getenv("GPUCTL_CONFIG_NOSYSTEM");
	if (!(nosys && *nosys) && !load_file(c, SYSTEM_CONFIG, true)) {
		config_free(c);
		return false;
	}
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char *user = xdg && *xdg ? xasprintf("%s/gpuctl/config", xdg)
		   : home ? xasprintf("%s/.config/gpuctl/config", home) : NULL;
	bool ok = !user || load_file(c, user, false);
	free(user);
	if (!ok) {
		config_free(c);
		return false;
	}
	return true;
}

void config_free(struct config *c)
{
	for (struct profile *p = c->profiles, *n; p; p = n) {
		n = p->next;
		free(p->name);
		free(p->gpus);
		free(p);
	}
	free(c->prometheus);
	*c = (struct config){0};
}

const struct profile *config_profile(const struct config *c, const char *name)
{
	for (const struct profile *p = c->profiles; p; p = p->next)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

/* ---- the daemon's policy ([daemon], and the admin keys of [defaults] of older files) ---- */

static bool parse_limit(const char *v, unsigned *out)
{
	unsigned long n;
	if (!parse_uint(v, &n) || n == 0 || n > 1000000)
		return false;
	*out = (unsigned)n;
	return true;
}

static bool parse_secs(const char *v, double *out, double min)
{
	double d;
	if (!parse_duration(v, &d) || d < min || d > 1e7)
		return false;
	*out = d;
	return true;
}

static int daemon_key(struct parse_ctx *x, const char *k, const char *v)
{
	struct dconf *c = x->dc;
	unsigned long n;
	uint64_t mib;
	if (!strcmp(k, "reserved_gpus")) {
		free(c->reserved);
		c->reserved = *v ? xstrdup(v) : NULL;
	} else if (!strcmp(k, "max_gpus_per_user")) {
		if (!parse_uint(v, &n) || n > 64)
			return bad(x, k, v, "a number of GPUs (0: no cap)");
		c->max_gpus_per_user = (unsigned)n;
	} else if (!strcmp(k, "max_wait")) {
		if (!strcmp(v, "none"))
			c->max_wait = 0;
		else if (!parse_secs(v, &c->max_wait, 1))
			return bad(x, k, v, "none, or a duration such as 12h");
	} else if (!strcmp(k, "max_connections_per_user")) {
		if (!parse_limit(v, &c->max_conn_per_user))
			return bad(x, k, v, "a positive number");
	} else if (!strcmp(k, "max_connections")) {
		if (!parse_limit(v, &c->max_conn))
			return bad(x, k, v, "a positive number");
	} else if (!strcmp(k, "max_queued_per_user")) {
		if (!parse_limit(v, &c->max_queued_per_user))
			return bad(x, k, v, "a positive number");
	} else if (!strcmp(k, "offer_timeout")) {
		if (!parse_secs(v, &c->offer_timeout, 0.01))
			return bad(x, k, v, "a duration such as 2s");
	} else if (!strcmp(k, "idle_timeout")) {
		if (!parse_secs(v, &c->idle_timeout, 0.01))
			return bad(x, k, v, "a duration such as 30s");
	} else if (!strcmp(k, "usage_poll")) {
		if (!parse_secs(v, &c->usage_poll, 0.01))
			return bad(x, k, v, "a duration such as 5s");
	} else if (!strcmp(k, "orphan_grace")) {
		if (!parse_secs(v, &c->orphan_grace, 0))
			return bad(x, k, v, "a duration such as 30s");
	} else if (!strcmp(k, "free_max_memory_used")) {
		if (!parse_size_mib(v, &mib))
			return bad(x, k, v, "a size such as 1G or 512M");
		c->free.max_used_mib = mib;
	} else if (!strcmp(k, "free_max_util")) {
		if (!parse_uint(v, &n) || n > 100)
			return bad(x, k, v, "a percentage 0-100");
		c->free.max_util = (int)n;
	} else if (!strcmp(k, "free_allow_processes")) {
		if (!parse_bool(v, &c->free.allow_procs))
			return bad(x, k, v, "true or false");
	} else if (!strcmp(k, "prefer") || !strcmp(k, "wait") || !strcmp(k, "state_dir") ||
		   !strcmp(k, "prometheus")) {
		/* [defaults] keys of the clients */
	} else {
		fprintf(stderr, "gpuctl daemon: warning: %s:%d: unknown key '%s'; ignored\n", x->path,
			x->line, k);
	}
	return 1;
}

bool dconf_load(struct dconf *c, const char *path)
{
	*c = (struct dconf){
		.max_conn_per_user = 1024,
		.max_conn = 8192,
		.max_queued_per_user = 4096,
		.offer_timeout = 2,
		.idle_timeout = 30,
		.usage_poll = 5,
		.orphan_grace = 30,
		.free = {.max_used_mib = 1024, .max_util = 10, .allow_procs = false},
	};
	struct parse_ctx x = {.dc = c, .path = path ? path : SYSTEM_CONFIG, .admin = true};
	x.f = fopen(x.path, "r");
	if (!x.f) {
		if (errno == ENOENT && !path)
			return true; /* no /etc/gpuctl.conf: the defaults */
		fprintf(stderr, "gpuctl daemon: cannot read %s: %s\n", x.path, strerror(errno));
		return false;
	}
	bool ok = parse_ini(&x);
	if (!ok)
		dconf_free(c);
	return ok;
}

void dconf_free(struct dconf *c)
{
	free(c->reserved);
	c->reserved = NULL;
}
