/* gpus.c: top's header line and GPU cards. A card's lines are made of items with
 * priorities: at a given width the least important go first and the bars take what is left
 * (as much on every card: what the fullest card leaves), so one card reads well from 40 columns
 * to 300. Every value the driver did not give is N/A. */
#include "base/escape.h"
#include "tui/tui.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

enum item_kind { IT_TEXT, IT_BAR };

struct item {
	enum item_kind kind;
	char text[160];              /* text, or the bar's label ("98%") */
	char brief[24];              /* a bar's label when it is narrow (memory: "87%") */
	char prefix[8];              /* a bar's name before it ("GPU") */
	enum tui_style st;
	int prio;                    /* the lowest goes first when the line is short */
	int min, want, w;            /* columns: at least, at most, given (0: left out) */
	double frac;                 /* bar: filled part, < 0 when unknown */
};

struct line {
	struct item it[12];
	int n;
};

static struct item *add(struct line *l, enum item_kind kind, enum tui_style st, int prio,
			const char *text, bool utf8)
{
	if (l->n >= (int)ARRAY_SIZE(l->it))
		return &l->it[l->n - 1];
	struct item *it = &l->it[l->n++];
	*it = (struct item){.kind = kind, .st = st, .prio = prio};
	snprintf(it->text, sizeof it->text, "%s", text);
	it->min = it->want = tui_width(text, utf8);
	return it;
}

/* Idle leases (issue 24): "idle 1:02:03" once the lease was idle a minute or warned, as
 * status shows it; "" when in use, not looked at, or idle only briefly. */
static bool idle_text(const struct lease_info *h, char *buf, size_t n)
{
	long long idle = leaseview_idle_seconds(h);
	char d[24];
	if (idle < 0 || (idle < 60 && !h->idle_warned && !h->idle_released)) {
		buf[0] = '\0';
		return false;
	}
	tui_duration(d, sizeof d, (double)idle);
	snprintf(buf, n, "idle %s%s", d, h->idle_released ? " released" : h->idle_warned ? " warned" : "");
	return true;
}

/* Text another user controls (a lease's name, a process's): escaped before it is measured. */
static struct item *add_hostile(struct line *l, enum tui_style st, int prio, const char *text,
				bool utf8)
{
	struct strbuf sb = {0};
	esc_printable_n(&sb, text, 512);
	struct item *it = add(l, IT_TEXT, st, prio, sb.buf ? sb.buf : "", utf8);
	sb_free(&sb);
	return it;
}

static struct item *add_bar(struct line *l, const char *prefix, double frac, const char *label,
			    const char *brief, enum tui_style fill, int prio)
{
	struct item *it = add(l, IT_BAR, fill, prio, label, false);
	snprintf(it->prefix, sizeof it->prefix, "%s", prefix);
	snprintf(it->brief, sizeof it->brief, "%s", brief ? brief : label);
	it->frac = frac;
	it->min = (int)strlen(prefix) + 2 + 8;   /* [|||| 98%] */
	it->want = (int)strlen(prefix) + 2 + 40;
	return it;
}

/* Which items fit in width, and how wide: drop the least important until the minima fit, give
 * text what it wants, then share the rest among the bars. */
static void fit_line(struct line *l, int width, int gap)
{
	for (int i = 0; i < l->n; i++)
		l->it[i].w = l->it[i].min;
	for (;;) {
		int sum = 0, k = 0, worst = -1;
		for (int i = 0; i < l->n; i++)
			if (l->it[i].w) {
				sum += l->it[i].w;
				k++;
				if (worst < 0 || l->it[i].prio < l->it[worst].prio)
					worst = i;
			}
		if (k == 0 || sum + gap * (k - 1) <= width)
			break;
		l->it[worst].w = 0;
	}
	int sum = 0, k = 0, bars = 0;
	for (int i = 0; i < l->n; i++)
		if (l->it[i].w) {
			sum += l->it[i].w;
			k++;
			bars += l->it[i].kind == IT_BAR;
		}
	int extra = width - sum - gap * (k > 0 ? k - 1 : 0);
	for (int i = 0; i < l->n && extra > 0; i++) {
		struct item *it = &l->it[i];
		if (it->w && it->kind != IT_BAR && it->want > it->w) {
			int more = it->want - it->w < extra ? it->want - it->w : extra;
			it->w += more;
			extra -= more;
		}
	}
	for (int i = 0; i < l->n && extra > 0 && bars > 0; i++) {
		struct item *it = &l->it[i];
		if (it->w && it->kind == IT_BAR) {
			int share = extra / bars--, more = it->want - it->w < share ? it->want - it->w : share;
			it->w += more;
			extra -= more;
		}
	}
}

