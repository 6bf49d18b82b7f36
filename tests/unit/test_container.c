/* test_container.c: a process's container and pod from its /proc/PID/cgroup (src/machine/
 * container.c): one recorded layout per runtime, cgroup driver and version
 * (tests/fake/cgroup/containers), the near misses a user could make, and the runtime API's
 * answers read with bounds (src/machine/runtime.c). */
#include "machine/container.h"
#include "machine/runtime.h"
#include "base/jsonscan.h"
#include "cmd/runctr.h"
#include "lease/choose.h"
#include "machine/gpu.h"
#include "tap.h"
#include "base/util.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static void layouts(void)
{
	char *cases = read_file("tests/fake/cgroup/containers", NULL);
	CHECK(cases != NULL);
	int n = 0;
	for (char *line = cases, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (line[0] == '#' || !line[0])
			continue;
		char *f[5] = {line};
		size_t k = 1;
		for (char *t = line; k < 5 && (t = strchr(t, '\t')); k++) {
			*t++ = '\0';
			f[k] = t;
		}
		if (k != 5) {
			CHECK(!"tests/fake/cgroup/containers: FILE RUNTIME ID POD OWNER");
			continue;
		}
		char path[256], what[512];
		snprintf(path, sizeof path, "tests/fake/cgroup/%s", f[0]);
		char *text = read_file(path, NULL);
		struct ctr_ref r;
		bool got = text && ctr_from_cgroup(text, &r);
		bool want = strcmp(f[1], "-") != 0;
		bool ok = text && got == want;
		if (ok && want) {
			ok = !strcmp(ctr_runtime_name(r.runtime), f[1]) && !strcmp(r.id, f[2]) &&
			     !strcmp(r.pod_uid, strcmp(f[3], "-") ? f[3] : "") &&
			     (strcmp(f[4], "-") ? r.rootless && r.owner_uid == (uid_t)atoi(f[4]) : !r.rootless);
		}
		snprintf(what, sizeof what, "cgroup %s: %s %.12s pod %s (got %s %.12s pod %s%s)", f[0],
			 f[1], f[2], f[3], got ? ctr_runtime_name(r.runtime) : "none", got ? r.id : "",
			 got && r.pod_uid[0] ? r.pod_uid : "-", got && r.rootless ? " rootless" : "");
		tap_check(ok, what, __FILE__, __LINE__);
		free(text);
		n++;
	}
	CHECK(n >= 25);
	free(cases);
}

#define S(lit) lit, strlen(lit)

/* The bounded reader: the fields wanted, whatever surrounds them; nothing for what is not JSON. */
static void scan(void)
{
	static const char inspect[] =
		"{\"Id\":\"x\",\"Config\":{\"Env\":[\"Name=no\",{\"Name\":\"no\"}],\"Labels\":"
		"{\"io.kubernetes.pod.name\":\"web-0\",\"io.kubernetes.pod.namespace\":\"pr\\u00e9d\"}},"
		"\"State\":{\"Running\":true,\"Pid\":4242},\"Name\":\"/tr\\\"ain\\n\"}";
	struct ctr_info x = {0};
	long long pid = -1;
	ctr_parse_inspect(inspect, sizeof inspect - 1, &x, &pid);
	CHECK(!strcmp(x.name, "tr\"ain\n") && !strcmp(x.pod, "web-0") && pid == 4242);
	CHECK(!strcmp(x.ns, "pr\xc3\xa9" "d"));
	char out[16];
	const char *const name[] = {"Name"};
	/* cut at the end of the text: absent, never read past it */
	for (size_t n = 0; n < sizeof inspect - 1; n++) {
		char *copy = xmalloc(n + 1);
		memcpy(copy, inspect, n);
		copy[n] = 'x';
		bool got = jsonscan_str(copy, n, name, 1, out, sizeof out);
		if (got && n < sizeof inspect - 2) {
			CHECK(!"a truncated text gave a value");
			free(copy);
			break;
		}
		free(copy);
	}
	/* deep nesting is refused, not recursed into without end */
	struct strbuf deep = {0};
	sb_adds(&deep, "{\"a\":");
	for (int i = 0; i < 100000; i++)
		sb_addc(&deep, '[');
	CHECK(!jsonscan_str(deep.buf, deep.len, name, 1, out, sizeof out));
	sb_free(&deep);
	/* a value cut to the buffer; a wrong type is absent; a NUL escape is not a terminator */
	CHECK(jsonscan_str(S("{\"Name\":\"abcdefghijklmnopqrstuvwxyz\"}"), name, 1, out, 8) &&
	      !strcmp(out, "abcdefg"));
	CHECK(!jsonscan_str(S("{\"Name\":12}"), name, 1, out, sizeof out));
	CHECK(jsonscan_str(S("{\"Name\":\"a\\u0000b\"}"), name, 1, out, sizeof out) &&
	      !strcmp(out, "a\xef\xbf\xbd" "b"));
	CHECK(!jsonscan_str(S("[\"Name\"]"), name, 1, out, sizeof out));
	long long v;
	CHECK(!jsonscan_int(S("{\"Name\":1.5}"), name, 1, &v));
	CHECK(!jsonscan_int(S("{\"Name\":1234567890123456789012}"), name, 1, &v));
	/* review 2: 19 digits are refused before they are summed (9999999999999999999 overflowed
	 * a long long: undefined, and `make asan` stops on it); 18 are read */
	CHECK(!jsonscan_int(S("{\"Name\":9999999999999999999}"), name, 1, &v));
	CHECK(!jsonscan_int(S("{\"Name\":-9223372036854775808}"), name, 1, &v));
	CHECK(jsonscan_int(S("{\"Name\":-999999999999999999}"), name, 1, &v) &&
	      v == -999999999999999999LL);
}

