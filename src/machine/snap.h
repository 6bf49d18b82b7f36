/* snap.h: the machine model (gpu.h) as words of proto.h's format, for the daemon's shared
 * snapshot: the daemon refreshes once and serves the result to every `status`, `doctor`, `top`
 * and exporter that asks (daemon/snapshot.c), the client reads it back into a gpu_set
 * (lease/snapshot.c). Here, below both, is the one home of the encoding, so the two sides cannot
 * drift: the daemon and its clients share the machine layer (gpuctl.h).
 *
 * The form: records of lines, cut into parts (each one message, under PROTO_MAX_MSG bytes and
 * PROTO_MAX_LINES lines); the last part ends with the line "end". A record never spans parts.
 *   snap VERSION NFIELDS NPROCFIELDS WHAT NGPUS     the first line of the first part
 *   serial N [/ base N]                            the view's number; a delta's held view
 *   drv =VERSION / cuda N / slurm 0|1              the set's facts
 *   g INDEX LOST INACCESSIBLE =NAME =UUID =PCI =SERIAL =VBIOS [=ERROR]
 *   gn V V ...                                     the numeric fields, SNAP_FIELDS order, 15 a line
 *   gw FIELD =WORDS                                why a field is unavailable (the driver's words)
 *   m SLOT GI CI MEMVALID TOTAL USED =UUID =NAME   a MIG device of the GPU before
 *   p PID TYPE MEMVALID USED GI CI UIDVALID UID SLURMJOB UTILVALID SM MEM ENC DEC UTILTIME
 *   pi USER CMDLINE NAME                           its /proc facts: "=text", or "!" for none
 *   pc RUNTIME ROOTLESS OWNER =ID =PODUID          its container, as its cgroup says (issue 22:
 *                                                  the id only; each client names it itself)
 *   ps PPID START RSS CPUTIME ELAPSED CPUVALID CPUPCT   its stat (when read; doubles in %a)
 *   k INDEX COUNT                                  a delta's: processes of the held view (below)
 * Strings are "=" and the text ("=" alone: empty), so an empty text is a word too. Validity
 * travels as the model's bits (the `valid` word among the numbers, the per-process flags): a
 * value the driver could not give stays unavailable, never 0. A decoder refuses another version
 * or field count (the client then reads the machine itself). */
#ifndef GPUCTL_SNAP_H
#define GPUCTL_SNAP_H

#include "machine/gpu.h"
#include "base/proto.h"
#include "base/util.h"

#include <stdbool.h>
#include <stddef.h>

#define SNAP_VERSION 2   /* 2: containers' ids (pc), leases after the end, deltas */
#define SNAP_CHUNK 60000                   /* bytes per part, well under PROTO_MAX_MSG */
#define SNAP_LINES (PROTO_MAX_LINES - 16)  /* lines per part */
#define SNAP_MAX_PROCS (1u << 20)          /* processes a decoder takes, in all */

/* One record of an encoding: where its text lies, and for a process's, whose it is (deltas:
 * snap-delta.c). */
struct snap_rec {
	bool proc;
	unsigned gpu, pid;
	size_t part, off, len, lines;
};

/* The answer, cut in parts; each is a message without its first line (the verb and id, which
 * the sender adds). */
struct snap_parts {
	struct strbuf *parts;
	size_t nparts;
	size_t bytes;
	struct snap_rec *recs;    /* every record, in order (a full encoding's) */
	size_t nrecs, recs_cap;
};

/* Encodes set (every GPU, selected or not) as refreshed with what, as view number serial. */
void snap_encode(const struct gpu_set *set, unsigned what, uint64_t serial, struct snap_parts *out);
void snap_parts_free(struct snap_parts *p);

/* ---- frames (issue 22) ----
 * A table loop's refresh may ask the daemon for its frame laid out (the line "frame WHAT WIDTH
 * ROWS FLAGS TZOFF TZNAME" in the snapshot request): the daemon renders the view as the client
 * would (the same decoding, the same table), once for every asker of the same layout, and
 * passes it as a sealed memfd; ten users' watch loops then cost one decoding and one layout,
 * not ten. Where it does not (the request refused, a GPU lost, the device guard on, containers,
 * another zone), it says why and the client lays out the view itself. */