static int line_gap(int width, enum tui_style gapst)
{
	return width < 100 && gapst != ST_HEAD ? 1 : 2;
}

enum { BARS = 2 };   /* a card's first line has two bars: GPU and MEM */

/* Narrows bars[k] to the width the line's k-th bar gets at width (a bar left out, 0 columns,
 * sets no limit). */
static void bar_limits(struct line *l, int width, int bars[BARS])
{
	fit_line(l, width, line_gap(width, ST_NORMAL));
	int k = 0;
	for (int i = 0; i < l->n && k < BARS; i++) {
		const struct item *it = &l->it[i];
		if (it->kind != IT_BAR)
			continue;
		if (it->w && it->w < bars[k])
			bars[k] = it->w;
		k++;
	}
}

/* bars: NULL, or the most columns each bar of the line may take (what the narrowest card's
 * got), so that the bars of every card are as wide whatever else a card shows. */
static void draw_line(struct tui_frame *f, struct line *l, int y, int x, int width,
		      enum tui_style gapst, const int *bars)
{
	int gap = line_gap(width, gapst);
	fit_line(l, width, gap);
	int k = 0;
	for (int i = 0; bars && i < l->n && k < BARS; i++) {
		struct item *it = &l->it[i];
		if (it->kind != IT_BAR)
			continue;
		if (it->w > bars[k])
			it->w = bars[k];
		k++;
	}
	bool first = true;
	for (int i = 0; i < l->n; i++) {
		struct item *it = &l->it[i];
		if (!it->w)
			continue;
		if (!first)
			x = tui_put(f, y, x, gap, gapst, false, "");
		first = false;
		if (it->kind == IT_BAR) {
			int pw = (int)strlen(it->prefix);
			x = tui_put(f, y, x, pw, ST_TITLE, false, it->prefix);
			int inner = it->w - pw - 2;
			bool longer = tui_width(it->text, f->utf8) + 1 <= inner;
			tui_bar(f, y, x, it->w - pw, it->frac, longer ? it->text : it->brief, it->st);
			x += it->w - pw;
		} else {
			x = tui_put(f, y, x, it->w, it->st, false, it->text);
		}
	}
}

static const struct { uint64_t bit; const char *name, *brief; } reasons[] = {
	{GPU_EVENT_SW_POWER_CAP, "power cap", "power"},
	{GPU_EVENT_HW_SLOWDOWN, "hw slowdown", "hw slow"},
	{GPU_EVENT_HW_THERMAL, "hw thermal", "hot"},
	{GPU_EVENT_SW_THERMAL, "sw thermal", "warm"},
	{GPU_EVENT_HW_POWER_BRAKE, "power brake", "brake"},
	{GPU_EVENT_SYNC_BOOST, "sync boost", "sync"},
	{GPU_EVENT_APPLICATIONS_CLOCKS, "applications clocks", "app clk"},
	{GPU_EVENT_DISPLAY_CLOCK, "display clock", "display"},
};

bool tui_throttle_text(uint64_t mask, char *buf, size_t n, bool brief)
{
	size_t len = 0, count = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(reasons); i++) {
		if (!(mask & reasons[i].bit))
			continue;
		if (brief && count) {
			count++;
			continue;
		}
		if (len < n)
			len += (size_t)snprintf(buf + len, n - len, "%s%s", count ? ", " : "",
						brief ? reasons[i].brief : reasons[i].name);
		count++;
	}
	if (brief && count > 1 && len < n)
		snprintf(buf + len, n - len, "+%zu", count - 1);
	return count > 0;
}

