/* pace.c: the pace a loop keeps, timed where its frames reach a reader. Bench code only.
 *
 *   bench-pace MARKER CMD [ARG...]
 *
 * runs CMD with its standard output into a pipe, reads the pipe, and notes when each line that
 * begins with MARKER arrives (a frame's first line: "driver " for `status`'s table, as a piped
 * loop writes it). It prints
 *
 *   frames N rate_hz
 *
 * rate_hz being the frames after the third over the time from the third's arrival to the
 * last's. The first frame reads the whole machine; a loop whose first refresh overran its period
 * makes the second at once, and its deadlines start there (src/cmd/status.c): at 10,000
 * processes the second came 14 ms after the first, and took half a usual refresh's time, which
 * would count as a slower pace at the end. The pace is what the frames after them keep. Timing the loop's whole run instead (its wall time less a one-shot's) put the first
 * refresh's variation into the figure: at 10,000 processes 0.2-0.3 s, a tenth of a 31-frame
 * run, which a 2-core VM's slow second made into a "9.6 Hz" the loop never showed. Exits with
 * CMD's status. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3 || !argv[1][0]) {
		fprintf(stderr, "usage: bench-pace MARKER CMD [ARG...]\n");
		return 2;
	}
	const char *marker = argv[1];
	size_t mlen = strlen(marker);
	int p[2];
	if (pipe(p) < 0) {
		perror("bench-pace: pipe");
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("bench-pace: fork");
		return 1;
	}
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execvp(argv[2], argv + 2);
		fprintf(stderr, "bench-pace: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	close(p[1]);
	/* matched: how much of the marker the current line has begun with so far, or -1 once the
	 * line differs (a marker may be cut between two reads). */
	static char buf[1 << 16];
	long matched = 0, frames = 0;
	double third = 0, last = 0;
	for (;;) {
		ssize_t n = read(p[0], buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		double t = now();
		for (const char *s = buf, *end = buf + n; s < end;) {
			if (matched >= 0) {
				while (s < end && (size_t)matched < mlen && *s == marker[matched])
					s++, matched++;
				if ((size_t)matched == mlen) {
					if (++frames == 3)
						third = t;
					last = t;
					matched = -1;
				} else if (s < end) {
					matched = -1;
				}
				continue;
			}
			const char *nl = memchr(s, '\n', (size_t)(end - s));
			if (!nl)
				break;
			s = nl + 1;
			matched = 0;
		}
	}
	close(p[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			perror("bench-pace: waitpid");
			return 1;
		}
	printf("frames %ld %.3f\n", frames, frames > 3 && last > third ? (frames - 3) / (last - third) : 0.0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
