/* guard.c: the device guard, leases that bind ([daemon] guard = acl; issue 25). Design:
 * - The administrator gives the NVIDIA device nodes to the daemon's user with no access for
 *   anyone else (gpuctl-daemon(8), THE DEVICE GUARD: the driver's NVreg_DeviceFile* options). The daemon,
 *   as their owner and with no capability, then writes each node's POSIX ACL (libacl, loaded at
 *   run time: libacl1 is on every Debian system, and only a daemon with the guard on loads it):
 *   GPU N's node DEV/nvidia<minor> (the minor NVML reports) gets a user entry for each user
 *   holding a lease on N; the control nodes (nvidiactl, nvidia-uvm, nvidia-uvm-tools) one for
 *   each user holding any lease; guard_admin_group a group entry on every node. Owner rw, the
 *   owning group and others nothing, the mask rw (so the mode reads 0660 whatever the entries,
 *   as the driver's own NVreg_DeviceFileMode=0660 says: nvidia-modprobe finds nothing to "fix").
 * - Exact, never incremental: guard_sync computes every node's whole ACL from the lease table
 *   and writes it where it differs (acl_cmp), so a grant, an end, a restart after a crash or a
 *   SIGKILL, or a lease that ended while no daemon ran all come out the same: exactly the live
 *   leases' access. It runs when a lease enters the table (before its descriptors are sent: the
 *   job can open its GPU from its first instruction), when one ends (in the loop iteration that
 *   saw its FIFO hang up), at start after the leases are recovered, and every
 *   GUARD_CHECK_SECONDS (an ACL changed behind the daemon's back, by root or a driver helper, is
 *   put back and logged).
 * - Bounded: one pass is GPUs x leases (64 x the table) in memory and one getxattr per node (67
 *   at most); a node's entries are capped at GUARD_MAX_USERS users (more would not fit an ext4
 *   xattr block anyway): the rest are logged and not granted.
 * - Errors (a node missing, owned by another user, a file system without ACLs, libacl missing)
 *   are log lines, once per change, and the guard's state, which `leases`, `status` and
 *   `doctor` show ("not binding: ..."); never a crash, never a refused lease.
 * - MIG instances (issue 23's leases; review 1): with MIG on, a process uses an instance only
 *   with the driver's capabilities of its GPU instance and its compute instance, which it shows
 *   by opening their nodes DEV/nvidia-caps/nvidia-capN for reading (NVIDIA's MIG user guide,
 *   "Device Nodes and Capabilities"; the driver's nv-caps.c checks the descriptor's minor). N
 *   is what the driver's PROC/capabilities/gpu<minor>/mig/gi<G>/access and .../gi<G>/ci<C>/access
 *   files say ("DeviceFileMinor: N"), read at start for each instance NVML lists (instances
 *   are fixed while the daemon runs). A GI's node is for the users of leases of any compute
 *   instance in it, a CI's for its own lease's user, both for a lease of the whole GPU; read
 *   access only (what the driver's own DeviceFileMode gives: 0444). So users holding two
 *   instances of one GPU both open its GPU node, each only its own instance.
 * What it does not stop: root; a descriptor opened while its lease lived and kept past its end
 *   (the lease's end signals the job's processes through their FIFO's hang-up, not here). */
#include "daemon/daemon.h"
#include "base/dl.h"

#include <acl/libacl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/acl.h>
#include <sys/stat.h>
#include <unistd.h>

#define GUARD_CHECK_SECONDS 2.0
#define GUARD_MAX_USERS 256
#define GUARD_ERRORS_SHOWN 8

static const char *const control_nodes[] = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"};

struct gnode {
	char *path;
	int slot;                 /* its GPU's slot; -1: a control node */
	bool optional;            /* nvidia-uvm*: absent until the module is loaded */
	char error[200];          /* why it is not guarded ("": it is) */
	/* MIG capabilities: a GPU instance's node (ci -1) or a compute instance's */
	bool cap;
	int gi, ci;
	bool unknown;             /* its access file said no minor: path is that file */
	bool twice;               /* review 4b: another instance's access file names its minor too */
};