static enum tui_style temp_style(const struct gpu *g)
{
	unsigned slow = gpu_has(g, GF_TEMP_SLOWDOWN) && g->temp_slowdown ? g->temp_slowdown : 90;
	return g->temp + 5 >= slow ? ST_HIGH : g->temp + 15 >= slow ? ST_MID : ST_NORMAL;
}

/* Line 1: index, name, utilisation and memory bars, temperature, power; at level 1 also the
 * throttle reason and the lease holder, which have their own line at level 3. */
static void line_main(struct line *l, const struct tui_model *m, const struct tui_view *v,
		      const struct gpu *g, int level, bool utf8)
{
	char buf[160], brief[32];
	int digits = m->set->ngpus > 10 ? 2 : 1;
	bool sel = v->focus == FOCUS_GPUS && &m->set->gpus[v->gpu_sel] == g;
	snprintf(buf, sizeof buf, "%*u", digits, g->index);
	add(l, IT_TEXT, sel ? ST_SEL : ST_TITLE, 100, buf, utf8);
	const char *name = strncmp(g->name, "NVIDIA ", 7) ? g->name : g->name + 7;
	add_hostile(l, ST_TITLE, 30, name[0] ? name : "N/A", utf8);
	if (g->lost || g->inaccessible) {
		snprintf(buf, sizeof buf, "%s: %s", g->lost ? "LOST" : "NO ACCESS", g->error ? g->error : "");
		add_hostile(l, ST_WARN, 99, buf, utf8);
		return;
	}
	bool u = gpu_has(g, GF_UTIL_GPU);
	snprintf(buf, sizeof buf, u ? "%u%%" : "N/A", g->util_gpu);
	add_bar(l, "GPU", u ? g->util_gpu / 100.0 : -1, buf, NULL, tui_level(g->util_gpu), 90);
	bool mem = gpu_has(g, GF_MEM_USED) && gpu_has(g, GF_MEM_TOTAL) && g->mem_total;
	double frac = mem ? (double)g->mem_used / (double)g->mem_total : -1;
	snprintf(buf, sizeof buf, "%llu/%lluM", mib(g->mem_used), mib(g->mem_total));
	snprintf(brief, sizeof brief, "%.0f%%", frac * 100);
	add_bar(l, "MEM", frac, mem ? buf : "N/A", mem ? brief : "N/A", tui_level(frac * 100), 90);
	if (gpu_has(g, GF_TEMP)) {
		snprintf(buf, sizeof buf, "%uC", g->temp);
		add(l, IT_TEXT, temp_style(g), 60, buf, utf8);
	} else {
		add(l, IT_TEXT, ST_DIM, 60, "N/A", utf8);
	}
	if (gpu_has(g, GF_POWER) && gpu_has(g, GF_POWER_LIMIT))
		snprintf(buf, sizeof buf, "%u/%uW", (g->power_mw + 500) / 1000, (g->power_limit_mw + 500) / 1000);
	else if (gpu_has(g, GF_POWER))
		snprintf(buf, sizeof buf, "%uW", (g->power_mw + 500) / 1000);
	else
		snprintf(buf, sizeof buf, "N/A W");
	add(l, IT_TEXT, gpu_has(g, GF_POWER) ? ST_NORMAL : ST_DIM, 50, buf, utf8);
	if (level >= 3)
		return;
	if (gpu_has(g, GF_EVENTS_ACTIVE) && tui_throttle_text(g->events_active, buf, sizeof buf, true))
		add(l, IT_TEXT, ST_WARN, 45, buf, utf8);
	const struct lease_info *h = tui_lease(m, g);
	if (h) {
		char age[24], who[96];
		tui_duration(age, sizeof age, difftime(m->now, h->since));
		snprintf(who, sizeof who, "%s %s", h->user, age);
		add_hostile(l, h->uid == m->me ? ST_MINE : ST_NORMAL, 40, who, utf8);
		if (idle_text(h, who, sizeof who)) /* idle leases (issue 24) */
			add(l, IT_TEXT, ST_WARN, 38, who, utf8);
	}
}

