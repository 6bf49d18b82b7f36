/* proc.h: what /proc tells about a process that NVML lists: owner and command line. */
#ifndef GPUCTL_PROC_H
#define GPUCTL_PROC_H

#include <stdbool.h>
#include <sys/types.h>

struct proc_info {
	unsigned pid;
	bool found;          /* false: exited, or in another PID namespace */
	uid_t uid;
	const char *user;    /* name, or the numeric uid when it has none */
	char *cmdline;       /* arguments joined by spaces */
	char *name;          /* argv[0], as nvidia-smi's process_name */
	unsigned slurm_job;  /* its Slurm job (from its cgroup), 0 when none or not asked for */
};

struct proc_cache;
struct proc_cache *proc_cache_new(void);
void proc_cache_free(struct proc_cache *pc);
/* A refresh: proc_cache_begin, proc_lookup for each listed pid, proc_cache_end. The strings of
 * a process stay valid until the end of the next refresh that does not list it, or that finds
 * it changed. */
void proc_cache_begin(struct proc_cache *pc);
/* Also read each process's Slurm job (slurm.h) in this refresh: once per process, kept while it
 * is the same process. Off by default: a machine without Slurm reads no cgroup file. */
void proc_cache_want_jobs(struct proc_cache *pc, bool on);
void proc_cache_end(struct proc_cache *pc);
/* Stats /proc/PID once per pid and refresh; reads its command line when it is new, another
 * process than before, or its command line is due to be read again. */
void proc_lookup(struct proc_cache *pc, unsigned pid, struct proc_info *out);

#endif
