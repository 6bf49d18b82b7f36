/* leaseopts.c: parsing the GPU-choice options shared by `run` and `env`. */
#include "leaseopts.h"

#include <stdio.h>
#include <string.h>

int lease_option(const struct cmd_entry *e, int c, const char *arg, struct lease_opts *o)
{
	unsigned long n;
	enum prefer p;
	switch (c) {
	case LO_GPUS: o->rq.gpus = arg; return 1;
	case LO_COUNT:
		if (!parse_uint(arg, &n) || n == 0 || n > 64)
			return cmd_bad_usage(e, "-n wants a number of GPUs, 1-64, not '%s'", arg), -1;
		o->rq.count = (unsigned)n;
		return 1;
	case LO_MINFREE:
		if (!parse_size_mib(arg, &o->rq.min_free_mib))
			return cmd_bad_usage(e, "--min-free-memory wants a size such as 20G, not '%s'", arg), -1;
		return 1;
	case LO_MAXUTIL:
		if (!parse_uint(arg, &n) || n > 100)
			return cmd_bad_usage(e, "--max-util wants a percentage, not '%s'", arg), -1;
		o->rq.max_util = (int)n;
		return 1;
	case LO_PREFER:
		if (!parse_prefer(arg, &p))
			return cmd_bad_usage(e, "--prefer is free-memory, index or util, not '%s'", arg), -1;
		o->rq.prefer = (int)p;
		return 1;
	case LO_IGNORE: o->rq.ignore_usage = true; return 1;
	case LO_UUID: o->uuid = true; return 1;
	case LO_NAME: o->rq.name = arg; return 1;
	case LO_WAIT:
		o->wait_given = true;
		o->rq.wait = 0;
		if (arg && (!parse_duration(arg, &o->rq.wait) || o->rq.wait <= 0))
			return cmd_bad_usage(e, "--wait wants a duration such as 90, 30s, 5m or 2h, not '%s'", arg), -1;
		return 1;
	case LO_PROFILE: o->profile = arg; return 1;
	case LO_DRY: o->rq.dry_run = true; return 1;
	case LO_QUIET: o->quiet = true; return 1;
	}
	return 0;
}

int lease_begin(const struct cmd_entry *e, struct lease_opts *o, struct config *cfg,
		struct gpu_set **set, struct grant *g)
{
	*set = NULL;
	if (!config_load(cfg))
		return EXIT_USAGE;
	if (!lease_opts_finish(e, o, cfg)) {
		config_free(cfg);
		return EXIT_USAGE;
	}
	struct gpu_error err = {0};
	int rc;
	if (!(*set = gpu_set_open(&err))) {
		fprintf(stderr, "gpuctl: %s\n", err.msg);
		rc = err.code;
	} else if ((rc = grant_acquire(*set, cfg, &o->rq, g, &err)) == EXIT_OK) {
		return EXIT_OK;
	} else {
		fprintf(stderr, "%s: %s\n", o->rq.who, err.msg);
	}
	gpu_set_free(*set);
	*set = NULL;
	config_free(cfg);
	return rc;
}

bool lease_opts_finish(const struct cmd_entry *e, struct lease_opts *o, const struct config *cfg)
{
	if (o->profile) {
		const struct profile *p = config_profile(cfg, o->profile);
		if (!p) {
			cmd_bad_usage(e, "no [profile %s] in /etc/gpuctl.conf or ~/.config/gpuctl/config", o->profile);
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
	}
	if (!o->wait_given)
		o->rq.wait = cfg->wait;
	return true;
}
