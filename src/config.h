/* config.h: gpuctl's settings: /etc/gpuctl.conf (unless GPUCTL_CONFIG_NOSYSTEM is set), then
 * ~/.config/gpuctl/config (XDG), then the environment, then options. Admin keys (reserved GPUs,
 * per-user cap) count only from /etc. */
#ifndef GPUCTL_CONFIG_H
#define GPUCTL_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

enum prefer { PREFER_FREE_MEMORY, PREFER_INDEX, PREFER_UTIL };

struct profile {
	char *name;
	unsigned count;          /* 0: not set */
	uint64_t min_free_mib;
	int max_util;            /* -1: not set */
	int prefer;              /* -1: not set */
	int uuid;                /* -1: not set */
	char *gpus;
	struct profile *next;
};

/* A user's settings. The machine's rules (when a GPU is free, reserved GPUs, per-user caps) are
 * the daemon's: struct dconf in daemon.h, read from the [daemon] section of /etc/gpuctl.conf. */
struct config {
	enum prefer prefer;
	double wait;                  /* default for run: <0 no wait, 0 forever, >0 seconds */
	struct profile *profiles;
	char *prometheus;             /* the cluster view's server: status --prometheus */
};

/* Loads defaults, the files and the environment. false (message printed, nothing left to free)
 * on a bad value. */
bool config_load(struct config *c);
void config_free(struct config *c);
const struct profile *config_profile(const struct config *c, const char *name);
bool parse_prefer(const char *s, enum prefer *out);
/* "20G", "512M", "1024" (MiB) -> MiB. */
bool parse_size_mib(const char *s, uint64_t *mib);
/* "90", "30s", "5m", "2h" -> seconds. */
bool parse_duration(const char *s, double *secs);

#endif
