/* visibility.c: CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER as the driver reads them.
 *
 * The rules, in the order the driver applies them (shared/reference/cuda-visibility.md; PyTorch's
 * emulation, whose vectors were checked against driver 525):
 *  - unset: everything; set but empty: nothing.
 *  - the first entry decides the kind: "GPU-" (UUIDs), "MIG-" (MIG devices) or ordinals.
 *  - ordinals are read like strtoul after trimming white space: one sign, digits, the rest of the
 *    entry ignored ("1gpu2" is 1, "0-3" is 0); an entry without digits or a negative number ends
 *    the list; a repeated ordinal empties the set; then the list is cut at the first ordinal that
 *    does not exist. Ordinals count in CUDA's enumeration order, not nvidia-smi's.
 *  - UUID entries are unique prefixes of a UUID (keeping "GPU-"); an entry of the other kind, an
 *    unknown or an ambiguous one ends the list; two entries naming one device empty the set.
 *  - FASTEST_FIRST (the default) puts the most capable GPU first, ties in PCI order; on a machine
 *    of identical GPUs that is PCI order. On a mixed machine gpuctl estimates it (compute
 *    capability, then core count) and says so. */
#include "cuda/visibility.h"
#include "base/util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

PRINTF(4, 5)
static void warn_(struct vis_result *r, const char *code, enum vis_severity sev, const char *fmt, ...)
{
	va_list ap;
	struct strbuf sb = {0};
	char buf[512];
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	sb_adds(&sb, buf);
	r->warns = grow_array(r->warns, &r->warns_cap, r->nwarns + 1, sizeof *r->warns);
	r->warns[r->nwarns++] = (struct vis_warning){code, sev, sb.buf};
}

static bool has_warning(const struct vis_result *r, const char *code)
{
	for (size_t i = 0; i < r->nwarns; i++)
		if (!strcmp(r->warns[i].code, code))
			return true;
	return false;
}

/* ---- enumeration order ---- */

static const struct vis_machine *sort_m;

static int pci_cmp(const void *a, const void *b)
{
	const struct vis_gpu *x = &sort_m->gpus[*(const size_t *)a], *y = &sort_m->gpus[*(const size_t *)b];
	if (x->dom != y->dom)
		return x->dom < y->dom ? -1 : 1;
	if (x->bus != y->bus)
		return x->bus < y->bus ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->fn != y->fn)
		return x->fn < y->fn ? -1 : 1;
	return 0;
}

static int fastest_cmp(const void *a, const void *b)
{
	const struct vis_gpu *x = &sort_m->gpus[*(const size_t *)a], *y = &sort_m->gpus[*(const size_t *)b];
	if (x->cc != y->cc)
		return x->cc > y->cc ? -1 : 1;
	if (x->cores != y->cores)
		return x->cores > y->cores ? -1 : 1;
	return pci_cmp(a, b);
}

/* Sorting with a file-level pointer keeps qsort; the module is single-threaded by design. */
static void enumerate(const struct vis_machine *m, struct vis_result *r)
{
	r->pci = xcalloc(m->ngpus, sizeof *r->pci);
	r->fastest = xcalloc(m->ngpus, sizeof *r->fastest);
	for (size_t i = 0; i < m->ngpus; i++)
		r->pci[i] = r->fastest[i] = i;
	sort_m = m;
	qsort(r->pci, m->ngpus, sizeof *r->pci, pci_cmp);
	bool alike = true, known = true;
	for (size_t i = 0; i < m->ngpus; i++) {
		const struct vis_gpu *g = &m->gpus[i], *g0 = &m->gpus[0];
		if (g->cc < 0 || g->cores < 0)
			known = false;
		if (g->cc != g0->cc || g->cores != g0->cores || strcmp(g->name ? g->name : "", g0->name ? g0->name : ""))
			alike = false;
	}
	if (alike || !known)
		memcpy(r->fastest, r->pci, m->ngpus * sizeof *r->fastest);
	else
		qsort(r->fastest, m->ngpus, sizeof *r->fastest, fastest_cmp);
	r->fastest_exact = alike;
	r->order_exact = alike || r->order == ORDER_PCI_BUS_ID;
	sort_m = NULL;
}

const size_t *vis_enum_order(const struct vis_result *r)
{
	return r->order == ORDER_PCI_BUS_ID ? r->pci : r->fastest;
}

