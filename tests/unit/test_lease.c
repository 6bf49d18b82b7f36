/* test_lease.c: the machine as the daemon's `gpus` answer describes it (lease/choose.c), which
 * `run` and `env` lease against without loading NVML: a good answer gives the model and the
 * job's environment that NVML's would; a hostile or garbled one (a shared daemon is trusted
 * only as the daemon, and the words still go into a job's environment) is refused whole. */
#include "lease/choose.h"
#include "tap.h"

#include <stdlib.h>

/* The set read from text (lines of words, a space between words), or NULL. */
static struct gpu_set *read_text(const char *text)
{
	struct msg m;
	char why[160];
	struct gpu_error err = {0};
	if (!msg_decode(&m, text, strlen(text), why, sizeof why))
		return NULL;
	struct gpu_set *set = grant_machine_read(&m, &err);
	msg_free(&m);
	return set;
}

static bool refused(const char *text)
{
	struct gpu_set *set = read_text(text);
	gpu_set_free(set);
	return set == NULL;
}

#define DEV0 "dev 0 GPU-aaaa 00000000:3B:00.0 ok 9.0 16896 0 NVIDIA%20H100\n"
#define DEV1 "dev 1 GPU-bbbb 00000000:18:00.0 ok 9.0 16896 1 NVIDIA%20H100\n"

void test_lease(void)
{
	struct gpu_set *set = read_text("gpus\nid 0\ndriver 550.54.15\n" DEV0 DEV1
					"mig 1 0 1 0 MIG-cccc");
	CHECK(set && set->ngpus == 2);
	if (!set)
		return;
	CHECK_STR(set->gpus[1].uuid, "GPU-bbbb");
	CHECK(set->gpus[1].pci_bus == 0x18 && gpu_has(&set->gpus[1], GF_CC) && set->gpus[1].cc_major == 9);
	CHECK(set->gpus[1].nmigs == 1 && set->gpus[1].migs[0].gi == 1 && set->gpus[1].mig_mode);
	CHECK_STR(set->gpus[0].name, "NVIDIA H100");
	CHECK(set->has_driver_version && !set->gpus[0].lost);
	/* GPU 1 comes first on the bus: CUDA's PCI_BUS_ID ordinal 0, as with NVML's own model. */
	struct grant g = {.set = set, .n = 1, .pos = {1}};
	char **env = grant_env(&g, false);
	CHECK_STR(env[0], "CUDA_VISIBLE_DEVICES=0");
	CHECK_STR(env[2], "NVIDIA_VISIBLE_DEVICES=1");
	grant_env_free(env);
	gpu_set_free(set);

	set = read_text("gpus\nid 0\ndev 0 - - lost - - - -");
	CHECK(set && set->ngpus == 1 && set->gpus[0].lost && !set->gpus[0].uuid[0]);
	gpu_set_free(set);
	set = read_text("gpus\nid 0");
	CHECK(set && set->ngpus == 0);
	gpu_set_free(set);

	CHECK(refused("error\nid 0\ncode 2\ntext unknown"));
	CHECK(refused("gpus\ndev 0 GPU-a,GPU-b - ok - - - -"));         /* a list in a UUID */
	CHECK(refused("gpus\ndev 0 GPU-a=1 - ok - - - -"));
	CHECK(refused("gpus\ndev 1 GPU-a - ok - - - -"));               /* index not its place */
	CHECK(refused("gpus\nmig 0 0 0 0 MIG-a\n" DEV0));              /* MIG before its GPU */
	CHECK(refused("gpus\ndev 0 GPU-a 3B:00 ok - - - -"));          /* not a bus id */
	CHECK(refused("gpus\ndev 0 GPU-a - fine - - - -"));
	CHECK(refused("gpus\ndev 0 GPU-a - ok 9.0.1 - - -"));
	CHECK(refused("gpus\ndev 0 GPU-a - ok - 99999999999 - -"));
	CHECK(refused("gpus\ndev 0 GPU-a - ok - - 2 -"));
	CHECK(refused("gpus\ndev 0 GPU-a - ok - - -"));                /* a word short */
	CHECK(refused("gpus\ndev 0 GPU-a - ok - - - -\ndev 1 GPU-a - ok - - - -")); /* one UUID twice */
	set = read_text("gpus\nid 0\ndev 0 - - lost - - - -\ndev 1 - - lost - - - -");
	CHECK(set && set->ngpus == 2);                                 /* two lost: no UUID to repeat */
	gpu_set_free(set);
	struct strbuf sb = {0};
	sb_adds(&sb, "gpus");
	for (int i = 0; i < GPU_MAX + 1; i++)
		sb_addf(&sb, "\ndev %d GPU-%d - ok - - - -", i, i);
	CHECK(refused(sb.buf));                                        /* more than GPU_MAX */
	sb_free(&sb);
	sb_adds(&sb, "gpus\n" DEV0);
	for (int i = 0; i < 65; i++)
		sb_addf(&sb, "mig 0 %d 0 0 MIG-%d\n", i, i);
	sb.buf[--sb.len] = '\0';
	CHECK(refused(sb.buf));                                        /* more MIG devices than fit */
	sb_free(&sb);
}
