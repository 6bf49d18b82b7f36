/* gpu.c: the model's own helpers, which stand on nothing but base/: marking a GPU lost, naming
 * GPUs the way users do (index, UUID or unique prefix, PCI bus id) and selecting them by a list,
 * and the names of modes and process types. Opening and refreshing the machine is machine.c's. */
#include "machine/gpu.h"
#include "base/util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void gpu_mark_lost(struct gpu *g, const char *why)
{
	if (g->lost)
		return;
	g->lost = true;
	free(g->error);
	g->error = xstrdup(why);
	/* Once lost, nothing it said before is vouched for: every field but its identity (index,
	 * name, UUID, bus id) is unavailable and its processes unknown, in every output. */
	g->valid = 0;
	memset(g->why, 0, sizeof g->why);
	g->nprocs = 0;
	for (size_t i = 0; i < g->nmigs; i++)
		g->migs[i].mem_valid = false;
}

/* NVML's accepted forms: domain:bus:device.function, domain:bus:device, bus:device.function;
 * hex, any case. Split into hex fields and match the separators against those shapes. */
bool parse_pci_bus_id(const char *s, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn)
{
	unsigned long f[4];
	char seps[4] = "";
	int n = 0;
	while (n < 4) {
		char *end;
		if (!isxdigit((unsigned char)*s))
			return false;
		f[n] = strtoul(s, &end, 16);
		if (end - s > 8)
			return false;
		seps[n++] = *end;
		if (!*end)
			break;
		if (*end != ':' && *end != '.')
			return false;
		s = end + 1;
	}
	if (seps[n - 1] != '\0')
		return false;
	if (n == 4 && !strncmp(seps, "::.", 3))
		*dom = f[0], *bus = f[1], *dev = f[2], *fn = f[3];
	else if (n == 3 && !strncmp(seps, "::", 2))
		*dom = f[0], *bus = f[1], *dev = f[2], *fn = 0;
	else if (n == 3 && !strncmp(seps, ":.", 2))
		*dom = 0, *bus = f[0], *dev = f[1], *fn = f[2];
	else
		return false;
	return *bus < 256 && *dev < 32 && *fn < 8;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* The GPU whose board serial is id (nvidia-smi's -i takes one), reading the serials, a static
 * fact, only now that one is asked for. */
static struct gpu *by_serial(struct gpu_set *set, const char *id)
{
	for (size_t i = 0; i < set->ngpus; i++) {
		struct gpu *g = &set->gpus[i];
		if (!gpu_has(g, GF_SERIAL) && set->backend && set->backend->read_static)
			set->backend->read_static(set, g);
		if (gpu_has(g, GF_SERIAL) && g->serial[0] && !strcmp(g->serial, id))
			return g;
	}
	return NULL;
}

struct gpu *gpu_find(struct gpu_set *set, const char *id, struct gpu_error *err)
{
	err->code = EXIT_NO_SUCH_GPU;
	struct gpu *serial_hit;
	if (all_digits(id)) {
		unsigned long i;
		/* A number is an index when there is such a GPU, else a board serial (13 digits). */
		if (parse_uint(id, &i) && i < set->ngpus)
			return &set->gpus[i];
		if ((serial_hit = by_serial(set, id)))
			return serial_hit;
		snprintf(err->msg, sizeof err->msg,
			 "no GPU with index %s (nor that board serial): this machine has %zu GPU%s",
			 id, set->ngpus, set->ngpus == 1 ? "" : "s");
		return NULL;
	}
	if (!strncasecmp(id, "MIG-", 4)) {
		snprintf(err->msg, sizeof err->msg,
			 "'%s' is a MIG device; name its parent GPU instead (see `gpuctl status`)", id);
		return NULL;
	}
	if (!strncasecmp(id, "GPU-", 4)) {
		struct gpu *hit = NULL;
		size_t n = strlen(id), nhits = 0;
		for (size_t i = 0; i < set->ngpus; i++)
			if (!strncasecmp(set->gpus[i].uuid, id, n)) {
				hit = &set->gpus[i];
				nhits++;
			}
		if (nhits == 1)
			return hit;
		snprintf(err->msg, sizeof err->msg, nhits ? "UUID prefix '%s' matches %zu GPUs: give more of it"
							  : "no GPU has a UUID starting with '%s'",
			 id, nhits);
		return NULL;
	}
	unsigned dom, bus, dev, fn;
	if (strchr(id, ':') && parse_pci_bus_id(id, &dom, &bus, &dev, &fn)) {
		for (size_t i = 0; i < set->ngpus; i++) {
			struct gpu *g = &set->gpus[i];
			if (g->pci_bus_id[0] && g->pci_domain == dom && g->pci_bus == bus &&
			    g->pci_dev == dev && g->pci_fn == fn)
				return g;
		}
		snprintf(err->msg, sizeof err->msg, "no GPU at PCI bus id %s", id);
		return NULL;
	}
	if ((serial_hit = by_serial(set, id)))
		return serial_hit;
	err->code = EXIT_USAGE;
	snprintf(err->msg, sizeof err->msg,
		 "'%s' is not a GPU index, UUID (GPU-...), PCI bus id (0000:3B:00.0) or board serial", id);
	return NULL;
}

bool gpu_list_may_name_serial(const char *list)
{
	char *copy = xstrdup(list), *save = NULL;
	bool serial = false;
	for (char *tok = strtok_r(copy, ", \t", &save); tok && !serial; tok = strtok_r(NULL, ", \t", &save)) {
		unsigned long i;
		if (all_digits(tok))
			serial = !parse_uint(tok, &i) || i >= GPU_MAX;
		else
			serial = strncasecmp(tok, "GPU-", 4) && strncasecmp(tok, "MIG-", 4) && !strchr(tok, ':');
	}
	free(copy);
	return serial;
}

bool gpu_set_select(struct gpu_set *set, const char *list, struct gpu_error *err)
{
	char *copy = xstrdup(list), *save = NULL;
	for (size_t i = 0; i < set->ngpus; i++)
		set->gpus[i].selected = false;
	bool okay = true, any = false;
	for (char *tok = strtok_r(copy, ",", &save); tok && okay; tok = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*tok))
			tok++;
		tok[strcspn(tok, " \t")] = '\0';
		struct gpu *g = gpu_find(set, tok, err);
		if (g)
			g->selected = any = true;
		else
			okay = false;
	}
	if (okay && !any) {
		err->code = EXIT_USAGE;
		snprintf(err->msg, sizeof err->msg, "empty GPU list");
		okay = false;
	}
	free(copy);
	return okay;
}

const char *compute_mode_name(unsigned mode)
{
	static const char *const names[] = {"Default", "Exclusive_Thread", "Prohibited",
					    "Exclusive_Process"};
	return mode < ARRAY_SIZE(names) ? names[mode] : "Unknown";
}

const char *proc_type_name(unsigned type)
{
	if (type & PROC_MPS)
		return type & PROC_GRAPHICS ? "mps+graphics" : "mps";
	if ((type & (PROC_COMPUTE | PROC_GRAPHICS)) == (PROC_COMPUTE | PROC_GRAPHICS))
		return "compute+graphics";
	return type & PROC_GRAPHICS ? "graphics" : "compute";
}
