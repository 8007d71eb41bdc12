// SPDX-License-Identifier: MIT
/*
 * Buffers in a Vulkan device, in place: a VkBuffer over the whole buffer,
 * bound to VkDeviceMemory imported from the buffer itself, with a device
 * address the kernels use. One record per (buffer, device), counted; it
 * is a hold on the buffer and keeps a reference on the device.
 *
 * The import: the buffer's dma-buf (VK_EXT_external_memory_dma_buf) where
 * the buffer has one and the device takes it, which is how RADV and ANV
 * reach gpubuf.ko's pages; else its host mapping
 * (VK_EXT_external_memory_host), which is NVIDIA's way and lavapipe's
 * before Mesa 24.1. Memory type: the lowest host-coherent index both the
 * import and the VkBuffer allow: the CPU keeps using the memory through
 * its own mapping, with no flush or invalidate, which is right only for
 * coherent memory. A dma-buf import is also listed on its device, so the
 * kernels can bracket their dispatches with DMA_BUF_IOCTL_SYNC: the
 * exporter copies between the pages and an importer's bounce buffers
 * (swiotlb, SEV/TDX guests) only there.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vulkan/vk_internal.h"
#include "core/internal.h"

#ifdef GPUBUF_HAVE_VULKAN

struct gpubuf_vk_rec {
	struct gpubuf_hold hold;
	struct gpubuf_vk *vk;		/* a reference */
	unsigned int count;
	pid_t pid;			/* the process that imported */
	VkBuffer buffer;
	VkDeviceMemory memory;
	VkDeviceAddress address;
	uint32_t kind;			/* GPUBUF_VK_IMPORT_* */
	uint32_t type;			/* memoryTypeIndex */
	struct gpubuf *buf;		/* this record's buffer */
	bool listed;			/* on vk->dmabufs */
	struct gpubuf_vk_rec *next;	/* under vk->imports_lock */
};

static void gpubuf_vk_hold_release(struct gpubuf *buf,
				   struct gpubuf_hold *hold);

static const struct gpubuf_hold_ops gpubuf_vk_hold_ops = {
	.release = gpubuf_vk_hold_release,
};

/* vk's record on buf; the caller holds buf->lock. */
static struct gpubuf_vk_rec *gpubuf_vk_find(const struct gpubuf *buf,
					    const struct gpubuf_vk *vk)
{
	struct gpubuf_hold *h = NULL;

	while ((h = gpubuf_hold_next(buf, h, &gpubuf_vk_hold_ops))) {
		struct gpubuf_vk_rec *rec =
			gpubuf_container_of(h, struct gpubuf_vk_rec, hold);

		if (rec->vk == vk)
			return rec;
	}
	return NULL;
}

static void gpubuf_vk_list(struct gpubuf_vk_rec *rec)
{
	struct gpubuf_vk *vk = rec->vk;

	pthread_mutex_lock(&vk->imports_lock);
	rec->next = vk->dmabufs;
	vk->dmabufs = rec;
	rec->listed = true;
	pthread_mutex_unlock(&vk->imports_lock);
}

static void gpubuf_vk_unlist(struct gpubuf_vk_rec *rec)
{
	struct gpubuf_vk *vk = rec->vk;
	struct gpubuf_vk_rec **p;

	if (!rec->listed)
		return;
	pthread_mutex_lock(&vk->imports_lock);
	for (p = &vk->dmabufs; *p; p = &(*p)->next)
		if (*p == rec) {
			*p = rec->next;
			break;
		}
	pthread_mutex_unlock(&vk->imports_lock);
	rec->listed = false;
}

/* Destroy what the import made; the record and its reference stay. */
static void gpubuf_vk_clear(struct gpubuf_vk_rec *rec)
{
	struct gpubuf_vk *vk = rec->vk;

	gpubuf_vk_unlist(rec);
	if (rec->buffer)
		vk->vkDestroyBuffer(vk->dev, rec->buffer, NULL);
	if (rec->memory)
		vk->vkFreeMemory(vk->dev, rec->memory, NULL);
	rec->buffer = VK_NULL_HANDLE;
	rec->memory = VK_NULL_HANDLE;
	rec->address = 0;
}

static void gpubuf_vk_undo(struct gpubuf_vk_rec *rec)
{
	gpubuf_vk_clear(rec);
	gpubuf_vk_put(rec->vk);
	free(rec);
}

/*
 * A fork() child shares nothing with the parent's device: forget it. Its
 * copy of the device's list is not touched (a parent's thread may have
 * held the lock at fork()); the child never walks it.
 */
