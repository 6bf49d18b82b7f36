/* main.c: runs the C unit tests of gpuctl's parsers and formatters, as TAP. */
#include "tap.h"

int tap_failed;
static int tap_count;

void tap_check(bool cond, const char *what, const char *file, int line)
{
	tap_count++;
	if (cond) {
		printf("ok - %s\n", what);
	} else {
		printf("not ok - %s\n#   at %s:%d\n", what, file, line);
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
	test_write2();
	test_heap();
	test_duration();
	test_json();
	test_pci();
	test_query();
	test_find();
	test_mib();
	test_fields();
	test_list_gpus();
	test_visibility();
	test_alloc();
	test_alloc_order();
	test_alloc_head();
	test_alloc_served();
	test_share(); /* memory shares and MIG instances (issue 23) */
	test_config_values();
	test_proto();
	test_peer();
	test_client();
	test_proc();
	test_slurm();
	test_container();
	test_cluster();
	test_args();
	test_exitcodes();
	test_tui();
	test_jobs();
	test_slurmjobs();
	test_snap();
	test_lease();
	test_place();   /* issue 26 */
	test_httpguard();
	/* The plan comes last (TAP allows it): a run that dies early has none, and fails. */
	printf("1..%d\n", tap_count);
	return tap_failed;
}
