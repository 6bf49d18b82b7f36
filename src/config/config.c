/* config.c: a user's settings: [defaults], [profile NAME] and [slurm] of the system file and the
 * user's (read by parse.c, through inih). Errors name the file and line; an unknown key is a
 * warning, a bad value an error. Admin keys are honoured only from /etc, so a user cannot lift
 * a cap or use a reserved GPU by writing their own file. */
#include "config/config.h"
#include "config/parse.h"
#include "base/util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYSTEM_CONFIG "/etc/gpuctl.conf"

/* GPUCTL_SYSTEM_CONFIG names another system file, as git's GIT_CONFIG_SYSTEM does (tests; a
 * machine whose /etc is read-only). */
const char *config_system_path(void)
{
	const char *p = getenv("GPUCTL_SYSTEM_CONFIG");
	return p && *p ? p : SYSTEM_CONFIG;
}

bool config_parse_prefer(const char *s, enum prefer *out)
{
	if (!strcmp(s, "free-memory"))
		*out = PREFER_FREE_MEMORY;
	else if (!strcmp(s, "index"))
		*out = PREFER_INDEX;
	else if (!strcmp(s, "util"))
		*out = PREFER_UTIL;
	else if (!strcmp(s, "topology"))   /* issue 26: place.h */
		*out = PREFER_TOPOLOGY;
	else
		return false;
	return true;
}

/* Keys the daemon reads from /etc/gpuctl.conf: the machine's rules, not one user's choice. */
static const char *const daemon_keys[] = {
	"reserved_gpus", "max_gpus_per_user", "free_max_memory_used", "free_max_util",
	"free_allow_processes", NULL,
};

/* Records key = value as set at the current line (a later file's replaces an earlier one's):
 * what parse.c read, for config.c and daemon.c alike, kept in struct config. */
void config_remember(struct parse_ctx *x, const char *key, const char *value)
{
	struct config *c = x->c;
	char *origin = xasprintf("%s:%d", x->path, x->line);
	for (size_t i = 0; i < c->nsettings; i++)
		if (!strcmp(c->settings[i].key, key)) {
			free(c->settings[i].value);
			free(c->settings[i].origin);
			c->settings[i].value = xstrdup(value);
			c->settings[i].origin = origin;
			return;
		}
	c->settings = grow_array(c->settings, &c->cap, c->nsettings + 1, sizeof *c->settings);
	c->settings[c->nsettings++] = (struct setting){xstrdup(key), xstrdup(value), origin};
}

static int defaults_key(struct parse_ctx *x, const char *k, const char *v)
{
	struct config *c = x->c;
	double d;
	for (const char *const *dk = daemon_keys; *dk; dk++)
		if (!strcmp(k, *dk)) {
			if (!x->admin)
				fprintf(stderr, "gpuctl: warning: %s:%d: %s is the administrator's, honoured only "
					"in %s (the daemon reads it); ignored\n", x->path, x->line, k,
					config_system_path());
			return 1;
		}
	if (!strcmp(k, "state_dir")) {
		fprintf(stderr, "gpuctl: warning: %s:%d: state_dir is no longer read: the daemon keeps "
			"the state (gpuctl daemon --state-dir); ignored\n", x->path, x->line);
		return 1;
	} else if (!strcmp(k, "prefer")) {
		if (!config_parse_prefer(v, &c->prefer))
			return config_bad(x, k, v, "free-memory, index, util or topology");
	} else if (!strcmp(k, "bind_cpus")) {   /* issue 26 */
		if (!parse_bool(v, &c->bind_cpus))
			return config_bad(x, k, v, "true or false");
	} else if (!strcmp(k, "prometheus")) {
		free(c->prometheus);
	free(c->notify); /* issue 24 */
	c->notify = NULL;
		c->prometheus = *v ? xstrdup(v) : NULL;
	} else if (!strcmp(k, "backend")) {
		if (strcmp(v, "local") && strcmp(v, "slurm"))
			return config_bad(x, k, v, "local or slurm");
		free(c->backend);
		c->backend = xstrdup(v);
	/* -- notifications (issue 24) -- */
	} else if (!strcmp(k, "notify")) {
		free(c->notify);
		c->notify = *v ? xstrdup(v) : NULL;
	} else if (!strcmp(k, "notify_timeout")) {
		if (!parse_duration(v, MAX_DURATION, &d) || d <= 0 || d > 86400)
			return config_bad(x, k, v, "a duration such as 30s");
		c->notify_timeout = d;
	/* -- end of notifications -- */
	} else if (!strcmp(k, "wait")) {
		if (!strcmp(v, "no"))
			c->wait = -1;
		else if (!strcmp(v, "forever"))
			c->wait = 0;
		else if (parse_duration(v, MAX_DURATION, &d) && d > 0)
			c->wait = d;
		else
			return config_bad(x, k, v, "no, forever, or a duration such as 30m (at most "
				   MAX_DURATION_TEXT ")");
	} else {
		static const char *const known[] = {"prefer", "prometheus", "backend", "wait", "bind_cpus",
						    "notify", "notify_timeout", NULL};
		fprintf(stderr, "gpuctl: warning: %s:%d: unknown key '%s' in [defaults]%s; ignored\n",
			x->path, x->line, k, config_near(k, known));
		return 1;
	}
	char *key = xasprintf("defaults.%s", k);
	config_remember(x, key, v);
	free(key);
	return 1;
}

