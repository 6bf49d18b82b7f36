/* term.h: terminal facts: whether to colour (--color, NO_COLOR) and how wide to draw. */
#ifndef GPUCTL_TERM_H
#define GPUCTL_TERM_H

enum color_when { COLOR_AUTO, COLOR_ALWAYS, COLOR_NEVER };
/* The --color values, in enum color_when order, for args_choice. */
extern const char *const color_when_names[];
int use_color(enum color_when w, int fd);
/* Columns to draw in: COLUMNS when set (40 or more), else the terminal's width, else 80. */
int term_width(int fd);
/* The same, but 0 (no limit) when fd is not a terminal and COLUMNS is not set: piped output
 * keeps whole command lines, as ps does. */
int term_columns(int fd);
/* Lines of the terminal on fd (LINES when set), or 0 when it is not a terminal. */
int term_rows(int fd);

#endif