#define SNAP_FRAME_COLOR 1u
#define SNAP_FRAME_NO_PROCS 2u
#define SNAP_FRAME_RUNTIME 4u      /* the asker sees a container runtime (machine/container.h) */
#define SNAP_FRAME_MAX_COLS 4096   /* the widest terminal, and the most rows, a frame is laid out for */
struct snap_frame_ask {
	unsigned what;            /* what the client narrows the view to (snap_narrow) */
	unsigned width, rows;     /* table_opts' (0: no limit) */
	unsigned flags;           /* SNAP_FRAME_* */
	long tzoff;               /* the client's zone now: seconds east of UTC, and its name */
	char tzname[16];
};
/* The ask's line into a request; read back (false: absent or malformed). */
void snap_frame_ask_add(struct strbuf *sb, const struct snap_frame_ask *a);
bool snap_frame_ask_read(const struct msg *m, struct snap_frame_ask *a);
/* This process's zone now, as a frame's ask states it. */
void snap_frame_zone(long *tzoff, char *name, size_t len);

/* ---- deltas (issue 22; snap-delta.c) ----
 * A loop's client keeps the view it decoded last (its serial); the daemon answers one that
 * holds it with a delta: the same records, but each run of processes whose record is byte for
 * byte one of the held view's is the line "k INDEX COUNT" (copy COUNT processes of the held
 * view from its INDEX-th, on this GPU), and the first part says "base SERIAL". So a refresh's
 * bytes, and the client's decoding, scale with what changed, not with the machine. */
/* full (view serial) as a delta against base (a full encoding of view base_serial). */
void snap_delta(const struct snap_parts *full, const struct snap_parts *base, uint64_t base_serial,
		struct snap_parts *out);
/* The processes of a decoded view, in order, as the decoder read them (before any narrowing):
 * what the next delta's "k" lines copy from. Their strings are the decoder's store's: keep it
 * until the base is freed. */
struct snap_base {
	uint64_t serial;          /* 0: none */
	struct gpu_proc *procs;
	unsigned *gpu;            /* each one's GPU (index in the set) */
	size_t n, cap;            /* cap: the arrays' room */
};
void snap_base_take(struct snap_base *b, const struct gpu_set *set, uint64_t serial);
/* The same into b's own arrays (a base taken or retaken before, or zeroed), grown where short:
 * a loop alternates two bases, so each refresh copies into warm memory, not fresh pages. */
void snap_base_retake(struct snap_base *b, const struct gpu_set *set, uint64_t serial);
void snap_base_free(struct snap_base *b);

/* Decoding: parts in order into a set's GPUs. The strings (names, command lines, the driver's
 * words) live in the decoder's store until snap_store_free; the set's procs and migs arrays are
 * the set's own (gpu_set_free frees them). */
struct snap_store;
struct snap_decoder {
	struct gpu_set *set;      /* filled: ngpus and gpus made by the first part */
	struct snap_store *store;
	unsigned what;            /* the refresh the snapshot was made with */
	size_t procs;             /* decoded so far */
	long gpu;                 /* the GPU the lines belong to; -1 before the first */
	size_t nfield;            /* of its numeric fields, read so far */
	bool done;                /* "end" seen */
	uint64_t serial;          /* the view's ("serial" line; 0: not said) */
	const struct snap_base *base; /* the held view a delta copies from (NULL: none) */
	bool adopted;             /* the store is the held view's (snap_decode_adopt) */
	bool fresh;               /* a process line ("p", "pi", "pc", "ps") came, not only "k" */
	bool in_order;            /* every "k" so far went on from where the last one ended */
};
/* Starts decoding into set, which must have no GPUs yet. */
void snap_decode_begin(struct snap_decoder *dx, struct gpu_set *set);
/* One part (m's lines after its first). false with why on anything malformed. */
bool snap_decode_part(struct snap_decoder *dx, const struct msg *m, char *why, size_t whylen);
/* Whether a whole delta's processes are its base's, byte for byte and in order (every one kept,
 * none new, none gone, strings in the adopted store): the base then stands for this view too,
 * with no copy (a loop on a machine whose processes stay: most refreshes). */
bool snap_decode_same_procs(const struct snap_decoder *dx);
void snap_store_free(struct snap_store *s);
/* Deltas: decode into the held view's own store (held, whose blocks the base's strings are
 * in; it becomes the decoder's store, and the caller, whose view still points into it, frees it
 * only once that view is replaced), so a kept process's strings are not copied. Its strings
 * of processes gone stay until a decode without adoption: the caller adopts only a few times in
 * a row (SNAP_ADOPT_MAX), then copies, which compacts. Right after snap_decode_begin. */
#define SNAP_ADOPT_MAX 8
void snap_decode_adopt(struct snap_decoder *dx, struct snap_store *held);

/* What a refresh with what would have left of a snapshot made with more: the fields of groups
 * not asked for made unavailable (as a direct refresh leaves them), the process lists dropped
 * without REFRESH_PROCS, owners without their ask, stats, samples and jobs likewise; static
 * facts only once statics is true (a direct run reads them only when first asked). */
void snap_narrow(struct gpu_set *set, unsigned what, bool statics);

#endif
