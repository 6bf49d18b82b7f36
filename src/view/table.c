/* table.c: the status table (table.h): a line per GPU, its lease and its processes, in the
 * columns there are; for a loop on a terminal, in the lines there are too, as top draws. What
 * another user controls (process names, command lines, user and lease names) is escaped. */
#include "view/table.h"
#include "view/container.h"
#include "machine/runtime.h"

#include "base/escape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"

#define GPU_LINE_FIXED 51     /* a GPU line's columns besides its name */
#define PROC_LINE_FIXED 42    /* a process line's columns before the command, besides the user */
#define MIN_COMMAND 20        /* the user column grows only while this much is left */

/* Column widths of one frame, from what it shows and the room there is. */
struct layout {
	int width;                /* 0: no limit (not a terminal): nothing is cut */
	int name_w, user_w;
	size_t sub_limit;         /* lines under each GPU (a loop on a terminal); SIZE_MAX: all */
	size_t spare;             /* lines left over: one more each for the first clipped GPUs */
};

/* Green says "free": only for a GPU with no lease, no process and little use (the daemon's
 * default rule), never for a busy or leased one whose load happens to be low. */
static const char *level_color(const struct table_opts *o, double pct, bool busy)
{
	if (!o->color)
		return "";
	return pct >= 90 ? C_RED : pct >= 50 ? C_YELLOW : busy ? "" : C_GREEN;
}

/* v right-aligned in width columns (more when it needs them) at d; returns the end. By hand:
 * a process line was five snprintf calls, most of what the table cost on 10,000 processes. */
static char *put_uint(char *d, unsigned long long v, int width)
{
	char digits[24];
	int k = (int)sizeof digits;
	do
		digits[--k] = (char)('0' + v % 10);
	while (v /= 10);
	int len = (int)sizeof digits - k;
	for (int i = len; i < width; i++)
		*d++ = ' ';
	memcpy(d, digits + k, (size_t)len);
	return d + len;
}

/* Pads s to w visible columns; colour codes take no room, so they are added around the padding.
 * (By hand, as "%*s" pads: these texts are ASCII. A loop's refresh of 16 GPUs made 200 printf
 * calls for their lines, a tenth of its time, issue 22.) */
static void col(struct strbuf *sb, const struct table_opts *o, const char *color, int w,
		const char *s)
{
	bool c = o->color && color && *color;
	if (c)
		sb_adds(sb, color);
	size_t n = strlen(s);
	for (int i = (int)n; i < w; i++)
		sb_addc(sb, ' ');
	sb_add(sb, s, n);
	if (c)
		sb_adds(sb, C_RESET);
}

/* v then the text after it, into buf (at least 48 bytes) */
static const char *uint_then(char *buf, unsigned long long v, const char *after)
{
	char *d = put_uint(buf, v, 0);
	size_t n = strlen(after);
	memcpy(d, after, n + 1);
	return buf;
}

/* Who holds the GPU's lease. */
static const struct lease_info *holder(const struct table_opts *o, const struct gpu *g)
{
	return o->leases ? leaseview_holder(o->leases, g->uuid) : NULL;
}

/* memory shares (issue 23): the GPU's shares, as the daemon counts them (NULL: none). */
static const struct share_gpu *shares(const struct table_opts *o, const struct gpu *g)
{
	return o->leases ? leaseview_share_gpu(o->leases, g->uuid) : NULL;
}

static bool gpu_busy(const struct table_opts *o, const struct gpu *g)
{
	return holder(o, g) || shares(o, g) ||
	       (o->leases && leaseview_held(o->leases, g->uuid)) || g->nprocs ||
	       (gpu_has(g, GF_UTIL_GPU) && g->util_gpu > 10) ||
	       (gpu_has(g, GF_MEM_USED) && g->mem_used > (1ULL << 30));
}