/* Line 2: fan, clocks (now / most), encoder and decoder, PCIe link and throughput. */
static void line_detail(struct line *l, const struct tui_model *m, const struct gpu *g, bool utf8)
{
	char buf[96], a[24], b[24];
	if (gpu_has(g, GF_FAN))
		snprintf(buf, sizeof buf, "fan %u%%", g->fan);
	add(l, IT_TEXT, gpu_has(g, GF_FAN) ? ST_NORMAL : ST_DIM, 50, gpu_has(g, GF_FAN) ? buf : "fan N/A", utf8);
	const struct { enum gpu_field f, max; unsigned v, vmax; const char *name; int prio; } clk[] = {
		{GF_CLK_SM, GF_CLK_MAX_SM, g->clk_sm, g->clk_max_sm, "sm", 60},
		{GF_CLK_MEM, GF_CLK_MAX_MEM, g->clk_mem, g->clk_max_mem, "mem", 40},
	};
	for (size_t i = 0; i < ARRAY_SIZE(clk); i++) {
		if (!gpu_has(g, clk[i].f))
			snprintf(buf, sizeof buf, "%s N/A", clk[i].name);
		else if (gpu_has(g, clk[i].max))
			snprintf(buf, sizeof buf, "%s %u/%uMHz", clk[i].name, clk[i].v, clk[i].vmax);
		else
			snprintf(buf, sizeof buf, "%s %uMHz", clk[i].name, clk[i].v);
		add(l, IT_TEXT, gpu_has(g, clk[i].f) ? ST_NORMAL : ST_DIM, clk[i].prio, buf, utf8);
	}
	snprintf(a, sizeof a, gpu_has(g, GF_UTIL_ENC) ? "%u%%" : "N/A", g->util_enc);
	snprintf(b, sizeof b, gpu_has(g, GF_UTIL_DEC) ? "%u%%" : "N/A", g->util_dec);
	snprintf(buf, sizeof buf, "enc %s dec %s", a, b);
	add(l, IT_TEXT, ST_NORMAL, 45, buf, utf8);
	if (gpu_has(g, GF_PCIE_GEN) && gpu_has(g, GF_PCIE_WIDTH)) {
		snprintf(buf, sizeof buf, "PCIe %ux%u", g->pcie_gen, g->pcie_width);
		add(l, IT_TEXT, ST_NORMAL, 30, buf, utf8);
	}
	const struct tui_pcie *pc = &m->pcie[g - m->set->gpus];
	if (pc->valid) {
		tui_rate(a, sizeof a, pc->rx_kbs);
		tui_rate(b, sizeof b, pc->tx_kbs);
		snprintf(buf, sizeof buf, "rx %s tx %s", a, b);
	}
	add(l, IT_TEXT, pc->valid ? ST_NORMAL : ST_DIM, 55, pc->valid ? buf : "rx/tx N/A", utf8);
	if (gpu_has(g, GF_PSTATE)) {
		snprintf(buf, sizeof buf, "P%u", g->pstate);
		add(l, IT_TEXT, ST_DIM, 20, buf, utf8);
	}
}

