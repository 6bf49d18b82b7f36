/* leaseopts.h: the options `run`, `env` and `submit` share for choosing GPUs, and profiles. */
#ifndef GPUCTL_LEASEOPTS_H
#define GPUCTL_LEASEOPTS_H

#include "cmd/cmd.h"
#include "config/config.h"
#include "lease/grant.h"

enum {
	LO_COUNT = 'n', LO_QUIET = 'q',
	LO_MINFREE = 300, LO_MAXUTIL, LO_PREFER, LO_IGNORE, LO_UUID, LO_NAME, LO_WAIT, LO_PROFILE,
	LO_DRY,
	LO_TIME = 390,     /* time limits (issue 24); 340s: shares, 360s: bind, 380: env --events-fd */
	/* memory shares (issue 23) */
	LO_MEM = 340, LO_MIG,
	LO_BIND = 360, LO_NO_BIND,   /* issue 26 (below submit's 400s): run and submit only (BIND_LONGOPTS) */
	/* notify hooks of run and env leases (issue 24 follow-up; lease/hook.h): --notify CMD */
	LO_NOTIFY = 430,
};

#define NOTIFY_LONGOPTS {"notify", required_argument, NULL, LO_NOTIFY}

/* -g, --gpus comes with CMD_GPUS. */
#define LEASE_LONGOPTS                                                         \
	{"count", required_argument, NULL, LO_COUNT},                           \
	{"min-free-memory", required_argument, NULL, LO_MINFREE},               \
	{"max-util", required_argument, NULL, LO_MAXUTIL},                      \
	{"prefer", required_argument, NULL, LO_PREFER},                         \
	{"ignore-usage", no_argument, NULL, LO_IGNORE},                         \
	{"uuid", no_argument, NULL, LO_UUID},                                   \
	{"name", required_argument, NULL, LO_NAME},                             \
	{"wait", optional_argument, NULL, LO_WAIT},                             \
	{"profile", required_argument, NULL, LO_PROFILE},                       \
	{"dry-run", no_argument, NULL, LO_DRY},                                 \
	{"quiet", no_argument, NULL, LO_QUIET},                                 \
	/* time limits (issue 24) */                                            \
	{"time", required_argument, NULL, LO_TIME},                             \
	/* memory shares (issue 23) */                                          \
	{"mem", required_argument, NULL, LO_MEM},                               \
	{"mig", required_argument, NULL, LO_MIG}

#define LEASE_USAGE                                                                              \
	"  -n, --count N              how many GPUs (default 1, or as many as -g names)\n"       \
	"  -g, --gpus LIST            choose among these: indices, UUIDs or prefixes, bus ids\n"  \
	"      --min-free-memory SIZE each GPU needs this much free memory (e.g. 20G)\n"         \
	"      --max-util PCT         a GPU busier than this is not free (default: the daemon's)\n" \
	"      --prefer ORDER         which free GPUs first: topology (best connected sets,\n"  \
	"                             the daemon's default), free-memory, index or util\n"       \
	"      --ignore-usage         only leases count, not observed memory, load or processes\n" \
	"      --uuid                 CUDA_VISIBLE_DEVICES with UUIDs instead of indices\n"       \
	"      --name NAME            shown by `gpuctl leases` and `gpuctl status`\n"            \
	"      --wait[=DURATION]      queue until the GPUs are free (fair share: fewest GPUs\n"   \
	"                             held first), at most DURATION (90, 30s, 5m, 2h)\n"       \
	"      --profile NAME         defaults from [profile NAME] in the config\n"              \
	"      --dry-run              show the choice and the environment, change nothing\n"     \
	"  -q, --quiet                no line on stderr about what was leased\n"             \
	"      --time DURATION        the lease's time limit (90, 30s, 5m, 2h): the job gets\n" \
	"                             SIGTERM then, SIGKILL kill_grace later (default: the\n"  \
	"                             daemon's default_time; at most its max_time)\n"           \
	"      --mem SIZE             a share: SIZE of each GPU's memory (e.g. 20G), not the\n"   \
	"                             whole GPU; other shares may use the rest (best fit)\n"      \
	"      --mig PROFILE          a free MIG instance of this profile (e.g. 3g.71gb);\n"      \
	"                             -g GPU:INSTANCE or -g MIG-<uuid> names one\n"

/* issue 26: --bind-cpus, for run and submit (env starts no job). */
#define BIND_LONGOPTS                                                          \
	{"bind-cpus", no_argument, NULL, LO_BIND},                              \
	{"no-bind-cpus", no_argument, NULL, LO_NO_BIND}
#define BIND_USAGE                                                                               \
	"      --bind-cpus            start the job on the CPUs local to its GPUs (those of them\n" \
	"                             you may use) and say so; GPUCTL_NUMA_NODE names their\n"   \
	"                             node. [defaults] bind_cpus = true: the default;\n"         \
	"      --no-bind-cpus         not bound, whatever the config says\n"

/* The options above (and -g) into o. EXIT_OK, or a usage error (printed). */
int lease_opts_read(struct cmd *c, struct lease_opts *o);
/* Applies the profile and the config's defaults to what the options left unset; false: a usage
 * error (printed). */
bool lease_opts_apply(const struct cmd_entry *e, struct lease_opts *o, const struct config *cfg);
/* What run and env start with: the configuration, then the lease (o->rq.command set by the
 * caller), with the machine as the daemon describes it (c->set; NVML is not loaded). EXIT_OK:
 * *cfg and g are the caller's to release, c->set is cmd.c's; otherwise the reason has been
 * printed and nothing is left open. */
int lease_begin(struct cmd *c, struct lease_opts *o, struct config *cfg, struct grant *g);

#endif