/* A GPU's name in w columns: whole when it fits; else without the words every NVIDIA board
 * repeats ("NVIDIA ", "GeForce "), and only then cut, with an ellipsis. */
static void gpu_name(struct strbuf *sb, const char *name, int w)
{
	static const char *const redundant[] = {"NVIDIA ", "GeForce "};
	for (size_t i = 0; i < ARRAY_SIZE(redundant) && esc_cols(name) > w; i++)
		if (!strncmp(name, redundant[i], strlen(redundant[i])) && name[strlen(redundant[i])])
			name += strlen(redundant[i]);
	esc_fit(sb, name, w, true);
}

static void table_gpu(struct strbuf *sb, const struct table_opts *o, const struct layout *lay,
		      const struct gpu *g)
{
	char util[48] = "N/A", temp[48] = "N/A", pw[96] = "N/A", idx[32];
	struct mib_text mem = {"N/A"};
	char *e = put_uint(idx, g->index, 3);
	*e++ = ' ';
	sb_add(sb, idx, (size_t)(e - idx));
	if (o->color)
		sb_adds(sb, C_BOLD);
	gpu_name(sb, g->name[0] ? g->name : "N/A", lay->name_w);
	if (o->color)
		sb_adds(sb, C_RESET);
	if (g->lost || g->inaccessible) {
		struct strbuf why = {0};
		esc_printable(&why, g->error ? g->error : "");
		sb_addf(sb, "  %s%s: %s%s\n", o->color ? C_RED : "", g->lost ? "LOST" : "NO ACCESS",
			why.buf ? why.buf : "", o->color ? C_RESET : "");
		sb_free(&why);
		return;
	}
	if (gpu_has(g, GF_UTIL_GPU))
		uint_then(util, g->util_gpu, "%");
	if (gpu_has(g, GF_MEM_USED) && gpu_has(g, GF_MEM_TOTAL))
		mem = mib_of_text(g->mem_used, g->mem_total);
	if (gpu_has(g, GF_TEMP))
		uint_then(temp, g->temp, "C");
	if (gpu_has(g, GF_POWER)) {
		char lim[48];
		uint_then(lim, (g->power_limit_mw + 500) / 1000, " W");
		uint_then(pw, (g->power_mw + 500) / 1000, gpu_has(g, GF_POWER_LIMIT) ? " / " : " W");
		if (gpu_has(g, GF_POWER_LIMIT))
			strcat(pw, lim);
	}
	double mem_pct = gpu_has(g, GF_MEM_TOTAL) && g->mem_total
				 ? 100.0 * (double)g->mem_used / (double)g->mem_total : 0;
	bool busy = gpu_busy(o, g);
	sb_adds(sb, "  ");
	col(sb, o, gpu_has(g, GF_UTIL_GPU) ? level_color(o, g->util_gpu, busy) : C_DIM, 4, util);
	sb_adds(sb, "  ");
	col(sb, o, gpu_has(g, GF_MEM_USED) ? level_color(o, mem_pct, busy) : C_DIM, 18, mem.s);
	sb_adds(sb, "  ");
	col(sb, o, gpu_has(g, GF_TEMP) ? "" : C_DIM, 4, temp);
	sb_adds(sb, "  ");
	col(sb, o, gpu_has(g, GF_POWER) ? "" : C_DIM, 13, pw);
	sb_addc(sb, '\n');
}

/* memory shares (issue 23): a line for the GPU's shares (how many, the room left), then one per
 * share (its holder, claim and use); names are other users' text: escaped. */
