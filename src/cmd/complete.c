/* complete.c: what the shells complete, from the command table at the time of the TAB, so a
 * command or an option another change adds completes with no script to regenerate:
 * `gpuctl __complete WORD... CURRENT` (the words after "gpuctl", the last one the word being
 * completed, maybe empty) prints one candidate a line, "VALUE<TAB>DESCRIPTION" (the shell keeps
 * those that start with CURRENT; bash drops the descriptions). The scripts in contrib/completion
 * (bash, zsh, fish) only pass the words on. Instead of candidates it may print one directive:
 * ":files" (complete file names) or ":commands" (a command to run, as after `gpuctl run --`).
 *
 * What completes: command names (and `help CMD`); a command's options (its entry's getopt
 * template: -h, -g and the entry's own), each with the text its usage gives it; an option's
 * values: GPUs (-g, --gpus, --gpu, -i, --id: this machine's indices and UUIDs, from NVML),
 * profiles (--profile: the configuration's), leases (--lease: the daemon's list), job ids (an
 * "ID" the usage shows, as positional or option value: the user's own job records), the choices
 * a usage spells "a|b|c" or lists as "--opt=value" lines, file names for FILE, PATH and DIR.
 * Nothing here may hang a shell: the daemon is asked with a short timeout; NVML is local. */
#include "base/escape.h"
#include "cmd/cmd.h"
#include "config/config.h"
#include "jobs/backend.h"
#include "jobs/job.h"
#include "lease/view.h"
#include "machine/gpu.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct copt {
	int letter;                  /* 0: long only */
	const char *name;            /* NULL: short only */
	int has_arg;                 /* no_argument, required_argument, optional_argument */
	int val;
};

/* The command's options, as args.c's template makes them: the entry's, --help and -g/--gpus. */
static size_t options(const struct cmd_entry *e, struct copt *o, size_t max)
{
	size_t n = 0;
	const struct option *l = e->args.longs;
	const char *shorts = e->args.shorts ? e->args.shorts : "";
	for (; l && l->name && n < max; l++) /* a letter of its own only where the template has it */
		o[n++] = (struct copt){l->val > 0 && l->val < 128 && isalnum(l->val) &&
				       strchr(shorts, l->val) ? l->val : 0, l->name, l->has_arg, l->val};
	if (n < max)
		o[n++] = (struct copt){'h', "help", no_argument, 'h'};
	if ((e->flags & CMD_GPUS) && n < max)
		o[n++] = (struct copt){'g', "gpus", required_argument, 'g'};
	if ((e->flags & CMD_GPUS) && e->args.gpus_alias && n < max)
		o[n++] = (struct copt){e->args.gpus_alias, NULL, required_argument, 'g'};
	/* Short letters without a long name of their own. */
	for (const char *s = shorts; *s && n < max; s++) {
		if (*s == ':' || *s == '+')
			continue;
		bool known = false;
		for (size_t i = 0; i < n; i++)
			known |= o[i].letter == *s;
		int arg = s[1] == ':' ? (s[2] == ':' ? optional_argument : required_argument) : no_argument;
		if (!known)
			o[n++] = (struct copt){*s, NULL, arg, *s};
		else
			for (size_t i = 0; i < n; i++)
				if (o[i].letter == *s && !o[i].name)
					o[i].has_arg = arg;
	}
	return n;
}

/* Where the usage spells the option: "--name" or "-x" followed by what is not part of a longer
 * name. NULL when it does not. */
static const char *spelled(const char *usage, const struct copt *o)
{
	char word[64];
	if (o->name)
		snprintf(word, sizeof word, "--%s", o->name);
	else
		snprintf(word, sizeof word, "-%c", o->letter);
	for (const char *s = strstr(usage, word); s; s = strstr(s + 1, word)) {
		char after = s[strlen(word)];
		if ((s == usage || s[-1] == ' ' || s[-1] == '[' || s[-1] == '(' || s[-1] == '|') &&
		    !isalnum((unsigned char)after) && after != '-')
			return s + strlen(word);
	}
	return NULL;
}

