/* model.c: what top's refreshes gave (see tui.h): each GPU's history of utilisation and
 * memory, the last PCIe throughput reading, one row per process and GPU, and the order the view
 * asks for (filters, sort, tree of a job's processes). Only tui_model_update looks anything up
 * (the parents of jobs, through the refresh's process cache); ordering is pure. */
#include "machine/proc.h"
#include "tui/tui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const tui_col_names[] = {"user", "pid", "gpu", "gmem", "sm", "mem", "enc", "dec",
				     "cpu", "rss", "time", "command", NULL};

void tui_model_init(struct tui_model *m, struct gpu_set *set, uid_t me)
{
	*m = (struct tui_model){.set = set, .me = me};
	m->hist = xcalloc(set->ngpus ? set->ngpus : 1, sizeof *m->hist);
	m->pcie = xcalloc(set->ngpus ? set->ngpus : 1, sizeof *m->pcie);
	if (gethostname(m->host, sizeof m->host - 1) != 0)
		m->host[0] = '\0';
}

void tui_model_free(struct tui_model *m)
{
	free(m->hist);
	free(m->pcie);
	free(m->rows);
	free(m->shown);
	*m = (struct tui_model){0};
}

static void push(struct tui_history *h, unsigned char util, unsigned char mem)
{
	h->util[h->head] = util;
	h->mem[h->head] = mem;
	h->head = (h->head + 1) % TUI_HISTORY;
	if (h->n < TUI_HISTORY)
		h->n++;
}

static struct tui_row *add_row(struct tui_model *m)
{
	m->rows = grow_array(m->rows, &m->rows_cap, m->nrows + 1, sizeof *m->rows);
	struct tui_row *r = &m->rows[m->nrows++];
	*r = (struct tui_row){0};
	return r;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return (x > y) - (x < y);
}

/* The pid of row i for sorting by pid, kept with the row. */
struct pid_ix {
	unsigned pid;
	size_t row;
};

static int cmp_pid_ix(const void *a, const void *b)
{
	const struct pid_ix *x = a, *y = b;
	if (x->pid != y->pid)
		return (x->pid > y->pid) - (x->pid < y->pid);
	return (x->row > y->row) - (x->row < y->row);
}

/* Rows by pid, to find a process's row (its first, on its lowest GPU) in O(log n). */
static struct pid_ix *index_rows(const struct tui_model *m)
{
	struct pid_ix *ix = xmalloc((m->nrows ? m->nrows : 1) * sizeof *ix);
	for (size_t i = 0; i < m->nrows; i++)
		ix[i] = (struct pid_ix){m->rows[i].pid, i};
	qsort(ix, m->nrows, sizeof *ix, cmp_pid_ix);
	return ix;
}

static long find_pid(const struct pid_ix *ix, size_t n, unsigned pid)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ix[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ix[lo].pid == pid ? (long)ix[lo].row : -1;
}

/* Tree view: the parent of several GPU processes (a launcher such as torchrun), or of a lease's
 * job, uses no GPU itself but is what ties a job together: it gets a context row. */
static void add_parents(struct tui_model *m)
{
	size_t n = m->nrows;
	struct pid_ix *ix = index_rows(m);
	unsigned *pp = xmalloc((n ? n : 1) * sizeof *pp);
	size_t npp = 0;
	for (size_t i = 0; i < n; i++) {
		const struct tui_row *r = &m->rows[i];
		/* One count per process: a process on two GPUs has two rows. */
		if (r->stat_valid && r->ppid > 1 && find_pid(ix, n, r->pid) == (long)i &&
		    find_pid(ix, n, (unsigned)r->ppid) < 0)
			pp[npp++] = (unsigned)r->ppid;
	}
	qsort(pp, npp, sizeof *pp, cmp_uint);
	for (size_t i = 0; i < npp;) {
		size_t j = i;
		while (j < npp && pp[j] == pp[i])
			j++;
		bool job = false;
		for (size_t k = 0; m->lv && k < m->lv->nleases; k++)
			job |= m->lv->leases[k].pid == (pid_t)pp[i];
		if (j - i >= 2 || job) {
			struct proc_info info, *pi = &info;
			proc_lookup(m->set->pc, pp[i], &info);
			if (pi->found) {
				struct tui_row *r = add_row(m);
				*r = (struct tui_row){.pid = pi->pid, .user = pi->user, .cmd = pi->cmdline,
						      .uid = pi->uid, .uid_valid = true, .mine = pi->uid == m->me,
						      .stat_valid = pi->stat_valid, .ppid = pi->ppid,
						      .start = pi->start, .cpu_valid = pi->cpu_valid,
						      .cpu_pct = pi->cpu_pct, .elapsed = pi->elapsed, .rss = pi->rss};
			}
		}
		i = j;
	}
	free(pp);
	free(ix);
}

