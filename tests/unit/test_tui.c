/* test_tui.c: gpuctl top's pure parts: text widths and cutting, formats, bars and graphs, the
 * layout at 80x24 and 200x50 (what goes where, which columns fit, what is read from NVML), the
 * rendered frame (every row fits, hostile text escaped), filters, sorts and the tree of a job,
 * and the keys (each one the help lists, and the help lists each one handled). */
#include "machine/kill.h"
#include "lease/view.h"
#include "machine/pid.h"
#include "tap.h"
#include "tui/act.h"
#include "tui/curses.h"
#include "tui/tui.h"

#include <errno.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void set_field(struct gpu *g, enum gpu_field f)
{
	g->valid |= 1ULL << f;
}

/* n H100s, each with procs_per_gpu processes: pids 1000 + 10 * gpu + k, uid 1000 + k % 2. */
static struct gpu_set *fake_set(size_t n, size_t procs_per_gpu)
{
	struct gpu_set *set = xcalloc(1, sizeof *set);
	set->ngpus = n;
	set->gpus = xcalloc(n, sizeof *set->gpus);
	snprintf(set->driver_version, sizeof set->driver_version, "550.54.15");
	set->has_driver_version = true;
	set->cuda_version = 12040;
	for (size_t i = 0; i < n; i++) {
		struct gpu *g = &set->gpus[i];
		g->index = (unsigned)i;
		g->selected = true;
		snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3");
		snprintf(g->uuid, sizeof g->uuid, "GPU-%08zx-0000-0000-0000-000000000000", i);
		g->mem_total = 81559ULL << 20;
		g->mem_used = (uint64_t)(i * 1000) << 20;
		g->util_gpu = (unsigned)(i * 12 % 101);
		g->temp = 40;
		g->power_mw = 150000;
		g->power_limit_mw = 700000;
		enum gpu_field fs[] = {GF_MEM_TOTAL, GF_MEM_USED, GF_UTIL_GPU, GF_TEMP, GF_POWER,
				       GF_POWER_LIMIT, GF_PROCESSES};
		for (size_t k = 0; k < ARRAY_SIZE(fs); k++)
			set_field(g, fs[k]);
		g->nprocs = procs_per_gpu;
		g->procs = xcalloc(procs_per_gpu ? procs_per_gpu : 1, sizeof *g->procs);
		for (size_t k = 0; k < procs_per_gpu; k++) {
			struct gpu_proc *p = &g->procs[k];
			p->pid = (unsigned)(1000 + 10 * i + k);
			p->type = PROC_COMPUTE;
			p->mem_valid = true;
			p->used_mem = (uint64_t)(100 * (k + 1) + i) << 20;
			p->gi = p->ci = NO_INSTANCE;
			p->uid = (uid_t)(1000 + k % 2);
			p->uid_valid = true;
			p->user = k % 2 ? "bob" : "alice";
			p->cmdline = k % 2 ? "python eval.py" : "python train.py --model llama";
			p->util_valid = true;
			p->sm_util = (unsigned)(10 * k);
			p->stat_valid = true;
			p->ppid = 1;
			p->rss = (uint64_t)(k + 1) << 30;
			p->elapsed = 60.0 * (double)k;
		}
	}
	return set;
}

static void free_set(struct gpu_set *set)
{
	for (size_t i = 0; i < set->ngpus; i++)
		free(set->gpus[i].procs);
	free(set->gpus);
	free(set);
}

/* The frame of model m and view v at rows x cols, as text. */
static char *screen(struct tui_model *m, struct tui_view *v, int rows, int cols,
		    struct tui_layout *L)
{
	struct tui_frame f;
	tui_model_order(m, v);
	tui_layout(L, rows, cols, m, v);
	tui_frame_init(&f, rows, cols, v->utf8);
	tui_render(&f, L, m, v);
	char *text = tui_frame_text(&f);
	tui_frame_free(&f);
	return text;
}

/* Every row of text is at most cols wide. */
static bool rows_fit(const char *text, int cols, bool utf8)
{
	char *copy = xstrdup(text), *save = NULL;
	bool ok = true;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		ok &= tui_width(l, utf8) <= cols;
	free(copy);
	return ok;
}

