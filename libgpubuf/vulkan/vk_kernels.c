// SPDX-License-Identifier: MIT
/*
 * gpubuf_vk_gemv() and gpubuf_vk_gemm(): the shaders of the GLSL in shaders/,
 * one compute pipeline per shader and dtype, with the operands' device
 * addresses, shapes and strides as push constants (kernels/kernel_args.h's
 * lists, checked by the same validator as the CUDA and HSA entry points).
 * A call records a dispatch into the device's command buffer, submits it
 * and waits for its fence, under the device's lock: the results are in
 * memory when it returns. A call past the device's GPUBUF_VK_MAX_FLOPS
 * goes in several such submissions, blocks of whole output rows (or
 * columns), so none meets a driver's timeout. The barrier after the dispatch makes the
 * shader's writes visible to the host, which reads them through its own
 * mapping of the same pages. Operands imported as dma-bufs are synced
 * around it (DMA_BUF_IOCTL_SYNC END before the submission, START after the
 * fence): where the device's mappings bounce, the exporter copies only then.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vulkan/vk_internal.h"
#include "kernels/kernel_args.h"
#include "core/internal.h"

/* The view as an operand of the shared checks; one device per call. */
static const struct gpubuf_kmat *gpubuf_kmat_vk(const struct gpubuf_vk_matrix *m,
						struct gpubuf_kmat *k)
{
	if (!m)
		return NULL;
	*k = (struct gpubuf_kmat){ m->address, m->rows, m->cols, m->ld,
				   m->dtype, m->layout, 0, m->flags };
	return k;
}

_Static_assert(GPUBUF_VK_MATRIX_READ_ONLY == GPUBUF_KMAT_READ_ONLY,
	       "one read-only bit");

/* All three on one device, which the checks cannot see. */
static int gpubuf_vk_same(const char *fn, const struct gpubuf_vk_matrix *a,
			  const struct gpubuf_vk_matrix *b,
			  const struct gpubuf_vk_matrix *c)
{
	if (!a || !b || !c)
		return 0;	/* the checks name what is missing */
	if (!a->vk) {
		gpubuf_error_set("%s: operand without a Vulkan device", fn);
		return -EINVAL;
	}
	if (b->vk != a->vk || c->vk != a->vk) {
		gpubuf_error_set("%s: operands on different Vulkan devices", fn);
		return -EINVAL;
	}
#ifdef GPUBUF_HAVE_VULKAN
	return gpubuf_vk_check_process(a->vk);
#else
	return 0;	/* no device can have been opened */
#endif
}

#if defined(GPUBUF_HAVE_VULKAN) && defined(GPUBUF_HAVE_VULKAN_KERNELS)

#define GPUBUF_VK_SPIRV(name)						\
	extern const uint32_t gpubuf_vk_spirv_##name[];			\
	extern const uint32_t gpubuf_vk_spirv_##name##_end[];
GPUBUF_VK_SPIRV(gemv_f32)
GPUBUF_VK_SPIRV(gemv_f64)
GPUBUF_VK_SPIRV(gemv_rows_f32)
GPUBUF_VK_SPIRV(gemv_rows_f64)
GPUBUF_VK_SPIRV(gemv_sg_f32)
GPUBUF_VK_SPIRV(gemv_sg_f64)
GPUBUF_VK_SPIRV(gemm_f32)
GPUBUF_VK_SPIRV(gemm_f64)
GPUBUF_VK_SPIRV(stream_read_f32)
#undef GPUBUF_VK_SPIRV

