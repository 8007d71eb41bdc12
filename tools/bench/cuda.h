/* SPDX-License-Identifier: MIT */
/*
 * cuda mode internals, shared by cuda.c (setup, memories, copy and
 * registration rows, ratios), cuda_gemm.c (GEMV and GEMM rows) and
 * cuda_ops.c (operations, event timing, interleaved ratios, cuBLAS).
 * Only built when the CUDA toolkit headers were found.
 */
#ifndef GPUBUF_BENCH_CUDA_H
#define GPUBUF_BENCH_CUDA_H

#include <gpubuf/tools.h>

#include "bench.h"

/* What one timed operation does; every one is queued on the mode's stream. */
enum cu_kind {
	CK_H2D,		/* cuMemcpyHtoDAsync host -> dev */
	CK_D2H,		/* cuMemcpyDtoHAsync dev -> host */
	CK_ZC_READ,	/* gpubuf_cu_stream_read of registered host memory */
	CK_ZC_WRITE,	/* gpubuf_cu_stream_write of it */
	CK_GEMV,	/* host != NULL: copy host to dev first; gpubuf_cuda_gemv */
	CK_GEMM,	/* gpubuf_cuda_gemm */
	CK_BLAS_GEMM,	/* cublasSgemm_v2/cublasDgemm_v2, same operands */
};

struct cu_op {
	enum cu_kind kind;
	const char *op, *mem;		/* the row's names */
	void *host;
	CUdeviceptr dev;
	size_t bytes;			/* copied or streamed per operation */
	const struct gpubuf_cuda_matrix *a, *x, *y;	/* gemm: a, b, c */
	double work;			/* bytes or flops for rate_name */
	const char *rate_name;		/* NULL, or a rate derived from time */
	int iters;			/* operations per timed sample */
	int numa_node;			/* of host memory, -1 unknown */
};

struct cu_blas;

struct cuda_bench {
	struct bench *b;
	const struct gpubuf_cu *cu;
	int dev;
	int warmup, reps;
	int entered;			/* primary context made current */
	CUstream st;
	CUevent ev[2];
	CUdeviceptr sink;		/* zero-copy read's result word */
	struct gpubuf_ctx *memfd;	/* second context, memfd backend */
	char memfd_why[192];		/* why memfd is NULL */
	struct cu_blas *blas;		/* NULL: no cuBLAS */
	char blas_why[160];
};

/* Host memory kinds, per size. */
enum cu_mem { CM_GPUBUF, CM_PINNED, CM_PAGEABLE, CM_MEMFD, CM_COUNT };
extern const char *const cm_names[CM_COUNT];	/* the memory column (cuda_ops.c) */

struct cu_host {
	void *ptr;		/* NULL: not available, why says so */
	struct gpubuf *gb;	/* the gpubuf kinds */
	uint64_t devptr;	/* the gpubuf kinds, once registered */
	int registered;
	int node;
	char why[224];
};

/* One size's memory; zeroed first, and cu_size_put() frees what is set. */
struct cu_size {
	uint64_t size;
	struct cu_host h[CM_COUNT];
	CUdeviceptr dbuf, x, y;
	/* GEMV: rows x cols f32, row-major, the first mbytes of each buffer */
	size_t rows, cols, mbytes;
	struct gpubuf_cuda_matrix a_zc, a_dev, xv, yv;
	char gemv_why[224];	/* empty when the views exist */
};

/* cuda_gemm.c: the GEMV and GEMM rows */
void cu_fill(struct cu_size *s, size_t bytes);
int cu_gemv_setup(struct cuda_bench *cb, struct cu_size *s, char *why,
		  size_t len);
void cu_gemv_op(struct cu_size *s, enum cu_mem k, struct cu_op *op);
void cu_gemv_rows(struct cuda_bench *cb, struct cu_size *s);
void cu_gemm_rows(struct cuda_bench *cb, struct cu_size *s);

/*
 * cuda_ops.c, used by both above (cuda.c -> cuda_gemm.c -> cuda_ops.c).
 * Device memory for the mode, or why not.
 */
int cu_dev_get(struct cuda_bench *cb, CUdeviceptr *p, size_t bytes,
	       char *why, size_t len);
/* Operations per sample: as many as move about 1 GiB, 1 to 256. */
int cu_iters(size_t bytes);
/* Why a call failed: libgpubuf's last error, else "what: strerror". */
void cu_why(char *buf, size_t len, const char *what, int err);
/* Warm-up samples, then reps timed ones: one result row. */
void cu_row(struct cuda_bench *cb, const struct cu_op *op, uint64_t size);
struct result *cu_row_skip(struct cuda_bench *cb, const char *op,
			   const char *mem, uint64_t size, const char *why);
/* a and b in turns, one ratio per pair, into ratio number idx. */
void cu_ratio(struct cuda_bench *cb, int idx, const struct cu_op *a,
	      const struct cu_op *b);
/* cuda_latency.c: the launch-latency rows. */
void cu_latency(struct cuda_bench *cb);
/* cuBLAS on the mode's stream, or blas_why; never required. */
void cu_blas_open(struct cuda_bench *cb);
void cu_blas_close(struct cuda_bench *cb);

#endif