int vis_rank(const struct vis_machine *m, const size_t *order, size_t gpu)
{
	for (size_t i = 0; i < m->ngpus; i++)
		if (order[i] == gpu)
			return (int)i;
	return -1;
}

int vis_logical(const struct vis_result *r, size_t gpu, int mig)
{
	for (size_t i = 0; i < r->ndevs; i++)
		if (r->devs[i].gpu == gpu && r->devs[i].mig == mig)
			return (int)i;
	return -1;
}

/* ---- entries ---- */

struct entry {
	const char *s;               /* raw, not NUL-terminated */
	size_t len;
	size_t pos;                  /* 1-based, for messages */
};

static bool is_space(char c)
{
	return isspace((unsigned char)c) != 0;
}

/* strtoul as the driver uses it, after trimming: optional sign, digits; the rest is junk.
 * Returns false when there is no number or it is negative. */
static bool ordinal(const struct entry *e, unsigned long *out, bool *junk, bool *space)
{
	const char *s = e->s, *end = e->s + e->len;
	*space = false;
	while (s < end && is_space(*s))
		s++, *space = true;
	while (end > s && is_space(end[-1]))
		end--, *space = true;
	bool neg = false;
	const char *p = s;
	if (p < end && (*p == '+' || *p == '-'))
		neg = *p++ == '-';
	const char *digits = p;
	unsigned long v = 0;
	bool overflow = false;
	for (; p < end && isdigit((unsigned char)*p); p++) {
		if (v > (~0UL - 9) / 10)
			overflow = true;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	*junk = p < end || digits != s;
	if (p == digits || (neg && v != 0))
		return false;
	*out = overflow ? ~0UL : v;
	return true;
}

static void show(char *buf, size_t n, const struct entry *e)
{
	snprintf(buf, n, "%.*s", (int)(e->len > 60 ? 60 : e->len), e->s);
}

/* ---- resolving UUID entries ---- */

enum { R_OK, R_UNKNOWN, R_AMBIGUOUS };

static int match_gpu(const struct vis_machine *m, const struct entry *e, struct vis_dev *out)
{
	int hits = 0;
	for (size_t i = 0; i < m->ngpus; i++)
		if (m->gpus[i].uuid && strlen(m->gpus[i].uuid) >= e->len &&
		    !strncmp(m->gpus[i].uuid, e->s, e->len)) {
			*out = (struct vis_dev){i, -1};
			hits++;
		}
	return hits == 1 ? R_OK : hits ? R_AMBIGUOUS : R_UNKNOWN;
}

/* MIG-<uuid> (R470 on, unique prefixes too) or MIG-GPU-<gpu uuid>/<gi>/<ci> (R450/R460). */
static int match_mig(const struct vis_machine *m, const struct entry *e, struct vis_dev *out)
{
	int hits = 0;
	if (e->len > 8 && !strncmp(e->s, "MIG-GPU-", 8)) {
		char buf[160];
		unsigned gi, ci;
		char tail;
		snprintf(buf, sizeof buf, "%.*s", (int)e->len, e->s + 4);
		char *slash = strchr(buf, '/');
		if (!slash || sscanf(slash, "/%u/%u%c", &gi, &ci, &tail) != 2)
			return R_UNKNOWN;
		*slash = '\0';
		for (size_t i = 0; i < m->nmigs; i++) {
			const struct vis_mig *g = &m->migs[i];
			if (g->gi == gi && g->ci == ci && m->gpus[g->gpu].uuid &&
			    !strcmp(m->gpus[g->gpu].uuid, buf)) {
				*out = (struct vis_dev){g->gpu, (int)i};
				hits++;
			}
		}
		return hits == 1 ? R_OK : hits ? R_AMBIGUOUS : R_UNKNOWN;
	}
	for (size_t i = 0; i < m->nmigs; i++)
		if (m->migs[i].uuid && strlen(m->migs[i].uuid) >= e->len &&
		    !strncmp(m->migs[i].uuid, e->s, e->len)) {
			*out = (struct vis_dev){m->migs[i].gpu, (int)i};
			hits++;
		}
	return hits == 1 ? R_OK : hits ? R_AMBIGUOUS : R_UNKNOWN;
}

static bool same_dev(struct vis_dev a, struct vis_dev b)
{
	return a.gpu == b.gpu && a.mig == b.mig;
}

static void add_dev(struct vis_result *r, size_t *cap, struct vis_dev d)
{
	r->devs = grow_array(r->devs, cap, r->ndevs + 1, sizeof *r->devs);
	r->devs[r->ndevs++] = d;
}

static void truncated(struct vis_result *r, const struct entry *e, size_t nentries, const char *why)
{
	char s[64];
	show(s, sizeof s, e);
	bool last = e->pos == nentries;
	if (last && e->len == 0) {
		warn_(r, "junk", SEV_INFO, "CUDA_VISIBLE_DEVICES ends with an empty entry (a trailing "
					   "comma); it is ignored");
		return;
	}
	warn_(r, "truncated", SEV_WARNING,
	      "CUDA_VISIBLE_DEVICES entry %zu ('%s') %s: the list ends there, so %zu device%s %s "
	      "visible%s",
	      e->pos, s, why, r->ndevs, r->ndevs == 1 ? "" : "s", r->ndevs == 1 ? "is" : "are",
	      last ? "" : " and the entries after it are ignored");
}

static void parse_uuids(const struct vis_machine *m, struct vis_result *r, const struct entry *es,
			size_t n)
{
	size_t cap = 0;
	const char *kind = !strncmp(es[0].s, "MIG-", 4) ? "MIG-" : "GPU-";
	bool mix_ok = m->driver_major == 0 || m->driver_major >= 570;
	for (size_t i = 0; i < n; i++) {
		const struct entry *e = &es[i];
		bool is_gpu = e->len >= 4 && !strncmp(e->s, "GPU-", 4);
		bool is_mig = e->len >= 4 && !strncmp(e->s, "MIG-", 4);
		if (!is_gpu && !is_mig) {
			char s[64];
			show(s, sizeof s, e);
			unsigned long v;
			bool junk, space;
			if (e->len && is_space(e->s[0]) && e->len > 1) {
				warn_(r, "whitespace", SEV_WARNING, "entry %zu ('%s') starts with white space, "
						"which UUID entries do not allow", e->pos, s);
				truncated(r, e, n, "is not a UUID");
			} else if (ordinal(e, &v, &junk, &space)) {
				warn_(r, "mixed_kinds", SEV_WARNING, "CUDA_VISIBLE_DEVICES mixes UUIDs and "
						"ordinals; the first entry makes it a UUID list, so '%s' ends it", s);
				truncated(r, e, n, "is an ordinal in a UUID list");
			} else {
				truncated(r, e, n, "is not a UUID");
			}
			break;
		}
		if (strncmp(e->s, kind, 4) && !mix_ok) {
			warn_(r, "mixed_kinds", SEV_WARNING, "drivers before R570 do not mix whole GPUs and "
					"MIG devices; the first entry decides, so entry %zu ends the list", e->pos);
			truncated(r, e, n, "is of the other kind");
			break;
		}
		struct vis_dev d;
		int res = is_gpu ? match_gpu(m, e, &d) : match_mig(m, e, &d);
		if (res != R_OK) {
			char s[64];
			show(s, sizeof s, e);
			if (res == R_AMBIGUOUS)
				warn_(r, "ambiguous_uuid", SEV_ERROR, "'%s' is the start of more than one "
						"UUID on this machine; give more of it", s);
			else
				warn_(r, "unknown_uuid", SEV_ERROR, "no %s on this machine has a UUID "
						"starting with '%s'", is_gpu ? "GPU" : "MIG device", s);
			truncated(r, e, n, res == R_AMBIGUOUS ? "is ambiguous" : "matches no device");
			break;
		}
		for (size_t j = 0; j < r->ndevs; j++)
			if (same_dev(r->devs[j], d)) {
				warn_(r, "duplicate", SEV_ERROR, "entries %zu and %zu name the same device, "
						"and a repeated device makes CUDA see no GPU at all",
				      j + 1, e->pos);
				r->ndevs = 0;
				return;
			}
		add_dev(r, &cap, d);
	}
}

static void parse_ordinals(const struct vis_machine *m, struct vis_result *r, const struct entry *es,
			   size_t n)
{
	size_t cap = 0;
	const size_t *order = vis_enum_order(r);
	unsigned long *vals = xcalloc(n, sizeof *vals);
	size_t nv = 0;
	const struct entry *cut = NULL;
	const char *why = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct entry *e = &es[i];
		unsigned long v;
		bool junk, space;
		char s[64];
		show(s, sizeof s, e);
		if (!ordinal(e, &v, &junk, &space)) {
			cut = e;
			const char *t = e->s;
			while (t < e->s + e->len && is_space(*t))
				t++;
			size_t tl = e->len - (size_t)(t - e->s);
			bool uuid = tl >= 4 && (!strncmp(t, "GPU-", 4) || !strncmp(t, "MIG-", 4));
			if (uuid && i == 0)
				warn_(r, "whitespace", SEV_ERROR, "CUDA_VISIBLE_DEVICES starts with white space, "
						"so CUDA reads it as a list of ordinals and '%s' as none", s);
			else if (uuid)
				warn_(r, "mixed_kinds", SEV_WARNING, "CUDA_VISIBLE_DEVICES mixes ordinals "
						"and UUIDs; the first entry makes it an ordinal list, so '%s' "
						"ends it", s);
			why = uuid ? "is a UUID in an ordinal list"
			    : memchr(e->s, '-', e->len) && e->len > 1 ? "is negative or not a number"
								      : "is not a number";
			break;
		}
		for (size_t j = 0; j < nv; j++)
			if (vals[j] == v) {
				warn_(r, "duplicate", SEV_ERROR, "ordinal %lu appears twice (entries %zu and "
						"%zu), and a repeated device makes CUDA see no GPU at all",
				      v, j + 1, e->pos);
				free(vals);
				r->ndevs = 0;
				return;
			}
		vals[nv++] = v;
		const char *t = e->s;
		size_t tl = e->len;
		while (tl && is_space(*t))
			t++, tl--;
		bool range = false;
		if (junk) {
			/* "0-3" reads as 0 followed by junk: the driver has no ranges. */
			const char *p = t + (*t == '+' || *t == '-');
			while (p < t + tl && isdigit((unsigned char)*p))
				p++;
			range = p + 1 < t + tl && *p == '-' && isdigit((unsigned char)p[1]);
			if (range)
				warn_(r, "range", SEV_ERROR, "'%s' is not a range: CUDA reads it as %lu and "
						"ignores the rest; list every device (e.g. 0,1,2,3)", s, v);
			else if (p == t + tl)
				warn_(r, "junk", SEV_INFO, "entry %zu ('%s') has a sign; CUDA reads it as %lu",
				      e->pos, s, v);
			else
				warn_(r, "junk", SEV_WARNING, "entry %zu ('%s') is read as %lu; the rest of "
						"it is ignored", e->pos, s, v);
		}
		if (space && !junk && !has_warning(r, "whitespace"))
			warn_(r, "whitespace", SEV_INFO, "CUDA_VISIBLE_DEVICES has white space around "
					"entries; ordinals allow it, UUIDs do not");
	}
	/* Then the list is cut at the first ordinal that names no device. */
	for (size_t i = 0; i < nv; i++) {
		if (vals[i] >= m->ngpus) {
			char w[96];
			snprintf(w, sizeof w, "names device %lu, but CUDA enumerates %zu GPU%s (0-%zu)",
				 vals[i], m->ngpus, m->ngpus == 1 ? "" : "s", m->ngpus ? m->ngpus - 1 : 0);
			warn_(r, "out_of_range", SEV_ERROR, "ordinal %lu does not exist on this machine "
					"(%zu GPU%s)", vals[i], m->ngpus, m->ngpus == 1 ? "" : "s");
			truncated(r, &es[i], n, w);
			cut = NULL;
			break;
		}
		add_dev(r, &cap, (struct vis_dev){order[vals[i]], -1});
	}
	if (cut)
		truncated(r, cut, n, why);
	free(vals);
}

