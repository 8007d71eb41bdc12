/* SPDX-License-Identifier: MIT */
/*
 * vulkan/, libgpubuf's Vulkan consumer: libvulkan.so.1 loaded with dlopen
 * (vk_loader.c), devices the library owns or wraps (vk_device.c), buffers
 * imported in place as a dma-buf or as host memory and held by that import
 * (vk_import.c), and GEMV/GEMM as SPIR-V compute shaders built from
 * the GLSL in shaders/ (vk_kernels.c, vk_spirv.S). Types come from the Vulkan
 * headers at build time; nothing links against libvulkan.
 */
#ifndef GPUBUF_VK_INTERNAL_H
#define GPUBUF_VK_INTERNAL_H

#ifdef GPUBUF_HAVE_VULKAN

#define VK_NO_PROTOTYPES
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>
#include <vulkan/vulkan.h>

/*
 * Vulkan headers before 1.2.175 (bullseye's 1.2.162) have only the
 * deprecated version macros, without the variant field.
 */
#ifndef VK_MAKE_API_VERSION
#define VK_MAKE_API_VERSION(variant, major, minor, patch)		\
	((((uint32_t)(variant)) << 29) | (((uint32_t)(major)) << 22) |	\
	 (((uint32_t)(minor)) << 12) | ((uint32_t)(patch)))
#define VK_API_VERSION_MAJOR(version) (((uint32_t)(version) >> 22) & 0x7fU)
#define VK_API_VERSION_MINOR(version) (((uint32_t)(version) >> 12) & 0x3ffU)
#define VK_API_VERSION_PATCH(version) ((uint32_t)(version) & 0xfffU)
#endif

#include "gpubuf.h"

/* Instance-level entry points; X(name, required). */
#define GPUBUF_VK_INSTANCE_FNS(X)					\
	X(vkDestroyInstance, 1)						\
	X(vkEnumeratePhysicalDevices, 1)				\
	X(vkGetPhysicalDeviceProperties, 1)				\
	X(vkGetPhysicalDeviceProperties2, 1)				\
	X(vkGetPhysicalDeviceFeatures2, 1)				\
	X(vkGetPhysicalDeviceQueueFamilyProperties, 1)			\
	X(vkGetPhysicalDeviceMemoryProperties, 1)			\
	X(vkEnumerateDeviceExtensionProperties, 1)			\
	X(vkCreateDevice, 1)						\
	X(vkGetDeviceProcAddr, 1)					\
	X(vkCreateDebugUtilsMessengerEXT, 0)				\
	X(vkDestroyDebugUtilsMessengerEXT, 0)

/* Device-level entry points. */
#define GPUBUF_VK_DEVICE_FNS(X)						\
	X(vkDestroyDevice, 1)						\
	X(vkGetDeviceQueue, 1)						\
	X(vkCreateBuffer, 1)						\
	X(vkDestroyBuffer, 1)						\
	X(vkGetBufferMemoryRequirements, 1)				\
	X(vkAllocateMemory, 1)						\
	X(vkFreeMemory, 1)						\
	X(vkBindBufferMemory, 1)					\
	X(vkGetBufferDeviceAddress, 1)					\
	X(vkGetMemoryHostPointerPropertiesEXT, 0)			\
	X(vkGetMemoryFdPropertiesKHR, 0)				\
	X(vkCreateShaderModule, 1)					\
	X(vkDestroyShaderModule, 1)					\
	X(vkCreatePipelineLayout, 1)					\
	X(vkDestroyPipelineLayout, 1)					\
	X(vkCreateComputePipelines, 1)					\
	X(vkDestroyPipeline, 1)						\
	X(vkCreateCommandPool, 1)					\
	X(vkDestroyCommandPool, 1)					\
	X(vkAllocateCommandBuffers, 1)					\
	X(vkResetCommandBuffer, 1)					\
	X(vkBeginCommandBuffer, 1)					\
	X(vkEndCommandBuffer, 1)					\
	X(vkCmdBindPipeline, 1)						\
	X(vkCmdPushConstants, 1)					\
	X(vkCmdDispatch, 1)						\
	X(vkCmdPipelineBarrier, 1)					\
	X(vkCreateFence, 1)						\
	X(vkDestroyFence, 1)						\
	X(vkResetFences, 1)						\
	X(vkWaitForFences, 1)						\
	X(vkQueueSubmit, 1)

/* The library's pipelines, one per shader and dtype. */
enum gpubuf_vk_kernel {
	GPUBUF_VK_GEMV_F32,
	GPUBUF_VK_GEMV_F64,
	GPUBUF_VK_GEMV_ROWS_F32,
	GPUBUF_VK_GEMV_ROWS_F64,
	GPUBUF_VK_GEMV_SG_F32,
	GPUBUF_VK_GEMV_SG_F64,
	GPUBUF_VK_GEMM_F32,
	GPUBUF_VK_GEMM_F64,
	GPUBUF_VK_STREAM_READ,
	GPUBUF_VK_NR_KERNELS
};

