/* container.c: the container and pod of a process from its cgroup path, by each runtime's
 * documented names (container.h lists them), and the cgroup file's line reader. Pure, but for
 * ctr_host_has_runtime's few stats. */
#include "machine/container.h"
#include "base/util.h"

#include <glob.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool cgroup_next_path(const char **cursor, const char **path, size_t *len)
{
	const char *line = *cursor;
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		const char *c1 = memchr(line, ':', n);
		const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
		*cursor = nl ? nl + 1 : line + n;
		if (c2) {
			*path = c2 + 1;
			*len = n - (size_t)(c2 + 1 - line);
			return true;
		}
		line = *cursor;
	}
	return false;
}

const char *ctr_runtime_name(unsigned runtime)
{
	static const char *const names[] = {NULL, "docker", "podman", "containerd", "cri-o",
					    "kubernetes"};
	return runtime < sizeof names / sizeof *names ? names[runtime] : NULL;
}

/* What the file system said, and when (ms on the monotonic clock, 0: never asked): a watch
 * loop refreshed ten times a second, and the look (nine stats and three globs over /run/user)
 * was a tenth of its CPU on a machine without a runtime (issue 22). A runtime installed while a
 * loop or the daemon runs is seen within RUNTIME_RECHECK_MS. Atomic: the exporter's threads
 * refresh too. */
#define RUNTIME_RECHECK_MS 10000
static _Atomic long long runtime_asked_ms;
static atomic_bool runtime_found;

static bool host_marks(void);

bool ctr_host_has_runtime(void)
{
	const char *dh = getenv("DOCKER_HOST"), *ch = getenv("CONTAINER_HOST");
	if ((dh && *dh) || (ch && *ch))
		return true;
	long long now = (long long)(now_mono() * 1000) + 1, asked = atomic_load(&runtime_asked_ms);
	if (asked && now - asked < RUNTIME_RECHECK_MS)
		return atomic_load(&runtime_found);
	bool found = host_marks();
	atomic_store(&runtime_found, found);
	atomic_store(&runtime_asked_ms, now);
	return found;
}

static bool host_marks(void)
{
	static const char *const marks[] = {
		"/run/docker.sock", "/var/lib/docker", "/run/containerd", "/var/lib/containerd",
		"/run/podman", "/var/lib/containers", "/run/crio", "/var/lib/kubelet", "/run/libpod",
	};
	struct stat st;
	for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
		if (stat(marks[i], &st) == 0)
			return true;
	/* rootless Podman (and Docker): the user's runtime directory */
	static const char *const user_marks[] = {"/run/user/*/libpod", "/run/user/*/containers",
						 "/run/user/*/docker.sock"};
	for (size_t i = 0; i < sizeof user_marks / sizeof *user_marks; i++) {
		glob_t g = {0};
		int r = glob(user_marks[i], GLOB_NOSORT, NULL, &g);
		globfree(&g);
		if (r == 0)
			return true;
	}
	return false;
}

void ctr_short_id(const char *id, char out[13])
{
	snprintf(out, 13, "%.12s", id);
}

/* ---- one path ---- */

struct comp {
	const char *s;
	size_t n;
};

static bool starts(struct comp c, const char *p)
{
	size_t n = strlen(p);
	return c.n >= n && !memcmp(c.s, p, n);
}

static bool is(struct comp c, const char *p)
{
	return c.n == strlen(p) && !memcmp(c.s, p, c.n);
}

