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
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include <linux/gpubuf.h>

#include "gpubuf.h"
#include "gpubuf_compat.h"

#define CREATE_TRACE_POINTS
#include "gpubuf_trace.h"

/* A read-only counter: which field of the snapshot it shows. */
struct gpubuf_stat_attr {
	struct device_attribute attr;
	size_t offset;
};

static ssize_t gpubuf_stat_show(struct device *dev,
				struct device_attribute *attr, char *page)
{
	size_t offset = container_of(attr, struct gpubuf_stat_attr, attr)->offset;
	struct gpubuf_stats_snapshot snap;

	gpubuf_stats_read(&snap);
	return sysfs_emit(page, "%llu\n", *(u64 *)((char *)&snap + offset));
}

static struct gpubuf_stat_attr gpubuf_stat_attrs[] = {
	{ __ATTR(live_buffers, 0444, gpubuf_stat_show, NULL),
	  offsetof(struct gpubuf_stats_snapshot, live_buffers) },
	{ __ATTR(live_bytes, 0444, gpubuf_stat_show, NULL),
	  offsetof(struct gpubuf_stats_snapshot, live_bytes) },
	{ __ATTR(peak_bytes, 0444, gpubuf_stat_show, NULL),
	  offsetof(struct gpubuf_stats_snapshot, peak_bytes) },
	{ __ATTR(failed_allocs, 0444, gpubuf_stat_show, NULL),
	  offsetof(struct gpubuf_stats_snapshot, failed_allocs) },
	{ __ATTR(held_bytes, 0444, gpubuf_stat_show, NULL),
	  offsetof(struct gpubuf_stats_snapshot, held_bytes) },
	{ __ATTR(held_buffers, 0444, gpubuf_stat_show, NULL),
	  offsetof(struct gpubuf_stats_snapshot, held_buffers) },
	{ __ATTR(reserve_ready_bytes, 0444, gpubuf_stat_show, NULL),
	  offsetof(struct gpubuf_stats_snapshot, reserve_ready_bytes) },
	{ __ATTR(reserve_zeroing_bytes, 0444, gpubuf_stat_show, NULL),
	  offsetof(struct gpubuf_stats_snapshot, reserve_zeroing_bytes) },
	{ __ATTR(reserve_used_bytes, 0444, gpubuf_stat_show, NULL),
	  offsetof(struct gpubuf_stats_snapshot, reserve_used_bytes) },
	{ __ATTR(reserve_shrunk_bytes, 0444, gpubuf_stat_show, NULL),
	  offsetof(struct gpubuf_stats_snapshot, reserve_shrunk_bytes) },
};

static struct attribute *gpubuf_attrs[] = {
	&gpubuf_stat_attrs[0].attr.attr,
	&gpubuf_stat_attrs[1].attr.attr,
	&gpubuf_stat_attrs[2].attr.attr,
	&gpubuf_stat_attrs[3].attr.attr,
	&gpubuf_stat_attrs[4].attr.attr,
	&gpubuf_stat_attrs[5].attr.attr,
	&gpubuf_stat_attrs[6].attr.attr,
	&gpubuf_stat_attrs[7].attr.attr,
	&gpubuf_stat_attrs[8].attr.attr,
	&gpubuf_stat_attrs[9].attr.attr,
	NULL,
};

ATTRIBUTE_GROUPS(gpubuf);

static void gpubuf_client_free(struct kref *ref)
{
	kfree(container_of(ref, struct gpubuf_client, ref));
}

void gpubuf_client_put(struct gpubuf_client *client)
{
	kref_put(&client->ref, gpubuf_client_free);
}

/* Each open file counts the buffers allocated through it (fdinfo). */
static int gpubuf_dev_open(struct inode *inode, struct file *file)
{
	struct gpubuf_client *client;

	client = kzalloc(sizeof(*client), GFP_KERNEL_ACCOUNT);
	if (!client)
		return -ENOMEM;
	kref_init(&client->ref);
	file->private_data = client;
	return 0;
}

static int gpubuf_dev_release(struct inode *inode, struct file *file)
{
	gpubuf_client_put(file->private_data);
	return 0;
}

/* Documented keys of /proc/PID/fdinfo/FD, as DRM's drm-usage-stats. */
static void gpubuf_dev_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct gpubuf_client *client = file->private_data;

	seq_printf(m, "gpubuf-buffers:\t%lld\n",
		   (long long)atomic64_read(&client->buffers));
	seq_printf(m, "gpubuf-bytes:\t%lld\n",
		   (long long)atomic64_read(&client->bytes));
}

static const struct file_operations gpubuf_fops = {
	.owner = THIS_MODULE,
	.open = gpubuf_dev_open,
	.release = gpubuf_dev_release,
	.show_fdinfo = gpubuf_dev_show_fdinfo,
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
	gpubuf_faults_init();
	ret = gpubuf_reserve_init();
	if (ret)
		goto err_faults;
	ret = misc_register(&gpubuf_misc);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", GPUBUF_DEVICE_NAME, ret);
		goto err_reserve;
	}
	pr_info("version %s, ABI %d\n", GPUBUF_VERSION_STRING,
		GPUBUF_ABI_VERSION);
	return 0;

err_reserve:
	gpubuf_reserve_exit();
err_faults:
	gpubuf_faults_exit();
	/* insmod says only "Cannot allocate memory": say whose it was. */
	pr_err("not loaded: initialisation failed: %d\n", ret);
	return ret;
}

/*
 * Every buffer holds a module reference, so none is alive here; pages of
 * released buffers that a driver still pins are left to that driver, and
 * the reserve goes last, after the held chunks came back to it.
 */
static void __exit gpubuf_exit(void)
{
	misc_deregister(&gpubuf_misc);
	gpubuf_held_release_all();
	gpubuf_reserve_exit();
	gpubuf_faults_exit();
}

module_init(gpubuf_init);
module_exit(gpubuf_exit);

MODULE_DESCRIPTION("Pinned host memory as dma-bufs, mappable and pinnable by GPU drivers");
MODULE_AUTHOR("The gpubuf developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(GPUBUF_VERSION_STRING);
GPUBUF_IMPORT_DMA_BUF_NS();
