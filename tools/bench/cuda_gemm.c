// SPDX-License-Identifier: MIT
/*
 * cuda mode: GEMV and GEMM on host-resident matrices. GEMV compares the
 * matrix read in place (zero-copy, registered gpubuf memory) with copying
 * it to the device first, from pageable or pinned memory; GEMM runs
 * libgpubuf's kernel and, when it loads, cuBLAS on the same zero-copy
 * operands.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cuda.h"

/* Finite, normal f32 and f64 values, so GEMV/GEMM speed is data-blind. */
void cu_fill(struct cu_size *s, size_t bytes)
{
	int k;

	for (k = 0; k < CM_COUNT; k++)
		if (s->h[k].ptr && k != CM_MEMFD)
			memset(s->h[k].ptr, 0x3c, bytes);
}

/*
 * GEMV shape: 4096 columns (fewer when small) and as many rows as fit, so
 * rows * cols * 4 <= size; x and y live in device memory.
 */
int cu_gemv_setup(struct cuda_bench *cb, struct cu_size *s, char *why,
		  size_t len)
{
	const struct gpubuf_cu *cu = cb->cu;
	size_t n = s->size / 4, cols = 4096;
	struct gpubuf_matrix hm;
	CUresult r;
	int err;

	while (cols > 16 && n / cols < cols / 4)
		cols /= 2;
	s->cols = cols;
	s->rows = n / cols;
	s->mbytes = s->rows * cols * 4;
	if (cu_dev_get(cb, &s->x, cols * 4, why, len) ||
	    cu_dev_get(cb, &s->y, s->rows * 4, why, len))
		return -ENOMEM;
	r = cu->cuMemsetD8Async(s->x, 0x3c, cols * 4, cb->st);
	if (!r)
		r = cu->cuStreamSynchronize(cb->st);
	if (r) {
		err = gpubuf_cu_fail(cu, r, "cuMemsetD8Async");
		cu_why(why, len, "cuMemsetD8Async", err);
		return err;
	}
	err = gpubuf_matrix_view(s->h[CM_GPUBUF].gb, 0, GPUBUF_DTYPE_F32,
				 s->rows, cols, cols, GPUBUF_ROW_MAJOR, &hm);
	if (!err)
		err = gpubuf_cuda_matrix_view(&hm, cb->dev, &s->a_zc);
	if (err) {
		/* Only the GEMV rows need the view; they say why. */
		cu_why(s->gemv_why, sizeof(s->gemv_why),
		       "gpubuf_cuda_matrix_view", err);
		return 0;
	}
	s->a_dev = s->a_zc;
	s->a_dev.devptr = s->dbuf;
	s->xv = (struct gpubuf_cuda_matrix){
		.devptr = s->x, .rows = cols, .cols = 1, .ld = 1,
		.dtype = GPUBUF_DTYPE_F32, .layout = GPUBUF_ROW_MAJOR,
		.device = cb->dev,
	};
	s->yv = s->xv;
	s->yv.devptr = s->y;
	s->yv.rows = s->rows;
	return 0;
}

/* gpubuf: in place; the others: copied into dbuf, then the same GEMV. */
void cu_gemv_op(struct cu_size *s, enum cu_mem k, struct cu_op *op)
{
	memset(op, 0, sizeof(*op));
	op->kind = CK_GEMV;
	op->op = k == CM_GPUBUF ? "gemv_zerocopy" : "gemv_copy";
	op->mem = cm_names[k];
	op->host = k == CM_GPUBUF ? NULL : s->h[k].ptr;
	op->dev = s->dbuf;
	op->bytes = s->mbytes;
	op->a = k == CM_GPUBUF ? &s->a_zc : &s->a_dev;
	op->x = &s->xv;
	op->y = &s->yv;
	op->work = (double)s->mbytes;
	op->rate_name = "effective_gb_per_s";
	op->iters = cu_iters(s->mbytes);
	op->numa_node = s->h[k].node;
}

void cu_gemv_rows(struct cuda_bench *cb, struct cu_size *s)
{
	static const enum cu_mem kinds[] = { CM_GPUBUF, CM_PAGEABLE, CM_PINNED };
	struct cu_op op;
	unsigned int i;

	cu_fill(s, s->mbytes);	/* the copy rows left arbitrary bits */
	for (i = 0; i < 3; i++) {
		cu_gemv_op(s, kinds[i], &op);
		if (s->gemv_why[0])
			cu_row_skip(cb, op.op, op.mem, s->size, s->gemv_why);
		else if (!s->h[kinds[i]].ptr)
			cu_row_skip(cb, op.op, op.mem, s->size,
				    s->h[kinds[i]].why);
		else
			cu_row(cb, &op, s->size);
	}
}

/*
 * C = A B, n x n column-major (cuBLAS's layout), A, B and C one after the
 * other in the registered gpubuf buffer: n a power of two up to 4096 with
 * 3 n^2 8-byte elements within the size.
 */
void cu_gemm_rows(struct cuda_bench *cb, struct cu_size *s)
{
	static const enum gpubuf_dtype dts[] = { GPUBUF_DTYPE_F32,
						  GPUBUF_DTYPE_F64 };
	struct gpubuf_cuda_matrix m[3];
	struct gpubuf_matrix hm;
	char why[224];
	struct cu_op op;
	size_t n = 1, es;
	unsigned int d;
	int i, err;

	while (2 * n <= 4096 && (2 * n) * (2 * n) * 24 <= s->size)
		n *= 2;
	for (d = 0; d < 2; d++) {
		int f32 = dts[d] == GPUBUF_DTYPE_F32;

		es = f32 ? 4 : 8;
		cu_fill(s, 3 * n * n * es);
		for (i = 0, err = 0; !err && i < 3; i++) {
			err = gpubuf_matrix_view(s->h[CM_GPUBUF].gb,
						 i * n * n * es, dts[d], n, n,
						 n, GPUBUF_COL_MAJOR, &hm);
			if (!err)
				err = gpubuf_cuda_matrix_view(&hm, cb->dev,
							      &m[i]);
		}
		memset(&op, 0, sizeof(op));
		op.kind = CK_GEMM;
		op.op = f32 ? "sgemm_gpubuf" : "dgemm_gpubuf";
		op.mem = cm_names[CM_GPUBUF];
		op.a = &m[0];
		op.x = &m[1];
		op.y = &m[2];
		op.work = 2.0 * n * n * n;
		op.rate_name = "gflop_per_s";
		op.iters = 1;
		op.numa_node = s->h[CM_GPUBUF].node;
		if (err) {
			cu_why(why, sizeof(why), "gpubuf_cuda_matrix_view", err);
			cu_row_skip(cb, op.op, op.mem, s->size, why);
			continue;
		}
		cu_row(cb, &op, s->size);
		if (!cb->blas)
			continue;
		op.kind = CK_BLAS_GEMM;
		op.op = f32 ? "sgemm_cublas" : "dgemm_cublas";
		cu_row(cb, &op, s->size);
	}
	if (!cb->blas) {
		struct result *r = cu_row_skip(cb, "gemm_cublas", "gpubuf",
					       s->size, cb->blas_why);

		r->status = RES_UNAVAILABLE;
	}
}
