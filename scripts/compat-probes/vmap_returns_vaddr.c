// SPDX-License-Identifier: GPL-2.0-only
/* dma_buf_ops.vmap returns the address (before 5.11) */
#include <linux/dma-buf.h>

static void *gpubuf_probe_vmap(struct dma_buf *dmabuf)
{
	return NULL;
}

static const struct dma_buf_ops gpubuf_probe_ops __maybe_unused = {
	.vmap = gpubuf_probe_vmap,
};
