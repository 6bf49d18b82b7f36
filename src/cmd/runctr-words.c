/* runctr-words.c: run's containers, the user's words (the design is runctr.h's): docker's and
 * podman's `run` read far enough to find the image, with a flag table (which of run's flags take
 * a value); on the way, the words that would give the container GPUs past the lease: GPU flags
 * of the user's own (--gpus, a GPU's --device, NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES in
 * -e or an --env-file) and what gives it every GPU's device node (--privileged, mounts of the
 * host's / or /dev, --device /dev, device cgroup rules for major 195). runctr.c refuses them
 * (runctr_check) and rewrites the rest. Pure but for the sources' links resolved and the env
 * files read: unit-tested (tests/unit/test_container.c). */
#include "cmd/runctr.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* docker run's and podman run's flags that take no value (all others take one, as `--flag V`
 * or `--flag=V`): from `docker run --help` (Docker 28) and `podman run --help` (Podman 4/5). */
static const char *const bool_long[] = {
	"detach", "interactive", "tty", "rm", "privileged", "init", "read-only", "publish-all",
	"no-healthcheck", "oom-kill-disable", "sig-proxy", "quiet", "disable-content-trust",
	"help", "replace", "rmi", "passwd", "no-hosts", "env-host", "http-proxy", "read-only-tmpfs",
	"tls-verify",
	/* review 2: more of them (Docker 28's and Podman's); one missing took the next word as its
	 * value, so "--use-api-socket --gpus all img" read "all" as the image and let --gpus by */
	"use-api-socket", "rootfs", "unsetenv-all", "no-hostname", NULL,
};

static bool in(const char *const *list, const char *s, size_t n)
{
	for (; *list; list++)
		if (strlen(*list) == n && !strncmp(*list, s, n))
			return true;
	return false;
}

/* review 4: whether an environment entry's name (n bytes, blanks before it already taken out)
 * sets NVIDIA_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES (which, or NULL): the name itself, or a podman prefix
 * (NAME*, valueless) that takes either from the host. Blanks after the name are the engine's
 * error. NVIDIA_VISIBLE_DEVICES* names any variable starting so (the toolkit reads none other,
 * but no one needs one). */
static const char *env_names_gpus(const char *v, size_t n, bool valueless)
{
	static const char *const vars[] = {"NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"};
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r'))
		n--;
	bool star = valueless && n && v[n - 1] == '*';
	if (star)
		n--;
	for (size_t i = 0; i < 2; i++) {
		size_t vl = strlen(vars[i]);
		if (star ? n <= vl && !strncmp(v, vars[i], n)
			 : n == vl ? !strncmp(v, vars[i], n)
				   : i == 0 && n > vl && !strncmp(v, vars[i], vl))
			return vars[i];
	}
	return NULL;
}

/* review 2: a word that gives the container GPUs by itself, besides --gpus: a CDI device, a GPU's
 * own node (/dev/nvidia0, /dev/nvidia-caps/...: not nvidiactl or nvidia-uvm, which name none),
 * or NVIDIA_VISIBLE_DEVICES, which the NVIDIA runtime reads. */
