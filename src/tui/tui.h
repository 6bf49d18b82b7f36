/* tui/: rank 5, the parts of `gpuctl top` (the full-screen view), nvtop's split kept: everything
 * that decides what goes where is pure and unit-tested (tests/unit/test_tui.c); only draw.c talks
 * to curses, and only act.c and cmd/top.c do I/O.
 *   text.c     frames (rows of styled text), display widths, bars, graphs, number formats
 *   model.c    what a refresh gave: GPU history, process rows, filter/sort/tree order
 *   layout.c   where things go at a given size, which columns fit, what to read from NVML, the
 *              overlays' lines wrapped to the width
 *   gpus.c     the GPU cards and the header; procs.c the process table, queue, footer, help and
 *              details overlays
 *   keys.c     what a key does to the view, and the help that lists every key
 *   act.c      the actions: signal a process (machine/kill.c's safe path), release a lease,
 *              details
 *   draw.c     the frame on the terminal through curses (curses.c loads ncurses)
 * A frame is drawn from the model and the view alone, so a key that changes the view redraws
 * without touching NVML, and /proc only for the stat files of rows it newly shows (a refresh
 * reads those of the rows on screen only, unless the order needs them all: tui_model_stats);
 * a frame that did not change sends nothing. Where top's CPU goes is the refresh's reads of
 * /proc and NVML, not the drawing (bench/top.sh). */
#ifndef GPUCTL_TUI_H
#define GPUCTL_TUI_H

#include "machine/gpu.h"
#include "lease/view.h"
#include "base/util.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* ---- text.c: frames and text ---- */

/* What a piece of text means; draw.c maps it to colours, or to attributes without colour. */
enum tui_style {
	ST_NORMAL, ST_HEAD, ST_TITLE, ST_DIM, ST_SEL, ST_MINE, ST_SEL_MINE, ST_LOW, ST_MID, ST_HIGH,
	ST_WARN, ST_KEY, ST_N
};
/* In a frame row, TUI_MARK and then 'A' + style switch the style. Text reaching a frame has no
 * control bytes (hostile text is escaped first), so a mark cannot be faked. */
enum { TUI_MARK = 1 };

struct tui_frame {
	int rows, cols;
	bool utf8;                   /* the terminal takes UTF-8: block glyphs, and text as is */
	struct strbuf *row;
	int *x;                      /* columns filled in each row */
};

void tui_frame_init(struct tui_frame *f, int rows, int cols, bool utf8);
void tui_frame_free(struct tui_frame *f);
/* Writes s (text of ours, or already escaped) at column x of row y in style st, cut or padded to
 * exactly w columns (w < 0: its own width), right-aligned when right; nothing past the row's
 * end. A row is written left to right: the columns between its end and x are filled with
 * spaces. Returns the column after what was written. */
int tui_put(struct tui_frame *f, int y, int x, int w, enum tui_style st, bool right, const char *s);
/* The same for text another user controls (process names, lease names): escaped first. */
int tui_put_hostile(struct tui_frame *f, int y, int x, int w, enum tui_style st, const char *s);
/* Fills row y from its end to column x (exclusive) in style st: a selected row's bar. */
void tui_fill(struct tui_frame *f, int y, int x, enum tui_style st);
/* The frame as plain text, rows ended by '\n' (for tests and snapshots); the caller frees it. */
char *tui_frame_text(const struct tui_frame *f);

/* Display columns of s (UTF-8 when utf8; else every character is one column, shown as '?' when
 * it is not ASCII). */
int tui_width(const char *s, bool utf8);
/* Bytes of s that fit in w columns (at least one character, so that wrapping always advances). */
size_t tui_cut(const char *s, int w, bool utf8);
/* One line of s wrapped to w columns, at a word boundary (a word longer than the line is broken
 * where the line ends): returns the bytes to show (spaces at the break left out), *next where the
 * next line starts (past the spaces). Always advances while s is not empty. */
size_t tui_wrap(const char *s, int w, bool utf8, size_t *next);
/* "[|||||||    98%]" in w columns: frac of the bar filled (< 0: unknown, no bar), label inside
 * at the right. */
void tui_bar(struct tui_frame *f, int y, int x, int w, double frac, const char *label,
	     enum tui_style fill);
/* A history graph of h rows and w columns: the newest w of n samples (percent, or TUI_NA),
 * oldest first, right-aligned; eighth blocks in UTF-8, ASCII levels otherwise. */
void tui_graph(struct tui_frame *f, int y, int x, int w, int h, const unsigned char *samples,
	       size_t n, enum tui_style st);
/* Formats: "512K", "3.5M", "70000M", "139.6G" (bytes, 1024 based, at most 6 columns);
 * "59:59", "23:59:59", "3d 04:05", "412d" (seconds); "1.2G/s" (KB/s). */
void tui_bytes(char *buf, size_t n, uint64_t bytes);
void tui_duration(char *buf, size_t n, double secs);
void tui_rate(char *buf, size_t n, unsigned kbs);
enum tui_style tui_level(double pct);   /* LOW, MID (from 50%), HIGH (from 90%) */

