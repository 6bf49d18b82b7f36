/* procs.c: top's process table (one row per process and GPU, or a tree of each job's
 * processes), the queue of lease requests, the footer (a message, a prompt or the main keys),
 * the help and details overlays, and tui_render, which puts the frame together. */
#include "tui/tui.h"
#include "view/container.h"
#include "machine/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const col_title[] = {
	[COL_USER] = "USER", [COL_PID] = "PID", [COL_GPU] = "GPU", [COL_GMEM] = "GMEM",
	[COL_SM] = "SM%", [COL_MEM] = "MEM%", [COL_ENC] = "ENC%", [COL_DEC] = "DEC%",
	[COL_CPU] = "CPU%", [COL_RSS] = "RSS", [COL_TIME] = "TIME", [COL_CMD] = "COMMAND",
};

static void cell(char *buf, size_t n, const struct tui_row *r, enum tui_col c)
{
	const struct gpu_proc *p = r->p;
	snprintf(buf, n, "-");
	switch (c) {
	case COL_USER: snprintf(buf, n, "%s", r->user ? r->user : "-"); break;
	case COL_PID: snprintf(buf, n, "%u", r->pid); break;
	case COL_GPU:
		if (p && p->gi != NO_INSTANCE)
			snprintf(buf, n, "%u:%u/%u", r->g->index, p->gi, p->ci);
		else if (r->g)
			snprintf(buf, n, "%u", r->g->index);
		break;
	case COL_GMEM:
		if (p && !p->mem_valid)
			snprintf(buf, n, "N/A");
		else if (p && mib(p->used_mem) < 100000)
			snprintf(buf, n, "%lluM", mib(p->used_mem));
		else if (p)
			snprintf(buf, n, "%.1fG", (double)p->used_mem / (1 << 30));
		break;
	case COL_SM: case COL_MEM: case COL_ENC: case COL_DEC:
		if (p && p->util_valid)
			snprintf(buf, n, "%u", c == COL_SM ? p->sm_util : c == COL_MEM ? p->mem_util
				 : c == COL_ENC ? p->enc_util : p->dec_util);
		break;
	case COL_CPU:
		if (r->cpu_valid)
			snprintf(buf, n, r->cpu_pct < 99.95 ? "%.1f" : "%.0f", r->cpu_pct);
		break;
	case COL_RSS:
		if (r->stat_valid)
			tui_bytes(buf, n, r->rss);
		break;
	case COL_TIME:
		if (r->stat_valid)
			tui_duration(buf, n, r->elapsed);
		break;
	case COL_CMD: case COL_N: break;
	}
}

/* "├─ " and "│  " before a command in tree view. */
static void tree_prefix(char *buf, size_t n, const struct tui_row *r, bool utf8)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int d = 1; d < r->depth && len < n; d++)
		len += (size_t)snprintf(buf + len, n - len, "%s", (r->open >> d & 1) ? (utf8 ? "\u2502  " : "|  ") : "   ");
	if (r->depth > 0 && len < n)
		snprintf(buf + len, n - len, "%s", r->last ? (utf8 ? "\u2514\u2500 " : "`- ")
						     : (utf8 ? "\u251c\u2500 " : "|- "));
}

static void proc_title(struct tui_frame *f, const struct tui_layout *L, const struct tui_model *m,
		       const struct tui_view *v)
{
	char buf[512];
	int n = snprintf(buf, sizeof buf, "%zu process%s", m->nprocs, m->nprocs == 1 ? "" : "es");
	if (m->nshown != m->nrows)
		n += snprintf(buf + n, sizeof buf - (size_t)n, ", %zu row%s shown", m->nshown,
			      m->nshown == 1 ? "" : "s");
	n += snprintf(buf + n, sizeof buf - (size_t)n, "  sort %s%s", tui_col_names[v->sort],
		      v->reverse ? " (inverted)" : "");
	if (v->filter[0])
		n += snprintf(buf + n, sizeof buf - (size_t)n, "  filter '%s'", v->filter);
	if (v->user[0])
		n += snprintf(buf + n, sizeof buf - (size_t)n, "  user %s", v->user);
	if (v->gpu_mask) {
		n += snprintf(buf + n, sizeof buf - (size_t)n, "  GPU");
		for (unsigned i = 0; i < 64; i++)
			if (v->gpu_mask >> i & 1)
				n += snprintf(buf + n, sizeof buf - (size_t)n, " %u", i);
	}
	if (v->mine_only)
		n += snprintf(buf + n, sizeof buf - (size_t)n, "  mine");
	if (v->tree)
		snprintf(buf + n, sizeof buf - (size_t)n, "  tree");
	tui_put_hostile(f, L->proc_y, 0, f->cols, ST_TITLE, buf);
}