static void gpubuf_vk_hold_release(struct gpubuf *buf,
				   struct gpubuf_hold *hold)
{
	struct gpubuf_vk_rec *rec =
		gpubuf_container_of(hold, struct gpubuf_vk_rec, hold);

	(void)buf;
	if (rec->pid == getpid())
		gpubuf_vk_undo(rec);
	else
		free(rec);
}

/*
 * The lowest host-coherent type in bits. Protected memory cannot be
 * reached by the host, and AMD's device-coherent types are uncached for
 * device access, meant for fine-grained sharing: neither is taken.
 */
static int gpubuf_vk_pick_type(const struct gpubuf_vk *vk, uint32_t bits,
			       uint32_t *type)
{
	const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	const VkMemoryPropertyFlags never = VK_MEMORY_PROPERTY_PROTECTED_BIT |
					    VK_MEMORY_PROPERTY_DEVICE_COHERENT_BIT_AMD;

	for (uint32_t i = 0; i < vk->mem.memoryTypeCount; i++)
		if ((bits >> i & 1) &&
		    (vk->mem.memoryTypes[i].propertyFlags & (want | never)) ==
		    want) {
			*type = i;
			return 0;
		}
	return -1;
}

/*
 * An fd import that failed leaves the fd with the caller by the spec,
 * which is what every driver but lavapipe does: close it. lavapipe closes
 * it itself: there, close it only if the number still names the buffer's
 * dma-buf, which another thread can have opened again in between (the
 * one race left, on lavapipe only).
 */
static void gpubuf_vk_close_dup(const struct gpubuf_vk *vk, int fd,
				const struct stat *orig)
{
	struct stat st;

	if (vk->driver != VK_DRIVER_ID_MESA_LLVMPIPE)
		close(fd);
	else if (fstat(fd, &st) == 0 && st.st_dev == orig->st_dev &&
		 st.st_ino == orig->st_ino)
		close(fd);
}

static int gpubuf_vk_make_buffer(struct gpubuf_vk *vk, struct gpubuf *buf,
				 VkExternalMemoryHandleTypeFlagBits handle,
				 struct gpubuf_vk_rec *rec, uint32_t *bits)
{
	VkMemoryRequirements req;
	VkResult r;

	r = vk->vkCreateBuffer(vk->dev, &(VkBufferCreateInfo){
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.pNext = &(VkExternalMemoryBufferCreateInfo){
			.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
			.handleTypes = handle,
		},
		.size = buf->size,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
			 VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
			 VK_BUFFER_USAGE_TRANSFER_DST_BIT |
			 VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	}, NULL, &rec->buffer);
	if (r != VK_SUCCESS) {
		rec->buffer = VK_NULL_HANDLE;
		return gpubuf_vk_fail(r, "vkCreateBuffer");
	}
	vk->vkGetBufferMemoryRequirements(vk->dev, rec->buffer, &req);
	if (req.size > buf->size) {
		gpubuf_error_set("Vulkan device %s wants %llu bytes for a VkBuffer over a %zu-byte buffer",
				 vk->info.name, (unsigned long long)req.size,
				 buf->size);
		return -EINVAL;
	}
	*bits = req.memoryTypeBits;
	return 0;
}

/* Allocate rec->memory of type from the import chained at import. */
static int gpubuf_vk_bind(struct gpubuf_vk *vk, struct gpubuf *buf,
			  struct gpubuf_vk_rec *rec, const void *import)
{
	VkResult r;

	r = vk->vkAllocateMemory(vk->dev, &(VkMemoryAllocateInfo){
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.pNext = &(VkMemoryAllocateFlagsInfo){
			.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
			.pNext = import,
			.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT,
		},
		.allocationSize = buf->size,
		.memoryTypeIndex = rec->type,
	}, NULL, &rec->memory);
	if (r != VK_SUCCESS) {
		rec->memory = VK_NULL_HANDLE;
		return gpubuf_vk_fail(r, "vkAllocateMemory (import)");
	}
	r = vk->vkBindBufferMemory(vk->dev, rec->buffer, rec->memory, 0);
	if (r != VK_SUCCESS)
		return gpubuf_vk_fail(r, "vkBindBufferMemory");
	rec->address = vk->vkGetBufferDeviceAddress(vk->dev,
		&(VkBufferDeviceAddressInfo){
			.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
			.buffer = rec->buffer,
		});
	return 0;
}