static bool hex64(const char *s, size_t n)
{
	if (n != CTR_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* "<prefix><64hex><suffix>" exactly: the id's start, or NULL. */
static const char *id_between(struct comp c, const char *prefix, const char *suffix)
{
	size_t p = strlen(prefix), s = strlen(suffix);
	if (c.n != p + CTR_ID_LEN + s || memcmp(c.s, prefix, p) || memcmp(c.s + p + CTR_ID_LEN, suffix, s))
		return NULL;
	return hex64(c.s + p, CTR_ID_LEN) ? c.s + p : NULL;
}

/* A pod uid: 36 characters 8-4-4-4-12 of hex ('_' for '-' in systemd's slice names, which keep
 * '-' for nesting), or a static pod's 32 hex digits (the kubelet names those by a hash). */
static bool pod_uid(const char *s, size_t n, char out[CTR_UID_LEN + 1])
{
	if (n != 36 && n != 32)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		bool dash = n == 36 && (i == 8 || i == 13 || i == 18 || i == 23);
		if (dash ? ch != '-' && ch != '_' : !((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
			return false;
		out[i] = dash ? '-' : ch;
	}
	out[n] = '\0';
	return true;
}

/* A pod's cgroup: systemd's "...kubepods...-pod<uid>.slice", or cgroupfs's "pod<uid>" below a
 * kubepods component. */
static bool pod_comp(struct comp c, bool under_kubepods, char out[CTR_UID_LEN + 1])
{
	static const char slice[] = ".slice";
	size_t sl = sizeof slice - 1;
	if (c.n > sl && !memcmp(c.s + c.n - sl, slice, sl) && memmem(c.s, c.n, "kubepods", 8)) {
		const char *end = c.s + c.n - sl;
		for (const char *p = c.s; (p = memmem(p, (size_t)(end - p), "-pod", 4)); p++)
			if (pod_uid(p + 4, (size_t)(end - p - 4), out))
				return true;
		return false;
	}
	return under_kubepods && starts(c, "pod") && pod_uid(c.s + 3, c.n - 3, out);
}

/* The container in one component (prev: the one above it), or CTR_NONE. */
static unsigned comp_container(struct comp c, struct comp prev, const char **id)
{
	static const struct {
		const char *prefix, *suffix;
		unsigned runtime;
	} forms[] = {
		{"docker-", ".scope", CTR_DOCKER},
		{"libpod-", ".scope", CTR_PODMAN},
		{"libpod-", "", CTR_PODMAN},           /* cgroupfs: /libpod_parent/libpod-<id> */
		{"cri-containerd-", ".scope", CTR_CONTAINERD},
		{"crio-", ".scope", CTR_CRIO},
	};
	for (size_t i = 0; i < sizeof forms / sizeof *forms; i++)
		if ((*id = id_between(c, forms[i].prefix, forms[i].suffix)))
			return forms[i].runtime;
	/* cgroup v1 with the systemd driver: "SLICE:RUNTIME:ID" in one component. */
	static const struct {
		const char *mid;
		unsigned runtime;
	} flat[] = {{":cri-containerd:", CTR_CONTAINERD}, {":crio:", CTR_CRIO}, {":docker:", CTR_DOCKER}};
	for (size_t i = 0; i < sizeof flat / sizeof *flat; i++) {
		size_t m = strlen(flat[i].mid);
		if (c.n > m + CTR_ID_LEN && !memcmp(c.s + c.n - CTR_ID_LEN - m, flat[i].mid, m) &&
		    hex64(c.s + c.n - CTR_ID_LEN, CTR_ID_LEN)) {
			*id = c.s + c.n - CTR_ID_LEN;
			return flat[i].runtime;
		}
	}
	/* cgroupfs: the id alone, below /docker or below a pod. */
	if (hex64(c.s, c.n)) {
		*id = c.s;
		if (is(prev, "docker"))
			return CTR_DOCKER;
		if (starts(prev, "pod"))
			return CTR_KUBERNETES;
	}
	*id = NULL;
	return CTR_NONE;
}

/* "user-U.slice" / "user@U.service": U. */
static bool user_num(struct comp c, const char *prefix, const char *suffix, unsigned long *uid)
{
	size_t p = strlen(prefix), s = strlen(suffix);
	if (c.n <= p + s || c.n > p + s + 10 || memcmp(c.s, prefix, p) || memcmp(c.s + c.n - s, suffix, s))
		return false;
	unsigned long v = 0;
	for (size_t i = p; i < c.n - s; i++) {
		if (c.s[i] < '0' || c.s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(c.s[i] - '0');
	}
	*uid = v;
	return v <= 0xFFFFFFFEUL;
}

static bool path_container(const char *path, size_t len, struct ctr_ref *out, size_t *parent)
{
	const char *p = path, *end = path + len;
	struct comp prev = {"", 0};
	bool kubepods = false, user = false;
	unsigned long uid = 0;
	char pod[CTR_UID_LEN + 1] = "";
	/* Every form names the container by a component of at least its 64-digit id: a shorter
	 * path (most processes' cgroups: a user's session, a service) holds none, and is passed
	 * over without a look at each component (issue 22: this was 16% of status --json). */
	if (len < 1 + CTR_ID_LEN || *p != '/')
		return false;
	/* In a private cgroup namespace (gpuctl in a container: cgroup v2's default for Docker and
	 * Podman) the kernel writes a cgroup outside it from the namespace's root up:
	 * "/../../user.slice/...". The ".." (only ever a prefix: no cgroup may be named "..") lead
	 * to an ancestor of that root, the host's root for a container's namespace
	 * (/system.slice/docker-ID.scope, /docker/ID, /machine.slice/libpod-ID.scope/container)
	 * and a process under user.slice or another runtime's slice: depth 0 is counted after
	 * them. (Under a common ancestor below the root, e.g. two rootless containers of one user,
	 * the path left is not the host's: then read as it is.) */
	while (end - p >= 3 && p[1] == '.' && p[2] == '.' && (end - p == 3 || p[3] == '/'))
		p += 3;
	if (p == end)
		return false;
	for (size_t depth = 0; p < end; depth++) {
		p++;
		const char *q = memchr(p, '/', (size_t)(end - p));
		if (!q)
			q = end;
		struct comp c = {p, (size_t)(q - p)};
		p = q;
		if (!c.n)
			continue;
		if (depth == 0)
			user = is(c, "user.slice");
		if (depth == 1 && user && !user_num(c, "user-", ".slice", &uid))
			return false;       /* a user.slice cgroup that names no user: no one to ask */
		char uidbuf[CTR_UID_LEN + 1];
		/* cgroup v1's flat systemd form "POD.slice:RUNTIME:ID": the pod is its first part */
		const char *colon = memchr(c.s, ':', c.n);
		struct comp podc = colon ? (struct comp){c.s, (size_t)(colon - c.s)} : c;
		if (!pod[0] && pod_comp(podc, kubepods, uidbuf))
			memcpy(pod, uidbuf, sizeof pod);
		if (starts(c, "kubepods") || memmem(c.s, c.n, "-kubepods", 9))
			kubepods = true;
		const char *id;
		unsigned rt = comp_container(c, prev, &id);
		if (rt != CTR_NONE) {
			/* the cgroupfs pod form needs its pod; a bare id anywhere else is no one's */
			if (rt == CTR_KUBERNETES && !pod[0])
				return false;
			if (user && depth < 2)
				return false;
			*out = (struct ctr_ref){.runtime = (unsigned char)rt, .rootless = user,
						.owner_uid = (uid_t)uid};
			memcpy(out->id, id, CTR_ID_LEN);
			out->id[CTR_ID_LEN] = '\0';
			memcpy(out->pod_uid, pod, sizeof out->pod_uid);
			*parent = (size_t)(c.s - 1 - path);
			return true;
		}
		prev = c;
	}
	return false;
}

/* The first hierarchy that names a container wins: a runtime puts its container's processes in
 * the same container in every hierarchy it uses. path: that line's path (after its 2nd ':'). */
static bool first_container(const char *text, struct ctr_ref *out, const char **path,
			    size_t *parent)
{
	*out = (struct ctr_ref){0};
	/* A line shorter than "0::/" and a 64-digit id names no container (path_container): most
	 * processes' files have none that long, and are passed over by one strchr a line (issue
	 * 22: looking at each line's path was 16% of what status --json cost). */
	bool any = false;
	for (const char *s = text, *nl; !any; s = nl + 1) {
		nl = strchr(s, '\n');
		any = (nl ? (size_t)(nl - s) : strlen(s)) >= 4 + CTR_ID_LEN;
		if (!nl)
			break;
	}
	if (!any)
		return false;
	const char *cur = text;
	size_t len;
	while (cgroup_next_path(&cur, path, &len))
		if (path_container(*path, len, out, parent))
			return true;
	*out = (struct ctr_ref){0};
	return false;
}

bool ctr_from_cgroup(const char *text, struct ctr_ref *out)
{
	const char *path;
	size_t parent;
	return first_container(text, out, &path, &parent);
}

bool ctr_from_cgroup_at(const char *root, const char *text, struct ctr_ref *out)
{
	const char *path;
	size_t parent;
	if (!first_container(text, out, &path, &parent))
		return false;
	if (out->rootless)
		return true;   /* asked of its owner's own runtime only */
	if (!strncmp(path, "/..", 3))
		return true;   /* outside our cgroup namespace: its parent is not under root here */
	/* "0::PATH" is the unified hierarchy at root; "N:CONTROLLERS:PATH" is v1's, mounted at
	 * root/CONTROLLERS (name=systemd at root/systemd). The controllers hold no ':'. */
	const char *ctl = path - 1;
	while (ctl > text && ctl[-1] != ':')
		ctl--;
	size_t cn = (size_t)(path - 1 - ctl);
	if (cn >= 5 && !strncmp(ctl, "name=", 5))
		ctl += 5, cn -= 5;
	/* The unified hierarchy is at root itself, except on a hybrid host (v1 controllers at
	 * root, cgroup2 at root/unified): there a parent looked for at root was not found, and a
	 * user's delegated cgroup2 subtree named like a container was taken for one. */
	char dir[4096];
	const char *uni = "";
	if (!cn) {
		snprintf(dir, sizeof dir, "%s/cgroup.controllers", root);
		if (access(dir, F_OK) != 0) {
			snprintf(dir, sizeof dir, "%s/unified/cgroup.controllers", root);
			uni = access(dir, F_OK) == 0 ? "/unified" : "";
		}
	}
	int n = snprintf(dir, sizeof dir, "%s%s%s%.*s%.*s", root, uni, cn ? "/" : "", (int)cn, ctl,
			 (int)parent, path);
	struct stat st;
	/* the runtime made the container's cgroup in one of root's: a user's delegated subtree
	 * (their own directory) may hold any name. A runtime may chown the container's own
	 * cgroup to a user namespace's root (crun, runc), never its parent. Not found (another
	 * mount layout): not known, so not refused. */
	if (n > 0 && (size_t)n < sizeof dir && stat(dir, &st) == 0 && st.st_uid != 0) {
		*out = (struct ctr_ref){0};
		return false;
	}
	return true;
}
