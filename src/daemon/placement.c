/* placement.c: the daemon's side of placement (issue 26; the choice itself is place.c's, pure):
 * the topology, read once from the daemon's own NVML view when it opens the machine (it does not
 * change while the driver is loaded); [daemon] preferred_gpus.* resolved against the machine at
 * start (a list naming no GPU of this machine stops the daemon, as reserved_gpus does); each
 * user's struct place, found once per uid (the kernel's uid: its name and groups from NSS, the
 * first preferred_gpus key in file order that names the user or one of its groups) and kept,
 * at most PLACE_USERS of them; and the offer's words: why that set, and its GPUs' CPUs and NUMA
 * nodes for --bind-cpus and GPUCTL_NUMA_NODE. A user's groups are read once: a change of
 * membership counts from the daemon's next start. */
#include "daemon/daemon.h"
#include "daemon/place.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLACE_USERS 4096

struct place_user {
	uid_t uid;
	struct place pl;
};

struct place_state {
	unsigned char (*ranks)[GPU_MAX];   /* per preferred_gpus key, resolved at start */
	struct place_user **users;         /* separately allocated: a pass keeps pointers to them */
	size_t nusers;
	struct place none;                 /* topology alone (a user past the bound, or no list) */
};

bool placement_open(struct daemon *d, struct gpu_error *err)
{
	struct place_state *ps = xcalloc(1, sizeof *ps);
	d->place = ps;
	d->topo = gpu_set_topo(d->set);
	if (!topo_known(d->topo)) {   /* a driver that says nothing: placed by the order alone */
		topo_free(d->topo);
		d->topo = NULL;
	}
	ps->none.topo = d->topo;
	ps->ranks = xcalloc(d->conf.nprefs + 1, sizeof *ps->ranks);
	for (size_t k = 0; k < d->conf.nprefs; k++) {
		const struct dconf_pref *p = &d->conf.prefs[k];
		char *copy = xstrdup(p->gpus), *save = NULL;
		unsigned rank = 0;
		for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			while (*tok == ' ')
				tok++;
			struct gpu *g = gpu_find(d->set, tok, err);
			if (!g) {
				char why[sizeof err->msg];
				snprintf(why, sizeof why, "%s", err->msg);
				err->code = EXIT_USAGE;
				snprintf(err->msg, sizeof err->msg, "preferred_gpus.%s%s: %.3000s",
					 p->group ? "@" : "", p->who, why);
				free(copy);
				return false;
			}
			size_t pos = (size_t)(g - d->set->gpus);
			if (!ps->ranks[k][pos] && rank < 255)
				ps->ranks[k][pos] = (unsigned char)++rank;
		}
		free(copy);
	}
	return true;
}

void placement_free(struct daemon *d)
{
	struct place_state *ps = d->place;
	topo_free(d->topo);
	d->topo = NULL;
	if (!ps)
		return;
	for (size_t i = 0; i < ps->nusers; i++) {
		free((char *)ps->users[i]->pl.pref_from);
		free(ps->users[i]);
	}
	free(ps->users);
	free(ps->ranks);
	free(ps);
	d->place = NULL;
}

/* Whether the user (name, primary group) is in the group named `group`. */
static bool in_group(const char *name, gid_t primary, const char *group)
{
	struct group gr, *res = NULL;
	bool in = false;
	int e;
	/* A group of many members needs a larger buffer (ERANGE): grown to 1 MiB at most. */
	for (size_t len = 16384; len <= 1 << 20; len *= 4) {
		char *buf = xmalloc(len);
		e = getgrnam_r(group, &gr, buf, len, &res);
		if (!e && res) {
			in = res->gr_gid == primary;
			for (char **m = res->gr_mem; !in && m && *m; m++)
				in = !strcmp(*m, name);
		}
		free(buf);
		if (e != ERANGE)
			break;
	}
	return in;
}

/* The first preferred_gpus key (in file order) for uid: its index, or -1. */
static long match(const struct daemon *d, uid_t uid)
{
	struct passwd pw, *res = NULL;
	char buf[16384];
	if (!d->conf.nprefs || getpwuid_r(uid, &pw, buf, sizeof buf, &res) || !res)
		return -1;
	for (size_t k = 0; k < d->conf.nprefs; k++) {
		const struct dconf_pref *p = &d->conf.prefs[k];
		if (p->group ? in_group(res->pw_name, res->pw_gid, p->who) : !strcmp(p->who, res->pw_name))
			return (long)k;
	}
	return -1;
}

const struct place *placement_for(struct daemon *d, uid_t uid)
{
	struct place_state *ps = d->place;
	if (!ps)
		return NULL;
	for (size_t i = 0; i < ps->nusers; i++)
		if (ps->users[i]->uid == uid)
			return &ps->users[i]->pl;
	if (ps->nusers >= PLACE_USERS || !d->conf.nprefs)
		return &ps->none;
	struct place_user *u = xcalloc(1, sizeof *u);
	u->uid = uid;
	u->pl.topo = d->topo;
	long k = match(d, uid);
	if (k >= 0) {
		const struct dconf_pref *p = &d->conf.prefs[k];
		memcpy(u->pl.rank, ps->ranks[k], sizeof u->pl.rank);
		u->pl.has_pref = true;
		u->pl.pref_from = xasprintf("%s %s", p->group ? "group" : "user", p->who);
	}
	ps->users = xrealloc(ps->users, (ps->nusers + 1) * sizeof *ps->users);
	ps->users[ps->nusers++] = u;
	return &u->pl;
}

void placement_offer(struct daemon *d, const struct request *r, uint64_t mask, struct strbuf *sb)
{
	const struct place *pl = placement_for(d, r->uid);
	struct alloc_gpu g[GPU_MAX];
	uint64_t free = 0;
	for (size_t i = 0; i < d->nslots; i++) {
		const struct slot *s = &d->slots[i];
		g[i] = s->use;
		g[i].index = s->index;
		g[i].leased = s->holder || s->held_unknown;
		g[i].reserved = s->reserved;
		if ((r->req.cand >> i & 1) && !d->set->gpus[i].lost &&
		    !alloc_why_not(&g[i], &r->req, &d->conf.free))
			free |= 1ULL << i;
	}
	for (size_t i = 0; i < d->nreqs; i++)   /* offered to others: not left free */
		if (d->reqs[i] != r && d->reqs[i]->state == R_OFFERED && !d->reqs[i]->dry)
			free &= ~d->reqs[i]->offer;
	struct strbuf why = {0}, cpus = {0}, numa = {0};
	place_explain(pl, g, d->nslots, r->req.prefer, mask, free | mask, &why);
	msg_add(sb, "placement", why.buf, NULL);
	if (place_cpus(d->topo, mask, &cpus, &numa)) {
		msg_add(sb, "cpus", cpus.buf, NULL);
		if (numa.len)
			msg_add(sb, "numa", numa.buf, NULL);
	}
	sb_free(&why);
	sb_free(&cpus);
	sb_free(&numa);
}
