// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf dma-buf exporter: attachments, DMA mapping, CPU access, mmap, vmap.
 *
 * Unlike udmabuf and the dma-buf heaps, the CPU mapping is an ordinary
 * struct-page mapping (never VM_PFNMAP, VM_IO or VM_MIXEDMAP):
 * pin_user_pages(FOLL_LONGTERM) and hmm_range_fault() must work on it,
 * because that is how cuMemHostRegister, KFD userptr and ibv_reg_mr take
 * host memory, and the kernel maps its 2 MiB pages with 2 MiB entries.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/mempolicy.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pgtable.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include <linux/gpubuf.h>

#include "gpubuf.h"
#include "gpubuf_compat.h"
#include "gpubuf_trace.h"

/**
 * struct gpubuf_attachment - one importer's view of a buffer
 * @dev:       the importing device
 * @sgt:       its own scatterlist, built for @dev's segment limit
 * @node:      entry in gpubuf_buffer.attachments until freed
 * @refs:      1 while attached, plus one per attachment using this one's
 *             DMA mapping (protected by gpubuf_buffer.lock)
 * @map_users: attachments whose DMA mapping is @sgt, this one included;
 *             @sgt is DMA-mapped while non-zero (gpubuf_buffer.lock)
 * @dir:       the direction @sgt was mapped with, valid while @map_users
 * @uses:      while mapped, the attachment whose @sgt this one maps with
 * @maps:      how many times this attachment is mapped (gpubuf_buffer.lock):
 *             an importer may map one attachment again, in the same
 *             direction, and unmaps each; the dma-buf core caches nothing
 *             for us (no cache_sgt_mapping)
 *
 * Attachments of one device in one direction share one DMA mapping: two
 * DRM files of a GPU importing the same buffer must not map its pages
 * twice. Overlapping mappings of a page are outside the DMA API (with
 * bounce buffering each gets its own copy, and syncing one overwrites what
 * the device wrote through the other), and DMA-API debugging says so. The
 * mapping belongs to the attachment that made it and outlives that
 * attachment's own unmap and detach while others use it.
 */
struct gpubuf_attachment {
	struct device *dev;
	struct sg_table sgt;
	struct list_head node;
	unsigned int refs;
	unsigned int map_users;
	enum dma_data_direction dir;
	struct gpubuf_attachment *uses;
	unsigned int maps;
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

static int gpubuf_dmabuf_attach(struct dma_buf *dmabuf,
				struct dma_buf_attachment *attachment)
{
	struct gpubuf_buffer *buf = dmabuf->priv;
	struct gpubuf_attachment *a;
	int ret;

	/*
	 * The attachment and its scatterlist (one entry per segment: 64 KiB
	 * segments cost 0.05% of the buffer per importer) are charged to the
	 * importing task's memory cgroup, like the buffer to the allocator's,
	 * and a cgroup limit fails the import rather than OOM-killing.
	 */
	a = kzalloc(sizeof(*a), GPUBUF_GFP_META);
	if (!a) {
		trace_gpubuf_attach(gpubuf_buffer_bytes(buf), attachment->dev,
				    -ENOMEM);
		return -ENOMEM;
	}

	/* Merged runs must respect what the importing device can take. */
	ret = gpubuf_sg_alloc_table(&a->sgt, buf->pages, buf->nr_pages,
				    gpubuf_buffer_bytes(buf),
				    gpubuf_max_segment(attachment->dev),
				    GPUBUF_GFP_META);
	if (ret) {
		kfree(a);
		trace_gpubuf_attach(gpubuf_buffer_bytes(buf), attachment->dev,
				    ret);
		return ret;
	}
	a->dev = attachment->dev;
	a->refs = 1;
	INIT_LIST_HEAD(&a->node);
	attachment->priv = a;

