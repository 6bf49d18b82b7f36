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
	unsigned slurm_job;  /* its Slurm job (from its cgroup), 0 when none or not asked for */
	const struct ctr_ref *ctr; /* its container (container.h), NULL when none or not asked for */
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
struct ctr_ref;
struct proc_cache *proc_cache_new(void);
void proc_cache_free(struct proc_cache *pc);
/* Whether lookups also read /proc/PID/stat (off by default: only top and status --details pay). */
void proc_cache_stats(struct proc_cache *pc, bool on);
/* A refresh: proc_cache_begin, proc_lookup for each listed pid, proc_cache_end. The strings of
 * a process stay valid until the end of the next refresh that does not list it, or that finds
 * it changed. */
void proc_cache_begin(struct proc_cache *pc);
/* This refresh will look up at most n pids (a bound: a pid on several GPUs counts once each). */
void proc_cache_expect(struct proc_cache *pc, size_t n);
/* Also read each process's Slurm job (slurm.h) in this refresh: once per process, kept while it
 * is the same process. Off by default: a machine without Slurm reads no cgroup file. */
void proc_cache_want_jobs(struct proc_cache *pc, bool on);
/* Off: lookups in this refresh read the command line without the stat that tells the owner
 * (user NULL) and whether the process is the one read before (its text is read again), and
 * keep its argv[0] alone (cmdline is name); found says whether /proc had it. On by default:
 * one refresh of --query-compute-apps (which prints argv[0]) turns it off. */
/* Also read each process's container (container.h) in this refresh: once per process, kept
 * while it is the same process, in the same read of its cgroup file as its Slurm job. */
void proc_cache_want_containers(struct proc_cache *pc, bool on);
void proc_cache_want_owner(struct proc_cache *pc, bool on);
/* A loop's cache (issue 22): each process is watched for its exit (exitwatch.c), and one that
 * has not exited keeps the owner and command line read, without a stat, until its command line
 * is due to be read again (every 2 to 6 s), when its owner is stat'd anew. At most 1/parts of
 * the descriptors RLIMIT_NOFILE leaves are pidfds (exitwatch.h). */
void proc_cache_watch_exits(struct proc_cache *pc, unsigned parts);
void proc_cache_end(struct proc_cache *pc);
/* Stats /proc/PID once per pid and refresh; reads its command line when it is new, another
 * process than before, or its command line is due to be read again; with stats on, reads
 * /proc/PID/stat. A lookup after proc_cache_end (top's parents of jobs) belongs to the refresh
 * that ended. */
void proc_lookup(struct proc_cache *pc, unsigned pid, struct proc_info *out);
/* proc_lookup, and /proc/PID/stat read now if this refresh has not read it: for a refresh with
 * stats off, where only some processes' stats are shown (top reads the rows on screen only).
 * CPU use is then since the last reading of the same process, whichever refresh made it. The
 * owner is not named (user NULL): its rows have their names, and no directory is asked. */
void proc_lookup_stats(struct proc_cache *pc, unsigned pid, struct proc_info *out);

#endif