static void table_shares(struct strbuf *sb, const struct table_opts *o, const struct layout *lay,
			 const struct gpu *g)
{
	const struct share_gpu *s = shares(o, g);
	if (!s)
		return;
	char *text = xasprintf("shared: %u share%s, %llu MiB claimed, %llu MiB left to claim", s->count,
			       s->count == 1 ? "" : "s", (unsigned long long)s->claimed,
			       (unsigned long long)s->room);
	sb_addf(sb, "      %s", o->color ? C_YELLOW : "");
	esc_fit(sb, text, lay->width ? lay->width - 6 : -1, false);
	sb_addf(sb, "%s\n", o->color ? C_RESET : "");
	free(text);
	const struct lease_info *l;
	for (size_t k = 0; (l = leaseview_share(o->leases, g->uuid, k)); k++) {
		text = xasprintf("share: %s%s%s%s, pid %d, %llu MiB, uses %llu MiB%s", l->user,
				 l->name ? " '" : "", l->name ? l->name : "", l->name ? "'" : "", (int)l->pid,
				 (unsigned long long)l->mem_mib,
				 (unsigned long long)leaseview_share_used(l, g->uuid),
				 l->over ? ", OVER ITS CLAIM" : "");
		sb_addf(sb, "        %s", o->color ? (l->over ? C_RED : C_YELLOW) : "");
		esc_fit(sb, text, lay->width ? lay->width - 8 : -1, false);
		sb_addf(sb, "%s\n", o->color ? C_RESET : "");
		free(text);
	}
}

/* The lease line; the holder's name and the lease's are another user's text: escaped. */
static void table_lease(struct strbuf *sb, const struct table_opts *o, const struct layout *lay,
			const struct gpu *g)
{
	const struct lease_info *h = holder(o, g);
	if (!h) {
		table_shares(sb, o, lay, g);
		return;
	}
	char when[16];
	struct tm tm;
	/* localtime_r: localtime() sets the zone up again (tzset: TZ read, a lock taken) at each
	 * call, each lease of each refresh of a loop (issue 22) */
	strftime(when, sizeof when, "%H:%M", localtime_r(&h->since, &tm));
	/* idle leases (issue 24): the idle time once it is a minute or warned */
	long long idle = leaseview_idle_seconds(h);
	char idl[64] = "";
	if (idle >= 60 || h->idle_warned)
		snprintf(idl, sizeof idl, ", idle %lld:%02lld:%02lld", idle / 3600, idle / 60 % 60, idle % 60);
	/* the text in pieces, not one xasprintf: a line per GPU at each refresh of a loop */
	struct strbuf text = {0};
	char pid[32];
	sb_adds(&text, "lease: ");
	sb_adds(&text, h->user);
	if (h->name) {
		sb_adds(&text, " '");
		sb_adds(&text, h->name);
		sb_addc(&text, '\'');
	}
	sb_adds(&text, ", pid ");
	if (h->pid < 0)
		sb_addc(&text, '-');
	sb_adds(&text, uint_then(pid, h->pid < 0 ? -(long long)h->pid : h->pid, ", "));
	sb_adds(&text, h->kind);
	sb_adds(&text, " since ");
	sb_adds(&text, when);
	sb_adds(&text, idl);
	sb_adds(sb, "      ");
	if (o->color)
		sb_adds(sb, C_YELLOW);
	esc_fit(sb, text.buf, lay->width ? lay->width - 6 : -1, false);
	if (o->color)
		sb_adds(sb, C_RESET);
	sb_addc(sb, '\n');
	sb_free(&text);
}

/* "sm  5%" or "sm   -" (no sample: idle for the last second, or none given, as nvidia-smi pmon). */
static char *util_col(char *d, const char *label, bool valid, unsigned pct)
{
	size_t n = strlen(label);
	memcpy(d, label, n);
	d += n;
	if (!valid) {
		memcpy(d, "   -", 4);
		return d + 4;
	}
	d = put_uint(d, pct, 3);
	*d++ = '%';
	return d;
}

/* Lines under a GPU: its MIG devices, then its processes (or the line saying there are none to
 * show). A loop on a terminal clips them to fit the screen. */
static size_t sub_lines(const struct table_opts *o, const struct gpu *g)
{
	if (g->lost || g->inaccessible)
		return 0;
	return g->nmigs + (o->no_procs ? 0 : gpu_has(g, GF_PROCESSES) ? g->nprocs : 1);
}

