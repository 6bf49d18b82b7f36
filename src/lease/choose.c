/* choose.c: what a lease request starts from and what the job gets: the GPUs a request may
 * choose among (-g, the Slurm allocation we run in, and the caller's CUDA_VISIBLE_DEVICES: a
 * Slurm step, a container or an enclosing lease restricts us), why GPUs were not free (from the
 * daemon's answer), and the job's environment. */
#include "base/escape.h"
#include "lease/choose.h"
#include "machine/pid.h"
#include "machine/slurm.h"
#include "cuda/visenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *job_getenv(const struct grant_req *rq, const char *name);

/* The lease whose shell we are in, for messages: GPUCTL_LEASE_ID, when it looks like one. */
static const char *enclosing_lease(const struct grant_req *rq)
{
	const char *id = rq ? job_getenv(rq, "GPUCTL_LEASE_ID") : getenv("GPUCTL_LEASE_ID");
	return id && strlen(id) == 16 && strspn(id, "0123456789abcdef") == 16 ? id : NULL;
}

/* A variable of the job's environment: rq->env when given, else this process's. */
static const char *job_getenv(const struct grant_req *rq, const char *name)
{
	if (!rq->env)
		return getenv(name);
	size_t n = strlen(name);
	for (char *const *p = rq->env; *p; p++)
		if (!strncmp(*p, name, n) && (*p)[n] == '=')
			return *p + n + 1;
	return NULL;
}

/* The model's findings on the CUDA_VISIBLE_DEVICES a request starts from, as `gpuctl map` shows
 * them ("error [range]: ..."): the first error fails (false, err set); warnings go to stderr when
 * the environment is the caller's own. */
static bool vis_findings(const struct vis_result *r, const struct grant_req *rq, const char *cvd,
			 const char *from, struct gpu_error *err)
{
	for (size_t i = 0; i < r->nwarns; i++)
		if (r->warns[i].severity == SEV_ERROR) {
			err->code = EXIT_USAGE;
			snprintf(err->msg, sizeof err->msg, "your CUDA_VISIBLE_DEVICES='%s'%s: error [%s]: "
				 "%s (`gpuctl map` shows what CUDA sees; fix the value or unset it)",
				 esc_str(cvd, 0), from, r->warns[i].code, esc_str(r->warns[i].message, 1));
			return false;
		}
	for (size_t i = 0; !rq->env && i < r->nwarns; i++)
		if (r->warns[i].severity == SEV_WARNING)
			fprintf(stderr, "%s: your CUDA_VISIBLE_DEVICES='%s'%s: warning [%s]: %s\n",
				rq->who ? rq->who : "gpuctl", esc_str(cvd, 0), from, r->warns[i].code,
				esc_str(r->warns[i].message, 1));
	return true;
}

bool grant_unrestricted(const struct grant_req *rq)
{
	struct slurm_alloc sa;
	slurm_alloc_self(&sa);
	return !rq->gpus && !job_getenv(rq, "CUDA_VISIBLE_DEVICES") && !sa.in_job;
}

