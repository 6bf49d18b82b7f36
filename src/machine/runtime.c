/* runtime.c: container names from their runtimes (the design is runtime.h's): the cache, the
 * Engine API over a unix socket (a small HTTP/1.1 client: one GET, Connection: close, chunked
 * or not, by a deadline), and the CRI runtimes' state files. */
#include "machine/runtime.h"
#include "base/jsonscan.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct ctr_names {
	struct ctr_info **e;
	size_t n, cap;
	unsigned gen;
};

struct ctr_names *ctr_names_new(void)
{
	return xcalloc(1, sizeof(struct ctr_names));
}

void ctr_names_free(struct ctr_names *cn)
{
	if (!cn)
		return;
	for (size_t i = 0; i < cn->n; i++)
		free(cn->e[i]);
	free(cn->e);
	free(cn);
}

void ctr_names_begin(struct ctr_names *cn)
{
	cn->gen++;
}

const struct ctr_info *ctr_names_add(struct ctr_names *cn, const struct ctr_ref *ref)
{
	for (size_t i = 0; i < cn->n; i++)
		if (!strcmp(cn->e[i]->ref.id, ref->id) && cn->e[i]->ref.rootless == ref->rootless &&
		    cn->e[i]->ref.owner_uid == ref->owner_uid) {
			cn->e[i]->gen = cn->gen;
			return cn->e[i];
		}
	cn->e = grow_array(cn->e, &cn->cap, cn->n + 1, sizeof *cn->e);
	struct ctr_info *x = xcalloc(1, sizeof *x);
	x->ref = *ref;
	x->gen = cn->gen;
	cn->e[cn->n++] = x;
	return x;
}

const struct ctr_info *ctr_names_add_pid(struct ctr_names *cn, unsigned pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%u/cgroup", pid);
	char *text = pid ? read_file(path, NULL) : NULL;
	struct ctr_ref r;
	bool in = text && ctr_from_cgroup_at("/sys/fs/cgroup", text, &r);
	free(text);
	return in ? ctr_names_add(cn, &r) : NULL;
}

void ctr_names_end(struct ctr_names *cn)
{
	size_t k = 0;
	for (size_t i = 0; i < cn->n; i++) {
		if (cn->e[i]->gen == cn->gen)
			cn->e[k++] = cn->e[i];
		else
			free(cn->e[i]);
	}
	cn->n = k;
}

/* ---- the Engine API ---- */

void ctr_engine_socket(bool podman, char *path, size_t len)
{
	const char *host = getenv(podman ? "CONTAINER_HOST" : "DOCKER_HOST");
	if (host && !strncmp(host, "unix://", 7) && host[7])
		snprintf(path, len, "%s", host + 7);
	else
		snprintf(path, len, "%s", podman ? "/run/podman/podman.sock" : "/run/docker.sock");
}

static int remaining_ms(double deadline)
{
	double left = deadline - now_mono();
	return left <= 0 ? 0 : (int)(left * 1000) + 1;
}

/* The body of an HTTP/1.1 answer (head and body in raw), de-chunked into body. */
static bool http_body(const char *raw, size_t n, struct strbuf *body, int *status)
{
	const char *end = memmem(raw, n, "\r\n\r\n", 4);
	if (!end || n < 12 || strncmp(raw, "HTTP/1.", 7) || raw[8] != ' ')
		return false;
	*status = atoi(raw + 9);
	size_t hlen = (size_t)(end - raw);
	const char *p = end + 4, *stop = raw + n;
	bool chunked = false;
	for (const char *h = raw; h < end; h++) {
		if (*h != '\n')
			continue;
		if (!strncasecmp(h + 1, "transfer-encoding:", 18) &&
		    memmem(h + 1, hlen - (size_t)(h + 1 - raw), "chunked", 7))
			chunked = true;
	}
	if (!chunked) {
		sb_add(body, p, (size_t)(stop - p));
		return true;
	}
	while (p < stop) {
		char *x;
		unsigned long sz = strtoul(p, &x, 16);
		const char *crlf = memmem(p, (size_t)(stop - p), "\r\n", 2);
		if (x == p || !crlf)
			return false;
		if (!sz)
			return true;
		p = crlf + 2;
		if (sz > (size_t)(stop - p))
			return false;
		sb_add(body, p, sz);
		p += sz + 2;
	}
	return false;
}

