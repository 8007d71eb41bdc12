// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf dma-buf exporter: DMA mappings, CPU access, mmap, vmap.
 *
 * Unlike udmabuf and the dma-buf heaps, the CPU mapping is built from struct
 * pages (VM_MIXEDMAP, never VM_PFNMAP or VM_IO): pin_user_pages(FOLL_LONGTERM)
 * and hmm_range_fault() must work on it, because that is how
 * cuMemHostRegister, KFD userptr and ibv_reg_mr take host memory.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pgtable.h>
#include <linux/scatterlist.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include <linux/gpubuf.h>

#include "gpubuf.h"
#include "gpubuf_compat.h"

/**
 * struct gpubuf_mapping - the buffer DMA-mapped for one device and direction
 * @dev:   the device it is mapped for
 * @dir:   the direction it was mapped with
 * @sgt:   its scatterlist, merged to what @dev can take in one segment
 * @users: attachments using it (protected by gpubuf_buffer.lock)
 * @node:  entry in gpubuf_buffer.mappings
 *
 * Attachments of one device in one direction share a mapping: two DRM
 * files of a GPU importing the same buffer must not map its pages twice.
 * Overlapping mappings of one page are outside the DMA API (with bounce
 * buffering each would get its own copy, and syncing one would overwrite
 * what the device wrote through the other), and DMA-API debugging says so.
 */
struct gpubuf_mapping {
	struct device *dev;
	enum dma_data_direction dir;
	struct sg_table sgt;
	unsigned int users;
	struct list_head node;
};

/*
 * The longest scatterlist segment @dev can map at once: its own segment
 * limit, and what the DMA layer can map in one piece. With bounce
 * buffering (swiotlb=force, SEV/TDX guests, devices that cannot reach all
 * of RAM) the latter is a few hundred KiB, far below what GPUs declare.
 */
static unsigned int gpubuf_max_segment(struct device *dev)
{
	size_t max = min_t(size_t, dma_get_max_seg_size(dev),
			   dma_max_mapping_size(dev));

	return max_t(size_t, PAGE_SIZE, rounddown(max, PAGE_SIZE));
}

static struct gpubuf_mapping *gpubuf_mapping_find(struct gpubuf_buffer *buf,
						  struct device *dev,
						  enum dma_data_direction dir)
{
	struct gpubuf_mapping *m;

	list_for_each_entry(m, &buf->mappings, node) {
		if (m->dev == dev && m->dir == dir)
			return m;
	}
	return NULL;
}

/*
 * A new mapping. Its scatterlist (one entry per segment: 64 KiB segments
 * cost 0.05% of the buffer) is charged to the importing task's memory
 * cgroup, like the buffer to the allocator's, and a cgroup limit fails
 * the import rather than OOM-killing.
 */
static struct gpubuf_mapping *gpubuf_mapping_create(struct gpubuf_buffer *buf,
						    struct device *dev,
						    enum dma_data_direction dir)
{
	struct gpubuf_mapping *m;
	int ret;

	m = kzalloc(sizeof(*m), GPUBUF_GFP_META);
	if (!m)
		return ERR_PTR(-ENOMEM);
	/* Merged runs must respect what the importing device can take. */
	ret = sg_alloc_table_from_pages_segment(&m->sgt, buf->pages,
						buf->nr_pages, 0,
						gpubuf_buffer_bytes(buf),
						gpubuf_max_segment(dev),
						GPUBUF_GFP_META);
	if (ret)
		goto err_free;
	ret = dma_map_sgtable(dev, &m->sgt, dir, 0);
	if (ret)
		goto err_table;
	m->dev = dev;
	m->dir = dir;
	m->users = 1;
	return m;

err_table:
	sg_free_table(&m->sgt);
err_free:
	kfree(m);
	return ERR_PTR(ret);
}

/*
 * attachment->priv is the mapping while the attachment is mapped. The
 * lock is held across creating one, so a second attachment of the same
 * device never races into a second mapping.
 */
static struct sg_table *
gpubuf_dmabuf_map(struct dma_buf_attachment *attachment,
		  enum dma_data_direction dir)
{
	struct gpubuf_buffer *buf = attachment->dmabuf->priv;
	struct gpubuf_mapping *m;

	mutex_lock(&buf->lock);
	m = gpubuf_mapping_find(buf, attachment->dev, dir);
	if (m) {
		m->users++;
	} else {
		m = gpubuf_mapping_create(buf, attachment->dev, dir);
		if (!IS_ERR(m))
			list_add(&m->node, &buf->mappings);
	}
	mutex_unlock(&buf->lock);
	if (IS_ERR(m))
		return ERR_CAST(m);
	attachment->priv = m;
	return &m->sgt;
}

