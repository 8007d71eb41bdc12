// SPDX-License-Identifier: GPL-2.0-only
/* sg_alloc_table_from_pages_segment() (5.15 on) */
#include <linux/scatterlist.h>

int gpubuf_probe_sg(struct sg_table *sgt, struct page **pages);
int gpubuf_probe_sg(struct sg_table *sgt, struct page **pages)
{
	return sg_alloc_table_from_pages_segment(sgt, pages, 1, 0, PAGE_SIZE,
						 PAGE_SIZE, GFP_KERNEL);
}
