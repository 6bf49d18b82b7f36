/* curses.c: loading ncurses for `gpuctl top` (see curses.h for why it is loaded at run
 * time, by top alone). */
#include "base/dl.h"
#include "tui/curses.h"
#include "base/util.h"

#include <stddef.h>
#include <stdio.h>

struct curses_lib curses;

static const struct dl_sym syms[] = {
	{&curses.newterm, {"newterm"}},
	{&curses.endwin, {"endwin"}},
	{&curses.delscreen, {"delscreen"}},
	{&curses.cbreak, {"cbreak"}},
	{&curses.noecho, {"noecho"}},
	{&curses.nonl, {"nonl"}},
	{&curses.curs_set, {"curs_set"}},
	{&curses.set_escdelay, {"set_escdelay"}},
	{&curses.has_colors, {"has_colors"}},
	{&curses.start_color, {"start_color"}},
	{&curses.use_default_colors, {"use_default_colors"}},
	{&curses.init_pair, {"init_pair"}},
	{&curses.resizeterm, {"resizeterm"}},
	{&curses.doupdate, {"doupdate"}},
	{&curses.newwin, {"newwin"}},
	{&curses.delwin, {"delwin"}},
	{&curses.wresize, {"wresize"}},
	{&curses.keypad, {"keypad"}},
	{&curses.nodelay, {"nodelay"}},
	{&curses.leaveok, {"leaveok"}},
	{&curses.clearok, {"clearok"}},
	{&curses.getmaxy, {"getmaxy"}},
	{&curses.getmaxx, {"getmaxx"}},
	{&curses.wmove, {"wmove"}},
	{&curses.waddnstr, {"waddnstr"}},
	{&curses.wattrset, {"wattrset"}},
	{&curses.wclrtoeol, {"wclrtoeol"}},
	{&curses.wnoutrefresh, {"wnoutrefresh"}},
	{&curses.wgetch, {"wgetch"}},
};

bool curses_load(char *err, size_t errlen)
{
	/* The wide-character build: UTF-8 text and block glyphs. Debian's package is libncursesw6. */
	static const char *const sonames[] = {"libncursesw.so.6", NULL};
	char why[512];
	if (curses.dl)
		return true;
	curses.dl = dl_load(sonames, syms, ARRAY_SIZE(syms), why, sizeof why);
	if (!curses.dl)
		snprintf(err, errlen, "%s; gpuctl top needs ncurses (Debian: apt-get install "
			 "libncursesw6), or use gpuctl status --loop", why);
	return curses.dl != NULL;
}
