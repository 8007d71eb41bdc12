// SPDX-License-Identifier: MIT
/*
 * cuda mode's launch latency, as seed 002 compares runtimes: libgpubuf's
 * GEMV on 1 x 1 operands in device memory, launched on the mode's stream
 * (cuLaunchKernel) and synchronized, in microseconds, median and p99 of
 * 1000 samples; and seed 002's 1M-element vector add (y = a x0 + y, a
 * GEMV with k = 1, in device memory) repeated 1000 times, or --reps times
 * when given. Operands hold the byte 0x3c throughout, a finite normal f32,
 * as the mode's other operands do, so the speed is data-blind. Host-timed. On the stand-in driver of the tests this measures the
 * plumbing only; no GPU has run it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda.h"

#define CU_LAT_SAMPLES	1000
#define CU_VADD_ELEMS	(1u << 20)
#define CU_VADD_REPS	1000

/* A column vector (or a 1 x 1 matrix) of f32 in device memory. */
static struct gpubuf_cuda_matrix cu_dev_view(const struct cuda_bench *cb,
					     CUdeviceptr p, size_t rows)
{
	return (struct gpubuf_cuda_matrix){
		.devptr = p, .rows = rows, .cols = 1, .ld = rows,
		.dtype = GPUBUF_DTYPE_F32, .layout = GPUBUF_COL_MAJOR,
		.device = cb->dev,
	};
}

/* Device memory of bytes, filled with 0x3c; 0 or -errno with why. */
static int cu_dev_filled(struct cuda_bench *cb, CUdeviceptr *p, size_t bytes,
			 char *why, size_t len)
{
	CUresult r;
	int err = cu_dev_get(cb, p, bytes, why, len);

	if (err)
		return err;
	r = cb->cu->cuMemsetD8Async(*p, 0x3c, bytes, cb->st);
	if (!r)
		r = cb->cu->cuStreamSynchronize(cb->st);
	if (r) {
		err = gpubuf_cu_fail(cb->cu, r, "cuMemsetD8Async");
		cu_why(why, len, "cuMemsetD8Async", err);
	}
	return err;
}

/* n samples of y = A x + beta y on the stream, each synchronized. */
static int cu_lat_samples(struct cuda_bench *cb,
			  const struct gpubuf_cuda_matrix *a,
			  const struct gpubuf_cuda_matrix *x, double beta,
			  const struct gpubuf_cuda_matrix *y, int n,
			  double *us, char *why, size_t len)
{
	int err = 0, i;

	for (i = 0; !err && i < cb->warmup + n; i++) {
		uint64_t t0 = now_ns();
		CUresult r;

		err = gpubuf_cuda_gemv(1.0, a, x, beta, y, cb->st);
		if (err) {
			cu_why(why, len, "gpubuf_cuda_gemv", err);
			break;
		}
		r = cb->cu->cuStreamSynchronize(cb->st);
		if (r) {
			err = gpubuf_cu_fail(cb->cu, r, "cuStreamSynchronize");
			cu_why(why, len, "cuStreamSynchronize", err);
			break;
		}
		if (i >= cb->warmup)
			us[i - cb->warmup] = (double)(now_ns() - t0) / 1e3;
	}
	return err;
}

void cu_latency(struct cuda_bench *cb)
{
	int vadd_reps = cb->b->o.reps > 0 && cb->b->o.reps < CU_VADD_REPS ?
			cb->b->o.reps : CU_VADD_REPS;
	const uint64_t vbytes = 4ULL * CU_VADD_ELEMS;
	double *us = calloc(CU_LAT_SAMPLES, sizeof(double));
	CUdeviceptr d[3] = { 0 }, v[3] = { 0 };
	struct gpubuf_cuda_matrix a, x, y;
	char why[256] = "";
	int err = us ? 0 : -ENOMEM;

	progress("cuda: latency");
	/* 1 x 1: A, x and y of one element each. */
	for (int i = 0; !err && i < 3; i++)
		err = cu_dev_filled(cb, &d[i], 4, why, sizeof(why));
	if (!err) {
		a = cu_dev_view(cb, d[0], 1);
		x = cu_dev_view(cb, d[1], 1);
		y = cu_dev_view(cb, d[2], 1);
		err = cu_lat_samples(cb, &a, &x, 0, &y, CU_LAT_SAMPLES, us,
				     why, sizeof(why));
	}
	if (err)
		cu_row_skip(cb, "launch_gemv_1x1", "device", 4,
			    why[0] ? why : "out of memory");
	else
		result_latency(cb->b, MODE_CUDA, "launch_gemv_1x1", "device",
			       4, us, CU_LAT_SAMPLES);

	/* The vector add: A and y of 2^20 elements, x of one. */
	why[0] = 0;
	err = us ? 0 : -ENOMEM;
	for (int i = 0; !err && i < 3; i++)
		err = cu_dev_filled(cb, &v[i], i < 2 ? vbytes : 4, why,
				    sizeof(why));
	if (!err) {
		a = cu_dev_view(cb, v[0], CU_VADD_ELEMS);
		x = cu_dev_view(cb, v[2], 1);
		y = cu_dev_view(cb, v[1], CU_VADD_ELEMS);
		err = cu_lat_samples(cb, &a, &x, 1.0, &y, vadd_reps, us, why,
				     sizeof(why));
	}
	if (err)
		cu_row_skip(cb, "vadd_1m", "device", vbytes,
			    why[0] ? why : "out of memory");
	else
		result_latency(cb->b, MODE_CUDA, "vadd_1m", "device", vbytes,
			       us, vadd_reps);
	for (int i = 0; i < 3; i++)
		if (d[i])
			cb->cu->cuMemFree(d[i]);
	for (int i = 0; i < 3; i++)
		if (v[i])
			cb->cu->cuMemFree(v[i]);
	free(us);
}
