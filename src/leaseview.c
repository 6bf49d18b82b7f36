/* leaseview.c: loading the lease snapshot (see leaseview.h). */
#include "leaseview.h"
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

char *leaseview_state_dir(void)
{
	struct config cfg;
	if (!config_load(&cfg))
		return NULL;
	char *dir = cfg.state_dir;
	cfg.state_dir = NULL;
	config_free(&cfg);
	return dir;
}

bool leaseview_load(struct leaseview *v, const char *state_dir, struct gpu_error *err)
{
	memset(v, 0, sizeof *v);
	v->st.global_fd = -1;
	v->st.dir = state_dir ? xstrdup(state_dir) : leaseview_state_dir();
	if (!v->st.dir) {
		err->code = EXIT_USAGE;
		snprintf(err->msg, sizeof err->msg, "the configuration has errors (see above)");
		return false;
	}
	struct stat sb;
	v->present = stat(v->st.dir, &sb) == 0;
	if (!v->present)
		return true;
	if (!state_lock(&v->st, false, err))
		return false;
	lockset_load(&v->ls, &v->st);
	lease_list_load(&v->leases, &v->st, &v->ls);
	queue_load(&v->st, &v->queue);
	state_unlock(&v->st);
	return true;
}

void leaseview_free(struct leaseview *v)
{
	if (!v->st.dir && !v->present)
		return;
	lockset_free(&v->ls);
	lease_list_free(&v->leases);
	queue_free(&v->queue);
	state_close(&v->st);
}