static const char *line_of(const char *text, int n)
{
	static char buf[1024];
	for (int i = 0; i < n && text; i++) {
		text = strchr(text, '\n');
		text = text ? text + 1 : NULL;
	}
	snprintf(buf, sizeof buf, "%.*s", text ? (int)strcspn(text, "\n") : 0, text ? text : "");
	return buf;
}

static void test_text(void)
{
	CHECK(tui_width("abc", false) == 3);
	CHECK(tui_width("\xc3\xa9t\xc3\xa9", true) == 3);         /* été */
	CHECK(tui_width("\xe4\xb8\xad", true) == 2);              /* a wide CJK character */
	CHECK(tui_width("\xc3\xa9t\xc3\xa9", false) == 3);        /* shown as ?t? */
	CHECK(tui_cut("abcdef", 4, false) == 4);
	CHECK(tui_cut("\xe4\xb8\xad\xe4\xb8\xad", 3, true) == 3); /* one wide character fits */
	CHECK(tui_cut("\xe4\xb8\xad", 1, true) == 3);             /* at least one, to advance */
	struct tui_frame f;
	tui_frame_init(&f, 3, 10, false);
	tui_put(&f, 0, 2, 4, ST_NORMAL, true, "ab");
	tui_put(&f, 0, 6, -1, ST_TITLE, false, "cdefghij");       /* cut at the row's end */
	tui_put(&f, 1, 0, 3, ST_NORMAL, false, "\xc3\xa9t\xc3\xa9!"); /* not UTF-8: ?t? */
	tui_put_hostile(&f, 2, 0, -1, ST_NORMAL, "a\033[2Jb");    /* escaped, never raw ESC */
	char *t = tui_frame_text(&f);
	CHECK_STR(line_of(t, 0), "    abcdef");
	CHECK_STR(line_of(t, 1), "?t?");
	CHECK_STR(line_of(t, 2), "a\\e[2Jb");
	CHECK(!strchr(f.row[2].buf, '\033'));
	free(t);
	tui_frame_free(&f);

	char buf[32];
	static const struct { uint64_t b; const char *s; } bytes[] = {
		{512ULL << 10, "512K"}, {3584ULL << 10, "3.5M"}, {70000ULL << 20, "68.4G"},
		{900ULL << 20, "900M"}, {2ULL << 40, "2.0T"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bytes); i++) {
		tui_bytes(buf, sizeof buf, bytes[i].b);
		CHECK_STR(buf, bytes[i].s);
	}
	static const struct { double s; const char *t; } dur[] = {
		{0, "0:00"}, {59.9, "0:59"}, {3599, "59:59"}, {3600, "1:00:00"}, {86399, "23:59:59"},
		{3 * 86400 + 4 * 3600, "3d04h"}, {1000 * 86400.0, "1000d"}, {-5, "0:00"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(dur); i++) {
		tui_duration(buf, sizeof buf, dur[i].s);
		CHECK_STR(buf, dur[i].t);
	}
	tui_rate(buf, sizeof buf, 999);
	CHECK_STR(buf, "999K/s");
	tui_rate(buf, sizeof buf, 1830000);
	CHECK_STR(buf, "1.7G/s");
	CHECK(tui_level(49.9) == ST_LOW && tui_level(50) == ST_MID && tui_level(90) == ST_HIGH);

	tui_frame_init(&f, 4, 12, false);
	tui_bar(&f, 0, 0, 12, 0.5, "50%", ST_MID);
	tui_bar(&f, 1, 0, 12, -1, "N/A", ST_MID);
	tui_bar(&f, 2, 0, 12, 0.001, "0%", ST_LOW);               /* a little is not nothing */
	tui_bar(&f, 3, 0, 12, 1, "100%", ST_HIGH);
	t = tui_frame_text(&f);
	CHECK_STR(line_of(t, 0), "[|||||  50%]");
	CHECK_STR(line_of(t, 1), "[       N/A]");
	CHECK_STR(line_of(t, 2), "[|       0%]");
	CHECK_STR(line_of(t, 3), "[||||||100%]");
	free(t);
	tui_frame_free(&f);

	/* Graph: 2 rows, samples 0, 25, 50, 100, N/A; the newest at the right. */
	const unsigned char s[] = {0, 25, 50, 100, TUI_NA};
	tui_frame_init(&f, 2, 7, false);
	tui_graph(&f, 0, 0, 7, 2, s, ARRAY_SIZE(s), ST_LOW);
	t = tui_frame_text(&f);
	CHECK_STR(line_of(t, 0), "     # ");
	CHECK_STR(line_of(t, 1), "   :## ");
	free(t);
	tui_frame_free(&f);
	tui_frame_init(&f, 1, 3, true);
	tui_graph(&f, 0, 0, 3, 1, s + 1, 3, ST_LOW);
	t = tui_frame_text(&f);
	CHECK_STR(line_of(t, 0), "\u2582\u2584\u2588");
	free(t);
	tui_frame_free(&f);

	CHECK(tui_throttle_text(GPU_EVENT_SW_POWER_CAP | GPU_EVENT_HW_SLOWDOWN, buf, sizeof buf, true) &&
	      !strcmp(buf, "power+1"));
	CHECK(!tui_throttle_text(GPU_EVENT_GPU_IDLE, buf, sizeof buf, false));  /* idle is not throttled */
}

static void test_layout(void)
{
	struct gpu_set *set = fake_set(8, 2);
	struct tui_model m;
	struct tui_view v;
	struct tui_layout L = {0};
	tui_model_init(&m, set, 1000);
	tui_view_init(&v);
	tui_model_update(&m, NULL, false, false, 0, 1);

	/* 80x24 with 8 GPUs: one line each, the processes keep a third of the screen. */
	char *t = screen(&m, &v, 24, 80, &L);
	CHECK(!L.too_small && L.card_cols == 1 && L.ncards == 8 && L.gpu_h == 8);
	for (int c = 0; c < L.ncards; c++)
		CHECK(L.cards[c].level == 1 && L.cards[c].h == 1 && L.cards[c].y == 1 + c);
	CHECK(L.proc_y == 9 && L.footer_y == 23 && tui_proc_rows(&L) == 12);
	CHECK(rows_fit(t, 80, false));
	CHECK(strstr(line_of(t, 0), "8 GPUs") != NULL);
	CHECK(!strncmp(line_of(t, 1), "0 H100 80GB HBM3 GPU[", 21));
	CHECK(strstr(line_of(t, 9), "16 processes") && strstr(line_of(t, 9), "sort gmem"));
	CHECK(strstr(line_of(t, 10), "USER") && strstr(line_of(t, 10), "COMMAND"));
	CHECK(!strncmp(line_of(t, 23), "q Quit", 6));
	/* Columns: in order, inside the width, the command keeps at least a quarter. */
	int end = 0;
	bool cmd = false;
	for (int i = 0; i < L.ncols; i++) {
		CHECK(L.colspec[i].x >= end);
		end = L.colspec[i].x + L.colspec[i].w;
		cmd |= L.colspec[i].col == COL_CMD && L.colspec[i].w >= 20;
	}
	CHECK(end <= 80 && cmd);
	/* At 80 columns only the base and what every level shows is read; every process's /proc
	 * stats only for an order that needs them (the rows shown read theirs: tui_model_stats). */
	unsigned need = tui_refresh_needs(&L);
	CHECK(!(need & REFRESH_PROC_STATS) && (need & REFRESH_PERF) && !(need & REFRESH_FAN) &&
	      !(need & REFRESH_PCIE) && !L.all_stats);
	free(t);
	/* Sorted by host CPU, or as a tree (parents): every process's stats, at each refresh. */
	v.sort = COL_CPU;
	free(screen(&m, &v, 24, 80, &L));
	CHECK(L.all_stats && (tui_refresh_needs(&L) & REFRESH_PROC_STATS));
	v.sort = COL_GMEM;
	v.tree = true;
	free(screen(&m, &v, 24, 80, &L));
	CHECK(L.all_stats && (tui_refresh_needs(&L) & REFRESH_PROC_STATS));
	v.tree = false;

	/* 200x50: two cards side by side, each with its details and lease line. */
	t = screen(&m, &v, 50, 200, &L);
	CHECK(L.card_cols == 2 && L.cards[0].level == 3 && L.cards[1].x > 90 && L.cards[1].y == 1);
	CHECK(L.gpu_h == 12 && rows_fit(t, 200, false));
	need = tui_refresh_needs(&L);
	CHECK((need & REFRESH_FAN) && (need & REFRESH_CLOCKS) && (need & REFRESH_PCIE) &&
	      (need & REFRESH_ENGINES));
	bool enc = false;
	for (int i = 0; i < L.ncols; i++)
		enc |= L.colspec[i].col == COL_ENC;
	CHECK(enc);  /* the wide table has the codec columns */
	CHECK(strstr(t, "no lease daemon") != NULL);
	free(t);

	/* Graphs for all at 80x24: the pane scrolls, the selected GPU stays in view. */
	v.graphs = 0xff;
	v.focus = FOCUS_GPUS;
	v.gpu_sel = 7;
	t = screen(&m, &v, 24, 80, &L);
	CHECK(L.card_rows_shown < L.card_rows && L.cards[7].h > 0 && L.cards[0].h == 0);
	CHECK(L.cards[7].level == 3 && L.cards[7].graph_h >= 2);
	CHECK(L.gpu_h <= 24 - 2 - 7 && rows_fit(t, 80, false));
	CHECK(strstr(line_of(t, 0), "more: Tab") != NULL);
	free(t);
	v.graphs = 0;
	v.focus = FOCUS_PROCS;

	/* Too small: says so. */
	t = screen(&m, &v, 8, 30, &L);
	CHECK(L.too_small && strstr(t, "needs 40x10") != NULL);
	free(t);

	/* Filters and sorts. */
	v.sort = COL_GMEM;
	tui_model_order(&m, &v);
	CHECK(m.nshown == 16 && m.rows[m.shown[0]].pid == 1071 && m.rows[m.shown[15]].pid == 1000);
	v.reverse = true;
	tui_model_order(&m, &v);
	CHECK(m.rows[m.shown[0]].pid == 1000);
	v.reverse = false;
	v.sort = COL_USER;
	tui_model_order(&m, &v);
	CHECK(!strcmp(m.rows[m.shown[0]].user, "alice") && !strcmp(m.rows[m.shown[15]].user, "bob"));
	v.mine_only = true;
	tui_model_order(&m, &v);
	CHECK(m.nshown == 8);
	v.mine_only = false;
	snprintf(v.filter, sizeof v.filter, "EVAL");
	tui_model_order(&m, &v);
	CHECK(m.nshown == 8 && strstr(m.rows[m.shown[0]].cmd, "eval"));
	snprintf(v.filter, sizeof v.filter, "1031");
	tui_model_order(&m, &v);
	CHECK(m.nshown == 1 && m.rows[m.shown[0]].pid == 1031);
	v.filter[0] = '\0';
	v.gpu_mask = 1 << 2 | 1 << 5;
	snprintf(v.user, sizeof v.user, "bob");
	tui_model_order(&m, &v);
	CHECK(m.nshown == 2 && m.rows[m.shown[0]].g->index == 2 && m.rows[m.shown[1]].g->index == 5);
	/* The selection follows its process when the order changes. */
	v.user[0] = '\0';
	v.gpu_mask = 0;
	v.sort = COL_PID;
	tui_model_order(&m, &v);
	v.sel = 5;
	v.sel_pid = m.rows[m.shown[5]].pid;
	v.sel_gpu = (int)m.rows[m.shown[5]].g->index;
	unsigned pid = v.sel_pid;
	v.reverse = true;
	tui_model_order(&m, &v);
	CHECK(v.sel == 10 && tui_selected(&m, &v)->pid == pid);
	v.reverse = false;

	/* Tree: a launcher (a context row, no GPU) and its two workers; one worker's child. */
	m.nrows = 0;
	struct tui_row rows[] = {
		{.pid = 500, .ppid = 1, .user = "alice", .cmd = "torchrun", .stat_valid = true},
		{.pid = 501, .ppid = 500, .stat_valid = true},
		{.pid = 502, .ppid = 500, .stat_valid = true},
		{.pid = 503, .ppid = 501, .stat_valid = true},
		{.pid = 600, .ppid = 1, .stat_valid = true},
	};
	const struct gpu_proc *procs[] = {NULL, &set->gpus[0].procs[0], &set->gpus[1].procs[0],
					  &set->gpus[2].procs[0], &set->gpus[3].procs[0]};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		m.rows = grow_array(m.rows, &m.rows_cap, m.nrows + 1, sizeof *m.rows);
		m.rows[m.nrows] = rows[i];
		m.rows[m.nrows].p = procs[i];
		m.rows[m.nrows].g = procs[i] ? &set->gpus[i - 1] : NULL;
		m.rows[m.nrows].user = "alice";
		m.rows[m.nrows].cmd = "x";
		m.nrows++;
	}
	v.tree = true;
	v.sort = COL_PID;
	tui_model_order(&m, &v);
	CHECK(m.nshown == 5);
	static const unsigned want_pid[] = {500, 501, 503, 502, 600};
	static const int want_depth[] = {0, 1, 2, 1, 0};
	for (size_t i = 0; i < 5 && i < m.nshown; i++)
		CHECK(m.rows[m.shown[i]].pid == want_pid[i] && m.rows[m.shown[i]].depth == want_depth[i]);
	CHECK(!m.rows[m.shown[1]].last && m.rows[m.shown[3]].last && m.rows[m.shown[2]].last);
	CHECK(m.rows[m.shown[2]].open >> 1 & 1);   /* 501 has a sibling below: its line goes on */
	/* A filter keeps the ancestors of what matches, and drops a launcher left with nothing. */
	v.gpu_mask = 1 << 1;
	tui_model_order(&m, &v);
	CHECK(m.nshown == 2 && m.rows[m.shown[0]].pid == 500 && m.rows[m.shown[1]].pid == 502);
	v.gpu_mask = 1 << 3;
	tui_model_order(&m, &v);
	CHECK(m.nshown == 1 && m.rows[m.shown[0]].pid == 600);
	v.gpu_mask = 0;
	t = screen(&m, &v, 24, 80, &L);
	CHECK(strstr(t, "`- x") != NULL && strstr(t, "|  `- x") != NULL);
	free(t);

	tui_layout_free(&L);
	tui_model_free(&m);
	tui_view_free(&v);
	free_set(set);
}

