// SPDX-License-Identifier: MIT
/*
 * Description: one buffer used in place by several Vulkan devices at once.
 * A GEMM C = A B split into row blocks: each device reads the same A and B
 * (imported into every device) and writes its own rows of C, all devices
 * at the same time from their own threads. On lavapipe the devices are
 * logical devices of its one physical device (gpubuf_vk_open(0) twice),
 * which is what two GPUs look like to the library: separate VkDevices,
 * queues and imports of one buffer. The CUDA and HSA stand-ins do the same
 * with two devices each (tests/cudastub/cuda_stub_multi.c,
 * tests/hsastub/hsa_stub_multi.c).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "gemm_ref.h"

#define NDEV	2
#define M	150
#define N	70
#define K	90

struct t_block {
	struct gpubuf_vk *vk;
	struct gpubuf_vk_matrix a, b, c;
	int err;
};

static void *t_block_gemm(void *arg)
{
	struct t_block *blk = arg;

	blk->err = gpubuf_vk_gemm(1.0, &blk->a, &blk->b, 0.0, &blk->c);
	return NULL;
}

/* The rows [r0, r0 + rows) of m as a view for vk. */
static int t_rows_view(const struct gpubuf_matrix *m, size_t r0, size_t rows,
		       struct gpubuf_vk *vk, struct gpubuf_vk_matrix *out)
{
	struct gpubuf_matrix s;
	int err = gpubuf_matrix_sub(m, r0, 0, rows, m->cols, &s);

	return err ? err : gpubuf_vk_matrix_view(&s, vk, out);
}

static int vulkan_devices_split_one_gemm(void)
{
	struct gpubuf_matrix a, b, c;
	struct t_block blk[NDEV];
	pthread_t th[NDEV];
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk_memory mem;
	int bad = 0;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, M, K, GPUBUF_ROW_MAJOR,
				 0, &a), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, K, N, GPUBUF_COL_MAJOR,
				 0, &b), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, M, N, GPUBUF_ROW_MAJOR,
				 0, &c), 0);
	t_fill(&a, 1);
	t_fill(&b, 2);
	for (size_t i = 0; i < M; i++)
		for (size_t j = 0; j < N; j++)
			gpubuf_matrix_set(&c, i, j, NAN);
	/* Uneven blocks: 75 rows and 75, the first ending mid-tile. */
	for (int d = 0; d < NDEV; d++) {
		size_t r0 = d * M / NDEV, r1 = (d + 1) * M / NDEV;

		T_EQ(gpubuf_vk_open(0, 0, &blk[d].vk), 0);
		T_EQ(gpubuf_vk_import(a.buf, blk[d].vk, &mem), 0);
		T_EQ(gpubuf_vk_import(b.buf, blk[d].vk, &mem), 0);
		T_EQ(gpubuf_vk_import(c.buf, blk[d].vk, &mem), 0);
		T_EQ(t_rows_view(&a, r0, r1 - r0, blk[d].vk, &blk[d].a), 0);
		T_EQ(gpubuf_vk_matrix_view(&b, blk[d].vk, &blk[d].b), 0);
		T_EQ(t_rows_view(&c, r0, r1 - r0, blk[d].vk, &blk[d].c), 0);
	}
	T_CHECK(blk[0].vk != blk[1].vk);
	for (int d = 0; d < NDEV; d++)
		T_EQ(pthread_create(&th[d], NULL, t_block_gemm, &blk[d]), 0);
	for (int d = 0; d < NDEV; d++) {
		pthread_join(th[d], NULL);
		if (blk[d].err)
			printf("# device %d: gpubuf_vk_gemm: %s: %s\n", d,
			       strerror(-blk[d].err), gpubuf_last_error());
		T_EQ(blk[d].err, 0);
	}
	for (size_t i = 0; i < M && !bad; i++)
		for (size_t j = 0; j < N && !bad; j++) {
			double ref = 0, mag = 0;

			for (size_t p = 0; p < K; p++) {
				ref += t_val(i, p, 1) * t_val(p, j, 2);
				mag += fabs(t_val(i, p, 1) * t_val(p, j, 2));
			}
			if (!t_close(t_get(&c, i, j), ref, mag, K,
				     GPUBUF_DTYPE_F32)) {
				printf("# C(%zu,%zu) = %.9g, expected %.9g (device %d's rows)\n",
				       i, j, t_get(&c, i, j), ref,
				       (int)(i * NDEV / M));
				bad = 1;
			}
		}
	/* Each buffer is imported once per device; all go with the devices. */
	for (int d = 0; d < NDEV; d++) {
		T_EQ(gpubuf_vk_release(c.buf, blk[d].vk), 0);
		gpubuf_vk_close(blk[d].vk);
	}
	gpubuf_matrix_release(&a);
	gpubuf_matrix_release(&b);
	gpubuf_matrix_release(&c);
	gpubuf_close(ctx);
	return bad ? T_FAIL : T_PASS;
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST_ON(T_VULKAN, vulkan_devices_split_one_gemm),
	};

	return T_RUN(tests);
}