static void gpubuf_dmabuf_unmap(struct dma_buf_attachment *attachment,
				struct sg_table *sgt,
				enum dma_data_direction dir)
{
	struct gpubuf_buffer *buf = attachment->dmabuf->priv;
	struct gpubuf_mapping *m = attachment->priv;

	attachment->priv = NULL;
	mutex_lock(&buf->lock);
	if (--m->users)
		m = NULL;
	else
		list_del(&m->node);
	mutex_unlock(&buf->lock);
	if (!m)
		return;
	dma_unmap_sgtable(m->dev, &m->sgt, m->dir, 0);
	sg_free_table(&m->sgt);
	kfree(m);
}

/*
 * Runs when the last reference to the dma-buf is gone: every fd closed,
 * every mapping unmapped, every importer detached.
 */
static void gpubuf_dmabuf_release(struct dma_buf *dmabuf)
{
	gpubuf_buffer_destroy(dmabuf->priv);
}

/*
 * CPU access brackets sync every mapping in the direction it was mapped
 * with, not the direction of the CPU access: the
 * DMA API requires it, and with bounce buffering a read sync of a
 * DMA_TO_DEVICE mapping would copy the device's stale copy over the CPU's
 * writes. The CPU's own direction only matters for the kernel mapping.
 */
static int gpubuf_dmabuf_begin_cpu_access(struct dma_buf *dmabuf,
					  enum dma_data_direction dir)
{
	struct gpubuf_buffer *buf = dmabuf->priv;
	struct gpubuf_mapping *m;

	mutex_lock(&buf->lock);
	if (buf->vmap_count)
		invalidate_kernel_vmap_range(buf->vaddr,
					     gpubuf_buffer_bytes(buf));
	list_for_each_entry(m, &buf->mappings, node)
		dma_sync_sgtable_for_cpu(m->dev, &m->sgt, m->dir);
	mutex_unlock(&buf->lock);
	return 0;
}

static int gpubuf_dmabuf_end_cpu_access(struct dma_buf *dmabuf,
					enum dma_data_direction dir)
{
	struct gpubuf_buffer *buf = dmabuf->priv;
	struct gpubuf_mapping *m;

	mutex_lock(&buf->lock);
	if (buf->vmap_count)
		flush_kernel_vmap_range(buf->vaddr, gpubuf_buffer_bytes(buf));
	list_for_each_entry(m, &buf->mappings, node)
		dma_sync_sgtable_for_device(m->dev, &m->sgt, m->dir);
	mutex_unlock(&buf->lock);
	return 0;
}

/*
 * Page table entries of the mapping can be dropped (MADV_DONTNEED, a
 * partial munmap split) while the buffer lives; the next access faults here
 * and gets the buffer's own page back, inserted as at mmap time, so the
 * mapping stays struct-page backed and GUP-pinnable.
 */
static vm_fault_t gpubuf_vm_fault(struct vm_fault *vmf)
{
	struct gpubuf_buffer *buf = vmf->vma->vm_private_data;
	int ret;

	if (vmf->pgoff >= buf->nr_pages)
		return VM_FAULT_SIGBUS;
	ret = vm_insert_page(vmf->vma, vmf->address, buf->pages[vmf->pgoff]);
	if (ret == -ENOMEM)
		return VM_FAULT_OOM;
	/* -EBUSY: another thread mapped it first. */
	if (ret && ret != -EBUSY)
		return VM_FAULT_SIGBUS;
	return VM_FAULT_NOPAGE;
}

static const struct vm_operations_struct gpubuf_vm_ops = {
	.fault = gpubuf_vm_fault,
};

/*
 * Insert every page of the mapping now, one page-table page's worth of
 * entries at a time: far cheaper than a fault per page, and the only walk
 * over the range (libgpubuf maps without MAP_POPULATE). mmap_lock is held
 * for writing, so a batch boundary checks for a fatal signal and
 * reschedules. On error the caller's mmap() fails and the core unmaps
 * what was inserted.
 */
static int gpubuf_mmap_populate(struct vm_area_struct *vma,
				struct page **pages)
{
	unsigned long addr = vma->vm_start;

	while (addr < vma->vm_end) {
		unsigned long count = min((vma->vm_end - addr) >> PAGE_SHIFT,
					  PTRS_PER_PTE - pte_index(addr));
		unsigned long left = count;
		int ret;

		if (fatal_signal_pending(current))
			return -EINTR;
		/* This batch's page tables; see gpubuf_charge_headroom(). */
		ret = gpubuf_charge_headroom();
		if (ret)
			return ret;
		ret = vm_insert_pages(vma, addr, pages, &left);
		if (ret)
			return ret;
		if (left)
			return -EFAULT;
		pages += count;
		addr += count << PAGE_SHIFT;
		cond_resched();
	}
	return 0;
}

