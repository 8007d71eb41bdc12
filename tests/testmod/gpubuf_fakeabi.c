// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf_fakeabi: a test-only stand-in for gpubuf.ko that registers
 * /dev/gpubuf and answers GPUBUF_IOC_VERSION with the ABI range given as
 * module parameters, so the library's handshake can be tested against
 * drivers older and newer than itself. Every other command is ENOTTY.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>

#include <linux/gpubuf.h>

static unsigned int abi = GPUBUF_ABI_VERSION;
module_param(abi, uint, 0444);
MODULE_PARM_DESC(abi, "ABI revision to report (default: the header's)");

static unsigned int abi_min = GPUBUF_ABI_VERSION;
module_param(abi_min, uint, 0444);
MODULE_PARM_DESC(abi_min, "Oldest ABI revision to report (default: the header's)");

static long fakeabi_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	struct gpubuf_version v = {
		.abi = abi,
		.abi_min = abi_min,
		.major = 9,
		.minor = 8,
		.patch = 7,
	};

	if (cmd != GPUBUF_IOC_VERSION)
		return -ENOTTY;
	return copy_to_user((void __user *)arg, &v, sizeof(v)) ? -EFAULT : 0;
}

static const struct file_operations fakeabi_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = fakeabi_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice fakeabi_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = GPUBUF_DEVICE_NAME,
	.fops = &fakeabi_fops,
	.mode = 0600,
};

module_misc_device(fakeabi_misc);

MODULE_DESCRIPTION("gpubuf test stand-in: /dev/gpubuf with a chosen ABI range");
MODULE_LICENSE("GPL");
