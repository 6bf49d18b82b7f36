/* doctor-guard.c: the doctor's findings about the device guard (issue 25; the guard itself is
 * daemon/guard.c): whether leases on this machine bind or are advisory, from the daemon's word
 * on its guard and from the device nodes themselves (owner, group, mode, whether an ACL is set:
 * what anyone can check with `ls -l`), and, where the guard is on, the processes running on a
 * GPU that no lease of their user covers: they got past it (root, or a descriptor opened while a
 * lease of theirs lived and kept after it ended). */
#include "view/doctor.h"
#include "base/escape.h"
#include "machine/pid.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#define NODES_SHOWN 80            /* nvidia* entries of the directory looked at */
#define BYPASS_SHOWN 64           /* processes named at most */

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "nvidia0 (daemon:root 0660+acl), ...": the NVIDIA nodes of dir, by name; how many into *n, and
 * how many anyone may open (the mode's "other" bits) into *open. */
static void describe_nodes(struct strbuf *sb, const char *dir, size_t *n, size_t *open)
{
	char *names[NODES_SHOWN];
	*n = *open = 0;
	DIR *dp = opendir(dir);
	for (struct dirent *e; dp && (e = readdir(dp)) && *n < NODES_SHOWN;)
		if (!strncmp(e->d_name, "nvidia", 6) && strcmp(e->d_name, "nvidia-caps") &&
		    strcmp(e->d_name, "nvidia-modeset"))
			names[(*n)++] = xstrdup(e->d_name);
	if (dp)
		closedir(dp);
	qsort(names, *n, sizeof *names, by_name);
	for (size_t i = 0; i < *n; i++) {
		char path[4096], user[64], group[64];
		struct stat st;
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if (lstat(path, &st) == 0) {
			bool acl = getxattr(path, "system.posix_acl_access", NULL, 0) >= 0;
			user_name(st.st_uid, user, sizeof user);
			snprintf(group, sizeof group, "%u", (unsigned)st.st_gid);
			*open += (st.st_mode & 006) != 0;
			sb_addf(sb, "%s%s (%s, gid %s, %04o%s)", i ? ", " : "", names[i], user, group,
				(unsigned)(st.st_mode & 07777), acl ? " +acl" : "");
		}
		free(names[i]);
	}
	if (!*n)
		sb_addf(sb, "no NVIDIA device nodes under %s", dir);
}

static bool covered(const struct leaseview *lv, uid_t uid, const char *uuid)
{
	for (size_t i = 0; i < lv->nleases; i++) {
		if (lv->leases[i].uid != uid)
			continue;
		for (size_t k = 0; k < lv->leases[i].ngpus; k++)
			if (!strcmp(lv->leases[i].uuids[k], uuid))
				return true;
	}
	return false;
}

static void bypasses(struct doctor_report *r, const struct gpu_set *set, const struct leaseview *lv)
{
	size_t shown = 0;
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		for (size_t j = 0; j < g->nprocs && shown < BYPASS_SHOWN; j++) {
			const struct gpu_proc *p = &g->procs[j];
			if (!(p->type & PROC_COMPUTE) || !p->uid_valid || covered(lv, p->uid, g->uuid))
				continue;
			char who[64];
			struct strbuf cmd = {0};
			esc_printable_n(&cmd, p->cmdline ? p->cmdline : p->name ? p->name : "?", 80);
			struct doctor_finding *f = doctor_report_add(r, SEV_WARNING, "guard_bypass",
				"if it is not root's, end it (gpuctl kill --pid PID) and lease the GPU; a job "
				"that kept a GPU open after its lease ended was told by the lease's end",
				"process %u (%s) of %s runs on GPU %u, which no lease of %s's covers: it got "
				"past the device guard (root, or a descriptor opened while a lease lived)",
				p->pid, cmd.buf ? cmd.buf : "", user_name(p->uid, who, sizeof who), g->index, who);
			sb_free(&cmd);
			doctor_finding_add_id(&f->pids, p->pid);
			doctor_finding_add_id(&f->gpus, g->index);
			shown++;
		}
	}
}

void doctor_guard(struct doctor_report *r, const struct gpu_set *set, const struct leaseview *lv)
{
	char text[512];
	struct strbuf nodes = {0};
	size_t n, open;
	leaseview_guard_text(lv, text, sizeof text);
	bool on = lv->present && !strcmp(lv->guard, "acl");
	describe_nodes(&nodes, on && lv->guard_dir[0] ? lv->guard_dir : "/dev", &n, &open);
	if (on && leaseview_binding(lv)) {
		doctor_report_add(r, SEV_INFO, "leases_bind", "nothing to do",
				  "%s; the nodes: %s", text, nodes.buf);
		bypasses(r, set, lv);
	} else if (on) {
		struct doctor_finding *f = doctor_report_add(r, SEV_ERROR, "guard_not_binding",
			"give the nodes to the daemon's user (gpuctl-daemon(8): THE DEVICE GUARD) "
			"and see the daemon's log", "%s; the nodes: %s", text, nodes.buf);
		(void)f;
		for (size_t i = 1; i < lv->nguard_errors; i++)
			doctor_report_add(r, SEV_ERROR, "guard_not_binding", "see above", "%s",
					  lv->guard_errors[i]);
		bypasses(r, set, lv);
	} else if (lv->present && !lv->private_mode) { /* none, or a user's own: nothing binds */
		doctor_report_add(r, SEV_INFO, "leases_advisory",
			"to make leases bind, set [daemon] guard = acl (gpuctl-daemon(8): THE "
			"DEVICE GUARD)", "%s; the nodes (%zu of them open to anyone): %s", text, open,
			nodes.buf);
	}
	sb_free(&nodes);
}