/* docker/podman run read far enough: detached or not, the user's GPU flags, where `run` is. */
static void detect(void)
{
	static const struct {
		const char *argv;
		int kind;
		bool detached, gpus, nodes;
	} cases[] = {
		{"docker run -d img", RUNCTR_DOCKER, true, false, false},
		{"/usr/bin/docker container run -dit --name x img", RUNCTR_DOCKER, true, false, false},
		{"docker --context lab run --detach=true img", RUNCTR_DOCKER, true, false, false},
		{"docker run --detach=false img", RUNCTR_DOCKER, false, false, false},
		{"docker run -e -d img", RUNCTR_DOCKER, false, false, false},       /* -e takes "-d" */
		{"docker run --name -d img", RUNCTR_DOCKER, false, false, false},
		{"docker run img -d", RUNCTR_DOCKER, false, false, false},           /* the container's -d */
		{"docker run --rm -it img python -d", RUNCTR_DOCKER, false, false, false},
		{"docker run --gpus all img", RUNCTR_DOCKER, false, true, false},
		{"podman run -d --device nvidia.com/gpu=0 img", RUNCTR_PODMAN, true, true, false},
		{"podman run -d --device /dev/fuse img", RUNCTR_PODMAN, true, false, false},
		/* review 2: GPUs given past the lease by other words, or hidden from the reader */
		{"docker --tls run --gpus all img", RUNCTR_DOCKER, false, true, false},
		{"docker --tlsverify --debug run -d img", RUNCTR_DOCKER, true, false, false},
		{"docker run --use-api-socket --gpus all img", RUNCTR_DOCKER, false, true, false},
		{"docker run --device /dev/nvidia1 img", RUNCTR_DOCKER, false, true, true},
		{"docker run --device=/dev/nvidia0:/dev/nvidia0 img", RUNCTR_DOCKER, false, true, true},
		{"docker run --device /dev/nvidiactl --device=/dev/nvidia-uvm img", RUNCTR_DOCKER, false,
		 false, false},
		{"docker run -e NVIDIA_VISIBLE_DEVICES=all img", RUNCTR_DOCKER, false, true, false},
		/* review 4: a CDI annotation (the NVIDIA runtime's CDI mode reads them); others pass */
		{"docker run --annotation cdi.k8s.io/x=nvidia.com/gpu=all img", RUNCTR_DOCKER, false, true, false},
		{"podman run --annotation=cdi.k8s.io/gpu=nvidia.com/gpu=0 img", RUNCTR_PODMAN, false, true, false},
		{"docker run --annotation org.example/a=b img", RUNCTR_DOCKER, false, false, false},
		{"docker run -deNVIDIA_VISIBLE_DEVICES=all img", RUNCTR_DOCKER, true, true, false},
		{"docker run --env=NVIDIA_VISIBLE_DEVICES=all img", RUNCTR_DOCKER, false, true, false},
		{"docker run -e NVIDIA_DRIVER_CAPABILITIES=all img", RUNCTR_DOCKER, false, false, false},
		{"podman run --rootfs --device nvidia.com/gpu=all /srv/root", RUNCTR_PODMAN, false, true, false},
		{"docker run -e=NVIDIA_VISIBLE_DEVICES=all img", RUNCTR_DOCKER, false, true, false}, /* pflag's -e=V */
		{"docker run -e CUDA_VISIBLE_DEVICES=0 img", RUNCTR_DOCKER, false, true, false},
		{"podman run --env=CUDA_VISIBLE_DEVICES img", RUNCTR_PODMAN, false, true, false},
		{"docker run -e CUDA_VISIBLE_DEVICES_OF_MINE=0 img", RUNCTR_DOCKER, false, false, false},
		/* review 2 follow-up: words that give every GPU's device node (nodes; '~' is a space) */
		{"docker run --privileged img", RUNCTR_DOCKER, false, false, true},
		{"docker run --privileged=true -d img", RUNCTR_DOCKER, true, false, true},
		{"docker run --privileged=T img", RUNCTR_DOCKER, false, false, true},
		{"docker run --privileged=false img", RUNCTR_DOCKER, false, false, false},
		{"docker run --privileged=0 img", RUNCTR_DOCKER, false, false, false},
		{"docker run -v /dev:/dev img", RUNCTR_DOCKER, false, false, true},
		{"docker run -v/dev:/dev img", RUNCTR_DOCKER, false, false, true},
		{"docker run -itv/dev:/dev img", RUNCTR_DOCKER, false, false, true},
		{"docker run -dv=/dev:/dev img", RUNCTR_DOCKER, true, false, true},
		{"docker run --volume=/dev/:/dev:ro img", RUNCTR_DOCKER, false, false, true},
		{"docker run --volume //dev/./:/host-dev img", RUNCTR_DOCKER, false, false, true},
		{"docker run -v /dev/shm/..:/d img", RUNCTR_DOCKER, false, false, true},
		{"docker run -v /:/host img", RUNCTR_DOCKER, false, false, true},
		{"podman run -v /dev:/dev:rslave img", RUNCTR_PODMAN, false, false, true},
		{"docker run -v /dev/shm:/dev/shm -v /dev/log:/dev/log img", RUNCTR_DOCKER, false, false, false},
		{"podman run -v /dev/nvidia3:/dev/nvidia3 img", RUNCTR_PODMAN, false, false, true},
		{"podman run --mount type=bind,src=/dev/nvidia-caps,dst=/dev/nvidia-caps img", RUNCTR_PODMAN, false, false, true},
		{"docker run -v /dev/nvidiactl:/dev/nvidiactl -v /dev/nvidia-uvm:/dev/nvidia-uvm img", RUNCTR_DOCKER, false, false, false},
		{"docker run -v /dev img", RUNCTR_DOCKER, false, false, false},       /* the container's */
		{"docker run -v dev:/dev img", RUNCTR_DOCKER, false, false, false},   /* a named volume */
		{"docker run --mount type=bind,source=/dev,target=/dev img", RUNCTR_DOCKER, false, false, true},
		{"docker run --mount=type=bind,SRC=/dev/,dst=/dev img", RUNCTR_DOCKER, false, false, true},
		{"docker run --mount type=bind,\"source=/dev\",target=/d img", RUNCTR_DOCKER, false, false, true},
		{"docker run --mount type=bind,src=/dev/shm,dst=/dev/shm img", RUNCTR_DOCKER, false, false, false},
		{"podman run --mount type=glob,src=/dev/nvidia*,dst=/dev img", RUNCTR_PODMAN, false, false, true},
		{"docker run --device /dev img", RUNCTR_DOCKER, false, false, true},
		{"podman run --device=/dev/:/dev img", RUNCTR_PODMAN, false, false, true},
		{"docker run --device /dev/fuse --device /dev/snd img", RUNCTR_DOCKER, false, false, false},
		{"docker run --device-cgroup-rule=c~195:*~rmw img", RUNCTR_DOCKER, false, false, true},
		{"docker run --device-cgroup-rule c~195:1~rw img", RUNCTR_DOCKER, false, false, true},
		{"docker run --device-cgroup-rule a~*:*~rwm img", RUNCTR_DOCKER, false, false, true},
		{"docker run --device-cgroup-rule c~*:*~rwm img", RUNCTR_DOCKER, false, false, true},
		{"docker run --device-cgroup-rule c~195:255~rw img", RUNCTR_DOCKER, false, false, false},
		{"docker run --device-cgroup-rule c~10:200~rwm img", RUNCTR_DOCKER, false, false, false},
		{"docker run --device-cgroup-rule b~195:*~rw img", RUNCTR_DOCKER, false, false, false},
		{"docker run img --privileged -v /dev:/dev", RUNCTR_DOCKER, false, false, false}, /* the container's */
		{"docker run --rm -e --privileged img", RUNCTR_DOCKER, false, false, true}, /* judged too */
		{"docker run --a-new-bool --privileged img", RUNCTR_DOCKER, false, false, true},
		{"docker run --a-new-bool --volume=/dev:/dev img", RUNCTR_DOCKER, false, false, true},
		{"docker run --a-new-bool --gpus=all img", RUNCTR_DOCKER, false, true, false},
		{"docker run --a-new-bool --rm img", RUNCTR_DOCKER, false, false, false},
		{"docker run --label -v=/dev:/dev img", RUNCTR_DOCKER, false, false, false}, /* a value */
		{"docker ps", RUNCTR_NONE, false, false, false},
		{"dockerx run -d img", RUNCTR_NONE, false, false, false},
		{"python run -d", RUNCTR_NONE, false, false, false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *copy = xstrdup(cases[i].argv), *argv[16], *save = NULL;
		size_t n = 0;
		for (char *t = strtok_r(copy, " ", &save); t && n < 15; t = strtok_r(NULL, " ", &save))
			argv[n++] = t;
		argv[n] = NULL;
		for (size_t j = 0; j < n; j++)
			for (char *t = argv[j]; (t = strchr(t, '~'));)
				*t = ' ';
		struct runctr rc;
		runctr_detect(argv, &rc);
		char what[160];
		snprintf(what, sizeof what, "runctr_detect: %s", cases[i].argv);
		tap_check((int)rc.kind == cases[i].kind && rc.detached == cases[i].detached &&
			  (rc.user_gpus != NULL) == cases[i].gpus && (rc.all_nodes != NULL) == cases[i].nodes,
			  what, __FILE__, __LINE__);
		free(copy);
	}
	/* a link to /dev is /dev */
	char dir[] = "/tmp/gpuctl-unit-dev.XXXXXX", link[64], vol[160];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(link, sizeof link, "%s/d", dir);
	CHECK(symlink("/dev", link) == 0);
	snprintf(vol, sizeof vol, "%s:/d", link);
	char *lv[] = {"docker", "run", "-v", vol, "img", NULL};
	struct runctr lr;
	runctr_detect(lv, &lr);
	CHECK(lr.all_nodes != NULL && !strcmp(lr.all_why, "the host's /dev"));
	char cwd[4096];
	CHECK(getcwd(cwd, sizeof cwd) != NULL);
	CHECK(chdir("/dev/shm") == 0 || chdir("/dev/pts") == 0);
	char *rv[] = {"docker", "run", "--mount", "type=bind,source=..,target=/d", "-v", "dev:/dev", "img", NULL};
	runctr_detect(rv, &lr);   /* a relative source is the client's cwd's */
	CHECK(lr.all_nodes != NULL && !strcmp(lr.all_nodes, "--mount"));
	CHECK(chdir("/") == 0);
	char *nv[] = {"docker", "run", "-v", "dev:/dev", "--mount", "type=volume,src=dev,dst=/d", "img", NULL};
	runctr_detect(nv, &lr);   /* named volumes, whatever the cwd holds */
	CHECK(lr.kind == RUNCTR_DOCKER && lr.all_nodes == NULL);
	CHECK(chdir(cwd) == 0);
	unlink(link);
	/* review 2 follow-up: an --env-file's variables that name GPUs */
	char ef[96];
	snprintf(ef, sizeof ef, "%s/env", dir);
	FILE *f = fopen(ef, "w");
	CHECK(f != NULL);
	fputs("# NVIDIA_VISIBLE_DEVICES=all\nA=1\n  NVIDIA_VISIBLE_DEVICES=all\n", f);
	fclose(f);
	char *e1[] = {"docker", "run", "--env-file", ef, "img", NULL};
	char why[512];
	struct gpu g0 = {0};
	struct gpu_set set0 = {.ngpus = 1, .gpus = &g0};
	struct grant g = {.set = &set0, .n = 1};
	runctr_detect(e1, &lr);
	CHECK(lr.user_gpus && !runctr_argv(&lr, e1, &g, why, sizeof why) &&
	      strstr(why, "(NVIDIA_VISIBLE_DEVICES in ") && strstr(why, "leave NVIDIA_VISIBLE_DEVICES out of that file"));
	f = fopen(ef, "w");
	fputs("CUDA_VISIBLE_DEVICES\n", f);   /* the host's value */
	fclose(f);
	snprintf(vol, sizeof vol, "--env-file=%s", ef);
	char *e2[] = {"podman", "run", vol, "img", NULL};
	runctr_detect(e2, &lr);
	CHECK(lr.user_gpus && !strcmp(lr.gpus_var, "CUDA_VISIBLE_DEVICES"));
	f = fopen(ef, "w");
	fputs("# CUDA_VISIBLE_DEVICES=0\nCUDA_VISIBLE_DEVICES_X=1\nNVIDIA_DRIVER_CAPABILITIES=all", f);
	fclose(f);
	runctr_detect(e2, &lr);
	CHECK(!lr.user_gpus);
	/* review 4: lines the engines read that were missed: past 256 KiB, after a NUL byte,
	 * behind docker's Unicode blanks (NBSP, a BOM), podman's "export" and NAME* */
	static const char *const hidden[] = {
		"A=1\n\0\nNVIDIA_VISIBLE_DEVICES=all\n", "\xc2\xa0NVIDIA_VISIBLE_DEVICES=all\n",
		"\xef\xbb\xbf" "CUDA_VISIBLE_DEVICES=0\n", "export NVIDIA_VISIBLE_DEVICES=all\n",
		"\t NVIDIA_*\n", "CUDA*", "*\r\n", NULL,
	};
	for (size_t h = 0; hidden[h]; h++) {
		f = fopen(ef, "w");
		size_t hl = strlen(hidden[h]);
		if (h == 0)
			hl += strlen(hidden[h] + hl + 1) + 1;   /* past its NUL */
		fwrite(hidden[h], 1, hl, f);
		fclose(f);
		runctr_detect(e2, &lr);
		CHECK(lr.user_gpus && lr.gpus_var);
	}
	f = fopen(ef, "w");
	for (int l = 0; l < 300 * 1024 / 32; l++)
		fputs("# a comment of 32 bytes, padded\n", f);
	fputs("NVIDIA_VISIBLE_DEVICES=all\n", f);
	fclose(f);
	runctr_detect(e2, &lr);
	CHECK(lr.user_gpus && !strcmp(lr.gpus_var, "NVIDIA_VISIBLE_DEVICES"));
	f = fopen(ef, "w");
	fputs("\xc2\xa0# NVIDIA_VISIBLE_DEVICES=all\nexport A=1\nNVX*\nCUDA_VISIBLE_DEVICES_X*\n", f);
	fclose(f);
	runctr_detect(e2, &lr);
	CHECK(!lr.user_gpus);
	/* review 4: podman's -e takes the blanks before a name out, and NAME* (no value) takes
	 * the host's variables of that prefix; its -e words are a map, the last one wins */
	static const char *const envs[] = {" NVIDIA_VISIBLE_DEVICES=all", "\tCUDA_VISIBLE_DEVICES=0",
					   "NVIDIA_*", "*", "CUDA_VIS*", " N*", NULL};
	for (size_t h = 0; envs[h]; h++) {
		char ew[64];
		snprintf(ew, sizeof ew, "--env=%s", envs[h]);
		char *pe[] = {"podman", "run", "-e", (char *)envs[h], "img", NULL};
		char *pe2[] = {"podman", "run", ew, "img", NULL};
		runctr_detect(pe, &lr);
		CHECK(lr.user_gpus != NULL);
		runctr_detect(pe2, &lr);
		CHECK(lr.user_gpus != NULL);
	}
	static const char *const fine[] = {"NVIDIA_DRIVER_CAPABILITIES=all", "NV*=1", "CUDA_HOME",
					   "HOME*", "X=NVIDIA_VISIBLE_DEVICES", NULL};
	for (size_t h = 0; fine[h]; h++) {
		char *pe[] = {"podman", "run", "-e", (char *)fine[h], "img", NULL};
		runctr_detect(pe, &lr);
		CHECK(lr.kind == RUNCTR_PODMAN && lr.user_gpus == NULL);
	}
	char *e3[] = {"docker", "run", "--env-file", "/nonexistent/env", "img", NULL};
	runctr_detect(e3, &lr);
	CHECK(!lr.user_gpus);   /* the client says it cannot read it */
	/* a pipe (--env-file <(...)) is left for the client to read: read here it would be empty there */
	int pp[2];
	CHECK(pipe(pp) == 0);
	CHECK(write(pp[1], "NVIDIA_VISIBLE_DEVICES=all\n", 27) == 27);
	char fdp[32];
	snprintf(fdp, sizeof fdp, "/dev/fd/%d", pp[0]);
	char *e4[] = {"docker", "run", "--env-file", fdp, "img", NULL};
	runctr_detect(e4, &lr);
	char left[64];
	CHECK(fcntl(pp[0], F_SETFL, O_NONBLOCK) == 0);   /* read empty: fails, not hangs */
	CHECK(!lr.user_gpus && read(pp[0], left, sizeof left) == 27);
	close(pp[0]);
	close(pp[1]);
	unlink(ef);
	rmdir(dir);
}

/* Whether a holds the words f v, one after the other, before its word `stop`. */
static bool pair(char **a, const char *f, const char *v, const char *stop)
{
	for (size_t i = 0; a && a[i] && a[i + 1] && strcmp(a[i], stop); i++)
		if (!strcmp(a[i], f) && !strcmp(a[i + 1], v))
			return true;
	return false;
}

static size_t words(char **a)
{
	size_t n = 0;
	while (a && a[n])
		n++;
	return n;
}

/* The devices in each runtime's syntax, right after `run`, then the lease's variables (-e), then
 * our --cidfile; the user's words after them. */
static void devices(void)
{
	struct gpu gpus[3] = {0};
	snprintf(gpus[0].uuid, sizeof gpus[0].uuid, "GPU-aaaa");
	snprintf(gpus[2].uuid, sizeof gpus[2].uuid, "GPU-cccc");
	struct gpu_set set = {.ngpus = 3, .gpus = gpus};
	struct grant g = {.set = &set, .n = 2, .pos = {0, 2}};
	char why[512], *d[] = {"docker", "run", "--rm", "img", "nvidia-smi", NULL};
	struct runctr rc;
	runctr_detect(d, &rc);
	char **a = runctr_argv(&rc, d, &g, why, sizeof why);
	size_t n = words(a);
	CHECK(a && !strcmp(a[1], "run") && !strcmp(a[2], "--gpus") && !strcmp(a[3], "\"device=GPU-aaaa,GPU-cccc\"") &&
	      !strcmp(a[n - 5], "--cidfile") && !strcmp(a[n - 4], rc.path) && !strcmp(a[n - 3], "--rm") &&
	      !strcmp(a[n - 2], "img") && !strcmp(a[n - 1], "nvidia-smi"));
	/* review 2 follow-up: CUDA inside sees the lease's GPUs by UUID whatever nodes the
	 * container has; docker's --gpus sets NVIDIA_VISIBLE_DEVICES itself */
	CHECK(pair(a, "-e", "CUDA_VISIBLE_DEVICES=GPU-aaaa,GPU-cccc", "img"));
	CHECK(pair(a, "-e", "GPUCTL_LEASE_GPUS=GPU-aaaa,GPU-cccc", "img"));
	CHECK(pair(a, "-e", "CUDA_DEVICE_ORDER=PCI_BUS_ID", "img"));
	for (size_t i = 0; i < n; i++)
		CHECK(strncmp(a[i], "NVIDIA_VISIBLE_DEVICES=", 23));
	runctr_argv_free(&rc, a);
	runctr_cleanup(&rc);
	char *p[] = {"podman", "run", "-it", "img", NULL};
	runctr_detect(p, &rc);
	a = runctr_argv(&rc, p, &g, why, sizeof why);
	n = words(a);
	CHECK(a && !strcmp(a[2], "--device") && !strcmp(a[3], "nvidia.com/gpu=GPU-aaaa") &&
	      !strcmp(a[4], "--device") && !strcmp(a[5], "nvidia.com/gpu=GPU-cccc") &&
	      !strcmp(a[n - 4], "--cidfile") && !strcmp(a[n - 2], "-it") && !strcmp(a[n - 1], "img"));
	CHECK(pair(a, "-e", "CUDA_VISIBLE_DEVICES=GPU-aaaa,GPU-cccc", "img"));
	CHECK(pair(a, "-e", "NVIDIA_VISIBLE_DEVICES=GPU-aaaa,GPU-cccc", "img"));
	runctr_argv_free(&rc, a);
	runctr_cleanup(&rc);
	/* the user's own cidfile is used, none added; the user's words after ours are theirs
	 * (review 2 follow-up: runctr_argv_free freed a user's --device value after our pairs) */
	char *c[] = {"docker", "run", "--device", "/dev/fuse", "--cidfile", "/tmp/mine", "img", NULL};
	runctr_detect(c, &rc);
	a = runctr_argv(&rc, c, &g, why, sizeof why);
	n = words(a);
	CHECK(a && !strcmp(rc.cidfile, "/tmp/mine") && pair(a, "--cidfile", "/tmp/mine", "img") &&
	      pair(a, "--device", "/dev/fuse", "img") && !strcmp(a[n - 1], "img") && !rc.dir[0]);
	runctr_argv_free(&rc, a);
	char *u[] = {"docker", "run", "--gpus=all", "img", NULL};
	runctr_detect(u, &rc);
	CHECK(!runctr_argv(&rc, u, &g, why, sizeof why) && strstr(why, "(--gpus=all)"));
	char *ue[] = {"docker", "run", "-e", "NVIDIA_VISIBLE_DEVICES=all", "img", NULL};
	runctr_detect(ue, &rc);   /* the flag and its value, named */
	CHECK(!runctr_argv(&rc, ue, &g, why, sizeof why) &&
	      strstr(why, "(-e NVIDIA_VISIBLE_DEVICES=all): gpuctl gives the container the lease's GPUs; leave it out"));
	/* a share's variables reach the container; the profile's stay the client's */
	char *prof[] = {"MY_PROFILE_VAR=1", NULL};
	struct grant sg = {.set = &set, .n = 1, .pos = {2}, .mem_mib = 1000, .mem_total_mib = 80000,
			   .profile_env = prof};
	runctr_detect(d, &rc);
	a = runctr_argv(&rc, d, &sg, why, sizeof why);
	CHECK(pair(a, "-e", "GPUCTL_LEASE_MEM=1000", "img") &&
	      pair(a, "-e", "GPUCTL_LEASE_MEM_FRACTION=0.012", "img") &&
	      pair(a, "-e", "XLA_PYTHON_CLIENT_MEM_FRACTION=0.012", "img") &&
	      pair(a, "-e", "TF_FORCE_GPU_ALLOW_GROWTH=true", "img") &&
	      pair(a, "-e", "CUDA_VISIBLE_DEVICES=GPU-cccc", "img") &&
	      !pair(a, "-e", "MY_PROFILE_VAR=1", "img"));
	runctr_argv_free(&rc, a);
	runctr_cleanup(&rc);
	/* review 2: a MIG lease's container gets its instance, never the whole GPU (with every
	 * other user's instances on it) */
	struct grant mg = {.set = &set, .n = 1, .pos = {0}};
	snprintf(mg.mig_uuid, sizeof mg.mig_uuid, "MIG-1111");
	runctr_detect(d, &rc);
	a = runctr_argv(&rc, d, &mg, why, sizeof why);
	CHECK(a && !strcmp(a[2], "--gpus") && !strcmp(a[3], "\"device=MIG-1111\"") &&
	      pair(a, "-e", "CUDA_VISIBLE_DEVICES=MIG-1111", "img"));
	runctr_argv_free(&rc, a);
	runctr_cleanup(&rc);
	runctr_detect(p, &rc);
	a = runctr_argv(&rc, p, &mg, why, sizeof why);
	CHECK(a && !strcmp(a[2], "--device") && !strcmp(a[3], "nvidia.com/gpu=MIG-1111") &&
	      pair(a, "-e", "NVIDIA_VISIBLE_DEVICES=MIG-1111", "img") &&
	      pair(a, "-e", "CUDA_VISIBLE_DEVICES=MIG-1111", "img"));
	runctr_argv_free(&rc, a);
	runctr_cleanup(&rc);
	/* every GPU's device node: refused, saying what to do instead */
	char *v[] = {"docker", "run", "-itv/dev:/dev", "img", NULL};
	runctr_detect(v, &rc);
	CHECK(!runctr_argv(&rc, v, &g, why, sizeof why) && strstr(why, "-itv/dev:/dev gives the container the host's /dev") &&
	      strstr(why, "Leave it out"));
}

/* The CRI runtimes' OCI bundles: a pod's names from their annotations (tests/fake/oci/, the
 * annotation keys containerd and CRI-O write; made by hand, not captured), nothing from the
 * environment or nested labels. */
static void oci(void)
{
	static const struct {
		const char *file;
		unsigned runtime;
		const char *name, *pod, *ns;
	} cases[] = {
		{"tests/fake/oci/containerd-config.json", CTR_CONTAINERD, "serve", "web-0", "prod"},
		{"tests/fake/oci/crio-config.json", CTR_CRIO, "trainer", "job-7x2k", "ml"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		size_t len;
		char *text = read_file(cases[i].file, &len);
		struct ctr_info x = {0};
		if (text)
			ctr_parse_oci(text, len, cases[i].runtime, &x);
		char what[1024];
		snprintf(what, sizeof what, "%s: %s %s/%s (got %.60s %.60s/%.60s)", cases[i].file, cases[i].name,
			 cases[i].ns, cases[i].pod, x.name, x.ns, x.pod);
		tap_check(text && !strcmp(x.name, cases[i].name) && !strcmp(x.pod, cases[i].pod) &&
			  !strcmp(x.ns, cases[i].ns), what, __FILE__, __LINE__);
		free(text);
	}
}

/* review 2: a rootless runtime's socket lies in its user's directory; one served by another uid
 * (that user's link to root's docker.sock) is not asked: nothing is sent to it. */
static void engine_owner(void)
{
	char dir[] = "/tmp/gpuctl-unit-engine.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s/docker.sock", dir);
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(l, 4) == 0);
	struct strbuf body = {0};
	int status = 0;
	char why[256] = "";
	bool ok = ctr_engine_get(sa.sun_path, (long)getuid() + 1, "/containers/x/json", now_mono() + 5,
				 &body, &status, why, sizeof why);
	CHECK(!ok && strstr(why, "not by its owner"));
	/* nothing was sent: the accepted connection reads end of file at once */
	int a = accept(l, NULL, NULL);
	char buf[16];
	CHECK(a >= 0 && read(a, buf, sizeof buf) == 0);
	close(a);
	/* its owner's is asked (and, unanswered, given up by the deadline) */
	ok = ctr_engine_get(sa.sun_path, (long)getuid(), "/containers/x/json", now_mono() + 0.2,
			    &body, &status, why, sizeof why);
	CHECK(!ok && strstr(why, "no answer in time"));
	sb_free(&body);
	close(l);
	unlink(sa.sun_path);
	rmdir(dir);
}