	mutex_lock(&buf->lock);
	list_add(&a->node, &buf->attachments);
	mutex_unlock(&buf->lock);
	trace_gpubuf_attach(gpubuf_buffer_bytes(buf), a->dev, 0);
	return 0;
}

/* Drop one reference to @a, under buf->lock; true when @a is to be freed. */
static bool gpubuf_attachment_put(struct gpubuf_attachment *a)
{
	if (--a->refs)
		return false;
	list_del(&a->node);
	return true;
}

static void gpubuf_attachment_free(struct gpubuf_attachment *a)
{
	sg_free_table(&a->sgt);
	kfree(a);
}

static void gpubuf_dmabuf_detach(struct dma_buf *dmabuf,
				 struct dma_buf_attachment *attachment)
{
	struct gpubuf_buffer *buf = dmabuf->priv;
	struct gpubuf_attachment *a = attachment->priv;
	bool last;

	trace_gpubuf_detach(gpubuf_buffer_bytes(buf), attachment->dev, 0);
	mutex_lock(&buf->lock);
	last = gpubuf_attachment_put(a);
	mutex_unlock(&buf->lock);
	if (last)
		gpubuf_attachment_free(a);
}

/* A mapped attachment of @dev in @dir whose mapping can be shared. */
static struct gpubuf_attachment *
gpubuf_mapping_find(struct gpubuf_buffer *buf, struct device *dev,
		    enum dma_data_direction dir)
{
	struct gpubuf_attachment *o;

	list_for_each_entry(o, &buf->attachments, node) {
		if (o->map_users && o->dev == dev && o->dir == dir)
			return o;
	}
	return NULL;
}

/* Whether a DMA mapping must be synced: bounce buffers, no snooping. */
static bool gpubuf_map_needs_sync(const struct gpubuf_attachment *o)
{
	return o->sgt.nents && dma_need_sync(o->dev, sg_dma_address(o->sgt.sgl));
}

static void gpubuf_trace_map(struct device *dev, enum dma_data_direction dir,
			     const struct gpubuf_attachment *o, bool shared,
			     int ret)
{
	if (trace_gpubuf_map_enabled())
		trace_gpubuf_map(dev, dir, o ? o->sgt.nents : 0, shared,
				 o && gpubuf_map_needs_sync(o), ret);
}

/*
 * The lock is held across dma_map_sgtable(), so two attachments of one
 * device mapping at once never make two mappings.
 */
static struct sg_table *
gpubuf_dmabuf_map(struct dma_buf_attachment *attachment,
		  enum dma_data_direction dir)
{
	struct gpubuf_buffer *buf = attachment->dmabuf->priv;
	struct gpubuf_attachment *a = attachment->priv;
	struct gpubuf_attachment *o;
	int ret = 0;

	mutex_lock(&buf->lock);
	/* Mapped already: the same mapping again, counted, or nothing. */
	if (a->uses) {
		o = a->uses;
		if (o->dir != dir || a->maps == UINT_MAX) {
			ret = -EBUSY;
		} else {
			o->map_users++;
			if (o != a)
				o->refs++;
			a->maps++;
		}
		mutex_unlock(&buf->lock);
		gpubuf_trace_map(a->dev, dir, ret ? NULL : o, !ret && o != a,
				 ret);
		return ret ? ERR_PTR(ret) : &o->sgt;
	}
	o = gpubuf_mapping_find(buf, a->dev, dir);
	if (o) {
		o->map_users++;
		if (o != a)
			o->refs++;
	} else if (a->map_users) {
		/*
		 * Unmapped, then mapped again in another direction while
		 * other attachments still use our scatterlist's mapping:
		 * nothing to map with. Importers map in one direction.
		 */
		ret = -EBUSY;
	} else {
		ret = dma_map_sgtable(a->dev, &a->sgt, dir, 0);
		if (!ret) {
			o = a;
			o->map_users = 1;
			o->dir = dir;
		}
	}
	if (!ret) {
		a->uses = o;
		a->maps = 1;
	}
	mutex_unlock(&buf->lock);
	gpubuf_trace_map(a->dev, dir, ret ? NULL : o, !ret && o != a, ret);
	return ret ? ERR_PTR(ret) : &o->sgt;
}

static void gpubuf_dmabuf_unmap(struct dma_buf_attachment *attachment,
				struct sg_table *sgt,
				enum dma_data_direction dir)
{
	struct gpubuf_buffer *buf = attachment->dmabuf->priv;
	struct gpubuf_attachment *a = attachment->priv;
	struct gpubuf_attachment *o;
	bool last = false;