struct guard {
	void *dl;
	acl_t (*init)(int);
	int (*free)(void *);
	int (*create_entry)(acl_t *, acl_entry_t *);
	int (*set_tag_type)(acl_entry_t, acl_tag_t);
	int (*set_qualifier)(acl_entry_t, const void *);
	int (*get_permset)(acl_entry_t, acl_permset_t *);
	int (*add_perm)(acl_permset_t, acl_perm_t);
	acl_t (*get_file)(const char *, acl_type_t);
	int (*set_file)(const char *, acl_type_t, acl_t);
	int (*cmp)(acl_t, acl_t);
	char *dev_dir;
	bool has_admin;
	gid_t admin_gid;
	struct gnode *nodes;
	size_t nnodes;
	double next_check;
	unsigned over_cap;        /* users left out of the last pass (GUARD_MAX_USERS) */
};

static void set_error(struct gnode *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(struct gnode *n, const char *fmt, ...)
{
	char buf[sizeof n->error];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (strcmp(buf, n->error)) /* logged once per change, not at every check */
		fprintf(stderr, "gpuctl daemon: guard: %s\n", buf);
	memcpy(n->error, buf, sizeof buf);
}

static void clear_error(struct gnode *n)
{
	if (n->error[0])
		fprintf(stderr, "gpuctl daemon: guard: %s is guarded again\n", n->path);
	n->error[0] = '\0';
}

/* rw: 0 none, 1 read (a MIG capability), 2 read and write. */
static bool add_entry(struct guard *g, acl_t *acl, acl_tag_t tag, const void *id, int rw)
{
	acl_entry_t e;
	acl_permset_t ps;
	if (g->create_entry(acl, &e) != 0 || g->set_tag_type(e, tag) != 0 ||
	    (id && g->set_qualifier(e, id) != 0) || g->get_permset(e, &ps) != 0)
		return false;
	return !rw || (g->add_perm(ps, ACL_READ) == 0 && (rw < 2 || g->add_perm(ps, ACL_WRITE) == 0));
}

/* Whether lease l is for MIG capability node n: a lease of its GPU whole, or of an instance
 * in its GPU instance (and, for a compute instance's node, of that one). */
static bool cap_for(const struct daemon *d, const struct gnode *n, const struct lease *l)
{
	if (!l->mig)
		return !l->mem_mib;
	const struct gpu *g = &d->set->gpus[n->slot];
	if ((size_t)(l->mig - 1) >= g->nmigs)
		return false;
	const struct mig_dev *m = &g->migs[l->mig - 1];
	return m->gi == (unsigned)n->gi && (n->ci < 0 || m->ci == (unsigned)n->ci);
}

/* The uids node n is for: a slot's holders, or (a control node) every lease's user. */
static size_t node_users(struct daemon *d, const struct gnode *n, uid_t *uids)
{
	size_t k = 0;
	for (size_t i = 0; i < d->nleases; i++) {
		const struct lease *l = d->leases[i];
		if (l->uid == (uid_t)-1 || (n->slot >= 0 && !(l->gpus >> n->slot & 1)))
			continue;
		if (n->cap && !cap_for(d, n, l))
			continue;
		bool seen = false;
		for (size_t j = 0; j < k && !seen; j++)
			seen = uids[j] == l->uid;
		if (seen)
			continue;
		if (k == GUARD_MAX_USERS) {
			d->guard->over_cap++;
			continue;
		}
		uids[k++] = l->uid;
	}
	return k;
}

static void sync_node(struct daemon *d, struct gnode *n, uid_t *uids)
{
	struct guard *g = d->guard;
	struct stat st;
	if (n->unknown) {
		set_error(n, "%s gives no DeviceFileMinor: that MIG instance's capability node is not "
			  "known and not guarded (its GPU's node is)", n->path);
		return;
	}
	if (lstat(n->path, &st) != 0) {
		if (errno == ENOENT && n->cap) { /* nvidia-modprobe makes them, root's, when asked */
			set_error(n, "%s is missing: make it (nvidia-modprobe -f on its MIG instance's "
				  "capabilities access file) and give it to the daemon's user (gpuctl-daemon(8), "
				  "THE DEVICE GUARD)", n->path);
			return;
		}
		if (errno == ENOENT && n->optional) {
			n->error[0] = '\0'; /* the module is not loaded: nobody can use it anyway */
			return;
		}
		set_error(n, "%s: %s%s", n->path, strerror(errno), errno == ENOENT ?
			  " (is the NVIDIA driver loaded, and --dev-dir right?)" : "");
		return;
	}
	if (!S_ISCHR(st.st_mode) && !S_ISREG(st.st_mode)) {
		set_error(n, "%s is not a device node: left alone", n->path);
		return;
	}
	if (st.st_uid != geteuid()) {
		set_error(n, "%s belongs to uid %u, not to the daemon's user (uid %u): its access "
			  "cannot be guarded (gpuctl-daemon(8): THE DEVICE GUARD)", n->path,
			  (unsigned)st.st_uid, (unsigned)geteuid());
		return;
	}
	/* review 4b: a node two instances' access files name is no one's (whose it is cannot be
	 * told): its ACL is the owner's alone, and it is said. */
	size_t nu = n->twice ? 0 : node_users(d, n, uids);
	acl_t want = g->init((int)nu + 6);
	int rw = n->cap ? 1 : 2; /* a capability is shown by opening its node for reading */
	bool ok = want && add_entry(g, &want, ACL_USER_OBJ, NULL, rw) &&
		  add_entry(g, &want, ACL_GROUP_OBJ, NULL, 0) &&
		  add_entry(g, &want, ACL_MASK, NULL, rw) && add_entry(g, &want, ACL_OTHER, NULL, 0);
	for (size_t i = 0; ok && i < nu; i++)
		ok = add_entry(g, &want, ACL_USER, &uids[i], rw);
	if (ok && g->has_admin)
		ok = add_entry(g, &want, ACL_GROUP, &g->admin_gid, rw);
	if (!ok) {
		set_error(n, "%s: cannot build its ACL: %s", n->path, strerror(errno));
	} else {
		acl_t have = g->get_file(n->path, ACL_TYPE_ACCESS);
		if (!have || g->cmp(have, want) != 0) {
			if (g->set_file(n->path, ACL_TYPE_ACCESS, want) != 0)
				set_error(n, "%s: cannot set its ACL: %s%s", n->path, strerror(errno),
					  errno == ENOTSUP || errno == EOPNOTSUPP ?
					  " (its file system has no POSIX ACLs)" : "");
			else if (!n->twice)
				clear_error(n);
		} else if (!n->twice) {
			clear_error(n);
		}
		if (n->twice)
			set_error(n, "%s is named by two MIG instances' capability access files: "
				  "nobody is given it (is --proc-dir right?)", n->path);
		if (have)
			g->free(have);
	}
	if (want)
		g->free(want);
}

void guard_sync(struct daemon *d)
{
	struct guard *g = d->guard;
	if (!g)
		return;
	uid_t *uids = xcalloc(GUARD_MAX_USERS, sizeof *uids);
	unsigned over = g->over_cap;
	g->over_cap = 0;
	for (size_t i = 0; i < g->nnodes; i++)
		sync_node(d, &g->nodes[i], uids);
	free(uids);
	if (g->over_cap && !over)
		fprintf(stderr, "gpuctl daemon: guard: more than %d users hold leases on one node: "
			"the others get no access\n", GUARD_MAX_USERS);
	g->next_check = d->now + GUARD_CHECK_SECONDS;
}

void guard_timers(struct daemon *d, double *next)
{
	if (d->guard && (!*next || d->guard->next_check < *next))
		*next = d->guard->next_check;
}

void guard_expire(struct daemon *d)
{
	if (d->guard && d->now >= d->guard->next_check)
		guard_sync(d);
}

static void add_node(struct guard *g, const char *name, int slot, bool optional)
{
	g->nodes = xrealloc(g->nodes, (g->nnodes + 1) * sizeof *g->nodes);
	g->nodes[g->nnodes++] = (struct gnode){.path = xasprintf("%s/%s", g->dev_dir, name),
					       .slot = slot, .optional = optional};
}

/* The minor number a MIG capability's access file gives (its first "DeviceFileMinor: N" line,
 * as nvidia-modprobe reads it); -1: none. */
static int cap_minor(const char *path)
{
	/* (a regular file only, opened without blocking: the driver's are; a FIFO or a device
	 * under --proc-dir would hang the daemon's start or act on its open) */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	FILE *f = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "r") : NULL;
	if (!f && fd >= 0)
		close(fd);
	char line[128];
	int minor = -1;
	while (f && minor < 0 && fgets(line, sizeof line, f)) {
		unsigned v;
		char tail;
		if (sscanf(line, "DeviceFileMinor: %u%c", &v, &tail) == 2 && tail == '\n' && v < 1u << 20)
			minor = (int)v;
	}
	if (f)
		fclose(f);
	return minor;
}

