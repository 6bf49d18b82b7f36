/* frame.c: the daemon's side of a table loop's frame (frame.h). It decodes as the client does,
 * with the same functions, so the frame is the client's by construction; what it must refuse is
 * whatever the client's table would take from the client itself. */
#include "view/frame.h"
#include "view/table.h"
#include "lease/snapshot.h"
#include "lease/view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void no_close(struct gpu_set *set)
{
	(void)set;
}

static const struct gpu_backend decoded = {.close = no_close};

/* A part as its message: "VERB" and the part (its lines begin with their newline). */
static bool decode(struct msg *m, const char *verb, const struct strbuf *part, struct strbuf *tmp,
		   char *why, size_t len)
{
	sb_reset(tmp);
	sb_adds(tmp, verb);
	sb_add(tmp, part->buf, part->len);
	return msg_decode(m, tmp->buf, tmp->len, why, len);
}

static bool refuse(char *why, size_t len, const char *text)
{
	snprintf(why, len, "%s", text);
	return false;
}

/* What gpu_set_refresh does after a snapshot's refresh (gpu_set_snapshot_procs), for the asker:
 * a frame only where it names no container (the daemon's ids say no process runs in one),
 * refused where the asker would read cgroups itself (the daemon sent no ids). */
static bool procs_seen(struct gpu_set *set, const struct snap_frame_ask *a, char *why, size_t len)
{
	if (!(a->what & REFRESH_PROCS) || (a->what & REFRESH_NO_PROC_INFO))
		return true;
	if ((a->what & REFRESH_CONTAINERS) && (a->flags & SNAP_FRAME_RUNTIME)) {
		if (!set->ctr_ids)
			return refuse(why, len, "the asker sees a container runtime the daemon does not");
		for (size_t i = 0; i < set->ngpus; i++)
			for (size_t j = 0; j < set->gpus[i].nprocs; j++)
				if (set->gpus[i].procs[j].ctr && set->gpus[i].procs[j].cmdline)
					return refuse(why, len, "a process runs in a container: its name "
						      "is each asker's to look up");
	}
	gpu_set_snapshot_procs(set, a->what, false);
	return true;
}

/* The view, then the leases, decoded; then what the client's table would take from itself. */
static bool lay_out(const struct snap_parts *view, const struct strbuf *list, size_t nlist,
		    const struct snap_frame_ask *a, struct gpu_set *set, struct snap_store **store,
		    struct leaseview *lv, struct strbuf *out, bool *timed, char *why, size_t len)
{
	long off;
	char zone[sizeof a->tzname];
	snap_frame_zone(&off, zone, sizeof zone);
	if (off != a->tzoff || strcmp(zone, a->tzname))
		return refuse(why, len, "the daemon's time zone is not the asker's");
	struct strbuf tmp = {0};
	struct snap_decoder dx;
	snap_decode_begin(&dx, set);
	bool ok = true;
	for (size_t i = 0; ok && i < view->nparts; i++) {
		struct msg m;
		ok = decode(&m, "snapshot", &view->parts[i], &tmp, why, len) &&
		     snap_decode_part(&dx, &m, why, len);
		if (ok)
			msg_free(&m);
	}
	*store = dx.store;
	if (ok && !dx.done)
		ok = refuse(why, len, "the view has no end");
	/* the groups the asker's refresh would have found missing (lease/snapshot.c's check) */
	if (ok && (a->what & ~dx.what & ~(unsigned)(REFRESH_COMPUTE_NAMES | REFRESH_NO_PROC_INFO |
						   REFRESH_CONTAINERS | REFRESH_CONTAINER_IDS)))
		ok = refuse(why, len, "the view lacks groups the frame shows");
	if (ok) {
		snap_narrow(set, a->what, (a->what & REFRESH_STATIC) != 0);
		snapshot_seed_names(set);   /* holders named as the view names their processes */
		set->ctr_ids = dx.what & REFRESH_CONTAINER_IDS;
		ok = procs_seen(set, a, why, len);
	}
	bool end = false;
	for (size_t i = 0; ok && i < nlist && !end; i++) {
		struct msg m;
		ok = decode(&m, "list", &list[i], &tmp, why, len);
		if (ok) {
			end = leaseview_take_part(lv, &m);
			msg_free(&m);
		}
	}
	sb_free(&tmp);
	if (!ok)
		return false;
	if (!end)
		return refuse(why, len, "the leases have no end");
	lv->present = true;
	if (!strcmp(lv->guard, "acl"))
		return refuse(why, len, "the device guard is on: which GPUs one may open is the asker's");
	for (size_t i = 0; i < set->ngpus; i++)
		if (set->gpus[i].lost || set->gpus[i].inaccessible)
			return refuse(why, len, "a GPU is lost or cannot be opened: the asker reports it");
	*timed = false;   /* a lease's idle time is counted to now */
	for (size_t i = 0; i < lv->nleases; i++)
		*timed |= lv->leases[i].idle_known && lv->leases[i].idle_since_ns;
	table_render(out, &(struct table_opts){.color = a->flags & SNAP_FRAME_COLOR,
		     .no_procs = a->flags & SNAP_FRAME_NO_PROCS, .slurm = table_job_column(set),
		     .width = (int)a->width, .rows = (int)a->rows, .leases = lv}, set);
	const char *nl = out->buf ? memchr(out->buf, '\n', out->len) : NULL;
	if (!nl || nl - out->buf < 8)
		return refuse(why, len, "the frame has no clock");
	return true;
}

bool frame_render(const struct snap_parts *view, const struct strbuf *list, size_t nlist,
		  const struct snap_frame_ask *a, struct strbuf *out, bool *timed, char *why,
		  size_t whylen)
{
	struct gpu_set *set = xcalloc(1, sizeof *set);
	set->backend = &decoded;
	struct snap_store *store = NULL;
	struct leaseview lv = {0};
	bool ok = lay_out(view, list, nlist, a, set, &store, &lv, out, timed, why, whylen);
	leaseview_free(&lv);
	gpu_set_free(set);
	snap_store_free(store);
	return ok;
}
