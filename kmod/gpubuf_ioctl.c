// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf ioctls: copy in, validate, call a worker, copy out.
 *
 * Commands are looked up by number; the size encoded in the command is the
 * caller's structure size, which may be older (shorter) or newer (longer)
 * than ours. copy_struct_from_user() zero-extends the former and rejects
 * unknown non-zero bytes in the latter with E2BIG.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/dma-buf.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/nodemask.h>
#include <linux/nospec.h>
#include <linux/uaccess.h>

#include <linux/gpubuf.h>

#include "gpubuf.h"
#include "gpubuf_trace.h"

/* Oldest ABI revision this driver still serves. */
#define GPUBUF_ABI_MIN 1

/* The first published sizes are ABI: a layout change must not slip in. */
static_assert(sizeof(struct gpubuf_version) == GPUBUF_VERSION_SIZE_VER0);
static_assert(sizeof(struct gpubuf_alloc) == GPUBUF_ALLOC_SIZE_VER0);
static_assert(sizeof(struct gpubuf_info) == GPUBUF_INFO_SIZE_VER0);

union gpubuf_ioctl_arg {
	struct gpubuf_version version;
	struct gpubuf_alloc alloc;
	struct gpubuf_info info;
};

/*
 * A newer caller's longer structure gets zeroes in the fields this driver
 * does not know, so it can tell they were not filled in.
 */
static int gpubuf_copy_out(void __user *uarg, const void *karg, size_t usize,
			   size_t ksize)
{
	if (copy_to_user(uarg, karg, min(usize, ksize)))
		return -EFAULT;
	if (usize > ksize && clear_user(uarg + ksize, usize - ksize))
		return -EFAULT;
	return 0;
}

static int gpubuf_ioctl_version(struct file *file, union gpubuf_ioctl_arg *arg,
				void __user *uarg, size_t usize)
{
	struct gpubuf_version *v = &arg->version;

	v->abi = GPUBUF_ABI_VERSION;
	v->abi_min = GPUBUF_ABI_MIN;
	v->major = GPUBUF_VERSION_MAJOR;
	v->minor = GPUBUF_VERSION_MINOR;
	v->patch = GPUBUF_VERSION_PATCH;
	return gpubuf_copy_out(uarg, v, usize, sizeof(*v));
}

/* Everything is checked here, before any page is allocated. */
static int gpubuf_alloc_validate(const struct gpubuf_alloc *req)
{
	if (req->fd || req->reserved0 || req->reserved[0] || req->reserved[1])
		return -EINVAL;
	if (req->flags & ~GPUBUF_ALLOC_VALID_FLAGS)
		return -EINVAL;
	/*
	 * Write-only fds are refused: mmap() needs FMODE_READ, so such a
	 * buffer could never be CPU-mapped, which is what gpubuf is for.
	 */
	if (req->fd_flags & ~(O_CLOEXEC | O_ACCMODE) ||
	    !((req->fd_flags & O_ACCMODE) == O_RDONLY ||
	      (req->fd_flags & O_ACCMODE) == O_RDWR))
		return -EINVAL;
	if (req->numa_node == GPUBUF_NUMA_ANY) {
		if (req->flags & GPUBUF_ALLOC_NUMA_STRICT)
			return -EINVAL;
	} else if (req->numa_node < 0 || req->numa_node >= MAX_NUMNODES ||
		   !node_online(req->numa_node)) {
		return -EINVAL;
	} else if (req->flags & GPUBUF_ALLOC_NUMA_STRICT &&
		   !node_state(req->numa_node, N_MEMORY)) {
		/* Only that node, and it has no memory: can never succeed. */
		return -EINVAL;
	}
	/* Rounding up to a page must not wrap around 64 bits. */
	if (!req->size || req->size > U64_MAX - (PAGE_SIZE - 1))
		return -EINVAL;
	return 0;
}

static int gpubuf_ioctl_alloc(struct file *file, union gpubuf_ioctl_arg *arg,
			      void __user *uarg, size_t usize)
{
	struct gpubuf_alloc *req = &arg->alloc;
	struct gpubuf_buffer *buf;
	struct dma_buf *dmabuf;
	int fd, ret;

	ret = gpubuf_alloc_validate(req);
	if (ret)
		return ret;
	req->size = round_up(req->size, (u64)PAGE_SIZE);

	/*
	 * Take the fd first, so that a caller out of fds learns it before any
	 * page is zeroed. It is installed only after the copy-out succeeded,
	 * so a bad argument pointer never leaves an fd the caller cannot know.
	 */
	/* A grown fd table is charged too; see gpubuf_charge_headroom(). */
	ret = gpubuf_charge_headroom();
	if (ret)
		goto err_failed;
	fd = get_unused_fd_flags(req->fd_flags & O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_failed;
	}

	buf = gpubuf_buffer_create(req->size, req->flags, req->numa_node,
				   file->private_data);
	if (IS_ERR(buf)) {
		ret = PTR_ERR(buf);
		goto err_put_fd;
	}
	/* From here on the dma-buf owns buf: dma_buf_put() frees it. */
	dmabuf = gpubuf_export(buf, req->fd_flags);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		goto err_put_fd;
	}

	req->fd = fd;
	ret = gpubuf_copy_out(uarg, req, usize, sizeof(*req));
	if (ret)
		goto err_put_dmabuf;
	/* Before the fd is the caller's: it may close it at once. */
	trace_gpubuf_alloc(req->size, req->numa_node, buf->huge_chunks,
			   buf->reserve_chunks, 0);
	fd_install(fd, dmabuf->file);
	return 0;