/* What a process row says for a command line /proc did not give. */
static const char not_in_proc[] = "(not in /proc: exited, or another PID namespace)";

static void table_proc(struct strbuf *sb, const struct table_opts *o, const struct layout *lay,
		       const struct gpu_proc *p)
{
	char mig[24] = "", codec[32] = "";
	if (p->gi != NO_INSTANCE)
		snprintf(mig, sizeof mig, "mig %u/%u ", p->gi, p->ci);
	if (p->util_valid && (p->enc_util || p->dec_util))
		snprintf(codec, sizeof codec, "enc %u%% dec %u%% ", p->enc_util, p->dec_util);
	sb_adds(sb, "      ");
	int cols = 6 + esc_fit(sb, p->user ? p->user : "-", lay->user_w, true);
	char line[192], job[24] = "";
	/* Beside the user on a Slurm node: the job its cgroup names, "-" for none. */
	if (o->slurm && p->slurm_job)
		snprintf(job, sizeof job, "job %-8u ", p->slurm_job);
	else if (o->slurm)
		snprintf(job, sizeof job, "%-13s", "-");
	/* " JOB    PID   MEM MiB  sm  5% mem  3% CODEC MIG TYPE" */
	char *d = line;
	*d++ = ' ';
	d = stpcpy(d, job);
	d = put_uint(d, p->pid, 7);
	*d++ = ' ';
	if (p->mem_valid) {  /* "%10s" of "N MiB" */
		d = put_uint(d, mib(p->used_mem), 6);
		d = stpcpy(d, " MiB");
	} else {
		d = stpcpy(d, "       N/A");
	}
	*d++ = ' ';
	*d++ = ' ';
	d = util_col(d, "sm", p->util_valid, p->sm_util);
	*d++ = ' ';
	d = util_col(d, "mem", p->util_valid, p->mem_util);
	*d++ = ' ';
	d = stpcpy(stpcpy(d, codec), mig);
	if (p->type & PROC_GRAPHICS)
		d = stpcpy(d, p->type & PROC_COMPUTE ? "C+G " : "G ");
	int n = (int)(d - line);
	sb_add(sb, line, (size_t)n);
	cols += n;
	/* At least 8 columns of the command, however narrow the terminal; all of it when piped. */
	int room = !lay->width ? -1 : lay->width - cols < 8 ? 8 : lay->width - cols;
	/* containers (issue 28): the command prefixed by its container, "[trainer] python ..." */
	char ctr[3 * CTR_NAME_MAX + 8];
	if ((room < 0 || room >= 24) && ctr_label(p, ctr, sizeof ctr)) {
		/* at most a third of the room: the command stays the line's main text */
		sb_addc(sb, '[');
		int w = esc_fit(sb, ctr, room < 0 ? -1 : room / 3 - 3, false);
		sb_adds(sb, "] ");
		room = room < 0 ? -1 : room - w - 3;
	}
	esc_fit(sb, p->cmdline ? p->cmdline : not_in_proc, room, false);
	sb_addc(sb, '\n');
}

/* One GPU's rows of the last frame, as table_cache_new says. */
struct row_cache {
	uint64_t view;            /* the view they were made from (gpu.h); 0: not to be copied */
	bool slurm;
	int width, user_w;
	size_t count;
	struct strbuf text;       /* no sink: a frame's own may be written as it grows */
	uint64_t users_view;      /* user_max is of the processes of this view (layout_columns) */
	int user_max;
};

struct table_cache {
	size_t n, cap;
	struct row_cache *g;
};

struct table_cache *table_cache_new(void)
{
	return xcalloc(1, sizeof(struct table_cache));
}

void table_cache_free(struct table_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		sb_free(&c->g[i].text);
	free(c->g);
	free(c);
}