static const struct {
	const char *name;
	const uint32_t *code, *end;
	bool f64;
} gpubuf_vk_shaders[GPUBUF_VK_NR_KERNELS] = {
#define GPUBUF_VK_SHADER(k, n, d)					\
	[k] = { #n, gpubuf_vk_spirv_##n, gpubuf_vk_spirv_##n##_end, d }
	GPUBUF_VK_SHADER(GPUBUF_VK_GEMV_F32, gemv_f32, false),
	GPUBUF_VK_SHADER(GPUBUF_VK_GEMV_F64, gemv_f64, true),
	GPUBUF_VK_SHADER(GPUBUF_VK_GEMV_ROWS_F32, gemv_rows_f32, false),
	GPUBUF_VK_SHADER(GPUBUF_VK_GEMV_ROWS_F64, gemv_rows_f64, true),
	GPUBUF_VK_SHADER(GPUBUF_VK_GEMV_SG_F32, gemv_sg_f32, false),
	GPUBUF_VK_SHADER(GPUBUF_VK_GEMV_SG_F64, gemv_sg_f64, true),
	GPUBUF_VK_SHADER(GPUBUF_VK_GEMM_F32, gemm_f32, false),
	GPUBUF_VK_SHADER(GPUBUF_VK_GEMM_F64, gemm_f64, true),
	/* Reads 32-bit words whatever the data: no f64 variant. */
	GPUBUF_VK_SHADER(GPUBUF_VK_STREAM_READ, stream_read_f32, false),
#undef GPUBUF_VK_SHADER
};

/* The workgroup sizes the shaders declare. */
#define GPUBUF_VK_GEMV_GROUP	64
#define GPUBUF_VK_GEMM_TILE	16
/* C per GEMM workgroup and side: 4 x 4 outputs per invocation. */
#define GPUBUF_VK_GEMM_BLOCK	64

static bool gpubuf_vk_gemm_fits(const struct gpubuf_vk *vk)
{
	return vk->max_invocations >= GPUBUF_VK_GEMM_TILE * GPUBUF_VK_GEMM_TILE &&
	       vk->max_group_size[0] >= GPUBUF_VK_GEMM_TILE &&
	       vk->max_group_size[1] >= GPUBUF_VK_GEMM_TILE;
}

static int gpubuf_vk_pipeline(struct gpubuf_vk *vk, enum gpubuf_vk_kernel k)
{
	VkShaderModule mod;
	VkResult r;

	r = vk->vkCreateShaderModule(vk->dev, &(VkShaderModuleCreateInfo){
		.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
		.codeSize = (size_t)((const char *)gpubuf_vk_shaders[k].end -
				     (const char *)gpubuf_vk_shaders[k].code),
		.pCode = gpubuf_vk_shaders[k].code,
	}, NULL, &mod);
	if (r != VK_SUCCESS)
		return gpubuf_vk_fail(r, "vkCreateShaderModule");
	r = vk->vkCreateComputePipelines(vk->dev, VK_NULL_HANDLE, 1,
		&(VkComputePipelineCreateInfo){
			.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
			.stage = {
				.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
				.stage = VK_SHADER_STAGE_COMPUTE_BIT,
				.module = mod,
				.pName = "main",
			},
			.layout = vk->layout,
		}, NULL, &vk->pipe[k]);
	vk->vkDestroyShaderModule(vk->dev, mod, NULL);
	if (r != VK_SUCCESS) {
		vk->pipe[k] = VK_NULL_HANDLE;
		return gpubuf_vk_fail(r, "vkCreateComputePipelines");
	}
	return 0;
}

int gpubuf_vk_kernels_init(struct gpubuf_vk *vk)
{
	VkResult r;
	int err;

	r = vk->vkCreateCommandPool(vk->dev, &(VkCommandPoolCreateInfo){
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = vk->queue_family,
	}, NULL, &vk->pool);
	if (r != VK_SUCCESS) {
		vk->pool = VK_NULL_HANDLE;
		return gpubuf_vk_fail(r, "vkCreateCommandPool");
	}
	r = vk->vkAllocateCommandBuffers(vk->dev, &(VkCommandBufferAllocateInfo){
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = vk->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	}, &vk->cmd);
	if (r != VK_SUCCESS)
		return gpubuf_vk_fail(r, "vkAllocateCommandBuffers");
	r = vk->vkCreateFence(vk->dev, &(VkFenceCreateInfo){
		.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
	}, NULL, &vk->fence);
	if (r != VK_SUCCESS) {
		vk->fence = VK_NULL_HANDLE;
		return gpubuf_vk_fail(r, "vkCreateFence");
	}
	/* One layout: the largest list (GEMM's) covers GEMV's too. */
	r = vk->vkCreatePipelineLayout(vk->dev, &(VkPipelineLayoutCreateInfo){
		.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		.pushConstantRangeCount = 1,
		.pPushConstantRanges = &(VkPushConstantRange){
			.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
			.size = sizeof(struct gpubuf_gemm_args),
		},
	}, NULL, &vk->layout);
	if (r != VK_SUCCESS) {
		vk->layout = VK_NULL_HANDLE;
		return gpubuf_vk_fail(r, "vkCreatePipelineLayout");
	}
	for (int k = 0; k < GPUBUF_VK_NR_KERNELS; k++) {
		if (gpubuf_vk_shaders[k].f64 &&
		    !(vk->info.features & GPUBUF_VK_FEATURE_FLOAT64))
			continue;
		/* A GEMM workgroup is 256 invocations; Vulkan promises 128. */
		if ((k == GPUBUF_VK_GEMM_F32 || k == GPUBUF_VK_GEMM_F64) &&
		    !gpubuf_vk_gemm_fits(vk))
			continue;
		/* The shared-memory GEMV covers devices without subgroupAdd(). */
		if ((k == GPUBUF_VK_GEMV_SG_F32 || k == GPUBUF_VK_GEMV_SG_F64) &&
		    !vk->subgroup_add)
			continue;
		err = gpubuf_vk_pipeline(vk, k);
		if (err)
			return err;
	}
	return 0;
}

void gpubuf_vk_kernels_fini(struct gpubuf_vk *vk)
{
	for (int k = 0; k < GPUBUF_VK_NR_KERNELS; k++)
		if (vk->pipe[k])
			vk->vkDestroyPipeline(vk->dev, vk->pipe[k], NULL);
	if (vk->layout)
		vk->vkDestroyPipelineLayout(vk->dev, vk->layout, NULL);
	if (vk->fence)
		vk->vkDestroyFence(vk->dev, vk->fence, NULL);
	/* Frees its command buffer too. */
	if (vk->pool)
		vk->vkDestroyCommandPool(vk->dev, vk->pool, NULL);
}

/*
 * An f32 shader reads a float from the first four bytes of the 8-byte
 * slot (little-endian, as every Vulkan host is here). A finite value past
 * FLT_MAX has no float: -ERANGE.
 */
static int gpubuf_vk_scalar(const char *fn, double *slot, bool f64)
{
	float f;

	if (f64)
		return 0;
	if (isfinite(*slot) && fabs(*slot) > FLT_MAX) {
		gpubuf_error_set("%s: alpha or beta %g is out of f32's range",
				 fn, *slot);
		return -ERANGE;
	}
	f = (float)*slot;
	memset(slot, 0, sizeof(*slot));
	memcpy(slot, &f, sizeof(f));
	return 0;
}

static int gpubuf_vk_dispatch(struct gpubuf_vk *vk, enum gpubuf_vk_kernel k,
			      const void *args, uint32_t size,
			      const uint32_t groups[2],
			      const uint64_t addr[GPUBUF_VK_MAX_OPERANDS])
{
	VkCommandBuffer cmd = vk->cmd;
	const char *what = "vkBeginCommandBuffer";
	VkResult r;
	int err;

	if (!vk->pipe[k] && gpubuf_vk_shaders[k].f64 &&
	    !(vk->info.features & GPUBUF_VK_FEATURE_FLOAT64)) {
		gpubuf_error_set("Vulkan device %s has no shaderFloat64: no f64 kernels",
				 vk->info.name);
		return -EOPNOTSUPP;
	}
	if (!vk->pipe[k]) {
		gpubuf_error_set("Vulkan device %s allows %u invocations per workgroup; the GEMM shader needs %u",
				 vk->info.name, vk->max_invocations,
				 GPUBUF_VK_GEMM_TILE * GPUBUF_VK_GEMM_TILE);
		return -EOPNOTSUPP;
	}
	pthread_mutex_lock(&vk->lock);
	/*
	 * After a failed wait (the submission's state is then unknown), or
	 * VK_ERROR_DEVICE_LOST from any call, the device is not used again.
	 */
	if (gpubuf_vk_check_lost(vk)) {
		pthread_mutex_unlock(&vk->lock);
		return -EIO;
	}
	err = gpubuf_vk_sync_operands(vk, addr, GPUBUF_VK_MAX_OPERANDS, false);
	if (err) {
		pthread_mutex_unlock(&vk->lock);
		return err;
	}
	r = vk->vkResetCommandBuffer(cmd, 0);
	if (r == VK_SUCCESS)
		r = vk->vkBeginCommandBuffer(cmd, &(VkCommandBufferBeginInfo){
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
			.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
		});
	if (r == VK_SUCCESS) {
		vk->vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
				      vk->pipe[k]);
		vk->vkCmdPushConstants(cmd, vk->layout,
				       VK_SHADER_STAGE_COMPUTE_BIT, 0, size,
				       args);
		vk->vkCmdDispatch(cmd, groups[0], groups[1], 1);
		/* The shader's writes, made visible to the host's reads. */
		vk->vkCmdPipelineBarrier(cmd,
			VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
			VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
			&(VkMemoryBarrier){
				.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
				.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
				.dstAccessMask = VK_ACCESS_HOST_READ_BIT,
			}, 0, NULL, 0, NULL);
		what = "vkEndCommandBuffer";
		r = vk->vkEndCommandBuffer(cmd);
	}
	/* Submission makes earlier host writes visible to the device. */
	if (r == VK_SUCCESS) {
		what = "vkQueueSubmit";
		r = vk->vkQueueSubmit(vk->queue, 1, &(VkSubmitInfo){
			.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
			.commandBufferCount = 1,
			.pCommandBuffers = &cmd,
		}, vk->fence);
		/*
		 * Out of host or device memory leaves the fence and the
		 * command buffer as they were (the spec's rule for a failed
		 * vkQueueSubmit): the next call may try again. Only device
		 * loss, below, retires the device.
		 */
	}
	if (r == VK_SUCCESS) {
		what = "vkWaitForFences";
		r = vk->vkWaitForFences(vk->dev, 1, &vk->fence, VK_TRUE,
					UINT64_MAX);
		if (r == VK_SUCCESS)
			vk->vkResetFences(vk->dev, 1, &vk->fence);
		else
			atomic_store(&vk->lost, true);
	}
	if (r == VK_ERROR_DEVICE_LOST)
		atomic_store(&vk->lost, true);
	if (r == VK_SUCCESS)
		err = gpubuf_vk_sync_operands(vk, addr, GPUBUF_VK_MAX_OPERANDS,
					      true);
	pthread_mutex_unlock(&vk->lock);
	return r == VK_SUCCESS ? err : gpubuf_vk_fail(r, what);
}