/* Line 3: the lease (holder, name, kind, for how long, idle), throttle reasons, MIG. */
static void line_lease(struct line *l, const struct tui_model *m, const struct gpu *g, bool utf8)
{
	char buf[160], age[24];
	const struct lease_info *h = tui_lease(m, g);
	if (h) {
		tui_duration(age, sizeof age, difftime(m->now, h->since));
		snprintf(buf, sizeof buf, "lease %s%s%s%s %s %s", h->user, h->name ? " '" : "",
			 h->name ? h->name : "", h->name ? "'" : "", h->kind, age);
		add_hostile(l, h->uid == m->me ? ST_MINE : ST_NORMAL, 90, buf, utf8);
		if (idle_text(h, buf, sizeof buf))
			add(l, IT_TEXT, ST_WARN, 88, buf, utf8);
	} else if (m->lv && leaseview_held(m->lv, g->uuid)) {
		add(l, IT_TEXT, ST_WARN, 90, "leased by a process the daemon cannot name", utf8);
	} else if (m->lv && leaseview_share_gpu(m->lv, g->uuid)) {
		/* memory shares (issue 23): how many, what is left; then each share's holder */
		const struct share_gpu *s = leaseview_share_gpu(m->lv, g->uuid);
		snprintf(buf, sizeof buf, "shared: %u, %llu MiB left", s->count,
			 (unsigned long long)s->room);
		add(l, IT_TEXT, ST_NORMAL, 90, buf, utf8);
		const struct lease_info *sh;
		for (size_t k = 0; (sh = leaseview_share(m->lv, g->uuid, k)); k++) {
			char idle[48];
			idle_text(sh, idle, sizeof idle);
			snprintf(buf, sizeof buf, "%s %lluM%s%s%s", sh->user, (unsigned long long)sh->mem_mib,
				 sh->over ? " OVER" : "", idle[0] ? " " : "", idle);
			add_hostile(l, sh->over ? ST_WARN : sh->uid == m->me ? ST_MINE : ST_NORMAL,
				    85 - (int)(k < 40 ? k : 40), buf, utf8);
		}
	} else {
		add(l, IT_TEXT, ST_DIM, 90, m->lv && m->lv->present ? "not leased" : "no lease daemon", utf8);
	}
	char r[128];
	if (gpu_has(g, GF_EVENTS_ACTIVE) && tui_throttle_text(g->events_active, r, sizeof r, false)) {
		snprintf(buf, sizeof buf, "throttled: %s", r);
		add(l, IT_TEXT, ST_WARN, 80, buf, utf8);
	}
	if (gpu_has(g, GF_MIG_MODE) && g->mig_mode) {
		snprintf(buf, sizeof buf, "MIG: %zu instance%s", g->nmigs, g->nmigs == 1 ? "" : "s");
		add(l, IT_TEXT, ST_NORMAL, 50, buf, utf8);
	}
}

static void history(struct tui_frame *f, const struct tui_model *m, const struct gpu *g, int y,
		    int x, int w, int h, const struct tui_view *v)
{
	const struct tui_history *hs = &m->hist[g - m->set->gpus];
	unsigned char util[TUI_HISTORY], mem[TUI_HISTORY];
	for (size_t i = 0; i < hs->n; i++) {        /* oldest first */
		size_t at = (hs->head + TUI_HISTORY - hs->n + i) % TUI_HISTORY;
		util[i] = hs->util[at];
		mem[i] = hs->mem[at];
	}
	const int label = 6;
	int half = (w - 2) / 2, gw = half - label;
	if (gw < 4)
		return;
	char span[24], now[2][16];
	size_t nshow = hs->n < (size_t)gw ? hs->n : (size_t)gw;
	tui_duration(span, sizeof span, v->delay * (double)(nshow ? nshow - 1 : 0));
	const unsigned char last[2] = {hs->n ? util[hs->n - 1] : TUI_NA, hs->n ? mem[hs->n - 1] : TUI_NA};
	for (int k = 0; k < 2; k++) {
		if (last[k] == TUI_NA)
			snprintf(now[k], sizeof now[k], "N/A");
		else
			snprintf(now[k], sizeof now[k], "%u%%", last[k]);
	}
	for (int k = 0; k < 2; k++) {
		int gx = x + 2 + k * half;
		for (int r = 0; r < h; r++) {
			const char *t = r == 0 ? (k ? "mem" : "util") : r == 1 ? now[k] : r == h - 1 ? span : "";
			tui_put(f, y + r, gx, label, r == 0 ? ST_TITLE : ST_DIM, false, t);
		}
		tui_graph(f, y, gx + label, gw - 1, h, k ? mem : util, hs->n,
			  k ? ST_MID : ST_LOW);
	}
}

