/* config.c: `gpuctl config`: every effective setting and where it came from, as
 * `git config --list --show-origin` shows git's: the files read (or why not), each key of
 * [defaults] and of every profile with the FILE:LINE that set it last, the built-in defaults,
 * the daemon's policy ([daemon] of the system file, as a daemon started without --config reads
 * it), and the environment variables gpuctl reads that are set (cmd_environment, cmd.c). Read-only: files are edited by
 * hand. */
#include "config/config.h"
#include "base/escape.h"
#include "cmd/cmd.h"
#include "base/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The [defaults] keys and their built-in values, shown as "default" when no file sets them. */
static const struct { const char *key, *value; } builtin[] = {
	{"defaults.prefer", "the daemon's (daemon.prefer)"},   /* issue 26: unset, none is sent */
	{"defaults.wait", "no"},
	{"defaults.bind_cpus", "false"},
};

/* The daemon reads its file when it starts, and systemd may start it with --config: this is
 * what the file says, which the running daemon may not be using. */
#define DAEMON_NOTE "the file's values: the running daemon read them when it started (restart it " \
	"to apply a change), unless it was started with --config FILE (systemctl cat gpuctl)"

static bool is_set(const struct config *cfg, const char *key)
{
	for (size_t i = 0; i < cfg->nsettings; i++)
		if (!strcmp(cfg->settings[i].key, key))
			return true;
	return false;
}

static bool is_daemon_set(const struct config *cfg, const char *key)
{
	char *k = xasprintf("daemon.%s", key);
	bool set = is_set(cfg, k);
	free(k);
	return set;
}

/* Profiles in the order the files define them (the list is kept newest first). */
static size_t profile_names(const struct config *cfg, const char **names, size_t max)
{
	size_t n = 0;
	for (const struct profile *p = cfg->profiles; p && n < max; p = p->next)
		names[n++] = p->name;
	for (size_t i = 0; i < n / 2; i++) {
		const char *t = names[i];
		names[i] = names[n - 1 - i];
		names[n - 1 - i] = t;
	}
	return n;
}

static void print_json(const struct config *cfg)
{
	struct strbuf sb = {0};
	struct json j;
	const char *names[256];
	size_t np = profile_names(cfg, names, ARRAY_SIZE(names));
	json_init(&j, &sb, true);
	json_obj(&j, NULL);
	json_arr(&j, "files");
	for (int i = 0; i < 2; i++) {
		if (!cfg->files[i].path)
			continue;
		json_obj(&j, NULL);
		json_str(&j, "path", cfg->files[i].path);
		json_str(&j, "state", cfg->files[i].state);
		json_end_obj(&j);
	}
	json_end_arr(&j);
	json_obj(&j, "daemon");
	json_str(&j, "path", cfg->daemon_file.path);
	json_str(&j, "state", cfg->daemon_file.state);
	json_str(&j, "note", DAEMON_NOTE);
	json_end_obj(&j);
	json_arr(&j, "profiles");
	for (size_t i = 0; i < np; i++)
		json_str(&j, NULL, names[i]);
	json_end_arr(&j);
	json_arr(&j, "settings");
	for (size_t i = 0; i < ARRAY_SIZE(builtin); i++)
		if (!is_set(cfg, builtin[i].key)) {
			json_obj(&j, NULL);
			json_str(&j, "key", builtin[i].key);
			json_str(&j, "value", builtin[i].value);
			json_str(&j, "origin", "default");
			json_end_obj(&j);
		}
	for (const struct dconf_default *dd = dconf_defaults; cfg->daemon_read && dd->key; dd++)
		if (!is_daemon_set(cfg, dd->key)) {
			json_obj(&j, NULL);
			char *key = xasprintf("daemon.%s", dd->key);
			json_str(&j, "key", key);
			free(key);
			json_str(&j, "value", dd->value);
			json_str(&j, "origin", "default");
			json_end_obj(&j);
		}
	for (size_t i = 0; i < cfg->nsettings; i++) {
		json_obj(&j, NULL);
		json_str(&j, "key", cfg->settings[i].key);
		json_str(&j, "value", cfg->settings[i].value);
		json_str(&j, "origin", cfg->settings[i].origin);
		json_end_obj(&j);
	}
	for (const struct cmd_env *e = cmd_environment; e->name; e++)
		if (!e->python && getenv(e->name)) {
			json_obj(&j, NULL);
			json_str(&j, "key", e->name);
			json_str(&j, "value", getenv(e->name));
			json_str(&j, "origin", "environment");
			json_end_obj(&j);
		}
	json_end_arr(&j);
	json_end_obj(&j);
	json_print(&sb);
}