static int gpubuf_vk_import_dmabuf(struct gpubuf_vk *vk, struct gpubuf *buf,
				   struct gpubuf_vk_rec *rec)
{
	const VkExternalMemoryHandleTypeFlagBits handle =
		VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT;
	VkMemoryFdPropertiesKHR props = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_FD_PROPERTIES_KHR,
	};
	struct stat st;
	uint32_t bits;
	VkResult r;
	int err, fd;

	err = gpubuf_vk_make_buffer(vk, buf, handle, rec, &bits);
	if (err)
		return err;
	r = vk->vkGetMemoryFdPropertiesKHR(vk->dev, handle, buf->fd, &props);
	if (r != VK_SUCCESS)
		return gpubuf_vk_fail(r, "vkGetMemoryFdPropertiesKHR");
	if (gpubuf_vk_pick_type(vk, bits & props.memoryTypeBits, &rec->type)) {
		gpubuf_error_set("Vulkan device %s has no host-coherent memory type for this dma-buf (%#x) and a VkBuffer (%#x)",
				 vk->info.name, props.memoryTypeBits, bits);
		return -EOPNOTSUPP;
	}
	/* A successful import owns the fd: give it a dup. */
	fd = fstat(buf->fd, &st) < 0 ? -1 :
	     fcntl(buf->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		gpubuf_error_set("a dup of the buffer's dma-buf fd %d: %m",
				 buf->fd);
		return err;
	}
	err = gpubuf_vk_bind(vk, buf, rec, &(VkImportMemoryFdInfoKHR){
		.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
		.handleType = handle,
		.fd = fd,
	});
	if (err && !rec->memory)
		gpubuf_vk_close_dup(vk, fd, &st);
	rec->kind = GPUBUF_VK_IMPORT_DMA_BUF;
	return err;
}

static int gpubuf_vk_import_host(struct gpubuf_vk *vk, struct gpubuf *buf,
				 struct gpubuf_vk_rec *rec)
{
	const VkExternalMemoryHandleTypeFlagBits handle =
		VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
	VkMemoryHostPointerPropertiesEXT props = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT,
	};
	uint64_t align = vk->info.host_import_align;
	uint32_t bits;
	VkResult r;
	int err;

	/* lavapipe takes any pointer and size without a word: check here. */
	if (!align || (uintptr_t)buf->ptr % align || buf->size % align) {
		gpubuf_error_set("Vulkan device %s imports host memory in %llu-byte units; the buffer is %zu bytes at %p",
				 vk->info.name, (unsigned long long)align,
				 buf->size, buf->ptr);
		return -EINVAL;
	}
	/* A GPU pins what it imports; a CPU device (lavapipe) does not. */
	if (vk->info.device_type != VK_PHYSICAL_DEVICE_TYPE_CPU) {
		err = gpubuf_buf_check_pinnable(buf, "VK_EXT_external_memory_host");
		if (err)
			return err;
	}
	err = gpubuf_vk_make_buffer(vk, buf, handle, rec, &bits);
	if (err)
		return err;
	r = vk->vkGetMemoryHostPointerPropertiesEXT(vk->dev, handle, buf->ptr,
						    &props);
	if (r != VK_SUCCESS)
		return gpubuf_vk_fail(r, "vkGetMemoryHostPointerPropertiesEXT");
	if (gpubuf_vk_pick_type(vk, bits & props.memoryTypeBits, &rec->type)) {
		gpubuf_error_set("Vulkan device %s has no host-coherent memory type for this host memory (%#x) and a VkBuffer (%#x)",
				 vk->info.name, props.memoryTypeBits, bits);
		return -EOPNOTSUPP;
	}
	rec->kind = GPUBUF_VK_IMPORT_HOST_POINTER;
	return gpubuf_vk_bind(vk, buf, rec, &(VkImportMemoryHostPointerInfoEXT){
		.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
		.handleType = handle,
		.pHostPointer = buf->ptr,
	});
}

/* A new record for buf in vk: dma-buf first where possible, then host. */
static int gpubuf_vk_import_new(struct gpubuf_vk *vk, struct gpubuf *buf,
				struct gpubuf_vk_rec **out)
{
	uint32_t f = vk->info.features;
	struct gpubuf_vk_rec *rec;
	char why[256] = "";
	int err = -EOPNOTSUPP;

