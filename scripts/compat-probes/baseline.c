// SPDX-License-Identifier: GPL-2.0-only
/*
 * Must always build. If it does not, the probe environment itself is broken
 * (wrong compiler, missing headers) and every other answer would be wrong.
 */
#include <linux/dma-buf.h>
#include <linux/mm.h>
#include <linux/module.h>

static int __maybe_unused gpubuf_probe(struct vm_area_struct *vma)
{
	return vma_pages(vma) > 0;
}