/* ORIGIN<TAB>KEY=VALUE, as git prints them; values escaped for the terminal. */
static void print_text(const struct config *cfg)
{
	const char *names[256];
	size_t np = profile_names(cfg, names, ARRAY_SIZE(names));
	for (int i = 0; i < 2; i++)
		if (cfg->files[i].path)
			printf("# %s: %s\n", esc_str(cfg->files[i].path, 0), esc_str(cfg->files[i].state, 1));
	printf("# daemon: %s: %s; %s\n", esc_str(cfg->daemon_file.path, 0),
	       esc_str(cfg->daemon_file.state, 1), DAEMON_NOTE);
	printf("# profiles:");
	for (size_t i = 0; i < np; i++)
		printf("%s %s", i ? "," : "", esc_str(names[i], 0));
	printf("%s\n", np ? "" : " none");
	for (size_t i = 0; i < ARRAY_SIZE(builtin); i++)
		if (!is_set(cfg, builtin[i].key))
			printf("default\t%s=%s\n", builtin[i].key, builtin[i].value);
	for (const struct dconf_default *dd = dconf_defaults; cfg->daemon_read && dd->key; dd++)
		if (!is_daemon_set(cfg, dd->key))
			printf("default\tdaemon.%s=%s\n", dd->key, dd->value);
	for (size_t i = 0; i < cfg->nsettings; i++)
		printf("file:%s\t%s=%s\n", esc_str(cfg->settings[i].origin, 0),
		       esc_str(cfg->settings[i].key, 1), esc_str(cfg->settings[i].value, 2));
	for (const struct cmd_env *e = cmd_environment; e->name; e++)
		if (!e->python && getenv(e->name))
			printf("environment\t%s=%s\n", e->name, esc_str(getenv(e->name), 0));
}

static int config_cmd(struct cmd *c)
{
	struct config cfg;
	if (!config_load(&cfg))
		return EXIT_USAGE; /* the file, line and what is wrong were said */
	if (!config_load_daemon(&cfg)) {
		config_free(&cfg);
		return EXIT_USAGE; /* a bad [daemon] value: the daemon would not start either */
	}
	if (args_has(&c->args, 'j'))
		print_json(&cfg);
	else
		print_text(&cfg);
	config_free(&cfg);
	return EXIT_OK;
}

static const struct option longopts[] = {{"json", no_argument, NULL, 'j'}, {0}};

const struct cmd_entry cmd_config_entry = {
	.name = "config",
	.summary = "every effective setting and the file:line it came from",
	.usage = "config [--json]\n\n"
		 "List the configuration as gpuctl reads it: /etc/gpuctl.conf (unless\n"
		 "GPUCTL_CONFIG_NOSYSTEM is set), then ~/.config/gpuctl/config ($XDG_CONFIG_HOME),\n"
		 "then the environment. Each line is ORIGIN<TAB>KEY=VALUE, as\n"
		 "`git config --list --show-origin` prints: ORIGIN is file:PATH:LINE (the last file\n"
		 "and line that set it), default (built in) or environment. Profiles' keys are\n"
		 "profile.NAME.KEY, their job variables profile.NAME.env.VAR. Edit the files by hand.\n"
		 "The daemon's policy is daemon.KEY: the [daemon] section of the system file\n"
		 "($GPUCTL_SYSTEM_CONFIG, else /etc/gpuctl.conf) as a daemon started without --config\n"
		 "reads it when it starts; the running daemon may have been started with another.\n\n"
		 "  --json      {\"files\": [{path, state}], \"daemon\": {path, state, note},\n"
		 "              \"profiles\": [...],\n"
		 "              \"settings\": [{key, value, origin}]}\n",
	.args = {.longs = longopts},
	.exec = config_cmd,
};
