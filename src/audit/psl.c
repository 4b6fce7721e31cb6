/* The Public Suffix List through libpsl (Debian's libpsl5 and publicsuffix), opened
 * with dlopen: only `audit --propose` and `review` need it, and a `run` must not pay
 * for loading a library it does not use. psl_latest(NULL) takes the newer of the
 * library's built-in list and the distribution's file. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

#include "agentrun/propose.h"

struct ar_psl {
	void *lib;
	void *ctx;
	void (*free_ctx)(void *);
	const char *(*registrable)(const void *, const char *);
};

static const char lib_name[] = "libpsl.so.5";

int ar_psl_open(struct ar_psl **out, ar_error_t *err)
{
	void *lib = dlopen(lib_name, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL)
		return ar_error_make(err, 0,
				     "the Public Suffix List needs %s (Debian: libpsl5 and "
				     "publicsuffix): %s",
				     lib_name, dlerror());
	struct ar_psl *p = ar_xcalloc(1, sizeof(*p));
	void *(*latest)(const char *) = (void *(*)(const char *))dlsym(lib, "psl_latest");
	p->lib = lib;
	p->free_ctx = (void (*)(void *))dlsym(lib, "psl_free");
	p->registrable =
	    (const char *(*)(const void *, const char *))dlsym(lib, "psl_registrable_domain");
	if (latest == NULL || p->free_ctx == NULL || p->registrable == NULL ||
	    (p->ctx = latest(NULL)) == NULL) {
		ar_psl_close(p);
		return ar_error_make(err, 0, "%s: no usable Public Suffix List", lib_name);
	}
	*out = p;
	return 0;
}

const char *ar_psl_registrable(const struct ar_psl *p, const char *name)
{
	return p->registrable(p->ctx, name);
}

void ar_psl_close(struct ar_psl *p)
{
	if (p == NULL)
		return;
	if (p->ctx != NULL)
		p->free_ctx(p->ctx);
	dlclose(p->lib);
	free(p);
}
