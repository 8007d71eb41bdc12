// SPDX-License-Identifier: GPL-2.0-only
/* struct page's memcg_data (5.11+; mem_cgroup before) */
#include <linux/mm.h>

static unsigned long __maybe_unused gpubuf_probe(struct page *page)
{
	return READ_ONCE(page->memcg_data);
}