/* The option's text in its usage line: after the first run of 2+ spaces past its name. */
static void description(const char *usage, const struct copt *o, char *buf, size_t len)
{
	buf[0] = '\0';
	const char *s = spelled(usage, o);
	if (!s)
		return;
	const char *eol = strchr(s, '\n');
	const char *gap = strstr(s, "  ");
	if (!gap || (eol && gap > eol))
		return;
	gap += strspn(gap, " ");
	size_t n = eol ? (size_t)(eol - gap) : strlen(gap);
	snprintf(buf, len, "%.*s", (int)n, gap);
}

/* The option's value as the usage names it ("LIST", "sh|fish|json", "ID[,ID...]"), into buf;
 * "" when the usage does not show one. */
static void placeholder(const char *usage, const struct copt *o, char *buf, size_t len)
{
	buf[0] = '\0';
	struct copt alt = *o;
	const char *s = spelled(usage, o);
	if (!s && o->name && o->letter) {
		alt.name = NULL;
		s = spelled(usage, &alt);
	}
	if (!s)
		return;
	if (*s == '[')
		s++;
	if (*s != ' ' && *s != '=')
		return;
	s++;
	size_t n = strcspn(s, " ]\n");
	if (n && (isupper((unsigned char)*s) || memchr(s, '|', n)))
		snprintf(buf, len, "%.*s", (int)n, s);
}

/* A value another user could have chosen (a lease's name is in its description) reaches the
 * shell's menu, a terminal: descriptions are escaped (esc_fit, at most 70 columns); a value with
 * a control byte or a tab is not offered at all (the line format, and the command line). */
static void out(const char *value, const char *desc)
{
	for (const unsigned char *p = (const unsigned char *)value; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return;
	if (desc && *desc) {
		struct strbuf sb = {0};
		esc_fit(&sb, desc, 70, false);
		printf("%s\t%s\n", value, sb.buf ? sb.buf : "");
		sb_free(&sb);
	} else {
		printf("%s\n", value);
	}
}

/* ---- values ---- */

/* Whether the list so far ("--gpus=0,GPU-ab...,") names g already, by index or UUID. */
static bool listed(const char *lead, const struct gpu *g)
{
	const char *eq = strchr(lead, '=');
	char *copy = xstrdup(eq ? eq + 1 : lead), *save = NULL;
	bool hit = false;
	char idx[16];
	snprintf(idx, sizeof idx, "%u", g->index);
	for (char *t = strtok_r(copy, ",", &save); t && !hit; t = strtok_r(NULL, ",", &save))
		hit = !strcmp(t, idx) || !strcmp(t, g->uuid);
	free(copy);
	return hit;
}

/* This machine's GPUs, each by index and by UUID, after lead (the list so far), but those the
 * list names already. */
static void gpus(const char *lead)
{
	struct gpu_error err = {0};
	struct gpu_set *set = gpu_set_open(&err);
	if (!set)
		return;
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		char v[160];
		if (listed(lead, g))
			continue;
		snprintf(v, sizeof v, "%s%u", lead, g->index);
		out(v, g->name);
		if (g->uuid[0]) {
			snprintf(v, sizeof v, "%s%s", lead, g->uuid);
			out(v, g->name);
		}
	}
	gpu_set_free(set);
}

static void profiles(void)
{
	struct config cfg;
	if (!config_load(&cfg))
		return;
	for (const struct profile *p = cfg.profiles; p; p = p->next)
		out(p->name, "profile");
	config_free(&cfg);
}

static void leases(void)
{
	struct leaseview v = {0};
	struct gpu_error err = {0};
	if (leaseview_load_within(&v, 1.0, &err))
		for (size_t i = 0; i < v.nleases; i++) {
			char d[160];
			snprintf(d, sizeof d, "%s %s%s%s", v.leases[i].user, v.leases[i].kind,
				 v.leases[i].name ? " " : "", v.leases[i].name ? v.leases[i].name : "");
			out(v.leases[i].id, d);
		}
	leaseview_free(&v);
}