void tui_model_update(struct tui_model *m, const struct leaseview *lv, bool pcie_read, bool tree,
		      time_t now, double mono)
{
	struct gpu_set *set = m->set;
	m->lv = lv;
	m->now = now;
	m->mono = mono;
	m->refreshes++;
	m->nrows = 0;
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		if (!g->selected)
			continue;
		unsigned char util = gpu_has(g, GF_UTIL_GPU) ? (unsigned char)g->util_gpu : TUI_NA, mem = TUI_NA;
		if (gpu_has(g, GF_MEM_USED) && gpu_has(g, GF_MEM_TOTAL) && g->mem_total)
			mem = (unsigned char)(100.0 * (double)g->mem_used / (double)g->mem_total + 0.5);
		push(&m->hist[i], util > 100 ? TUI_NA : util, mem > 100 ? TUI_NA : mem);
		if (pcie_read)
			m->pcie[i] = (struct tui_pcie){.valid = gpu_has(g, GF_PCIE_RX) && gpu_has(g, GF_PCIE_TX),
						       .rx_kbs = g->pcie_rx_kbs, .tx_kbs = g->pcie_tx_kbs,
						       .at = mono};
		for (size_t j = 0; j < g->nprocs; j++) {
			const struct gpu_proc *p = &g->procs[j];
			struct tui_row *r = add_row(m);
			*r = (struct tui_row){.g = g, .p = p, .pid = p->pid, .user = p->user, .cmd = p->cmdline,
					      .uid = p->uid, .uid_valid = p->uid_valid,
					      .mine = p->uid_valid && p->uid == m->me,
					      .stat_valid = p->stat_valid, .ppid = p->ppid, .start = p->start,
					      .cpu_valid = p->cpu_valid, .cpu_pct = p->cpu_pct,
					      .elapsed = p->elapsed, .rss = p->rss};
		}
	}
	unsigned *pids = xmalloc((m->nrows ? m->nrows : 1) * sizeof *pids);
	for (size_t i = 0; i < m->nrows; i++)
		pids[i] = m->rows[i].pid;
	qsort(pids, m->nrows, sizeof *pids, cmp_uint);
	m->nprocs = 0;
	for (size_t i = 0; i < m->nrows; i++)
		m->nprocs += !i || pids[i] != pids[i - 1];
	free(pids);
	if (tree && set->pc)
		add_parents(m);
}

bool tui_pcie_due(const struct tui_model *m, double delay, double mono)
{
	size_t n = 0;
	double last = -1;
	for (size_t i = 0; i < m->set->ngpus; i++)
		if (m->set->gpus[i].selected) {
			n++;
			if (last < 0 || m->pcie[i].at < last)
				last = m->pcie[i].at;
		}
	double every = 0.4 * (double)n > delay ? 0.4 * (double)n : delay;
	/* Half a period of slack: a refresh a little early still counts. */
	return n && (last <= 0 || mono - last >= every - delay / 2);
}

const struct lease_info *tui_lease(const struct tui_model *m, const struct gpu *g)
{
	return m->lv ? leaseview_holder(m->lv, g->uuid) : NULL;
}

/* ---- order ---- */

static bool passes(const struct tui_view *v, const struct tui_row *r)
{
	if (!r->p)
		return false;            /* context rows show only for what they hold */
	if (v->mine_only && !r->mine)
		return false;
	if (v->user[0] && !(r->user && !strcmp(r->user, v->user)))
		return false;
	if (v->gpu_mask && !(r->g->index < 64 && (v->gpu_mask >> r->g->index & 1)))
		return false;
	if (v->filter[0]) {
		char pid[16];
		snprintf(pid, sizeof pid, "%u", r->pid);
		return (r->cmd && strcasestr(r->cmd, v->filter)) ||
		       (r->user && strcasestr(r->user, v->filter)) || strstr(pid, v->filter);
	}
	return true;
}

static int cmp_num(double a, double b)
{
	return (a > b) - (a < b);
}

/* A process's share of an engine (-1 without a sample: below any share). */
static double engine(const struct gpu_proc *p, enum tui_col c)
{
	if (!p || !p->util_valid)
		return -1;
	return c == COL_SM ? p->sm_util : c == COL_MEM ? p->mem_util : c == COL_ENC ? p->enc_util
	       : p->dec_util;
}

struct sort_ctx {
	const struct tui_row *rows;
	const struct tui_view *v;
};

