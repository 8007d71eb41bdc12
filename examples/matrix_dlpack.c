// SPDX-License-Identifier: MIT
/* Build: cc matrix_dlpack.c $(pkg-config --cflags --libs gpubuf) */
#include <stdio.h>
#include <dlpack/dlpack.h>
#include <gpubuf.h>

int main(void)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf_matrix m, sub;
	DLManagedTensor *t;
	int err = gpubuf_open(&ctx, GPUBUF_OPEN_ALLOW_MEMFD);

	if (!err)	/* 1024 x 1024 f32, every row 256-byte aligned */
		err = gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 1024, 1024,
					  GPUBUF_ROW_MAJOR, 0, &m);
	if (!err)	/* O(1) view of the middle 512 x 512 block */
		err = gpubuf_matrix_sub(&m, 256, 256, 512, 512, &sub);
	for (size_t r = 0; !err && r < sub.rows; r++)
		for (size_t c = 0; c < sub.cols; c++)
			*gpubuf_matrix_f32(&sub, r, c) = (float)(r * sub.cols + c);
	if (!err)	/* the tensor holds its own buffer reference */
		err = gpubuf_matrix_to_dlpack(&sub, kDLCPU, 0, &t);
	if (err) {
		fprintf(stderr, "gpubuf: %s\n", gpubuf_strerror(err));
		return 1;
	}
	gpubuf_matrix_release(&m);
	printf("%s backend, tensor %lldx%lld, strides {%lld,%lld}\n",
	       gpubuf_backend(ctx) == GPUBUF_BACKEND_MODULE ? "module" : "memfd",
	       (long long)t->dl_tensor.shape[0], (long long)t->dl_tensor.shape[1],
	       (long long)t->dl_tensor.strides[0], (long long)t->dl_tensor.strides[1]);
	t->deleter(t);	/* what the consumer does when done */
	gpubuf_close(ctx);
	return 0;
}
