// SPDX-License-Identifier: MIT
/*
 * Description: one set of buffers used in place by two HSA GPU agents at
 * once, against the stand-in runtime (hsa_stub_test.h runs each test in a
 * fresh process): A, B and C locked once for every agent, a GEMM split
 * into row blocks, each agent dispatched its own rows of A and C with the
 * same B, from two threads. The packets are checked (each agent's queue,
 * each block's agent pointers and rows); the stand-in runs no kernel, so
 * the values are not: the Vulkan and CUDA twins compute theirs
 * (tests/lib/multi_device.c, tests/cudastub/cuda_stub_multi.c). Nothing
 * touches a GPU.
 */
#include <pthread.h>

#include "hsa_stub_dispatch.h"

#ifndef GPUBUF_HAVE_HSA_KERNELS
#error "hsa_stub_multi needs a libgpubuf built with hipcc (HSA kernels)"
#endif

#define NDEV	2
#define M	130
#define N	70
#define K	50

struct t_block {
	struct gpubuf_hsa_matrix a, b, c;
	int err;
};

static void *t_block_gemm(void *arg)
{
	struct t_block *blk = arg;

	blk->err = gpubuf_hsa_gemm(1.0, &blk->a, &blk->b, 0.0, &blk->c, 0);
	return NULL;
}

static int t_rows_view(const struct gpubuf_matrix *m, size_t r0, size_t rows,
		       int agent, struct gpubuf_hsa_matrix *out)
{
	struct gpubuf_matrix s;
	int err = gpubuf_matrix_sub(m, r0, 0, rows, m->cols, &s);

	return err ? err : gpubuf_hsa_matrix_view(&s, agent, out);
}

static int two_agents_split_one_gemm(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m[3];
	struct t_block blk[NDEV];
	pthread_t th[NDEV];
	void *ap[3];
	int seen[NDEV] = { 0 };

	T_DSTUB();
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, M, K, GPUBUF_ROW_MAJOR,
				 0, &m[0]), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, K, N, GPUBUF_ROW_MAJOR,
				 0, &m[1]), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, M, N, GPUBUF_ROW_MAJOR,
				 0, &m[2]), 0);
	/* One lock per buffer, for every GPU agent. */
	for (int i = 0; i < 3; i++)
		T_EQ(gpubuf_hsa_lock(m[i].buf, NULL, 0, &ap[i]), 0);
	T_EQ(stub.locks(), 3);
	for (int d = 0; d < NDEV; d++) {
		size_t r0 = d * M / NDEV, r1 = (d + 1) * M / NDEV;

		T_EQ(t_rows_view(&m[0], r0, r1 - r0, d, &blk[d].a), 0);
		T_EQ(gpubuf_hsa_matrix_view(&m[1], d, &blk[d].b), 0);
		T_EQ(t_rows_view(&m[2], r0, r1 - r0, d, &blk[d].c), 0);
	}
	for (int d = 0; d < NDEV; d++)
		T_EQ(pthread_create(&th[d], NULL, t_block_gemm, &blk[d]), 0);
	for (int d = 0; d < NDEV; d++) {
		pthread_join(th[d], NULL);
		T_EQ(blk[d].err, 0);
	}
	T_EQ(dstub.dispatched(), NDEV);
	for (long i = 0; i < NDEV; i++) {
		hsa_kernel_dispatch_packet_t p;
		uint64_t ka[16], agent;
		int d;

		T_EQ(dstub.packet(i, &p, ka, &agent), 0);
		d = agent == stub.gpu(1);
		T_EQ(agent, stub.gpu(d));
		seen[d]++;
		/* m n k ... a ... b ... c: each agent's block, the same B. */
		T_EQ(ka[0], (d + 1) * M / NDEV - d * M / NDEV);
		T_EQ(ka[1], N);
		T_EQ(ka[2], K);
		T_EQ(ka[4], (uintptr_t)ap[0] + d * M / NDEV * m[0].ld * 4);
		T_EQ(ka[7], (uintptr_t)ap[1]);
		T_EQ(ka[11], (uintptr_t)ap[2] + d * M / NDEV * m[2].ld * 4);
	}
	T_EQ(seen[0], 1);
	T_EQ(seen[1], 1);
	T_LEFT(2);
	for (int i = 0; i < 3; i++)
		gpubuf_matrix_release(&m[i]);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* name, environment ("K=V K=V"), where */
#define T_CASES(X)							\
	X(two_agents_split_one_gemm, "", T_ANY)

T_STUB_MAIN(T_CASES)