/* review 2: the system's runtimes are asked before any user's own (rootless) one: a user whose
 * socket is listed first and spends the refresh's whole budget never leaves root's containers
 * unnamed (here the system's socket hangs instead, so the order shows: the rootless entry,
 * added first, is the one left for the next refresh). */
static void resolve_order(void)
{
	char dir[] = "/tmp/gpuctl-unit-order.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s/hang.sock", dir);
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(l, 4) == 0);
	char host[160], none[160];
	snprintf(host, sizeof host, "unix://%s", sa.sun_path);
	snprintf(none, sizeof none, "unix://%s/none.sock", dir);
	setenv("DOCKER_HOST", host, 1);
	setenv("CONTAINER_HOST", none, 1);
	setenv("GPUCTL_CONTAINER_TIMEOUT", "100", 1);
	struct ctr_names *cn = ctr_names_new();
	ctr_names_begin(cn);
	struct ctr_ref user = {.runtime = CTR_PODMAN, .rootless = true, .owner_uid = 4000000000u};
	struct ctr_ref sys = {.runtime = CTR_DOCKER};
	memset(user.id, 'a', CTR_ID_LEN);
	memset(sys.id, 'b', CTR_ID_LEN);
	const struct ctr_info *u = ctr_names_add(cn, &user), *y = ctr_names_add(cn, &sys);
	ctr_names_resolve(cn);
	CHECK(y->asked_at > 0 && !y->named);
	CHECK(u->asked_at == 0);
	ctr_names_end(cn);
	ctr_names_free(cn);
	unsetenv("DOCKER_HOST");
	unsetenv("CONTAINER_HOST");
	unsetenv("GPUCTL_CONTAINER_TIMEOUT");
	close(l);
	unlink(sa.sun_path);
	rmdir(dir);
}

