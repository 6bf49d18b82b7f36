/* exitwatch.h: a loop's processes watched for their exit by pidfds, one poll(2) a refresh
 * (see exitwatch.c): what lets proc.c skip the stat of a process it has read. */
#ifndef GPUCTL_EXITWATCH_H
#define GPUCTL_EXITWATCH_H

#include <stdbool.h>
#include <stddef.h>

struct exit_watch;
/* At most 1/parts (2 or more) of the descriptors RLIMIT_NOFILE leaves open at once; _max: at
 * most max. */
struct exit_watch *exit_watch_new(unsigned parts);
/* That share: how many descriptors exit_watch_new(parts) may hold under the limit now. */
size_t exit_watch_budget(unsigned parts);
struct exit_watch *exit_watch_new_max(size_t max);
void exit_watch_free(struct exit_watch *w);
/* A refresh begins: the pids that exited since the last one, and those it did not ask about,
 * are forgotten (their descriptors closed). */
void exit_watch_begin(struct exit_watch *w);
/* Whether pid is watched and had not exited at this refresh's begin: the process it names is
 * the one that was there when exit_watch_add was called for it. Marks it asked for. */
bool exit_watch_alive(struct exit_watch *w, unsigned pid);
/* Watches pid's process from now on (called before the stat that reads it); nothing when it
 * is already watched, or cannot be (no pidfd_open, the budget spent, not a process leader). */
void exit_watch_add(struct exit_watch *w, unsigned pid);
/* pid is not there (its stat failed): forgotten at the next begin. */
void exit_watch_drop(struct exit_watch *w, unsigned pid);

#endif