static bool names_gpus(const char *flag, size_t n, const char *v)
{
	if (!v)
		return false;
	if (n == 6 && !strncmp(flag, "device", 6)) {
		const char *d = strstr(v, "/dev/nvidia");
		return strstr(v, "nvidia.com/gpu") ||
		       (d && ((d[11] >= '0' && d[11] <= '9') || !strncmp(d + 11, "-caps", 5)));
	}
	/* review 2 follow-up: and CUDA_VISIBLE_DEVICES, which gpuctl sets in the container (-e):
	 * docker keeps both words, and CUDA reads the first while Python reads the last; its
	 * value-less form passes the host's ordinals, which mean other GPUs inside */
	/* review 4: a CDI annotation: the NVIDIA runtime in its CDI mode takes devices from the
	 * annotations under cdi.k8s.io/ (nvidia.com/gpu=all), as from --device */
	if (n == 10 && !strncmp(flag, "annotation", 10))
		return !strncmp(v + strspn(v, " \t"), "cdi.k8s.io/", 11);
	if (!((n == 3 && !strncmp(flag, "env", 3)) || (n == 1 && *flag == 'e')))
		return false;
	/* review 4: podman takes the blanks before a name out (" NVIDIA_VISIBLE_DEVICES=all" is
	 * that variable) and reads a value-less NAME* as every host variable whose name starts
	 * so ("NVIDIA_*", "*"); its -e words are a map, the last one wins, so either undid the
	 * NVIDIA_VISIBLE_DEVICES gpuctl gives it (and the NVIDIA hook's view of every GPU) */
	v += strspn(v, " \t");
	size_t kn = strcspn(v, "=");
	return env_names_gpus(v, kn, !v[kn]) != NULL;
}
static const char bool_short[] = "ditPq";

/* -- every GPU's device node (review 2 follow-up) -- Words that give the container the device
 * nodes of all GPUs whatever its --gpus/--device say: --privileged (every host device, and no
 * device cgroup), a bind mount of the host's / or /dev (its nodes; a rootless container has no
 * device cgroup to stop it opening them, a privileged one neither), a --device of a whole
 * directory (docker and podman add every device under it), and a device cgroup rule that allows
 * the GPUs' major 195 (with CAP_MKNOD, which docker gives by default, the container makes the
 * nodes). Refused like --gpus, saying the safe form; CUDA_VISIBLE_DEVICES (given to every
 * container run) would narrow CUDA only, not nvidia-smi, NVML or a job that resets it. */

/* path with "//", "/./", "/../" and a trailing "/" taken out (as the kernel would walk it,
 * links aside); "" when it is not absolute. */
static void norm_path(const char *s, size_t n, char *out, size_t size)
{
	size_t k = 0;
	out[0] = '\0';
	if (!n || *s != '/' || n >= size)
		return;
	for (size_t i = 0; i < n;) {
		while (i < n && s[i] == '/')
			i++;
		size_t j = i;
		while (j < n && s[j] != '/')
			j++;
		if (j - i == 2 && s[i] == '.' && s[i + 1] == '.') {
			while (k && out[k - 1] != '/')
				k--;
			if (k)
				k--;
		} else if (j > i && !(j - i == 1 && s[i] == '.')) {
			out[k++] = '/';
			memcpy(out + k, s + i, j - i);
			k += j - i;
		}
		i = j;
	}
	if (!k)
		out[k++] = '/';
	out[k] = '\0';
}

/* What a host path (a bind mount's or a --device's source) exposes: the host's root or /dev
 * (with every GPU's node), a glob over /dev (podman's type=glob), a GPU's node, or nothing. Its
 * links resolved too, where it exists here (a link to /dev is /dev). */
static const char *path_exposes(const char *s, size_t n)
{
	char p[2][4096], raw[4096];
	norm_path(s, n, p[0], sizeof p[0]);
	p[1][0] = '\0';
	/* a relative source ("../..", docker 23's and podman's) is the client's cwd's */
	if (n < sizeof raw) {
		memcpy(raw, s, n);
		raw[n] = '\0';
		if (!realpath(raw, p[1]))
			p[1][0] = '\0';
	}
	for (int i = 0; i < 2; i++) {
		if (!strcmp(p[i], "/"))
			return "the host's / (and its /dev)";
		if (!strcmp(p[i], "/dev"))
			return "the host's /dev";
		if (!strncmp(p[i], "/dev/", 5) && strpbrk(p[i], "*?["))
			return "a glob over the host's /dev";
		/* a GPU's own node mounted (a rootless container has no device cgroup) */
		if (!strncmp(p[i], "/dev/nvidia", 11) &&
		    ((p[i][11] >= '0' && p[i][11] <= '9') || !strncmp(p[i] + 11, "-caps", 5)))
			return "a GPU's device node";
	}
	return NULL;
}

