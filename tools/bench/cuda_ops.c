// SPDX-License-Identifier: MIT
/*
 * cuda mode: the timed operations. As in nvbandwidth, every operation is
 * queued on one non-blocking stream, a sample is a loop of back-to-back
 * operations between two events (so the GPU's clock times them, not the
 * host's launch overhead), and warm-up samples run first. cuBLAS, when it
 * loads, is called through a handful of prototypes declared here: nothing
 * links against it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

/* ---- memory kinds and device memory, for cuda.c and cuda_gemm.c -------- */

const char *const cm_names[CM_COUNT] = {
	"gpubuf", "memhostalloc", "pageable", "gpubuf_memfd",
};

int cu_dev_get(struct cuda_bench *cb, CUdeviceptr *p, size_t bytes,
	       char *why, size_t len)
{
	CUresult r = cb->cu->cuMemAlloc(p, bytes);

	if (!r)
		return 0;
	*p = 0;
	cu_why(why, len, "cuMemAlloc", gpubuf_cu_fail(cb->cu, r, "cuMemAlloc"));
	return -ENOMEM;
}

/* ---- cuBLAS (cublas_api.h), declared here ------------------------------- */

typedef int (*blas_create_fn)(void **handle);
typedef int (*blas_destroy_fn)(void *handle);
typedef int (*blas_stream_fn)(void *handle, CUstream stream);
typedef int (*blas_sgemm_fn)(void *handle, int ta, int tb, int m, int n,
			     int k, const float *alpha, const float *a,
			     int lda, const float *b, int ldb,
			     const float *beta, float *c, int ldc);
typedef int (*blas_dgemm_fn)(void *handle, int ta, int tb, int m, int n,
			     int k, const double *alpha, const double *a,
			     int lda, const double *b, int ldb,
			     const double *beta, double *c, int ldc);
#define BLAS_OP_N	0	/* CUBLAS_OP_N; status 0 is CUBLAS_STATUS_SUCCESS */

struct cu_blas {
	const char *soname;
	void *handle;
	blas_destroy_fn destroy;
	blas_sgemm_fn sgemm;
	blas_dgemm_fn dgemm;
	char err[96];		/* the last failed call */
};

void cu_why(char *buf, size_t len, const char *what, int err)
{
	const char *msg = gpubuf_last_error();

	if (msg && msg[0])
		snprintf(buf, len, "%s", msg);
	else
		snprintf(buf, len, "%s: %s", what, gpubuf_strerror(err));
}

