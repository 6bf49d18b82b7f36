/* sleeper.c: test helper: a process with any command line that just waits to be killed, so tests
 * can give GPU processes realistic /proc/PID/cmdline contents. */
#include <unistd.h>

int main(void)
{
	for (;;)
		pause();
}
