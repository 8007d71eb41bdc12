// SPDX-License-Identifier: MIT
/*
 * vulkan: libgpubuf's SPIR-V GEMV on a Vulkan device, at each size (the
 * bytes of the f32 square matrix A; default 16 MiB, in a last-level cache
 * of some CPUs, and 256 MiB, beyond every one):
 *  - gemv_inplace: on gpubuf memory imported in place (gpubuf_vk_import);
 *  - gemv_copy: A copied first into the device's own memory
 *    (vkCmdCopyBuffer into a DEVICE_LOCAL buffer), then the same GEMV there;
 *  - vk_import: what gpubuf_vk_import() and gpubuf_vk_release() of a fresh
 *    buffer cost.
 * Then launch latency, as seed 002 compares runtimes (vk_latency()): an
 * empty submission and its fence, and the library's smallest GEMV, in
 * microseconds (median and p99); and a 1M-element vector add repeated
 * 1000 times.
 * Ratios, from interleaved pairs at every size: in place over copy + GEMV,
 * over the host's read of A, over the device's read of A (a streaming-read
 * shader, gpubuf_vk_stream_read(): how near GEMV is to what the device
 * can read at all), over OpenBLAS's sgemv. Everything is
 * host-timed around synchronous calls. The device is the tool's own
 * (libvulkan.so.1 with dlopen), handed to the library with
 * gpubuf_vk_wrap(), as an application would. On Mesa's lavapipe, which
 * runs on the CPU, "device memory" is host memory too, and the output says
 * so: those ratios describe lavapipe, not a GPU.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpubuf/tools.h>	/* gpubuf_vk_stream_read() */

#include "bench.h"

static struct result *vk_unavailable(struct bench *b, const char *why)
{
	struct result *r = result_add(b, MODE_VULKAN, RES_UNAVAILABLE);

	snprintf(r->op, sizeof(r->op), "all");
	snprintf(r->memory, sizeof(r->memory), "-");
	r->device_count = -1;
	result_reason(r, "%s", why);
	return r;
}

#ifndef GPUBUF_TOOLS_HAVE_VULKAN

int mode_vulkan(struct bench *b)
{
	vk_unavailable(b, "gpubuf-bench was built without Vulkan support");
	return EXIT_UNSUPPORTED;
}

#else /* GPUBUF_TOOLS_HAVE_VULKAN */

#include "vk_bench.h"

/* One size's operands: A, x, y in gpubuf memory; A's device copy. */
struct vk_size {
	uint64_t size;
	struct gpubuf_matrix a, x, y;
	struct gpubuf_vk_memory am;
	struct gpubuf_vk_matrix va, vx, vy, vdev;
	VkBuffer dbuf;
	VkDeviceMemory dmem;
};

static const uint64_t vk_default_sizes[] = { 16 * MIB, 256 * MIB };

int vk_fail(char *why, size_t len, const char *what, VkResult r)
{
	snprintf(why, len, "%s: VkResult %d", what, (int)r);
	return -EIO;
}

/* ---- the tool's own device, as an application makes one ------------------- */

static int vk_has_ext(const VkExtensionProperties *p, uint32_t n,
		      const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(p[i].extensionName, name))
			return 1;
	return 0;
}

