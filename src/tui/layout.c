/* layout.c: where top puts things at a given size (pure maths, unit-tested). Rows: the
 * header, the GPU pane, the process pane, the queue pane (when someone waits), the footer. The
 * GPU pane gets what the cards need at the richest level that still leaves the processes a
 * third of the screen: one line per GPU (the bars and the numbers that matter most), two (fan,
 * clocks, encoder/decoder, PCIe), three (lease, throttle reasons); history graphs add lines.
 * On a wide terminal cards go side by side. What does not fit scrolls. The process columns are
 * chosen by priority for the width; the command takes what is left. An overlay (the help, the
 * details) is its lines wrapped to the width at word boundaries, scrolled within them. */
#include "tui/tui.h"

#include <stdlib.h>
#include <string.h>

enum { CARD_GAP = 3, GRAPH_MAX = 8, GRAPH_MIN = 2 };

void tui_layout_free(struct tui_layout *L)
{
	free(L->cards);
	L->cards = NULL;
}

/* Lines of card c at level lvl with graphs gh lines high (the selected card in the GPU pane is
 * shown whole). */
static int card_lines(const struct tui_layout *L, const struct tui_view *v, int c, int lvl, int gh,
		      int *level, int *graph)
{
	int g = L->cards[c].gpu;
	bool focus = v->focus == FOCUS_GPUS && (size_t)g == v->gpu_sel;
	*level = focus ? 3 : lvl;
	*graph = g < 64 && (v->graphs >> g & 1) ? gh : 0;
	return *level + *graph;
}

/* Height of card row r (its tallest card). */
static int row_height(const struct tui_layout *L, const struct tui_view *v, int r, int lvl, int gh)
{
	int h = 0, level, graph;
	for (int c = r * L->card_cols; c < L->ncards && c < (r + 1) * L->card_cols; c++) {
		int n = card_lines(L, v, c, lvl, gh, &level, &graph);
		h = n > h ? n : h;
	}
	return h;
}

/* Height of card rows a to b, both included. */
static int range_height(const struct tui_layout *L, const struct tui_view *v, int a, int b, int lvl,
			int gh)
{
	int h = 0;
	for (int r = a; r <= b; r++)
		h += row_height(L, v, r, lvl, gh);
	return h;
}

static int total_height(const struct tui_layout *L, const struct tui_view *v, int lvl, int gh)
{
	return range_height(L, v, 0, L->card_rows - 1, lvl, gh);
}

static void place_cards(struct tui_layout *L, struct tui_view *v, int budget)
{
	bool graphs = false;
	for (int c = 0; c < L->ncards; c++)
		graphs |= L->cards[c].gpu < 64 && (v->graphs >> L->cards[c].gpu & 1);
	int lvl = 1, gh = graphs ? GRAPH_MIN : 0;
	bool fits = false;
	for (int l = 3; l >= 1 && !fits; l--)
		for (int h = graphs ? GRAPH_MAX : 0; h >= (graphs ? GRAPH_MIN : 0) && !fits; h--)
			if (total_height(L, v, l, h) <= budget) {
				lvl = l;
				gh = h;
				fits = true;
			}
	/* Scroll so that the selected GPU's row shows (the pane holds card rows whole), and with
	 * no empty space at the bottom while rows are scrolled out at the top. */
	int selrow = 0;
	for (int c = 0; c < L->ncards; c++)
		if ((size_t)L->cards[c].gpu == v->gpu_sel)
			selrow = c / L->card_cols;
	if (fits)
		v->gpu_top = 0;
	if (v->gpu_top > selrow)
		v->gpu_top = selrow;
	while (v->gpu_top < selrow && range_height(L, v, v->gpu_top, selrow, lvl, gh) > budget)
		v->gpu_top++;
	while (v->gpu_top > 0 && range_height(L, v, v->gpu_top - 1, L->card_rows - 1, lvl, gh) <= budget)
		v->gpu_top--;
	int y = L->gpu_y, used = 0;
	bool full = false;
	L->card_rows_shown = 0;
	for (int r = 0; r < L->card_rows; r++) {
		int h = row_height(L, v, r, lvl, gh);
		/* The first row shown is shown even when taller than the pane: cut at its foot. */
		if (r == v->gpu_top && h > budget)
			h = budget;
		bool in = !full && r >= v->gpu_top && used + h <= budget;
		full |= r >= v->gpu_top && !in;
		for (int c = r * L->card_cols; c < L->ncards && c < (r + 1) * L->card_cols; c++) {
			struct tui_card *k = &L->cards[c];
			int level, graph;
			card_lines(L, v, c, lvl, gh, &level, &graph);
			k->level = level;
			k->graph_h = graph;
			k->h = in ? (level + graph < h ? level + graph : h) : 0;
			k->y = y;
		}
		if (in) {
			y += h;
			used += h;
			L->card_rows_shown++;
		}
	}
	L->gpu_h = used;
}

