/* draw.h: top's screen (see draw.c): the one part that talks to curses. */
#ifndef GPUCTL_TUI_DRAW_H
#define GPUCTL_TUI_DRAW_H

#include "tui/tui.h"

struct tui_screen {
	void *scr, *win;             /* curses' SCREEN and our full-screen WINDOW */
	int rows, cols;
	bool color;
	struct strbuf *shown;        /* what each row shows now */
	int nshown;
};

/* Loads curses and takes the terminal; false with err set (the terminal untouched). */
bool tui_screen_open(struct tui_screen *s, bool color, char *err, size_t errlen);
/* Gives the terminal back as it was. */
void tui_screen_close(struct tui_screen *s);
/* After SIGWINCH: the new size, and everything drawn again. */
void tui_screen_resize(struct tui_screen *s);
/* Ctrl-L: everything drawn again. */
void tui_screen_repaint(struct tui_screen *s);
/* The rows of f that differ from what the terminal shows. */
void tui_screen_draw(struct tui_screen *s, const struct tui_frame *f);
/* A key, or -1 when none is waiting. */
int tui_screen_key(struct tui_screen *s);

#endif
