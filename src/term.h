/* term.h: terminal facts: whether to colour (--color, NO_COLOR) and how wide to draw. */
#ifndef GPUCTL_TERM_H
#define GPUCTL_TERM_H

enum color_when { COLOR_AUTO, COLOR_ALWAYS, COLOR_NEVER };
/* The --color values, in enum color_when order, for args_choice. */
extern const char *const color_when_names[];
int use_color(enum color_when w, int fd);
int term_width(int fd);

#endif
