// SPDX-License-Identifier: MIT
/*
 * gpubuf-bench vulkan's GEMM rows: libgpubuf's SPIR-V GEMM on square f32
 * matrices of VK_GEMM_N in gpubuf memory, C = A B, as GFLOP/s (2 n^3
 * operations a call), and OpenBLAS's sgemm on the same operands and cores
 * beside it where OpenBLAS is installed, with the ratio from interleaved
 * pairs. The size is fixed: a GEMM of the GEMV's 16 MiB matrices would
 * take minutes on lavapipe.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

#ifdef GPUBUF_TOOLS_HAVE_VULKAN

#include "vk_bench.h"

#define VK_GEMM_N	512

struct vk_gemm_ops {
	struct gpubuf_matrix a, b, c;
	struct gpubuf_vk_matrix va, vb, vc;
};

/* One GEMM, ms: the library's (blas 0) or OpenBLAS's (blas 1). */
static int vk_gemm_sample(struct vk_bench *vb, struct vk_gemm_ops *o,
			  int blas, double *ms)
{
	uint64_t t0 = now_ns();
	int err = 0;

	if (blas)
		vb->sgemm(101 /* CblasRowMajor */, 111, 111 /* NoTrans */,
			  VK_GEMM_N, VK_GEMM_N, VK_GEMM_N, 1.0f,
			  gpubuf_matrix_data(&o->a), (int)o->a.ld,
			  gpubuf_matrix_data(&o->b), (int)o->b.ld, 0.0f,
			  gpubuf_matrix_data(&o->c), (int)o->c.ld);
	else
		err = gpubuf_vk_gemm(1.0, &o->va, &o->vb, 0.0, &o->vc);
	*ms = (double)(now_ns() - t0) / 1e6;
	return err;
}

static const char *const vk_gemm_ops_names[] = { "gemm_inplace",
						 "openblas_sgemm" };

static void vk_gemm_row(struct vk_bench *vb, struct vk_gemm_ops *o,
			int blas, uint64_t size, double *v)
{
	const char *op = vk_gemm_ops_names[blas];
	struct result *r;
	double ms;
	int err = 0, i;

	progress("vulkan: %s", op);
	if (blas && !vb->sgemm) {
		vk_row_skip(vb, op, "gpubuf", size, vb->blas_why);
		return;
	}
	for (i = 0; !err && i < vb->warmup + vb->reps; i++) {
		err = vk_gemm_sample(vb, o, blas, &ms);
		if (i >= vb->warmup)
			v[i - vb->warmup] = ms;
	}
	if (err) {
		char why[256];

		snprintf(why, sizeof(why), "gpubuf_vk_gemm: %s: %s",
			 gpubuf_strerror(err), gpubuf_last_error());
		vk_row_skip(vb, op, "gpubuf", size, why);
		return;
	}
	r = result_add(vb->b, MODE_VULKAN, RES_OK);
	snprintf(r->op, sizeof(r->op), "%s", op);
	snprintf(r->memory, sizeof(r->memory), "gpubuf");
	r->size_bytes = size;
	r->threads = 1;
	r->reps = vb->reps;
	r->numa_node = -1;
	r->metric = "ms";
	stats(v, vb->reps, &r->med, &r->min, &r->max);
	r->seconds = r->med / 1e3;
	if (r->med > 0) {
		r->rate_name = "gflop_per_s";
		r->rate = 2.0 * VK_GEMM_N * VK_GEMM_N * VK_GEMM_N /
			  (r->med * 1e6);
	}
}

struct vk_gemm_ratio_arg {
	struct vk_bench *vb;
	struct vk_gemm_ops *o;
};

/* Side 0 the library's GEMM, side 1 OpenBLAS's. */
static int vk_gemm_ratio_sample(void *arg, int side, double *ms, char *why,
				size_t len)
{
	struct vk_gemm_ratio_arg *a = arg;
	int err = vk_gemm_sample(a->vb, a->o, side, ms);

	if (err)
		snprintf(why, len, "%s", gpubuf_last_error());
	return err;
}

static void vk_gemm_ratio(struct vk_bench *vb, struct vk_gemm_ops *o,
			  uint64_t size, const char *fail)
{
	int idx = ratio_add(vb->b, MODE_VULKAN, "gemm_inplace_vs_openblas",
			    "gpubuf", size);
	struct ratio *rt = &vb->b->rat[idx];
	struct vk_gemm_ratio_arg arg = { vb, o };

	if (fail) {
		ratio_fail(rt, "%s", fail);
		return;
	}
	if (!ratio_sides(vb->b, rt, "gemm_inplace", "openblas_sgemm", "gpubuf"))
		return;
	ratio_interleave(rt, vb->warmup, vb->reps, vk_gemm_ratio_sample, &arg);
}

void vk_gemm_rows(struct vk_bench *vb)
{
	const uint64_t size = 4ULL * VK_GEMM_N * VK_GEMM_N;
	double *v = calloc((size_t)vb->reps, sizeof(double));
	struct vk_gemm_ops o = { 0 };
	char why[256] = "";
	int err = v ? 0 : -ENOMEM;

	if (!err)
		err = vk_operand(vb, &o.a, VK_GEMM_N, VK_GEMM_N, NULL, &o.va,
				 why, sizeof(why));
	if (!err)
		err = vk_operand(vb, &o.b, VK_GEMM_N, VK_GEMM_N, NULL, &o.vb,
				 why, sizeof(why));
	if (!err)
		err = vk_operand(vb, &o.c, VK_GEMM_N, VK_GEMM_N, NULL, &o.vc,
				 why, sizeof(why));
	if (err) {
		const char *w = why[0] ? why : "out of memory";

		vk_row_skip(vb, "gemm_inplace", "gpubuf", size, w);
		vk_row_skip(vb, "openblas_sgemm", "gpubuf", size,
			    vb->sgemm ? w : vb->blas_why);
		vk_gemm_ratio(vb, NULL, size, w);
	} else {
		vk_gemm_row(vb, &o, 0, size, v);
		vk_gemm_row(vb, &o, 1, size, v);
		vk_gemm_ratio(vb, &o, size, NULL);
	}
	gpubuf_matrix_release(&o.a);
	gpubuf_matrix_release(&o.b);
	gpubuf_matrix_release(&o.c);
	free(v);
}

#endif /* GPUBUF_TOOLS_HAVE_VULKAN */
