/* draw.c: top's frame on the terminal, the one file that calls curses. A row is sent to
 * curses only when its text or styles differ from what the terminal shows, and curses in turn
 * sends only the cells that changed (wnoutrefresh + doupdate), so a steady screen costs
 * nothing but its clock. Styles become colour pairs, or without colour (NO_COLOR,
 * --color=never, a terminal without colours) plain attributes: bold, reverse, dim. */
#include "tui/curses.h"
#include "tui/draw.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Colour pairs: 1 green, 2 yellow, 3 red, 4 cyan. */
enum { PAIR_GREEN = 1, PAIR_YELLOW, PAIR_RED, PAIR_CYAN };

static int pair(int n)
{
	return n << CURSES_PAIR_SHIFT;
}

static int attr_of(const struct tui_screen *s, enum tui_style st)
{
	bool c = s->color;
	switch (st) {
	case ST_HEAD: return CURSES_A_REVERSE;
	case ST_TITLE: return CURSES_A_BOLD;
	case ST_DIM: return CURSES_A_DIM;
	case ST_SEL: return CURSES_A_REVERSE;
	case ST_MINE: return CURSES_A_BOLD | (c ? pair(PAIR_CYAN) : 0);
	case ST_SEL_MINE: return CURSES_A_REVERSE | CURSES_A_BOLD;
	case ST_LOW: return c ? pair(PAIR_GREEN) : 0;
	case ST_MID: return c ? pair(PAIR_YELLOW) : 0;
	case ST_HIGH: return CURSES_A_BOLD | (c ? pair(PAIR_RED) : 0);
	case ST_WARN: return CURSES_A_BOLD | (c ? pair(PAIR_RED) : 0);
	case ST_KEY: return CURSES_A_BOLD | (c ? pair(PAIR_CYAN) : 0);
	default: return 0;
	}
}

static void forget(struct tui_screen *s)
{
	for (int i = 0; i < s->nshown; i++)
		sb_free(&s->shown[i]);
	free(s->shown);
	s->shown = NULL;
	s->nshown = 0;
}

static void size_up(struct tui_screen *s)
{
	s->rows = curses.getmaxy(s->win);
	s->cols = curses.getmaxx(s->win);
	forget(s);
	s->nshown = s->rows > 0 ? s->rows : 0;
	s->shown = xcalloc((size_t)(s->nshown ? s->nshown : 1), sizeof *s->shown);
}

bool tui_screen_open(struct tui_screen *s, bool color, char *err, size_t errlen)
{
	*s = (struct tui_screen){0};
	if (!curses_load(err, errlen))
		return false;
	s->scr = curses.newterm(NULL, stdout, stdin);
	if (!s->scr) {
		const char *t = getenv("TERM");
		snprintf(err, errlen, "cannot use the terminal type '%s' (no terminfo entry?); set TERM to "
			 "your terminal's type (xterm-256color, screen, ...)", t ? t : "");
		return false;
	}
	s->win = curses.newwin(0, 0, 0, 0);
	if (!s->win) {
		snprintf(err, errlen, "curses could not make a window");
		curses.endwin();
		curses.delscreen(s->scr);
		return false;
	}
	curses.cbreak();     /* keys at once; Ctrl-C still a signal */
	curses.noecho();
	curses.nonl();
	curses.keypad(s->win, true);
	curses.nodelay(s->win, true);
	curses.leaveok(s->win, true);
	curses.set_escdelay(25);
	curses.curs_set(0);
	s->color = color && curses.has_colors();
	if (s->color) {
		curses.start_color();
		/* The terminal's own background: -1 with use_default_colors. */
		short bg = curses.use_default_colors() == CURSES_OK ? -1 : CURSES_BLACK;
		curses.init_pair(PAIR_GREEN, CURSES_GREEN, bg);
		curses.init_pair(PAIR_YELLOW, CURSES_YELLOW, bg);
		curses.init_pair(PAIR_RED, CURSES_RED, bg);
		curses.init_pair(PAIR_CYAN, CURSES_CYAN, bg);
	}
	size_up(s);
	return true;
}

void tui_screen_close(struct tui_screen *s)
{
	if (!s->scr)
		return;
	curses.curs_set(1);
	curses.delwin(s->win);
	curses.endwin();
	curses.delscreen(s->scr);
	forget(s);
	*s = (struct tui_screen){0};
}

void tui_screen_resize(struct tui_screen *s)
{
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
		curses.resizeterm(ws.ws_row, ws.ws_col);
		curses.wresize(s->win, ws.ws_row, ws.ws_col);
	}
	size_up(s);
	curses.clearok(s->win, true);
}

void tui_screen_repaint(struct tui_screen *s)
{
	size_up(s);
	curses.clearok(s->win, true);
}

/* Row y of the frame (w columns of text) to the window: runs of text between style marks. */
static void draw_row(struct tui_screen *s, const char *row, int y, int w)
{
	curses.wmove(s->win, y, 0);
	const char *p = row;
	while (*p) {
		if (*p == TUI_MARK && p[1]) {
			curses.wattrset(s->win, attr_of(s, (enum tui_style)(p[1] - 'A')));
			p += 2;
			continue;
		}
		size_t n = strcspn(p, "\001");
		curses.waddnstr(s->win, p, (int)n);
		p += n;
	}
	curses.wattrset(s->win, 0);
	/* A full row has moved the cursor to the next one: clearing would erase that. */
	if (w < s->cols)
		curses.wclrtoeol(s->win);
}

void tui_screen_draw(struct tui_screen *s, const struct tui_frame *f)
{
	int rows = f->rows < s->nshown ? f->rows : s->nshown;
	bool any = false;
	for (int y = 0; y < rows; y++) {
		const char *row = f->row[y].buf ? f->row[y].buf : "";
		const char *was = s->shown[y].buf;
		if (was && !strcmp(was, row))
			continue;
		draw_row(s, row, y, f->x[y]);
		sb_reset(&s->shown[y]);
		sb_adds(&s->shown[y], row);
		any = true;
	}
	if (any) {
		curses.wnoutrefresh(s->win);
		curses.doupdate();
	}
}

int tui_screen_key(struct tui_screen *s)
{
	return curses.wgetch(s->win);
}
