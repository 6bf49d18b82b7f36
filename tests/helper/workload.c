/* workload.c: test-only stand-in for a CUDA application on the simulated machine. It reads
 * CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER as the driver would (through gpuctl's visibility
 * model, over the machine NVML reports), then appears in the simulated process list on the GPUs it
 * would use (a file in FAKENVML_PROC_DIR) until it exits.
 *
 *   workload [--mode first|all|ignore] [--mem MIB] [--mem-other MIB] [--seconds S] [--log FILE]
 *            [--tag TAG] [--ignore-term 1] [--until FIFO]
 *
 * first: the first visible GPU (a plain job); all: every visible GPU (DataParallel: --mem-other is
 * what it holds on all but the first, a context by default); ignore: every
 * GPU, as when the variable was set after CUDA started. --log appends "start TAG NS QUEUED LEASED
 * UUIDS" and "end TAG NS" lines (CLOCK_REALTIME ns; QUEUED and LEASED are GPUCTL_QUEUED_AT and
 * GPUCTL_LEASED_AT, or 0) for the lease tests. Once it is in the process list it appends
 * "ready PID" to the file WORKLOAD_READY names, if any: the event tests wait for. */
#include "cuda/visenv.h"
#include "machine/gpu.h"
#include "base/util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void log_line(const char *path, const char *line)
{
	if (!path)
		return;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0666);
	if (fd >= 0) {
		if (write(fd, line, strlen(line)) < 0)
			fprintf(stderr, "workload: cannot log\n");
		close(fd);
	}
}

int main(int argc, char **argv)
{
	const char *mode = "first", *logp = NULL, *tag = "job", *until = NULL;
	unsigned long mem = 1000, mem_other = 0;
	bool ignore_term = false;
	double secs = 3600;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--mode"))
			mode = argv[i + 1];
		else if (!strcmp(argv[i], "--mem"))
			mem = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--mem-other"))
			mem_other = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--ignore-term"))
			ignore_term = atoi(argv[i + 1]) != 0;
		else if (!strcmp(argv[i], "--seconds"))
			secs = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--log"))
			logp = argv[i + 1];
		else if (!strcmp(argv[i], "--tag"))
			tag = argv[i + 1];
		else if (!strcmp(argv[i], "--until"))
			until = argv[i + 1];
		else
			die(2, "workload: unknown option %s", argv[i]);
	}
	struct gpu_error err;
	struct gpu_set *set = gpu_set_open(&err);
	if (!set)
		die(3, "workload: %s", err.msg);
	struct vis_machine *m = vis_machine_new(set);
	bool ignore = !strcmp(mode, "ignore");
	struct vis_result *r = vis_resolve(m, ignore ? NULL : getenv("CUDA_VISIBLE_DEVICES"),
					   ignore ? "PCI_BUS_ID" : getenv("CUDA_DEVICE_ORDER"));
	size_t use = !strcmp(mode, "first") ? (r->ndevs ? 1 : 0) : r->ndevs;
	struct strbuf procs = {0}, line = {0};
	const char *q = getenv("GPUCTL_QUEUED_AT"), *l = getenv("GPUCTL_LEASED_AT");
	sb_addf(&line, "start %s %lld %s %s", tag, now_ns(), q ? q : "0", l ? l : "0");
	for (size_t i = 0; i < use; i++) {
		const struct vis_gpu *g = &m->gpus[r->devs[i].gpu];
		sb_addf(&procs, "[process]\ngpu = %u\npid = %d\nused_memory_mib = %lu\n", g->nvml_index,
			(int)getpid(), i && mem_other ? mem_other : mem);
		if (r->devs[i].mig >= 0)
			sb_addf(&procs, "gi = %u\nci = %u\n", m->migs[r->devs[i].mig].gi, m->migs[r->devs[i].mig].ci);
		sb_addf(&line, " %s", g->uuid);
	}
	sb_addc(&line, '\n');
	const char *dir = getenv("FAKENVML_PROC_DIR");
	char *path = dir ? xasprintf("%s/%d", dir, (int)getpid()) : NULL;
	if (path && use) {
		char *tmp = xasprintf("%s.tmp", path);
		FILE *f = fopen(tmp, "w");
		if (f) {
			fputs(procs.buf, f);
			fclose(f);
			rename(tmp, path);
		}
		free(tmp);
	}
	/* Handlers first: a test may signal it as soon as it says it is ready. */
	struct sigaction sa = {.sa_handler = on_stop};
	sigemptyset(&sa.sa_mask);
	if (ignore_term)
		signal(SIGTERM, SIG_IGN);
	else
		sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	log_line(logp, line.buf);
	char ready[64];
	snprintf(ready, sizeof ready, "ready %d\n", (int)getpid());
	log_line(getenv("WORKLOAD_READY"), ready);
	/* --until FIFO: run until a line is written to it (the tests' event), or --seconds. A
	 * FIFO opened O_NONBLOCK for reading sees no hang-up before a writer comes. */
	int ufd = until ? open(until, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
	double end = now_mono() + secs;
	while (!stop && now_mono() < end) {
		double left = end - now_mono();
		struct pollfd pf = {.fd = ufd, .events = POLLIN};
		if (poll(&pf, ufd >= 0, (int)(left > 1 ? 1000 : left * 1000) + 1) > 0 && pf.revents)
			break;
	}
	if (ufd >= 0)
		close(ufd);
	if (path)
		unlink(path);
	char endl[128];
	snprintf(endl, sizeof endl, "end %s %lld\n", tag, now_ns());
	log_line(logp, endl);
	free(path);
	sb_free(&procs);
	sb_free(&line);
	vis_result_free(r);
	vis_machine_free(m);
	gpu_set_free(set);
	return use ? 0 : 4;
}