static uint32_t gpubuf_vk_groups(uint64_t items, uint64_t per, uint32_t max)
{
	return (uint32_t)gpubuf_kargs_blocks(items, per, max ? max : 1);
}

/*
 * Output elements of the given cost (operations each) that one submission
 * may carry, at least one: an element's dot product is never split, so
 * its rounding is the same however the call is cut.
 */
static uint64_t gpubuf_vk_per_submit(const struct gpubuf_vk *vk, uint64_t cost)
{
	return cost >= vk->max_flops ? 1 : vk->max_flops / cost;
}

/*
 * The GEMV shader for g, and the rows of y one workgroup covers. Along
 * the columns (a column-major A): one invocation per row, neighbours
 * reading neighbouring rows. Along the rows on a GPU: a subgroup per row,
 * neighbours reading neighbouring elements of it and subgroupAdd()
 * summing, or a workgroup and a tree in shared memory where the device
 * has no subgroup arithmetic. A CPU device (lavapipe) walks rows one
 * invocation each either way: each SIMD lane then streams its own row,
 * which measured two to three times faster there than either.
 */
static enum gpubuf_vk_kernel gpubuf_vk_gemv_kernel(const struct gpubuf_vk *vk,
						   const struct gpubuf_gemv_args *g,
						   bool f64, uint64_t *rows)
{
	if (gpubuf_kargs_gemv_by_cols(g) ||
	    vk->info.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
		*rows = GPUBUF_VK_GEMV_GROUP;
		return f64 ? GPUBUF_VK_GEMV_F64 : GPUBUF_VK_GEMV_F32;
	}
	if (vk->subgroup_add) {
		*rows = vk->subgroup_size < GPUBUF_VK_GEMV_GROUP ?
			GPUBUF_VK_GEMV_GROUP / vk->subgroup_size : 1;
		return f64 ? GPUBUF_VK_GEMV_SG_F64 : GPUBUF_VK_GEMV_SG_F32;
	}
	*rows = 1;
	return f64 ? GPUBUF_VK_GEMV_ROWS_F64 : GPUBUF_VK_GEMV_ROWS_F32;
}

