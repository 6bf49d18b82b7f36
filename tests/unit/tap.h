/* tap.h: minimal checks for the C unit tests; prints "ok"/"not ok" lines for tests/run.sh. */
#ifndef TAP_H
#define TAP_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

extern int tap_failed;
void tap_check(bool cond, const char *what, const char *file, int line);
void tap_check_str(const char *got, const char *want, const char *what, const char *file, int line);

#define CHECK(cond) tap_check((cond), #cond, __FILE__, __LINE__)
#define CHECK_STR(got, want) tap_check_str((got), (want), #got, __FILE__, __LINE__)

void test_container(void); /* containers (issue 28) */
void test_json(void);
void test_pci(void);
void test_query(void);
void test_util(void);
void test_write2(void);
void test_heap(void);
void test_duration(void);
void test_find(void);
void test_mib(void);
void test_fields(void);
void test_list_gpus(void);
void test_visibility(void);
void test_alloc(void);
void test_alloc_order(void);
void test_alloc_head(void);
void test_alloc_served(void);
void test_share(void); /* memory shares and MIG instances (issue 23) */
void test_config_values(void);
void test_proto(void);
void test_peer(void);
void test_proc(void);
void test_args(void);
void test_exitcodes(void);
void test_tui(void);
void test_slurm(void);
void test_cluster(void);
void test_jobs(void);
void test_slurmjobs(void);
void test_snap(void);      /* issue 22: the shared snapshot's words */
void test_lease(void);
void test_client(void); /* lease/client.c: send, receive (issue 22) */
void test_place(void);   /* issue 26 */
void test_httpguard(void); /* the exporter's connection guard */

#endif