bool grant_candidates(struct gpu_set *set, const struct grant_req *rq, uint64_t *cand,
		      unsigned *count, struct gpu_error *err)
{
	uint64_t m = 0;
	for (size_t i = 0; i < set->ngpus && i < GPU_MAX; i++)
		if (!set->gpus[i].lost && !set->gpus[i].inaccessible && set->gpus[i].uuid[0])
			m |= 1ULL << i;
	unsigned listed = 0;
	if (rq->gpus) {
		if (!gpu_set_select(set, rq->gpus, err))
			return false;
		uint64_t g = 0;
		for (size_t i = 0; i < set->ngpus && i < GPU_MAX; i++)
			if (set->gpus[i].selected) {
				g |= 1ULL << i;
				listed++;
			}
		m &= g;
		for (size_t i = 0; i < set->ngpus; i++)
			set->gpus[i].selected = true;
	}
	/* Inside a Slurm allocation only its GPUs may be chosen: the ones Slurm gave the step, else
	 * the job (slurm.h says how its ids name GPUs). */
	struct slurm_alloc sa;
	slurm_alloc_self(&sa);
	char slurm_from[160] = "";
	if (sa.in_job && !sa.var) {
		err->code = EXIT_USAGE;
		snprintf(err->msg, sizeof err->msg, "you are in Slurm job %.20s, which was given no GPUs "
			 "(neither SLURM_STEP_GPUS nor SLURM_JOB_GPUS is set): ask Slurm for them "
			 "(--gres=gpu:N or --gpus=N); where Slurm does not manage this node's GPUs, run "
			 "gpuctl outside the job's environment (env -u SLURM_JOB_ID gpuctl ...)", sa.job_id);
		return false;
	}
	if (sa.var) {
		uint64_t sm;
		char why[256];
		if (!slurm_gpu_mask(set, sa.gpus, &sm, why, sizeof why)) {
			err->code = EXIT_USAGE;
			snprintf(err->msg, sizeof err->msg, "you are in Slurm job %.20s, but %s=%.64s does not "
				 "name GPUs of this machine (%s): is gpuctl running on the job's node?",
				 sa.job_id, sa.var, sa.gpus, why);
			return false;
		}
		m &= sm;
		snprintf(slurm_from, sizeof slurm_from, "%s=%.64s of Slurm job %.20s", sa.var, sa.gpus,
			 sa.job_id);
	}
	const char *cvd = job_getenv(rq, "CUDA_VISIBLE_DEVICES"), *lease = enclosing_lease(rq);
	/* The CUDA_VISIBLE_DEVICES Slurm set beside its list is that list, in nvidia-smi's
	 * numbering: read under CUDA's default order it could name other GPUs on a mixed machine.
	 * A value the user set in the job restricts the choice further. */
	if (cvd && sa.var && !strcmp(cvd, sa.gpus))
		cvd = NULL;
	char from[80] = "";
	if (cvd && lease)
		snprintf(from, sizeof from, " from your lease %s", lease);
	if (cvd) {
		struct vis_machine *vm = vis_machine_new(set);
		struct vis_result *r = vis_resolve(vm, cvd, job_getenv(rq, "CUDA_DEVICE_ORDER"));
		/* Read as CUDA reads it ("0-2" is 0), never silently: what `gpuctl map` calls an
		 * error refuses the request, a warning is said (the caller's own environment: a job's
		 * comes from a submit, whose error this is). */
		if (!vis_findings(r, rq, cvd, from, err)) {
			vis_result_free(r);
			vis_machine_free(vm);
			return false;
		}
		uint64_t vis = 0;
		for (size_t i = 0; i < r->ndevs; i++)
			if (r->devs[i].mig < 0 && r->devs[i].gpu < GPU_MAX)
				vis |= 1ULL << r->devs[i].gpu;
		vis_result_free(r);
		vis_machine_free(vm);
		if (!vis) {
			err->code = EXIT_USAGE;
			snprintf(err->msg, sizeof err->msg, "your CUDA_VISIBLE_DEVICES='%.64s'%s makes no "
				 "whole GPU visible, so there is nothing to choose from (see `gpuctl map`); "
				 "unset it to choose among all GPUs", cvd, from);
			return false;
		}
		m &= vis;
	}
	*count = rq->count ? rq->count : listed ? listed : 1;
	*cand = m;
	unsigned have = (unsigned)__builtin_popcountll(m);
	if (*count > have) {
		err->code = EXIT_USAGE;
		if (slurm_from[0] && !cvd)
			snprintf(err->msg, sizeof err->msg, "%u GPU%s wanted, but only %u can be chosen here: "
				 "%s restricts the choice to the GPUs Slurm allocated (ask Slurm for more, "
				 "e.g. --gres=gpu:%u)", *count, *count == 1 ? "" : "s", have, slurm_from, *count);
		else if (cvd)
			snprintf(err->msg, sizeof err->msg, "%u GPU%s wanted, but only %u can be chosen here: "
				 "CUDA_VISIBLE_DEVICES=%.64s%s restricts the choice (run outside that shell, or "
				 "`unset CUDA_VISIBLE_DEVICES` first)", *count, *count == 1 ? "" : "s", have,
				 cvd, from);
		else
			snprintf(err->msg, sizeof err->msg, "%u GPU%s wanted, but only %u can be chosen "
				 "here%s", *count, *count == 1 ? "" : "s", have,
				 rq->gpus ? " (-g restricts the choice)" : "");
		return false;
	}
	return true;
}

