/* leaseopts.c: parsing the GPU-choice options shared by `run`, `env` and `submit`. */
#include "cmd/leaseopts.h"

#include <stdio.h>
#include <string.h>

int lease_opts_read(struct cmd *c, struct lease_opts *o)
{
	struct args *a = &c->args;
	unsigned long n = 0, util = 101;
	enum prefer p;
	const char *prefer = args_get(a, LO_PREFER), *minfree = args_get(a, LO_MINFREE);
	const char *wait = args_get(a, LO_WAIT);
	/* issue 24: submit -n 0, a CPU-only step (no lease) */
	const char *cnt = args_get(a, LO_COUNT);
	o->cpu_only = o->cpu_ok && cnt && word_u64(cnt, 0, &(uint64_t){0});
	if ((!o->cpu_only && !args_uint(a, LO_COUNT, 1, GPU_MAX, &n)) ||
	    !args_uint(a, LO_MAXUTIL, 0, 100, &util))
		return cmd_args_error(c);
	if (minfree && !parse_size_mib(minfree, &o->rq.min_free_mib))
		return cmd_bad_usage(c->entry, "--min-free-memory wants a size such as 20G or 512M "
				     "(at most " MAX_SIZE_TEXT "), not '%s'", minfree);
	if (prefer && !config_parse_prefer(prefer, &p))
		return cmd_bad_usage(c->entry, "--prefer is free-memory, index, util or topology, not '%s'", prefer);
	o->rq.count = (unsigned)n;
	o->rq.max_util = util <= 100 ? (int)util : -1;
	o->rq.prefer = prefer ? (int)p : -1;
	o->rq.gpus = args_get(a, 'g');
	o->rq.ignore_usage = args_has(a, LO_IGNORE);
	o->uuid = args_has(a, LO_UUID);
	o->rq.name = args_get(a, LO_NAME);
	o->wait_given = args_has(a, LO_WAIT);
	o->rq.wait = 0;
	if (wait && (!parse_duration(wait, MAX_DURATION, &o->rq.wait) || o->rq.wait <= 0))
		return cmd_bad_usage(c->entry, "--wait wants a duration such as 90, 30s, 5m or 2h "
				     "(at most " MAX_DURATION_TEXT "; --wait alone waits as long as it takes), "
				     "not '%s'", wait);
	/* --wait's duration is optional, so it is written joined (--wait=2m): `--wait 2m -- CMD`
	 * waited with no limit, then ran "2m" as the command. A first command word that reads as
	 * a duration is taken for that mistake. */
	double d;
	if (o->wait_given && !wait && a->argc && parse_duration(a->argv[0], MAX_DURATION, &d))
		return cmd_bad_usage(c->entry, "--wait takes its duration joined to it: --wait=%s "
				     "('%s' would be run as the command; a command of that name: ./%s)",
				     a->argv[0], a->argv[0], a->argv[0]);
	const char *tl = args_get(a, LO_TIME); /* time limits (issue 24) */
	if (tl && (!parse_duration(tl, MAX_DURATION, &o->rq.time_limit) || o->rq.time_limit <= 0))
		return cmd_bad_usage(c->entry, "--time wants a duration such as 90, 30s, 5m or 2h "
				     "(at most " MAX_DURATION_TEXT "), not '%s'", tl);
	o->profile = args_get(a, LO_PROFILE);
	o->rq.dry_run = args_has(a, LO_DRY);
	/* MIG instances (issue 23): -g GPU:INSTANCE, -g MIG-<uuid>, --mig PROFILE */
	const char *g = o->rq.gpus;
	unsigned long gi, inst;
	char tail;
	if (g && !strncmp(g, "MIG-", 4) && !strchr(g, ','))
		o->rq.mig_uuid = g;
	else if (g && sscanf(g, "%lu:%lu%c", &gi, &inst, &tail) == 2)
		o->rq.mig_slot = g;
	else if (g && strchr(g, ':') && !strchr(g, '.'))
		return cmd_bad_usage(c->entry, "-g GPU:INSTANCE leases one MIG instance (e.g. 0:1), "
				     "not '%s'", g);
	if (o->rq.mig_uuid || o->rq.mig_slot)
		o->rq.gpus = NULL;
	o->rq.mig_profile = args_get(a, LO_MIG);
	if ((o->rq.mig_uuid || o->rq.mig_slot || o->rq.mig_profile) && n > 1)
		return cmd_bad_usage(c->entry, "a MIG lease is one instance: leave -n out");
	if ((o->rq.mig_uuid || o->rq.mig_slot) && o->rq.mig_profile)
		return cmd_bad_usage(c->entry, "-g names the MIG instance; --mig PROFILE chooses one: "
				     "give one of them");
	const char *mem = args_get(a, LO_MEM); /* memory shares (issue 23) */
	if (mem && (!parse_size_mib(mem, &o->rq.mem_mib) || !o->rq.mem_mib))
		return cmd_bad_usage(c->entry, "--mem wants a size such as 20G or 512M (at most "
				     MAX_SIZE_TEXT "), not '%s'", mem);
	o->quiet = args_has(a, LO_QUIET);
	o->bind_cpus = args_has(a, LO_BIND);
	o->no_bind = args_has(a, LO_NO_BIND);
	return EXIT_OK;
}