/* A device cgroup rule "TYPE MAJOR:MINOR ACCESS" that allows a GPU: type a (every device), or
 * a character device of major 195 or * with minor * or 0..253 (195:254 and 195:255 are
 * nvidia-modeset and nvidiactl, which name no GPU). */
static bool rule_exposes(const char *r)
{
	while (*r == ' ' || *r == '\t')
		r++;
	if (*r == 'a')
		return true;
	if (*r++ != 'c')
		return false;
	while (*r == ' ' || *r == '\t')
		r++;
	bool any_major = *r == '*';
	char *e;
	unsigned long major = any_major ? 0 : strtoul(r, &e, 10);
	if (any_major)
		e = (char *)r + 1;
	else if (e == r)
		return false;
	if (*e++ != ':')
		return false;
	unsigned long minor = *e == '*' ? 0 : strtoul(e, NULL, 10);
	return (any_major || major == 195) && (*e == '*' || minor <= 253);
}

/* flag (n bytes, without its dashes; a short one is 1 byte) with its value v (NULL: none), for
 * a boolean flag eqv its "=VALUE" (NULL: none): what it exposes, or NULL. */
static const char *exposes(const char *flag, size_t n, const char *v, const char *eqv)
{
#define IS(lit) (n == sizeof lit - 1 && !strncmp(flag, lit, n))
	if (IS("privileged")) {
		static const char *const off[] = {"0", "f", "F", "false", "FALSE", "False", NULL};
		return eqv && in(off, eqv, strlen(eqv)) ? NULL : "every host device";
	}
	if (!v)
		return NULL;
	if (IS("volume") || IS("v")) {   /* SRC:DST[:OPTS]; a single path is the container's */
		const char *c = strchr(v, ':');
		return c && (*v == '/' || *v == '.') ? path_exposes(v, (size_t)(c - v)) : NULL;
	}
	if (IS("device")) {              /* SRC[:DST[:PERMS]]; a CDI name is names_gpus's */
		if (*v != '/')
			return NULL;
		return path_exposes(v, strcspn(v, ":"));
	}
	if (IS("mount")) {               /* CSV of KEY=VALUE, keys in any case, fields maybe quoted */
		for (const char *f = v; *f;) {
			size_t fl = strcspn(f, ",");
			const char *k = f, *fe = f + fl;
			if (*k == '"')
				k++;
			const char *eq = memchr(k, '=', (size_t)(fe - k));
			size_t kl = eq ? (size_t)(eq - k) : 0;
			if (eq && ((kl == 6 && !strncasecmp(k, "source", 6)) ||
				   (kl == 3 && !strncasecmp(k, "src", 3)))) {
				const char *val = eq + 1, *ve = fe;
				if (ve > val && ve[-1] == '"')
					ve--;
				if (*val == '"')
					val++;
				const char *why = ve > val && (*val == '/' || *val == '.')
						  ? path_exposes(val, (size_t)(ve - val)) : NULL;
				if (why)
					return why;
			}
			f = *fe ? fe + 1 : fe;
		}
		return NULL;
	}
	if (IS("device-cgroup-rule"))
		return rule_exposes(v) ? "a device cgroup rule allowing the GPUs (major 195)" : NULL;
	return NULL;
#undef IS
}
/* -- end of every GPU's device node -- */

/* review 2 follow-up: the variable of an --env-file (docker's and podman's format: NAME=VALUE
 * or NAME a line, leading blanks ignored, '#' a comment) that names GPUs, or NULL. The user's
 * own regular file, read as they run gpuctl.
 * review 4: read as the engines read it, or a line they take is missed: the whole file (it was
 * its first 256 KiB: a variable past them went by), a NUL byte a character like any (it ended
 * the reading), the blanks docker takes out before a line's name Unicode's (NBSP, U+2000...,
 * a BOM; only ASCII ones were), podman's "export NAME=V" and its NAME* (host variables by
 * prefix). A line over 1 MiB ends the reading: both engines refuse a line over 64 KiB. */