/* A rootless runtime of uid at /run/user/UID/podman/podman.sock (made here, removed by
 * owner_stop): a child of that uid that answers every inspect with name, or never (NULL). */
static bool made_run_user;   /* /run/user was made here: removed at the end */

static pid_t owner_serve(unsigned uid, const char *name)
{
	char d[40], sock[64];
	snprintf(d, sizeof d, "/run/user/%u", uid);
	if (mkdir("/run/user", 0755) == 0)
		made_run_user = true;
	if (mkdir(d, 0700) != 0 || chown(d, uid, uid) != 0)
		return -1;
	snprintf(d, sizeof d, "/run/user/%u/podman", uid);
	if (mkdir(d, 0700) != 0 || chown(d, uid, uid) != 0)
		return -1;
	snprintf(sock, sizeof sock, "%s/podman.sock", d);
	int ready[2];
	if (pipe(ready) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(ready[0]);
		if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
			_exit(1);
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
		int l = socket(AF_UNIX, SOCK_STREAM, 0);
		if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) || listen(l, 16))
			_exit(1);
		close(ready[1]);
		for (;;) {
			int c = accept(l, NULL, NULL);
			if (c < 0 || !name)
				continue;    /* accepted and held open, never answered */
			char req[1024], body[128], ans[512];
			(void)!read(c, req, sizeof req);
			int bn = snprintf(body, sizeof body, "{\"Name\":\"/%s\"}", name);
			int an = snprintf(ans, sizeof ans, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
					  "Content-Length: %d\r\n\r\n%s", bn, body);
			(void)!write(c, ans, (size_t)an);
			close(c);
		}
	}
	close(ready[1]);
	char b;
	(void)!read(ready[0], &b, 1);    /* end of file: listening (or failed) */
	close(ready[0]);
	return pid;
}