err_put_dmabuf:
	dma_buf_put(dmabuf);
err_put_fd:
	put_unused_fd(fd);
err_failed:
	/* Every validated ALLOC is one event, refused ones with their errno. */
	trace_gpubuf_alloc(req->size, req->numa_node, 0, 0, ret);
	gpubuf_note_failed_alloc();
	return ret;
}

static int gpubuf_ioctl_info(struct file *file, union gpubuf_ioctl_arg *arg,
			     void __user *uarg, size_t usize)
{
	struct gpubuf_info *info = &arg->info;
	struct gpubuf_buffer *buf;
	struct dma_buf *dmabuf;
	int ret;

	if (info->reserved0 || info->huge_bytes || info->reserve_bytes)
		return -EINVAL;

	dmabuf = dma_buf_get(info->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);

	buf = gpubuf_dmabuf_to_buffer(dmabuf);
	if (!buf) {
		ret = -ENODEV;
		goto out_put;
	}
	info->size = gpubuf_buffer_bytes(buf);
	info->flags = buf->flags;
	info->numa_node = buf->numa_node;
	info->nr_chunks = buf->nr_chunks;
	info->huge_bytes = (u64)buf->huge_chunks * GPUBUF_HUGE_BYTES;
	info->reserve_bytes = (u64)buf->reserve_chunks * GPUBUF_HUGE_BYTES;
	ret = gpubuf_copy_out(uarg, info, usize, sizeof(*info));
out_put:
	dma_buf_put(dmabuf);
	return ret;
}

struct gpubuf_ioctl_desc {
	unsigned int cmd;
	size_t min_size;
	int (*handler)(struct file *file, union gpubuf_ioctl_arg *arg,
		       void __user *uarg, size_t usize);
};

/* Indexed by _IOC_NR; .min_size is the first published structure size. */
static const struct gpubuf_ioctl_desc gpubuf_ioctls[] = {
	[_IOC_NR(GPUBUF_IOC_VERSION)] = {
		.cmd = GPUBUF_IOC_VERSION,
		.min_size = GPUBUF_VERSION_SIZE_VER0,
		.handler = gpubuf_ioctl_version,
	},
	[_IOC_NR(GPUBUF_IOC_ALLOC)] = {
		.cmd = GPUBUF_IOC_ALLOC,
		.min_size = GPUBUF_ALLOC_SIZE_VER0,
		.handler = gpubuf_ioctl_alloc,
	},
	[_IOC_NR(GPUBUF_IOC_INFO)] = {
		.cmd = GPUBUF_IOC_INFO,
		.min_size = GPUBUF_INFO_SIZE_VER0,
		.handler = gpubuf_ioctl_info,
	},
};

/**
 * gpubuf_dev_ioctl() - ioctl entry of /dev/gpubuf
 * @file: the open device
 * @cmd:  command, with the caller's structure size encoded
 * @arg:  user pointer to the structure
 *
 * Return: 0 or a negative errno as documented in <linux/gpubuf.h>.
 */
long gpubuf_dev_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	const struct gpubuf_ioctl_desc *desc;
	void __user *uarg = (void __user *)arg;
	union gpubuf_ioctl_arg karg;
	size_t usize = _IOC_SIZE(cmd);
	unsigned int nr = _IOC_NR(cmd);
	int ret;

	if (_IOC_TYPE(cmd) != GPUBUF_IOC_MAGIC || nr >= ARRAY_SIZE(gpubuf_ioctls))
		return -ENOTTY;
	desc = &gpubuf_ioctls[array_index_nospec(nr, ARRAY_SIZE(gpubuf_ioctls))];
	if (!desc->handler || _IOC_DIR(cmd) != _IOC_DIR(desc->cmd))
		return -ENOTTY;
	if (usize < desc->min_size)
		return -EINVAL;

	memset(&karg, 0, sizeof(karg));
	if (_IOC_DIR(cmd) & _IOC_WRITE) {
		ret = copy_struct_from_user(&karg, _IOC_SIZE(desc->cmd), uarg,
					    usize);
		if (ret)
			return ret;
	}
	return desc->handler(file, &karg, uarg, usize);
}
