/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * gpubuf: pinned, struct-page backed host memory exported as dma-bufs.
 *
 * This header is an ABI. Every structure is a multiple of 8 bytes with
 * explicit padding, so i386 and x86_64 callers see the same layout and the
 * 32-bit compat path shares the native handler. Fields marked "reserved"
 * must be zero on input; the driver rejects anything else with EINVAL.
 *
 * Structures grow only at their end. The driver accepts any size from the
 * first published size (GPUBUF_*_SIZE_VER0) up: a shorter structure from an
 * older caller is zero-extended, a longer one from a newer caller is
 * accepted only when the bytes the driver does not know are zero (otherwise
 * E2BIG), and those bytes are zero again on return. The size travels in the
 * ioctl number, so always use the macros.
 *
 * Errors common to every ioctl:
 *   ENOTTY  unknown command, or a known number with the wrong direction
 *   EINVAL  structure shorter than its first published size
 *   E2BIG   structure longer than the driver knows with non-zero extra bytes
 *   EFAULT  the argument pointer is not readable/writable
 */
#ifndef _UAPI_LINUX_GPUBUF_H
#define _UAPI_LINUX_GPUBUF_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Incompatible-change counter of this interface. */
#define GPUBUF_ABI_VERSION	1

#define GPUBUF_DEVICE_NAME	"gpubuf"
#define GPUBUF_DEVICE_PATH	"/dev/gpubuf"

/* Exporter name a gpubuf dma-buf reports (e.g. in /sys/kernel/debug/dma_buf). */
#define GPUBUF_EXPORTER_NAME	"gpubuf"

/**
 * struct gpubuf_version - driver identification and ABI range
 * @abi:     out, the ABI revision the driver implements (GPUBUF_ABI_VERSION
 *           of the header it was built with).
 * @abi_min: out, the oldest ABI revision the driver still serves. A caller
 *           speaking revision R works with this driver when
 *           abi_min <= R <= abi.
 * @major:   out, release major of the module.
 * @minor:   out, release minor of the module.
 * @patch:   out, release patch level of the module.
 * @reserved: out, zero.
 */
struct gpubuf_version {
	__u32 abi;
	__u32 abi_min;
	__u32 major;
	__u32 minor;
	__u32 patch;
	__u32 reserved;
};

#define GPUBUF_VERSION_SIZE_VER0	24

/* NUMA node value meaning "no preference". */
#define GPUBUF_NUMA_ANY		(-1)

/*
 * Take pages only from gpubuf_alloc.numa_node; without this flag that node
 * is preferred and other nodes are used when it is short of memory.
 * Requires a numa_node other than GPUBUF_NUMA_ANY.
 */
#define GPUBUF_ALLOC_NUMA_STRICT	(1ULL << 0)

#define GPUBUF_ALLOC_VALID_FLAGS	(GPUBUF_ALLOC_NUMA_STRICT)

/**
 * struct gpubuf_alloc - allocate a buffer and export it as a dma-buf
 * @size:      in, bytes wanted, at least 1; out, the size actually
 *             allocated (rounded up to the page size).
 * @flags:     in, GPUBUF_ALLOC_* bits.
 * @fd_flags:  in, flags of the returned fd: O_CLOEXEC and the access mode
 *             O_RDONLY or O_RDWR only. The access mode bounds what mmap()
 *             of the dma-buf may ask for; O_WRONLY is refused because mmap()
 *             needs read access, so such a buffer could never be CPU-mapped.
 * @numa_node: in, GPUBUF_NUMA_ANY or an online NUMA node.
 * @fd:        in, must be 0; out, the new dma-buf file descriptor.
 * @reserved0: in, must be 0.
 * @reserved:  in, must be 0.
 */
struct gpubuf_alloc {
	__u64 size;
	__u64 flags;
	__u32 fd_flags;
	__s32 numa_node;
	__s32 fd;
	__u32 reserved0;
	__u64 reserved[2];
};

#define GPUBUF_ALLOC_SIZE_VER0	48