/* The user's own job records (this machine's backend; Slurm's are asked of squeue, too slow for
 * a TAB), most recent first. */
static void jobs(const char *lead)
{
	char *path = NULL;
	struct gpu_error err = {0};
	int dir = job_dir_open(&path, &err);
	free(path);
	if (dir < 0)
		return;
	struct job *all = NULL;
	size_t n = job_load_all(dir, &all, JOB_LOAD_MAKE);
	close(dir);
	for (size_t i = n; i-- > 0;) {
		char id[48], v[128], d[160];
		job_id_text(all[i].kind, all[i].id, id, sizeof id);
		snprintf(v, sizeof v, "%s%s", lead, id);
		snprintf(d, sizeof d, "%s %s", job_state_name(all[i].state),
			 all[i].name ? all[i].name : all[i].command ? all[i].command : "");
		out(v, d);
	}
	jobs_free(all, n);
}

/* "a|b|c" (brackets dropped), or the values of the usage's "--name=value" lines (which's
 * --format=index, --format=uuid, ...). */
static void choices(const char *usage, const struct copt *o, const char *ph, const char *prefix)
{
	if (strchr(ph, '|')) {
		char *copy = xstrdup(ph), *save = NULL;
		for (char *t = strtok_r(copy, "|[]", &save); t; t = strtok_r(NULL, "|[]", &save)) {
			char v[160];
			snprintf(v, sizeof v, "%s%s", prefix, t);
			out(v, NULL);
		}
		free(copy);
		return;
	}
	if (!o->name)
		return;
	char word[64];
	snprintf(word, sizeof word, "--%s=", o->name);
	for (const char *s = strstr(usage, word); s; s = strstr(s + 1, word)) {
		const char *v = s + strlen(word);
		size_t n = strcspn(v, " ,|[\n");
		if (n && islower((unsigned char)*v) && (v[n] == ' ' || v[n] == '\n')) {
			char val[160];
			snprintf(val, sizeof val, "%s%.*s", prefix, (int)n, v);
			out(val, NULL);
		}
	}
}

static void values(const struct cmd_entry *e, const struct copt *o, const char *cur,
		   const char *prefix)
{
	char ph[128], lead[256];
	placeholder(e->usage, o, ph, sizeof ph);
	/* A list (-g 0,1,<TAB>): the values so far stay. */
	const char *comma = strrchr(cur, ',');
	snprintf(lead, sizeof lead, "%s%.*s", prefix, comma ? (int)(comma - cur + 1) : 0, cur);
	if (o->val == 'g' || (o->name && (!strcmp(o->name, "gpu") || !strcmp(o->name, "id"))))
		gpus(lead);
	else if (o->name && !strcmp(o->name, "profile"))
		profiles();
	else if (o->name && !strcmp(o->name, "lease"))
		leases();
	else if (!strncmp(ph, "ID", 2))
		jobs(lead);
	else if (!strcmp(ph, "FILE") || !strcmp(ph, "PATH") || !strcmp(ph, "DIR"))
		puts(":files");
	else
		choices(e->usage, o, ph, prefix);
}

/* A positional "ID" in the synopsis (logs ID, wait ID..., cancel ID...), not an option's
 * value: job ids. */
static bool takes_ids(const struct cmd_entry *e)
{
	char *line = xstrndup(e->usage, strcspn(e->usage, "\n")), *save = NULL;
	bool ids = false, after_option = false;
	for (char *t = strtok_r(line, " ", &save); t && !ids; t = strtok_r(NULL, " ", &save)) {
		char *w = t + strspn(t, "[(|");
		ids = !after_option && (!strncmp(w, "ID]", 3) || !strncmp(w, "ID.", 3) || !strcmp(w, "ID"));
		after_option = *w == '-' && !strchr(w, ']') && !strchr(w, '|');
	}
	free(line);
	return ids;
}