static void owner_stop(pid_t pid, unsigned uid)
{
	char p[128];
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	snprintf(p, sizeof p, "/run/user/%u/podman/podman.sock", uid);
	unlink(p);
	snprintf(p, sizeof p, "/run/user/%u/podman", uid);
	rmdir(p);
	snprintf(p, sizeof p, "/run/user/%u", uid);
	rmdir(p);
}

/* review 2 follow-up: users' own runtimes share what is left of the budget, each owner an equal
 * part: one user's runtime that accepts and never answers, asked first, no longer keeps another
 * user's container unnamed (as root: the runtimes run as their users, at their /run/user). */
static void rootless_fair(void)
{
	if (getuid() != 0)
		return;
	const unsigned ua = 3999999001u, ub = 3999999002u;
	pid_t a = owner_serve(ua, NULL), b = owner_serve(ub, "bname");
	CHECK(a > 0 && b > 0);
	setenv("GPUCTL_CONTAINER_TIMEOUT", "2000", 1);   /* the most: a loaded machine */
	struct ctr_names *cn = ctr_names_new();
	ctr_names_begin(cn);
	struct ctr_ref ra = {.runtime = CTR_PODMAN, .rootless = true, .owner_uid = ua};
	struct ctr_ref rb = {.runtime = CTR_PODMAN, .rootless = true, .owner_uid = ub};
	memset(ra.id, 'a', CTR_ID_LEN);
	memset(rb.id, 'b', CTR_ID_LEN);
	const struct ctr_info *xa = ctr_names_add(cn, &ra), *xb = ctr_names_add(cn, &rb);
	ctr_names_resolve(cn);
	CHECK(xa->asked_at > 0 && !xa->named);
	CHECK(xb->named && !strcmp(xb->name, "bname"));
	ctr_names_end(cn);
	ctr_names_free(cn);
	unsetenv("GPUCTL_CONTAINER_TIMEOUT");
	owner_stop(a, ua);
	owner_stop(b, ub);
	if (made_run_user)
		rmdir("/run/user");
}