/* The capability node of GPU instance gi (ci -1) or compute instance ci on slot i. */
static void add_cap(struct guard *g, const char *proc_dir, const struct gpu *gp, int slot, int gi, int ci)
{
	char access[160], name[48];
	if (ci < 0)
		snprintf(access, sizeof access, "%s/capabilities/gpu%u/mig/gi%d/access", proc_dir, gp->minor, gi);
	else
		snprintf(access, sizeof access, "%s/capabilities/gpu%u/mig/gi%d/ci%d/access", proc_dir,
			 gp->minor, gi, ci);
	int minor = cap_minor(access);
	snprintf(name, sizeof name, "nvidia-caps/nvidia-cap%d", minor);
	add_node(g, name, slot, false);
	struct gnode *n = &g->nodes[g->nnodes - 1];
	n->cap = true;
	n->gi = gi;
	n->ci = ci;
	if (minor < 0) {
		free(n->path);
		n->path = xstrdup(access);
		n->unknown = true;
	}
}

/* MIG instances' capability nodes of slot i: one per GPU instance, one per compute instance. */
static void add_caps(struct guard *g, const char *proc_dir, const struct gpu *gp, int slot)
{
	uint64_t gis = 0; /* (GPU instance ids are below 15: nv-caps.c's table) */
	for (size_t j = 0; gpu_has(gp, GF_MIG_MODE) && gp->mig_mode && j < gp->nmigs; j++) {
		const struct mig_dev *m = &gp->migs[j];
		if (m->gi == NO_INSTANCE || m->ci == NO_INSTANCE || m->gi >= 64 || m->ci >= 64)
			continue;
		if (!(gis >> m->gi & 1))
			add_cap(g, proc_dir, gp, slot, (int)m->gi, -1);
		gis |= 1ULL << m->gi;
		add_cap(g, proc_dir, gp, slot, (int)m->gi, (int)m->ci);
	}
}

