/* sleeper.c: test helper: a process with any command line that just waits to be killed, so tests
 * can give GPU processes realistic /proc/PID/cmdline contents. Once it runs (its command line and
 * environment are in place) it appends its pid to the file SLEEPER_READY names, if any, so a test
 * waits for that line instead of polling /proc. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	const char *ready = getenv("SLEEPER_READY");
	if (ready && *ready) {
		char line[32];
		int n = snprintf(line, sizeof line, "%d\n", (int)getpid());
		int fd = open(ready, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
		if (fd < 0 || write(fd, line, (size_t)n) != n)
			perror("sleeper: SLEEPER_READY");
		if (fd >= 0)
			close(fd);
	}
	for (;;)
		pause();
}
