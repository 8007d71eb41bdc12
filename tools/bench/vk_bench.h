/* SPDX-License-Identifier: MIT */
/*
 * gpubuf-bench's vulkan mode, shared by vulkan.c (the GEMV rows, the
 * ratio) and vulkan_latency.c (launch latency): the tool's own Vulkan
 * device, resolved with dlopen()ed entry points, and the helpers both use.
 * Only with GPUBUF_TOOLS_HAVE_VULKAN.
 */
#ifndef GPUBUF_BENCH_VK_BENCH_H
#define GPUBUF_BENCH_VK_BENCH_H

#include "bench.h"

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

/* Vulkan headers before 1.2.175 (bullseye's) lack these. */
#ifndef VK_API_VERSION_MAJOR
#define VK_API_VERSION_MAJOR(version) (((uint32_t)(version) >> 22) & 0x7fU)
#define VK_API_VERSION_MINOR(version) (((uint32_t)(version) >> 12) & 0x3ffU)
#define VK_API_VERSION_PATCH(version) ((uint32_t)(version) & 0xfffU)
#endif

/* vkDestroyInstance first: whatever else is missing, the instance goes. */
#define VKB_FNS(X)							\
	X(vkDestroyInstance)						\
	X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)	\
	X(vkGetPhysicalDeviceFeatures2) X(vkGetPhysicalDeviceMemoryProperties) \
	X(vkGetPhysicalDeviceQueueFamilyProperties)			\
	X(vkEnumerateDeviceExtensionProperties) X(vkCreateDevice)	\
	X(vkGetDeviceProcAddr)
#define VKB_DEV_FNS(X)							\
	X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateBuffer)	\
	X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements)		\
	X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory)	\
	X(vkGetBufferDeviceAddress) X(vkCreateCommandPool)		\
	X(vkDestroyCommandPool) X(vkAllocateCommandBuffers)		\
	X(vkResetCommandBuffer) X(vkBeginCommandBuffer)			\
	X(vkEndCommandBuffer) X(vkCmdCopyBuffer) X(vkCmdPipelineBarrier) \
	X(vkCreateFence) X(vkDestroyFence) X(vkResetFences)		\
	X(vkWaitForFences) X(vkQueueSubmit)

struct vk_bench {
	struct bench *b;
#define VKB_FIELD(n) PFN_##n n;
	VKB_FNS(VKB_FIELD)
	VKB_DEV_FNS(VKB_FIELD)
#undef VKB_FIELD
	VkInstance inst;
	VkPhysicalDevice phys;
	VkDevice dev;
	VkQueue queue;
	uint32_t family;
	VkPhysicalDeviceMemoryProperties mem;
	VkCommandPool pool;
	VkCommandBuffer cmd;
	VkFence fence;
	struct gpubuf_vk *vk;
	struct gpubuf_vk_info info;
	int reps, warmup;
	uint64_t ratio_size;	/* ratios here have the plain names */
	/* vulkan_blas.c: OpenBLAS's cblas_sgemv, or NULL and why not */
	void *blas;
	void (*sgemv)(int order, int trans, int m, int n, float alpha,
		      const float *a, int lda, const float *x, int incx,
		      float beta, float *y, int incy);
	void (*sgemm)(int order, int transa, int transb, int m, int n, int k,
		      float alpha, const float *a, int lda, const float *b,
		      int ldb, float beta, float *c, int ldc);
	char blas_name[96];
	char blas_why[160];
};

/* A VkResult as "what: VkResult N" in why; -EIO. */
int vk_fail(char *why, size_t len, const char *what, VkResult r);
/* An f32 rows x cols matrix of gpubuf memory, imported, and its view. */
int vk_operand(struct vk_bench *vb, struct gpubuf_matrix *m, size_t rows,
	       size_t cols, struct gpubuf_vk_memory *mem,
	       struct gpubuf_vk_matrix *v, char *why, size_t len);
/* A skipped row, saying why. */
struct result *vk_row_skip(struct vk_bench *vb, const char *op,
			   const char *mem, uint64_t size, const char *why);
/* vulkan_latency.c: the launch-latency rows. */
void vk_latency(struct vk_bench *vb);
/* vulkan_gemm.c: the GEMM rows, GFLOP/s, and OpenBLAS's beside them. */
void vk_gemm_rows(struct vk_bench *vb);
/* vulkan_blas.c: OpenBLAS for the anchor rows, if there is one; and close. */
void vk_blas_open(struct vk_bench *vb);
void vk_blas_close(struct vk_bench *vb);

#endif /* GPUBUF_BENCH_VK_BENCH_H */
