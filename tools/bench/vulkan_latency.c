// SPDX-License-Identifier: MIT
/*
 * gpubuf-bench vulkan's launch latency, as seed 002 compares runtimes:
 * microseconds per call, the median and the 99th percentile, for an empty
 * submission and its fence (the driver's round trip) and for the
 * library's smallest GEMV; and seed 002's 1M-element vector add repeated
 * 1000 times. Host-timed around synchronous calls.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

#ifdef GPUBUF_TOOLS_HAVE_VULKAN

#include "vk_bench.h"

#define VK_LAT_SAMPLES	1000
#define VK_VADD_ELEMS	(1u << 20)
#define VK_VADD_REPS	1000

/* An empty command buffer, recorded once, for vk_empty_submit(). */
static int vk_record_empty(struct vk_bench *vb, char *why, size_t len)
{
	VkResult r = vb->vkResetCommandBuffer(vb->cmd, 0);

	if (r == VK_SUCCESS)
		r = vb->vkBeginCommandBuffer(vb->cmd, &(VkCommandBufferBeginInfo){
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		});
	if (r == VK_SUCCESS)
		r = vb->vkEndCommandBuffer(vb->cmd);
	return r == VK_SUCCESS ? 0 : vk_fail(why, len, "empty command buffer", r);
}

/* Submit it and wait for its fence: the driver's round trip. */
static int vk_empty_submit(struct vk_bench *vb, char *why, size_t len)
{
	VkResult r = vb->vkQueueSubmit(vb->queue, 1, &(VkSubmitInfo){
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &vb->cmd,
	}, vb->fence);

	if (r == VK_SUCCESS)
		r = vb->vkWaitForFences(vb->dev, 1, &vb->fence, VK_TRUE,
					UINT64_MAX);
	if (r == VK_SUCCESS)
		r = vb->vkResetFences(vb->dev, 1, &vb->fence);
	return r == VK_SUCCESS ? 0 : vk_fail(why, len, "vkQueueSubmit + fence", r);
}

/* GEMV operands in gpubuf memory: A m x k, x k x 1, y m x 1. */
struct vk_gemv_ops {
	struct gpubuf_matrix a, x, y;
	struct gpubuf_vk_matrix va, vx, vy;
};

static int vk_gemv_ops_get(struct vk_bench *vb, struct vk_gemv_ops *o,
			   size_t m, size_t k, char *why, size_t len)
{
	int err = vk_operand(vb, &o->a, m, k, NULL, &o->va, why, len);

	if (!err)
		err = vk_operand(vb, &o->x, k, 1, NULL, &o->vx, why, len);
	if (!err)
		err = vk_operand(vb, &o->y, m, 1, NULL, &o->vy, why, len);
	return err;
}

static void vk_gemv_ops_put(struct vk_gemv_ops *o)
{
	gpubuf_matrix_release(&o->a);
	gpubuf_matrix_release(&o->x);
	gpubuf_matrix_release(&o->y);
}

/*
 * One latency row of n timed calls after the warm-up ones: an empty
 * submission (o NULL) or y = A x + beta y on o's operands.
 */
static void vk_lat_measure(struct vk_bench *vb, const char *op,
			   const char *mem, uint64_t size,
			   struct vk_gemv_ops *o, double beta, int n,
			   double *us, char *why, size_t len)
{
	int err = 0, i;

	for (i = 0; !err && i < vb->warmup + n; i++) {
		uint64_t t0 = now_ns();

		err = o ? gpubuf_vk_gemv(1.0, &o->va, &o->vx, beta, &o->vy) :
			  vk_empty_submit(vb, why, len);
		if (i >= vb->warmup)
			us[i - vb->warmup] = (double)(now_ns() - t0) / 1e3;
	}
	if (err && o && !why[0])
		snprintf(why, len, "gpubuf_vk_gemv: %s: %s",
			 gpubuf_strerror(err), gpubuf_last_error());
	if (err)
		vk_row_skip(vb, op, mem, size, why);
	else
		result_latency(vb->b, MODE_VULKAN, op, mem, size, us, n);
}

/*
 * empty_submit: an empty command buffer submitted and its fence waited
 * for; gemv_1x1: gpubuf_vk_gemv() of 1 x 1 operands (the library's checks,
 * its submission and fence); vadd_1m: y = a + y over 2^20 f32 elements (a
 * GEMV with k = 1 and x = 1), the time of each of 1000 calls in a row
 * (--reps calls when given: on lavapipe one takes tens of ms).
 */
void vk_latency(struct vk_bench *vb)
{
	int vadd_reps = vb->b->o.reps > 0 && vb->b->o.reps < VK_VADD_REPS ?
			vb->b->o.reps : VK_VADD_REPS;
	double *us = calloc(VK_LAT_SAMPLES, sizeof(double));
	struct vk_gemv_ops one = { 0 }, vadd = { 0 };
	char why[256] = "";

	progress("vulkan: latency");
	if (!us) {
		vk_row_skip(vb, "all", "-", 0, "out of memory");
		return;
	}
	if (vk_record_empty(vb, why, sizeof(why)))
		vk_row_skip(vb, "empty_submit", "-", 0, why);
	else
		vk_lat_measure(vb, "empty_submit", "-", 0, NULL, 0,
			       VK_LAT_SAMPLES, us, why, sizeof(why));

	why[0] = 0;
	if (vk_gemv_ops_get(vb, &one, 1, 1, why, sizeof(why)))
		vk_row_skip(vb, "gemv_1x1", "gpubuf", 4, why);
	else
		vk_lat_measure(vb, "gemv_1x1", "gpubuf", 4, &one, 0,
			       VK_LAT_SAMPLES, us, why, sizeof(why));

	why[0] = 0;
	if (vk_gemv_ops_get(vb, &vadd, VK_VADD_ELEMS, 1, why, sizeof(why))) {
		vk_row_skip(vb, "vadd_1m", "gpubuf", 4ULL * VK_VADD_ELEMS, why);
	} else {
		gpubuf_matrix_set(&vadd.x, 0, 0, 1.0);
		vk_lat_measure(vb, "vadd_1m", "gpubuf", 4ULL * VK_VADD_ELEMS,
			       &vadd, 1.0, vadd_reps, us, why, sizeof(why));
	}
	vk_gemv_ops_put(&one);
	vk_gemv_ops_put(&vadd);
	free(us);
}

#endif /* GPUBUF_TOOLS_HAVE_VULKAN */