	if (!(f & (GPUBUF_VK_FEATURE_DMA_BUF_IMPORT |
		   GPUBUF_VK_FEATURE_HOST_IMPORT))) {
		gpubuf_error_set("Vulkan device %s imports neither dma-bufs (VK_EXT_external_memory_dma_buf) nor host memory (VK_EXT_external_memory_host)",
				 vk->info.name);
		return -EOPNOTSUPP;
	}
	/* One VkDeviceMemory covers the buffer: past the limit, say which. */
	if (vk->max_alloc && buf->size > vk->max_alloc) {
		gpubuf_error_set("a %zu-byte buffer exceeds Vulkan device %s's maxMemoryAllocationSize (%llu bytes)",
				 buf->size, vk->info.name,
				 (unsigned long long)vk->max_alloc);
		return -EFBIG;
	}
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	rec->vk = gpubuf_vk_get(vk);
	if (buf->fd >= 0 && (f & GPUBUF_VK_FEATURE_DMA_BUF_IMPORT)) {
		err = gpubuf_vk_import_dmabuf(vk, buf, rec);
		if (err) {
			snprintf(why, sizeof(why), "%s", gpubuf_last_error());
			gpubuf_vk_clear(rec);
		}
	}
	if (err && (f & GPUBUF_VK_FEATURE_HOST_IMPORT)) {
		err = gpubuf_vk_import_host(vk, buf, rec);
		if (err && why[0]) {
			char host[256];

			snprintf(host, sizeof(host), "%s", gpubuf_last_error());
			gpubuf_error_set("dma-buf import: %s; host import: %s",
					 why, host);
		}
	}
	if (err) {
		gpubuf_vk_undo(rec);
		return err;
	}
	rec->pid = getpid();
	rec->buf = buf;
	if (rec->kind == GPUBUF_VK_IMPORT_DMA_BUF)
		gpubuf_vk_list(rec);
	*out = rec;
	return 0;
}

/* The buffers to sync, each once: an operand's, or a view's of the same. */
static unsigned int gpubuf_vk_find_dmabufs(struct gpubuf_vk *vk,
					   const uint64_t *addr,
					   unsigned int n,
					   struct gpubuf **bufs)
{
	unsigned int nbufs = 0;

	for (unsigned int i = 0; i < n; i++) {
		struct gpubuf_vk_rec *rec;
		unsigned int j;

		for (rec = vk->dmabufs; rec; rec = rec->next)
			if (addr[i] >= rec->address &&
			    addr[i] - rec->address < rec->buf->size)
				break;
		if (!rec)
			continue;
		for (j = 0; j < nbufs && bufs[j] != rec->buf; j++)
			;
		if (j == nbufs)
			bufs[nbufs++] = rec->buf;
	}
	return nbufs;
}

int gpubuf_vk_sync_operands(struct gpubuf_vk *vk, const uint64_t *addr,
			    unsigned int n, bool start)
{
	struct gpubuf *bufs[GPUBUF_VK_MAX_OPERANDS];
	unsigned int nbufs;
	int err = 0;

	if (n > GPUBUF_VK_MAX_OPERANDS)
		return -EINVAL;
	/* The list cannot change under the ioctls: releases wait. */
	pthread_mutex_lock(&vk->imports_lock);
	nbufs = gpubuf_vk_find_dmabufs(vk, addr, n, bufs);
	/*
	 * END stops at the first failure (nothing is submitted then); START
	 * goes on, as the device wrote the output, which may come last.
	 */
	for (unsigned int i = 0; i < nbufs && (start || !err); i++) {
		/* A read-only dma-buf takes read syncs only. */
		unsigned int access = gpubuf_is_readonly(bufs[i]) ?
				      GPUBUF_ACCESS_READ : GPUBUF_ACCESS_RW;
		int e = start ? gpubuf_sync_begin(bufs[i], access) :
				gpubuf_sync_end(bufs[i], access);

		if (e && !err) {
			err = e;
			gpubuf_error_set("DMA_BUF_IOCTL_SYNC (%s) on the dma-buf fd %d of an operand's buffer: %s",
					 start ? "START, after the dispatch" :
						 "END, before the dispatch",
					 gpubuf_fd(bufs[i]), strerror(-e));
		}
	}
	pthread_mutex_unlock(&vk->imports_lock);
	return err;
}

static void gpubuf_vk_fill(const struct gpubuf_vk_rec *rec,
			   const struct gpubuf *buf,
			   struct gpubuf_vk_memory *out)
{
	memset(out, 0, sizeof(*out));
	out->buffer = (uint64_t)(uintptr_t)rec->buffer;
	out->memory = (uint64_t)(uintptr_t)rec->memory;
	out->address = rec->address;
	out->size = buf->size;
	out->import = rec->kind;
	out->memory_type = rec->type;
}