/* ---- the machine as the daemon describes it ---- */

/* The daemon's model is data, not a backend: nothing to load, refresh or close. */
static bool remote_open(struct gpu_set *set, struct gpu_error *err)
{
	(void)set;
	(void)err;
	return true;
}
static void remote_refresh(struct gpu_set *set, unsigned what)
{
	(void)set;
	(void)what;
}
static void remote_close(struct gpu_set *set)
{
	(void)set;
}
static const struct gpu_backend remote_backend = {
	.open = remote_open, .refresh = remote_refresh, .close = remote_close, .fills_procs = false};

/* A UUID (GPU's or MIG device's) as it may go into CUDA_VISIBLE_DEVICES and the job's other
 * variables: no separator, quote or control character ("-" is the daemon's "none"). */
static bool uuid_word(const char *w, char *out, size_t len)
{
	if (!strcmp(w, "-")) {
		out[0] = '\0';
		return true;
	}
	size_t n = strlen(w);
	if (n >= len || strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != n)
		return false;
	memcpy(out, w, n + 1);
	return true;
}

static bool dev_line(struct gpu *g, size_t pos, const struct msg_line *l)
{
	uint64_t v;
	if (l->nwords != 9 || !word_u64(l->w[1], GPU_MAX, &v) || v != pos)
		return false;
	g->index = (unsigned)v;
	g->selected = true;
	if (!uuid_word(l->w[2], g->uuid, sizeof g->uuid))
		return false;
	if (strcmp(l->w[3], "-")) {
		if (strlen(l->w[3]) >= sizeof g->pci_bus_id ||
		    !parse_pci_bus_id(l->w[3], &g->pci_domain, &g->pci_bus, &g->pci_dev, &g->pci_fn))
			return false;
		snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", l->w[3]);
	}
	g->lost = !strcmp(l->w[4], "lost");
	g->inaccessible = !strcmp(l->w[4], "inaccessible");
	if (!g->lost && !g->inaccessible && strcmp(l->w[4], "ok"))
		return false;
	int major, minor, end = 0;
	if (strcmp(l->w[5], "-")) {
		if (sscanf(l->w[5], "%2d.%2d%n", &major, &minor, &end) != 2 || l->w[5][end] ||
		    major < 0 || minor < 0)
			return false;
		g->cc_major = major, g->cc_minor = minor;
		g->valid |= 1ULL << GF_CC;
	}
	if (strcmp(l->w[6], "-")) {
		if (!word_u64(l->w[6], 1u << 24, &v))
			return false;
		g->cores = (unsigned)v;
		g->valid |= 1ULL << GF_CORES;
	}
	if (strcmp(l->w[7], "-")) {
		if (strcmp(l->w[7], "0") && strcmp(l->w[7], "1"))
			return false;
		g->mig_mode = l->w[7][0] == '1';
		g->valid |= 1ULL << GF_MIG_MODE;
	}
	if (strcmp(l->w[8], "-"))
		snprintf(g->name, sizeof g->name, "%s", l->w[8]); /* escaped wherever it is printed */
	return true;
}

static bool mig_line(struct gpu_set *set, const struct msg_line *l)
{
	uint64_t gpu, slot, gi, ci;
	if (l->nwords != 6 || !word_u64(l->w[1], GPU_MAX, &gpu) || gpu >= set->ngpus ||
	    !word_u64(l->w[2], UINT32_MAX, &slot) || !word_u64(l->w[3], UINT32_MAX, &gi) ||
	    !word_u64(l->w[4], UINT32_MAX, &ci))
		return false;
	struct gpu *g = &set->gpus[gpu];
	if (g->nmigs >= 64)
		return false;
	if (!g->migs)
		g->migs = xcalloc(64, sizeof *g->migs);
	struct mig_dev *d = &g->migs[g->nmigs];
	*d = (struct mig_dev){.slot = (unsigned)slot, .gi = (unsigned)gi, .ci = (unsigned)ci};
	if (!uuid_word(l->w[5], d->uuid, sizeof d->uuid))
		return false;
	g->nmigs++;
	return true;
}

/* Whether the GPU just read (gpus[ngpus]) repeats an earlier one's UUID: a grant names GPUs by
 * UUID, and one UUID for two GPUs would give a job both. (A GPU with none, lost, is not named.) */