/*
 * The dma-buf core has already refused ranges past the end. Private
 * mappings are refused here: copy-on-write would silently detach the
 * caller from the memory GPUs see. VM_MAYSHARE, not VM_SHARED, marks
 * MAP_SHARED, because mmap clears VM_SHARED on read-only fds. The vma's
 * file holds the dma-buf, which holds @buf, for as long as the vma lives.
 */
static int gpubuf_dmabuf_mmap(struct dma_buf *dmabuf,
			      struct vm_area_struct *vma)
{
	struct gpubuf_buffer *buf = dmabuf->priv;

	/* An importer's vma set up for PFNs cannot be struct-page backed. */
	if (!(vma->vm_flags & VM_MAYSHARE) ||
	    vma->vm_flags & (VM_PFNMAP | VM_IO))
		return -EINVAL;
	if (vma->vm_pgoff >= buf->nr_pages ||
	    vma_pages(vma) > buf->nr_pages - vma->vm_pgoff)
		return -EINVAL;

	/* VM_MIXEDMAP up front: the fault handler inserts pages too. */
	gpubuf_vm_flags_set(vma, VM_MIXEDMAP | VM_DONTEXPAND);
	vma->vm_ops = &gpubuf_vm_ops;
	vma->vm_private_data = buf;
	return gpubuf_mmap_populate(vma, buf->pages + vma->vm_pgoff);
}

#ifdef GPUBUF_HAVE_VMAP_OP
static int gpubuf_dmabuf_vmap(struct dma_buf *dmabuf, struct gpubuf_kmap *map)
{
	struct gpubuf_buffer *buf = dmabuf->priv;
	int ret = 0;

	mutex_lock(&buf->lock);
	if (!buf->vmap_count) {
		buf->vaddr = vmap(buf->pages, buf->nr_pages, VM_MAP,
				  PAGE_KERNEL);
		if (!buf->vaddr) {
			ret = -ENOMEM;
			goto out_unlock;
		}
	}
	buf->vmap_count++;
	gpubuf_kmap_set_vaddr(map, buf->vaddr);
out_unlock:
	mutex_unlock(&buf->lock);
	return ret;
}

static void gpubuf_dmabuf_vunmap(struct dma_buf *dmabuf,
				 struct gpubuf_kmap *map)
{
	struct gpubuf_buffer *buf = dmabuf->priv;

	mutex_lock(&buf->lock);
	if (!WARN_ON(!buf->vmap_count) && !--buf->vmap_count) {
		vunmap(buf->vaddr);
		buf->vaddr = NULL;
	}
	mutex_unlock(&buf->lock);
}
#endif

static const struct dma_buf_ops gpubuf_dmabuf_ops = {
	.map_dma_buf = gpubuf_dmabuf_map,
	.unmap_dma_buf = gpubuf_dmabuf_unmap,
	.release = gpubuf_dmabuf_release,
	.begin_cpu_access = gpubuf_dmabuf_begin_cpu_access,
	.end_cpu_access = gpubuf_dmabuf_end_cpu_access,
	.mmap = gpubuf_dmabuf_mmap,
#ifdef GPUBUF_HAVE_VMAP_OP
	.vmap = gpubuf_dmabuf_vmap,
	.vunmap = gpubuf_dmabuf_vunmap,
#endif
};

/**
 * gpubuf_export() - wrap a buffer in a new dma-buf
 * @buf:      the buffer; ownership passes to this function
 * @fd_flags: validated O_CLOEXEC and access-mode bits
 *
 * On success the dma-buf owns @buf and frees it from its release op. On
 * failure @buf has already been freed.
 *
 * Return: the dma-buf, or an ERR_PTR.
 */
struct dma_buf *gpubuf_export(struct gpubuf_buffer *buf, u32 fd_flags)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct dma_buf *dmabuf;

	info.exp_name = GPUBUF_EXPORTER_NAME;
	info.ops = &gpubuf_dmabuf_ops;
	info.size = gpubuf_buffer_bytes(buf);
	info.flags = fd_flags & O_ACCMODE;
	info.priv = buf;

	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf))
		gpubuf_buffer_destroy(buf);
	return dmabuf;
}

/**
 * gpubuf_dmabuf_to_buffer() - the gpubuf buffer behind a dma-buf
 * @dmabuf: any dma-buf
 *
 * Return: the buffer, or NULL when another driver exported @dmabuf.
 */
struct gpubuf_buffer *gpubuf_dmabuf_to_buffer(struct dma_buf *dmabuf)
{
	return dmabuf->ops == &gpubuf_dmabuf_ops ? dmabuf->priv : NULL;
}