bool ctr_engine_get(const char *socket_path, long owner, const char *path, double deadline,
		    struct strbuf *body, int *status, char *why, size_t whylen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(socket_path) >= sizeof sa.sun_path) {
		snprintf(why, whylen, "socket path too long");
		return false;
	}
	strcpy(sa.sun_path, socket_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(why, whylen, "socket: %s", strerror(errno));
		return false;
	}
	struct strbuf raw = {0};
	bool ok = false;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS) {
		snprintf(why, whylen, "%s: %s", socket_path, strerror(errno));
		goto out;
	}
	if (owner >= 0) {   /* review 2: the user's own runtime, not a link to another's */
		struct ucred cr;
		socklen_t crlen = sizeof cr;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) != 0 || (long)cr.uid != owner) {
			snprintf(why, whylen, "%s: served by uid %ld, not by its owner %ld: not asked",
				 socket_path, crlen == sizeof cr ? (long)cr.uid : -1L, owner);
			goto out;
		}
	}
	char req[512];
	int rn = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: gpuctl\r\n"
			  "Connection: close\r\n\r\n", path);
	if (rn < 0 || (size_t)rn >= sizeof req) {
		snprintf(why, whylen, "request too long");
		goto out;
	}
	for (size_t sent = 0; sent < (size_t)rn;) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		if (poll(&p, 1, remaining_ms(deadline)) <= 0) {
			snprintf(why, whylen, "%s: no answer in time", socket_path);
			goto out;
		}
		ssize_t w = send(fd, req + sent, (size_t)rn - sent, MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			snprintf(why, whylen, "%s: %s", socket_path, strerror(errno));
			goto out;
		}
		sent += w > 0 ? (size_t)w : 0;
	}
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int pr = poll(&p, 1, remaining_ms(deadline));
		if (pr <= 0) {
			snprintf(why, whylen, "%s: no answer in time", socket_path);
			goto out;
		}
		sb_reserve(&raw, 16384);
		ssize_t r = read(fd, raw.buf + raw.len, 16384);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r < 0) {
			snprintf(why, whylen, "%s: %s", socket_path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		raw.len += (size_t)r;
		raw.buf[raw.len] = '\0';
		if (raw.len > CTR_ANSWER_MAX) {
			snprintf(why, whylen, "%s: answer larger than %zu bytes", socket_path, CTR_ANSWER_MAX);
			goto out;
		}
	}
	ok = http_body(raw.buf ? raw.buf : "", raw.len, body, status);
	if (!ok)
		snprintf(why, whylen, "%s: not an HTTP answer", socket_path);
out:
	close(fd);
	sb_free(&raw);
	return ok;
}

void ctr_parse_inspect(const char *body, size_t len, struct ctr_info *out, long long *pid)
{
	char name[CTR_NAME_MAX];
	if (jsonscan_str(body, len, (const char *const[]){"Name"}, 1, name, sizeof name))
		snprintf(out->name, sizeof out->name, "%s", name[0] == '/' ? name + 1 : name);
	const char *const kpod[] = {"Config", "Labels", "io.kubernetes.pod.name"};
	const char *const kns[] = {"Config", "Labels", "io.kubernetes.pod.namespace"};
	const char *const kctr[] = {"Config", "Labels", "io.kubernetes.container.name"};
	jsonscan_str(body, len, kpod, 3, out->pod, sizeof out->pod);
	jsonscan_str(body, len, kns, 3, out->ns, sizeof out->ns);
	if (jsonscan_str(body, len, kctr, 3, name, sizeof name))
		snprintf(out->name, sizeof out->name, "%s", name);
	long long p = 0;
	if (pid)
		*pid = jsonscan_int(body, len, (const char *const[]){"State", "Pid"}, 2, &p) ? p : 0;
}

/* ---- asking ---- */

struct asker {
	double deadline;
	char dead[4][108];      /* sockets that failed in this refresh: not asked again */
	size_t ndead;
};

static bool ask_engine(struct asker *a, const char *sock, long owner, struct ctr_info *x)
{
	for (size_t i = 0; i < a->ndead; i++)
		if (!strcmp(a->dead[i], sock))
			return false;
	char path[128], why[256];
	snprintf(path, sizeof path, "/containers/%s/json", x->ref.id);
	struct strbuf body = {0};
	int status = 0;
	bool ok = ctr_engine_get(sock, owner, path, a->deadline, &body, &status, why, sizeof why);
	if (!ok && a->ndead < 4)
		snprintf(a->dead[a->ndead++], sizeof a->dead[0], "%s", sock);
	ok = ok && status == 200;
	if (ok)
		ctr_parse_inspect(body.buf ? body.buf : "", body.len, x, NULL);
	sb_free(&body);
	return ok && x->name[0];
}

void ctr_parse_oci(const char *text, size_t len, unsigned runtime, struct ctr_info *x)
{
	bool crio = runtime == CTR_CRIO;
	const char *kname = crio ? "io.kubernetes.container.name" : "io.kubernetes.cri.container-name";
	const char *kpod = crio ? "io.kubernetes.pod.name" : "io.kubernetes.cri.sandbox-name";
	const char *kns = crio ? "io.kubernetes.pod.namespace" : "io.kubernetes.cri.sandbox-namespace";
	jsonscan_str(text, len, (const char *const[]){"annotations", kname}, 2, x->name, sizeof x->name);
	jsonscan_str(text, len, (const char *const[]){"annotations", kpod}, 2, x->pod, sizeof x->pod);
	jsonscan_str(text, len, (const char *const[]){"annotations", kns}, 2, x->ns, sizeof x->ns);
}

