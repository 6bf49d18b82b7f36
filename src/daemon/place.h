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
 * Cost: every set is weighed while there are at most PLACE_EXHAUSTIVE of them (8 GPUs: at most
 * 70 sets, a few microseconds); past that (64 GPUs, 4 of them: 635,376 sets) a greedy search
 * from PLACE_SEEDS seeds spread over the free GPUs, adding the GPU that scores best next, each
 * candidate weighed in O(count) from the set so far: seeds x count x free x count, at most
 * 8 x 64 x 64 x 64 (2 million pair looks) whatever the request. Measured (2-core VM, -O2):
 * 64 GPUs, count 8: 0.07 ms a pick, count 32: 1.5 ms; 8 GPUs: 0.3-2.5 us. The greedy
 * result is best by NVLinks, PCIe and NUMA among those it tries, not always the least
 * fragmenting of all sets. */
#ifndef GPUCTL_PLACE_H
#define GPUCTL_PLACE_H

#include "daemon/alloc.h"
#include "machine/topo.h"

#define PLACE_EXHAUSTIVE 4096
#define PLACE_SEEDS 8

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
