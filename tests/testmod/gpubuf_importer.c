// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf_importer: a test-only DMA device that imports a dma-buf the way a
 * GPU driver does. It declares a 64-bit DMA mask and no segment-size limit,
 * so the exporter alone decides how large its scatterlist segments are; in
 * a guest booted with swiotlb=force every mapping is bounce-buffered, which
 * is what confidential-computing guests (SEV, TDX) do to every device. Its
 * mmap() maps a dma-buf through dma_buf_mmap(), as a DRM driver's does.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "gpubuf_compat.h"
#include "gpubuf_importer.h"

static struct platform_device *importer_pdev;

/* One attachment per open file, mapped once or twice, guarded by @lock. */
struct importer_file {
	struct mutex lock; /* protects every field below */
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	enum dma_data_direction dir;
	struct sg_table *sgt2;		/* IMPORTER_IOC_MAP_AGAIN's, or NULL */
	enum dma_data_direction dir2;
	struct dma_buf *mmap_dmabuf;	/* IMPORTER_IOC_MMAP_VIA's, or NULL */
	u32 mmap_flags;
};

static struct sg_table *importer_map_attachment(struct dma_buf_attachment *a,
						enum dma_data_direction dir)
{
#ifdef GPUBUF_HAVE_DMA_BUF_MAP_ATTACHMENT_UNLOCKED
	return dma_buf_map_attachment_unlocked(a, dir);
#else
	return dma_buf_map_attachment(a, dir);
#endif
}

static void importer_unmap_attachment(struct dma_buf_attachment *a,
				      struct sg_table *sgt,
				      enum dma_data_direction dir)
{
#ifdef GPUBUF_HAVE_DMA_BUF_MAP_ATTACHMENT_UNLOCKED
	dma_buf_unmap_attachment_unlocked(a, sgt, dir);
#else
	dma_buf_unmap_attachment(a, sgt, dir);
#endif
}

/* dma_buf_vmap() in its three generations: 0 with map->vaddr, or an errno. */
#ifdef GPUBUF_VMAP_OP_RETURNS_VADDR
struct importer_kmap {
	void *vaddr;
};

static int importer_vmap_buf(struct dma_buf *dmabuf, struct importer_kmap *map)
{
	map->vaddr = dma_buf_vmap(dmabuf);
	return map->vaddr ? 0 : -ENOMEM;
}

static void importer_vunmap_buf(struct dma_buf *dmabuf,
				struct importer_kmap *map)
{
	dma_buf_vunmap(dmabuf, map->vaddr);
}
#else
#define importer_kmap gpubuf_kmap

static int importer_vmap_buf(struct dma_buf *dmabuf, struct importer_kmap *map)
{
#ifdef GPUBUF_HAVE_DMA_BUF_VMAP_UNLOCKED
	return dma_buf_vmap_unlocked(dmabuf, map);
#else
	return dma_buf_vmap(dmabuf, map);
#endif
}

static void importer_vunmap_buf(struct dma_buf *dmabuf,
				struct importer_kmap *map)
{
#ifdef GPUBUF_HAVE_DMA_BUF_VMAP_UNLOCKED
	dma_buf_vunmap_unlocked(dmabuf, map);
#else
	dma_buf_vunmap(dmabuf, map);
#endif
}
#endif