/* The help's key column (up to the first three spaces) names each key the view handles. */
static const struct { int key; const char *name; } keynames[] = {
	{KEY_UP, "Up"}, {KEY_DOWN, "Down"}, {KEY_PPAGE, "PgUp"}, {KEY_NPAGE, "PgDn"},
	{KEY_HOME, "Home"}, {KEY_END, "End"}, {'\t', "Tab"}, {KEY_BTAB, "Shift-Tab"},
	{KEY_F1, "F1"}, {KEY_F6, "F6"}, {KEY_F9, "F9"}, {KEY_F10, "F10"}, {'\n', "Enter"},
	{'\r', "Enter"}, {KEY_ENTER, "Enter"}, {12, "Ctrl-L"}, {27, "Esc"},
};

static bool help_names(const char *name)
{
	for (size_t i = 0; tui_help[i]; i++) {
		char col[80];
		snprintf(col, sizeof col, " %.70s", tui_help[i]);
		char *end = strstr(col + 1, "   ");
		if (end)
			end[1] = '\0';
		char want[24];
		snprintf(want, sizeof want, " %s ", name);
		if (strstr(col, want))
			return true;
	}
	return false;
}

static void test_keys(void)
{
	struct gpu_set *set = fake_set(2, 2);
	struct tui_model m;
	struct tui_view v;
	tui_model_init(&m, set, 1000);
	tui_model_update(&m, NULL, false, false, 0, 1);
	int missing = 0;
	for (int key = 1; key < 0x7f; key++) {
		tui_view_init(&v);
		tui_model_order(&m, &v);
		enum tui_action a = tui_key(&v, &m, key);
		if (a == ACT_NONE || (key == 27))
			continue;
		char name[8] = {(char)key, 0};
		for (size_t i = 0; i < ARRAY_SIZE(keynames); i++)
			if (keynames[i].key == key)
				snprintf(name, sizeof name, "%s", keynames[i].name);
		if (!help_names(name)) {
			printf("# key %d (%s) is handled but not in the help\n", key, name);
			missing++;
		}
		tui_view_free(&v);
	}
	for (size_t i = 0; i < ARRAY_SIZE(keynames); i++) {
		tui_view_init(&v);
		tui_model_order(&m, &v);
		if (tui_key(&v, &m, keynames[i].key) != ACT_NONE && !help_names(keynames[i].name)) {
			printf("# key %s is handled but not in the help\n", keynames[i].name);
			missing++;
		}
		tui_view_free(&v);
	}
	CHECK(missing == 0);
	/* And the other way: a letter the help lists does something. */
	static const char listed[] = "q?h<>IMSPTN/ugmctikGHR";
	for (const char *c = listed; *c; c++) {
		tui_view_init(&v);
		tui_model_order(&m, &v);
		CHECK(tui_key(&v, &m, *c) != ACT_NONE);
		tui_view_free(&v);
	}

	/* A prompt: typed, edited, applied. */
	tui_view_init(&v);
	tui_model_order(&m, &v);
	CHECK(tui_key(&v, &m, '/') == ACT_REDRAW && v.prompt == PR_FILTER);
	for (const char *c = "trainx"; *c; c++)
		tui_key(&v, &m, *c);
	tui_key(&v, &m, KEY_BACKSPACE);
	tui_key(&v, &m, '\r');
	CHECK(v.prompt == PR_NONE && !strcmp(v.filter, "train"));
	tui_key(&v, &m, 'g');
	tui_key(&v, &m, '1');
	tui_key(&v, &m, '\r');
	CHECK(v.gpu_mask == 2);
	tui_key(&v, &m, 'g');
	tui_key(&v, &m, 21);      /* Ctrl-U */
	tui_key(&v, &m, '7');
	tui_key(&v, &m, '\r');
	CHECK(v.gpu_mask == 0 && strstr(v.msg, "not a list of GPU indices"));
	tui_key(&v, &m, 'c');
	CHECK(!v.filter[0] && !v.gpu_mask);
	CHECK(tui_key(&v, &m, 'q') == ACT_QUIT);
	/* A confirmation: anything but y declines. */
	v.prompt = PR_KILL;
	CHECK(tui_key(&v, &m, 'n') == ACT_REDRAW && v.prompt == PR_NONE);
	v.prompt = PR_KILL;
	CHECK(tui_key(&v, &m, 'y') == ACT_KILL);
	/* Sorting keys: > moves right, the same letter twice inverts. */
	v.sort = COL_GMEM;
	tui_key(&v, &m, '>');
	CHECK(v.sort == COL_SM);
	tui_key(&v, &m, 'P');
	tui_key(&v, &m, 'P');
	CHECK(v.sort == COL_CPU && v.reverse);
	/* G on a process: its GPU's graph; H: all, again: none. */
	tui_model_order(&m, &v);
	tui_key(&v, &m, 'G');
	CHECK(v.graphs == 1ULL << tui_selected(&m, &v)->g->index);
	tui_key(&v, &m, 'H');
	CHECK(v.graphs == 3);
	tui_key(&v, &m, 'H');
	CHECK(v.graphs == 0);
	tui_view_free(&v);
	tui_model_free(&m);
	free_set(set);
}