static size_t unicode_blank(const unsigned char *p, size_t n)
{
	if (n && strchr(" \t\n\v\f\r", p[0]) && p[0])
		return 1;
	if (n >= 2 && p[0] == 0xC2 && (p[1] == 0x85 || p[1] == 0xA0))
		return 2;
	if (n >= 3 && ((p[0] == 0xE1 && p[1] == 0x9A && p[2] == 0x80) ||
		       (p[0] == 0xE2 && p[1] == 0x80 && (p[2] <= 0x8A || p[2] == 0xA8 ||
							 p[2] == 0xA9 || p[2] == 0xAF)) ||
		       (p[0] == 0xE2 && p[1] == 0x81 && p[2] == 0x9F) ||
		       (p[0] == 0xE3 && p[1] == 0x80 && p[2] == 0x80) ||
		       (p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF)))   /* the BOM */
		return 3;
	return 0;
}

static const char *env_line_gpus(const char *line, size_t len)
{
	const unsigned char *p = (const unsigned char *)line;
	size_t b;
	while (len && (b = unicode_blank(p, len)))
		p += b, len -= b;
	if (!len || *p == '#')
		return NULL;
	if (len > 7 && !memcmp(p, "export", 6) && (p[6] == ' ' || p[6] == '\t'))
		for (p += 6, len -= 6; len && (*p == ' ' || *p == '\t'); p++, len--)
			;
	const unsigned char *eq = memchr(p, '=', len);
	size_t kn = eq ? (size_t)(eq - p) : len;
	return env_names_gpus((const char *)p, kn, !eq);
}

static const char *env_file_gpus(const char *path)
{
	/* A regular file only: a pipe (`--env-file <(...)`) read here would be read empty by the
	 * client, and a device's open may act (a watchdog's) */
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return NULL;  /* the client says what is wrong with it */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	enum { LINE_MAX_BYTES = 1 << 20 };
	char *buf = malloc(LINE_MAX_BYTES + 1);
	const char *found = NULL;
	size_t have = 0;
	ssize_t r = 1;
	while (buf && !found && (r > 0 || have)) {
		if (r > 0 && have < LINE_MAX_BYTES) {
			r = read(fd, buf + have, LINE_MAX_BYTES - have);
			if (r > 0) {
				have += (size_t)r;
				continue;  /* fill the buffer, or reach the file's end */
			}
		}
		/* whole lines in buf[0, have); at the file's end the last may lack its newline */
		size_t at = 0;
		char *nl;
		while (!found && (nl = memchr(buf + at, '\n', have - at))) {
			found = env_line_gpus(buf + at, (size_t)(nl - buf) - at);
			at = (size_t)(nl - buf) + 1;
		}
		if (!found && r <= 0) {   /* the end: the last line, then done */
			if (at < have)
				found = env_line_gpus(buf + at, have - at);
			break;
		}
		if (!at)
			break;             /* a line over 1 MiB: the engines refuse the file */
		memmove(buf, buf + at, have - at);
		have -= at;
	}
	free(buf);
	close(fd);
	return found;
}


/* A value word that is a whole flag itself ("--privileged", "--volume=/dev:/dev") is judged as
 * one too: a boolean flag missing from the table takes the next word as its value, and a
 * refusal must not hang on the table being complete. At worst a value spelled so is refused
 * (`-e --privileged` is no one's intent). */
static void value_word(struct runctr *rc, const char *w)
{
	if (w[0] != '-' || w[1] != '-' || !w[2])
		return;
	const char *name = w + 2, *eq = strchr(name, '=');
	size_t n = eq ? (size_t)(eq - name) : strlen(name);
	const char *why = exposes(name, n, eq ? eq + 1 : NULL, eq ? eq + 1 : NULL);
	if (why && !rc->all_nodes)
		rc->all_nodes = w, rc->all_why = why;
	if (eq && ((n == 4 && !strncmp(name, "gpus", 4)) || names_gpus(name, n, eq + 1)))
		rc->user_gpus = w, rc->user_gpus_val = NULL;
}