bool guard_open(struct daemon *d, const char *dev_dir, const char *proc_dir, struct gpu_error *err)
{
	if (!d->conf.guard_acl)
		return true;
	struct guard *g = xcalloc(1, sizeof *g);
	const struct dl_sym syms[] = {
		{&g->init, {"acl_init"}}, {&g->free, {"acl_free"}},
		{&g->create_entry, {"acl_create_entry"}}, {&g->set_tag_type, {"acl_set_tag_type"}},
		{&g->set_qualifier, {"acl_set_qualifier"}}, {&g->get_permset, {"acl_get_permset"}},
		{&g->add_perm, {"acl_add_perm"}}, {&g->get_file, {"acl_get_file"}},
		{&g->set_file, {"acl_set_file"}}, {&g->cmp, {"acl_cmp"}},
	};
	static const char *const sonames[] = {"libacl.so.1", NULL};
	char why[256];
	err->code = EXIT_FAIL;
	if (!(g->dl = dl_load(sonames, syms, ARRAY_SIZE(syms), why, sizeof why))) {
		snprintf(err->msg, sizeof err->msg, "guard = acl needs libacl (Debian: apt install "
			 "libacl1): %s", why);
		free(g);
		return false;
	}
	if (d->conf.guard_admin_group) {
		struct group *gr = getgrnam(d->conf.guard_admin_group);
		if (!gr) {
			err->code = EXIT_USAGE;
			snprintf(err->msg, sizeof err->msg, "guard_admin_group: no group '%s' on this "
				 "machine", d->conf.guard_admin_group);
			guard_free(g);
			return false;
		}
		g->has_admin = true;
		g->admin_gid = gr->gr_gid;
	}
	g->dev_dir = xstrdup(dev_dir);
	for (size_t i = 0; i < ARRAY_SIZE(control_nodes); i++)
		add_node(g, control_nodes[i], -1, i > 0);
	unsigned no_minor = 0;
	for (size_t i = 0; i < d->nslots; i++) {
		const struct gpu *gp = &d->set->gpus[i];
		if (!gp->minor_valid) {
			/* Without its minor the node is unknown: said, and not guessed. */
			fprintf(stderr, "gpuctl daemon: guard: GPU %u: NVML gives no minor number, so its "
				"device node is not known and not guarded\n", d->slots[i].index);
			no_minor++;
			continue;
		}
		char name[32];
		snprintf(name, sizeof name, "nvidia%u", gp->minor);
		add_node(g, name, (int)i, false);
		add_caps(g, proc_dir, gp, (int)i); /* its MIG instances' */
	}
	for (size_t i = 0; i < g->nnodes; i++) /* review 4b: one node named by two access files */
		for (size_t j = i + 1; g->nodes[i].cap && !g->nodes[i].unknown && j < g->nnodes; j++)
			if (g->nodes[j].cap && !g->nodes[j].unknown &&
			    !strcmp(g->nodes[i].path, g->nodes[j].path))
				g->nodes[i].twice = g->nodes[j].twice = true;
	d->guard = g;
	d->guard_no_minor = no_minor;
	guard_sync(d);
	size_t bad = 0;
	for (size_t i = 0; i < g->nnodes; i++)
		bad += g->nodes[i].error[0] != 0;
	fprintf(stderr, "gpuctl daemon: guard: acl on %zu device node%s under %s%s%s (%zu not "
		"guarded)\n", g->nnodes, g->nnodes == 1 ? "" : "s", g->dev_dir,
		g->has_admin ? ", admin group " : "", g->has_admin ? d->conf.guard_admin_group : "",
		bad + no_minor);
	return true;
}

