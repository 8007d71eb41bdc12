// SPDX-License-Identifier: MIT
/*
 * A library that behaves as lavapipe does on AMD hosts: it keeps a block
 * of its own in a global for as long as it is loaded, and never frees it.
 * Loaded and unloaded by tests/lib/lsan.c.
 */
#include <stdlib.h>

void *gpubuf_lsan_keeper_block;

__attribute__((visibility("default"))) int gpubuf_lsan_keeper_hold(void)
{
	void *p = realloc(gpubuf_lsan_keeper_block, 128);

	if (!p)
		return -1;
	gpubuf_lsan_keeper_block = p;
	return 0;
}
