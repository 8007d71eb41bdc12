// SPDX-License-Identifier: MIT
/*
 * Description: DLPack export: shape, element strides, data at element
 * (0,0) (GPUBUF_0.1's exports: the base and a byte offset), dtype
 * and device mapping, NULL data for empty tensors, errno left alone, and
 * that the tensor holds a buffer reference until its deleter runs.
 */
#include <errno.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#include "tap.h"

static int row_major_tensor(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m, s;
	DLManagedTensor *t;
	DLTensor *d;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 100, 30,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_matrix_sub(&m, 10, 5, 20, 7, &s), 0);
	T_EQ(gpubuf_matrix_to_dlpack(&s, kDLCPU, 0, &t), 0);
	T_EQ(gpubuf_refcount(m.buf), 2);
	d = &t->dl_tensor;
	T_EQ(d->ndim, 2);
	T_EQ(d->shape[0], 20);
	T_EQ(d->shape[1], 7);
	T_EQ(d->strides[0], 64);	/* 30 floats padded to 256 B */
	T_EQ(d->strides[1], 1);
	T_EQ(d->dtype.code, kDLFloat);
	T_EQ(d->dtype.bits, 32);
	T_EQ(d->dtype.lanes, 1);
	T_EQ(d->device.device_type, kDLCPU);
	T_EQ(d->device.device_id, 0);
	/*
	 * Issue 23: data is element (0,0) itself and byte_offset 0, as
	 * PyTorch and CuPy make them; PyTorch 1.13 ignores byte_offset.
	 */
	T_CHECK(d->data == gpubuf_matrix_data(&s));
	T_EQ(d->byte_offset, 0);
	/* The tensor outlives the matrix's own reference. */
	gpubuf_matrix_release(&m);
	T_EQ(gpubuf_refcount(s.buf), 1);
	((float *)d->data)[19 * 64 + 6] = 2.0f;
	t->deleter(t);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * GPUBUF_0.1's exports, as programs linked before 0.5 get them: data the
 * buffer base, the view's offset in byte_offset (reachable under their own
 * names in a static link, exported as name@GPUBUF_0.1).
 */
int gpubuf_matrix_to_dlpack_v0_1(const struct gpubuf_matrix *m,
				 int device_type, int device_id,
				 DLManagedTensor **out);
int gpubuf_matrix_to_dlpack_versioned_v0_1(const struct gpubuf_matrix *m,
					   int device_type, int device_id,
					   struct DLManagedTensorVersioned **out);

static int v0_1_exports_keep_base_and_byte_offset(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m, s;
	DLManagedTensor *t;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 100, 30,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_matrix_sub(&m, 10, 5, 20, 7, &s), 0);
	T_EQ(gpubuf_matrix_to_dlpack_v0_1(&s, kDLCPU, 0, &t), 0);
	T_CHECK(t->dl_tensor.data == gpubuf_ptr(m.buf));
	T_EQ(t->dl_tensor.byte_offset, (10 * 64 + 5) * 4);
	T_EQ(t->dl_tensor.shape[0], 20);
	t->deleter(t);
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
	{
		struct DLManagedTensorVersioned *v;

		T_EQ(gpubuf_matrix_to_dlpack_versioned_v0_1(&s, kDLCPU, 0, &v),
		     0);
		T_CHECK(v->dl_tensor.data == gpubuf_ptr(m.buf));
		T_EQ(v->dl_tensor.byte_offset, (10 * 64 + 5) * 4);
		v->deleter(v);
		T_EQ(gpubuf_matrix_to_dlpack_versioned(&s, kDLCPU, 0, &v), 0);
		T_CHECK(v->dl_tensor.data == gpubuf_matrix_data(&s));
		T_EQ(v->dl_tensor.byte_offset, 0);
		v->deleter(v);
	}
#endif
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

static int col_major_tensor_and_transpose(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m, tr;
	DLManagedTensor *t;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F64, 9, 4,
				 GPUBUF_COL_MAJOR, 128, &m), 0);
	T_EQ(m.ld, 16);
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLCUDAHost, 0, &t), 0);
	T_EQ(t->dl_tensor.strides[0], 1);
	T_EQ(t->dl_tensor.strides[1], 16);
	T_EQ(t->dl_tensor.device.device_type, kDLCUDAHost);
	T_EQ(t->dl_tensor.device.device_id, 0);
	t->deleter(t);
	T_EQ(gpubuf_matrix_transpose(&m, &tr), 0);
	T_EQ(gpubuf_matrix_to_dlpack(&tr, kDLROCMHost, 0, &t), 0);
	T_EQ(t->dl_tensor.shape[0], 4);
	T_EQ(t->dl_tensor.shape[1], 9);
	T_EQ(t->dl_tensor.strides[0], 16);
	T_EQ(t->dl_tensor.strides[1], 1);
	T_EQ(gpubuf_refcount(m.buf), 2);
	t->deleter(t);
	T_EQ(gpubuf_refcount(m.buf), 1);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