/* ---- the whole resolution ---- */

static void explain_order(const struct vis_machine *m, struct vis_result *r, bool ordinals)
{
	const size_t *o = vis_enum_order(r);
	bool differs = false;
	for (size_t i = 0; i < m->ngpus; i++)
		if (m->gpus[o[i]].nvml_index != i)
			differs = true;
	if (!differs)
		return;
	struct strbuf sb = {0};
	for (size_t i = 0; i < m->ngpus; i++)
		sb_addf(&sb, "%s%u", i ? "," : "", m->gpus[o[i]].nvml_index);
	warn_(r, "order_differs", ordinals ? SEV_ERROR : SEV_WARNING,
	      "CUDA numbers this machine's GPUs differently from nvidia-smi: CUDA device 0,1,... is "
	      "nvidia-smi GPU %s%s under CUDA_DEVICE_ORDER=%s.%s Set CUDA_DEVICE_ORDER=PCI_BUS_ID, or "
	      "use UUIDs",
	      sb.buf, r->order_exact ? "" : " (estimated)", vis_order_name(r->order),
	      ordinals ? " CUDA_VISIBLE_DEVICES uses ordinals, so they do not mean nvidia-smi's "
			 "numbers." : "");
	sb_free(&sb);
}

/* What every resolution ends with: MIG caveats, and the order warning where ordinals (or no
 * variable at all) make the numbering depend on CUDA_DEVICE_ORDER. */
