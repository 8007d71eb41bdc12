// SPDX-License-Identifier: GPL-2.0-only
/* dma_buf_vmap_unlocked() (6.2 on; dma_buf_vmap() wants the lock held) */
#include <linux/dma-buf.h>

int gpubuf_probe_vmap(struct dma_buf *dmabuf, struct iosys_map *map);
int gpubuf_probe_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	return dma_buf_vmap_unlocked(dmabuf, map);
}