static struct row_cache *cache_entry(struct table_cache *c, size_t idx)
{
	if (idx >= c->n) {
		c->g = grow_array(c->g, &c->cap, idx + 1, sizeof *c->g);
		memset(&c->g[c->n], 0, (idx + 1 - c->n) * sizeof *c->g);
		c->n = idx + 1;
	}
	return &c->g[idx];
}

/* The first count process rows of GPU idx, copied from the last frame where they are its. */
static void proc_rows(struct strbuf *sb, const struct table_opts *o, const struct layout *lay,
		      const struct gpu *g, size_t idx, size_t count)
{
	struct table_cache *c = o->cache;
	if (!c || !g->view || sb->sink) {   /* (a loop's frame, the one with a cache, has no sink) */
		for (size_t i = 0; i < count; i++)
			table_proc(sb, o, lay, &g->procs[i]);
		return;
	}
	struct row_cache *e = cache_entry(c, idx);
	/* A process's container is this caller's, found after the delta was decoded (machine.c: a
	 * runtime that appeared since, ids the daemon does not send): a kept record says nothing of
	 * it, so a GPU with one now is formatted again, and its rows are never copied (view 0). */
	bool ctr = false;
	for (size_t i = 0; i < count && !ctr; i++)
		ctr = g->procs[i].ctr != NULL;
	if (!ctr && g->procs_from && e->view == g->procs_from && e->count == count &&
	    e->width == lay->width && e->user_w == lay->user_w && e->slurm == o->slurm) {
		e->view = g->view;
		sb_add(sb, e->text.buf, e->text.len);
		return;
	}
	e->view = ctr ? 0 : g->view, e->slurm = o->slurm, e->width = lay->width;
	e->user_w = lay->user_w, e->count = count;
	/* Made in the frame, then kept in a block of their size: grown by doubling as they were
	 * made, 16 GPUs' rows took twice their bytes in fresh pages (issue 22: a first view's
	 * memory is most of its cost). */
	size_t from = sb->len;
	for (size_t i = 0; i < count; i++)
		table_proc(sb, o, lay, &g->procs[i]);
	size_t n = sb->len - from;
	sb_reset(&e->text);
	if (e->text.cap < n + 1)
		sb_reserve_exact(&e->text, n + n / 8);   /* room for a few more processes next time */
	sb_add(&e->text, sb->buf + from, n);
}

static void table_procs(struct strbuf *sb, const struct table_opts *o, struct layout *lay,
			const struct gpu *g, size_t idx)
{
	size_t total = sub_lines(o, g), limit = lay->sub_limit;
	if (total > limit && lay->spare) {
		limit++;
		lay->spare--;
	}
	size_t shown = total <= limit ? total : limit - 1;
	if (!total)
		return;
	for (size_t i = 0; i < g->nmigs && i < shown; i++) {
		const struct mig_dev *m = &g->migs[i];
		struct mib_text mem = {"N/A"};
		if (m->mem_valid)
			mem = mib_of_text(m->mem_used, m->mem_total);
		/* "NVIDIA A100-SXM4-40GB MIG 3g.20gb": the profile is what tells instances apart. */
		const char *profile = strstr(m->name, "MIG ");
		sb_addf(sb, "      mig %u/%u  %-10.10s %20s  %s", m->gi, m->ci,
			profile ? profile + 4 : m->name, mem.s, m->uuid);
		/* MIG instances as lease units (issue 23): who holds the instance */
		const struct lease_info *h = o->leases ? leaseview_mig_holder(o->leases, m->uuid) : NULL;
		if (h) {
			sb_addf(sb, "  %sleased: ", o->color ? C_YELLOW : "");
			esc_printable_n(sb, h->user, 64);
			sb_addf(sb, ", pid %d%s", (int)h->pid, o->color ? C_RESET : "");
		}
		sb_addc(sb, '\n');
	}
	if (!o->no_procs && !gpu_has(g, GF_PROCESSES) && shown > g->nmigs)
		sb_addf(sb, "      %sprocesses: N/A%s\n", o->color ? C_DIM : "", o->color ? C_RESET : "");
	/* One formatted print per process: on 10,000 processes the table's cost is its printf. */
	if (!o->no_procs && gpu_has(g, GF_PROCESSES) && shown > g->nmigs)
		proc_rows(sb, o, lay, g, idx, shown - g->nmigs < g->nprocs ? shown - g->nmigs : g->nprocs);
	if (shown < total)
		sb_addf(sb, "      %s+%zu more%s%s\n", o->color ? C_DIM : "", total - shown,
			shown >= g->nmigs ? " processes" : "", o->color ? C_RESET : "");
}