/* env.NAME = VALUE: a variable for the profile's jobs (framework memory settings beside the GPU
 * choice). The lease's own variables are the lease's: a profile cannot change them. */
static bool profile_env(struct parse_ctx *x, struct profile *p, const char *name, const char *v)
{
	bool ok = (isalpha((unsigned char)*name) || *name == '_');
	for (const char *q = name; ok && *q; q++)
		ok = isalnum((unsigned char)*q) || *q == '_';
	if (!ok || !strcmp(name, "CUDA_VISIBLE_DEVICES") || !strcmp(name, "CUDA_DEVICE_ORDER") ||
	    !strcmp(name, "NVIDIA_VISIBLE_DEVICES") || !strncmp(name, "GPUCTL_", 7)) {
		fprintf(stderr, "gpuctl: %s:%d: env.%s: %s\n", x->path, x->line, name,
			ok ? "set by the lease itself; a profile cannot change it"
			   : "not a variable name (letters, digits and _, not starting with a digit)");
		x->failed = true;
		return false;
	}
	size_t n = strlen(name);
	for (size_t i = 0; i < p->nenv; i++)
		if (!strncmp(p->env[i], name, n) && p->env[i][n] == '=') {
			free(p->env[i]);
			p->env[i] = xasprintf("%s=%s", name, v);
			return true;
		}
	p->env = xrealloc(p->env, (p->nenv + 2) * sizeof *p->env);
	p->env[p->nenv++] = xasprintf("%s=%s", name, v);
	p->env[p->nenv] = NULL;
	return true;
}

