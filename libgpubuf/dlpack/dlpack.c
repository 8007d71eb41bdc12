// SPDX-License-Identifier: MIT
/*
 * dlpack/: DLPack export of matrix views, the one part of the library above
 * the consumers: host tensors from the core's views, kDLCUDA and kDLROCM
 * tensors through a hold cuda/ or hsa/ already has on the buffer.
 *
 * Two entry points with fixed result types instead of one whose type
 * depends on the dlpack.h the library happened to be built with: a caller
 * compiled against DLPack 1.x must never receive a 0.x struct by surprise.
 * DLManagedTensor has the same layout in 0.x and 1.x, so it always works;
 * the versioned struct exists only when the build saw DLPack >= 1.0, and
 * the function answers -EOPNOTSUPP otherwise.
 *
 * Where data points, by symbol version (libgpubuf.map): since GPUBUF_0.5
 * at element (0,0) with byte_offset 0, as PyTorch, CuPy and NumPy produce
 * them and as consumers that ignore byte_offset (PyTorch 1.13) need;
 * programs linked against GPUBUF_0.1 keep the buffer base with the view's
 * offset in byte_offset, what they were promised.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "cuda/cuda_driver.h"
#include "hsa/hsa_runtime.h"
#include "core/internal.h"

#if defined(__has_include)
#if __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>
/* The names used here (kDLCUDA, kDLComplex, ...) are DLPack 0.6's. */
#if defined(DLPACK_MAJOR_VERSION) || DLPACK_VERSION >= 60
#define GPUBUF_HAVE_DLPACK 1
#endif
#endif
#endif

#ifdef GPUBUF_HAVE_DLPACK

#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
#define GPUBUF_HAVE_DLPACK_V1 1
#endif

/* One allocation: the tensor, its shape and strides, the reference. */
struct gpubuf_dl {
	union {
		DLManagedTensor legacy;
#ifdef GPUBUF_HAVE_DLPACK_V1
		struct DLManagedTensorVersioned v1;	/* no typedef in DLPack 1.0 */
#endif
	} t;
	int64_t shape[2];
	int64_t strides[2];
	struct gpubuf *buf;	/* one reference, dropped by the deleter */
	int cuda_device;	/* kDLCUDA: registration count held, else -1 */
	bool gpu_read_only;	/* kDLCUDA: registered read-only */
	int hsa_gpu;		/* kDLROCM: lock count held, else -1 */
};

static int gpubuf_dl_dtype(enum gpubuf_dtype d, DLDataType *out)
{
	static const struct { uint8_t code, bits; } map[] = {
		[GPUBUF_DTYPE_F16] = { kDLFloat, 16 },
		[GPUBUF_DTYPE_BF16] = { kDLBfloat, 16 },
		[GPUBUF_DTYPE_F32] = { kDLFloat, 32 },
		[GPUBUF_DTYPE_F64] = { kDLFloat, 64 },
		[GPUBUF_DTYPE_I8] = { kDLInt, 8 },
		[GPUBUF_DTYPE_U8] = { kDLUInt, 8 },
		[GPUBUF_DTYPE_I16] = { kDLInt, 16 },
		[GPUBUF_DTYPE_U16] = { kDLUInt, 16 },
		[GPUBUF_DTYPE_I32] = { kDLInt, 32 },
		[GPUBUF_DTYPE_U32] = { kDLUInt, 32 },
		[GPUBUF_DTYPE_I64] = { kDLInt, 64 },
		[GPUBUF_DTYPE_U64] = { kDLUInt, 64 },
		[GPUBUF_DTYPE_COMPLEX64] = { kDLComplex, 64 },
		[GPUBUF_DTYPE_COMPLEX128] = { kDLComplex, 128 },
	};

	if ((unsigned int)d >= sizeof(map) / sizeof(map[0]) || !map[d].bits)
		return -EINVAL;
	out->code = map[d].code;
	out->bits = map[d].bits;
	out->lanes = 1;
	return 0;
}

