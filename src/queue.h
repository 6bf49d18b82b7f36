/* queue.h: the waiting queue shared by every user and process: one ticket file per waiter in
 * STATE/queue, named by arrival time and locked by its waiter, so a waiter killed with SIGKILL
 * leaves the queue by itself (its lock goes, and everyone ignores the ticket from then on). */
#ifndef GPUCTL_QUEUE_H
#define GPUCTL_QUEUE_H

#include "alloc.h"
#include "lease.h"

struct ticket {
	char file[64];
	uid_t uid;
	char user[64];
	pid_t pid;
	time_t since;
	struct alloc_req req;
	char cand[LEASE_MAX_GPUS][96];   /* candidate UUIDs */
	size_t ncand;
	char *name;
};

struct ticket_list {
	struct ticket *t;
	size_t n;
};

/* Under the global lock. The ticket's descriptor stays open (and locked) in *fd. */
bool queue_enter(const struct state *st, struct ticket *t, int *fd, struct gpu_error *err);
void queue_leave(const struct state *st, const struct ticket *t, int fd);
/* Live tickets in arrival order; the caller's own stale tickets are removed. */
void queue_load(const struct state *st, struct ticket_list *l);
void queue_free(struct ticket_list *l);

#endif