GPUBUF_EXPORT int gpubuf_vk_import(struct gpubuf *buf, struct gpubuf_vk *vk,
				   struct gpubuf_vk_memory *out)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_vk_rec *rec;
	int err = 0;

	gpubuf_error_clear();
	if (!buf || !vk || !out)
		return -EINVAL;
	err = gpubuf_vk_check_process(vk);
	if (!err)
		err = gpubuf_vk_check_lost(vk);
	if (err)
		return err;
	pthread_mutex_lock(&buf->lock);
	rec = gpubuf_vk_find(buf, vk);
	if (rec && rec->count == UINT_MAX) {
		gpubuf_error_set("too many Vulkan imports of one buffer");
		err = -EOVERFLOW;
	} else if (rec) {
		rec->count++;
	} else {
		err = gpubuf_vk_import_new(vk, buf, &rec);
		if (!err) {
			rec->count = 1;
			gpubuf_hold_add(buf, &rec->hold, &gpubuf_vk_hold_ops);
		}
	}
	if (!err)
		gpubuf_vk_fill(rec, buf, out);
	pthread_mutex_unlock(&buf->lock);
	return err;
}

GPUBUF_EXPORT int gpubuf_vk_release(struct gpubuf *buf, struct gpubuf_vk *vk)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_vk_rec *rec;
	int err = 0;

	gpubuf_error_clear();
	if (!buf || !vk)
		return -EINVAL;
	err = gpubuf_vk_check_process(vk);
	if (err)
		return err;
	pthread_mutex_lock(&buf->lock);
	rec = gpubuf_vk_find(buf, vk);
	if (!rec) {
		gpubuf_error_set("buffer is not imported into Vulkan device %s",
				 vk->info.name);
		err = -ENXIO;
	} else if (--rec->count == 0) {
		gpubuf_hold_del(buf, &rec->hold);
		gpubuf_vk_undo(rec);
	}
	pthread_mutex_unlock(&buf->lock);
	return err;
}

GPUBUF_EXPORT int gpubuf_vk_matrix_view(const struct gpubuf_matrix *m,
					struct gpubuf_vk *vk,
					struct gpubuf_vk_matrix *out)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_vk_rec *rec;
	VkDeviceAddress base = 0;
	int err;

	gpubuf_error_clear();
	if (!m || !vk || !out)
		return -EINVAL;
	err = gpubuf_matrix_check(m);
	if (!err)
		err = gpubuf_vk_check_process(vk);
	if (err)
		return err;
	pthread_mutex_lock(&m->buf->lock);
	rec = gpubuf_vk_find(m->buf, vk);
	if (rec)
		base = rec->address;
	pthread_mutex_unlock(&m->buf->lock);
	if (!rec) {
		gpubuf_error_set("buffer is not imported into Vulkan device %s",
				 vk->info.name);
		return -ENXIO;
	}
	out->address = base + m->offset;
	out->rows = m->rows;
	out->cols = m->cols;
	out->ld = m->ld;
	out->dtype = m->dtype;
	out->layout = m->layout;
	out->vk = vk;
	out->flags = (m->buf->flags & GPUBUF_BUF_READONLY) ?
		     GPUBUF_VK_MATRIX_READ_ONLY : 0;
	return 0;
}

#else /* !GPUBUF_HAVE_VULKAN */

GPUBUF_EXPORT int gpubuf_vk_import(struct gpubuf *buf, struct gpubuf_vk *vk,
				   struct gpubuf_vk_memory *out)
{
	gpubuf_error_clear();
	if (!buf || !vk || !out)
		return -EINVAL;
	gpubuf_error_set("libgpubuf was built without Vulkan support");
	return -EOPNOTSUPP;
}

/* Nothing can have been imported. */
GPUBUF_EXPORT int gpubuf_vk_release(struct gpubuf *buf, struct gpubuf_vk *vk)
{
	gpubuf_error_clear();
	if (!buf || !vk)
		return -EINVAL;
	gpubuf_error_set("libgpubuf was built without Vulkan support");
	return -EOPNOTSUPP;
}

GPUBUF_EXPORT int gpubuf_vk_matrix_view(const struct gpubuf_matrix *m,
					struct gpubuf_vk *vk,
					struct gpubuf_vk_matrix *out)
{
	gpubuf_error_clear();
	if (!m || !vk || !out)
		return -EINVAL;
	gpubuf_error_set("libgpubuf was built without Vulkan support");
	return -EOPNOTSUPP;
}

#endif /* GPUBUF_HAVE_VULKAN */
