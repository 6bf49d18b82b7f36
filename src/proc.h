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
};

struct proc_cache;
struct proc_cache *proc_cache_new(void);
void proc_cache_free(struct proc_cache *pc);
/* Forget the previous refresh's processes (their strings die with them). */
void proc_cache_begin(struct proc_cache *pc);
/* Reads /proc once per pid and refresh. */
const struct proc_info *proc_lookup(struct proc_cache *pc, unsigned pid);

#endif
