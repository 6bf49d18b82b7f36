/* curses.h: the part of ncurses' C ABI that `gpuctl top` uses, declared here (as machine/nvml/abi.h
 * declares NVML's) and loaded at run time from Debian's libncursesw.so.6 (which brings
 * libtinfo.so.6) through dl.c, by top alone.
 *
 * Why dlopen and not -lncursesw: linked, every gpuctl command would load and relocate ncurses and
 * libtinfo at each start (start-up is measured against an empty C program), for the one command
 * that draws a full screen; the exporter loads libmicrohttpd the same way. And the build needs
 * no ncurses headers. The price: only functions are used, never what curses.h's macros read from
 * the library's data (stdscr, LINES, COLS, getmaxyx, COLOR_PAIR as a macro): the window comes
 * from newwin, its size from getmaxy/getmaxx, and attributes are computed here from ncurses 6's
 * layout, which is its ABI (chtype is 32 bits, attributes start at bit 8: NCURSES_ATTR_SHIFT). */
#ifndef GPUCTL_TUI_CURSES_H
#define GPUCTL_TUI_CURSES_H

#include <stdbool.h>
#include <stdio.h>

/* Attributes (curses.h: NCURSES_BITS(mask, shift) = mask << (shift + 8)). */
enum {
	CURSES_A_NORMAL = 0,
	CURSES_A_UNDERLINE = 1 << 17,
	CURSES_A_REVERSE = 1 << 18,
	CURSES_A_DIM = 1 << 20,
	CURSES_A_BOLD = 1 << 21,
	CURSES_PAIR_SHIFT = 8,       /* COLOR_PAIR(n) = n << 8, n < 256 */
};
enum { CURSES_BLACK, CURSES_RED, CURSES_GREEN, CURSES_YELLOW, CURSES_BLUE, CURSES_MAGENTA,
       CURSES_CYAN, CURSES_WHITE };
enum { CURSES_ERR = -1, CURSES_OK = 0 };

/* Key codes wgetch returns with keypad on (curses.h's KEY_* values, octal there). */
enum {
	KEY_DOWN = 0402, KEY_UP = 0403, KEY_LEFT = 0404, KEY_RIGHT = 0405, KEY_HOME = 0406,
	KEY_BACKSPACE = 0407, KEY_F0 = 0410, KEY_DC = 0512, KEY_NPAGE = 0522, KEY_PPAGE = 0523,
	KEY_ENTER = 0527, KEY_BTAB = 0541, KEY_END = 0550, KEY_RESIZE = 0632,
	KEY_F1 = KEY_F0 + 1, KEY_F6 = KEY_F0 + 6, KEY_F9 = KEY_F0 + 9, KEY_F10 = KEY_F0 + 10,
};

/* The library, loaded once. SCREEN and WINDOW are opaque here. */
struct curses_lib {
	void *dl;
	void *(*newterm)(const char *type, FILE *out, FILE *in);
	int (*endwin)(void);
	void (*delscreen)(void *screen);
	int (*cbreak)(void);
	int (*noecho)(void);
	int (*nonl)(void);
	int (*curs_set)(int visibility);
	int (*set_escdelay)(int ms);
	int (*has_colors)(void);
	int (*start_color)(void);
	int (*use_default_colors)(void);
	int (*init_pair)(short pair, short fg, short bg);
	int (*resizeterm)(int rows, int cols);
	int (*doupdate)(void);
	void *(*newwin)(int rows, int cols, int y, int x);
	int (*delwin)(void *win);
	int (*wresize)(void *win, int rows, int cols);
	int (*keypad)(void *win, bool on);
	int (*nodelay)(void *win, bool on);
	int (*leaveok)(void *win, bool on);
	int (*clearok)(void *win, bool on);
	int (*getmaxy)(const void *win);
	int (*getmaxx)(const void *win);
	int (*wmove)(void *win, int y, int x);
	int (*waddnstr)(void *win, const char *s, int n);
	int (*wattrset)(void *win, int attrs);
	int (*wclrtoeol)(void *win);
	int (*wnoutrefresh)(void *win);
	int (*wgetch)(void *win);
};
extern struct curses_lib curses;

/* Loads the library (once): false with err saying what failed and what to install. */
bool curses_load(char *err, size_t errlen);

#endif
