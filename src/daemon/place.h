/* place.h: which free GPUs a request gets when the machine's topology or the admin's preferred
 * GPUs matter (issue 26), for alloc.c's alloc_pick, pure (unit-tested), and the daemon's side of
 * it (place.c's second half): the topology read once from its own NVML view, each user's
 * preferred GPUs from [daemon] preferred_gpus.*, the placement's reason in the offer.
 *
 * The choice, among the sets of `count` GPUs free for the request (lower is better, in order):
 *  1. GPUs outside the user's preferred list (a soft partition: it spills over, never waits);
 *  2. with prefer = topology: the fewest NVLinks between the members taken negatively (most
 *     NVLinks first), then their farthest PCIe path (PIX < PXB < PHB < NODE < SYS), then how many
 *     NUMA nodes their CPUs span;
 *  3. with prefer = topology: what the set breaks up, as the connectivity left among the free
 *     GPUs it does not take (NVLinks weigh most, then PCIe nearness): a 1-GPU job takes a lone GPU
 *     before one of the only free NVLinked pair;
 *  4. the preferred list's order (the earlier preferred GPUs first);
 *  5. the request's order for single GPUs (free memory, index or util; topology: free memory).
 * Without topology or preferences, that is exactly the best `count` GPUs in the order (5).
 *
 * Cost: every set is weighed while there are at most PLACE_EXHAUSTIVE of them (8 GPUs: 70 sets
 * of 4); past that (64 GPUs, 4 of them: 635,376 sets) a greedy search from each free GPU as seed,
 * adding the GPU that scores best next: free x count x free steps of O(count), about 2 million
 * operations for 8 of 64, bounded whatever the request. */
#ifndef GPUCTL_PLACE_H
#define GPUCTL_PLACE_H

#include "daemon/alloc.h"
#include "machine/topo.h"

#define PLACE_EXHAUSTIVE 4096

/* What alloc_pick weighs besides the free-GPU rule for one request (alloc_req.place). */
struct place {
	const struct topo *topo;     /* NULL: not known */
	unsigned char rank[GPU_MAX]; /* per GPU position: 0 not preferred, k the k-th preferred */
	bool has_pref;
	const char *pref_from;       /* "user alice", "group ml": where the list came from */
};

/* The best `r->count` of the GPUs in free (those free for r: alloc.c's rule, applied by the
 * caller), as above; 0 when fewer are free. */
uint64_t place_pick(const struct alloc_gpu *g, size_t n, const struct alloc_req *r, uint64_t free);
/* Why `mask` (a pick among free, the GPUs free for the request then), in words, into sb:
 * "GPUs 0,1: NV12 between them, PCIe PIX, NUMA node 0; ...". */
void place_explain(const struct place *pl, const struct alloc_gpu *g, size_t n,
		   enum prefer prefer, uint64_t mask, uint64_t free, struct strbuf *sb);
/* The CPUs local to all of mask's GPUs (their union) and their NUMA nodes as a list ("0",
 * "0,1"); false when the topology does not say for every one of them. */
bool place_cpus(const struct topo *t, uint64_t mask, struct strbuf *cpus, struct strbuf *numa);

#endif
