// SPDX-License-Identifier: MIT
/*
 * Description: one buffer used in place by two CUDA devices at once,
 * against a stand-in driver that runs the launches on the CPU
 * (CUSTUB_EXEC=1; cuda_stub_test.h runs each test in a fresh process).
 * A GEMM C = A B split into row blocks: each device's view of the same
 * registered A, B and C (one PORTABLE registration per buffer, counted per
 * device) has that device's device pointers, and each device writes its
 * own rows of C from its own thread. The stand-in faults a launch whose
 * pointer is not the launching device's address of registered memory.
 * Nothing here touches a GPU.
 */
#include <math.h>
#include <pthread.h>

#include "cuda_stub_test.h"
#include "gemm_ref.h"

#define NDEV	2
#define M	130
#define N	70
#define K	50

struct t_block {
	struct gpubuf_cuda_matrix a, b, c;
	int err;
};

static void *t_block_gemm(void *arg)
{
	struct t_block *blk = arg;

	blk->err = gpubuf_cuda_gemm(1.0, &blk->a, &blk->b, 0.0, &blk->c, NULL);
	return NULL;
}

/* Rows [r0, r0 + rows) of m as device d's view. */
static int t_rows_view(const struct gpubuf_matrix *m, size_t r0, size_t rows,
		       int d, struct gpubuf_cuda_matrix *out)
{
	struct gpubuf_matrix s;
	int err = gpubuf_matrix_sub(m, r0, 0, rows, m->cols, &s);

	return err ? err : gpubuf_cuda_matrix_view(&s, d, out);
}

static int two_devices_split_one_gemm(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix a, b, c;
	struct t_block blk[NDEV];
	pthread_t th[NDEV];
	uint64_t dp;
	int bad = 0;

#ifndef GPUBUF_HAVE_CUDA_KERNELS
	gpubuf_close(ctx);
	return t_skip("libgpubuf built without nvcc: no kernels");
#endif
	T_STUB();
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F64, M, K, GPUBUF_ROW_MAJOR,
				 0, &a), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F64, K, N, GPUBUF_COL_MAJOR,
				 0, &b), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F64, M, N, GPUBUF_ROW_MAJOR,
				 0, &c), 0);
	t_fill(&a, 1);
	t_fill(&b, 2);
	for (size_t i = 0; i < M; i++)
		for (size_t j = 0; j < N; j++)
			gpubuf_matrix_set(&c, i, j, NAN);
	for (int d = 0; d < NDEV; d++) {
		size_t r0 = d * M / NDEV, r1 = (d + 1) * M / NDEV;

		T_EQ(gpubuf_cuda_register(a.buf, d, GPUBUF_CUDA_REGISTER_READ_ONLY,
					  &dp), 0);
		T_EQ(gpubuf_cuda_register(b.buf, d, GPUBUF_CUDA_REGISTER_READ_ONLY,
					  &dp), 0);
		T_EQ(gpubuf_cuda_register(c.buf, d, 0, &dp), 0);
		T_EQ(t_rows_view(&a, r0, r1 - r0, d, &blk[d].a), 0);
		T_EQ(gpubuf_cuda_matrix_view(&b, d, &blk[d].b), 0);
		T_EQ(t_rows_view(&c, r0, r1 - r0, d, &blk[d].c), 0);
	}
	/* One registration per buffer, whichever device asked first. */
	T_EQ(stub.registrations(), 3);
	T_CHECK(blk[0].b.devptr != blk[1].b.devptr);
	for (int d = 0; d < NDEV; d++)
		T_EQ(pthread_create(&th[d], NULL, t_block_gemm, &blk[d]), 0);
	for (int d = 0; d < NDEV; d++) {
		pthread_join(th[d], NULL);
		T_EQ(blk[d].err, 0);
	}
	T_EQ(stub.log_count("cuLaunchKernel"), NDEV);
	T_EQ(stub.module_loads(0), 1);
	T_EQ(stub.module_loads(1), 1);
	for (size_t i = 0; i < M && !bad; i++)
		for (size_t j = 0; j < N && !bad; j++) {
			double ref = 0, mag = 0;

			for (size_t p = 0; p < K; p++) {
				ref += t_val(i, p, 1) * t_val(p, j, 2);
				mag += fabs(t_val(i, p, 1) * t_val(p, j, 2));
			}
			if (!t_close(t_get(&c, i, j), ref, mag, K,
				     GPUBUF_DTYPE_F64)) {
				printf("# C(%zu,%zu) = %.17g, expected %.17g\n",
				       i, j, t_get(&c, i, j), ref);
				bad = 1;
			}
		}
	for (int d = 0; d < NDEV; d++) {
		T_EQ(gpubuf_cuda_unregister(a.buf, d), 0);
		T_EQ(gpubuf_cuda_unregister(b.buf, d), 0);
		T_EQ(gpubuf_cuda_unregister(c.buf, d), 0);
	}
	gpubuf_matrix_release(&a);
	gpubuf_matrix_release(&b);
	gpubuf_matrix_release(&c);
	gpubuf_close(ctx);
	T_CLEAN();
	return bad ? T_FAIL : T_PASS;
}

/* name, environment ("K=V K=V") */
#define T_CASES(X)							\
	X(two_devices_split_one_gemm, "CUSTUB_DEVICES=2 CUSTUB_EXEC=1")

T_STUB_MAIN(T_CASES)
