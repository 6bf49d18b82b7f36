/* dl.h: loading a shared library at run time and resolving its functions by name, newest version
 * first (htop's resolve()): the one loader NVML, libmicrohttpd and libcuda go through. */
#ifndef GPUCTL_DL_H
#define GPUCTL_DL_H

#include <stdbool.h>
#include <stddef.h>

/* A function to resolve: slot is the address of its function pointer; names, NULL-terminated,
 * are tried in order (newest symbol version first). */
struct dl_sym {
	void *slot;
	const char *names[4];
};

/* dlopen (RTLD_NOW | RTLD_LOCAL) the first of sonames (NULL-terminated) that loads; *loaded
 * names it. NULL with why set to the first name's failure (a fallback's would only confuse). */
void *dl_open(const char *const *sonames, const char **loaded, char *why, size_t whylen);
/* The position in names of the symbol found (its slot set), or -1 (slot set to NULL). */
int dl_resolve(void *dl, void *slot, const char *const *names);
/* dl_open, then every symbol of syms; on any failure the library is closed again and err says
 * what failed ("cannot load X: ..." or "X has no Y"). */
void *dl_load(const char *const *sonames, const struct dl_sym *syms, size_t n, char *err,
	      size_t errlen);

#endif
