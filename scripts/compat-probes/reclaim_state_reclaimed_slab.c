// SPDX-License-Identifier: GPL-2.0-only
/* struct reclaim_state's reclaimed_slab (before 6.4) */
#include <linux/sched.h>
#include <linux/swap.h>

static void __maybe_unused gpubuf_probe(void)
{
	if (current->reclaim_state)
		current->reclaim_state->reclaimed_slab += 1;
}
