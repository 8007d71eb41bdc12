// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf_pinprobe: a test-only misc device that runs, on a caller's address
 * range, the two calls GPU drivers use to take host memory:
 *   pin_user_pages_fast(FOLL_WRITE | FOLL_LONGTERM)  NVIDIA cuMemHostRegister
 *   hmm_range_fault()                                 amdgpu/KFD userptr
 * and returns a checksum read through the pages obtained, so the test can
 * tell that the kernel reached the very pages userspace wrote. Its mmap()
 * is the control: a VM_PFNMAP mapping, which both calls must refuse, on
 * every kernel (DRM drivers' mappings are PFNMAP on some kernels only).
 * The same pages also come as a dma-buf whose mmap() is VM_PFNMAP, the
 * control for importers (PINPROBE_IOC_EXPORT_PFNMAP). PINPROBE_OP_PIN_HOLD
 * keeps a pin past the call, until the file is closed, as an RDMA MR does.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/hmm.h>
#include <linux/jiffies.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>

#include "gpubuf_compat.h"
#include "gpubuf_pinprobe.h"

/* 1 GiB: the largest range the tests pin (a 2 MiB array of pointers). */
#define PINPROBE_MAX_PAGES	(1UL << (30 - PAGE_SHIFT))

/* Pages behind the PFNMAP control mapping, one allocation at load. */
static struct page *pinprobe_pfnmap_pages;

static u64 pinprobe_page_word(struct page *page)
{
#ifdef GPUBUF_HAVE_KMAP_LOCAL_PAGE
	u64 *vaddr = kmap_local_page(page);
	u64 word = READ_ONCE(*vaddr);

	kunmap_local(vaddr);
	return word;
#else
	/* Before 5.11, on 64-bit kernels, which map all memory. */
	BUILD_BUG_ON(IS_ENABLED(CONFIG_HIGHMEM));
	return READ_ONCE(*(u64 *)page_address(page));
#endif
}

static int pinprobe_pin(unsigned long addr, unsigned long nr_pages,
			u64 *checksum, u64 *elapsed_ns)
{
	struct page **pages;
	unsigned long i;
	u64 start;
	int pinned;

	pages = kvmalloc_array(nr_pages, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;

	start = ktime_get_ns();
	pinned = pin_user_pages_fast(addr, nr_pages,
				     FOLL_WRITE | FOLL_LONGTERM, pages);
	*elapsed_ns = ktime_get_ns() - start;
	if (pinned < 0)
		goto out_free;

	*checksum = 0;
	for (i = 0; i < pinned; i++)
		*checksum += pinprobe_page_word(pages[i]);
	unpin_user_pages(pages, pinned);
	if (pinned != nr_pages)
		pinned = -EFAULT;
out_free:
	kvfree(pages);
	return pinned < 0 ? pinned : 0;
}

/* The pages of PINPROBE_OP_PIN_HOLD, per open file, unpinned at close. */
struct pinprobe_hold {
	struct page **pages;
	unsigned long nr_pages;
};

static int pinprobe_pin_hold(struct file *file, unsigned long addr,
			     unsigned long nr_pages, u64 *checksum,
			     u64 *elapsed_ns)
{
	struct pinprobe_hold *hold;
	unsigned long i;
	u64 start;
	int pinned;

	if (file->private_data)
		return -EBUSY;
	hold = kzalloc(sizeof(*hold), GFP_KERNEL);
	if (!hold)
		return -ENOMEM;
	hold->pages = kvmalloc_array(nr_pages, sizeof(*hold->pages),
				     GFP_KERNEL);
	if (!hold->pages) {
		kfree(hold);
		return -ENOMEM;
	}
	start = ktime_get_ns();
	pinned = pin_user_pages_fast(addr, nr_pages,
				     FOLL_WRITE | FOLL_LONGTERM, hold->pages);
	*elapsed_ns = ktime_get_ns() - start;
	if (pinned != nr_pages) {
		if (pinned > 0)
			unpin_user_pages(hold->pages, pinned);
		kvfree(hold->pages);
		kfree(hold);
		return pinned < 0 ? pinned : -EFAULT;
	}
	hold->nr_pages = nr_pages;
	*checksum = 0;
	for (i = 0; i < nr_pages; i++)
		*checksum += pinprobe_page_word(hold->pages[i]);
	file->private_data = hold;
	return 0;
}

static int pinprobe_held_sum(struct file *file, u64 *checksum)
{
	struct pinprobe_hold *hold = file->private_data;
	unsigned long i;

	if (!hold)
		return -ENOENT;
	*checksum = 0;
	for (i = 0; i < hold->nr_pages; i++)
		*checksum += pinprobe_page_word(hold->pages[i]);
	return 0;
}

static int pinprobe_open(struct inode *inode, struct file *file)
{
	file->private_data = NULL;	/* misc_open() set it to the device */
	return 0;
}

static int pinprobe_release(struct inode *inode, struct file *file)
{
	struct pinprobe_hold *hold = file->private_data;

	if (hold) {
		unpin_user_pages(hold->pages, hold->nr_pages);
		kvfree(hold->pages);
		kfree(hold);
	}
	return 0;
}

static bool pinprobe_invalidate(struct mmu_interval_notifier *mni,
				const struct mmu_notifier_range *range,
				unsigned long cur_seq)
{
	mmu_interval_set_seq(mni, cur_seq);
	return true;
}

static const struct mmu_interval_notifier_ops pinprobe_mni_ops = {
	.invalidate = pinprobe_invalidate,
};

/*
 * The retry loop a driver runs: fault the range, then use the pages (here:
 * read them) under the mmap lock, and start again if the range was
 * invalidated meanwhile. Gives up after a second of invalidations.
 */
static int pinprobe_hmm(unsigned long addr, unsigned long nr_pages,
			u64 *checksum, u64 *elapsed_ns)
{
	struct mmu_interval_notifier mni;
	struct hmm_range range = {
		.notifier = &mni,
		.start = addr,
		.end = addr + (nr_pages << PAGE_SHIFT),
		.default_flags = HMM_PFN_REQ_FAULT | HMM_PFN_REQ_WRITE,
	};
	struct mm_struct *mm = current->mm;
	unsigned long timeout = jiffies + HZ;
	unsigned long i;
	u64 start;
	int ret;

	range.hmm_pfns = kvmalloc_array(nr_pages, sizeof(*range.hmm_pfns),
					GFP_KERNEL);
	if (!range.hmm_pfns)
		return -ENOMEM;
	ret = mmu_interval_notifier_insert(&mni, mm, range.start,
					   range.end - range.start,
					   &pinprobe_mni_ops);
	if (ret)
		goto out_free;

	do {
		range.notifier_seq = mmu_interval_read_begin(&mni);
		mmap_read_lock(mm);
		start = ktime_get_ns();
		ret = hmm_range_fault(&range);
		*elapsed_ns = ktime_get_ns() - start;
		*checksum = 0;
		for (i = 0; !ret && i < nr_pages; i++) {
			if (!(range.hmm_pfns[i] & HMM_PFN_VALID))
				ret = -EFAULT;
			else
				*checksum += pinprobe_page_word(hmm_pfn_to_page(range.hmm_pfns[i]));
		}
		if (!ret && mmu_interval_read_retry(&mni, range.notifier_seq))
			ret = -EBUSY;
		mmap_read_unlock(mm);
	} while (ret == -EBUSY && time_before(jiffies, timeout));
	if (ret == -EBUSY)
		ret = -ETIMEDOUT;

	mmu_interval_notifier_remove(&mni);
out_free:
	kvfree(range.hmm_pfns);
	return ret;
}

/* ---- a dma-buf mapped VM_PFNMAP ------------------------------------------ */

static struct sg_table *pinprobe_dmabuf_map(struct dma_buf_attachment *at,
					    enum dma_data_direction dir)
{
	struct sg_table *sgt;
	int ret;

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(sgt, 1, GFP_KERNEL);
	if (ret)
		goto err_free;
	sg_set_page(sgt->sgl, pinprobe_pfnmap_pages, at->dmabuf->size, 0);
	ret = dma_map_sgtable(at->dev, sgt, dir, 0);
	if (ret)
		goto err_table;
	return sgt;

err_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void pinprobe_dmabuf_unmap(struct dma_buf_attachment *at,
				  struct sg_table *sgt,
				  enum dma_data_direction dir)
{
	dma_unmap_sgtable(at->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
}

/* The pages are the module's, freed at unload; the dma-buf holds it. */
static void pinprobe_dmabuf_release(struct dma_buf *dmabuf)
{
}

static int pinprobe_remap(struct vm_area_struct *vma, size_t limit)
{
	unsigned long len = vma->vm_end - vma->vm_start;

	if (vma->vm_pgoff || len > limit)
		return -EINVAL;
	return remap_pfn_range(vma, vma->vm_start,
			       page_to_pfn(pinprobe_pfnmap_pages), len,
			       vma->vm_page_prot);
}

static int pinprobe_dmabuf_mmap(struct dma_buf *dmabuf,
				struct vm_area_struct *vma)
{
	return pinprobe_remap(vma, dmabuf->size);
}

static const struct dma_buf_ops pinprobe_dmabuf_ops = {
	.map_dma_buf = pinprobe_dmabuf_map,
	.unmap_dma_buf = pinprobe_dmabuf_unmap,
	.release = pinprobe_dmabuf_release,
	.mmap = pinprobe_dmabuf_mmap,
};

static int pinprobe_export(struct pinprobe_export __user *uexp)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct pinprobe_export exp;
	struct dma_buf *dmabuf;
	int fd;

	if (copy_from_user(&exp, uexp, sizeof(exp)))
		return -EFAULT;
	if (exp.flags || !exp.len || !PAGE_ALIGNED(exp.len) ||
	    exp.len > PINPROBE_PFNMAP_BYTES)
		return -EINVAL;
	info.ops = &pinprobe_dmabuf_ops;
	info.size = exp.len;
	info.flags = O_RDWR;
	info.priv = pinprobe_pfnmap_pages;	/* dma_buf_export() wants one */
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	fd = dma_buf_fd(dmabuf, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	exp.fd = fd;
	/* The fd is the caller's now: a failed copy leaves it to them. */
	return copy_to_user(uexp, &exp, sizeof(exp)) ? -EFAULT : 0;
}

static long pinprobe_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct pinprobe_req __user *ureq = (void __user *)arg;
	struct pinprobe_req req;
	unsigned long nr_pages;
	int ret;

	if (cmd == PINPROBE_IOC_EXPORT_PFNMAP)
		return pinprobe_export((void __user *)arg);
	if (cmd != PINPROBE_IOC_RUN)
		return -ENOTTY;
	if (copy_from_user(&req, ureq, sizeof(req)))
		return -EFAULT;
	if (req.reserved || !req.len || !PAGE_ALIGNED(req.addr) ||
	    !PAGE_ALIGNED(req.len) || req.addr + req.len < req.addr)
		return -EINVAL;
	nr_pages = req.len >> PAGE_SHIFT;
	if (nr_pages > PINPROBE_MAX_PAGES)
		return -E2BIG;

	switch (req.op) {
	case PINPROBE_OP_PIN_LONGTERM:
		ret = pinprobe_pin(req.addr, nr_pages, &req.checksum,
				   &req.elapsed_ns);
		break;
	case PINPROBE_OP_HMM_FAULT:
		ret = pinprobe_hmm(req.addr, nr_pages, &req.checksum,
				   &req.elapsed_ns);
		break;
	case PINPROBE_OP_PIN_HOLD:
		ret = pinprobe_pin_hold(file, req.addr, nr_pages,
					&req.checksum, &req.elapsed_ns);
		break;
	case PINPROBE_OP_HELD_SUM:
		ret = pinprobe_held_sum(file, &req.checksum);
		break;
	default:
		return -EINVAL;
	}
	if (ret)
		return ret;
	return copy_to_user(ureq, &req, sizeof(req)) ? -EFAULT : 0;
}

/* remap_pfn_range() makes the vma VM_PFNMAP | VM_IO, what GUP refuses. */
static int pinprobe_mmap(struct file *file, struct vm_area_struct *vma)
{
	return pinprobe_remap(vma, PINPROBE_PFNMAP_BYTES);
}

static const struct file_operations pinprobe_fops = {
	.owner = THIS_MODULE,
	.open = pinprobe_open,
	.release = pinprobe_release,
	.unlocked_ioctl = pinprobe_ioctl,
	.mmap = pinprobe_mmap,
	.llseek = noop_llseek,
};

static struct miscdevice pinprobe_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "gpubuf_pinprobe",
	.fops = &pinprobe_fops,
	.mode = 0600,
};

static int __init pinprobe_init(void)
{
	int ret;

	pinprobe_pfnmap_pages = alloc_pages(GFP_KERNEL | __GFP_ZERO,
					    get_order(PINPROBE_PFNMAP_BYTES));
	if (!pinprobe_pfnmap_pages)
		return -ENOMEM;
	ret = misc_register(&pinprobe_misc);
	if (ret)
		__free_pages(pinprobe_pfnmap_pages,
			     get_order(PINPROBE_PFNMAP_BYTES));
	return ret;
}

/* No mapping is left: each holds the file, which holds this module. */
static void __exit pinprobe_exit(void)
{
	misc_deregister(&pinprobe_misc);
	__free_pages(pinprobe_pfnmap_pages, get_order(PINPROBE_PFNMAP_BYTES));
}

module_init(pinprobe_init);
module_exit(pinprobe_exit);

MODULE_DESCRIPTION("gpubuf test probe: long-term GUP pin and HMM fault on a user range");
MODULE_LICENSE("GPL");
GPUBUF_IMPORT_DMA_BUF_NS();
