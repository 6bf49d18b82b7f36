/* dl.c: run-time loading of shared libraries (see dl.h). */
#include "base/dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

void *dl_open(const char *const *sonames, const char **loaded, char *why, size_t whylen)
{
	why[0] = '\0';
	for (size_t i = 0; sonames[i]; i++) {
		void *dl = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
		if (dl) {
			if (loaded)
				*loaded = sonames[i];
			return dl;
		}
		if (!why[0])
			snprintf(why, whylen, "%s", dlerror());
	}
	return NULL;
}

int dl_resolve(void *dl, void *slot, const char *const *names)
{
	void *p = NULL;
	int at = -1;
	for (int i = 0; at < 0 && names[i]; i++) /* found: never read past the name it was */
		if ((p = dlsym(dl, names[i])))
			at = i;
	/* Through memcpy: the slot is a function pointer, which ISO C does not convert from void *. */
	memcpy(slot, &p, sizeof p);
	return at;
}

void *dl_load(const char *const *sonames, const struct dl_sym *syms, size_t n, char *err,
	      size_t errlen)
{
	const char *name = sonames[0];
	char why[512];
	void *dl = dl_open(sonames, &name, why, sizeof why);
	if (!dl) {
		snprintf(err, errlen, "cannot load %s (%s)", name, why);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (dl_resolve(dl, syms[i].slot, syms[i].names) < 0) {
			snprintf(err, errlen, "%s has no %s", name, syms[i].names[0]);
			dlclose(dl);
			return NULL;
		}
	return dl;
}
