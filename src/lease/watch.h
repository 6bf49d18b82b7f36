/* watch.h: a share's claim watched by the process that started its job (watch.c; memory
 * shares, issue 23). */
#ifndef GPUCTL_WATCH_H
#define GPUCTL_WATCH_H

#include "lease/holder.h"
#include "lease/hook.h"

#include <sys/types.h>

/* Waits for the child pid as waitpid does (returns its status); meanwhile, once the daemon
 * counts lease id over its claim, says so on stderr (who: "gpuctl run") and stops the job:
 * SIGTERM, then SIGKILL if it is still there 10 s later; its descendants (a wrapper's
 * children) as found at the SIGTERM get both too. The lease's idle watch w (issue 24; not
 * watching: nothing) is read meanwhile as run reads it: its lines on stderr, a release for
 * idleness stops the job the same way; hook: the notify hook's idle and time-near events. */
int share_watch_wait(pid_t pid, const char *id, const char *who, struct lwatch *w, struct lhook *hook);

#endif
