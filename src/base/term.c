/* term.c: terminal facts: whether to colour (--color, NO_COLOR) and how wide to draw. */
#include "base/term.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

const char *const color_when_names[] = {"auto", "always", "never", NULL};

int use_color(enum color_when w, int fd)
{
	if (w != COLOR_AUTO)
		return w == COLOR_ALWAYS;
	const char *nc = getenv("NO_COLOR");
	if (nc && *nc)
		return 0;
	const char *t = getenv("TERM");
	return isatty(fd) && !(t && !strcmp(t, "dumb"));
}

int term_width(int fd)
{
	struct winsize ws;
	const char *c = getenv("COLUMNS");
	if (c && atoi(c) >= 40)
		return atoi(c);
	if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
		return ws.ws_col;
	return 80;
}

int term_columns(int fd)
{
	const char *c = getenv("COLUMNS");
	if ((c && atoi(c) >= 40) || isatty(fd))
		return term_width(fd);
	return 0;
}

int term_rows(int fd)
{
	struct winsize ws;
	if (!isatty(fd))
		return 0;
	const char *l = getenv("LINES");
	if (l && atoi(l) >= 5)
		return atoi(l);
	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row >= 5)
		return ws.ws_row;
	return 24;
}