static bool uuid_seen(const struct gpu_set *set)
{
	const char *u = set->gpus[set->ngpus].uuid;
	for (size_t k = 0; u[0] && k < set->ngpus; k++)
		if (!strcmp(set->gpus[k].uuid, u))
			return true;
	return false;
}

struct gpu_set *grant_machine_read(const struct msg *m, struct gpu_error *err)
{
	struct gpu_set *set = xcalloc(1, sizeof *set);
	set->backend = &remote_backend;
	size_t ndev = 0;
	for (size_t i = 1; i < m->nlines; i++)
		ndev += !strcmp(m->lines[i].w[0], "dev");
	bool ok = !strcmp(msg_verb(m), "gpus") && ndev <= GPU_MAX;
	set->gpus = xcalloc(ndev ? ndev : 1, sizeof *set->gpus);
	const char *driver = msg_get(m, "driver");
	if (ok && driver && strlen(driver) < sizeof set->driver_version) {
		snprintf(set->driver_version, sizeof set->driver_version, "%s", driver);
		set->has_driver_version = true;
	}
	/* Every dev line before the MIG lines that name it: the daemon sends them so. */
	for (size_t i = 1; ok && i < m->nlines; i++) {
		const struct msg_line *l = &m->lines[i];
		if (!strcmp(l->w[0], "dev"))
			ok = dev_line(&set->gpus[set->ngpus], set->ngpus, l) && !uuid_seen(set) &&
			     ++set->ngpus;
		else if (!strcmp(l->w[0], "mig"))
			ok = mig_line(set, l);
	}
	if (ok)
		return set;
	gpu_set_free(set);
	err->code = EXIT_DAEMON;
	snprintf(err->msg, sizeof err->msg, "the gpuctl daemon described this machine's GPUs in a "
		 "form this gpuctl does not read");
	return NULL;
}

static const struct gpu *by_uuid(const struct gpu_set *set, const char *uuid)
{
	for (size_t i = 0; i < set->ngpus; i++)
		if (!strcmp(set->gpus[i].uuid, uuid))
			return &set->gpus[i];
	return NULL;
}