	mutex_lock(&buf->lock);
	o = a->uses;
	if (WARN_ON_ONCE(!o)) {		/* an unmap without a map */
		mutex_unlock(&buf->lock);
		return;
	}
	if (!--a->maps)
		a->uses = NULL;
	if (trace_gpubuf_unmap_enabled())
		trace_gpubuf_unmap(a->dev, dir, o->sgt.nents, o != a,
				   gpubuf_map_needs_sync(o), 0);
	if (!--o->map_users)
		dma_unmap_sgtable(o->dev, &o->sgt, o->dir, 0);
	if (o != a)
		last = gpubuf_attachment_put(o);
	mutex_unlock(&buf->lock);
	if (last)
		gpubuf_attachment_free(o);
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
 * CPU access brackets sync every DMA mapping, once, in the direction it
 * was mapped with, not the direction of the CPU access: the
 * DMA API requires it, and with bounce buffering a read sync of a
 * DMA_TO_DEVICE mapping would copy the device's stale copy over the CPU's
 * writes. The CPU's own direction only matters for the kernel mapping.
 */
static int gpubuf_dmabuf_begin_cpu_access(struct dma_buf *dmabuf,
					  enum dma_data_direction dir)
{
	struct gpubuf_buffer *buf = dmabuf->priv;
	struct gpubuf_attachment *a;
	unsigned int n = 0;

	mutex_lock(&buf->lock);
	if (buf->vmap_count)
		invalidate_kernel_vmap_range(buf->vaddr,
					     gpubuf_buffer_bytes(buf));
	list_for_each_entry(a, &buf->attachments, node) {
		if (a->map_users) {
			dma_sync_sgtable_for_cpu(a->dev, &a->sgt, a->dir);
			n++;
		}
	}
	mutex_unlock(&buf->lock);
	trace_gpubuf_sync_begin(gpubuf_buffer_bytes(buf), dir, n);
	return 0;
}

static int gpubuf_dmabuf_end_cpu_access(struct dma_buf *dmabuf,
					enum dma_data_direction dir)
{
	struct gpubuf_buffer *buf = dmabuf->priv;
	struct gpubuf_attachment *a;
	unsigned int n = 0;