static int dtype_mapping(void)
{
	static const struct {
		enum gpubuf_dtype dt;
		uint8_t code, bits;
	} map[] = {
		{ GPUBUF_DTYPE_F16, kDLFloat, 16 },
		{ GPUBUF_DTYPE_BF16, kDLBfloat, 16 },
		{ GPUBUF_DTYPE_F32, kDLFloat, 32 },
		{ GPUBUF_DTYPE_F64, kDLFloat, 64 },
		{ GPUBUF_DTYPE_I8, kDLInt, 8 },
		{ GPUBUF_DTYPE_U8, kDLUInt, 8 },
		{ GPUBUF_DTYPE_I16, kDLInt, 16 },
		{ GPUBUF_DTYPE_U16, kDLUInt, 16 },
		{ GPUBUF_DTYPE_I32, kDLInt, 32 },
		{ GPUBUF_DTYPE_U32, kDLUInt, 32 },
		{ GPUBUF_DTYPE_I64, kDLInt, 64 },
		{ GPUBUF_DTYPE_U64, kDLUInt, 64 },
		{ GPUBUF_DTYPE_COMPLEX64, kDLComplex, 64 },
		{ GPUBUF_DTYPE_COMPLEX128, kDLComplex, 128 },
	};
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m;
	DLManagedTensor *t;

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		T_EQ(gpubuf_matrix_alloc(ctx, map[i].dt, 2, 3,
					 GPUBUF_ROW_MAJOR, 0, &m), 0);
		T_EQ(gpubuf_matrix_to_dlpack(&m, kDLCPU, 0, &t), 0);
		T_EQ(t->dl_tensor.dtype.code, map[i].code);
		T_EQ(t->dl_tensor.dtype.bits, map[i].bits);
		T_EQ(t->dl_tensor.dtype.lanes, 1);
		T_EQ(t->dl_tensor.dtype.bits / 8, gpubuf_dtype_size(map[i].dt));
		t->deleter(t);
		gpubuf_matrix_release(&m);
	}
	gpubuf_close(ctx);
	return T_PASS;
}