/* Numbers sort largest first and names A to Z, unless reversed; ties by GPU, then pid. */
static int cmp_rows(const void *pa, const void *pb, void *ctx)
{
	const struct sort_ctx *sc = ctx;
	const struct tui_row *a = &sc->rows[*(const size_t *)pa], *b = &sc->rows[*(const size_t *)pb];
	const struct tui_view *v = sc->v;
	int c = 0;
	bool desc = true;
	switch (v->sort) {
	case COL_USER:
		c = strcmp(a->user ? a->user : "", b->user ? b->user : "");
		desc = false;
		break;
	case COL_PID: c = cmp_num(a->pid, b->pid); desc = false; break;
	case COL_GPU: c = cmp_num(a->g ? a->g->index : -1.0, b->g ? b->g->index : -1.0); desc = false; break;
	case COL_GMEM:
		c = cmp_num(a->p && a->p->mem_valid ? (double)a->p->used_mem : -1,
			    b->p && b->p->mem_valid ? (double)b->p->used_mem : -1);
		break;
	case COL_SM: case COL_MEM: case COL_ENC: case COL_DEC:
		c = cmp_num(engine(a->p, v->sort), engine(b->p, v->sort));
		break;
	case COL_CPU: c = cmp_num(a->cpu_valid ? a->cpu_pct : -1, b->cpu_valid ? b->cpu_pct : -1); break;
	case COL_RSS: c = cmp_num(a->stat_valid ? (double)a->rss : -1, b->stat_valid ? (double)b->rss : -1); break;
	case COL_TIME: c = cmp_num(a->stat_valid ? a->elapsed : -1, b->stat_valid ? b->elapsed : -1); break;
	case COL_CMD:
		c = strcmp(a->cmd ? a->cmd : "", b->cmd ? b->cmd : "");
		desc = false;
		break;
	case COL_N: break;
	}
	if (desc != v->reverse)
		c = -c;
	if (!c)
		c = cmp_num(a->g ? a->g->index : -1.0, b->g ? b->g->index : -1.0);
	return c ? c : cmp_num(a->pid, b->pid);
}

static void show(struct tui_model *m, size_t row)
{
	m->shown = grow_array(m->shown, &m->shown_cap, m->nshown + 1, sizeof *m->shown);
	m->shown[m->nshown++] = row;
}

/* Tree view, over rows in sort order. A process's first row is its node, its other rows (other
 * GPUs) follow it; a node's children are the nodes of the processes it is the parent of, in
 * sort order. A node shows when a row of it passes the filters, or a descendant's does. */
struct tree {
	struct tui_model *m;
	long *parent;            /* per row: the node of its process's parent, -1 for a root */
	long *head;              /* per row: its process's node */
	long *kid, *sib, *dup;   /* per node: first child, next sibling; per row: next of its process */
	bool *vis;               /* per node */
};

static void emit(struct tree *t, long node, int depth, uint64_t open, bool last)
{
	if (depth > 60)
		return;              /* only a corrupt /proc could nest this deep */
	for (long r = node; r >= 0; r = t->dup[r]) {
		struct tui_row *row = &t->m->rows[r];
		row->depth = depth;
		row->last = last;
		row->open = open;
		show(t->m, (size_t)r);
	}
	uint64_t below = depth > 0 && !last ? open | 1ULL << depth : open;
	long lastkid = -1;
	for (long k = t->kid[node]; k >= 0; k = t->sib[k])
		if (t->vis[k])
			lastkid = k;
	for (long k = t->kid[node]; k >= 0; k = t->sib[k])
		if (t->vis[k])
			emit(t, k, depth + 1, below, k == lastkid);
}