static int profile_key(struct parse_ctx *x, struct profile *p, const char *k, const char *v)
{
	unsigned long n;
	enum prefer pr;
	bool b;
	if (!strcmp(k, "count")) {
		if (!parse_uint(v, &n) || n == 0 || n > GPU_MAX)
			return config_bad(x, k, v, "a number of GPUs, 1-64");
		p->count = (unsigned)n;
	} else if (!strcmp(k, "min_free_memory")) {
		if (!parse_size_mib(v, &p->min_free_mib))
			return config_bad(x, k, v, "a size such as 20G (at most " MAX_SIZE_TEXT ")");
	} else if (!strcmp(k, "max_util")) {
		if (!parse_uint(v, &n) || n > 100)
			return config_bad(x, k, v, "a percentage 0-100");
		p->max_util = (int)n;
	} else if (!strcmp(k, "prefer")) {
		if (!config_parse_prefer(v, &pr))
			return config_bad(x, k, v, "free-memory, index, util or topology");
		p->prefer = (int)pr;
	} else if (!strcmp(k, "uuid")) {
		if (!parse_bool(v, &b))
			return config_bad(x, k, v, "true or false");
		p->uuid = b;
	} else if (!strcmp(k, "gpus")) {
		free(p->gpus);
		p->gpus = xstrdup(v);
	} else if (!strcmp(k, "backend")) {
		if (strcmp(v, "local") && strcmp(v, "slurm"))
			return config_bad(x, k, v, "local or slurm");
		free(p->backend);
		p->backend = xstrdup(v);
	} else if (!strncmp(k, "env.", 4)) {
		if (!profile_env(x, p, k + 4, v))
			return 1;
	} else {
		static const char *const known[] = {"count", "min_free_memory", "max_util", "prefer",
						    "uuid", "gpus", "backend", NULL};
		fprintf(stderr, "gpuctl: warning: %s:%d: unknown key '%s' in [profile %s]%s; ignored\n",
			x->path, x->line, k, p->name, config_near(k, known));
		return 1;
	}
	char *key = xasprintf("profile.%s.%s", p->name, k);
	config_remember(x, key, v);
	free(key);
	return 1;
}

/* NAME:SIZE words: at most 32, a name of at most 63 characters and none of the characters
 * sbatch --constraint gives a meaning to, a size of more than 0. */
bool config_parse_mem_map(const char *text, struct mem_map *m, char *why, size_t whylen)
{
	*m = (struct mem_map){0};
	char *copy = xstrdup(text), *save = NULL;
	bool ok = true;
	for (char *t = strtok_r(copy, " \t,", &save); t && ok; t = strtok_r(NULL, " \t,", &save)) {
		char *colon = strrchr(t, ':');
		if (!colon || colon == t || m->n == ARRAY_SIZE(m->e) ||
		    (size_t)(colon - t) >= sizeof m->e[0].name || !parse_size_mib(colon + 1, &m->e[m->n].mib) ||
		    !m->e[m->n].mib || strcspn(t, "|&!()[]*") < (size_t)(colon - t)) {
			snprintf(why, whylen, "'%s' is not NAME:SIZE (a GRES type or node feature and the "
				 "memory of each of its GPUs, e.g. a100:40G)", t);
			ok = false;
			break;
		}
		snprintf(m->e[m->n].name, sizeof m->e[0].name, "%.*s", (int)(colon - t), t);
		m->n++;
	}
	if (ok && !m->n) {
		snprintf(why, whylen, "an empty list (want NAME:SIZE ..., e.g. a100:40G h100:80G)");
		ok = false;
	}
	free(copy);
	return ok;
}