/* The widths of this frame: GPU names whole when there is room (always at 100 columns and
 * more, and when nothing is cut), user names as long as the command keeps MIN_COMMAND
 * columns. */
static void layout_columns(struct layout *lay, const struct table_opts *o,
			   const struct gpu_set *set)
{
	int longest_name = 4, longest_user = 10;
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		if (!g->selected)
			continue;
		int w = esc_cols(g->name);
		longest_name = w > longest_name ? w : longest_name;
		if (o->no_procs)
			continue;
		/* a loop's: the longest of the processes the last frame measured, where they are its */
		struct row_cache *e = o->cache && g->view ? cache_entry(o->cache, i) : NULL;
		if (e && g->procs_from && e->users_view == g->procs_from) {
			e->users_view = g->view;
			longest_user = e->user_max > longest_user ? e->user_max : longest_user;
			continue;
		}
		int most = 0;
		const char *last = NULL; /* one name per uid, shared: measure each run once */
		for (size_t j = 0; j < g->nprocs; j++) {
			const char *u = g->procs[j].user;
			if (!u || u == last)
				continue;
			last = u;
			w = esc_cols(u);
			most = w > most ? w : most;
		}
		longest_user = most > longest_user ? most : longest_user;
		if (e)
			e->users_view = g->view, e->user_max = most;
	}
	lay->width = o->width;
	lay->name_w = longest_name;
	lay->user_w = longest_user > 64 ? 64 : longest_user;
	if (o->width && o->width < 100 && longest_name > o->width - GPU_LINE_FIXED)
		lay->name_w = o->width - GPU_LINE_FIXED < 8 ? 8 : o->width - GPU_LINE_FIXED;
	int users_room = o->width - PROC_LINE_FIXED - (o->slurm ? 13 : 0) - MIN_COMMAND;
	if (o->width && lay->user_w > users_room)
		lay->user_w = users_room > 10 ? users_room : 10;
}

/* A loop on a terminal draws a frame that fits the screen, as top does: the header and every
 * GPU line stay; the lines under each GPU are cut to the same largest number that fits, the
 * last of them saying how many more there are. Returns the GPU lines that fit (all, usually). */
static size_t layout_rows(struct layout *lay, const struct table_opts *o,
			  const struct gpu_set *set)
{
	char note[320];
	size_t ngpus = 0, fixed = 2 + (o->leases_missing != NULL) +
				 (ctr_pidns_note(set, note, sizeof note) != NULL), total = 0, most = 0;
	fixed += o->leases && !strcmp(o->leases->guard, "acl"); /* the device guard's line */
	lay->sub_limit = SIZE_MAX;
	lay->spare = 0;
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		if (!g->selected)
			continue;
		size_t n = sub_lines(o, g);
		ngpus++;
		fixed += 1 + (holder(o, g) != NULL) + (shares(o, g) ? 1 + shares(o, g)->count : 0);
		total += n;
		most = n > most ? n : most;
	}
	if (!o->rows)
		return ngpus;
	size_t budget = (size_t)o->rows - 1; /* a last newline on the last row would scroll */
	if (fixed > budget) {
		lay->sub_limit = 0;
		return budget > 3 ? budget - 3 : 0; /* and a line saying how many more */
	}
	size_t avail = budget - fixed;
	if (total <= avail)
		return ngpus;
	lay->sub_limit = 0;
	for (size_t k = 1; k <= most; k++) {
		size_t cost = 0;
		for (size_t i = 0; i < set->ngpus; i++)
			if (set->gpus[i].selected) {
				size_t n = sub_lines(o, &set->gpus[i]);
				cost += n < k ? n : k;
			}
		if (cost > avail)
			break;
		lay->sub_limit = k;
		lay->spare = avail - cost;
	}
	return ngpus;
}

