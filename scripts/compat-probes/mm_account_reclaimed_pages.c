// SPDX-License-Identifier: GPL-2.0-only
/* mm_account_reclaimed_pages() (6.4+): a shrinker's freed pages count as reclaim progress */
#include <linux/swap.h>

static void __maybe_unused gpubuf_probe(void)
{
	mm_account_reclaimed_pages(1);
}