static int importer_vmap(struct importer_vmap *req)
{
	struct importer_kmap map = { 0 };
	struct dma_buf *dmabuf;
	size_t i, n;
	u64 *words;
	int ret;

	dmabuf = dma_buf_get(req->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	ret = importer_vmap_buf(dmabuf, &map);
	if (ret)
		goto out_put;
	ret = dma_buf_begin_cpu_access(dmabuf, DMA_BIDIRECTIONAL);
	if (ret)
		goto out_vunmap;
	words = map.vaddr;
	n = dmabuf->size / sizeof(*words);
	req->sum = 0;
	for (i = 0; i < n; i++)
		req->sum += READ_ONCE(words[i]);
	for (i = 0; i < n; i++)
		WRITE_ONCE(words[i], req->seed + i);
	ret = dma_buf_end_cpu_access(dmabuf, DMA_BIDIRECTIONAL);
out_vunmap:
	importer_vunmap_buf(dmabuf, &map);
out_put:
	dma_buf_put(dmabuf);
	return ret;
}

static void importer_release_locked(struct importer_file *f)
{
	lockdep_assert_held(&f->lock);
	if (!f->dmabuf)
		return;
	if (f->sgt2)
		importer_unmap_attachment(f->attach, f->sgt2, f->dir2);
	f->sgt2 = NULL;
	importer_unmap_attachment(f->attach, f->sgt, f->dir);
	dma_buf_detach(f->dmabuf, f->attach);
	dma_buf_put(f->dmabuf);
	f->dmabuf = NULL;
}

static int importer_map(struct importer_file *f, struct importer_map *req)
{
	struct scatterlist *sg;
	unsigned int i;
	int ret;

	lockdep_assert_held(&f->lock);
	if (f->dmabuf)
		return -EBUSY;
	f->dmabuf = dma_buf_get(req->fd);
	if (IS_ERR(f->dmabuf)) {
		ret = PTR_ERR(f->dmabuf);
		goto err_clear;
	}
	f->attach = dma_buf_attach(f->dmabuf, &importer_pdev->dev);
	if (IS_ERR(f->attach)) {
		ret = PTR_ERR(f->attach);
		goto err_put;
	}
	f->dir = req->dir;
	f->sgt = importer_map_attachment(f->attach, f->dir);
	if (IS_ERR(f->sgt)) {
		ret = PTR_ERR(f->sgt);
		goto err_detach;
	}
	req->nents = f->sgt->nents;
	req->max_seg = 0;
	req->total = 0;
	req->first_dma = sg_dma_address(f->sgt->sgl);
	for_each_sgtable_dma_sg(f->sgt, sg, i) {
		req->max_seg = max_t(u64, req->max_seg, sg_dma_len(sg));
		req->total += sg_dma_len(sg);
	}
	return 0;

err_detach:
	dma_buf_detach(f->dmabuf, f->attach);
err_put:
	dma_buf_put(f->dmabuf);
err_clear:
	f->dmabuf = NULL;
	return ret;
}

static int importer_map_again(struct importer_file *f,
			      struct importer_map *req)
{
	struct sg_table *sgt;

	lockdep_assert_held(&f->lock);
	if (!f->dmabuf)
		return -ENOENT;
	if (f->sgt2)
		return -EBUSY;
	sgt = importer_map_attachment(f->attach, req->dir);
	if (IS_ERR(sgt))
		return PTR_ERR(sgt);
	f->sgt2 = sgt;
	f->dir2 = req->dir;
	req->nents = sgt->nents;
	req->first_dma = sg_dma_address(sgt->sgl);
	return 0;
}

#define IMPORTER_MMAP_FLAGS \
	(IMPORTER_MMAP_PFNMAP | IMPORTER_MMAP_IO | IMPORTER_MMAP_MIXEDMAP)

static int importer_mmap_via(struct importer_file *f,
			     const struct importer_mmap_via *req)
{
	struct dma_buf *dmabuf, *old;

	if (req->flags & ~IMPORTER_MMAP_FLAGS)
		return -EINVAL;
	dmabuf = dma_buf_get(req->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	mutex_lock(&f->lock);
	old = f->mmap_dmabuf;
	f->mmap_dmabuf = dmabuf;
	f->mmap_flags = req->flags;
	mutex_unlock(&f->lock);
	if (old)
		dma_buf_put(old);
	return 0;
}

/*
 * A driver's mmap of an imported buffer: the vma goes to the exporter
 * through dma_buf_mmap(), with the flags IMPORTER_IOC_MMAP_VIA chose.
 */
static int importer_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct importer_file *f = file->private_data;
	struct dma_buf *dmabuf;
	vm_flags_t flags = 0;
	int ret;

	mutex_lock(&f->lock);
	dmabuf = f->mmap_dmabuf;
	if (dmabuf)
		get_dma_buf(dmabuf);
	if (f->mmap_flags & IMPORTER_MMAP_PFNMAP)
		flags |= VM_PFNMAP;
	if (f->mmap_flags & IMPORTER_MMAP_IO)
		flags |= VM_IO;
	if (f->mmap_flags & IMPORTER_MMAP_MIXEDMAP)
		flags |= VM_MIXEDMAP;
	mutex_unlock(&f->lock);
	if (!dmabuf)
		return -ENODEV;
	gpubuf_vm_flags_set(vma, flags);
	ret = dma_buf_mmap(dmabuf, vma, vma->vm_pgoff);
	dma_buf_put(dmabuf);
	return ret;
}

static long importer_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct importer_file *f = file->private_data;
	struct importer_mmap_via mreq;
	struct importer_vmap vreq;
	struct importer_map req;
	int ret;

	switch (cmd) {
	case IMPORTER_IOC_MMAP_VIA:
		if (copy_from_user(&mreq, (void __user *)arg, sizeof(mreq)))
			return -EFAULT;
		return importer_mmap_via(f, &mreq);
	case IMPORTER_IOC_VMAP:
		if (copy_from_user(&vreq, (void __user *)arg, sizeof(vreq)))
			return -EFAULT;
		if (vreq.reserved)
			return -EINVAL;
		ret = importer_vmap(&vreq);
		if (ret)
			return ret;
		return copy_to_user((void __user *)arg, &vreq, sizeof(vreq)) ?
		       -EFAULT : 0;
	case IMPORTER_IOC_MAP:
		if (copy_from_user(&req, (void __user *)arg, sizeof(req)))
			return -EFAULT;
		if (req.reserved || req.dir > IMPORTER_DIR_FROM_DEVICE)
			return -EINVAL;
		mutex_lock(&f->lock);
		ret = importer_map(f, &req);
		mutex_unlock(&f->lock);
		if (ret)
			return ret;
		/* The mapping stays until UNMAP or close either way. */
		return copy_to_user((void __user *)arg, &req, sizeof(req)) ?
		       -EFAULT : 0;
	case IMPORTER_IOC_MAP_AGAIN:
		if (copy_from_user(&req, (void __user *)arg, sizeof(req)))
			return -EFAULT;
		if (req.reserved || req.dir > IMPORTER_DIR_FROM_DEVICE)
			return -EINVAL;
		mutex_lock(&f->lock);
		ret = importer_map_again(f, &req);
		mutex_unlock(&f->lock);
		if (ret)
			return ret;
		return copy_to_user((void __user *)arg, &req, sizeof(req)) ?
		       -EFAULT : 0;
	case IMPORTER_IOC_UNMAP:
		mutex_lock(&f->lock);
		ret = f->dmabuf ? 0 : -ENOENT;
		importer_release_locked(f);
		mutex_unlock(&f->lock);
		return ret;
	default:
		return -ENOTTY;
	}
}