static const char *base_name_of(const char *s)
{
	const char *slash = strrchr(s, '/');
	return slash ? slash + 1 : s;
}

void runctr_detect(char **argv, struct runctr *rc)
{
	*rc = (struct runctr){0};
	if (!argv || !argv[0])
		return;
	const char *prog = base_name_of(argv[0]);
	enum runctr_kind kind = !strcmp(prog, "docker") ? RUNCTR_DOCKER
			      : !strcmp(prog, "podman") ? RUNCTR_PODMAN : RUNCTR_NONE;
	if (kind == RUNCTR_NONE)
		return;
	size_t i = 1;
	/* the client's own global flags come before the command: "docker --context x run" */
	while (argv[i] && argv[i][0] == '-') {
		/* review 2: --tls and --tlsverify take no value either; read as taking one, "docker
		 * --tls run --gpus all img" was no container run, and kept all its GPUs */
		static const char *const bool_global[] = {"debug", "tls", "tlsverify", "syslog",
							  "noout", "transient-store", NULL};
		const char *g = argv[i] + 1 + (argv[i][1] == '-');
		bool value = strchr(argv[i], '=') == NULL && strcmp(argv[i], "-D") &&
			     strcmp(argv[i], "-r") && strncmp(argv[i], "--remote", 8) &&
			     !(argv[i][1] == '-' && in(bool_global, g, strlen(g)));
		i += value && argv[i + 1] ? 2 : 1;
	}
	if (argv[i] && !strcmp(argv[i], "container"))
		i++;
	if (!argv[i] || strcmp(argv[i], "run"))
		return;
	rc->kind = kind;
	rc->run_at = i;
	for (i++; argv[i]; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--"))
			break;
		if (a[0] != '-' || !a[1])
			break;  /* the image: what follows is the container's command */
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t n = eq ? (size_t)(eq - name) : strlen(name);
			if ((n == 4 && !strncmp(name, "gpus", 4)) ||
			    names_gpus(name, n, eq ? eq + 1 : argv[i + 1]))
				rc->user_gpus = a, rc->user_gpus_val = eq ? NULL : argv[i + 1];
			const char *file = eq ? eq + 1 : argv[i + 1];
			const char *var = n == 8 && !strncmp(name, "env-file", 8) && file
					  ? env_file_gpus(file) : NULL;
			if (var)
				rc->user_gpus = a, rc->user_gpus_val = NULL, rc->gpus_var = var,
				rc->gpus_file = file;
			const char *why = exposes(name, n, eq ? eq + 1 : argv[i + 1], eq ? eq + 1 : NULL);
			if (why && !rc->all_nodes)
				rc->all_nodes = a, rc->all_why = why;
			if (n == 6 && !strncmp(name, "detach", 6))
				rc->detached = !eq || strcmp(eq + 1, "false");
			if (n == 7 && !strncmp(name, "cidfile", 7))
				rc->cidfile = eq ? eq + 1 : argv[i + 1];
			if (!eq && !in(bool_long, name, n) && argv[i + 1])
				value_word(rc, argv[++i]);
			continue;
		}
		for (const char *c = a + 1; *c; c++) {
			if (*c == 'd')
				rc->detached = true;
			if (!strchr(bool_short, *c)) {
				/* "-vX", "-v=X" (pflag's) and "-v X" */
				const char *v = c[1] == '=' ? c + 2 : c[1] ? c + 1 : argv[i + 1];
				if (names_gpus(c, 1, v))
					rc->user_gpus = a, rc->user_gpus_val = c[1] ? NULL : v;
				const char *why = exposes(c, 1, v, NULL);
				if (why && !rc->all_nodes)
					rc->all_nodes = a, rc->all_why = why;
				if (!c[1] && argv[i + 1])
					value_word(rc, argv[++i]);  /* "-e X": the next word */
				break;
			}
		}
	}
}