/* review 2: a container that is not rootless is one only when the cgroup holding its cgroup is
 * root's: a user's delegated subtree (their own directory) may hold any name. */
static void delegated(void)
{
	char root[] = "/tmp/gpuctl-unit-cg.XXXXXX", d[256];
	CHECK(mkdtemp(root) != NULL);
	uid_t other = getuid() ? getuid() : 65534;   /* not root's */
	snprintf(d, sizeof d, "%s/usr", root);
	CHECK(mkdir(d, 0755) == 0);
	if (!getuid())
		CHECK(chown(d, other, other) == 0);
	snprintf(d, sizeof d, "%s/systemd", root);
	CHECK(mkdir(d, 0755) == 0);
	snprintf(d, sizeof d, "%s/systemd/usr", root);
	CHECK(mkdir(d, 0755) == 0);
	if (!getuid())
		CHECK(chown(d, other, other) == 0);
	char id[CTR_ID_LEN + 1], text[512];
	memset(id, 'c', CTR_ID_LEN);
	id[CTR_ID_LEN] = '\0';
	struct ctr_ref r;
	snprintf(text, sizeof text, "0::/usr/docker-%s.scope\n", id);
	CHECK(ctr_from_cgroup(text, &r) && r.runtime == CTR_DOCKER);   /* by its name alone */
	CHECK(!ctr_from_cgroup_at(root, text, &r) && r.runtime == CTR_NONE); /* a user's cgroup */
	CHECK(ctr_from_cgroup_at("", text, &r) && r.runtime == CTR_DOCKER);  /* /usr: root's */
	snprintf(text, sizeof text, "1:name=systemd:/usr/docker-%s.scope\n0::/\n", id);
	CHECK(!ctr_from_cgroup_at(root, text, &r));
	/* a line the reader skips (no two colons) before the one that names it */
	snprintf(text, sizeof text, "junk\n5:name=systemd:/usr/docker-%s.scope\n", id);
	CHECK(!ctr_from_cgroup_at(root, text, &r));
	snprintf(text, sizeof text, "0::/absent/docker-%s.scope\n", id);
	CHECK(ctr_from_cgroup_at(root, text, &r));   /* another layout: not known, not refused */
	snprintf(text, sizeof text,
		 "0::/user.slice/user-1000.slice/user@1000.service/usr/docker-%s.scope\n", id);
	CHECK(ctr_from_cgroup_at(root, text, &r) && r.rootless && r.owner_uid == 1000);
	/* outside a private cgroup namespace ("/../..."): the path is not one under root here (the
	 * stat would be of root/../usr, a directory the cgroup is not in) */
	char sub[160];
	snprintf(sub, sizeof sub, "%s/systemd", root);
	snprintf(text, sizeof text, "0::/../usr/docker-%s.scope\n", id);
	CHECK(ctr_from_cgroup_at(sub, text, &r) && r.runtime == CTR_DOCKER);
	snprintf(text, sizeof text,
		 "0::/../../user.slice/user-1000.slice/user@1000.service/usr/docker-%s.scope\n", id);
	CHECK(ctr_from_cgroup_at(root, text, &r) && r.rootless && r.owner_uid == 1000);
	/* A hybrid host: v1 at root, cgroup2 at root/unified (cgroup.controllers says which). The
	 * user's cgroup is under root/unified: found there, refused; at root it was not found, and
	 * so taken for the container. */
	char uni[160], ctl[192];
	snprintf(uni, sizeof uni, "%s/unified", root);
	CHECK(mkdir(uni, 0755) == 0);
	snprintf(ctl, sizeof ctl, "%s/cgroup.controllers", uni);
	int cfd = open(ctl, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	CHECK(cfd >= 0);
	if (cfd >= 0)
		close(cfd);
	snprintf(d, sizeof d, "%s/evil", uni);
	CHECK(mkdir(d, 0755) == 0);
	if (!getuid())
		CHECK(chown(d, other, other) == 0);
	snprintf(text, sizeof text, "0::/evil/docker-%s.scope\n", id);
	CHECK(!ctr_from_cgroup_at(root, text, &r) && r.runtime == CTR_NONE);
	rmdir(d);
	unlink(ctl);
	rmdir(uni);
	snprintf(d, sizeof d, "%s/systemd/usr", root);
	rmdir(d);
	snprintf(d, sizeof d, "%s/systemd", root);
	rmdir(d);
	snprintf(d, sizeof d, "%s/usr", root);
	rmdir(d);
	rmdir(root);
}

void test_container(void)
{
	engine_owner();
	delegated();
	resolve_order();
	rootless_fair();
	oci();
	devices();
	layouts();
	scan();
	detect();
	char id[13];
	ctr_short_id("4f5e6a7b8c9d0e1f2a3b", id);
	CHECK(!strcmp(id, "4f5e6a7b8c9d"));
	CHECK(ctr_runtime_name(CTR_NONE) == NULL && ctr_runtime_name(99) == NULL);
}