/* ---- model.c: what the refreshes gave ---- */

enum { TUI_NA = 255 };               /* a history sample the driver did not give */
enum { TUI_HISTORY = 1024 };         /* samples kept per GPU: 17 minutes at 1 s */

struct tui_history {
	unsigned char util[TUI_HISTORY], mem[TUI_HISTORY];   /* percent, or TUI_NA */
	size_t n;                    /* samples so far (at most TUI_HISTORY) */
	size_t head;                 /* where the next goes */
};

struct tui_pcie {                    /* the last throughput reading: it is read sparingly */
	bool valid;
	unsigned rx_kbs, tx_kbs;
	double at;                   /* monotonic seconds; 0: never read */
};

/* One process on one GPU, or (tree view) a parent that uses no GPU: a context row. */
struct tui_row {
	const struct gpu *g;         /* NULL for a context row */
	const struct gpu_proc *p;    /* NULL for a context row */
	unsigned pid;
	const char *user, *cmd;      /* NULL: not in /proc */
	uid_t uid;
	bool uid_valid, mine;
	bool stat_valid, cpu_valid;
	int ppid;
	unsigned long long start;    /* /proc start time: kill checks it */
	double cpu_pct, elapsed;
	uint64_t rss;
	int depth;                   /* tree view: 0 for a root */
	bool last;                   /* tree view: the last of its siblings */
	uint64_t open;               /* tree view: bit d set when depth d still has siblings below */
};

enum tui_col {
	COL_USER, COL_PID, COL_GPU, COL_GMEM, COL_SM, COL_MEM, COL_ENC, COL_DEC, COL_CPU, COL_RSS,
	COL_TIME, COL_CMD, COL_N
};
extern const char *const tui_col_names[];      /* "user", "pid", ...: --sort and the title */

struct tui_model {
	struct gpu_set *set;
	const struct leaseview *lv;
	struct tui_history *hist;    /* one per GPU of set */
	struct tui_pcie *pcie;       /* one per GPU of set */
	struct tui_row *rows;
	size_t nrows, rows_cap;
	size_t *shown;               /* rows in the order shown (filter, sort, tree) */
	size_t nshown, shown_cap;
	size_t nprocs;               /* distinct processes on the GPUs */
	uid_t me;
	time_t now;                  /* wall clock of the last refresh */
	double mono;                 /* monotonic clock of the last refresh */
	unsigned refreshes;
	char host[64];
};

struct tui_view;
void tui_model_init(struct tui_model *m, struct gpu_set *set, uid_t me);
void tui_model_free(struct tui_model *m);
/* After gpu_set_refresh: the history, the PCIe readings (when pcie_read), the process rows and,
 * in tree view, the parents of jobs (looked up through the refresh's process cache). */
void tui_model_update(struct tui_model *m, const struct leaseview *lv, bool pcie_read, bool tree,
		      time_t now, double mono);
/* m->shown from m->rows as v asks: filters, sort, tree; the selection follows its process. */
void tui_model_order(struct tui_model *m, struct tui_view *v);
/* The /proc stats (host CPU, RSS, run time, start) of the n rows shown from the from'th, and of
 * pid's rows (a process a confirmation is about), where the refresh did not read them: a refresh
 * reads every process's stat file only when the view sorts or builds its tree by them (the
 * layout's all_stats), since with a thousand processes those reads were most of top's CPU. */
void tui_model_stats(struct tui_model *m, size_t from, size_t n, unsigned pid);
/* Whether the PCIe throughput is due: NVML measures it for 20 ms per direction and GPU, so it
 * is read at most every 0.4 s per GPU shown (so at most a tenth of the time is spent on it). */
bool tui_pcie_due(const struct tui_model *m, double delay, double mono);
/* The lease holding g, or NULL. */
const struct lease_info *tui_lease(const struct tui_model *m, const struct gpu *g);

/* ---- the view: what the person chose ---- */

enum tui_focus { FOCUS_PROCS, FOCUS_GPUS };
enum tui_overlay { OV_NONE, OV_HELP, OV_INFO };
enum tui_prompt { PR_NONE, PR_FILTER, PR_USER, PR_GPU, PR_KILL, PR_KILL_NAME, PR_RELEASE };

struct tui_view {
	bool utf8, color;
	double delay;                /* seconds between refreshes */
	double grace;                /* seconds from TERM to KILL */
	enum tui_col sort;
	bool reverse;                /* against the column's natural order */
	bool tree, mine_only;
	char filter[128];            /* text: in the command, user or pid */
	char user[64];               /* only this user's processes */
	uint64_t gpu_mask;           /* only processes on these GPU indices; 0: all */
	enum tui_focus focus;
	size_t gpu_sel;              /* the selected GPU (index into set->gpus) */
	int gpu_top;                 /* first card row shown in the GPU pane */
	size_t sel;                  /* the selected process row (position in shown) */
	unsigned sel_pid;            /* ... and which process that is, to follow it */
	int sel_gpu;                 /* its GPU index; -1 for a context row */
	size_t proc_top;             /* first process row shown */
	uint64_t graphs;             /* bit i: the history graph of GPU i is shown */
	enum tui_overlay overlay;
	int ov_scroll;
	struct strbuf info;          /* the details overlay: escaped lines */
	enum tui_prompt prompt;
	char input[128];             /* what is typed at a prompt */
	char question[256];          /* a confirmation's question */
	char act_lease[24];          /* the lease a release is about */
	unsigned act_pid;            /* the process or lease a confirmation is about */
	int act_gpu;
	unsigned long long act_start; /* that process's start time: a pid reused meanwhile is not it */
	char msg[256];               /* the footer's message, until msg_until */
	enum tui_style msg_style;
	double msg_until;
	double now;                  /* monotonic: for messages */
};