int cu_iters(size_t bytes)
{
	uint64_t n = bytes ? GIB / bytes : 1;

	return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

/* ---- one operation, one sample ------------------------------------------ */

static int cu_fail(struct cuda_bench *cb, CUresult r, const char *what)
{
	return gpubuf_cu_fail(cb->cu, r, what);
}

/* Column-major operands of the same dtype: C = A B. */
static int cu_blas_gemm(struct cuda_bench *cb, const struct cu_op *op)
{
	const struct gpubuf_cuda_matrix *a = op->a, *b = op->x, *c = op->y;
	int m = (int)c->rows, n = (int)c->cols, k = (int)a->cols, st;

	if (a->dtype == GPUBUF_DTYPE_F32) {
		const float one = 1, zero = 0;

		st = cb->blas->sgemm(cb->blas->handle, BLAS_OP_N, BLAS_OP_N,
				     m, n, k, &one,
				     (const float *)(uintptr_t)a->devptr,
				     (int)a->ld,
				     (const float *)(uintptr_t)b->devptr,
				     (int)b->ld, &zero,
				     (float *)(uintptr_t)c->devptr, (int)c->ld);
	} else {
		const double one = 1, zero = 0;

		st = cb->blas->dgemm(cb->blas->handle, BLAS_OP_N, BLAS_OP_N,
				     m, n, k, &one,
				     (const double *)(uintptr_t)a->devptr,
				     (int)a->ld,
				     (const double *)(uintptr_t)b->devptr,
				     (int)b->ld, &zero,
				     (double *)(uintptr_t)c->devptr,
				     (int)c->ld);
	}
	if (!st)
		return 0;
	snprintf(cb->blas->err, sizeof(cb->blas->err), "%s: cuBLAS status %d",
		 a->dtype == GPUBUF_DTYPE_F32 ? "cublasSgemm_v2" :
		 "cublasDgemm_v2", st);
	return -EIO;
}

static int cu_launch(struct cuda_bench *cb, const struct cu_op *op)
{
	const struct gpubuf_cu *cu = cb->cu;
	CUresult r;

	switch (op->kind) {
	case CK_H2D:
		r = cu->cuMemcpyHtoDAsync(op->dev, op->host, op->bytes, cb->st);
		return r ? cu_fail(cb, r, "cuMemcpyHtoDAsync") : 0;
	case CK_D2H:
		r = cu->cuMemcpyDtoHAsync(op->host, op->dev, op->bytes, cb->st);
		return r ? cu_fail(cb, r, "cuMemcpyDtoHAsync") : 0;
	case CK_ZC_READ:
		return gpubuf_cu_stream_read(cu, cb->dev, op->dev, op->bytes,
					     cb->sink, cb->st);
	case CK_ZC_WRITE:
		return gpubuf_cu_stream_write(cu, cb->dev, op->dev, op->bytes,
					      cb->st);
	case CK_GEMV:
		if (op->host) {
			r = cu->cuMemcpyHtoDAsync(op->dev, op->host, op->bytes,
						  cb->st);
			if (r)
				return cu_fail(cb, r, "cuMemcpyHtoDAsync");
		}
		return gpubuf_cuda_gemv(1.0, op->a, op->x, 0.0, op->y, cb->st);
	case CK_GEMM:
		return gpubuf_cuda_gemm(1.0, op->a, op->x, 0.0, op->y, cb->st);
	case CK_BLAS_GEMM:
		return cu_blas_gemm(cb, op);
	}
	return -EINVAL;
}

/*
 * One sample: op->iters operations between two events; milliseconds per
 * operation. On failure the stream is drained, so the caller may free
 * what was queued, and why says what failed.
 */
static int cu_sample(struct cuda_bench *cb, const struct cu_op *op,
		     double *ms, char *why, size_t len)
{
	const struct gpubuf_cu *cu = cb->cu;
	const char *what = "cuEventRecord";
	float f = 0;
	CUresult r;
	int i, err = 0;

	r = cu->cuEventRecord(cb->ev[0], cb->st);
	for (i = 0; !r && !err && i < op->iters; i++)
		err = cu_launch(cb, op);
	if (err) {
		if (op->kind == CK_BLAS_GEMM)
			snprintf(why, len, "%s", cb->blas->err);
		else
			cu_why(why, len, op->op, err);
		cu->cuStreamSynchronize(cb->st);
		return err;
	}
	if (!r)
		r = cu->cuEventRecord(cb->ev[1], cb->st);
	if (!r) {
		what = "cuEventSynchronize";
		r = cu->cuEventSynchronize(cb->ev[1]);
	}
	if (!r) {
		what = "cuEventElapsedTime";
		r = cu->cuEventElapsedTime(&f, cb->ev[0], cb->ev[1]);
	}
	if (r) {
		err = cu_fail(cb, r, what);
		cu_why(why, len, what, err);
		cu->cuStreamSynchronize(cb->st);
		return err;
	}
	if (!(f > 0)) {
		snprintf(why, len, "cuEventElapsedTime: %g ms for %d operations",
			 (double)f, op->iters);
		return -ERANGE;
	}
	*ms = (double)f / op->iters;
	return 0;
}

static int cu_is_bw(const struct cu_op *op)
{
	return op->kind == CK_H2D || op->kind == CK_D2H ||
	       op->kind == CK_ZC_READ || op->kind == CK_ZC_WRITE;
}

/* A sample in the row's metric: GB/s (1e9 bytes/s) or ms. */
static double cu_value(const struct cu_op *op, double ms)
{
	return cu_is_bw(op) ? (double)op->bytes / (ms * 1e6) : ms;
}

/* ---- rows and ratios ----------------------------------------------------- */

struct result *cu_row_skip(struct cuda_bench *cb, const char *op,
			   const char *mem, uint64_t size, const char *why)
{
	struct result *r = result_add(cb->b, MODE_CUDA, RES_SKIPPED);

	snprintf(r->op, sizeof(r->op), "%s", op);
	snprintf(r->memory, sizeof(r->memory), "%s", mem);
	r->size_bytes = size;
	result_reason(r, "%s", why);
	return r;
}

void cu_row(struct cuda_bench *cb, const struct cu_op *op, uint64_t size)
{
	double *v = calloc(cb->reps, sizeof(double)), ms = 0;
	char why[256] = "out of memory for the measurement", sz[32];
	struct result *r;
	int i, err = v ? 0 : -ENOMEM;

	fmt_size(sz, sizeof(sz), size);
	progress("cuda: %-14s %-13s %s", op->op, op->mem, sz);
	for (i = 0; !err && i < cb->warmup + cb->reps; i++) {
		err = cu_sample(cb, op, &ms, why, sizeof(why));
		if (!err && i >= cb->warmup)
			v[i - cb->warmup] = cu_value(op, ms);
	}
	if (err) {
		cu_row_skip(cb, op->op, op->mem, size, why);
		free(v);
		return;
	}
	r = result_add(cb->b, MODE_CUDA, RES_OK);
	snprintf(r->op, sizeof(r->op), "%s", op->op);
	snprintf(r->memory, sizeof(r->memory), "%s", op->mem);
	r->size_bytes = size;
	r->threads = 1;
	r->reps = cb->reps;
	r->numa_node = op->numa_node;
	r->metric = cu_is_bw(op) ? "gb_per_s" : "ms";
	stats(v, cb->reps, &r->med, &r->min, &r->max);
	if (!cu_is_bw(op)) {
		r->seconds = r->med / 1e3;
		if (op->rate_name && r->med > 0) {
			/* bytes or flops per ms / 1e6: GB/s or GFLOP/s */
			r->rate_name = op->rate_name;
			r->rate = op->work / (r->med * 1e6);
		}
	}
	free(v);
}

void cu_ratio(struct cuda_bench *cb, int idx, const struct cu_op *a,
	      const struct cu_op *b)
{
	double *v = calloc(2 * (size_t)cb->reps, sizeof(double)), ms;
	const struct cu_op *side[2] = { a, b };
	char why[256];
	int i, s, err;

	if (!v) {
		ratio_fail(&cb->b->rat[idx], "out of memory for the measurement");
		return;
	}
	progress("cuda: ratio %s", cb->b->rat[idx].name);
	for (i = 0; i < cb->warmup + cb->reps; i++) {
		for (s = 0; s < 2; s++) {
			err = cu_sample(cb, side[s], &ms, why, sizeof(why));
			if (err) {
				ratio_fail(&cb->b->rat[idx],
					   "interleaved run: %s %s: %s",
					   side[s]->op, side[s]->mem, why);
				goto out;
			}
			if (i >= cb->warmup)
				v[2 * (i - cb->warmup) + s] =
					cu_value(side[s], ms);
		}
	}
	ratio_pairs(&cb->b->rat[idx], v, cb->reps);
out:
	free(v);
}

/* ---- cuBLAS -------------------------------------------------------------- */

void cu_blas_open(struct cuda_bench *cb)
{
	static const char *const names[] = {
		"libcublas.so.13", "libcublas.so.12", "libcublas.so",
	};
	blas_create_fn create;
	blas_stream_fn set_stream;
	struct cu_blas *bl;
	void *lib = NULL;
	unsigned int i;
	int st;

	for (i = 0; !lib && i < sizeof(names) / sizeof(names[0]); i++)
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(cb->blas_why, sizeof(cb->blas_why),
			 "libcublas not found (libcublas.so.13, .so.12, .so)");
		return;
	}
	/* Never closed, like the driver: it keeps state for the process. */
	bl = calloc(1, sizeof(*bl));
	if (!bl) {
		snprintf(cb->blas_why, sizeof(cb->blas_why), "out of memory");
		return;
	}
	bl->soname = names[i - 1];
	create = (blas_create_fn)dlsym(lib, "cublasCreate_v2");
	set_stream = (blas_stream_fn)dlsym(lib, "cublasSetStream_v2");
	bl->destroy = (blas_destroy_fn)dlsym(lib, "cublasDestroy_v2");
	bl->sgemm = (blas_sgemm_fn)dlsym(lib, "cublasSgemm_v2");
	bl->dgemm = (blas_dgemm_fn)dlsym(lib, "cublasDgemm_v2");
	if (!create || !set_stream || !bl->destroy || !bl->sgemm ||
	    !bl->dgemm) {
		snprintf(cb->blas_why, sizeof(cb->blas_why),
			 "%s lacks cublasCreate_v2/SetStream_v2/Sgemm_v2/Dgemm_v2",
			 bl->soname);
		free(bl);
		return;
	}
	/* The handle belongs to the current context: the device's primary. */
	st = create(&bl->handle);
	if (st) {
		snprintf(cb->blas_why, sizeof(cb->blas_why),
			 "cublasCreate_v2: cuBLAS status %d", st);
		free(bl);
		return;
	}
	st = set_stream(bl->handle, cb->st);
	if (st) {
		snprintf(cb->blas_why, sizeof(cb->blas_why),
			 "cublasSetStream_v2: cuBLAS status %d", st);
		bl->destroy(bl->handle);
		free(bl);
		return;
	}
	cb->blas = bl;
	snprintf(cb->blas_why, sizeof(cb->blas_why), "%s", bl->soname);
}

void cu_blas_close(struct cuda_bench *cb)
{
	if (!cb->blas)
		return;
	cb->blas->destroy(cb->blas->handle);
	free(cb->blas);
	cb->blas = NULL;
}