void guard_free(struct guard *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nnodes; i++)
		free(g->nodes[i].path);
	free(g->nodes);
	free(g->dev_dir);
	if (g->dl)
		dlclose(g->dl);
	free(g);
}

/* `list`'s guard lines: "guard MODE DIR STATE" and the first errors ("guard_error TEXT"). */
void guard_describe(const struct daemon *d, struct strbuf *sb)
{
	const struct guard *g = d->guard;
	if (!g) {
		msg_add(sb, "guard", "off", "-", "advisory", NULL);
		return;
	}
	size_t bad = d->guard_no_minor, shown = 0;
	for (size_t i = 0; i < g->nnodes; i++)
		bad += g->nodes[i].error[0] != 0;
	char state[96];
	if (bad)
		snprintf(state, sizeof state, "not binding: %zu node%s not guarded", bad, bad == 1 ? "" : "s");
	else
		snprintf(state, sizeof state, "binding");
	msg_add(sb, "guard", "acl", g->dev_dir, state, NULL);
	for (size_t i = 0; i < g->nnodes && shown < GUARD_ERRORS_SHOWN; i++)
		if (g->nodes[i].error[0]) {
			msg_add(sb, "guard_error", g->nodes[i].error, NULL);
			shown++;
		}
	if (d->guard_no_minor && shown < GUARD_ERRORS_SHOWN)
		msg_add(sb, "guard_error", "some GPUs have no minor number from NVML: their nodes are "
			"not guarded", NULL);
}

/* A fingerprint of what guard_describe says, for list.c's cache. */
uint64_t guard_fingerprint(const struct daemon *d)
{
	uint64_t h = 1469598103934665603ULL;
	if (!d->guard)
		return h;
	for (size_t i = 0; i < d->guard->nnodes; i++)
		for (const char *p = d->guard->nodes[i].error; *p; p++)
			h = (h ^ (uint64_t)(unsigned char)*p) * 1099511628211ULL;
	return h ^ 1;
}