struct gpubuf_vk_rec;

struct gpubuf_vk {
	atomic_uint refs;		/* the caller's and one per import */
	bool own;			/* instance and device are the library's */
	pid_t pid;			/* the process that opened it */
	pthread_mutex_t lock;		/* queue, command buffer, fence, lost */

#define GPUBUF_VK_FN_FIELD(name, required) PFN_##name name;
	GPUBUF_VK_INSTANCE_FNS(GPUBUF_VK_FN_FIELD)
	GPUBUF_VK_DEVICE_FNS(GPUBUF_VK_FN_FIELD)
#undef GPUBUF_VK_FN_FIELD

	VkInstance instance;
	VkPhysicalDevice phys;
	VkDevice dev;
	VkQueue queue;
	uint32_t queue_family;
	VkDebugUtilsMessengerEXT messenger;
	atomic_ulong validation_errors;
	struct gpubuf_vk_info info;	/* features: what is usable */
	VkPhysicalDeviceMemoryProperties mem;
	uint32_t max_groups[3];		/* maxComputeWorkGroupCount */
	uint32_t max_invocations;	/* maxComputeWorkGroupInvocations */
	uint64_t max_alloc;		/* maxMemoryAllocationSize */
	uint32_t max_group_size[2];	/* maxComputeWorkGroupSize x, y */
	VkDriverId driver;		/* VkPhysicalDeviceDriverProperties */
	uint64_t max_flops;		/* per submission: GPUBUF_VK_MAX_FLOPS */
	uint32_t subgroup_size;		/* VkPhysicalDeviceSubgroupProperties */
	bool subgroup_add;		/* subgroupAdd(), ballot in compute */

	/* vk_kernels.c, under lock */
	VkCommandPool pool;
	VkCommandBuffer cmd;
	VkFence fence;
	VkPipelineLayout layout;
	VkPipeline pipe[GPUBUF_VK_NR_KERNELS];
	atomic_bool lost;		/* a submission or wait failed */

	/* vk_import.c: the dma-buf imports, which kernels sync around */
	pthread_mutex_t imports_lock;	/* innermost: taken under lock */
	struct gpubuf_vk_rec *dmabufs;
};

/* vk_loader.c: the loader's vkGetInstanceProcAddr, loaded once. */
int gpubuf_vk_loader(PFN_vkGetInstanceProcAddr *gipa);
/* The errno for a VkResult, with "what: VK_ERROR_..." as the last error. */
int gpubuf_vk_fail(VkResult r, const char *what);
/* Resolve vk's tables: instance-level, then device-level entry points. */
int gpubuf_vk_resolve_instance(struct gpubuf_vk *vk,
			       PFN_vkGetInstanceProcAddr gipa);
int gpubuf_vk_resolve_device(struct gpubuf_vk *vk);

/* vk_device.c */
struct gpubuf_vk *gpubuf_vk_get(struct gpubuf_vk *vk);
void gpubuf_vk_put(struct gpubuf_vk *vk);
/*
 * 0, or -ENODEV with the reason when called in a fork() child of the
 * process that opened vk: the driver's state (DRM files, threads, the
 * lock) is the parent's, and a child that used it would break the parent.
 */
int gpubuf_vk_check_process(const struct gpubuf_vk *vk);
int gpubuf_vk_check_lost(struct gpubuf_vk *vk);
/* Whether the calling process is a fork() child of vk's opener. */
bool gpubuf_vk_forked(const struct gpubuf_vk *vk);

/*
 * vk_import.c: DMA_BUF_IOCTL_SYNC on the dma-buf imports of vk that hold
 * the n device addresses: END before a dispatch (the CPU's writes reach
 * the device's view), START after its fence (the device's writes reach the
 * CPU's). Addresses outside every dma-buf import need nothing. 0 or the
 * ioctl's negative errno, with the last error set.
 */
#define GPUBUF_VK_MAX_OPERANDS	3
int gpubuf_vk_sync_operands(struct gpubuf_vk *vk, const uint64_t *addr,
			    unsigned int n, bool start);

/*
 * The most floating-point operations (a multiply-add is two) one GEMV or
 * GEMM submission carries: larger calls are split into submissions of
 * whole rows (or columns) of the output, each waited for, so that no
 * single one runs into a driver's job timeout or a display watchdog.
 * GPUBUF_VK_MAX_FLOPS in the environment sets it when a device is opened
 * or wrapped.
 */
#define GPUBUF_VK_MAX_FLOPS_DEFAULT	(1ULL << 34)

/* vk_kernels.c: pipelines for vk's device, and their teardown. */
int gpubuf_vk_kernels_init(struct gpubuf_vk *vk);
/* Device index's gpubuf_vk_info() without opening it (vk_device.c). */
int gpubuf_vk_phys_info(int index, struct gpubuf_vk_info *info);
void gpubuf_vk_kernels_fini(struct gpubuf_vk *vk);

#endif /* GPUBUF_HAVE_VULKAN */
#endif /* GPUBUF_VK_INTERNAL_H */
