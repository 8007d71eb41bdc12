// SPDX-License-Identifier: GPL-2.0-only
/* dma_buf_ops.vmap takes a struct iosys_map (5.18+) */
#include <linux/dma-buf.h>

static int gpubuf_probe_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	iosys_map_set_vaddr(map, NULL);
	return 0;
}

static const struct dma_buf_ops gpubuf_probe_ops __maybe_unused = {
	.vmap = gpubuf_probe_vmap,
};
