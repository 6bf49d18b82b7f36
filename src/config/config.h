/* config/: rank 1, settings: what a user, the admin and the environment said, checked when read
 * and with where each came from. It knows no GPU (machine/ is its sibling): a setting that names
 * GPUs is kept as text or numbers for the layer that reads the machine. parse.c reads INI files
 * (inih, loaded at run time) for config.c (users' settings) and daemon.c (the daemon's policy).
 *
 * config.h: gpuctl's settings: /etc/gpuctl.conf (unless GPUCTL_CONFIG_NOSYSTEM is set), then
 * ~/.config/gpuctl/config (XDG), then the environment, then options. Admin keys (reserved GPUs,
 * per-user cap) count only from /etc. */
#ifndef GPUCTL_CONFIG_H
#define GPUCTL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum prefer { PREFER_FREE_MEMORY, PREFER_INDEX, PREFER_UTIL, PREFER_TOPOLOGY /* issue 26 */ };

struct profile {
	char *name;
	unsigned count;          /* 0: not set */
	uint64_t min_free_mib;
	int max_util;            /* -1: not set */
	int prefer;              /* -1: not set */
	int uuid;                /* -1: not set */
	char *gpus;
	char *backend;           /* "local" or "slurm"; NULL: not set */
	char **env;              /* NAME=VALUE for its jobs (env.NAME keys), NULL-terminated */
	size_t nenv;
	struct profile *next;
};

/* One effective setting and where it came from, for `gpuctl config` (git config --show-origin):
 * key as "defaults.prefer", "profile.big.env.TF_FORCE_GPU_ALLOW_GROWTH". */
struct setting {
	char *key, *value;
	char *origin;            /* "FILE:LINE", or "default" */
};

/* A user's settings. The machine's rules (when a GPU is free, reserved GPUs, per-user caps) are
 * the daemon's: struct dconf below, read from the [daemon] section of /etc/gpuctl.conf. */
struct config {
	enum prefer prefer;
	double wait;                  /* default for run: <0 no wait, 0 forever, >0 seconds */
	struct profile *profiles;
	char *prometheus;             /* the cluster view's server: status --prometheus */
	char *backend;                /* where `submit` sends jobs: "local" (NULL) or "slurm" */
	/* -- notifications (issue 24): [defaults] notify, notify_timeout -- */
	char *notify;                 /* a shell command run on a job's events (NULL: none) */
	double notify_timeout;        /* seconds a hook may run, then it is killed */
	bool bind_cpus;               /* [defaults] bind_cpus: run/submit --bind-cpus (issue 26) */
	/* [slurm]: --min-free-memory as Slurm GPU types or node features, "NAME:SIZE ..." (checked
	 * when read: struct mem_map) */
	char *slurm_gres_memory, *slurm_feature_memory;
	struct setting *settings;     /* in the order first set; a later file's value replaces */
	size_t nsettings, cap;
	struct {                      /* /etc's and the user's, for `gpuctl config` */
		char *path, *state;   /* state: "read", "none", or why it was not read */
	} files[2];
	struct {                      /* the system file as the daemon reads it (config_load_daemon) */
		char *path, *state;
	} daemon_file;
	bool daemon_read;             /* its [daemon] keys are in settings as daemon.KEY */
};

/* ---- the daemon's policy: the [daemon] section of the system file (config/daemon.c) ---- */

/* When a GPU counts as free ([daemon] free_max_memory_used, free_max_util,
 * free_allow_processes): alloc.c's rule. */
struct alloc_policy {
	uint64_t max_used_mib;       /* a GPU using more memory is busy */
	int max_util;
	bool allow_procs;
	/* memory shares (issue 23): kept free on a GPU with shares ([daemon] share_margin) */
	uint64_t share_margin_mib;
};

/* The order a scheduling pass considers the waiting requests in ([daemon] queue). */
enum queue_order {
	QUEUE_FAIR,                  /* fewest GPUs held first (counting this pass's grants), then
				      * the least past use (decayed GPU-seconds: usage.c), then
				      * the user served longest ago, then arrival: a user's 500
				      * requests do not hold up another's one */
	QUEUE_FIFO,                  /* arrival order across all users */
	/* -- fair share by past use (issue 24) -- */
	QUEUE_FAIR_HELD,             /* fair without past use: fewest GPUs held, then the user
				      * served longest ago (QUEUE_FAIR before issue 24) */
};

