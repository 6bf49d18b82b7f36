/* qtable.c: the daemon's queue table, requests in arrival order (design: daemon.h), for queue.c
 * above and the scheduling pass (sched.c): a request freed or taken out, the wall clock the
 * queue's times are kept in, the GPUs every request may use, `gpus` (the GPUs a user may ask
 * for, with their state), and the GPUs' use read again for the pass (one NVML refresh). */
#include "daemon/daemon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void queue_request_free(struct request *r)
{
	free(r->name);
	free(r->command);
	free(r);
}

uint64_t queue_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t queue_all_slots(const struct daemon *d)
{
	return d->nslots >= 64 ? ~0ULL : (1ULL << d->nslots) - 1;
}

void queue_remove(struct daemon *d, struct request *r)
{
	size_t k = 0;
	for (size_t i = 0; i < d->nreqs; i++)
		if (d->reqs[i] != r)
			d->reqs[k++] = d->reqs[i];
	d->nreqs = k;
	if (r->reserving_since) /* a head cancelled: its user's time counts on (order.c) */
		queue_reserve_add(d, r->uid, d->now - r->reserving_since, false);
	if (r->conn)
		r->conn->nreqs--;
	/* The queue file holds waiters only (list.c): a request answered at once changes nothing
	 * in it, and rewriting it for each (all of a user's maximal waiters, MBs) let one user's
	 * loop of requests that do not wait keep the daemon writing. */
	d->queue_dirty |= r->req.queued;
	queue_request_free(r);
	d->sched_due = true;
}

void queue_add_gpus(struct strbuf *sb, const struct daemon *d, const char *key, uint64_t mask)
{
	for (size_t i = 0; i < d->nslots; i++)
		if (mask >> i & 1)
			msg_add(sb, key, d->slots[i].uuid, NULL);
}

/* `gpus`: the machine as the daemon sees it, so that `run`, `env` and the Python module lease
 * without loading NVML themselves (lease/choose.c builds its GPU model from this): per GPU its
 * index, UUID, PCI bus id, state, compute capability, cores, MIG mode and name, then its MIG
 * devices; what CUDA_VISIBLE_DEVICES resolution, -g and the job's environment need. Public
 * facts (`gpuctl status` shows them to anyone); bounded by GPU_MAX and the message size. */
void queue_gpus(struct daemon *d, struct conn *c, const struct msg *m)
{
	uint64_t id = 0;
	msg_get_u64(m, "id", UINT64_MAX, &id);
	struct strbuf sb = {0};
	msg_begin(&sb, "gpus");
	msg_add_u64(&sb, "id", id);
	if (d->set->has_driver_version)
		msg_add(&sb, "driver", d->set->driver_version, NULL);
	for (size_t i = 0; i < d->set->ngpus && i < GPU_MAX; i++) {
		const struct gpu *g = &d->set->gpus[i];
		char cc[24];
		snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
		msg_key(&sb, "dev");
		msg_word_u64(&sb, g->index);
		msg_word(&sb, g->uuid[0] ? g->uuid : "-");
		msg_word(&sb, g->pci_bus_id[0] ? g->pci_bus_id : "-");
		msg_word(&sb, g->lost ? "lost" : g->inaccessible ? "inaccessible" : "ok");
		msg_word(&sb, gpu_has(g, GF_CC) ? cc : "-");
		if (gpu_has(g, GF_CORES))
			msg_word_u64(&sb, g->cores);
		else
			msg_word(&sb, "-");
		msg_word(&sb, !gpu_has(g, GF_MIG_MODE) ? "-" : g->mig_mode ? "1" : "0");
		msg_word(&sb, g->name[0] ? g->name : "-");
		/* 64 GPUs of 7 MIG devices each stay well inside one message (about 40 KiB). */
		for (size_t j = 0; j < g->nmigs && sb.len < PROTO_MAX_MSG - 1024; j++) {
			msg_key(&sb, "mig");
			msg_word_u64(&sb, i);
			msg_word_u64(&sb, g->migs[j].slot);
			msg_word_u64(&sb, g->migs[j].gi);
			msg_word_u64(&sb, g->migs[j].ci);
			msg_word(&sb, g->migs[j].uuid[0] ? g->migs[j].uuid : "-");
		}
	}
	conn_send(d, c, &sb, NULL, 0);
	sb_free(&sb);
}

void queue_usage_refresh(struct daemon *d)
{
	/* (per-process utilisation only where idle leases are judged by it: idle.c) */
	gpu_set_refresh(d->set, REFRESH_PROCS | REFRESH_NO_PROC_INFO |
			(d->conf.idle_util > 0 ? REFRESH_PROC_UTIL : 0));
	for (size_t i = 0; i < d->nslots; i++) {
		const struct gpu *g = &d->set->gpus[i];
		unsigned procs = 0;
		for (size_t j = 0; j < g->nprocs; j++)
			procs += (g->procs[j].type & PROC_COMPUTE) != 0;
		d->slots[i].use = (struct alloc_gpu){
			.index = g->index,
			.mem_valid = gpu_has(g, GF_MEM_USED) && gpu_has(g, GF_MEM_FREE),
			.used_mib = g->mem_used >> 20,
			.free_mib = g->mem_free >> 20,
			.util_valid = gpu_has(g, GF_UTIL_GPU),
			.util = g->util_gpu,
			.procs = procs,
		};
	}
	d->usage_at = d->now;
	share_usage(d); /* memory shares (issue 23) */
	mig_usage(d);   /* MIG instances (issue 23) */
}