/* A piped loop's first frame, its size foretold within a few percent, over rather than under:
 * grown by doubling, a 200 KiB frame took blocks of 32 to 256 KiB, each on fresh pages (issue 22:
 * a first view's memory is most of its cost). Each process row: its fixed columns, its user's,
 * the optional ones it shows, its command (cut to the width). A hostile name's escapes only make
 * the buffer grow as before. (A loop on a terminal draws a frame cut to the screen: small.) */
static size_t frame_size(const struct table_opts *o, const struct layout *lay,
			 const struct gpu_set *set)
{
	size_t n = 1024, row = (size_t)PROC_LINE_FIXED + 1 + (size_t)lay->user_w + (o->slurm ? 13 : 0);
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		if (!g->selected)
			continue;
		n += 320 + g->nmigs * 128;
		for (size_t j = 0; !o->no_procs && gpu_has(g, GF_PROCESSES) && j < g->nprocs; j++) {
			const struct gpu_proc *p = &g->procs[j];
			size_t w = p->cmdline ? strlen(p->cmdline) : sizeof not_in_proc - 1;
			if (lay->width && w > (size_t)lay->width)
				w = (size_t)lay->width;
			n += row + w + (p->gi != NO_INSTANCE ? 12 : 0) + (p->type & PROC_GRAPHICS ? 4 : 0) +
			     (p->util_valid && (p->enc_util || p->dec_util) ? 20 : 0) +
			     (p->ctr ? 16 + strlen(p->ctr->name) + strlen(p->ctr->pod) + strlen(p->ctr->ns) : 0);
		}
	}
	return n + n / 64;
}

bool table_job_column(const struct gpu_set *set)
{
	if (!set->slurm)
		return false;
	for (size_t i = 0; i < set->ngpus; i++)
		for (size_t j = 0; j < set->gpus[i].nprocs; j++)
			if (set->gpus[i].procs[j].slurm_job)
				return true;
	return false;
}

