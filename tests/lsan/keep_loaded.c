// SPDX-License-Identifier: MIT
/*
 * Linked into the sanitizer builds of the test programs: a dlclose() that
 * never unmaps a library. LeakSanitizer finds leaks by scanning what is
 * mapped at exit; a library that keeps a block in one of its globals and
 * is then unloaded turns that block into a "direct leak" from "<unknown
 * module>". Mesa's lavapipe does exactly that on AMD Zen hosts (a CPU
 * topology table set up once per load, 128 bytes per L3 cache), and the
 * Vulkan loader unloads it at vkDestroyInstance. A suppression cannot name
 * such a frame, since the module is gone by the time it is reported.
 *
 * So each handle is promoted to RTLD_NODELETE before the real dlclose()
 * drops its reference: the reference counts stay right, the library
 * stays mapped, and LeakSanitizer sees its globals as the program ran.
 * A leak of libgpubuf itself is still a leak: nothing here keeps its
 * memory reachable (tests/lib/lsan.c checks both).
 *
 * GPUBUF_LSAN_UNLOAD=1 turns the promotion off (tests/lib/lsan.c shows
 * with it that the unloaded library's block is then reported).
 */
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

typedef int (*dlclose_fn)(void *);

int dlclose(void *handle)
{
	static dlclose_fn next;
	dlclose_fn real = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
	struct link_map *map = NULL;

	if (!real) {
		real = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
		if (!real)
			return -1;
		__atomic_store_n(&next, real, __ATOMIC_RELEASE);
	}
	if (!getenv("GPUBUF_LSAN_UNLOAD") &&
	    !dlinfo(handle, RTLD_DI_LINKMAP, &map) && map &&
	    map->l_name && map->l_name[0]) {
		/* Takes a reference and sets NODELETE; the reference goes. */
		void *pin = dlopen(map->l_name,
				   RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);

		if (pin)
			real(pin);
	}
	return real(handle);
}
