// SPDX-License-Identifier: GPL-2.0-only
/* Charged pages carry the Kmemcg page type (before 5.11) */
#include <linux/mm.h>
#include <linux/page-flags.h>

bool gpubuf_probe_kmemcg(struct page *page);
bool gpubuf_probe_kmemcg(struct page *page)
{
	return PageKmemcg(page);
}