/* Operations per output element: a multiply-add per k, or beta's one. */
static uint64_t gpubuf_vk_cost(uint64_t k)
{
	return !k ? 1 : k > UINT64_MAX / 2 ? UINT64_MAX : 2 * k;
}

GPUBUF_EXPORT int gpubuf_vk_gemv(double alpha,
				 const struct gpubuf_vk_matrix *a,
				 const struct gpubuf_vk_matrix *x, double beta,
				 const struct gpubuf_vk_matrix *y)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_kmat ka, kx, ky;
	struct gpubuf_gemv_args g;
	uint64_t esize, rows, per_group;
	enum gpubuf_vk_kernel kernel;
	uint32_t groups[2];
	bool f64;
	int err;

	gpubuf_error_clear();
	err = gpubuf_vk_same("gpubuf_vk_gemv", a, x, y);
	if (!err)
		err = gpubuf_kargs_gemv("gpubuf_vk_gemv", alpha,
					gpubuf_kmat_vk(a, &ka),
					gpubuf_kmat_vk(x, &kx), beta,
					gpubuf_kmat_vk(y, &ky), &g);
	if (err || !g.m)
		return err;
	f64 = a->dtype == GPUBUF_DTYPE_F64;
	err = gpubuf_vk_scalar("gpubuf_vk_gemv", &g.alpha, f64);
	if (!err)
		err = gpubuf_vk_scalar("gpubuf_vk_gemv", &g.beta, f64);
	if (err)
		return err;
	/* Whole rows of y per submission, within the device's bound. */
	esize = f64 ? 8 : 4;
	kernel = gpubuf_vk_gemv_kernel(a->vk, &g, f64, &per_group);
	rows = gpubuf_vk_per_submit(a->vk, gpubuf_vk_cost(g.k));
	for (uint64_t r0 = 0; r0 < g.m && !err; r0 += rows) {
		struct gpubuf_gemv_args s = g;

		s.m = g.m - r0 < rows ? g.m - r0 : rows;
		s.a += r0 * g.ars * esize;
		s.y += r0 * g.incy * esize;
		groups[0] = gpubuf_vk_groups(s.m, per_group,
					     a->vk->max_groups[0]);
		groups[1] = 1;
		err = gpubuf_vk_dispatch(a->vk, kernel, &s, sizeof(s), groups,
					 (const uint64_t[]){ s.a, s.x, s.y });
	}
	return err;
}