	mutex_lock(&buf->lock);
	if (buf->vmap_count)
		flush_kernel_vmap_range(buf->vaddr, gpubuf_buffer_bytes(buf));
	list_for_each_entry(a, &buf->attachments, node) {
		if (a->map_users) {
			dma_sync_sgtable_for_device(a->dev, &a->sgt, a->dir);
			n++;
		}
	}
	mutex_unlock(&buf->lock);
	trace_gpubuf_sync_end(gpubuf_buffer_bytes(buf), dir, n);
	return 0;
}

/*
 * The mapping is filled on demand, a page-table entry at a time, by the
 * core's fault path: this handler only names the buffer's page and takes
 * the reference the core drops when it unmaps it. Because the vma is not
 * VM_MIXEDMAP, finish_fault() maps a whole 2 MiB compound page with one PMD
 * wherever the virtual address and the buffer offset are both 2 MiB
 * aligned (libgpubuf places its mappings so), and single PTEs elsewhere.
 * Both kinds are normal pages to GUP and HMM. After MADV_DONTNEED, a
 * partial munmap or a PMD split, the next access simply faults here again.
 *
 * Faults made on the caller's behalf (GUP: MADV_POPULATE_WRITE, pins; and
 * the kernel's own copies into user memory) that start a new page table
 * check the cgroup's room for the next ones: see gpubuf_charge_headroom();
 * VM_FAULT_OOM becomes ENOMEM from GUP and EFAULT from a copy. A fault by
 * the CPU in user mode is left to the core, as for any memory the task
 * touches (VM_FAULT_OOM there would only make it retry).
 */
static vm_fault_t gpubuf_vm_fault(struct vm_fault *vmf)
{
	struct gpubuf_buffer *buf = vmf->vma->vm_private_data;
	struct page *page;

	if (vmf->pgoff >= buf->nr_pages)
		return VM_FAULT_SIGBUS;
	if (!(vmf->flags & FAULT_FLAG_USER) && pmd_none(*vmf->pmd) &&
	    gpubuf_charge_headroom())
		return VM_FAULT_OOM;
	page = buf->pages[vmf->pgoff];
	get_page(page);
	vmf->page = page;
	trace_gpubuf_fault(vmf->pgoff, vmf->address,
			   vmf->flags & FAULT_FLAG_USER,
			   PageHead(page) &&
			   compound_order(page) == GPUBUF_HUGE_ORDER &&
			   IS_ALIGNED(vmf->address, GPUBUF_HUGE_BYTES));
	return 0;
}

#ifdef CONFIG_NUMA
/*
 * A memory policy without MPOL_F_MOF (migrate on fault), so automatic NUMA
 * balancing leaves the mapping alone: it skips vmas whose policy does not
 * ask for it, and only VM_MIXEDMAP used to keep it away. Otherwise every
 * scan would make the buffer's entries PROT_NONE, invalidating every HMM
 * mirror and RDMA ODP registration of the range, for hinting faults that
 * try to migrate pages which cannot move (they are not on an LRU list).
 * The buffer's placement was decided at allocation (GPUBUF_IOC_ALLOC's
 * numa_node).
 */
#ifdef GPUBUF_HAVE_GET_POLICY_ILX
/*
 * Since 6.7 a vma whose get_policy gives none gets the task's policy, so
 * opting out takes a policy of our own: "local", never freed (its count
 * starts at one, callers that take a reference give it back, and
 * mpol_cond_put() leaves policies without MPOL_F_SHARED alone).
 */
static struct mempolicy gpubuf_vm_policy = {
	.refcnt = ATOMIC_INIT(1),
	.mode = MPOL_LOCAL,
	.home_node = NUMA_NO_NODE,
};

static struct mempolicy *gpubuf_vm_get_policy(struct vm_area_struct *vma,
					      unsigned long addr, pgoff_t *ilx)
{
	return &gpubuf_vm_policy;
}
#else
/* Before 6.7 no policy at all is what turns NUMA balancing away. */
static struct mempolicy *gpubuf_vm_get_policy(struct vm_area_struct *vma,
					      unsigned long addr)
{
	return NULL;
}
#endif
#endif

static const struct vm_operations_struct gpubuf_vm_ops = {
	.fault = gpubuf_vm_fault,
#ifdef CONFIG_NUMA
	.get_policy = gpubuf_vm_get_policy,
#endif
};

/*
 * The dma-buf core has already refused ranges past the end. Private
 * mappings are refused here: copy-on-write would silently detach the
 * caller from the memory GPUs see. VM_MAYSHARE, not VM_SHARED, marks
 * MAP_SHARED, because mmap clears VM_SHARED on read-only fds. The vma's
 * file holds the dma-buf, which holds @buf, for as long as the vma lives.
 *
 * Nothing is mapped here: the fault handler maps on first access (or
 * MADV_POPULATE_WRITE, which libgpubuf issues). Inserting pages now would
 * need vm_insert_page(), which makes the vma VM_MIXEDMAP, and the core maps
 * no PMDs in such a vma on 6.1 and 6.12 and cannot split them cleanly on
 * 7.x. VM_HUGEPAGE asks for PMDs where the kernel's THP policy allows them.
 * VM_DONTEXPAND refuses growing mremap() and also keeps mlock() away from
 * the vma: mlock would mark the buffer's pages PG_mlocked, which only pages
 * on an LRU list get cleared again.
 */
static int gpubuf_dmabuf_mmap(struct dma_buf *dmabuf,
			      struct vm_area_struct *vma)
{
	struct gpubuf_buffer *buf = dmabuf->priv;
	int ret;

	/* An importer's vma set up for PFNs cannot be struct-page backed. */
	if (!(vma->vm_flags & VM_MAYSHARE) ||
	    vma->vm_flags & (VM_PFNMAP | VM_IO | VM_MIXEDMAP))
		return -EINVAL;
	if (vma->vm_pgoff >= buf->nr_pages ||
	    vma_pages(vma) > buf->nr_pages - vma->vm_pgoff)
		return -EINVAL;