static const struct copt *by_long(const struct copt *o, size_t n, const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (o[i].name && strlen(o[i].name) == len && !strncmp(o[i].name, name, len))
			return &o[i];
	return NULL;
}

static const struct copt *by_letter(const struct copt *o, size_t n, int letter)
{
	for (size_t i = 0; i < n; i++)
		if (o[i].letter == letter)
			return &o[i];
	return NULL;
}

static void list_options(const struct cmd_entry *e, const struct copt *o, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char v[80], d[160];
		description(e->usage, &o[i], d, sizeof d);
		if (o[i].name) {
			snprintf(v, sizeof v, "--%s", o[i].name);
			out(v, d);
		}
		if (o[i].letter) {
			snprintf(v, sizeof v, "-%c", o[i].letter);
			if (!d[0] && o[i].name)
				description(e->usage, &(struct copt){0, o[i].name, 0, 0}, d, sizeof d);
			out(v, d);
		}
	}
}

int cmd_complete(const struct cmd_entry *const *table, size_t n, int argc, char **argv)
{
	char err[512];
	const char *cur = argc > 0 ? argv[argc - 1] : "";
	if (argc <= 1) {
		if (*cur == '-') {
			out("--help", "the commands, the exit codes, the environment");
			out("--version", "gpuctl's version");
			return EXIT_OK;
		}
		out("help", "a command's usage");
		for (size_t i = 0; i < n; i++)
			if (!(table[i]->flags & CMD_INTERNAL))
				out(table[i]->name, table[i]->summary);
		return EXIT_OK;
	}
	if (!strcmp(argv[0], "help")) {
		for (size_t i = 0; argc == 2 && i < n; i++)
			if (!(table[i]->flags & CMD_INTERNAL))
				out(table[i]->name, table[i]->summary);
		return EXIT_OK;
	}
	const struct cmd_entry *e = cmd_find(table, n, argv[0], err, sizeof err);
	if (!e || (e->flags & CMD_INTERNAL))
		return EXIT_OK;
	struct copt o[128];
	size_t no = options(e, o, ARRAY_SIZE(o));
	const struct copt *pending = NULL;
	bool rest = false;          /* the options have ended */
	int positional = 0;
	for (int i = 1; i < argc - 1; i++) {
		const char *w = argv[i];
		if (pending) {
			pending = NULL;
		} else if (rest) {
			positional++;
		} else if (!strcmp(w, "--")) {
			rest = true;
		} else if (!strncmp(w, "--", 2)) {
			size_t len = strcspn(w + 2, "=");
			const struct copt *x = by_long(o, no, w + 2, len);
			if (x && x->has_arg == required_argument && !w[2 + len])
				pending = x;
		} else if (w[0] == '-' && w[1]) {
			for (const char *p = w + 1; *p; p++) {
				const struct copt *x = by_letter(o, no, *p);
				if (x && x->has_arg != no_argument) {
					if (!p[1] && x->has_arg == required_argument)
						pending = x;
					break;
				}
			}
		} else {
			positional++;
			rest = e->flags & CMD_COMMAND; /* run: the command starts here */
		}
	}
	if (pending) {
		values(e, pending, cur, "");
	} else if (rest && (e->flags & CMD_COMMAND)) {
		puts(positional ? ":files" : ":commands");
	} else if (!strncmp(cur, "--", 2) && strchr(cur, '=')) {
		size_t len = strcspn(cur + 2, "=");
		const struct copt *x = by_long(o, no, cur + 2, len);
		char prefix[80];
		snprintf(prefix, sizeof prefix, "%.*s", (int)len + 3, cur);
		if (x && x->has_arg != no_argument)
			values(e, x, cur + len + 3, prefix);
	} else if (*cur == '-') {
		list_options(e, o, no);
	} else if (takes_ids(e)) {
		jobs("");
	}
	return EXIT_OK;
}