static int rejects_bad_device_and_matrix(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m, bad;
	DLManagedTensor *t = (DLManagedTensor *)&t;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 2, 2,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	/* kDLCUDA needs a CUDA registration on that device first. */
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLCUDA, 0, &t), -ENXIO);
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLCUDA, -1, &t), -EINVAL);
	/* kDLROCM likewise needs an HSA lock for that GPU agent. */
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLROCM, 0, &t), -ENXIO);
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLROCM, -1, &t), -EINVAL);
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLOpenCL, 0, &t), -EINVAL);
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLCPU, 1, &t), -EINVAL);
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLCUDAHost, -1, &t), -EINVAL);
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLCPU, 0, NULL), -EINVAL);
	bad = m;
	bad.rows = 1u << 30;		/* no longer fits its buffer */
	T_EQ(gpubuf_matrix_to_dlpack(&bad, kDLCPU, 0, &t), -ERANGE);
	T_CHECK(t == (DLManagedTensor *)&t);
	T_EQ(gpubuf_refcount(m.buf), 1);	/* failures take no reference */
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * Issue 7 item 10: host memory has device_id 0 in DLPack ("for vanilla
 * CPU memory, pinned memory, or managed memory, this is set to 0"), but
 * kDLCUDAHost and kDLROCMHost took any id.
 */
static int host_device_id_is_zero(void)
{
	static const int types[] = { kDLCPU, kDLCUDAHost, kDLROCMHost };
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m;
	DLManagedTensor *t = (DLManagedTensor *)&t;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 2, 2,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		T_EQ(gpubuf_matrix_to_dlpack(&m, types[i], 1, &t), -EINVAL);
		T_EQ(gpubuf_matrix_to_dlpack(&m, types[i], 3, &t), -EINVAL);
		T_EQ(gpubuf_matrix_to_dlpack(&m, types[i], -1, &t), -EINVAL);
		T_CHECK(t == (DLManagedTensor *)&t);
		/* A label only: same pointer, nothing registered or moved. */
		T_EQ(gpubuf_matrix_to_dlpack(&m, types[i], 0, &t), 0);
		T_EQ(t->dl_tensor.device.device_type, types[i]);
		T_EQ(t->dl_tensor.device.device_id, 0);
		T_CHECK(t->dl_tensor.data == gpubuf_ptr(m.buf));
		t->deleter(t);
		t = (DLManagedTensor *)&t;
	}
	T_EQ(gpubuf_refcount(m.buf), 1);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * Issue 7 item 10: a view without elements exported data = buffer base
 * and byte_offset = its offset, which may be the end of the buffer.
 * dlpack.h: "if the tensor is of size zero, then the data pointer should
 * be set to NULL".
 */
static int empty_tensor_has_null_data(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m, e;
	DLManagedTensor *t;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F64, 4, 3,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_matrix_sub(&m, 1, 1, 0, 2, &e), 0);	/* 0 x 2 */
	T_EQ(gpubuf_matrix_to_dlpack(&e, kDLCPU, 0, &t), 0);
	T_CHECK(t->dl_tensor.data == NULL);
	T_EQ(t->dl_tensor.byte_offset, 0);
	T_EQ(t->dl_tensor.shape[0], 0);
	T_EQ(t->dl_tensor.shape[1], 2);
	T_EQ(gpubuf_refcount(m.buf), 2);	/* still holds the buffer */
	t->deleter(t);
	/* An empty view at the very end of its buffer. */
	T_EQ(gpubuf_matrix_view(m.buf, gpubuf_size(m.buf), GPUBUF_DTYPE_F64,
				3, 0, 3, GPUBUF_COL_MAJOR, &e), 0);
	T_EQ(gpubuf_matrix_to_dlpack(&e, kDLCPU, 0, &t), 0);
	T_CHECK(t->dl_tensor.data == NULL);
	T_EQ(t->dl_tensor.byte_offset, 0);
	t->deleter(t);
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
	{
		struct DLManagedTensorVersioned *v;

		T_EQ(gpubuf_matrix_to_dlpack_versioned(&e, kDLCPU, 0, &v), 0);
		T_CHECK(v->dl_tensor.data == NULL);
		T_EQ(v->dl_tensor.byte_offset, 0);
		v->deleter(v);
	}
#endif
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

/* Both exports promise to leave errno alone, failing or not. */
static int exports_leave_errno_alone(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct DLManagedTensorVersioned *v;
	struct gpubuf_matrix m;
	DLManagedTensor *t;
	int err;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 2, 2,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	errno = 4242;
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLCPU, 7, &t), -EINVAL);
	T_EQ(gpubuf_matrix_to_dlpack_versioned(&m, kDLCPU, 7, &v),
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
	     -EINVAL);
#else
	     -EOPNOTSUPP);
#endif
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLCPU, 0, &t), 0);
	t->deleter(t);
	err = gpubuf_matrix_to_dlpack_versioned(&m, kDLCPU, 0, &v);
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
	T_EQ(err, 0);
	v->deleter(v);
#else
	T_EQ(err, -EOPNOTSUPP);
#endif
	T_EQ(errno, 4242);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

static int versioned_matches_build(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m;
	struct DLManagedTensorVersioned *v = NULL;
	int err;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 2, 2,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	err = gpubuf_matrix_to_dlpack_versioned(&m, kDLCPU, 0, &v);
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
	T_EQ(err, 0);
	T_EQ(v->version.major, DLPACK_MAJOR_VERSION);
	T_EQ(v->dl_tensor.shape[1], 2);
	T_EQ(gpubuf_refcount(m.buf), 2);
	v->deleter(v);
#else
	T_EQ(err, -EOPNOTSUPP);	/* this dlpack.h predates the struct */
	T_CHECK(v == NULL);
#endif
	T_EQ(gpubuf_refcount(m.buf), 1);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST(row_major_tensor),
		T_TEST(v0_1_exports_keep_base_and_byte_offset),
		T_TEST(col_major_tensor_and_transpose),
		T_TEST(dtype_mapping),
		T_TEST(rejects_bad_device_and_matrix),
		T_TEST(host_device_id_is_zero),
		T_TEST(empty_tensor_has_null_data),
		T_TEST(exports_leave_errno_alone),
		T_TEST(versioned_matches_build),
	};

	return T_RUN(tests);
}