/*
 * Fill the DLTensor. data is element (0,0) and byte_offset 0, or (base)
 * the buffer base and byte_offset the view's offset, as GPUBUF_0.1 did
 * after dlpack.h's wish for an aligned data pointer, which the consumers
 * that matter do not follow. A tensor without elements gets data NULL and
 * byte_offset 0, as dlpack.h asks for size-zero tensors: an empty view's
 * offset may be the end of its buffer, which is no address to give.
 *
 * kDLCPU, kDLCUDAHost and kDLROCMHost are host memory, whose device_id
 * dlpack.h fixes at 0; the host labels are labels only, nothing here
 * registers the pages (see gpubuf_matrix_to_dlpack.3). kDLCUDA is the
 * buffer's device pointer on CUDA device device_id, which must be
 * registered there: the tensor holds one registration count, so the
 * pointer stays valid until the consumer calls the deleter. kDLROCM is
 * likewise the agent pointer of an HSA lock for GPU agent device_id (its
 * index in the runtime's enumeration, HIP's device ordinal), holding one
 * lock count.
 */
static int gpubuf_dl_fill(struct gpubuf_dl *dl, DLTensor *t,
			  const struct gpubuf_matrix *m, int device_type,
			  int device_id, bool base)
{
	uint64_t devptr = 0;
	int err;

	dl->cuda_device = -1;
	dl->hsa_gpu = -1;
	if (device_type == kDLCUDA || device_type == kDLROCM) {
		if (device_id < 0)
			return -EINVAL;
	} else if (device_type == kDLCPU || device_type == kDLCUDAHost ||
		   device_type == kDLROCMHost) {
		if (device_id != 0)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	err = gpubuf_matrix_check(m);
	if (err)
		return err;
#if SIZE_MAX > INT64_MAX	/* else always false, and -Wtype-limits says so */
	if (m->rows > INT64_MAX || m->cols > INT64_MAX || m->ld > INT64_MAX)
		return -EOVERFLOW;
#endif
	err = gpubuf_dl_dtype(m->dtype, &t->dtype);
	if (err)
		return err;
	if (device_type == kDLCUDA) {
		err = gpubuf_cuda_hold(m->buf, device_id, &devptr,
				       &dl->gpu_read_only);
		if (err)
			return err;
		dl->cuda_device = device_id;
	}
	if (device_type == kDLROCM) {
		err = gpubuf_hsa_hold(m->buf, device_id, &devptr);
		if (err)
			return err;
		dl->hsa_gpu = device_id;
	}
	dl->shape[0] = (int64_t)m->rows;
	dl->shape[1] = (int64_t)m->cols;
	/* Strides count elements, not bytes. */
	dl->strides[0] = m->layout == GPUBUF_ROW_MAJOR ? (int64_t)m->ld : 1;
	dl->strides[1] = m->layout == GPUBUF_ROW_MAJOR ? 1 : (int64_t)m->ld;
	if (m->rows && m->cols) {
		char *p = device_type == kDLCUDA || device_type == kDLROCM ?
			  (char *)(uintptr_t)devptr : (char *)m->buf->ptr;

		t->data = base ? p : p + m->offset;
		t->byte_offset = base ? m->offset : 0;
	} else {
		t->data = NULL;
		t->byte_offset = 0;
	}
	t->device.device_type = (DLDeviceType)device_type;
	t->device.device_id = device_id;
	t->ndim = 2;
	t->shape = dl->shape;
	t->strides = dl->strides;
	return 0;
}

static void gpubuf_dl_free(struct gpubuf_dl *dl)
{
	if (dl->cuda_device >= 0)
		gpubuf_cuda_unregister(dl->buf, dl->cuda_device);
	if (dl->hsa_gpu >= 0)
		gpubuf_hsa_unlock(dl->buf);
	gpubuf_unref(dl->buf);
	free(dl);
}

static void gpubuf_dl_delete_legacy(DLManagedTensor *self)
{
	if (self)
		gpubuf_dl_free(self->manager_ctx);
}

static int gpubuf_dl_export(const struct gpubuf_matrix *m, int device_type,
			    int device_id, struct DLManagedTensor **out,
			    bool base)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_dl *dl;
	int err;

	if (!out || !m)
		return -EINVAL;
	dl = calloc(1, sizeof(*dl));
	if (!dl)
		return -ENOMEM;
	/* The legacy struct cannot say "read-only"; consumers would write. */
	err = gpubuf_matrix_check(m);
	if (!err && (m->buf->flags & GPUBUF_BUF_READONLY))
		err = -EROFS;
	if (!err)
		err = gpubuf_dl_fill(dl, &dl->t.legacy.dl_tensor, m,
				     device_type, device_id, base);
	/* Likewise a read-only registration: a GPU write would fault. */
	if (!err && dl->gpu_read_only) {
		gpubuf_cuda_unregister(m->buf, dl->cuda_device);
		err = -EROFS;
	}
	if (err) {
		free(dl);
		return err;
	}
	dl->buf = gpubuf_ref(m->buf);
	dl->t.legacy.manager_ctx = dl;
	dl->t.legacy.deleter = gpubuf_dl_delete_legacy;
	*out = &dl->t.legacy;
	return 0;
}

