// SPDX-License-Identifier: MIT
/*
 * Where buffer mappings go. gpubuf.ko backs a buffer with 2 MiB compound
 * pages wherever it can, and the kernel maps such a page with one PMD
 * entry, instead of 512 PTEs, when the virtual address and the buffer
 * offset are both 2 MiB aligned. mmap(NULL, ...) gives no such promise for
 * a dma-buf (its file has no get_unmapped_area of its own), so mappings of
 * a PMD or more are placed here: reserve the length plus one PMD of address
 * space, map the buffer over the aligned part, give back the rest.
 *
 * Also whether GPU drivers can pin what a mapping holds: not when its
 * exporter mapped it with remap_pfn_range (VM_PFNMAP/VM_IO).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/internal.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22	/* Linux 5.14 */
#define MADV_POPULATE_WRITE	23
#endif

/*
 * The span one PMD entry maps: a page table page holds page_size / 8
 * entries (2 MiB with 4 KiB pages, 512 MiB with 64 KiB pages).
 */
static size_t gpubuf_pmd_bytes(size_t page_size)
{
	return page_size * (page_size / sizeof(uint64_t));
}

void *gpubuf_map_placed(size_t size, int prot, int fd, size_t page_size)
{
	size_t pmd = gpubuf_pmd_bytes(page_size);
	/* Another exporter's dma-buf need not be a page multiple. */
	size_t len = (size + page_size - 1) & ~(page_size - 1);
	uintptr_t start, aligned, end;
	size_t span;
	void *res, *ptr;

	if (len < pmd || len > SIZE_MAX - pmd)
		return mmap(NULL, size, prot, MAP_SHARED, fd, 0);
	/* Address space only: PROT_NONE and MAP_NORESERVE cost no memory. */
	span = len + pmd - page_size;
	res = mmap(NULL, span, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return mmap(NULL, size, prot, MAP_SHARED, fd, 0);
	start = (uintptr_t)res;
	end = start + span;
	aligned = (start + pmd - 1) & ~(uintptr_t)(pmd - 1);
	ptr = mmap((void *)aligned, size, prot, MAP_SHARED | MAP_FIXED, fd, 0);
	if (ptr == MAP_FAILED) {
		int err = errno;

		munmap(res, span);
		errno = err;
		return MAP_FAILED;
	}
	if (aligned > start)
		munmap(res, aligned - start);
	if (end > aligned + len)
		munmap((void *)(aligned + len), end - (aligned + len));
	return ptr;
}

int gpubuf_map_populate(void *ptr, size_t size, bool writable)
{
	if (!madvise(ptr, size, writable ? MADV_POPULATE_WRITE :
					   MADV_POPULATE_READ))
		return 0;
	/* Before 5.14: pages come in on first access instead. */
	if (errno == EINVAL)
		return 0;
	/* EFAULT/EHWPOISON: a page could not be mapped. */
	return errno == ENOMEM || errno == EINTR ? -errno : -EFAULT;
}

/*
 * The VmFlags of the vma holding addr, from /proc/self/smaps, into flags
 * (" pf io ... "): 0, or -1 when /proc cannot tell.
 */
static int gpubuf_vma_flags(const void *addr, char *flags, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	bool inside = false;
	char *line = NULL;
	size_t cap = 0;
	int ret = -1;
	FILE *f;

	f = fopen("/proc/self/smaps", "re");
	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0) {
		unsigned long lo, hi;
		char dash;

		/* A vma's first line: "lo-hi perms offset dev inode path". */
		if (sscanf(line, "%lx%c%lx ", &lo, &dash, &hi) == 3 &&
		    dash == '-') {
			if (inside)
				break;	/* that vma had no VmFlags line */
			inside = lo <= a && a < hi;
			continue;
		}
		if (inside && !strncmp(line, "VmFlags:", 8)) {
			snprintf(flags, len, " %s", line + 8);
			ret = 0;
			break;
		}
	}
	free(line);
	fclose(f);
	return ret;
}

int gpubuf_buf_check_pinnable(struct gpubuf *buf, const char *what)
{
	int known = atomic_load(&buf->pinnable);
	char flags[256];

	/* gpubuf's own buffers are pages that can be pinned by design. */
	if (!(buf->flags & GPUBUF_BUF_IMPORTED))
		return 0;
	if (!known) {
		known = 1;
		if (!gpubuf_vma_flags(buf->ptr, flags, sizeof(flags)) &&
		    (strstr(flags, " pf ") || strstr(flags, " pf\n") ||
		     strstr(flags, " io ") || strstr(flags, " io\n")))
			known = -EOPNOTSUPP;
		atomic_store(&buf->pinnable, known);
	}
	if (known > 0)
		return 0;
	gpubuf_error_set("%s: the imported dma-buf's exporter maps it VM_PFNMAP/VM_IO (remap_pfn_range), and GPU drivers cannot pin such pages; give the dma-buf fd to the GPU driver instead, or allocate with gpubuf_alloc()",
			 what);
	return -EOPNOTSUPP;
}