/* [slurm]: how --min-free-memory reads on this site's Slurm. */
static int slurm_key(struct parse_ctx *x, const char *k, const char *v)
{
	struct config *c = x->c;
	char **dst = !strcmp(k, "gres_by_memory") ? &c->slurm_gres_memory
		   : !strcmp(k, "features_by_memory") ? &c->slurm_feature_memory : NULL;
	struct mem_map m;
	char why[256];
	if (!dst) {
		static const char *const known[] = {"gres_by_memory", "features_by_memory", NULL};
		fprintf(stderr, "gpuctl: warning: %s:%d: unknown key '%s' in [slurm]%s; ignored\n",
			x->path, x->line, k, config_near(k, known));
		return 1;
	}
	if (!config_parse_mem_map(v, &m, why, sizeof why))
		return config_bad(x, k, v, why);
	free(*dst);
	*dst = xstrdup(v);
	char *key = xasprintf("slurm.%s", k);
	config_remember(x, key, v);
	free(key);
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


/* The sections of a user's settings ([defaults], [profile NAME], [slurm]); [daemon] is the
 * daemon's (config/daemon.c). */
static int user_section(struct parse_ctx *x, const char *section, const char *name, const char *value)
{
	if (!strcmp(section, "daemon"))
		return 1; /* the daemon's section: read by `gpuctl daemon` */
	if (!strcmp(section, "defaults"))
		return defaults_key(x, name, value);
	if (!strcmp(section, "slurm"))
		return slurm_key(x, name, value);
	if (!strncmp(section, "profile ", 8) && section[8])
		return profile_key(x, profile_get(x->c, section + 8), name, value);
	if (!section[0]) { /* (it said "unknown section []") */
		fprintf(stderr, "gpuctl: warning: %s:%d: %s = ... comes before any section: it belongs "
			"under [defaults], [profile NAME] or [slurm]; ignored\n", x->path, x->line, name);
		return 1;
	}
	/* "[profil gpu]": the first word is what was mistyped, the rest is the profile's name. */
	static const char *const known[] = {"defaults", "slurm", "daemon", "profile"};
	size_t len = strcspn(section, " ");
	char first[64];
	snprintf(first, sizeof first, "%.*s", (int)len, section);
	struct strbuf near = {0};
	bool close = true;
	bool named = false; /* "[slurm x]": a known section that takes no name */
	for (size_t i = 0; i < ARRAY_SIZE(known); i++)
		named |= !strcmp(first, known[i]) && section[len];
	if (!strcmp(first, "profile"))
		sb_adds(&near, "[profile NAME]"); /* the name is missing */
	else if (named)
		sb_addf(&near, "[%s]", first); /* (else it would offer the same line back) */
	else if ((close = sb_nearest(&near, first, known, ARRAY_SIZE(known), "[",
				     section[len] ? " " : "]")) && section[len])
		sb_addf(&near, "%s]", section + len + 1);
	fprintf(stderr, "gpuctl: warning: %s:%d: unknown section [%s]%s%s%s; ignored\n", x->path,
		x->line, section, close ? " (did you mean " : "", close ? near.buf : "", close ? "?)" : "");
	sb_free(&near);
	return 1;
}

/* The system file that cannot be read is an error (the administrator's profiles would silently
 * be missing); the user's own is a warning, and the run goes on without it. */
static bool load_file(struct config *c, int which, const char *path, bool admin)
{
	struct parse_ctx x = {.section = user_section, .c = c, .path = path, .admin = admin};
	char why[256];
	bool missing;
	x.f = config_open(path, why, sizeof why, &missing);
	if (!x.f) {
		c->files[which].path = xstrdup(path);
		c->files[which].state = xstrdup(missing ? "none" : why);
		if (missing)
			return true;
		if (admin) {
			fprintf(stderr, "gpuctl: cannot read %s: %s\n", path, why);
			return false;
		}
		fprintf(stderr, "gpuctl: warning: cannot read %s: %s; going on without it\n", path, why);
		return true;
	}
	c->files[which].path = xstrdup(path);
	c->files[which].state = xstrdup("read");
	return config_parse_ini(&x);
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
	if (nosys && *nosys) {
		c->files[0].path = xstrdup(config_system_path());
		c->files[0].state = xstrdup("not read: GPUCTL_CONFIG_NOSYSTEM is set");
	} else if (!load_file(c, 0, config_system_path(), true)) {
		config_free(c);
		return false;
	}
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char *user = xdg && *xdg ? xasprintf("%s/gpuctl/config", xdg)
		   : home ? xasprintf("%s/.config/gpuctl/config", home) : NULL;
	bool ok = !user || load_file(c, 1, user, false);
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
		free(p->backend);
		for (size_t i = 0; i < p->nenv; i++)
			free(p->env[i]);
		free(p->env);
		free(p);
	}
	for (size_t i = 0; i < c->nsettings; i++) {
		free(c->settings[i].key);
		free(c->settings[i].value);
		free(c->settings[i].origin);
	}
	free(c->settings);
	for (int i = 0; i < 2; i++) {
		free(c->files[i].path);
		free(c->files[i].state);
	}
	free(c->daemon_file.path);
	free(c->daemon_file.state);
	free(c->prometheus);
	free(c->backend);
	free(c->slurm_gres_memory);
	free(c->slurm_feature_memory);
	*c = (struct config){0};
}

const struct profile *config_profile(const struct config *c, const char *name)
{
	for (const struct profile *p = c->profiles; p; p = p->next)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}
