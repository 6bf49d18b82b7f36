/* daemon.c: the daemon's policy in the system configuration ([daemon], and the admin keys of
 * [defaults] of older files): parsed into struct dconf (config.h) for the daemon, and listed
 * with where each value came from for `gpuctl config`. Reads the file through parse.c, as
 * config.c does, with its own section callback. */
#include "config/config.h"
#include "config/parse.h"
#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	if (!parse_duration(v, MAX_DURATION, &d) || d < min || d > 1e7)
		return false;
	*out = d;
	return true;
}

/* The did-you-mean of an unknown key: the daemon's keys are dconf_defaults' (defined below). */
static const char *near_key(const char *k)
{
	const char *known[64];
	size_t n = 0;
	for (; n + 1 < ARRAY_SIZE(known) && dconf_defaults[n].key; n++)
		known[n] = dconf_defaults[n].key;
	known[n] = NULL;
	return config_near(k, known);
}

/* A key of [daemon] (or an admin key of [defaults]); 1 when handled, as inih's handlers. */
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
			return config_bad(x, k, v, "a number of GPUs (0: no cap)");
		c->max_gpus_per_user = (unsigned)n;
	} else if (!strcmp(k, "max_wait")) {
		if (!strcmp(v, "none"))
			c->max_wait = 0;
		else if (!parse_secs(v, &c->max_wait, 1))
			return config_bad(x, k, v, "none, or a duration such as 12h");
	} else if (!strcmp(k, "max_connections_per_user")) {
		if (!parse_limit(v, &c->max_conn_per_user))
			return config_bad(x, k, v, "a positive number");
	} else if (!strcmp(k, "max_connections")) {
		if (!parse_limit(v, &c->max_conn))
			return config_bad(x, k, v, "a positive number");
	} else if (!strcmp(k, "max_queued_per_user")) {
		if (!parse_limit(v, &c->max_queued_per_user))
			return config_bad(x, k, v, "a positive number");
	} else if (!strcmp(k, "offer_timeout")) {
		if (!parse_secs(v, &c->offer_timeout, 0.01))
			return config_bad(x, k, v, "a duration such as 2s");
	} else if (!strcmp(k, "idle_timeout")) {
		if (!parse_secs(v, &c->idle_timeout, 0.01))
			return config_bad(x, k, v, "a duration such as 30s");
	} else if (!strcmp(k, "usage_poll")) {
		if (!parse_secs(v, &c->usage_poll, 0.01))
			return config_bad(x, k, v, "a duration such as 5s");
	} else if (!strcmp(k, "orphan_grace")) {
		if (!parse_secs(v, &c->orphan_grace, 0))
			return config_bad(x, k, v, "a duration such as 30s");
	} else if (!strcmp(k, "head_reserve")) {
		if (!strcmp(v, "none"))
			c->head_reserve = 0;
		else if (!parse_secs(v, &c->head_reserve, 0.01))
			return config_bad(x, k, v, "none, or a duration such as 10m");
	} else if (!strcmp(k, "queue")) {
		if (!strcmp(v, "fair"))
			c->queue = QUEUE_FAIR;
		else if (!strcmp(v, "fifo"))
			c->queue = QUEUE_FIFO;
		else if (!strcmp(v, "fair-held")) /* issue 24: fair without past use */
			c->queue = QUEUE_FAIR_HELD;
		else
			return config_bad(x, k, v, "fair (fewest GPUs held first, then least past use), "
					  "fair-held (without past use) or fifo (arrival order)");
	} else if (!strcmp(k, "free_max_memory_used")) {
		if (!parse_size_mib(v, &mib))
			return config_bad(x, k, v, "a size such as 1G or 512M (at most " MAX_SIZE_TEXT ")");
		c->free.max_used_mib = mib;
	} else if (!strcmp(k, "free_max_util")) {
		if (!parse_uint(v, &n) || n > 100)
			return config_bad(x, k, v, "a percentage 0-100");
		c->free.max_util = (int)n;
	} else if (!strcmp(k, "free_allow_processes")) {
		if (!parse_bool(v, &c->free.allow_procs))
			return config_bad(x, k, v, "true or false");
	/* the device guard (issue 25) */
	} else if (!strcmp(k, "guard")) {
		if (!strcmp(v, "acl"))
			c->guard_acl = true;
		else if (!strcmp(v, "off"))
			c->guard_acl = false;
		else
			return config_bad(x, k, v, "acl (leases bind: device access per lease) or off");
	} else if (!strcmp(k, "guard_admin_group")) {
		if (*v && (strlen(v) > 64 || strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
						       "0123456789._-") != strlen(v) || *v == '-'))
			return config_bad(x, k, v, "a group name (or empty: none)");
		free(c->guard_admin_group);
		c->guard_admin_group = *v ? xstrdup(v) : NULL;
	/* -- time limits (issue 24) -- */
	} else if (!strcmp(k, "default_time") || !strcmp(k, "max_time")) {
		double *t = k[0] == 'd' ? &c->default_time : &c->max_time;
		if (!strcmp(v, "none"))
			*t = 0;
		else if (!parse_secs(v, t, 1))
			return config_bad(x, k, v, "none, or a duration such as 12h");
	} else if (!strcmp(k, "kill_grace")) {
		if (!parse_secs(v, &c->kill_grace, 0))
			return config_bad(x, k, v, "a duration such as 10s");
	/* -- end of time limits -- */
	/* -- idle leases (issue 24) -- */
	} else if (!strcmp(k, "idle_warn") || !strcmp(k, "idle_release")) {
		double *t = k[5] == 'w' ? &c->idle_warn : &c->idle_release;
		if (!strcmp(v, "none") || !strcmp(v, "off"))
			*t = 0;
		else if (!parse_secs(v, t, 0.01))
			return config_bad(x, k, v, "none, or a duration such as 1h");
	} else if (!strcmp(k, "idle_util")) {
		if (!parse_uint(v, &n) || n > 100)
			return config_bad(x, k, v, "a percentage 0-100 (0: only a lease without processes "
					  "is idle)");
		c->idle_util = (unsigned)n;
	} else if (!strcmp(k, "idle_exempt")) {
		free(c->idle_exempt);
		c->idle_exempt = *v ? xstrdup(v) : NULL;
	/* -- end of idle leases -- */
	} else if (!strcmp(k, "usage_half_life")) { /* fair share by past use (issue 24) */
		if (!parse_secs(v, &c->usage_half_life, 1))
			return config_bad(x, k, v, "a duration such as 7d");
	} else if (!strcmp(k, "notify") || !strcmp(k, "notify_timeout")) { /* issue 24 */
		return 1; /* [defaults] keys of the clients */
	/* memory shares (issue 23) */
	} else if (!strcmp(k, "share_margin")) {
		if (!parse_size_mib(v, &mib))
			return config_bad(x, k, v, "a size such as 10G or 512M (at most " MAX_SIZE_TEXT ")");
		c->free.share_margin_mib = mib;
	} else if (!strcmp(k, "share_mps")) {
		free(c->share_mps);
		c->share_mps = *v ? xstrdup(v) : NULL;
	} else if (!strcmp(k, "share_overuse")) {
		if (!strcmp(v, "warn"))
			c->share_stop = false;
		else if (!strcmp(v, "stop"))
			c->share_stop = true;
		else
			return config_bad(x, k, v, "warn (shown) or stop (the job is stopped)");
	/* end of memory shares */
	} else if (!strcmp(k, "prefer") && !x->in_defaults) {   /* issue 26: the default order */
		if (!config_parse_prefer(v, &c->prefer))
			return config_bad(x, k, v, "topology, free-memory, index or util");
	} else if (!strncmp(k, "preferred_gpus.", 15) && !x->in_defaults) {
		const char *who = k + 15;
		bool group = *who == '@';
		who += group;
		if (!*who || strlen(who) > 64 || strspn(who, "abcdefghijklmnopqrstuvwxyz"
			"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen(who))
			return config_bad(x, k, v, "a list of GPUs, under preferred_gpus.USER or "
					  "preferred_gpus.@GROUP (a user or group name)");
		if (!*v || strlen(v) > 4096)
			return config_bad(x, k, v, "a list of GPUs (indices, UUIDs or PCI bus ids, by commas)");
		if (c->nprefs >= 1024)
			return config_bad(x, k, v, "at most 1024 preferred_gpus keys");
		c->prefs = xrealloc(c->prefs, (c->nprefs + 1) * sizeof *c->prefs);
		c->prefs[c->nprefs++] = (struct dconf_pref){xstrdup(who), group, xstrdup(v)};
	} else if (!strcmp(k, "prefer") || !strcmp(k, "wait") || !strcmp(k, "state_dir") ||
		   !strcmp(k, "prometheus") || !strcmp(k, "backend")) {
		return 1; /* [defaults] keys of the clients */
	} else {
		if (!x->c || !x->in_defaults) /* `gpuctl config` warned of [defaults]'s as a client */
			fprintf(stderr, "gpuctl%s: warning: %s:%d: unknown key '%s'%s; ignored\n",
				x->c ? "" : " daemon", x->path, x->line, k, near_key(k));
		return 1;
	}
	if (x->c) { /* `gpuctl config`: where each of the daemon's settings came from */
		char *key = xasprintf("daemon.%s", k);
		config_remember(x, key, v);
		free(key);
	}
	return 1;
}

/* The daemon reads [daemon], and the admin keys of [defaults] (their home in older files); the
 * other sections are the users'. */
static int daemon_section(struct parse_ctx *x, const char *section, const char *name,
			  const char *value)
{
	x->in_defaults = !strcmp(section, "defaults");
	return !strcmp(section, "daemon") || x->in_defaults ? daemon_key(x, name, value) : 1;
}

/* The daemon's built-in values, as `gpuctl config` shows them (dconf_init sets them). */
const struct dconf_default dconf_defaults[] = {
	{"free_max_memory_used", "1G"}, {"free_max_util", "10"}, {"free_allow_processes", "false"},
	{"reserved_gpus", ""}, {"max_gpus_per_user", "0"}, {"max_wait", "none"},
	{"max_connections_per_user", "1024"}, {"max_connections", "8192"},
	{"max_queued_per_user", "4096"}, {"queue", "fair"}, {"offer_timeout", "2s"},
	{"idle_timeout", "30s"}, {"usage_poll", "5s"}, {"orphan_grace", "30s"},
	{"head_reserve", "10m"},
	{"guard", "off"}, {"guard_admin_group", ""}, /* the device guard (issue 25) */
	/* time limits (issue 24) */
	{"default_time", "none"}, {"max_time", "none"}, {"kill_grace", "10s"},
	/* idle leases (issue 24) */
	{"idle_warn", "1h"}, {"idle_release", "none"}, {"idle_util", "0"}, {"idle_exempt", ""},
	{"usage_half_life", "7d"}, /* fair share by past use (issue 24) */
	/* memory shares (issue 23) */
	{"share_margin", "1G"}, {"share_overuse", "warn"}, {"share_mps", ""},
	{"prefer", "topology"},   /* issue 26 */
	{NULL, NULL},
};

static void dconf_init(struct dconf *c)
{
	*c = (struct dconf){
		.max_conn_per_user = 1024,
		.max_conn = 8192,
		.max_queued_per_user = 4096,
		.offer_timeout = 2,
		.idle_timeout = 30,
		.usage_poll = 5,
		.orphan_grace = 30,
		.head_reserve = 600,
		.queue = QUEUE_FAIR,
		.kill_grace = 10, /* time limits (issue 24) */
		.idle_warn = 3600, /* idle leases (issue 24): warn on, release off */
		.usage_half_life = 7 * 86400, /* fair share by past use (issue 24) */
		.free = {.max_used_mib = 1024, .max_util = 10, .allow_procs = false,
			 .share_margin_mib = 1024},
		.prefer = PREFER_TOPOLOGY,   /* issue 26 */
	};
}

bool config_load_daemon(struct config *c)
{
	const char *path = config_system_path(), *nosys = getenv("GPUCTL_CONFIG_NOSYSTEM");
	struct dconf dc;
	struct parse_ctx x = {.section = daemon_section, .c = c, .dc = &dc, .path = path,
			     .admin = true};
	char why[256];
	bool missing;
	dconf_init(&dc);
	c->daemon_file.path = xstrdup(path);
	if (nosys && *nosys) {
		c->daemon_file.state = xstrdup("not read: GPUCTL_CONFIG_NOSYSTEM is set");
		return true;
	}
	x.f = config_open(path, why, sizeof why, &missing);
	if (!x.f) {
		c->daemon_file.state = xstrdup(missing ? "none" : why);
		c->daemon_read = missing; /* no file: the daemon's built-in values */
		if (!missing)
			fprintf(stderr, "gpuctl: cannot read %s: %s\n", path, why);
		return missing;
	}
	c->daemon_file.state = xstrdup("read");
	c->daemon_read = true;
	bool ok = config_parse_ini(&x);
	dconf_free(&dc);
	return ok;
}

bool dconf_load(struct dconf *c, const char *path)
{
	dconf_init(c);
	struct parse_ctx x = {.section = daemon_section, .dc = c,
			     .path = path ? path : config_system_path(), .admin = true};
	char why[256];
	bool missing;
	x.f = config_open(x.path, why, sizeof why, &missing);
	if (!x.f) {
		if (missing && !path)
			return true; /* no /etc/gpuctl.conf: the defaults */
		fprintf(stderr, "gpuctl daemon: cannot read %s: %s\n", x.path, why);
		return false;
	}
	bool ok = config_parse_ini(&x);
	if (!ok)
		dconf_free(c);
	return ok;
}

void dconf_free(struct dconf *c)
{
	free(c->reserved);
	c->reserved = NULL;
	free(c->guard_admin_group);
	c->guard_admin_group = NULL;
	free(c->idle_exempt); /* idle leases (issue 24) */
	c->idle_exempt = NULL;
	free(c->share_mps); /* memory shares (issue 23) */
	c->share_mps = NULL;
	for (size_t i = 0; i < c->nprefs; i++) {
		free(c->prefs[i].who);
		free(c->prefs[i].gpus);
	}
	free(c->prefs);
	c->prefs = NULL;
	c->nprefs = 0;
}