static void order_tree(struct tui_model *m, const struct tui_view *v, const size_t *sorted)
{
	size_t n = m->nrows, sz = n ? n : 1;
	struct tree t = {.m = m};
	t.parent = xmalloc(sz * sizeof *t.parent);
	t.head = xmalloc(sz * sizeof *t.head);
	t.kid = xmalloc(sz * sizeof *t.kid);
	t.sib = xmalloc(sz * sizeof *t.sib);
	t.dup = xmalloc(sz * sizeof *t.dup);
	t.vis = xcalloc(sz, sizeof *t.vis);
	/* Rows by pid, ties in sort order: the first of a pid is its node. */
	struct pid_ix *ix = xmalloc(sz * sizeof *ix);
	for (size_t k = 0; k < n; k++)
		ix[k] = (struct pid_ix){m->rows[sorted[k]].pid, k};
	qsort(ix, n, sizeof *ix, cmp_pid_ix);
	for (size_t k = 0; k < n; k++) {
		size_t first = k;
		while (first > 0 && ix[first - 1].pid == ix[k].pid)
			first--;
		t.head[sorted[ix[k].row]] = (long)sorted[ix[first].row];
	}
	for (size_t i = 0; i < n; i++) {
		const struct tui_row *r = &m->rows[i];
		long p = r->stat_valid && r->ppid > 0 ? find_pid(ix, n, (unsigned)r->ppid) : -1;
		t.parent[i] = p >= 0 && r->ppid != (int)r->pid ? (long)sorted[p] : -1;
		t.kid[i] = t.sib[i] = t.dup[i] = -1;
	}
	/* Lists built back to front, so each comes out in sort order. */
	for (size_t k = n; k-- > 0;) {
		long r = (long)sorted[k];
		if (t.head[r] != r) {
			t.dup[r] = t.dup[t.head[r]];
			t.dup[t.head[r]] = r;
		} else if (t.parent[r] >= 0) {
			t.sib[r] = t.kid[t.parent[r]];
			t.kid[t.parent[r]] = r;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (!passes(v, &m->rows[i]))
			continue;
		long x = t.head[i];
		for (int hops = 0; x >= 0 && hops < 64 && !t.vis[x]; hops++, x = t.parent[x])
			t.vis[x] = true;
	}
	for (size_t k = 0; k < n; k++) {
		long r = (long)sorted[k];
		if (t.head[r] == r && t.vis[r] && t.parent[r] < 0)
			emit(&t, r, 0, 0, false);
	}
	free(ix);
	free(t.parent);
	free(t.head);
	free(t.kid);
	free(t.sib);
	free(t.dup);
	free(t.vis);
}

void tui_model_order(struct tui_model *m, struct tui_view *v)
{
	size_t n = m->nrows;
	size_t *sorted = xmalloc((n ? n : 1) * sizeof *sorted);
	for (size_t i = 0; i < n; i++)
		sorted[i] = i;
	/* Positions are sorted, not rows: rows stay where the GPU set's pointers put them. */
	struct sort_ctx sc = {m->rows, v};
	qsort_r(sorted, n, sizeof *sorted, cmp_rows, &sc);
	m->nshown = 0;
	if (v->tree) {
		order_tree(m, v, sorted);
	} else {
		for (size_t k = 0; k < n; k++) {
			m->rows[sorted[k]].depth = 0;
			if (passes(v, &m->rows[sorted[k]]))
				show(m, sorted[k]);
		}
	}
	free(sorted);
	/* The selection follows its process through new orders and refreshes. */
	for (size_t i = 0; i < m->nshown && v->sel_pid; i++) {
		const struct tui_row *r = &m->rows[m->shown[i]];
		if (r->pid == v->sel_pid && (r->g ? (int)r->g->index : -1) == v->sel_gpu) {
			v->sel = i;
			break;
		}
	}
	if (v->sel >= m->nshown)
		v->sel = m->nshown ? m->nshown - 1 : 0;
	const struct tui_row *r = tui_selected(m, v);
	v->sel_pid = r ? r->pid : 0;
	v->sel_gpu = r && r->g ? (int)r->g->index : -1;
}

const struct tui_row *tui_selected(const struct tui_model *m, const struct tui_view *v)
{
	return v->sel < m->nshown ? &m->rows[m->shown[v->sel]] : NULL;
}

const struct gpu *tui_focus_gpu(const struct tui_model *m, const struct tui_view *v)
{
	if (v->focus == FOCUS_GPUS)
		return v->gpu_sel < m->set->ngpus ? &m->set->gpus[v->gpu_sel] : NULL;
	const struct tui_row *r = tui_selected(m, v);
	return r ? r->g : NULL;
}

/* A row's /proc stats, read now if its refresh did not (a row shown: tui_model_stats). */
static void row_stats(struct tui_model *m, struct tui_row *r)
{
	if (r->stat_valid || !r->uid_valid || !m->set->pc)
		return;
	struct proc_info pi;
	proc_lookup_stats(m->set->pc, r->pid, &pi);
	if (!pi.stat_valid)
		return;
	r->stat_valid = true;
	r->ppid = pi.ppid;
	r->start = pi.start;
	r->cpu_valid = pi.cpu_valid;
	r->cpu_pct = pi.cpu_pct;
	r->elapsed = pi.elapsed;
	r->rss = pi.rss;
}

void tui_model_stats(struct tui_model *m, size_t from, size_t n, unsigned pid)
{
	for (size_t i = from; i < m->nshown && i - from < n; i++)
		row_stats(m, &m->rows[m->shown[i]]);
	for (size_t i = 0; pid && i < m->nrows; i++)
		if (m->rows[i].pid == pid)
			row_stats(m, &m->rows[i]);
}