/* The daemon's `busy` answer, told the way a person reads it. */
void grant_explain_busy(const struct gpu_set *set, bool ignore_usage, unsigned count,
			const struct msg *m, struct gpu_error *err)
{
	struct strbuf sb = {0};
	const char *mine = enclosing_lease(NULL);
	uint64_t v;
	size_t cands = 0, own = 0;
	bool usage = false;
	sb_addf(&sb, "%u GPU%s wanted, not enough free now%s:\n", count, count == 1 ? "" : "s",
		msg_line(m, "capped") ? " (you are at the per-user GPU cap)" : "");
	for (size_t i = 1; i < m->nlines; i++) {
		const struct msg_line *l = &m->lines[i];
		if (strcmp(l->w[0], "gpu") || l->nwords < 3)
			continue;
		const struct gpu *g = by_uuid(set, l->w[1]);
		const char *code = l->w[2];
		cands++;
		if (g)
			sb_addf(&sb, "  GPU %u (%.12s): ", g->index, l->w[1]);
		else
			sb_addf(&sb, "  GPU ? (%.12s): ", l->w[1]);
		if (!strcmp(code, "leased") && l->nwords >= 8) {
			time_t since = word_u64(l->w[5], INT64_MAX, &v) ? (time_t)v : 0;
			char when[32];
			struct tm tm;
			strftime(when, sizeof when, "%H:%M", localtime_r(&since, &tm));
			uid_t uid = word_u64(l->w[3], UINT32_MAX, &v) ? (uid_t)v : (uid_t)-1;
			sb_addf(&sb, "leased by ");
			char name[64];
			esc_printable(&sb, user_name(uid, name, sizeof name));
			sb_addf(&sb, ", pid %s", l->w[4]);
			if (*l->w[7]) {
				sb_adds(&sb, " '");
				esc_printable(&sb, l->w[7]);
				sb_addc(&sb, '\'');
			}
			sb_addf(&sb, ", since %s\n", when);
			own += mine && uid == getuid();
		} else if (!strcmp(code, "usage") && l->nwords >= 7) {
			usage = true;
			esc_printable(&sb, l->w[3]);
			if (strcmp(l->w[4], "-"))
				sb_addf(&sb, " (%s MiB used, ", l->w[4]);
			else
				sb_adds(&sb, " (memory use N/A, ");
			if (strcmp(l->w[5], "-"))
				sb_addf(&sb, "%s%% util, ", l->w[5]);
			else
				sb_adds(&sb, "util N/A, ");
			sb_addf(&sb, "%s process%s)\n", l->w[6], strcmp(l->w[6], "1") ? "es" : "");
		} else if (!strcmp(code, "part") && l->nwords >= 5) { /* shares, MIG (issue 23) */
			esc_printable(&sb, l->w[3]);
			if (strcmp(l->w[4], "-"))
				sb_addf(&sb, " (%s MiB left to claim)", l->w[4]);
			sb_addc(&sb, '\n');
		} else if (!strcmp(code, "queued")) {
			sb_adds(&sb, "kept for a request ahead in the queue\n");
		} else if (!strcmp(code, "held")) {
			sb_adds(&sb, "held by a process the daemon cannot name (a lease from before it "
				     "restarted)\n");
		} else if (!strcmp(code, "reserved")) {
			sb_adds(&sb, "reserved by the administrator\n");
		} else if (!strcmp(code, "lost")) {
			sb_adds(&sb, "lost (fell off the bus)\n");
		} else {
			sb_addf(&sb, "%s\n", code);
		}
	}
	if (msg_get_u64(m, "ahead", UINT32_MAX, &v) && v)
		sb_addf(&sb, "  %llu request%s already waiting (see `gpuctl leases`)\n", (unsigned long long)v,
			v == 1 ? "" : "s");
	if (mine && cands && own == cands && getenv("CUDA_VISIBLE_DEVICES"))
		sb_addf(&sb, "CUDA_VISIBLE_DEVICES=%.64s from your lease %s restricts the choice to GPUs "
			"that lease holds: use them directly, or run outside that shell.",
			getenv("CUDA_VISIBLE_DEVICES"), mine);
	else
		sb_addf(&sb, "Use --wait to queue%s.", ignore_usage || !usage
			? "" : ", or --ignore-usage to disregard observed use");
	err->code = EXIT_BUSY;
	snprintf(err->msg, sizeof err->msg, "%s", sb.buf);
	sb_free(&sb);
}

/* memory shares (issue 23): the claim, and the limits the frameworks document and honour:
 * JAX's memory fraction (both its names; without preallocation the job uses what it needs, up
 * to that fraction) and TensorFlow's memory growth (TensorFlow has no variable for a limit: it
 * stops it grabbing the whole GPU). PyTorch has none either: the Python module applies
 * torch.cuda.set_per_process_memory_fraction (gpuctl.limit_torch). Returns how many it set. */