GPUBUF_EXPORT int gpubuf_vk_gemm(double alpha,
				 const struct gpubuf_vk_matrix *a,
				 const struct gpubuf_vk_matrix *b, double beta,
				 const struct gpubuf_vk_matrix *c)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_kmat ka, kb, kc;
	struct gpubuf_gemm_args g;
	uint64_t esize, rows, cols;
	uint32_t groups[2];
	bool f64;
	int err;

	gpubuf_error_clear();
	err = gpubuf_vk_same("gpubuf_vk_gemm", a, b, c);
	if (!err)
		err = gpubuf_kargs_gemm("gpubuf_vk_gemm", alpha,
					gpubuf_kmat_vk(a, &ka),
					gpubuf_kmat_vk(b, &kb), beta,
					gpubuf_kmat_vk(c, &kc), &g);
	if (err || !g.m || !g.n)
		return err;
	f64 = a->dtype == GPUBUF_DTYPE_F64;
	err = gpubuf_vk_scalar("gpubuf_vk_gemm", &g.alpha, f64);
	if (!err)
		err = gpubuf_vk_scalar("gpubuf_vk_gemm", &g.beta, f64);
	if (err)
		return err;
	/*
	 * Blocks of whole rows of C per submission, within the device's
	 * bound; a row over the bound alone goes in blocks of columns.
	 */
	esize = f64 ? 8 : 4;
	cols = gpubuf_vk_per_submit(a->vk, gpubuf_vk_cost(g.k));
	rows = 1;
	if (cols >= g.n) {
		rows = cols / g.n;
		cols = g.n;
	}
	for (uint64_t r0 = 0; r0 < g.m && !err; r0 += rows)
		for (uint64_t c0 = 0; c0 < g.n && !err; c0 += cols) {
			struct gpubuf_gemm_args s = g;

			s.m = g.m - r0 < rows ? g.m - r0 : rows;
			s.n = g.n - c0 < cols ? g.n - c0 : cols;
			s.a += r0 * g.ars * esize;
			s.b += c0 * g.bcs * esize;
			s.c += (r0 * g.crs + c0 * g.ccs) * esize;
			/* Column tiles on x, row tiles on y; the shader strides. */
			groups[0] = gpubuf_vk_groups(s.n, GPUBUF_VK_GEMM_BLOCK,
						     a->vk->max_groups[0]);
			groups[1] = gpubuf_vk_groups(s.m, GPUBUF_VK_GEMM_BLOCK,
						     a->vk->max_groups[1]);
			err = gpubuf_vk_dispatch(a->vk, f64 ? GPUBUF_VK_GEMM_F64 :
						 GPUBUF_VK_GEMM_F32, &s,
						 sizeof(s), groups,
						 (const uint64_t[]){ s.a, s.b,
								     s.c });
		}
	return err;
}

/* The shader's push constants: 16-byte words, where, and the sink. */
struct gpubuf_vk_stream_args {
	uint64_t n, p, sink;
};

