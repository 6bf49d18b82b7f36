/* visopts.h: the options `map` and `which` share for choosing the environment to explain
 * (--visible, --unset, --order, --pid), and the session both start from. The model itself is
 * cuda/visenv.h; here it meets the command line and the command's GPUs (cmd_open). */
#ifndef GPUCTL_VISOPTS_H
#define GPUCTL_VISOPTS_H

#include "cmd/cmd.h"
#include "cuda/visenv.h"

enum { VIS_OPT_VISIBLE = 400, VIS_OPT_UNSET, VIS_OPT_ORDER, VIS_OPT_PID };
#define VIS_LONGOPTS                                                     \
	{"visible", required_argument, NULL, VIS_OPT_VISIBLE},            \
	{"unset", no_argument, NULL, VIS_OPT_UNSET},                      \
	{"order", required_argument, NULL, VIS_OPT_ORDER},                \
	{"pid", required_argument, NULL, VIS_OPT_PID}

/* From the options; false with a->err set on a bad value. */
bool visopts_read(struct args *a, struct vis_request *rq);
/* The variables in effect (a --pid read first), the machine (cmd_open) as the model sees it,
 * and the model's answer. Returns EXIT_OK, or an exit code after printing why. Close it with
 * vis_session_close. */
int visopts_session_open(struct vis_session *s, const struct vis_request *rq, struct cmd *c);

#endif
