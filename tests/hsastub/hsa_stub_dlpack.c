// SPDX-License-Identifier: MIT
/*
 * Description: DLPack kDLROCM and kDLROCMHost exports against the
 * stand-in HSA runtime (stub.c): a kDLROCM tensor is the agent pointer of
 * a locked buffer and holds one lock count until its deleter runs;
 * device_id is the GPU agent's index in enumeration order; kDLROCMHost is
 * the host pointer and locks nothing. Nothing here touches a GPU.
 */
#include <dlpack/dlpack.h>

#include "hsa_stub_test.h"

static int rocm_tensor_holds_lock_until_deleter(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m, s;
	DLManagedTensor *t = NULL;
	uint64_t g1;
	void *ap;

	T_STUB();
	g1 = stub.gpu(1);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 64, 48,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_matrix_sub(&m, 3, 5, 10, 10, &s), 0);
	/* Not locked: nothing to point at. */
	T_EQ(gpubuf_matrix_to_dlpack(&s, kDLROCM, 0, &t), -ENXIO);
	T_ERR_HAS("not locked for HSA GPU agent 0");
	T_CHECK(t == NULL);
	T_EQ(gpubuf_hsa_lock(m.buf, &g1, 1, &ap), 0);
	/* Locked for GPU agent 1 only: device 0 is refused, 1 works. */
	T_EQ(gpubuf_matrix_to_dlpack(&s, kDLROCM, 0, &t), -ENXIO);
	T_EQ(gpubuf_matrix_to_dlpack(&s, kDLROCM, 2, &t), -ENXIO);
	T_EQ(gpubuf_matrix_to_dlpack(&s, kDLROCM, -1, &t), -EINVAL);
	T_EQ(gpubuf_matrix_to_dlpack(&s, kDLROCM, 1, &t), 0);
	T_EQ(t->dl_tensor.device.device_type, kDLROCM);
	T_EQ(t->dl_tensor.device.device_id, 1);
	T_CHECK(t->dl_tensor.data == (char *)ap + s.offset);
	T_EQ(t->dl_tensor.byte_offset, 0);
	T_EQ(t->dl_tensor.shape[0], 10);
	T_EQ(t->dl_tensor.strides[0], (int64_t)m.ld);
	T_EQ(t->dl_tensor.strides[1], 1);
	T_EQ(gpubuf_refcount(m.buf), 2);
	stub.reset_log();
	/* The tensor's count keeps the lock after ours is gone... */
	T_EQ(gpubuf_hsa_unlock(m.buf), 0);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 0);
	T_CHECK(stub.is_locked(gpubuf_ptr(m.buf)));
	/* ...and past the matrix's own reference. */
	gpubuf_matrix_release(&m);
	T_CHECK(stub.is_locked(t->dl_tensor.data == (char *)ap + s.offset ?
			       (void *)((uintptr_t)ap & ~((uintptr_t)0xff << 48)) :
			       NULL));
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 0);
	t->deleter(t);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 1);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int rocm_tensor_then_unlock_by_deleter_first(void)
{
	struct gpubuf_ctx *ctx = t_open();
	DLManagedTensor *t;
	struct gpubuf_matrix m;
	void *ap;

	T_STUB();
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F64, 4, 4,
				 GPUBUF_COL_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_hsa_lock(m.buf, NULL, 0, &ap), 0);
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLROCM, 0, &t), 0);
	T_EQ(t->dl_tensor.strides[0], 1);
	T_EQ(t->dl_tensor.strides[1], (int64_t)m.ld);
	stub.reset_log();
	t->deleter(t);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 0);
	T_EQ(gpubuf_hsa_unlock(m.buf), 0);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 1);
	T_EQ(gpubuf_hsa_unlock(m.buf), -ENXIO);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int rocm_host_tensor_locks_nothing(void)
{
	struct gpubuf_ctx *ctx = t_open();
	DLManagedTensor *t;
	struct gpubuf_matrix m;

	T_STUB();
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_I32, 8, 8,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	stub.reset_log();
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLROCMHost, 1, &t), -EINVAL);
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLROCMHost, 0, &t), 0);
	T_CHECK(t->dl_tensor.data == gpubuf_ptr(m.buf));
	T_EQ(t->dl_tensor.device.device_type, kDLROCMHost);
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"), 0);
	T_EQ(stub.locks(), 0);
	t->deleter(t);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 0);
	T_EQ(gpubuf_hsa_unlock(m.buf), -ENXIO);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

#define T_CASES(X)							\
	X(rocm_tensor_holds_lock_until_deleter, "", T_ANY)		\
	X(rocm_tensor_then_unlock_by_deleter_first, "", T_ANY)		\
	X(rocm_host_tensor_locks_nothing, "", T_ANY)

T_STUB_MAIN(T_CASES)