int gpubuf_matrix_to_dlpack_v0_5(const struct gpubuf_matrix *m,
				 int device_type, int device_id,
				 struct DLManagedTensor **out);
GPUBUF_SYMVER(gpubuf_matrix_to_dlpack_v0_5, "gpubuf_matrix_to_dlpack@@GPUBUF_0.5");
GPUBUF_EXPORT int gpubuf_matrix_to_dlpack_v0_5(const struct gpubuf_matrix *m,
					       int device_type, int device_id,
					       struct DLManagedTensor **out)
{
	return gpubuf_dl_export(m, device_type, device_id, out, false);
}

int gpubuf_matrix_to_dlpack_v0_1(const struct gpubuf_matrix *m,
				 int device_type, int device_id,
				 struct DLManagedTensor **out);
GPUBUF_SYMVER(gpubuf_matrix_to_dlpack_v0_1, "gpubuf_matrix_to_dlpack@GPUBUF_0.1");
GPUBUF_EXPORT int gpubuf_matrix_to_dlpack_v0_1(const struct gpubuf_matrix *m,
					       int device_type, int device_id,
					       struct DLManagedTensor **out)
{
	return gpubuf_dl_export(m, device_type, device_id, out, true);
}

#ifdef GPUBUF_HAVE_DLPACK_V1
static void gpubuf_dl_delete_v1(struct DLManagedTensorVersioned *self)
{
	if (self)
		gpubuf_dl_free(self->manager_ctx);
}

static int gpubuf_dl_export_v1(const struct gpubuf_matrix *m,
			       int device_type, int device_id,
			       struct DLManagedTensorVersioned **out, bool base)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_dl *dl;
	int err;

	if (!out || !m)
		return -EINVAL;
	dl = calloc(1, sizeof(*dl));
	if (!dl)
		return -ENOMEM;
	err = gpubuf_dl_fill(dl, &dl->t.v1.dl_tensor, m, device_type,
			     device_id, base);
	if (err) {
		free(dl);
		return err;
	}
	dl->buf = gpubuf_ref(m->buf);
	dl->t.v1.version.major = DLPACK_MAJOR_VERSION;
	dl->t.v1.version.minor = DLPACK_MINOR_VERSION;
	dl->t.v1.manager_ctx = dl;
	dl->t.v1.deleter = gpubuf_dl_delete_v1;
	if ((m->buf->flags & GPUBUF_BUF_READONLY) || dl->gpu_read_only)
		dl->t.v1.flags |= DLPACK_FLAG_BITMASK_READ_ONLY;
	*out = &dl->t.v1;
	return 0;
}
#else
static int gpubuf_dl_export_v1(const struct gpubuf_matrix *m,
			       int device_type, int device_id,
			       struct DLManagedTensorVersioned **out, bool base)
{
	(void)m, (void)device_type, (void)device_id, (void)out, (void)base;
	return -EOPNOTSUPP;	/* built against DLPack < 1.0 */
}
#endif

