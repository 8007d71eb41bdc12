// SPDX-License-Identifier: GPL-2.0-only
/* kmap_local_page() (5.11 on) */
#include <linux/highmem.h>

void *gpubuf_probe_kmap(struct page *page);
void *gpubuf_probe_kmap(struct page *page)
{
	return kmap_local_page(page);
}
