/* measure.c: times commands the way a person runs them, not in a tight loop.
 *
 *   bench-measure [-n RUNS] [-g MIN_MS:MAX_MS] [-w WARMUP] [-r NAME:BASE]... NAME CMD [ARG...]
 *                 [-- NAME CMD...]...
 *
 * Each round runs every command once, in a new random order, each after a random gap (100-300
 * ms unless -g says otherwise) as a person leaves between two commands: page cache, dentries,
 * CPU caches and clock speeds are then as a real run finds them, which a back-to-back loop would
 * not show, and no command is always the first after a pause. WARMUP rounds (1 by default) run
 * first and are not counted. For each command it prints one line:
 *
 *   NAME wall_ms cpu_ms maxrss_kib minflt exit
 *
 * each the median over the rounds (wall from fork to reaped exit; cpu user+system; peak RSS and
 * minor faults from wait4), exit the last run's status. Standard output goes to /dev/null,
 * standard error is kept. For each -r NAME:BASE it then prints
 *
 *   ratio NAME BASE cpu wall rss cpu_low cpu_high
 *
 * the medians of the per-round ratios NAME / BASE (both ran in the same round, seconds apart):
 * a slow minute of the machine (another session's build) moves both and cancels out, which a
 * ratio of two medians taken over the whole run does not promise. cpu_low and cpu_high bound
 * the CPU ratio's median at 95% confidence (the order statistics that do for any distribution):
 * on a shared 2-core VM one run of a command can take a third more than the next, and a median
 * of 21 rounds then moves by a few hundredths between runs; the bounds say by how much, so a
 * figure just over or under its target is read as what it is. Bench code only.
 *
 * Compare CPU times: on a virtual machine the wall time of a command that reads other processes'
 * memory also holds milliseconds of waiting for the host to wake the other, idle, virtual CPU
 * after a pause, which is the host's noise and not the command's cost. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct cmd {
	const char *name;
	char **argv;
	double *wall, *cpu, *rss, *flt;
	int exit;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void run(struct cmd *c, int slot, int devnull)
{
	double t0 = now();
	pid_t p = fork();
	if (p < 0) {
		perror("bench-measure: fork");
		exit(1);
	}
	if (p == 0) {
		dup2(devnull, 1);
		execvp(c->argv[0], c->argv);
		fprintf(stderr, "bench-measure: %s: %s\n", c->argv[0], strerror(errno));
		_exit(127);
	}
	int st;
	struct rusage ru;
	while (wait4(p, &st, 0, &ru) < 0)
		if (errno != EINTR) {
			perror("bench-measure: wait4");
			exit(1);
		}
	double t1 = now();
	c->exit = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (slot < 0)
		return;
	c->wall[slot] = (t1 - t0) * 1e3;
	c->cpu[slot] = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
		       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
	c->rss[slot] = (double)ru.ru_maxrss;
	c->flt[slot] = (double)ru.ru_minflt;
}

static int find(const struct cmd *cmds, int n, const char *name, size_t len)
{
	for (int i = 0; i < n; i++)
		if (strlen(cmds[i].name) == len && !strncmp(cmds[i].name, name, len))
			return i;
	return -1;
}

/* The median over the rounds of a[r] / b[r]; with lo and hi, the 95% confidence bounds of that
 * median: the j-th and k-th smallest of the n ratios, j = (n - 1.96 sqrt n) / 2 rounded down and
 * k = 1 + (n + 1.96 sqrt n) / 2 rounded up (counted from 1, kept within 1..n; they cover 97-99%
 * from 6 rounds on, and nothing does below: NaN then). */
static double ratio(const double *a, const double *b, int runs, double *tmp, double *lo, double *hi)
{
	for (int r = 0; r < runs; r++)
		tmp[r] = b[r] > 0 ? a[r] / b[r] : 0;
	double m = median(tmp, runs);   /* sorts tmp */
	if (lo && hi && runs < 6) { /* below 6 rounds no two order statistics bound it at 95% */
		*lo = *hi = NAN;
	} else if (lo && hi) {
		double w = 1.96 * sqrt((double)runs);
		int j = (int)floor((runs - w) / 2), k = (int)ceil(1 + (runs + w) / 2);
		j = j < 1 ? 1 : j > runs ? runs : j;
		k = k < 1 ? 1 : k > runs ? runs : k;
		*lo = tmp[j - 1];
		*hi = tmp[k - 1];
	}
	return m;
}