/* Process columns: width, then priority (the lowest goes first when the width is short). */
static const struct { enum tui_col col; int w, prio; } colinfo[] = {
	{COL_USER, 8, 80}, {COL_PID, 7, 100}, {COL_GPU, 4, 90}, {COL_GMEM, 6, 95}, {COL_SM, 4, 70},
	{COL_MEM, 4, 50}, {COL_ENC, 4, 10}, {COL_DEC, 4, 10}, {COL_CPU, 5, 60}, {COL_RSS, 5, 40},
	{COL_TIME, 8, 30}, {COL_CMD, 0, 100},
};

static void place_columns(struct tui_layout *L, const struct tui_model *m)
{
	int w[COL_N];
	bool on[COL_N];
	int userw = 4, gpuw = 4;
	for (size_t i = 0; i < m->nrows; i++) {
		const struct tui_row *r = &m->rows[i];
		int uw = r->user ? (int)strlen(r->user) : 1;
		userw = uw > userw ? uw : userw;
		if (r->p && r->p->gi != NO_INSTANCE)
			gpuw = 7;        /* "0:1/0": GPU, then MIG instance gi/ci */
	}
	for (size_t i = 0; i < ARRAY_SIZE(colinfo); i++) {
		w[colinfo[i].col] = colinfo[i].w;
		on[colinfo[i].col] = true;
	}
	w[COL_USER] = userw > 12 ? 12 : userw;
	w[COL_GPU] = gpuw;
	/* The command keeps a quarter of the width (at least 10 columns). */
	int cmdmin = L->cols / 4 > 10 ? L->cols / 4 : 10;
	for (;;) {
		int sum = cmdmin;
		for (int c = 0; c < COL_CMD; c++)
			sum += on[c] ? w[c] + 1 : 0;
		if (sum <= L->cols)
			break;
		int worst = -1;
		for (size_t i = 0; i < ARRAY_SIZE(colinfo); i++) {
			enum tui_col c = colinfo[i].col;
			if (c != COL_CMD && on[c] && (worst < 0 || colinfo[i].prio <= colinfo[worst].prio))
				worst = (int)i;
		}
		if (worst < 0)
			break;
		on[colinfo[worst].col] = false;
	}
	int x = 0;
	L->ncols = 0;
	for (int c = 0; c < COL_N; c++) {
		if (!on[c])
			continue;
		int cw = c == COL_CMD ? L->cols - x : w[c];
		L->colspec[L->ncols++] = (struct tui_colspec){(enum tui_col)c, x, cw};
		x += cw + 1;
	}
}

/* ---- the overlays: their text wrapped to the width ---- */

void tui_overlay_open(struct tui_overlay_text *o, const struct tui_view *v, int cols, bool utf8)
{
	*o = (struct tui_overlay_text){0};
	if (v->overlay == OV_HELP) {
		o->title = "gpuctl top: keys (Esc, q or ? closes; arrows scroll)";
		while (tui_help[o->n] && o->n < ARRAY_SIZE(o->lines))
			o->lines[o->n] = tui_help[o->n], o->n++;
	} else {
		o->title = "Process details (Esc closes; arrows scroll)";
		o->copy = xstrdup(v->info.buf ? v->info.buf : "");
		for (char *t = o->copy; t && o->n < ARRAY_SIZE(o->lines); ) {
			char *nl = strchr(t, '\n');
			if (nl)
				*nl = '\0';
			o->lines[o->n++] = t;
			t = nl ? nl + 1 : NULL;
		}
	}
	size_t cap = 0;
	for (size_t i = 0; i < o->n; i++) {
		const char *s = o->lines[i];
		int indent = 0;
		do {
			size_t next, len = tui_wrap(s, cols - 1 - indent, utf8, &next);
			if (o->np == cap)
				o->p = xrealloc(o->p, (cap = cap ? 2 * cap : 64) * sizeof *o->p);
			o->p[o->np++] = (struct tui_overlay_line){s, len, indent};
			s += next;
			indent = 4;
		} while (*s);
	}
}

void tui_overlay_close(struct tui_overlay_text *o)
{
	free(o->copy);
	free(o->p);
}

