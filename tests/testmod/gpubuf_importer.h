/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Test-only interface of gpubuf_importer.ko: a DMA device that imports a
 * dma-buf the way a GPU driver does (64-bit DMA mask, no segment limit), so
 * the exporter's attach/map/sync paths run against a demanding importer,
 * and that maps one into user space through its own mmap().
 */
#ifndef GPUBUF_IMPORTER_H
#define GPUBUF_IMPORTER_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define IMPORTER_DEVICE_PATH	"/dev/gpubuf_importer"

/* Values of enum dma_data_direction. */
#define IMPORTER_DIR_BIDIRECTIONAL	0
#define IMPORTER_DIR_TO_DEVICE		1
#define IMPORTER_DIR_FROM_DEVICE	2

/**
 * struct importer_map - attach to and DMA-map a dma-buf
 * @fd:       in, the dma-buf
 * @dir:      in, IMPORTER_DIR_*
 * @nents:    out, number of DMA segments
 * @reserved: in, must be 0
 * @max_seg:  out, longest DMA segment in bytes
 * @total:    out, sum of the DMA segment lengths
 * @first_dma: out, DMA address of the first segment (tells whether two
 *            importers share one mapping: with bounce buffering, separate
 *            mappings of the same pages get separate addresses)
 *
 * One mapping per open file; it lasts until IMPORTER_IOC_UNMAP or close.
 */
struct importer_map {
	__s32 fd;
	__u32 dir;
	__u32 nents;
	__u32 reserved;
	__u64 max_seg;
	__u64 total;
	__u64 first_dma;
};

/* EBUSY when this file already holds a mapping; errors of the map op. */
#define IMPORTER_IOC_MAP	_IOWR(0xBA, 0x01, struct importer_map)
/* Unmap (every mapping of the attachment) and detach; ENOENT when nothing is mapped. */
#define IMPORTER_IOC_UNMAP	_IO(0xBA, 0x02)

/*
 * Map this file's attachment a second time (@fd ignored), as an importer
 * that maps one attachment twice does; @nents and @first_dma describe the
 * second mapping, which UNMAP or close unmaps first. ENOENT when nothing is
 * mapped, EBUSY when mapped twice already; errors of the map op.
 */
#define IMPORTER_IOC_MAP_AGAIN	_IOWR(0xBA, 0x04, struct importer_map)

/**
 * struct importer_vmap - read and write a whole dma-buf through dma_buf_vmap()
 * @fd:       in, the dma-buf
 * @reserved: in, must be 0
 * @seed:     in, after reading, 64-bit word i is set to @seed + i
 * @sum:      out, sum of the 64-bit words read before writing
 *
 * Bracketed by begin/end_cpu_access (bidirectional), as a driver would.
 */
struct importer_vmap {
	__s32 fd;
	__u32 reserved;
	__u64 seed;
	__u64 sum;
};

/* Errors of dma_buf_get(), of the vmap op (ENOMEM) and of the syncs. */
#define IMPORTER_IOC_VMAP	_IOWR(0xBA, 0x03, struct importer_vmap)

/**
 * struct importer_mmap_via - what mmap() of this file maps
 * @fd:    in, the dma-buf
 * @flags: in, IMPORTER_MMAP_* flags the vma gets before dma_buf_mmap()
 *
 * mmap() of the file then hands its vma to dma_buf_mmap(), as a DRM
 * driver's mmap of an imported buffer does, after setting @flags on it
 * (a driver that set its vma up as an I/O or PFN mapping first). The
 * dma-buf is held until the next IMPORTER_IOC_MMAP_VIA or close; mmap()
 * without one is ENODEV.
 */
struct importer_mmap_via {
	__s32 fd;
	__u32 flags;
};

#define IMPORTER_MMAP_PFNMAP	0x1	/* VM_PFNMAP */
#define IMPORTER_MMAP_IO	0x2	/* VM_IO */
#define IMPORTER_MMAP_MIXEDMAP	0x4	/* VM_MIXEDMAP */

/* EINVAL for unknown flags; errors of dma_buf_get(). */
#define IMPORTER_IOC_MMAP_VIA	_IOW(0xBA, 0x05, struct importer_mmap_via)

#endif /* GPUBUF_IMPORTER_H */
