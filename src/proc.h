/* proc.h: what /proc tells about a process that NVML lists: owner and command line, and when
 * asked (gpuctl top, status --details) its parent, start, host CPU and memory. */
#ifndef GPUCTL_PROC_H
#define GPUCTL_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_info {
	unsigned pid;
	bool found;          /* false: exited, or in another PID namespace */
	uid_t uid;
	const char *user;    /* name, or the numeric uid when it has none */
	char *cmdline;       /* arguments joined by spaces */
	char *name;          /* argv[0], as nvidia-smi's process_name */
	/* With proc_cache_stats on: /proc/PID/stat, read in the same visit. */
	bool stat_valid;
	char state;
	int ppid;
	unsigned long long start;    /* clock ticks after boot */
	double cpu_time;             /* seconds, user and system */
	double elapsed;              /* seconds since it started */
	uint64_t rss;                /* bytes */
	bool cpu_valid;              /* the previous refresh read the same process */
	double cpu_pct;              /* since the previous refresh, percent of one CPU */
};

struct proc_cache;
struct proc_cache *proc_cache_new(void);
void proc_cache_free(struct proc_cache *pc);
/* Whether lookups also read /proc/PID/stat (off by default: only top and status --details pay). */
void proc_cache_stats(struct proc_cache *pc, bool on);
/* Forget the previous refresh's processes (their strings die with them). With stats on, their
 * CPU counters are kept: a lookup in this refresh gives the CPU used since the last one. */
void proc_cache_begin(struct proc_cache *pc);
/* Reads /proc once per pid and refresh. */
const struct proc_info *proc_lookup(struct proc_cache *pc, unsigned pid);

#endif