static int vk_create_device(struct vk_bench *vb, uint32_t *features,
			    char *why, size_t len)
{
	const char *exts[3];
	uint32_t n = 0, nexts = 0, nq = 0;
	VkPhysicalDeviceVulkan12Features f12 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
	};
	VkPhysicalDeviceFeatures2 f = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
		.pNext = &f12,
	};
	VkQueueFamilyProperties q[16];
	VkExtensionProperties *p;
	float prio = 1.0f;
	VkResult r;

	vb->vkGetPhysicalDeviceFeatures2(vb->phys, &f);
	if (!f12.bufferDeviceAddress || !f.features.shaderInt64) {
		snprintf(why, len, "the device lacks bufferDeviceAddress or shaderInt64");
		return -ENODEV;
	}
	*features = f.features.shaderFloat64 ? GPUBUF_VK_FEATURE_FLOAT64 : 0;
	vb->vkEnumerateDeviceExtensionProperties(vb->phys, NULL, &n, NULL);
	p = calloc(n ? n : 1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	vb->vkEnumerateDeviceExtensionProperties(vb->phys, NULL, &n, p);
	if (vk_has_ext(p, n, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME)) {
		*features |= GPUBUF_VK_FEATURE_HOST_IMPORT;
		exts[nexts++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
	}
	if (vk_has_ext(p, n, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME) &&
	    vk_has_ext(p, n, VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME)) {
		*features |= GPUBUF_VK_FEATURE_DMA_BUF_IMPORT;
		exts[nexts++] = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
		exts[nexts++] = VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME;
	}
	free(p);
	nq = 16;
	vb->vkGetPhysicalDeviceQueueFamilyProperties(vb->phys, &nq, q);
	for (vb->family = 0; vb->family < nq &&
	     !(q[vb->family].queueFlags & VK_QUEUE_COMPUTE_BIT); vb->family++)
		;
	if (vb->family == nq) {
		snprintf(why, len, "the device has no compute queue");
		return -ENODEV;
	}
	r = vb->vkCreateDevice(vb->phys, &(VkDeviceCreateInfo){
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.pNext = &(VkPhysicalDeviceFeatures2){
			.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
			.pNext = &(VkPhysicalDeviceVulkan12Features){
				.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
				.bufferDeviceAddress = VK_TRUE,
			},
			.features = {
				.shaderInt64 = VK_TRUE,
				.shaderFloat64 = f.features.shaderFloat64,
			},
		},
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &(VkDeviceQueueCreateInfo){
			.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
			.queueFamilyIndex = vb->family,
			.queueCount = 1,
			.pQueuePriorities = &prio,
		},
		.enabledExtensionCount = nexts,
		.ppEnabledExtensionNames = exts,
	}, NULL, &vb->dev);
	if (r != VK_SUCCESS) {
		vb->dev = VK_NULL_HANDLE;
		return vk_fail(why, len, "vkCreateDevice", r);
	}
	return 0;
}

static int vk_resolve_device(struct vk_bench *vb, char *why, size_t len)
{
#define VKB_DEV(n)							\
	vb->n = (PFN_##n)vb->vkGetDeviceProcAddr(vb->dev, #n);		\
	if (!vb->n) {							\
		snprintf(why, len, "the device lacks %s", #n);		\
		return -ENODEV;						\
	}
	VKB_DEV_FNS(VKB_DEV)
#undef VKB_DEV
	vb->vkGetDeviceQueue(vb->dev, vb->family, 0, &vb->queue);
	return 0;
}

static int vk_command_buffer(struct vk_bench *vb, char *why, size_t len)
{
	VkResult r;

	r = vb->vkCreateCommandPool(vb->dev, &(VkCommandPoolCreateInfo){
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = vb->family,
	}, NULL, &vb->pool);
	if (r != VK_SUCCESS) {
		vb->pool = VK_NULL_HANDLE;
		return vk_fail(why, len, "vkCreateCommandPool", r);
	}
	r = vb->vkAllocateCommandBuffers(vb->dev, &(VkCommandBufferAllocateInfo){
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = vb->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	}, &vb->cmd);
	if (r != VK_SUCCESS)
		return vk_fail(why, len, "vkAllocateCommandBuffers", r);
	r = vb->vkCreateFence(vb->dev, &(VkFenceCreateInfo){
		.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
	}, NULL, &vb->fence);
	if (r != VK_SUCCESS) {
		vb->fence = VK_NULL_HANDLE;
		return vk_fail(why, len, "vkCreateFence", r);
	}
	return 0;
}

static int vk_setup(struct vk_bench *vb, char *why, size_t len)
{
	PFN_vkGetInstanceProcAddr gipa;
	PFN_vkCreateInstance create;
	struct gpubuf_vk_device d = { .size = sizeof(d) };
	VkPhysicalDevice devs[16];
	uint32_t n = 16, features;
	void *lib;
	VkResult r;
	int err;

	/* Never closed: drivers keep threads for the process. */
	lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(why, len, "no Vulkan loader: %s", dlerror() ?: "no reason given");
		return -ENODEV;
	}
	gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
	create = gipa ? (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance") :
		 NULL;
	if (!create) {
		snprintf(why, len, "libvulkan.so.1 lacks vkCreateInstance");
		return -ENODEV;
	}
	r = create(&(VkInstanceCreateInfo){
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &(VkApplicationInfo){
			.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
			.pApplicationName = "gpubuf-bench",
			.apiVersion = VK_API_VERSION_1_2,
		},
	}, NULL, &vb->inst);
	if (r != VK_SUCCESS) {
		vb->inst = VK_NULL_HANDLE;
		return vk_fail(why, len, "vkCreateInstance", r);
	}
#define VKB_INST(f)							\
	vb->f = (PFN_##f)gipa(vb->inst, #f);				\
	if (!vb->f) {							\
		snprintf(why, len, "the instance lacks %s", #f);	\
		return -ENODEV;						\
	}
	VKB_FNS(VKB_INST)
#undef VKB_INST
	r = vb->vkEnumeratePhysicalDevices(vb->inst, &n, devs);
	if ((r != VK_SUCCESS && r != VK_INCOMPLETE) ||
	    (uint32_t)vb->b->o.device >= n) {
		snprintf(why, len, "no Vulkan device %d (%u present)",
			 vb->b->o.device, r == VK_SUCCESS ? n : 0);
		return -ENODEV;
	}
	vb->phys = devs[vb->b->o.device];
	vb->vkGetPhysicalDeviceMemoryProperties(vb->phys, &vb->mem);
	err = vk_create_device(vb, &features, why, len);
	if (!err)
		err = vk_resolve_device(vb, why, len);
	if (!err)
		err = vk_command_buffer(vb, why, len);
	if (err)
		return err;
	d.get_instance_proc_addr = (void *)gipa;
	d.instance = vb->inst;
	d.physical_device = vb->phys;
	d.device = vb->dev;
	d.queue = vb->queue;
	d.queue_family = vb->family;
	d.features = features;
	err = gpubuf_vk_wrap(&d, &vb->vk);
	if (err) {
		snprintf(why, len, "gpubuf_vk_wrap: %s: %s",
			 gpubuf_strerror(err), gpubuf_last_error());
		vb->vk = NULL;
		return err;
	}
	return gpubuf_vk_info(vb->vk, &vb->info);
}

static void vk_teardown(struct vk_bench *vb)
{
	vk_blas_close(vb);
	gpubuf_vk_close(vb->vk);
	if (vb->dev && vb->vkDestroyDevice) {
		if (vb->fence)
			vb->vkDestroyFence(vb->dev, vb->fence, NULL);
		if (vb->pool)
			vb->vkDestroyCommandPool(vb->dev, vb->pool, NULL);
		vb->vkDestroyDevice(vb->dev, NULL);
	}
	if (vb->inst && vb->vkDestroyInstance)
		vb->vkDestroyInstance(vb->inst, NULL);
}

/* ---- operands ---------------------------------------------------------------- */

/* A DEVICE_LOCAL buffer with a device address, for A's copy. */
static int vk_device_buffer(struct vk_bench *vb, struct vk_size *s,
			    char *why, size_t len)
{
	VkMemoryRequirements req;
	uint32_t type;
	VkResult r;

	r = vb->vkCreateBuffer(vb->dev, &(VkBufferCreateInfo){
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = s->am.size,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
			 VK_BUFFER_USAGE_TRANSFER_DST_BIT |
			 VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT,
	}, NULL, &s->dbuf);
	if (r != VK_SUCCESS) {
		s->dbuf = VK_NULL_HANDLE;
		return vk_fail(why, len, "vkCreateBuffer", r);
	}
	vb->vkGetBufferMemoryRequirements(vb->dev, s->dbuf, &req);
	for (type = 0; type < vb->mem.memoryTypeCount; type++)
		if ((req.memoryTypeBits >> type & 1) &&
		    (vb->mem.memoryTypes[type].propertyFlags &
		     VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
			break;
	if (type == vb->mem.memoryTypeCount) {
		snprintf(why, len, "no DEVICE_LOCAL memory type for a buffer");
		return -ENODEV;
	}
	r = vb->vkAllocateMemory(vb->dev, &(VkMemoryAllocateInfo){
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.pNext = &(VkMemoryAllocateFlagsInfo){
			.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
			.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT,
		},
		.allocationSize = req.size,
		.memoryTypeIndex = type,
	}, NULL, &s->dmem);
	if (r == VK_SUCCESS)
		r = vb->vkBindBufferMemory(vb->dev, s->dbuf, s->dmem, 0);
	else
		s->dmem = VK_NULL_HANDLE;
	if (r != VK_SUCCESS)
		return vk_fail(why, len, "vkAllocateMemory (device-local)", r);
	/* The device copy: A's view, moved to the device buffer's address. */
	s->vdev = s->va;
	s->vdev.address = vb->vkGetBufferDeviceAddress(vb->dev,
		&(VkBufferDeviceAddressInfo){
			.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
			.buffer = s->dbuf,
		}) + (s->va.address - s->am.address);
	return 0;
}

int vk_operand(struct vk_bench *vb, struct gpubuf_matrix *m, size_t rows,
	       size_t cols, struct gpubuf_vk_memory *mem,
	       struct gpubuf_vk_matrix *v, char *why, size_t len)
{
	struct gpubuf_vk_memory tmp;
	int err;

	err = gpubuf_matrix_alloc_opts(vb->b->ctx, GPUBUF_DTYPE_F32, rows, cols,
				       GPUBUF_ROW_MAJOR, 0, BENCH_ALLOC(vb->b), m);
	if (err) {
		snprintf(why, len, "gpubuf_matrix_alloc: %s",
			 gpubuf_strerror(err));
		return err;
	}
	for (size_t i = 0; i < rows; i++)
		for (size_t j = 0; j < cols; j++)
			gpubuf_matrix_set(m, i, j, (double)((i + j) % 7) - 3);
	err = gpubuf_vk_import(m->buf, vb->vk, mem ? mem : &tmp);
	if (!err)
		err = gpubuf_vk_matrix_view(m, vb->vk, v);
	if (err)
		snprintf(why, len, "gpubuf_vk_import: %s: %s",
			 gpubuf_strerror(err), gpubuf_last_error());
	return err;
}

static void vk_size_put(struct vk_bench *vb, struct vk_size *s)
{
	if (s->dbuf)
		vb->vkDestroyBuffer(vb->dev, s->dbuf, NULL);
	if (s->dmem)
		vb->vkFreeMemory(vb->dev, s->dmem, NULL);
	/* The last unref releases the imports. */
	gpubuf_matrix_release(&s->a);
	gpubuf_matrix_release(&s->x);
	gpubuf_matrix_release(&s->y);
	free(s);
}

static struct vk_size *vk_size_get(struct vk_bench *vb, uint64_t size,
				   char *why, size_t len)
{
	struct vk_size *s = calloc(1, sizeof(*s));
	size_t n = (size_t)sqrt((double)size / 4);
	int err;

	if (!s) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	s->size = size;
	err = vk_operand(vb, &s->a, n, n, &s->am, &s->va, why, len);
	if (!err)
		err = vk_operand(vb, &s->x, n, 1, NULL, &s->vx, why, len);
	if (!err)
		err = vk_operand(vb, &s->y, n, 1, NULL, &s->vy, why, len);
	if (!err)
		err = vk_device_buffer(vb, s, why, len);
	if (err) {
		vk_size_put(vb, s);
		return NULL;
	}
	return s;
}

/* ---- samples ------------------------------------------------------------------- */

/* A into the device buffer: one copy, then a barrier to the shaders. */
static int vk_copy_a(struct vk_bench *vb, struct vk_size *s, char *why,
		     size_t len)
{
	VkResult r;

	r = vb->vkResetCommandBuffer(vb->cmd, 0);
	if (r == VK_SUCCESS)
		r = vb->vkBeginCommandBuffer(vb->cmd, &(VkCommandBufferBeginInfo){
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
			.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
		});
	if (r != VK_SUCCESS)
		return vk_fail(why, len, "vkBeginCommandBuffer", r);
	vb->vkCmdCopyBuffer(vb->cmd, (VkBuffer)(uintptr_t)s->am.buffer,
			    s->dbuf, 1, &(VkBufferCopy){ .size = s->am.size });
	vb->vkCmdPipelineBarrier(vb->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
		VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
		&(VkMemoryBarrier){
			.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
			.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
			.dstAccessMask = VK_ACCESS_SHADER_READ_BIT,
		}, 0, NULL, 0, NULL);
	r = vb->vkEndCommandBuffer(vb->cmd);
	if (r == VK_SUCCESS)
		r = vb->vkQueueSubmit(vb->queue, 1, &(VkSubmitInfo){
			.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
			.commandBufferCount = 1,
			.pCommandBuffers = &vb->cmd,
		}, vb->fence);
	if (r == VK_SUCCESS) {
		r = vb->vkWaitForFences(vb->dev, 1, &vb->fence, VK_TRUE,
					UINT64_MAX);
		vb->vkResetFences(vb->dev, 1, &vb->fence);
	}
	return r == VK_SUCCESS ? 0 : vk_fail(why, len, "vkQueueSubmit (copy)", r);
}

enum vk_op { VK_INPLACE, VK_COPY, VK_IMPORT, VK_HOST_READ, VK_DEV_READ,
	     VK_BLAS };

/* The bytes of A's rows that a read covers, in whole 16-byte words. */
static size_t vk_read_bytes(const struct vk_size *s)
{
	return s->a.rows * s->a.ld * 4 / 16 * 16;
}

/* One sample of op, in ms (import: import + release, with the release). */
static int vk_sample(struct vk_bench *vb, struct vk_size *s, enum vk_op op,
		     double *ms, double *second, char *why, size_t len)
{
	uint64_t t0 = now_ns(), t1;
	int err = 0;

	if (op == VK_BLAS) {
		/* The same y = A x, row-major, on the same memory. */
		vb->sgemv(101 /* CblasRowMajor */, 111 /* CblasNoTrans */,
			  (int)s->a.rows, (int)s->a.cols, 1.0f,
			  gpubuf_matrix_data(&s->a), (int)s->a.ld,
			  gpubuf_matrix_data(&s->x), (int)s->x.ld, 0.0f,
			  gpubuf_matrix_data(&s->y), (int)s->y.ld);
		*ms = (double)(now_ns() - t0) / 1e6;
	} else if (op == VK_HOST_READ) {
		/* The host mode's read kernel over A, in the same memory. */
		bench_read_words(gpubuf_matrix_data(&s->a),
				 s->a.rows * s->a.ld * 4 / 8);
		*ms = (double)(now_ns() - t0) / 1e6;
	} else if (op == VK_DEV_READ) {
		/* The device streaming A as it is, no arithmetic: its ceiling. */
		err = gpubuf_vk_stream_read(vb->vk, s->va.address,
					    vk_read_bytes(s), 0);
		*ms = (double)(now_ns() - t0) / 1e6;
	} else if (op == VK_IMPORT) {
		struct gpubuf_vk_memory m;
		struct gpubuf *buf;

		err = gpubuf_alloc(vb->b->ctx, s->size, BENCH_ALLOC(vb->b), &buf);
		if (err) {
			snprintf(why, len, "gpubuf_alloc: %s", gpubuf_strerror(err));
			return err;
		}
		memset(gpubuf_ptr(buf), 1, gpubuf_size(buf));
		t0 = now_ns();
		err = gpubuf_vk_import(buf, vb->vk, &m);
		t1 = now_ns();
		if (!err)
			err = gpubuf_vk_release(buf, vb->vk);
		*ms = (double)(t1 - t0) / 1e6;
		*second = (double)(now_ns() - t1) / 1e6;
		gpubuf_unref(buf);
	} else {
		if (op == VK_COPY)
			err = vk_copy_a(vb, s, why, len);
		if (!err)
			err = gpubuf_vk_gemv(1.0, op == VK_COPY ? &s->vdev :
					     &s->va, &s->vx, 0.0, &s->vy);
		*ms = (double)(now_ns() - t0) / 1e6;
	}
	if (err && !why[0])
		snprintf(why, len, "%s: %s", gpubuf_strerror(err),
			 gpubuf_last_error());
	return err;
}

static const char *const vk_ops[] = { "gemv_inplace", "gemv_copy", "vk_import",
				      "host_read", "device_read",
				      "openblas_sgemv" };
static const char *const vk_mems[] = { "gpubuf", "device_copy", "gpubuf",
				       "gpubuf", "gpubuf", "gpubuf" };

/*
 * Bytes a GEMV at s moves (A, x, y once each), or host_read reads (A's
 * rows, with any padding between them), or device_read.
 */
static double vk_bytes(const struct vk_size *s, enum vk_op op)
{
	double rows = (double)s->a.rows;

	if (op == VK_DEV_READ)
		return (double)vk_read_bytes(s);
	return op == VK_HOST_READ ? rows * (double)s->a.ld * 4 :
	       rows * (double)s->a.cols * 4 + 2 * rows * 4;
}

struct result *vk_row_skip(struct vk_bench *vb, const char *op,
			   const char *mem, uint64_t size, const char *why)
{
	struct result *r = result_add(vb->b, MODE_VULKAN, RES_SKIPPED);

	snprintf(r->op, sizeof(r->op), "%s", op);
	snprintf(r->memory, sizeof(r->memory), "%s", mem);
	r->size_bytes = size;
	result_reason(r, "%s", why);
	return r;
}

static void vk_row(struct vk_bench *vb, struct vk_size *s, enum vk_op op)
{
	int n = vb->warmup + vb->reps;
	double *v = calloc((size_t)vb->reps, sizeof(double));
	double *w = calloc((size_t)vb->reps, sizeof(double));
	char why[256] = "";
	double ms = 0, second = 0, lo, hi;
	struct result *r;
	int i, err = v && w ? 0 : -ENOMEM;

	progress("vulkan: %s", vk_ops[op]);
	if (op == VK_BLAS && !vb->sgemv) {
		vk_row_skip(vb, vk_ops[op], vk_mems[op], s->size, vb->blas_why);
		goto out;
	}
	for (i = 0; !err && i < n; i++) {
		err = vk_sample(vb, s, op, &ms, &second, why, sizeof(why));
		if (!err && i >= vb->warmup) {
			v[i - vb->warmup] = ms;
			w[i - vb->warmup] = second;
		}
	}
	if (err) {
		vk_row_skip(vb, vk_ops[op], vk_mems[op], s->size,
			    why[0] ? why : "out of memory");
		goto out;
	}
	r = result_add(vb->b, MODE_VULKAN, RES_OK);
	snprintf(r->op, sizeof(r->op), "%s", vk_ops[op]);
	snprintf(r->memory, sizeof(r->memory), "%s", vk_mems[op]);
	r->size_bytes = s->size;
	r->threads = 1;
	r->reps = vb->reps;
	r->numa_node = -1;
	r->metric = "ms";
	stats(v, vb->reps, &r->med, &r->min, &r->max);
	r->seconds = r->med / 1e3;
	if (op != VK_IMPORT && r->med > 0) {
		r->rate_name = "effective_gb_per_s";
		r->rate = vk_bytes(s, op) / (r->med * 1e6);
	}
	if (op == VK_IMPORT) {
		stats(w, vb->reps, &r->free_seconds, &lo, &hi);
		result_reason(r, "import %.3f ms, release %.3f ms",
			      r->med, r->free_seconds);
		r->free_seconds /= 1e3;
	}
out:
	free(v);
	free(w);
}

struct vk_ratio_arg {
	struct vk_bench *vb;
	struct vk_size *s;
	enum vk_op den;
};

/* Side 0 the GEMV in place, side 1 the denominator's operation. */
static int vk_ratio_sample(void *arg, int side, double *ms, char *why,
			   size_t len)
{
	struct vk_ratio_arg *a = arg;
	double second;

	return vk_sample(a->vb, a->s, side ? a->den : VK_INPLACE, ms, &second,
			 why, len);
}

/*
 * The GEMV in place over den's operation, interleaved pairs at s's size.
 * The ratio at the ratio size has the plain name; at another size the
 * name ends in it (gemv_inplace_vs_copy_16M), so each is its own key.
 */
static void vk_ratio(struct vk_bench *vb, struct vk_size *s, uint64_t size,
		     enum vk_op den, const char *fail)
{
	static const char *const names[] = {
		[VK_COPY] = "gemv_inplace_vs_copy",
		[VK_HOST_READ] = "gemv_inplace_vs_host_read",
		[VK_DEV_READ] = "gemv_inplace_vs_device_read",
		[VK_BLAS] = "gemv_inplace_vs_openblas",
	};
	char name[48];
	int idx;

	if (size == vb->ratio_size)
		snprintf(name, sizeof(name), "%s", names[den]);
	else if (size % MIB == 0)
		snprintf(name, sizeof(name), "%s_%lluM", names[den],
			 (unsigned long long)(size / MIB));
	else
		snprintf(name, sizeof(name), "%s_%lluK", names[den],
			 (unsigned long long)(size >> 10));
	idx = ratio_add(vb->b, MODE_VULKAN, name, "gpubuf", size);
	struct ratio *rt = &vb->b->rat[idx];
	struct vk_ratio_arg arg = { vb, s, den };

	if (fail) {
		ratio_fail(rt, "%s", fail);
		return;
	}
	if (!ratio_sides(vb->b, rt, "gemv_inplace", vk_ops[den], vk_mems[den]))
		return;
	ratio_interleave(rt, vb->warmup, vb->reps, vk_ratio_sample, &arg);
}

/* A size's rows and its ratios (at every size swept, see vk_ratio()). */
static void vk_one_size(struct vk_bench *vb, uint64_t size)
{
	char why[256] = "", sz[32];
	struct vk_size *s;

	fmt_size(sz, sizeof(sz), size);
	progress("vulkan: %s", sz);
	s = vk_size_get(vb, size, why, sizeof(why));
	if (!s) {
		vk_row_skip(vb, "all", "gpubuf", size, why);
		for (enum vk_op d = VK_COPY; d <= VK_BLAS; d++)
			if (d != VK_IMPORT)
				vk_ratio(vb, NULL, size, d, why);
		return;
	}
	for (enum vk_op op = VK_INPLACE; op <= VK_BLAS; op++)
		vk_row(vb, s, op);
	for (enum vk_op d = VK_COPY; d <= VK_BLAS; d++)
		if (d != VK_IMPORT)
			vk_ratio(vb, s, size, d, NULL);
	vk_size_put(vb, s);
}

static void vk_info_row(struct vk_bench *vb)
{
	struct result *r = result_add(vb->b, MODE_VULKAN, RES_INFO);
	const struct gpubuf_vk_info *i = &vb->info;

	snprintf(r->op, sizeof(r->op), "device");
	snprintf(r->memory, sizeof(r->memory), "-");
	snprintf(r->version, sizeof(r->version), "%u.%u.%u",
		 VK_API_VERSION_MAJOR(i->api_version),
		 VK_API_VERSION_MINOR(i->api_version),
		 VK_API_VERSION_PATCH(i->api_version));
	r->device_count = -1;
	result_reason(r, "device %d: %s, Vulkan %s, imports %s%s%s%s",
		      vb->b->o.device, i->name, r->version,
		      i->features & GPUBUF_VK_FEATURE_DMA_BUF_IMPORT ?
		      "dma-bufs" : "",
		      (i->features & GPUBUF_VK_FEATURE_DMA_BUF_IMPORT) &&
		      (i->features & GPUBUF_VK_FEATURE_HOST_IMPORT) ? " and " : "",
		      i->features & GPUBUF_VK_FEATURE_HOST_IMPORT ?
		      "host memory" : "",
		      i->device_type == VK_PHYSICAL_DEVICE_TYPE_CPU ?
		      "; a CPU device (lavapipe): its \"device memory\" is host memory and these ratios are not a GPU's" :
		      "");
}

int mode_vulkan(struct bench *b)
{
	struct vk_bench vb = { .b = b };
	uint64_t sizes[MAX_SIZES];
	char why[320] = "";
	int nr, i, rc, ratios = 0;

	rc = bench_need_ctx(b, MODE_VULKAN);
	if (rc != EXIT_OK)
		return rc;
	if (vk_setup(&vb, why, sizeof(why))) {
		vk_unavailable(b, why);
		vk_teardown(&vb);
		return EXIT_UNSUPPORTED;
	}
	vb.reps = b->o.reps ? b->o.reps : 5;
	vb.warmup = b->o.warmup >= 0 ? b->o.warmup : 1;
	nr = bench_sizes(&b->o, vk_default_sizes,
			 sizeof(vk_default_sizes) / sizeof(uint64_t), sizes);
	vk_blas_open(&vb);
	vk_info_row(&vb);
	vb.ratio_size = bench_ratio_size(&b->o, sizes, nr);
	progress_start();
	for (i = 0; i < nr; i++) {
		ratios |= sizes[i] == vb.ratio_size;
		vk_one_size(&vb, sizes[i]);
	}
	if (!ratios)
		for (enum vk_op d = VK_COPY; d <= VK_BLAS; d++)
			if (d != VK_IMPORT)
				vk_ratio(&vb, NULL, vb.ratio_size, d,
					 "the ratio size was not measured");
	vk_gemm_rows(&vb);
	vk_latency(&vb);
	progress_end();
	vk_teardown(&vb);
	return EXIT_OK;
}

#endif /* GPUBUF_TOOLS_HAVE_VULKAN */