static size_t share_env(const struct grant *g, char **env)
{
	size_t k = 0;
	env[k++] = xasprintf("GPUCTL_LEASE_MEM=%llu", (unsigned long long)g->mem_mib);
	if (g->mem_total_mib >= g->mem_mib && g->mem_total_mib) {
		/* rounded down to 1/1000: never more than the claim */
		unsigned long long f = g->mem_mib * 1000ULL / g->mem_total_mib;
		env[k++] = xasprintf("GPUCTL_LEASE_MEM_FRACTION=0.%03llu", f);
		env[k++] = xasprintf("XLA_PYTHON_CLIENT_MEM_FRACTION=0.%03llu", f);
		env[k++] = xasprintf("XLA_CLIENT_MEM_FRACTION=0.%03llu", f);
	}
	if (g->mps) { /* MPS's own limit, per device as the job numbers them (NVIDIA's MPS docs) */
		struct strbuf sb = {0};
		sb_adds(&sb, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=");
		for (size_t i = 0; i < g->n; i++)
			sb_addf(&sb, "%s%zu=%lluMB", i ? "," : "", i, (unsigned long long)g->mem_mib);
		env[k++] = xstrdup(sb.buf);
		sb_free(&sb);
	}
	env[k++] = xstrdup("XLA_PYTHON_CLIENT_PREALLOCATE=false");
	env[k++] = xstrdup("TF_FORCE_GPU_ALLOW_GROWTH=true");
	return k;
}

char **grant_env(const struct grant *g, bool uuid)
{
	/* With CUDA_DEVICE_ORDER=PCI_BUS_ID, CUDA's ordinal of a GPU is its rank in PCI order;
	 * usually nvidia-smi's index, computed rather than assumed. */
	struct vis_machine *vm = vis_machine_new(g->set);
	struct vis_result *vr = vis_resolve(vm, NULL, "PCI_BUS_ID");
	struct strbuf ids = {0}, smi = {0}, uuids = {0};
	for (size_t i = 0; i < g->n; i++) {
		const struct gpu *gp = &g->set->gpus[g->pos[i]];
		sb_addf(&ids, "%s%d", i ? "," : "", vis_rank(vm, vr->pci, g->pos[i]));
		sb_addf(&smi, "%s%u", i ? "," : "", gp->index);
		sb_addf(&uuids, "%s%s", i ? "," : "", gp->uuid);
	}
	size_t nextra = 0;
	while (g->profile_env && g->profile_env[nextra])
		nextra++;
	if (!g->n) { /* a CPU-only step (submit -n 0, issue 24): no GPU visible */
		sb_adds(&ids, "");
		sb_adds(&smi, "");
		sb_adds(&uuids, "");
	}
	char **env = xcalloc(25 + nextra, sizeof *env); /* (+1: GPUCTL_LEASE_UNTIL, issue 24) */
	size_t k = 0;
	/* A MIG instance is named by its UUID, the one way CUDA takes it (issue 23). */
	const char *mig = g->mig_uuid[0] ? g->mig_uuid : NULL;
	env[k++] = xasprintf("CUDA_VISIBLE_DEVICES=%s", mig ? mig : uuid ? uuids.buf : ids.buf);
	env[k++] = xstrdup("CUDA_DEVICE_ORDER=PCI_BUS_ID");
	env[k++] = xasprintf("NVIDIA_VISIBLE_DEVICES=%s", mig ? mig : uuid ? uuids.buf : smi.buf);
	if (mig)
		env[k++] = xasprintf("GPUCTL_LEASE_MIG=%s", mig);
	env[k++] = xasprintf("GPUCTL_LEASE_ID=%s", g->id[0] ? g->id : "dry-run");
	env[k++] = xasprintf("GPUCTL_LEASE_GPUS=%s", uuids.buf);
	if (g->name)
		env[k++] = xasprintf("GPUCTL_LEASE_NAME=%s", g->name);
	if (g->queued_at)
		env[k++] = xasprintf("GPUCTL_QUEUED_AT=%llu", g->queued_at);
	if (g->leased_at)
		env[k++] = xasprintf("GPUCTL_LEASED_AT=%llu", g->leased_at);
	if (g->until_ns) /* time limits (issue 24): when the lease ends, in seconds since 1970 */
		env[k++] = xasprintf("GPUCTL_LEASE_UNTIL=%llu", g->until_ns / 1000000000ULL);
	if (g->mem_mib) /* memory shares (issue 23) */
		k += share_env(g, env + k);
	if (g->numa[0])   /* issue 26: the NUMA node(s) of the GPUs' CPUs */
		env[k++] = xasprintf("GPUCTL_NUMA_NODE=%s", g->numa);
	for (size_t i = 0; i < nextra; i++)
		env[k++] = xstrdup(g->profile_env[i]); /* the profile's (config.c keeps the lease's names out) */
	sb_free(&ids);
	sb_free(&smi);
	sb_free(&uuids);
	vis_result_free(vr);
	vis_machine_free(vm);
	return env;
}

char **grant_env_profile(char *const *base, char *const *profile)
{
	size_t nb = 0, np = 0, k = 0;
	while (base && base[nb])
		nb++;
	while (profile && profile[np])
		np++;
	char **env = xcalloc(nb + np + 1, sizeof *env);
	for (size_t i = 0; i < nb; i++) {
		size_t n = strcspn(base[i], "=");
		bool replaced = false;
		for (size_t j = 0; j < np && !replaced; j++)
			replaced = !strncmp(profile[j], base[i], n) && profile[j][n] == '=';
		if (!replaced)
			env[k++] = base[i];
	}
	for (size_t j = 0; j < np; j++)
		env[k++] = profile[j];
	return env;
}

void grant_env_free(char **env)
{
	for (char **p = env; p && *p; p++)
		free(*p);
	free(env);
}