	/*
	 * The first fault allocates the upper page-table levels before the
	 * fault handler runs: make sure the cgroup has room for them now.
	 */
	ret = gpubuf_charge_headroom();
	if (ret)
		return ret;

	gpubuf_vm_flags_set(vma, VM_HUGEPAGE | VM_DONTEXPAND);
	vma->vm_ops = &gpubuf_vm_ops;
	vma->vm_private_data = buf;
	return 0;
}

/* One kernel mapping per buffer, shared by every vmap user; NULL on failure. */
static void *gpubuf_vmap_get(struct gpubuf_buffer *buf)
{
	void *vaddr = NULL;

	mutex_lock(&buf->lock);
	if (!buf->vmap_count) {
		buf->vaddr = vmap(buf->pages, buf->nr_pages, VM_MAP,
				  PAGE_KERNEL);
		if (!buf->vaddr)
			goto out_unlock;
	}
	buf->vmap_count++;
	vaddr = buf->vaddr;
out_unlock:
	mutex_unlock(&buf->lock);
	return vaddr;
}

static void gpubuf_vmap_put(struct gpubuf_buffer *buf)
{
	mutex_lock(&buf->lock);
	if (!WARN_ON(!buf->vmap_count) && !--buf->vmap_count) {
		vunmap(buf->vaddr);
		buf->vaddr = NULL;
	}
	mutex_unlock(&buf->lock);
}

#ifdef GPUBUF_VMAP_OP_RETURNS_VADDR
static void *gpubuf_dmabuf_vmap(struct dma_buf *dmabuf)
{
	return gpubuf_vmap_get(dmabuf->priv);
}

static void gpubuf_dmabuf_vunmap(struct dma_buf *dmabuf, void *vaddr)
{
	gpubuf_vmap_put(dmabuf->priv);
}
#else
static int gpubuf_dmabuf_vmap(struct dma_buf *dmabuf, struct gpubuf_kmap *map)
{
	void *vaddr = gpubuf_vmap_get(dmabuf->priv);

	if (!vaddr)
		return -ENOMEM;
	gpubuf_kmap_set_vaddr(map, vaddr);
	return 0;
}

static void gpubuf_dmabuf_vunmap(struct dma_buf *dmabuf,
				 struct gpubuf_kmap *map)
{
	gpubuf_vmap_put(dmabuf->priv);
}
#endif

static const struct dma_buf_ops gpubuf_dmabuf_ops = {
	.attach = gpubuf_dmabuf_attach,
	.detach = gpubuf_dmabuf_detach,
	.map_dma_buf = gpubuf_dmabuf_map,
	.unmap_dma_buf = gpubuf_dmabuf_unmap,
	.release = gpubuf_dmabuf_release,
	.begin_cpu_access = gpubuf_dmabuf_begin_cpu_access,
	.end_cpu_access = gpubuf_dmabuf_end_cpu_access,
	.mmap = gpubuf_dmabuf_mmap,
	.vmap = gpubuf_dmabuf_vmap,
	.vunmap = gpubuf_dmabuf_vunmap,
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
	const char *name;

	info.exp_name = GPUBUF_EXPORTER_NAME;
	info.ops = &gpubuf_dmabuf_ops;
	info.size = gpubuf_buffer_bytes(buf);
	info.flags = fd_flags & O_ACCMODE;
	info.priv = buf;

	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		gpubuf_buffer_destroy(buf);
		return dmabuf;
	}
	/*
	 * Named "gpubuf" until DMA_BUF_SET_NAME says otherwise, so that its
	 * mappings say whose they are in /proc/PID/maps ("/dmabuf:gpubuf"):
	 * gpubuf-info --processes finds a buffer kept by a mapping alone.
	 * The core frees the name; without memory for it there is none.
	 */
	name = kstrdup(GPUBUF_EXPORTER_NAME, GPUBUF_GFP_META);
	if (name) {
		spin_lock(&dmabuf->name_lock);
		dmabuf->name = name;
		spin_unlock(&dmabuf->name_lock);
	}
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
