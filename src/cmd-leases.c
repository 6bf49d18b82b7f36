/* cmd-leases.c: `gpuctl leases`: every live lease (GPU, user, pid, kind, since, name, command)
 * and the waiting queue in order. */
#include "gpu.h"
#include "gpuctl.h"
#include "json.h"
#include "leaseview.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* The GPU's nvidia-smi index, or -1 when NVML is unavailable or does not know the UUID. */
static int index_of(const struct gpu_set *set, const char *uuid)
{
	for (size_t i = 0; set && i < set->ngpus; i++)
		if (!strcmp(set->gpus[i].uuid, uuid))
			return (int)set->gpus[i].index;
	return -1;
}

static void print_json(const struct leaseview *v, const struct gpu_set *set)
{
	struct strbuf sb = {0};
	struct json j;
	json_init(&j, &sb, true);
	json_obj(&j, NULL);
	json_arr(&j, "leases");
	for (size_t i = 0; i < v->leases.n; i++) {
		const struct lease_rec *r = &v->leases.recs[i];
		if (!r->live)
			continue;
		json_obj(&j, NULL);
		json_str(&j, "id", r->id);
		json_arr(&j, "gpus");
		for (size_t k = 0; k < r->nlocks; k++) {
			json_obj(&j, NULL);
			int idx = index_of(set, r->locks[k].uuid);
			if (idx >= 0)
				json_uint(&j, "index", (unsigned)idx);
			else
				json_null(&j, "index");
			json_str(&j, "uuid", r->locks[k].uuid);
			json_end_obj(&j);
		}
		json_end_arr(&j);
		json_str(&j, "user", r->user);
		json_uint(&j, "uid", r->uid);
		json_int(&j, "pid", r->pid);
		json_str(&j, "kind", r->kind);
		json_int(&j, "since", (long long)r->since);
		json_str(&j, "name", r->name);
		json_str(&j, "command", r->command);
		json_end_obj(&j);
	}
	json_end_arr(&j);
	json_arr(&j, "queue");
	for (size_t i = 0; i < v->queue.n; i++) {
		const struct ticket *t = &v->queue.t[i];
		json_obj(&j, NULL);
		json_uint(&j, "position", i + 1);
		json_str(&j, "user", t->user);
		json_uint(&j, "uid", t->uid);
		json_int(&j, "pid", t->pid);
		json_uint(&j, "count", t->req.count);
		json_int(&j, "since", (long long)t->since);
		json_str(&j, "name", t->name);
		json_arr(&j, "candidates");
		for (size_t k = 0; k < t->ncand; k++)
			json_str(&j, NULL, t->cand[k]);
		json_end_arr(&j);
		json_end_obj(&j);
	}
	json_end_arr(&j);
	json_end_obj(&j);
	json_print(&sb);
}

static void print_table(const struct leaseview *v, const struct gpu_set *set)
{
	size_t live = 0;
	for (size_t i = 0; i < v->leases.n; i++)
		live += v->leases.recs[i].live;
	if (!live)
		printf("no leases\n");
	else
		printf("%-7s %-10s %8s %-4s %-8s %-14s %s\n", "GPUS", "USER", "PID", "KIND", "SINCE",
		       "NAME", "COMMAND");
	for (size_t i = 0; i < v->leases.n; i++) {
		const struct lease_rec *r = &v->leases.recs[i];
		if (!r->live)
			continue;
		char gpus[64] = "", when[16];
		for (size_t k = 0; k < r->nlocks; k++) {
			int idx = index_of(set, r->locks[k].uuid);
			size_t len = strlen(gpus);
			if (idx >= 0)
				snprintf(gpus + len, sizeof gpus - len, "%s%d", k ? "," : "", idx);
			else
				snprintf(gpus + len, sizeof gpus - len, "%s%.8s", k ? "," : "", r->locks[k].uuid);
		}
		strftime(when, sizeof when, "%H:%M:%S", localtime(&r->since));
		printf("%-7s %-10.10s %8d %-4s %-8s %-14.14s %.40s\n", gpus, r->user, (int)r->pid,
		       r->kind, when, r->name ? r->name : "-", r->command ? r->command : "");
	}
	if (v->queue.n)
		printf("\nwaiting (first come, first served):\n");
	time_t now = time(NULL);
	for (size_t i = 0; i < v->queue.n; i++) {
		const struct ticket *t = &v->queue.t[i];
		long w = (long)(now - t->since);
		printf("%3zu. %-10.10s pid %-8d wants %u GPU%s, waiting %ld:%02ld%s%s\n", i + 1, t->user,
		       (int)t->pid, t->req.count, t->req.count == 1 ? "" : "s", w / 60, w % 60,
		       t->name ? "  " : "", t->name ? t->name : "");
	}
}

static int leases(struct cmd *c)
{
	bool json = args_has(&c->args, 'j');
	struct leaseview v;
	struct gpu_error err = {0};
	if (!leaseview_load(&v, NULL, &err)) {
		fprintf(stderr, "gpuctl leases: %s\n", err.msg);
		return err.code;
	}
	/* Indices are a courtesy: without NVML the UUIDs still say which GPU. */
	struct gpu_set *set = gpu_set_open(&err);
	if (json)
		print_json(&v, set);
	else
		print_table(&v, set);
	gpu_set_free(set);
	leaseview_free(&v);
	return EXIT_OK;
}

static const struct option longopts[] = {{"json", no_argument, NULL, 'j'}, {0}};

const struct cmd_entry cmd_leases_entry = {
	.name = "leases",
	.summary = "who holds which GPU, and who is waiting",
	.usage = "leases [--json]\n\nEvery live lease (GPUs, user, pid, kind, since, name, command) and\n"
		 "the waiting queue in order.\n",
	.args = {.longs = longopts},
	.exec = leases,
};