void tui_render_gpus(struct tui_frame *f, const struct tui_layout *L, const struct tui_model *m,
		     const struct tui_view *v)
{
	/* The bars of the cards shown are all as wide as the narrowest card's: a card with a lease
	 * holder or a throttle reason on its first line would otherwise have shorter ones, and
	 * bars of one length read as the same scale. */
	int bars[BARS] = {INT_MAX, INT_MAX};
	for (int c = 0; c < L->ncards; c++) {
		const struct tui_card *k = &L->cards[c];
		struct line l = {0};
		if (!k->h)
			continue;
		line_main(&l, m, v, &m->set->gpus[k->gpu], k->level, f->utf8);
		bar_limits(&l, k->w, bars);
	}
	for (int c = 0; c < L->ncards; c++) {
		const struct tui_card *k = &L->cards[c];
		const struct gpu *g = &m->set->gpus[k->gpu];
		if (!k->h)
			continue;
		struct line l = {0};
		line_main(&l, m, v, g, k->level, f->utf8);
		draw_line(f, &l, k->y, k->x, k->w, ST_NORMAL, bars);
		int y = k->y + 1;
		if (k->level >= 2 && y < k->y + k->h && !g->lost && !g->inaccessible) {
			l = (struct line){0};
			line_detail(&l, m, g, f->utf8);
			draw_line(f, &l, y++, k->x + 2, k->w - 2, ST_NORMAL, NULL);
		}
		if (k->level >= 3 && y < k->y + k->h && !g->lost && !g->inaccessible) {
			l = (struct line){0};
			line_lease(&l, m, g, f->utf8);
			draw_line(f, &l, y++, k->x + 2, k->w - 2, ST_NORMAL, NULL);
		}
		y = k->y + k->level;
		if (k->graph_h && y < k->y + k->h)
			history(f, m, g, y, k->x, k->w, k->y + k->h - y, v);
	}
}

/* The header: what this is, where, and when; the least important parts go first when it is
 * narrow (the driver and CUDA versions, then the leases). */
void tui_render_header(struct tui_frame *f, const struct tui_model *m, const struct tui_view *v,
		       const struct tui_layout *L)
{
	const struct gpu_set *set = m->set;
	char buf[160], when[16];
	size_t nsel = 0;
	for (size_t i = 0; i < set->ngpus; i++)
		nsel += set->gpus[i].selected;
	struct line l = {0};
	add(&l, IT_TEXT, ST_HEAD, 20, "gpuctl top", f->utf8);
	add_hostile(&l, ST_HEAD, 80, m->host, f->utf8);
	snprintf(buf, sizeof buf, "%zu GPU%s", nsel, nsel == 1 ? "" : "s");
	if (L && L->card_rows_shown < L->card_rows)
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " (more: Tab, arrows)");
	add(&l, IT_TEXT, ST_HEAD, 90, buf, f->utf8);
	snprintf(buf, sizeof buf, "driver %s", set->has_driver_version ? set->driver_version : "N/A");
	add(&l, IT_TEXT, ST_HEAD, 30, buf, f->utf8);
	if (set->cuda_version)
		snprintf(buf, sizeof buf, "CUDA %d.%d", set->cuda_version / 1000, set->cuda_version % 1000 / 10);
	else
		snprintf(buf, sizeof buf, "CUDA N/A");
	add(&l, IT_TEXT, ST_HEAD, 25, buf, f->utf8);
	if (m->lv && m->lv->present) {
		/* GPUs, not leases: a lease of two GPUs is two GPUs nobody else gets; those held by
		 * a process no record names are held all the same. */
		size_t ngpus = m->lv->nheld;
		for (size_t i = 0; i < m->lv->nleases; i++)
			ngpus += m->lv->leases[i].ngpus;
		snprintf(buf, sizeof buf, "%zu GPU%s leased, %zu waiting", ngpus, ngpus == 1 ? "" : "s",
			 m->lv->nqueue + m->lv->nsummed);
		add(&l, IT_TEXT, ST_HEAD, 50, buf, f->utf8);
	}
	struct tm tm;
	localtime_r(&m->now, &tm);
	strftime(when, sizeof when, "%H:%M:%S", &tm);
	snprintf(buf, sizeof buf, "every %gs  %s ", v->delay, when);
	int rw = (int)strlen(buf);
	int x = tui_put(f, 0, 0, 1, ST_HEAD, false, " ");
	draw_line(f, &l, 0, x, f->cols - rw - 2 > 0 ? f->cols - rw - 2 : 0, ST_HEAD, NULL);
	tui_put(f, 0, f->x[0], f->cols - f->x[0], ST_HEAD, true, buf);
}
