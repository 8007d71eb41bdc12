// SPDX-License-Identifier: MIT
/*
 * Allocate a 1024 x 1024 f32 matrix, fill a sub-view, export it through
 * DLPack and let the consumer's deleter drop the buffer reference.
 * Build: cc matrix_dlpack.c $(pkg-config --cflags --libs gpubuf)
 * Run without the module: GPUBUF_BACKEND=memfd ./a.out
 */
#include <stdio.h>
#include <dlpack/dlpack.h>
#include <gpubuf.h>

int main(void)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf_matrix m, sub;
	DLManagedTensor *t;
	int err;

	err = gpubuf_open(&ctx, GPUBUF_OPEN_ALLOW_MEMFD);
	if (!err)
		err = gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 1024, 1024,
					  GPUBUF_ROW_MAJOR, 0, &m);
	if (err) {
		fprintf(stderr, "gpubuf: %s\n", gpubuf_strerror(err));
		return 1;
	}
	gpubuf_matrix_sub(&m, 256, 256, 512, 512, &sub);
	for (size_t r = 0; r < sub.rows; r++)
		for (size_t c = 0; c < sub.cols; c++)
			*gpubuf_matrix_f32(&sub, r, c) = (float)(r * sub.cols + c);
	err = gpubuf_matrix_to_dlpack(&sub, kDLCPU, 0, &t);
	gpubuf_matrix_release(&m);	/* the tensor keeps the buffer alive */
	if (err) {
		fprintf(stderr, "gpubuf: %s\n", gpubuf_strerror(err));
		return 1;
	}
	printf("tensor %lldx%lld strides {%lld,%lld} last %.0f\n",
	       (long long)t->dl_tensor.shape[0], (long long)t->dl_tensor.shape[1],
	       (long long)t->dl_tensor.strides[0], (long long)t->dl_tensor.strides[1],
	       ((float *)((char *)t->dl_tensor.data + t->dl_tensor.byte_offset))
	       [511 * t->dl_tensor.strides[0] + 511]);
	t->deleter(t);			/* what a consumer does when done */
	gpubuf_close(ctx);
	return 0;
}
