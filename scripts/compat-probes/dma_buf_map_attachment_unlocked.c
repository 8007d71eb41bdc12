// SPDX-License-Identifier: GPL-2.0-only
/* dma_buf_map_attachment_unlocked() (6.2+, backported to Debian's 6.1) */
#include <linux/dma-buf.h>

static __maybe_unused struct sg_table *
gpubuf_probe(struct dma_buf_attachment *attach)
{
	return dma_buf_map_attachment_unlocked(attach, DMA_BIDIRECTIONAL);
}
