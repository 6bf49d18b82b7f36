/* visopts.c: reading the options `map` and `which` share, and opening their session (see
 * visopts.h). */
#include "cmd/visopts.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

bool visopts_read(struct args *a, struct vis_request *rq)
{
	static const char *const orders[] = {"PCI_BUS_ID", "FASTEST_FIRST", NULL};
	*rq = (struct vis_request){0};
	for (size_t i = 0; i < a->n; i++) /* --visible and --unset: the last one given wins */
		if (a->v[i].opt == VIS_OPT_VISIBLE || a->v[i].opt == VIS_OPT_UNSET) {
			rq->visible_given = true;
			rq->visible = a->v[i].opt == VIS_OPT_VISIBLE ? a->v[i].value : NULL;
		}
	int order = args_choice(a, VIS_OPT_ORDER, orders, -2);
	if (order == -1)
		return false;
	rq->order = order >= 0 ? orders[order] : NULL;
	return args_uint(a, VIS_OPT_PID, 1, UINT_MAX, &rq->pid);
}

int visopts_session_open(struct vis_session *s, const struct vis_request *rq, struct cmd *c)
{
	char msg[512];
	struct proc_env env;
	memset(s, 0, sizeof *s);
	if (!vis_request_env(rq, &env, msg, sizeof msg)) {
		fprintf(stderr, "gpuctl %s: %s\n", c->entry->name, msg);
		return EXIT_FAIL;
	}
	int rc = cmd_open(c);
	if (rc != EXIT_OK) {
		vis_proc_env_free(&env);
		return rc;
	}
	vis_session_init(s, &env, c->set);
	return EXIT_OK;
}
