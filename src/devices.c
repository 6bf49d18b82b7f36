/* devices.c: the machine as the visibility model sees it, and a process's CUDA variables. */
#include "devices.h"
#include "util.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct vis_machine *vis_machine_new(const struct gpu_set *set)
{
	struct vis_machine *m = xcalloc(1, sizeof *m);
	struct vis_gpu *gpus = xcalloc(set->ngpus, sizeof *gpus);
	size_t nmigs = 0;
	for (size_t i = 0; i < set->ngpus; i++)
		nmigs += set->gpus[i].nmigs;
	struct vis_mig *migs = xcalloc(nmigs, sizeof *migs);
	nmigs = 0;
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu *g = &set->gpus[i];
		gpus[i] = (struct vis_gpu){
			.nvml_index = g->index,
			.uuid = g->uuid[0] ? g->uuid : NULL,
			.name = g->name,
			.pci_bus_id = g->pci_bus_id,
			.dom = g->pci_domain, .bus = g->pci_bus, .dev = g->pci_dev, .fn = g->pci_fn,
			.cc = GPU_HAS(g, GF_CC) ? g->cc_major * 10 + g->cc_minor : -1,
			.cores = GPU_HAS(g, GF_CORES) ? (int)g->cores : -1,
			.mig_enabled = GPU_HAS(g, GF_MIG_MODE) && g->mig_mode,
		};
		for (size_t j = 0; j < g->nmigs; j++)
			migs[nmigs++] = (struct vis_mig){i, g->migs[j].slot, g->migs[j].gi, g->migs[j].ci,
							 g->migs[j].uuid};
	}
	m->gpus = gpus;
	m->ngpus = set->ngpus;
	m->migs = migs;
	m->nmigs = nmigs;
	m->driver_major = set->has_driver_version ? atoi(set->driver_version) : 0;
	return m;
}

void vis_machine_free(struct vis_machine *m)
{
	if (!m)
		return;
	free((void *)m->gpus);
	free((void *)m->migs);
	free(m);
}

bool read_proc_env(unsigned pid, struct proc_env *env, char *msg, size_t msglen)
{
	char path[64];
	size_t len;
	*env = (struct proc_env){0};
	snprintf(path, sizeof path, "/proc/%u/environ", pid);
	char *buf = read_file(path, &len);
	if (!buf) {
		int e = errno;
		struct stat st;
		snprintf(path, sizeof path, "/proc/%u", pid);
		if (e == ENOENT || stat(path, &st) != 0) {
			snprintf(msg, msglen, "no process %u (it has exited, or lives in another PID "
					      "namespace)", pid);
		} else {
			struct passwd *pw = getpwuid(st.st_uid);
			snprintf(msg, msglen, "cannot read the environment of process %u (owned by %s): "
					      "%s; run as that user or as root", pid,
				 pw ? pw->pw_name : "another user", strerror(e));
		}
		return false;
	}
	for (size_t off = 0; off < len; off += strlen(buf + off) + 1) {
		const char *kv = buf + off;
		if (kv[0] != 'C' && kv[0] != 'G') /* most of an environment: one test each */
			continue;
		if (!strncmp(kv, "CUDA_VISIBLE_DEVICES=", 21))
			env->cvd = xstrdup(kv + 21);
		else if (!strncmp(kv, "CUDA_DEVICE_ORDER=", 18))
			env->order = xstrdup(kv + 18);
		else if (!strncmp(kv, "GPUCTL_LEASE_ID=", 16))
			env->lease_id = xstrdup(kv + 16);
	}
	free(buf);
	return true;
}

int proc_ppid(unsigned pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%u/stat", pid);
	char *text = read_file(path, NULL);
	const char *paren = text ? strrchr(text, ')') : NULL;
	int ppid = -1;
	if (!paren || sscanf(paren + 2, "%*c %d", &ppid) != 1)
		ppid = -1;
	free(text);
	return ppid;
}

void proc_env_free(struct proc_env *env)
{
	free(env->cvd);
	free(env->order);
	free(env->lease_id);
	*env = (struct proc_env){0};
}

bool vis_request_values(const struct vis_request *rq, struct proc_env *out, char *msg, size_t msglen)
{
	*out = (struct proc_env){0};
	if (rq->pid && !read_proc_env((unsigned)rq->pid, out, msg, msglen))
		return false;
	if (!rq->pid) {
		const char *v = getenv("CUDA_VISIBLE_DEVICES"), *o = getenv("CUDA_DEVICE_ORDER");
		out->cvd = v ? xstrdup(v) : NULL;
		out->order = o ? xstrdup(o) : NULL;
	}
	if (rq->visible_given) {
		free(out->cvd);
		out->cvd = rq->visible ? xstrdup(rq->visible) : NULL;
	}
	if (rq->order_given) {
		free(out->order);
		out->order = xstrdup(rq->order);
	}
	return true;
}

int vis_session_open(struct vis_session *s, const struct vis_request *rq, const char *who)
{
	struct gpu_error err = {0};
	memset(s, 0, sizeof *s);
	if (!vis_request_values(rq, &s->env, err.msg, sizeof err.msg)) {
		fprintf(stderr, "%s: %s\n", who, err.msg);
		return EXIT_FAIL;
	}
	s->set = gpu_set_open(&err);
	if (!s->set) {
		proc_env_free(&s->env);
		fprintf(stderr, "gpuctl: %s\n", err.msg);
		return err.code;
	}
	s->m = vis_machine_new(s->set);
	s->r = vis_resolve(s->m, s->env.cvd, s->env.order);
	return EXIT_OK;
}

void vis_session_close(struct vis_session *s)
{
	vis_result_free(s->r);
	vis_machine_free(s->m);
	gpu_set_free(s->set);
	proc_env_free(&s->env);
}