/* A child of ours that waits to be signalled; its start time in *start. */
static pid_t child(unsigned long long *start)
{
	pid_t pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	struct pid_stat st;
	*start = pid > 0 && pid_stat((unsigned)pid, &st) ? st.start : 0;
	return pid;
}

/* Still running, not signalled: waitpid reports nothing for it. */
static bool alive(pid_t pid)
{
	int status;
	return waitpid(pid, &status, WNOHANG) == 0;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* k, then y: the answer is about the process that was asked about. A refresh in between that
 * lists a new process under the same pid (the old one exited, its pid reused) gets nothing. */
static void test_kill_pinned(void)
{
	unsigned long long start;
	pid_t pid = child(&start);
	CHECK(pid > 0 && start > 1);
	struct gpu_set *set = fake_set(1, 1);
	struct gpu_proc *p = &set->gpus[0].procs[0];
	p->pid = (unsigned)pid;
	p->uid = getuid();
	p->start = start - 1;          /* the process asked about: not our child */
	struct tui_model m;
	struct tui_view v;
	struct tui_acts acts = {0};
	tui_model_init(&m, set, getuid());
	tui_model_update(&m, NULL, false, false, 0, 1);
	tui_view_init(&v);
	tui_model_order(&m, &v);
	p->cmdline = "python3 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/\xc3\xa9t\xc3\xa9.py";
	tui_model_update(&m, NULL, false, false, 0, 1);
	tui_kill_ask(&v, &m);
	CHECK(v.prompt == PR_KILL);
	/* The command cut between characters, and marked: no half of an "\xc3\xa9". */
	CHECK(strstr(v.question, "/\xc3\xa9\xe2\x80\xa6") != NULL);
	/* The answer before the command: [y/N] stays on an 80-column line. */
	CHECK(strstr(v.question, "[y/N]") != NULL && strstr(v.question, "[y/N]") - v.question < 80);
	p->start = start;              /* the refresh: the pid now names our child */
	tui_model_update(&m, NULL, false, false, 0, 2);
	tui_model_order(&m, &v);
	tui_kill(&acts, &v, &m);
	CHECK(acts.n == 0 && alive(pid));
	CHECK(strstr(v.msg, "left alone") != NULL);
	/* Asked about that very process: it is signalled. */
	tui_kill_ask(&v, &m);
	tui_kill(&acts, &v, &m);
	CHECK(acts.n == 1 && strstr(v.msg, "SIGTERM sent") != NULL);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	tui_acts_free(&acts);
	tui_view_free(&v);
	tui_model_free(&m);
	free_set(set);

	/* kill.c: the owner the listing saw is checked against the process the pidfd pinned. With
	 * the start time read only now (0), a pid reused since the listing names a successor,
	 * maybe another user's: root naming the listed owner must not reach it. */
	pid = child(&start);
	uid_t listed = getuid() + 1;
	struct kill_target t = {.pid = (unsigned)pid, .uid_valid = true, .uid = listed};
	kill_target_open(&t, 0, true, listed);
	CHECK(t.state == KS_GONE && t.pidfd < 0);
	kill_target_close(&t);
	t = (struct kill_target){.pid = (unsigned)pid, .uid_valid = true, .uid = getuid()};
	kill_target_open(&t, getuid(), false, 0);
	CHECK(t.state == KS_PENDING || t.state == KS_NO_PIDFD);
	kill_target_close(&t);
	CHECK(alive(pid));

	/* Releasing a lease whose holder's start time the daemon does not know: a process of
	 * another user under the holder's pid is not the holder. */
	struct lease_info l = {.id = "0123456789abcdef", .uid = getuid() + 1, .pid = pid};
	char why[512];
	CHECK(leaseview_end_holder(&l, why, sizeof why) < 0 && strstr(why, "left alone"));
	CHECK(alive(pid));
	/* Nor with its start time: the daemon recorded whichever process had the committing
	 * client's pid when it committed. */
	l.start = start;
	CHECK(leaseview_end_holder(&l, why, sizeof why) < 0 && strstr(why, "left alone"));
	CHECK(alive(pid));
	l.uid = getuid();
	int hfd = leaseview_end_holder(&l, why, sizeof why);
	CHECK(hfd >= 0 || errno == ENOSYS);
	if (hfd >= 0) {
		CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
		close(hfd);
		pid = fork();      /* reap() below: something to reap */
		if (pid == 0)
			_exit(0);
	}
	reap(pid);
}

void test_tui(void)
{
	char *old = setlocale(LC_CTYPE, NULL);
	char *saved = xstrdup(old ? old : "C");
	if (!setlocale(LC_CTYPE, "C.UTF-8"))
		printf("# no C.UTF-8 locale: wide-character checks may fail\n");
	test_text();
	test_layout();
	test_keys();
	test_kill_pinned();
	setlocale(LC_CTYPE, saved);
	free(saved);
}
