/* SPDX-License-Identifier: MIT */
/*
 * Resolving a stand-in runtime's functions in a test program, for the
 * harnesses of both stand-ins (tests/cudastub/cuda_stub_test.h,
 * tests/hsastub/hsa_stub_test.h). Here, in tests/lib, because both are
 * compiled with it on their include path.
 */
#ifndef GPUBUF_TEST_STUB_LOAD_H
#define GPUBUF_TEST_STUB_LOAD_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

/* A function pointer to set, and the stand-in's symbol for it. */
struct t_stub_sym {
	void **fn;
	const char *name;
};

/* The entry for field of the harness's table s, from symbol name. */
#define T_STUB_SYM(s, field, name) { (void **)&(s).field, (name) }

/*
 * Set every syms[i].fn from lib. RTLD_NOLOAD: only the copy the library
 * under test loaded counts (its log is what the tests read), so the caller
 * has it load lib first. 0, or -1 after a "# " line saying why.
 */
static int t_stub_resolve(const char *lib, const struct t_stub_sym *syms,
			  size_t n)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);

	if (!h) {
		printf("# the library did not load %s: %s\n", lib, dlerror());
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		*syms[i].fn = dlsym(h, syms[i].name);
		if (!*syms[i].fn) {
			printf("# %s is not the stand-in (no %s)\n", lib,
			       syms[i].name);
			dlclose(h);
			return -1;
		}
	}
	/* The library holds its own reference; this one is not needed. */
	dlclose(h);
	return 0;
}

#define T_STUB_RESOLVE(lib, syms)					\
	t_stub_resolve(lib, syms, sizeof(syms) / sizeof((syms)[0]))

#endif /* GPUBUF_TEST_STUB_LOAD_H */