static void proc_pane(struct tui_frame *f, const struct tui_layout *L, const struct tui_model *m,
		      const struct tui_view *v)
{
	proc_title(f, L, m, v);
	int y = L->proc_y + 1;
	for (int i = 0; i < L->ncols; i++) {
		const struct tui_colspec *cs = &L->colspec[i];
		char t[32];
		bool sorted = cs->col == v->sort;
		bool down = (cs->col == COL_USER || cs->col == COL_PID || cs->col == COL_GPU ||
			     cs->col == COL_CMD) == v->reverse;
		snprintf(t, sizeof t, "%s%s", col_title[cs->col], !sorted ? "" : f->utf8
			 ? (down ? "\u25bc" : "\u25b2") : (down ? "v" : "^"));
		if (i)
			tui_put(f, y, cs->x - 1, 1, ST_HEAD, false, " ");
		bool left = cs->col == COL_USER || cs->col == COL_CMD;
		tui_put(f, y, cs->x, cs->w, sorted ? ST_SEL : ST_HEAD, !left, t);
	}
	tui_fill(f, y, f->cols, ST_HEAD);
	int rows = tui_proc_rows(L);
	if (!m->nshown && rows > 0)
		tui_put(f, y + 1, 1, -1, ST_DIM, false, m->nrows ? "no process matches the filters "
			"(c clears them)" : "no GPU processes");
	for (int k = 0; k < rows && v->proc_top + (size_t)k < m->nshown; k++) {
		size_t at = v->proc_top + (size_t)k;
		const struct tui_row *r = &m->rows[m->shown[at]];
		bool sel = at == v->sel && v->focus == FOCUS_PROCS;
		enum tui_style st = sel ? (r->mine ? ST_SEL_MINE : ST_SEL) : !r->p ? ST_DIM
				    : r->mine ? ST_MINE : ST_NORMAL;
		int ry = y + 1 + k;
		for (int i = 0; i < L->ncols; i++) {
			const struct tui_colspec *cs = &L->colspec[i];
			char buf[64];
			if (i)
				tui_put(f, ry, cs->x - 1, 1, st, false, " ");
			if (cs->col == COL_CMD) {
				char pre[256];
				tree_prefix(pre, sizeof pre, r, f->utf8);
				int x = tui_put(f, ry, cs->x, v->tree ? -1 : 0, st, false, pre);
				/* containers (issue 28): "[trainer] python ...", as in status */
				char ctr[3 * CTR_NAME_MAX + 8];
				if (r->p && ctr_label(r->p, ctr + 1, sizeof ctr - 3) && cs->x + cs->w - x > 12) {
					ctr[0] = '[';
					strcat(ctr, "]");
					int room = (cs->x + cs->w - x) / 3 > 24 ? (cs->x + cs->w - x) / 3 : 24;
					x = tui_put_hostile(f, ry, x, (int)strlen(ctr) < room ? -1 : room, st, ctr);
					x = tui_put(f, ry, x, 1, st, false, " ");
				}
				if (r->cmd)
					tui_put_hostile(f, ry, x, cs->x + cs->w - x, st, r->cmd);
				else
					tui_put(f, ry, x, cs->x + cs->w - x, sel ? st : ST_DIM, false,
						"(not in /proc: exited, or another PID namespace)");
			} else if (cs->col == COL_USER) {
				cell(buf, sizeof buf, r, cs->col);
				tui_put_hostile(f, ry, cs->x, cs->w, st, buf);
			} else {
				cell(buf, sizeof buf, r, cs->col);
				tui_put(f, ry, cs->x, cs->w, st, true, buf);
			}
		}
		if (sel)
			tui_fill(f, ry, f->cols, st);
	}
}

static void queue_pane(struct tui_frame *f, const struct tui_layout *L, const struct tui_model *m)
{
	if (!L->queue_h || !m->lv)
		return;
	char buf[256], wait[24];
	snprintf(buf, sizeof buf, "Queue: %zu waiting for GPUs (%s)", m->lv->nqueue + m->lv->nsummed,
		 strcmp(m->lv->order, "fair") ? "first come, first served"
					      : "fair share: fewest GPUs held first");
	tui_put(f, L->queue_y, 0, -1, ST_TITLE, false, buf);
	int rows = L->queue_h - 1;
	/* Waiters the daemon counted instead of listing (another user's beyond the head) take the
	 * last row with the rest. */
	size_t total = m->lv->nqueue + m->lv->nsummed;
	for (int i = 0; i < rows && (size_t)i < total; i++) {
		int y = L->queue_y + 1 + i;
		if ((i == rows - 1 && total > (size_t)rows) || (size_t)i == m->lv->nqueue) {
			snprintf(buf, sizeof buf, "  ... and %zu more (gpuctl leases %s them all)",
				 total - (size_t)i, m->lv->nsummed ? "counts" : "lists");
			tui_put(f, y, 0, -1, ST_DIM, false, buf);
			break;
		}
		const struct waiter_info *w = &m->lv->queue[i];
		tui_duration(wait, sizeof wait, difftime(m->now, w->since));
		/* The note (the head, listed first whatever the order's rule; why one keeps nothing
		 * back) is one of the daemon's words, checked by the view. */
		snprintf(buf, sizeof buf, "%3u. %-10s pid %-8d wants %u GPU%s  waiting %s%s%s%s%s%s%s%s",
			 w->position, w->user, (int)w->pid, w->count, w->count == 1 ? " " : "s", wait,
			 strcmp(w->state, "waiting") ? "  (" : "", strcmp(w->state, "waiting") ? w->state : "",
			 strcmp(w->state, "waiting") ? ")" : "", *w->note ? "  [" : "", w->note,
			 *w->note ? "]" : "", w->name ? "  " : "");
		int x = tui_put_hostile(f, y, 0, -1, w->uid == m->me ? ST_MINE : ST_NORMAL, buf);
		if (w->name)
			tui_put_hostile(f, y, x, -1, ST_DIM, w->name);
	}
}