/* How far the open overlay scrolls: its wrapped lines past the rows it has under its title,
 * above the footer (0 when it fits). */
static int overlay_scroll_max(const struct tui_layout *L, const struct tui_view *v)
{
	if (v->overlay == OV_NONE || L->too_small)
		return 0;
	struct tui_overlay_text o;
	tui_overlay_open(&o, v, L->cols, v->utf8);
	int body = L->footer_y - 2;
	int max = body > 0 && o.np > (size_t)body ? (int)(o.np - (size_t)body) : 0;
	tui_overlay_close(&o);
	return max;
}

void tui_layout(struct tui_layout *L, int rows, int cols, const struct tui_model *m,
		struct tui_view *v)
{
	free(L->cards);
	*L = (struct tui_layout){.rows = rows, .cols = cols,
				 .all_stats = v->tree || v->sort == COL_CPU || v->sort == COL_RSS ||
					      v->sort == COL_TIME};
	if (rows < TUI_MIN_ROWS || cols < TUI_MIN_COLS) {
		L->too_small = true;
		return;
	}
	const struct gpu_set *set = m->set;
	L->cards = xcalloc(set->ngpus ? set->ngpus : 1, sizeof *L->cards);
	for (size_t i = 0; i < set->ngpus; i++)
		if (set->gpus[i].selected)
			L->cards[L->ncards++].gpu = (int)i;
	if (L->ncards && (v->gpu_sel >= set->ngpus || !set->gpus[v->gpu_sel].selected))
		v->gpu_sel = (size_t)L->cards[0].gpu;
	L->card_cols = cols >= 270 && L->ncards > 2 ? 3 : cols >= 160 && L->ncards > 1 ? 2 : 1;
	int cw = (cols - (L->card_cols - 1) * CARD_GAP) / L->card_cols;
	for (int c = 0; c < L->ncards; c++) {
		L->cards[c].w = cw;
		L->cards[c].x = (c % L->card_cols) * (cw + CARD_GAP);
	}
	L->card_rows = (L->ncards + L->card_cols - 1) / L->card_cols;
	int body = rows - 2;
	size_t nq = m->lv ? m->lv->nqueue + (m->lv->nsummed ? 1 : 0) : 0; /* the counted: one row */
	int qmax = body / 5 > 2 ? body / 5 : 2;
	L->queue_h = nq ? ((int)nq + 1 < qmax ? (int)nq + 1 : qmax) : 0;
	int procmin = body / 3 > 4 ? body / 3 : 4;
	int budget = body - L->queue_h - procmin;
	L->gpu_y = 1;
	place_cards(L, v, budget > 1 ? budget : 1);
	L->proc_y = L->gpu_y + L->gpu_h;
	L->proc_h = body - L->gpu_h - L->queue_h;
	L->queue_y = L->proc_y + L->proc_h;
	L->footer_y = rows - 1;
	place_columns(L, m);
	/* Keep the selected process in view. */
	int pr = tui_proc_rows(L);
	if (pr > 0) {
		if (v->sel < v->proc_top)
			v->proc_top = v->sel;
		if (v->sel >= v->proc_top + (size_t)pr)
			v->proc_top = v->sel - (size_t)pr + 1;
		if (m->nshown <= (size_t)pr)
			v->proc_top = 0;
		else if (v->proc_top > m->nshown - (size_t)pr)
			v->proc_top = m->nshown - (size_t)pr;
	}
	/* And the overlay's scroll within its text, so that Up acts at once after Down went past
	 * the end. */
	int omax = overlay_scroll_max(L, v);
	if (v->ov_scroll > omax)
		v->ov_scroll = omax;
}

int tui_proc_rows(const struct tui_layout *L)
{
	return L->too_small || L->proc_h < 2 ? 0 : L->proc_h - 2;
}

unsigned tui_refresh_needs(const struct tui_layout *L)
{
	/* Always: the process lists with their samples, the clock event reasons
	 * (a throttled GPU is marked at every level) and the static facts (read once). */
	unsigned what = REFRESH_PROCS | REFRESH_PROC_UTIL | REFRESH_PERF | REFRESH_STATIC | REFRESH_CONTAINERS |
			(L->all_stats ? REFRESH_PROC_STATS : 0);
	for (int c = 0; c < L->ncards; c++)
		if (L->cards[c].h && L->cards[c].level >= 2)
			what |= REFRESH_FAN | REFRESH_CLOCKS | REFRESH_ENGINES | REFRESH_PCIE;
	return what;
}
