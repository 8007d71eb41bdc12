/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Test-only interface of gpubuf_pinprobe.ko: run what GPU drivers run on a
 * user address range, so gpubuf's mapping is proved pinnable without a GPU.
 */
#ifndef GPUBUF_PINPROBE_H
#define GPUBUF_PINPROBE_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define PINPROBE_DEVICE_PATH	"/dev/gpubuf_pinprobe"

/* pin_user_pages_fast(FOLL_WRITE | FOLL_LONGTERM): cuMemHostRegister */
#define PINPROBE_OP_PIN_LONGTERM	1
/* hmm_range_fault() with write faults: amdgpu/KFD userptr */
#define PINPROBE_OP_HMM_FAULT		2
/*
 * As PIN_LONGTERM, but the pages stay pinned until this open file is
 * closed, as an RDMA MR or a CUDA registration keeps them past the
 * buffer's release; one such range per open file (else EBUSY).
 */
#define PINPROBE_OP_PIN_HOLD		3
/* The checksum of the pages PIN_HOLD holds (addr and len as given then). */
#define PINPROBE_OP_HELD_SUM		4

/**
 * struct pinprobe_req - one probe over [addr, addr + len)
 * @addr:     in, page-aligned user address
 * @len:      in, page-aligned length in bytes
 * @op:       in, PINPROBE_OP_*
 * @reserved: in, must be 0
 * @checksum: out, sum of the first 64-bit word of every page, read through
 *            the kernel's view of the pages the probe obtained
 * @elapsed_ns: out, time spent in the pin or fault call itself (not in
 *            allocating the page array or reading the checksum)
 */
struct pinprobe_req {
	__u64 addr;
	__u64 len;
	__u32 op;
	__u32 reserved;
	__u64 checksum;
	__u64 elapsed_ns;
};

/*
 * mmap() of the device, offset 0, up to this many bytes: a VM_PFNMAP
 * mapping of kernel pages, the control both probes must refuse.
 */
#define PINPROBE_PFNMAP_BYTES	(1024UL * 1024)

#define PINPROBE_IOC_RUN	_IOWR(0xB9, 0x01, struct pinprobe_req)

/**
 * struct pinprobe_export - a dma-buf whose mmap() is VM_PFNMAP
 * @len:   in, page-aligned size, at most PINPROBE_PFNMAP_BYTES
 * @flags: in, 0
 * @fd:    out, the dma-buf's fd (O_RDWR | O_CLOEXEC)
 *
 * The control for importers: a foreign dma-buf mapped the way the dma-heap
 * system heap and many DRM drivers map theirs (remap_pfn_range), over the
 * same pages as the device's own mmap().
 */
struct pinprobe_export {
	__u64 len;
	__u32 flags;
	__s32 fd;
};

#define PINPROBE_IOC_EXPORT_PFNMAP _IOWR(0xB9, 0x02, struct pinprobe_export)

#endif /* GPUBUF_PINPROBE_H */