static int importer_open(struct inode *inode, struct file *file)
{
	struct importer_file *f = kzalloc(sizeof(*f), GFP_KERNEL);

	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	file->private_data = f;
	return 0;
}

static int importer_release(struct inode *inode, struct file *file)
{
	struct importer_file *f = file->private_data;

	mutex_lock(&f->lock);
	importer_release_locked(f);
	if (f->mmap_dmabuf)
		dma_buf_put(f->mmap_dmabuf);
	mutex_unlock(&f->lock);
	mutex_destroy(&f->lock);
	kfree(f);
	return 0;
}

static const struct file_operations importer_fops = {
	.owner = THIS_MODULE,
	.open = importer_open,
	.release = importer_release,
	.unlocked_ioctl = importer_ioctl,
	.mmap = importer_mmap,
	.llseek = noop_llseek,
};

static struct miscdevice importer_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "gpubuf_importer",
	.fops = &importer_fops,
	.mode = 0600,
};

static int __init importer_init(void)
{
	int ret;

	importer_pdev = platform_device_register_simple("gpubuf-test-importer",
							PLATFORM_DEVID_NONE,
							NULL, 0);
	if (IS_ERR(importer_pdev))
		return PTR_ERR(importer_pdev);
	/* What GPUs declare: any address, segments of any length. */
	ret = dma_coerce_mask_and_coherent(&importer_pdev->dev,
					   DMA_BIT_MASK(64));
	if (ret)
		goto err_unregister;
	dma_set_max_seg_size(&importer_pdev->dev, UINT_MAX);
	ret = misc_register(&importer_misc);
	if (ret)
		goto err_unregister;
	return 0;

err_unregister:
	platform_device_unregister(importer_pdev);
	return ret;
}

static void __exit importer_exit(void)
{
	misc_deregister(&importer_misc);
	platform_device_unregister(importer_pdev);
}

module_init(importer_init);
module_exit(importer_exit);

GPUBUF_IMPORT_DMA_BUF_NS();
MODULE_DESCRIPTION("gpubuf test importer: a GPU-like DMA device that maps dma-bufs");
MODULE_LICENSE("GPL");