/**
 * struct gpubuf_info - describe a gpubuf dma-buf
 * @fd:        in, a dma-buf file descriptor exported by gpubuf.
 * @reserved0: in, must be 0.
 * @size:      out, size in bytes (a multiple of the page size).
 * @flags:     out, the GPUBUF_ALLOC_* flags it was allocated with.
 * @numa_node: out, the node it was requested on, or GPUBUF_NUMA_ANY.
 * @nr_chunks: out, number of physically contiguous runs of its pages.
 * @huge_bytes: in, must be 0; out, bytes of it in 2 MiB pages, each of
 *             which a 2 MiB-aligned mapping maps with one PMD entry.
 * @reserve_bytes: in, must be 0; out, bytes of it lent by the reserve of
 *             2 MiB pages (module parameter reserve_bytes).
 *
 * Drivers before 0.5 return zero in @huge_bytes and @reserve_bytes (they
 * were reserved fields). No physical or DMA address is ever reported.
 */
struct gpubuf_info {
	__s32 fd;
	__u32 reserved0;
	__u64 size;
	__u64 flags;
	__s32 numa_node;
	__u32 nr_chunks;
	__u64 huge_bytes;
	__u64 reserve_bytes;
};

#define GPUBUF_INFO_SIZE_VER0	48

#define GPUBUF_IOC_MAGIC	0xB8

/**
 * DOC: GPUBUF_IOC_VERSION
 *
 * Report the driver's ABI range and release version. Its number never
 * changes, so any caller can identify any driver. Never fails except for
 * the common errors above.
 */
#define GPUBUF_IOC_VERSION	_IOR(GPUBUF_IOC_MAGIC, 0x00, struct gpubuf_version)

/**
 * DOC: GPUBUF_IOC_ALLOC
 *
 * Allocate zeroed, pinned (never migrated or swapped) pages, charged to the
 * caller's memory cgroup, and return them as a dma-buf fd. mmap() of that fd
 * is struct-page backed, so GPU drivers and RDMA can long-term pin it; it
 * must be MAP_SHARED and lie within the buffer. The buffer lives until its
 * last fd, mapping and importer reference are gone; closing /dev/gpubuf
 * does not free it.
 *
 * Errors:
 *   EINVAL  size 0; size whose page rounding overflows 64 bits; unknown
 *           flags bit; fd_flags other than O_CLOEXEC and an access mode;
 *           access mode O_WRONLY or O_ACCMODE; numa_node neither GPUBUF_NUMA_ANY nor an
 *           online node; GPUBUF_ALLOC_NUMA_STRICT with GPUBUF_NUMA_ANY
 *           or with a node that has no memory; non-zero fd or reserved
 *           field on input
 *   EFBIG   rounded size above the module parameter max_buffer_bytes
 *   ENOSPC  the buffer would take the bytes of all live buffers above the
 *           module parameter max_total_bytes
 *   ENOMEM  out of memory, or the caller's memory cgroup limit reached;
 *           nothing stays allocated. The driver checks the cgroup's room
 *           before each charge the kernel would answer with an OOM kill
 *           instead; another task of the cgroup charging at the same moment
 *           can still make it one
 *   EINTR   a fatal signal arrived while allocating; nothing stays allocated
 *   EMFILE  the caller has no free file descriptor (checked before any
 *           page is allocated)
 *   ENFILE  the system file table is full
 *
 * mmap() of the returned fd (MAP_SHARED) maps no page itself: each comes
 * in at its first touch (or with MAP_POPULATE / MADV_POPULATE_WRITE), 2 MiB
 * at a time where the address and the buffer offset are both 2 MiB
 * aligned; kernels that map a whole large folio per fault (7.2) map the
 * touched 64 KiB chunk at once. mmap() fails with:
 *   EINVAL  MAP_PRIVATE, or offset + length past the end of the buffer
 *   EACCES  protection not allowed by the fd's access mode
 *   ENOMEM  no memory, or the caller's memory cgroup limit reached, for the
 *           page tables of the mapping (checked as for ALLOC)
 * A failed mmap() leaves nothing mapped.
 */
#define GPUBUF_IOC_ALLOC	_IOWR(GPUBUF_IOC_MAGIC, 0x01, struct gpubuf_alloc)

/**
 * DOC: GPUBUF_IOC_INFO
 *
 * Describe a buffer given one of its dma-buf fds.
 *
 * Errors:
 *   EINVAL  non-zero reserved field; fd open but not a dma-buf
 *   EBADF   fd is not an open file descriptor
 *   ENODEV  fd is a dma-buf exported by another driver
 */
#define GPUBUF_IOC_INFO		_IOWR(GPUBUF_IOC_MAGIC, 0x02, struct gpubuf_info)

#endif /* _UAPI_LINUX_GPUBUF_H */