int main(int argc, char **argv)
{
	int runs = 15, warm = 1, opt, nratios = 0;
	const char *ratios[32];
	double gmin = 100, gmax = 300;
	while ((opt = getopt(argc, argv, "+n:g:w:r:")) != -1) {
		switch (opt) {
		case 'r':
			if (!strchr(optarg, ':') || nratios == 32) {
				fprintf(stderr, "bench-measure: -r wants NAME:BASE (32 at most)\n");
				return 2;
			}
			ratios[nratios++] = optarg;
			break;
		case 'n': runs = atoi(optarg); break;
		case 'w': warm = atoi(optarg); break;
		case 'g':
			if (sscanf(optarg, "%lf:%lf", &gmin, &gmax) != 2 || gmin < 0 || gmax < gmin) {
				fprintf(stderr, "bench-measure: -g wants MIN_MS:MAX_MS\n");
				return 2;
			}
			break;
		default: return 2;
		}
	}
	if (runs < 1 || optind + 1 >= argc) {
		fprintf(stderr, "usage: bench-measure [-n RUNS] [-g MIN_MS:MAX_MS] [-w WARMUP] NAME CMD [ARG...] [-- NAME CMD...]...\n");
		return 2;
	}
	struct cmd cmds[32];
	int n = 0;
	for (int i = optind; i < argc && n < 32;) {
		struct cmd *c = &cmds[n++];
		c->name = argv[i++];
		c->argv = &argv[i];
		while (i < argc && strcmp(argv[i], "--"))
			i++;
		if (i < argc)
			argv[i++] = NULL;
		if (!c->argv[0]) {
			fprintf(stderr, "bench-measure: %s has no command\n", c->name);
			return 2;
		}
		c->wall = calloc((size_t)runs, sizeof(double));
		c->cpu = calloc((size_t)runs, sizeof(double));
		c->rss = calloc((size_t)runs, sizeof(double));
		c->flt = calloc((size_t)runs, sizeof(double));
	}
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	srand48((long)getpid());
	int order[32];
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int r = -warm; r < runs; r++) {
		for (int i = n - 1; i > 0; i--) {
			int j = (int)(drand48() * (i + 1)), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (int i = 0; i < n; i++) {
			double gap = gmin + drand48() * (gmax - gmin);
			struct timespec ts = {(time_t)(gap / 1e3), (long)(gap * 1e6) % 1000000000L};
			while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
				;
			run(&cmds[order[i]], r, devnull);
		}
	}
	/* The ratios first: median() sorts the columns it is given. */
	double *tmp = calloc((size_t)runs, sizeof(double));
	for (int k = 0; k < nratios; k++) {
		const char *colon = strchr(ratios[k], ':');
		int a = find(cmds, n, ratios[k], (size_t)(colon - ratios[k]));
		int b = find(cmds, n, colon + 1, strlen(colon + 1));
		if (a < 0 || b < 0) {
			fprintf(stderr, "bench-measure: -r %s: no such command\n", ratios[k]);
			return 2;
		}
		double lo, hi, cpu = ratio(cmds[a].cpu, cmds[b].cpu, runs, tmp, &lo, &hi);
		printf("ratio %s %s %.4f %.4f %.4f %.4f %.4f\n", cmds[a].name, cmds[b].name, cpu,
		       ratio(cmds[a].wall, cmds[b].wall, runs, tmp, NULL, NULL),
		       ratio(cmds[a].rss, cmds[b].rss, runs, tmp, NULL, NULL), lo, hi);
	}
	for (int i = 0; i < n; i++) {
		struct cmd *c = &cmds[i];
		printf("%s %.4f %.4f %.0f %.0f %d\n", c->name, median(c->wall, runs), median(c->cpu, runs),
		       median(c->rss, runs), median(c->flt, runs), c->exit);
	}
	return 0;
}