/* An OCI bundle's config.json of a CRI runtime: its Kubernetes annotations. */
static bool ask_state(const char *file, unsigned runtime, struct ctr_info *x)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	struct strbuf sb = {0};
	for (;;) {
		sb_reserve(&sb, 65536);
		ssize_t r = read(fd, sb.buf + sb.len, 65536);
		if (r <= 0 || sb.len + (size_t)r > CTR_ANSWER_MAX)
			break;
		sb.len += (size_t)r;
	}
	close(fd);
	ctr_parse_oci(sb.buf ? sb.buf : "", sb.len, runtime, x);
	sb_free(&sb);
	return x->name[0] || x->pod[0];
}

static bool ask(struct asker *a, struct ctr_info *x)
{
	char sock[108], file[256];
	unsigned rt = x->ref.runtime;
	if (x->ref.rootless) {
		snprintf(sock, sizeof sock, "/run/user/%u/podman/podman.sock", (unsigned)x->ref.owner_uid);
		if (ask_engine(a, sock, (long)x->ref.owner_uid, x))
			return true;
		snprintf(sock, sizeof sock, "/run/user/%u/docker.sock", (unsigned)x->ref.owner_uid);
		return ask_engine(a, sock, (long)x->ref.owner_uid, x);
	}
	if (rt == CTR_CONTAINERD || rt == CTR_KUBERNETES) {
		snprintf(file, sizeof file, "/run/containerd/io.containerd.runtime.v2.task/k8s.io/%s/config.json",
			 x->ref.id);
		if (ask_state(file, CTR_CONTAINERD, x))
			return true;
	}
	if (rt == CTR_CRIO || rt == CTR_KUBERNETES) {
		snprintf(file, sizeof file, "/run/containers/storage/overlay-containers/%s/userdata/config.json",
			 x->ref.id);
		if (ask_state(file, CTR_CRIO, x))
			return true;
	}
	if (rt == CTR_DOCKER || rt == CTR_PODMAN || rt == CTR_KUBERNETES) {
		/* podman-docker answers on Docker's socket too: each runtime's own first */
		for (int k = 0; k < 2; k++) {
			ctr_engine_socket((rt == CTR_PODMAN) == (k == 0), sock, sizeof sock);
			if (ask_engine(a, sock, -1, x))
				return true;
		}
	}
	return false;
}

/* The budget: CTR_LOOKUP_BUDGET, or GPUCTL_CONTAINER_TIMEOUT milliseconds (at most 2000). */
static double budget(void)
{
	static volatile int said;
	const char *s = getenv("GPUCTL_CONTAINER_TIMEOUT");
	unsigned long ms;
	if (!s || !*s)
		return CTR_LOOKUP_BUDGET;
	if (parse_uint(s, &ms) && ms <= 2000)
		return (double)ms / 1000;
	if (parse_uint(s, &ms)) {
		env_bad(&said, "GPUCTL_CONTAINER_TIMEOUT", s, "a number of milliseconds up to 2000",
			"2000 is used");
		return 2.0;
	}
	env_bad(&said, "GPUCTL_CONTAINER_TIMEOUT", s, "a number of milliseconds up to 2000",
		"the default is used");
	return CTR_LOOKUP_BUDGET;
}

static bool due(const struct ctr_names *cn, const struct ctr_info *x, double now)
{
	return x->gen == cn->gen && !x->named && !(x->asked_at && now - x->asked_at < CTR_RETRY);
}

void ctr_names_resolve(struct ctr_names *cn)
{
	double now = now_mono();
	struct asker a = {.deadline = now + budget()};
	/* review 2: the system's runtimes first, then users' own (rootless) ones, whose sockets
	 * their users control: one that spends the budget delays only other rootless names */
	for (size_t i = 0; i < cn->n; i++) {
		struct ctr_info *x = cn->e[i];
		if (x->ref.rootless || !due(cn, x, now))
			continue;
		if (now_mono() >= a.deadline)
			return;   /* the rest next refresh: a slow runtime never slows this one */
		x->asked_at = now;
		x->named = ask(&a, x);
	}
	/* review 2 follow-up: and among users, each owner waiting gets an equal part of what is
	 * left, in turn: a user whose socket accepts and never answers spends their own part, not
	 * the others' (one refresh at a time, as before, they delayed every user listed after). */
	uid_t *owners = xcalloc(cn->n + 1, sizeof *owners);
	size_t nown = 0;
	for (size_t i = 0; i < cn->n; i++) {
		const struct ctr_info *x = cn->e[i];
		size_t k = 0;
		while (k < nown && owners[k] != x->ref.owner_uid)
			k++;
		if (x->ref.rootless && due(cn, x, now) && k == nown)
			owners[nown++] = x->ref.owner_uid;
	}
	double end = a.deadline;
	for (size_t k = 0; k < nown; k++) {
		double t = now_mono();
		if (t >= end)
			break;
		a.deadline = t + (end - t) / (double)(nown - k);
		for (size_t i = 0; i < cn->n && now_mono() < a.deadline; i++) {
			struct ctr_info *x = cn->e[i];
			if (!x->ref.rootless || x->ref.owner_uid != owners[k] || !due(cn, x, now))
				continue;
			x->asked_at = now;
			x->named = ask(&a, x);
		}
	}
	free(owners);
}
