// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf: the /dev/gpubuf misc device, its sysfs counters, module load.
 *
 * Opening /dev/gpubuf holds no buffer: buffers belong to their dma-buf fds
 * and mappings, and each one pins this module until it is released.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/sysfs.h>

#include <linux/gpubuf.h>

#include "gpubuf.h"
#include "gpubuf_compat.h"

#define GPUBUF_STAT_ATTR(field)						\
static ssize_t field##_show(struct device *dev,				\
			    struct device_attribute *attr, char *page)	\
{									\
	struct gpubuf_stats_snapshot snap;				\
									\
	gpubuf_stats_read(&snap);					\
	return sysfs_emit(page, "%llu\n", snap.field);			\
}									\
static DEVICE_ATTR_RO(field)

GPUBUF_STAT_ATTR(live_buffers);
GPUBUF_STAT_ATTR(live_bytes);
GPUBUF_STAT_ATTR(peak_bytes);
GPUBUF_STAT_ATTR(failed_allocs);

static struct attribute *gpubuf_attrs[] = {
	&dev_attr_live_buffers.attr,
	&dev_attr_live_bytes.attr,
	&dev_attr_peak_bytes.attr,
	&dev_attr_failed_allocs.attr,
	NULL,
};
ATTRIBUTE_GROUPS(gpubuf);

static const struct file_operations gpubuf_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = gpubuf_dev_ioctl,
	/* Every uapi structure has the same layout for 32-bit callers. */
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/* Root only by default; udev/60-gpubuf.rules hands it to group gpubuf. */
static struct miscdevice gpubuf_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = GPUBUF_DEVICE_NAME,
	.fops = &gpubuf_fops,
	.groups = gpubuf_groups,
	.mode = 0600,
};

static int __init gpubuf_init(void)
{
	int ret;

	gpubuf_limits_init();
	ret = misc_register(&gpubuf_misc);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", GPUBUF_DEVICE_NAME, ret);
		return ret;
	}
	pr_info("version %s, ABI %d\n", GPUBUF_VERSION_STRING,
		GPUBUF_ABI_VERSION);
	return 0;
}

/* Every buffer holds a module reference, so none is alive here. */
static void __exit gpubuf_exit(void)
{
	misc_deregister(&gpubuf_misc);
}

module_init(gpubuf_init);
module_exit(gpubuf_exit);

MODULE_DESCRIPTION("Pinned host memory as dma-bufs, mappable and pinnable by GPU drivers");
MODULE_AUTHOR("The gpubuf developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(GPUBUF_VERSION_STRING);
GPUBUF_IMPORT_DMA_BUF_NS();