bool lease_opts_apply(const struct cmd_entry *e, struct lease_opts *o, const struct config *cfg)
{
	if (o->profile) {
		const struct profile *p = config_profile(cfg, o->profile);
		if (!p) {
			const char *names[256];
			size_t n = 0;
			for (const struct profile *q = cfg->profiles; q && n < ARRAY_SIZE(names); q = q->next)
				names[n++] = q->name;
			struct strbuf near = {0};
			if (sb_nearest(&near, o->profile, names, n, "--profile ", ""))
				cmd_bad_usage(e, "no [profile %s] in %s or ~/.config/gpuctl/config; did you "
					      "mean %s? (`gpuctl config` lists the profiles)", o->profile,
					      config_system_path(), near.buf);
			else
				cmd_bad_usage(e, "no [profile %s] in %s or ~/.config/gpuctl/config "
					      "(`gpuctl config` lists the profiles)", o->profile,
					      config_system_path());
			sb_free(&near);
			return false;
		}
		if (!o->rq.count)
			o->rq.count = p->count;
		if (!o->rq.min_free_mib)
			o->rq.min_free_mib = p->min_free_mib;
		if (o->rq.max_util < 0)
			o->rq.max_util = p->max_util;
		if (o->rq.prefer < 0)
			o->rq.prefer = p->prefer;
		if (!o->rq.gpus)
			o->rq.gpus = p->gpus;
		if (p->uuid > 0)
			o->uuid = true;
		o->rq.profile_env = p->env;
	}
	if (!o->wait_given)
		o->rq.wait = cfg->wait;
	return true;
}

int lease_begin(struct cmd *c, struct lease_opts *o, struct config *cfg, struct grant *g)
{
	if (!config_load(cfg))
		return EXIT_USAGE;
	if (!lease_opts_apply(c->entry, o, cfg)) {
		config_free(cfg);
		return EXIT_USAGE;
	}
	/* The GPUs are the daemon's to choose, and its description of the machine is what the
	 * request is checked against (grant_acquire): NVML is not loaded here, so the job forked
	 * from this process starts without it. c->set, whoever filled it, is cmd.c's to free. */
	struct gpu_error err = {0};
	int rc = grant_acquire(&c->set, cfg, &o->rq, g, &err);
	if (rc == EXIT_OK)
		return EXIT_OK;
	/* NVML's own failure (where no daemon could describe the machine) reads as every command
	 * says it (cmd_open's "gpuctl: "); the daemon never answers with these codes. */
	bool nvml = rc == EXIT_NO_NVML || rc == EXIT_NVML_INIT;
	if (err.msg[0])
		fprintf(stderr, "%s: %s\n", nvml ? "gpuctl" : o->rq.who, err.msg);
	config_free(cfg);
	return rc;
}