GPUBUF_EXPORT int gpubuf_vk_stream_read(struct gpubuf_vk *vk,
					uint64_t address, size_t bytes,
					uint64_t sink)
{
	GPUBUF_KEEP_ERRNO;
	uint64_t words, per_submit;
	int err = 0;

	gpubuf_error_clear();
	if (!vk || !address || address % 16 || bytes % 16 || sink % 4) {
		gpubuf_error_set("gpubuf_vk_stream_read: a device, and an address and length in 16-byte words");
		return -EINVAL;
	}
	/* A 16-byte word's xor is four operations, for the submission bound. */
	words = bytes / 16;
	per_submit = gpubuf_vk_per_submit(vk, 4);
	for (uint64_t w0 = 0; w0 < words && !err; w0 += per_submit) {
		struct gpubuf_vk_stream_args s = {
			.n = words - w0 < per_submit ? words - w0 : per_submit,
			.p = address + w0 * 16,
			.sink = sink,
		};
		/* Some words per invocation: the loop, not the launch, is timed. */
		uint32_t groups[2] = {
			gpubuf_vk_groups(s.n, 16 * GPUBUF_VK_GEMV_GROUP,
					 vk->max_groups[0]), 1 };

		err = gpubuf_vk_dispatch(vk, GPUBUF_VK_STREAM_READ, &s,
					 sizeof(s), groups,
					 (const uint64_t[]){ s.p, s.sink, 0 });
	}
	return err;
}

#else /* no Vulkan, or no SPIR-V compiled at build time */

#ifdef GPUBUF_HAVE_VULKAN
/* Devices open without kernels; the calls say why. */
int gpubuf_vk_kernels_init(struct gpubuf_vk *vk)
{
	(void)vk;
	return 0;
}

void gpubuf_vk_kernels_fini(struct gpubuf_vk *vk)
{
	(void)vk;
}
#endif

static int gpubuf_vk_no_kernels(void)
{
#ifdef GPUBUF_HAVE_VULKAN
	gpubuf_error_set("libgpubuf was built without glslangValidator: no Vulkan kernels");
#else
	gpubuf_error_set("libgpubuf was built without Vulkan support");
#endif
	return -EOPNOTSUPP;
}

/* The same argument errors as a full build, then the missing kernels. */
GPUBUF_EXPORT int gpubuf_vk_gemv(double alpha,
				 const struct gpubuf_vk_matrix *a,
				 const struct gpubuf_vk_matrix *x, double beta,
				 const struct gpubuf_vk_matrix *y)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_kmat ka, kx, ky;
	struct gpubuf_gemv_args g;
	int err;

	gpubuf_error_clear();
	err = gpubuf_vk_same("gpubuf_vk_gemv", a, x, y);
	if (!err)
		err = gpubuf_kargs_gemv("gpubuf_vk_gemv", alpha,
					gpubuf_kmat_vk(a, &ka),
					gpubuf_kmat_vk(x, &kx), beta,
					gpubuf_kmat_vk(y, &ky), &g);
	return err ? err : gpubuf_vk_no_kernels();
}

GPUBUF_EXPORT int gpubuf_vk_gemm(double alpha,
				 const struct gpubuf_vk_matrix *a,
				 const struct gpubuf_vk_matrix *b, double beta,
				 const struct gpubuf_vk_matrix *c)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_kmat ka, kb, kc;
	struct gpubuf_gemm_args g;
	int err;

	gpubuf_error_clear();
	err = gpubuf_vk_same("gpubuf_vk_gemm", a, b, c);
	if (!err)
		err = gpubuf_kargs_gemm("gpubuf_vk_gemm", alpha,
					gpubuf_kmat_vk(a, &ka),
					gpubuf_kmat_vk(b, &kb), beta,
					gpubuf_kmat_vk(c, &kc), &g);
	return err ? err : gpubuf_vk_no_kernels();
}

GPUBUF_EXPORT int gpubuf_vk_stream_read(struct gpubuf_vk *vk,
					uint64_t address, size_t bytes,
					uint64_t sink)
{
	GPUBUF_KEEP_ERRNO;
	gpubuf_error_clear();
	if (!vk || !address || address % 16 || bytes % 16 || sink % 4) {
		gpubuf_error_set("gpubuf_vk_stream_read: a device, and an address and length in 16-byte words");
		return -EINVAL;
	}
	return gpubuf_vk_no_kernels();
}

#endif