#else /* !GPUBUF_HAVE_DLPACK */

/* Built without <dlpack/dlpack.h>: both nodes answer -EOPNOTSUPP. */
static int gpubuf_dl_export(const struct gpubuf_matrix *m, int device_type,
			    int device_id, struct DLManagedTensor **out,
			    bool base)
{
	(void)m, (void)device_type, (void)device_id, (void)out, (void)base;
	return -EOPNOTSUPP;
}

static int gpubuf_dl_export_v1(const struct gpubuf_matrix *m,
			       int device_type, int device_id,
			       struct DLManagedTensorVersioned **out, bool base)
{
	(void)m, (void)device_type, (void)device_id, (void)out, (void)base;
	return -EOPNOTSUPP;
}

int gpubuf_matrix_to_dlpack_v0_5(const struct gpubuf_matrix *m,
				 int device_type, int device_id,
				 struct DLManagedTensor **out);
GPUBUF_SYMVER(gpubuf_matrix_to_dlpack_v0_5, "gpubuf_matrix_to_dlpack@@GPUBUF_0.5");
GPUBUF_EXPORT int gpubuf_matrix_to_dlpack_v0_5(const struct gpubuf_matrix *m,
					       int device_type, int device_id,
					       struct DLManagedTensor **out)
{
	return gpubuf_dl_export(m, device_type, device_id, out, false);
}

int gpubuf_matrix_to_dlpack_v0_1(const struct gpubuf_matrix *m,
				 int device_type, int device_id,
				 struct DLManagedTensor **out);
GPUBUF_SYMVER(gpubuf_matrix_to_dlpack_v0_1, "gpubuf_matrix_to_dlpack@GPUBUF_0.1");
GPUBUF_EXPORT int gpubuf_matrix_to_dlpack_v0_1(const struct gpubuf_matrix *m,
					       int device_type, int device_id,
					       struct DLManagedTensor **out)
{
	return gpubuf_dl_export(m, device_type, device_id, out, true);
}

#endif

int gpubuf_matrix_to_dlpack_versioned_v0_5(const struct gpubuf_matrix *m,
					   int device_type, int device_id,
					   struct DLManagedTensorVersioned **out);
GPUBUF_SYMVER(gpubuf_matrix_to_dlpack_versioned_v0_5,
	      "gpubuf_matrix_to_dlpack_versioned@@GPUBUF_0.5");
GPUBUF_EXPORT int gpubuf_matrix_to_dlpack_versioned_v0_5(
	const struct gpubuf_matrix *m, int device_type, int device_id,
	struct DLManagedTensorVersioned **out)
{
	return gpubuf_dl_export_v1(m, device_type, device_id, out, false);
}

int gpubuf_matrix_to_dlpack_versioned_v0_1(const struct gpubuf_matrix *m,
					   int device_type, int device_id,
					   struct DLManagedTensorVersioned **out);
GPUBUF_SYMVER(gpubuf_matrix_to_dlpack_versioned_v0_1,
	      "gpubuf_matrix_to_dlpack_versioned@GPUBUF_0.1");
GPUBUF_EXPORT int gpubuf_matrix_to_dlpack_versioned_v0_1(
	const struct gpubuf_matrix *m, int device_type, int device_id,
	struct DLManagedTensorVersioned **out)
{
	return gpubuf_dl_export_v1(m, device_type, device_id, out, true);
}