static void finish(const struct vis_machine *m, struct vis_result *r, bool uses_order)
{
	size_t nmig = 0;
	for (size_t i = 0; i < r->ndevs; i++) {
		const struct vis_dev *d = &r->devs[i];
		if (d->mig >= 0)
			nmig++;
		else if (m->gpus[d->gpu].mig_enabled)
			warn_(r, "mig_gpu", SEV_WARNING, "GPU %u has MIG enabled: CUDA work runs on one "
					"of its MIG instances, not the whole GPU; name an instance by its "
					"MIG UUID", m->gpus[d->gpu].nvml_index);
	}
	if (nmig && r->ndevs > 1 && m->driver_major && m->driver_major < 570) {
		warn_(r, "mig_single", SEV_WARNING, "drivers before R570 let a process use one MIG "
				"device and nothing beside it: only the first is used");
		for (size_t i = 0; i < r->ndevs; i++)
			if (r->devs[i].mig >= 0) {
				r->devs[0] = r->devs[i];
				break;
			}
		r->ndevs = 1;
	}
	if (uses_order)
		explain_order(m, r, !r->unset);
}

struct vis_result *vis_resolve(const struct vis_machine *m, const char *cvd, const char *order)
{
	struct vis_result *r = xcalloc(1, sizeof *r);
	r->order = ORDER_FASTEST_FIRST;
	if (order && *order) {
		if (!strcmp(order, "PCI_BUS_ID"))
			r->order = ORDER_PCI_BUS_ID;
		else if (strcmp(order, "FASTEST_FIRST"))
			warn_(r, "bad_order", SEV_WARNING, "CUDA_DEVICE_ORDER='%.40s' is neither "
					"FASTEST_FIRST nor PCI_BUS_ID; CUDA uses FASTEST_FIRST", order);
	}
	enumerate(m, r);
	if (!cvd) {
		size_t cap = 0;
		const size_t *o = vis_enum_order(r);
		r->unset = true;
		for (size_t i = 0; i < m->ngpus; i++)
			add_dev(r, &cap, (struct vis_dev){o[i], -1});
		finish(m, r, true);
		return r;
	}
	if (!*cvd) {
		warn_(r, "empty", SEV_WARNING, "CUDA_VISIBLE_DEVICES is set but empty: CUDA sees no "
				"GPU (unset it to see all)");
		return r;
	}
	size_t n = 1;
	for (const char *p = cvd; *p; p++)
		n += *p == ',';
	struct entry *es = xcalloc(n, sizeof *es);
	const char *p = cvd;
	for (size_t i = 0; i < n; i++) {
		size_t len = strcspn(p, ",");
		es[i] = (struct entry){p, len, i + 1};
		p += len + 1;
	}
	/* A UUID list is enumerated in the order written: CUDA_DEVICE_ORDER does not matter then. */
	bool uuids = !strncmp(cvd, "GPU-", 4) || !strncmp(cvd, "MIG-", 4);
	if (uuids)
		parse_uuids(m, r, es, n);
	else
		parse_ordinals(m, r, es, n);
	free(es);
	if (r->ndevs == 0 && !has_warning(r, "duplicate"))
		warn_(r, "none_visible", SEV_ERROR, "with CUDA_VISIBLE_DEVICES='%.60s' CUDA sees no GPU", cvd);
	finish(m, r, !uuids);
	return r;
}

void vis_result_free(struct vis_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nwarns; i++)
		free(r->warns[i].message);
	free(r->warns);
	free(r->devs);
	free(r->fastest);
	free(r->pci);
	free(r);
}

const char *vis_order_name(enum vis_order o)
{
	return o == ORDER_PCI_BUS_ID ? "PCI_BUS_ID" : "FASTEST_FIRST";
}

const char *vis_severity_name(enum vis_severity s)
{
	return s == SEV_ERROR ? "error" : s == SEV_WARNING ? "warning" : "info";
}