static const char *const prompt_label[] = {
	[PR_FILTER] = "Filter (command, user or pid; empty clears): ",
	[PR_USER] = "Only the processes of user (empty: everyone): ",
	[PR_GPU] = "Only processes on GPUs (e.g. 0,2; empty: all): ",
	[PR_KILL_NAME] = "",
};

static void footer(struct tui_frame *f, const struct tui_layout *L, const struct tui_view *v)
{
	int y = L->footer_y;
	if (v->prompt == PR_KILL || v->prompt == PR_RELEASE) {
		tui_put_hostile(f, y, 0, -1, ST_WARN, v->question);
		return;
	}
	if (v->prompt != PR_NONE) {
		int x = tui_put_hostile(f, y, 0, -1, ST_TITLE,
					v->prompt == PR_KILL_NAME ? v->question : prompt_label[v->prompt]);
		x = tui_put_hostile(f, y, x, -1, ST_NORMAL, v->input);
		tui_put(f, y, x, 1, ST_SEL, false, " ");   /* the cursor */
		return;
	}
	if (v->msg[0] && v->now < v->msg_until) {
		tui_put_hostile(f, y, 0, -1, v->msg_style, v->msg);
		return;
	}
	if (v->overlay != OV_NONE) {
		int x = tui_put(f, y, 0, -1, ST_KEY, false, "Esc");
		x = tui_put(f, y, x + 1, -1, ST_NORMAL, false, "Close");
		x = tui_put(f, y, x + 1, -1, ST_KEY, false, "Up Down PgUp PgDn");
		tui_put(f, y, x + 1, -1, ST_NORMAL, false, "Scroll");
		return;
	}
	static const char *const keys[][2] = {
		{"q", "Quit"}, {"?", "Help"}, {"Tab", "Pane"}, {"/", "Filter"}, {"u", "User"},
		{"g", "GPU"}, {"m", "Mine"}, {"t", "Tree"}, {"<>", "Sort"}, {"Enter", "Details"},
		{"k", "Kill"}, {"G", "Graph"}, {"R", "Release"},
	};
	int x = 0;
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		int w = (int)(strlen(keys[i][0]) + strlen(keys[i][1])) + 2;
		if (x + w > f->cols)
			break;
		x = tui_put(f, y, x, -1, ST_KEY, false, keys[i][0]);
		x = tui_put(f, y, x + 1, -1, ST_NORMAL, false, keys[i][1]);
		x++;
	}
}

/* The overlay over the body, from wrapped line v->ov_scroll on (tui_layout keeps it within
 * the text). While lines are left below, the last row says how many and how to
 * reach them: the help reads whole at 80x24, a smaller terminal scrolls it. */
static void overlay(struct tui_frame *f, const struct tui_layout *L, const struct tui_view *v)
{
	struct tui_overlay_text o;
	tui_overlay_open(&o, v, f->cols, f->utf8);
	int y = 1, bottom = L->footer_y;
	tui_put(f, y++, 0, f->cols, ST_TITLE, false, o.title);
	for (size_t at = v->ov_scroll > 0 ? (size_t)v->ov_scroll : 0; at < o.np && y < bottom; at++) {
		if (y == bottom - 1 && o.np - at > 1) {
			char more[96];
			snprintf(more, sizeof more, "... %zu more lines below: Down, PgDn", o.np - at);
			tui_put(f, y++, 1, -1, ST_DIM, false, more);
			break;
		}
		char *part = xstrndup(o.p[at].s, o.p[at].len);
		tui_put(f, y++, 1 + o.p[at].indent, -1, ST_NORMAL, false, part);
		free(part);
	}
	tui_overlay_close(&o);
}

void tui_render(struct tui_frame *f, const struct tui_layout *L, const struct tui_model *m,
		const struct tui_view *v)
{
	if (L->too_small) {
		char buf[96];
		snprintf(buf, sizeof buf, "gpuctl top needs %dx%d at least (now %dx%d); q quits",
			 TUI_MIN_COLS, TUI_MIN_ROWS, f->cols, f->rows);
		tui_put(f, 0, 0, -1, ST_WARN, false, buf);
		return;
	}
	tui_render_header(f, m, v, L);
	if (v->overlay != OV_NONE) {
		overlay(f, L, v);
	} else {
		tui_render_gpus(f, L, m, v);
		proc_pane(f, L, m, v);
		queue_pane(f, L, m);
	}
	footer(f, L, v);
}