void tui_view_init(struct tui_view *v);
void tui_view_free(struct tui_view *v);
void tui_message(struct tui_view *v, enum tui_style st, const char *fmt, ...) PRINTF(3, 4);
/* The selected row, or NULL. */
const struct tui_row *tui_selected(const struct tui_model *m, const struct tui_view *v);
/* The GPU the person means: the selected one in the GPU pane, else the selected process's. */
const struct gpu *tui_focus_gpu(const struct tui_model *m, const struct tui_view *v);

/* ---- layout.c: where things go ---- */

struct tui_card {
	int gpu;                     /* index into set->gpus */
	int y, x, w, h;              /* h: its lines (0: scrolled out of the pane) */
	int level;                   /* 1: one line, 2: + clocks, fan, codecs, PCIe, 3: + lease */
	int graph_h;                 /* history graph lines (0: none) */
};

struct tui_colspec {
	enum tui_col col;
	int x, w;
};

struct tui_layout {
	int rows, cols;
	bool too_small;
	int gpu_y, gpu_h;            /* the GPU pane */
	int ncards;
	struct tui_card *cards;      /* one per selected GPU, in order */
	int card_cols;               /* cards side by side */
	int card_rows, card_rows_shown;
	int proc_y, proc_h;          /* the process pane: title, column heads, then rows */
	int queue_y, queue_h;        /* the queue pane (0: none) */
	int footer_y;
	int ncols;
	struct tui_colspec colspec[COL_N];
	bool all_stats;              /* the order needs every process's /proc stats (sort, tree) */
};

enum { TUI_MIN_ROWS = 10, TUI_MIN_COLS = 40 };
void tui_layout(struct tui_layout *L, int rows, int cols, const struct tui_model *m,
		struct tui_view *v);
void tui_layout_free(struct tui_layout *L);
/* The REFRESH_* groups the layout shows (besides the base every refresh reads); the /proc stats
 * only when all_stats (else tui_model_stats reads those of the rows shown). */
unsigned tui_refresh_needs(const struct tui_layout *L);
/* Process rows that fit the pane. */
int tui_proc_rows(const struct tui_layout *L);

/* The open overlay (the help, or the details) laid out: its lines wrapped to cols at word
 * boundaries, a piece per screen line, continuations indented. tui_layout keeps v->ov_scroll
 * within them (Up acts at once after Down went past the end). */
struct tui_overlay_line {
	const char *s;               /* into the help, or into copy */
	size_t len;
	int indent;
};
struct tui_overlay_text {
	const char *title;
	char *copy;                  /* the details, split in place */
	const char *lines[512];
	size_t n;
	struct tui_overlay_line *p;
	size_t np;
};
void tui_overlay_open(struct tui_overlay_text *o, const struct tui_view *v, int cols, bool utf8);
void tui_overlay_close(struct tui_overlay_text *o);

/* ---- gpus.c, procs.c: the frame ---- */

void tui_render(struct tui_frame *f, const struct tui_layout *L, const struct tui_model *m,
		const struct tui_view *v);
void tui_render_gpus(struct tui_frame *f, const struct tui_layout *L, const struct tui_model *m,
		     const struct tui_view *v);
void tui_render_header(struct tui_frame *f, const struct tui_model *m, const struct tui_view *v,
		       const struct tui_layout *L);
/* The short names of clock event (throttle) reasons, with the active ones of mask (idle left
 * out: an idle GPU is not throttled) written to buf; false when none. */
bool tui_throttle_text(uint64_t mask, char *buf, size_t n, bool brief);

/* ---- keys.c: what a key does ---- */

/* The help overlay's lines: every key (tests check that each key handled is listed). */
extern const char *const tui_help[];

enum tui_action {
	ACT_NONE,        /* nothing changed */
	ACT_REDRAW,      /* the view changed: draw again (and read what it newly shows) */
	ACT_REFRESH,     /* read the machine again now (tree view: the parents of jobs) */
	ACT_REPAINT,     /* draw the whole screen again (Ctrl-L) */
	ACT_QUIT,
	ACT_KILL_ASK,    /* k on a process: ask (act.c decides how) */
	ACT_KILL,        /* confirmed */
	ACT_RELEASE_ASK,
	ACT_RELEASE,     /* confirmed */
	ACT_INFO,        /* open the details of the selected process */
};
/* Keys: ncurses' codes (KEY_* values of curses.h), or a byte. */
enum tui_action tui_key(struct tui_view *v, const struct tui_model *m, int key);

#endif
