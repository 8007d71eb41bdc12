// SPDX-License-Identifier: GPL-2.0-only
/* struct folio and its index (5.16+) */
#include <linux/mm.h>

static void __maybe_unused gpubuf_probe(struct page *page)
{
	page_folio(page)->index = 1;
}