void table_render(struct strbuf *sb, const struct table_opts *o, const struct gpu_set *set)
{
	char when[16];
	time_t t = time(NULL);
	struct tm tm;
	strftime(when, sizeof when, "%H:%M:%S", localtime_r(&t, &tm));
	struct layout lay;
	layout_columns(&lay, o, set);
	size_t fit = layout_rows(&lay, o, set);
	if (o->cache && !sb->sink && !sb->cap)   /* a piped loop's first frame */
		sb_reserve_exact(sb, frame_size(o, &lay, set));
	char head[160];
	int n = snprintf(head, sizeof head, "driver %s  CUDA ",
			 set->has_driver_version ? set->driver_version : "N/A");
	if (set->cuda_version)
		n += snprintf(head + n, sizeof head - (size_t)n, "%d.%d", set->cuda_version / 1000,
			      set->cuda_version % 1000 / 10);
	else
		n += snprintf(head + n, sizeof head - (size_t)n, "N/A");
	snprintf(head + n, sizeof head - (size_t)n, "  %zu GPU%s", set->ngpus,
		 set->ngpus == 1 ? "" : "s");
	int w = (o->width ? o->width : 80) - (int)strlen(when);
	if (w < (int)strlen(head) + 2) /* a narrow terminal: the time after the header, spaced */
		w = (int)strlen(head) + 2;
	sb_addf(sb, "%-*s%s\n", w, head, when);
	sb_addf(sb, "%s%3s %-*s  %4s  %18s  %4s  %13s%s\n", o->color ? C_DIM : "", "GPU", lay.name_w,
		"NAME", "UTIL", "MEMORY", "TEMP", "POWER", o->color ? C_RESET : "");
	if (!set->ngpus)
		sb_adds(sb, "  (no NVIDIA GPUs found)\n");
	size_t shown = 0, hidden = 0, hidden_sub = 0;
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		if (!g->selected)
			continue;
		if (shown++ >= fit) {
			hidden++;
			continue;
		}
		table_gpu(sb, o, &lay, g);
		table_lease(sb, o, &lay, g);
		if (lay.sub_limit)
			table_procs(sb, o, &lay, g, i);
		else
			hidden_sub += sub_lines(o, g);
	}
	if (o->leases && !strcmp(o->leases->guard, "acl")) { /* the device guard (issue 25) */
		char g[512];
		leaseview_guard_text(o->leases, g, sizeof g);
		sb_adds(sb, "  guard: ");
		esc_printable(sb, g);
		/* Which of them this user may open (the others: values from the daemon's view). */
		size_t shut = 0, open = 0;
		for (size_t i = 0; i < set->ngpus; i++)
			if (set->gpus[i].selected)
				set->gpus[i].guarded ? shut++ : open++;
		if (shut) {
			sb_adds(sb, open ? "; you may open GPU " : "; you may open none of them");
			for (size_t i = 0, k = 0; open && i < set->ngpus; i++)
				if (set->gpus[i].selected && !set->gpus[i].guarded)
					sb_addf(sb, "%s%u", k++ ? "," : "", set->gpus[i].index);
			sb_adds(sb, open ? " (your leases)" : " (no lease of yours)");
		}
		sb_addc(sb, '\n');
	}
	if (o->leases_missing) { /* no lease line is not "not leased" here */
		sb_adds(sb, "  leases: not shown, ");
		esc_printable(sb, o->leases_missing);
		sb_addc(sb, '\n');
	}
	char note[320]; /* containers (issue 28): host pids this /proc cannot map, said once */
	if (ctr_pidns_note(set, note, sizeof note)) {
		sb_adds(sb, "  note: ");
		esc_fit(sb, note, lay.width ? lay.width - 8 : -1, false);
		sb_addc(sb, '\n');
	}
	if (hidden)
		sb_addf(sb, "  +%zu more GPUs: the terminal is too short (-g LIST shows some)\n", hidden);
	else if (hidden_sub)
		sb_addf(sb, "  +%zu process lines: the terminal is too short to show them\n", hidden_sub);
}

/* A frame drawn in place: each line cut to the terminal's width (a wrapped line would push the
 * header off the screen), the rest of each line and of the screen cleared, so a shorter frame
 * leaves no debris. Our colour codes take no columns; nothing else here is a control byte. */
void table_fit_frame(struct strbuf *sb, int width)
{
	struct strbuf out = {0};
	sb_reserve(&out, sb->len + sb->len / 4 + 64);   /* at most 8 bytes a line more: one block */
	for (char *p = sb->buf, *nl; p && (nl = strchr(p, '\n')); p = nl + 1) {
		const char *q = p;
		for (int cols = 0; q < nl; q++) {
			if (*q == '\033') {
				while (q < nl && !(*q >= '@' && *q <= '~' && *q != '['))
					q++;
				continue;
			}
			if ((*q & 0xC0) != 0x80 && ++cols > width)
				break;
		}
		sb_add(&out, p, (size_t)(q - p));
		sb_adds(&out, q < nl ? C_RESET "\033[K\n" : "\033[K\n");
	}
	sb_adds(&out, "\033[J");
	sb_free(sb);
	*sb = out;
}
