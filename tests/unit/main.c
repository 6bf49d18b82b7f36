/* main.c: runs the C unit tests of gpuctl's parsers and formatters. */
#include "tap.h"

int tap_failed;

void tap_check(bool cond, const char *what, const char *file, int line)
{
	if (cond) {
		printf("ok - %s\n", what);
	} else {
		printf("not ok - %s (%s:%d)\n", what, file, line);
		tap_failed = 1;
	}
}

void tap_check_str(const char *got, const char *want, const char *what, const char *file, int line)
{
	bool same = got && want ? !strcmp(got, want) : got == want;
	tap_check(same, what, file, line);
	if (!same)
		printf("#   want: %s\n#   got:  %s\n", want ? want : "(null)", got ? got : "(null)");
}

int main(void)
{
	test_util();
	test_json();
	test_pci();
	test_query();
	test_find();
	test_visibility();
	test_alloc();
	test_config_values();
	test_proc();
	return tap_failed;
}