/* The daemon's policy, as `gpuctl daemon` reads it (dconf_defaults: its built-in values). */
struct dconf {
	char *reserved;                 /* GPUs never leased, as for -g */
	unsigned max_gpus_per_user;     /* 0: no cap */
	double max_wait;                /* seconds; 0: none */
	unsigned max_conn_per_user, max_conn, max_queued_per_user;
	double offer_timeout, idle_timeout, usage_poll, orphan_grace;
	double head_reserve;            /* seconds the queue's head may keep free GPUs idle; 0: no
					 * bound */
	struct alloc_policy free;       /* when a GPU counts as free */
	enum queue_order queue;         /* fair (default) or fifo */
	/* the device guard (issue 25): [daemon] guard = acl gives each lease's user an ACL entry on
	 * the device nodes of its GPUs (daemon/guard.c); guard_admin_group keeps access always */
	bool guard_acl;
	char *guard_admin_group;        /* a group name; NULL: none */
	/* -- time limits (issue 24): Slurm's DefaultTime and MaxTime; seconds, 0: none -- */
	double default_time, max_time;
	double kill_grace;              /* SIGTERM at the limit, SIGKILL this much later */
	/* -- idle leases (issue 24): seconds, 0: off -- */
	double idle_warn, idle_release;
	unsigned idle_util;             /* >0: a lease whose processes use at most this much SM
					 * is idle too; 0: idle means none of its processes there */
	char *idle_exempt;              /* users and @groups never warned nor released */
	double usage_half_life;         /* fair share by past use (issue 24): seconds */
	/* memory shares (issue 23) */
	bool share_stop;                /* [daemon] share_overuse = stop: a lease over its claim is
					 * stopped by its own client or runner (warn: only shown) */
	char *share_mps;                /* [daemon] share_mps: GPUs that run NVIDIA MPS, as for -g
					 * (a share there gets MPS's own memory limit) */
	/* issue 26: placement. The order of requests that name none ([daemon] prefer, default
	 * topology), and the preferred GPUs of users and groups ([daemon] preferred_gpus.NAME and
	 * preferred_gpus.@GROUP = LIST, in file order: a soft partition the choice tries first). */
	enum prefer prefer;
	struct dconf_pref {
		char *who;              /* a user name, or a group name after '@' */
		bool group;
		char *gpus;             /* the list as written (the daemon resolves it: -g's parser) */
	} *prefs;
	size_t nprefs;
};

/* The daemon's policy from path (NULL: the system file, whose absence means the built-in
 * values); false (said why on stderr, nothing to free) on a bad value or a file that cannot be
 * read. */
bool dconf_load(struct dconf *c, const char *path);
void dconf_free(struct dconf *c);

/* Loads defaults, the files and the environment. false (message printed, nothing left to free)
 * on a bad value. A user's file that cannot be read (another user's home under sudo) is a
 * warning, as git does for its XDG files; a configuration file must be a regular file of at
 * most 1 MiB (a FIFO or a device put there neither hangs nor eats memory). */
bool config_load(struct config *c);
void config_free(struct config *c);
/* The system file: GPUCTL_SYSTEM_CONFIG, else /etc/gpuctl.conf. */
const char *config_system_path(void);
/* For `gpuctl config`: the [daemon] settings of the system file as a daemon started without
 * --config reads them, into c->settings as daemon.KEY with their origins. false (said why) on a
 * bad value or a file that cannot be read. */
bool config_load_daemon(struct config *c);
/* The daemon's keys and built-in values as text, NULL-terminated. */
struct dconf_default { const char *key, *value; };
extern const struct dconf_default dconf_defaults[];
const struct profile *config_profile(const struct config *c, const char *name);
/* [slurm] gres_by_memory / features_by_memory: the site's Slurm GPU types or node features with
 * the memory of each of their GPUs ("a100:40G h100:80G"), for --min-free-memory on Slurm
 * (slurm-jobs.h). */
struct mem_map {
	size_t n;
	struct {
		char name[64];
		uint64_t mib;
	} e[32];
};
/* false with why set when text is not NAME:SIZE words. */
bool config_parse_mem_map(const char *text, struct mem_map *m, char *why, size_t whylen);
bool config_parse_prefer(const char *s, enum prefer *out);

#endif
