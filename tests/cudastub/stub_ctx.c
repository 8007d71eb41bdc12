// SPDX-License-Identifier: MIT
/*
 * The stand-in libcuda.so.1 (stub.h): cuInit and the version, devices and
 * their attributes, primary contexts (retained, released, destroyed with
 * what lives in them) and the per-thread stack of current contexts.
 */
#include <stdio.h>

#include "stub.h"

__thread struct stub_ctx_stack stub_tls;

struct CUctx_st *stub_current(void)
{
	return stub_tls.depth ? stub_tls.ctx[stub_tls.depth - 1] : NULL;
}

struct CUctx_st *stub_need_ctx(const char *name)
{
	struct CUctx_st *cur = stub_current();

	if (!cur)
		stub_violation("%s without a current context", name);
	return cur;
}

int stub_valid_device(CUdevice d)
{
	return d >= 0 && d < S.ndev;
}

/* ---- devices and contexts ----------------------------------------------- */

int stub_attr_value(int device, CUdevice_attribute attr)
{
	int v;

	switch (attr) {
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
	case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		v = 9;
		break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		v = 132;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		v = 1024;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
		v = 2048;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
		v = 48 * 1024;
		break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
		v = 32;
		break;
	default:
		v = 0;
		break;
	}
	/* Later items win, so "*:X=0,1:X=1" reads naturally. */
	for (int i = 0; i < S.nattr; i++)
		if ((int)attr == S.attr[i].attr &&
		    (S.attr[i].device < 0 || S.attr[i].device == device))
			v = S.attr[i].value;
	return v;
}

CUresult CUDAAPI stub_cuInit(unsigned int flags)
{
	struct stub_rec c;
	CUresult r;

	stub_begin(&c, STUB_ID_cuInit);
	c.flags = flags;
	STUB_ENTER(&c, "cuInit", 0);
	if (flags)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	r = S.init_result;
	if (r == CUDA_SUCCESS)
		S.inited = 1;
	return stub_end(&c, r);
}

CUresult CUDAAPI stub_cuDriverGetVersion(int *version)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuDriverGetVersion);
	STUB_ENTER(&c, "cuDriverGetVersion", 0);
	if (!version)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	*version = S.driver_version;
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuGetErrorName(CUresult error, const char **str)
{
	struct stub_rec c;
	const char *name;

	stub_begin(&c, STUB_ID_cuGetErrorName);
	c.flags = (unsigned long long)error;
	STUB_ENTER(&c, "cuGetErrorName", 0);
	if (!str)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	name = stub_err_name(error);
	*str = name;
	return stub_end(&c, name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

CUresult CUDAAPI stub_cuDeviceGetCount(int *count)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuDeviceGetCount);
	STUB_ENTER(&c, "cuDeviceGetCount", 1);
	if (!count)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	*count = S.ndev;
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuDeviceGet(CUdevice *dev, int ordinal)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuDeviceGet);
	c.device = ordinal;
	STUB_ENTER(&c, "cuDeviceGet", 1);
	if (!dev)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	if (!stub_valid_device(ordinal))
		return stub_end(&c, CUDA_ERROR_INVALID_DEVICE);
	*dev = ordinal;
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuDeviceGetAttribute(int *value,
					   CUdevice_attribute attr,
					   CUdevice dev)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuDeviceGetAttribute);
	c.device = dev;
	c.flags = (unsigned long long)attr;
	STUB_ENTER(&c, "cuDeviceGetAttribute", 1);
	if (!value)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	if (!stub_valid_device(dev))
		return stub_end(&c, CUDA_ERROR_INVALID_DEVICE);
	*value = stub_attr_value(dev, attr);
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuDeviceGetName(char *name, int len, CUdevice dev)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuDeviceGetName);
	c.device = dev;
	STUB_ENTER(&c, "cuDeviceGetName", 1);
	if (!name || len <= 0)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	if (!stub_valid_device(dev))
		return stub_end(&c, CUDA_ERROR_INVALID_DEVICE);
	snprintf(name, (size_t)len, "custub stand-in device %d", dev);
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuDeviceGetPCIBusId(char *id, int len, CUdevice dev)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuDeviceGetPCIBusId);
	c.device = dev;
	STUB_ENTER(&c, "cuDeviceGetPCIBusId", 1);
	if (!id || len <= 0)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	if (!stub_valid_device(dev))
		return stub_end(&c, CUDA_ERROR_INVALID_DEVICE);
	snprintf(id, (size_t)len, "%s", S.pci[dev]);
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuDevicePrimaryCtxRetain(CUcontext *pctx,
					       CUdevice dev)
{
	struct stub_rec c;
	struct CUctx_st *ctx;

	stub_begin(&c, STUB_ID_cuDevicePrimaryCtxRetain);
	c.device = dev;
	STUB_ENTER(&c, "cuDevicePrimaryCtxRetain", 1);
	if (!pctx)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	if (!stub_valid_device(dev))
		return stub_end(&c, CUDA_ERROR_INVALID_DEVICE);
	ctx = &S.ctx[dev];
	if (!ctx->retains++)
		ctx->gen++;
	*pctx = ctx;
	return stub_end(&c, CUDA_SUCCESS);
}

/* The last release destroys the context and what lives in it. */
static void stub_destroy_ctx(struct CUctx_st *ctx)
{
	for (int i = 0; i < stub_tls.depth; i++)
		if (stub_tls.ctx[i] == ctx)
			stub_violation("primary context of device %d destroyed while current",
				       ctx->device);
	for (int i = 0; i < STUB_MAX_REGS; i++) {
		struct stub_reg *g = &S.reg[i];

		if (!g->live || g->device != ctx->device)
			continue;
		stub_violation("registration of %#lx (%zu bytes) lost: primary context of device %d destroyed",
			       (unsigned long)g->base, g->size, ctx->device);
		g->live = 0;
	}
	/* Modules and streams die with it; their handles go stale (gen). */
}

CUresult CUDAAPI stub_cuDevicePrimaryCtxRelease(CUdevice dev)
{
	struct stub_rec c;
	struct CUctx_st *ctx;

	stub_begin(&c, STUB_ID_cuDevicePrimaryCtxRelease);
	c.device = dev;
	STUB_ENTER(&c, "cuDevicePrimaryCtxRelease", 1);
	if (!stub_valid_device(dev))
		return stub_end(&c, CUDA_ERROR_INVALID_DEVICE);
	ctx = &S.ctx[dev];
	if (!ctx->retains) {
		stub_violation("cuDevicePrimaryCtxRelease(%d) without a retain",
			       dev);
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	}
	if (!--ctx->retains)
		stub_destroy_ctx(ctx);
	return stub_end(&c, CUDA_SUCCESS);
}

static int stub_is_ctx(const struct CUctx_st *ctx)
{
	for (int d = 0; d < S.ndev; d++)
		if (ctx == &S.ctx[d])
			return 1;
	return 0;
}

CUresult CUDAAPI stub_cuCtxPushCurrent(CUcontext ctx)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuCtxPushCurrent);
	c.ptr = ctx;
	STUB_ENTER(&c, "cuCtxPushCurrent", 1);
	if (!ctx || !stub_is_ctx(ctx)) {
		stub_violation("cuCtxPushCurrent(%p): not a context", (void *)ctx);
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	}
	c.device = ctx->device;
	if (!ctx->retains) {
		stub_violation("cuCtxPushCurrent of device %d's released primary context",
			       ctx->device);
		return stub_end(&c, CUDA_ERROR_CONTEXT_IS_DESTROYED);
	}
	if (stub_tls.depth == STUB_STACK_DEPTH) {
		stub_violation("context stack deeper than %d", STUB_STACK_DEPTH);
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	}
	stub_tls.ctx[stub_tls.depth++] = ctx;
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuCtxPopCurrent(CUcontext *pctx)
{
	struct stub_rec c;
	struct CUctx_st *ctx;

	stub_begin(&c, STUB_ID_cuCtxPopCurrent);
	STUB_ENTER(&c, "cuCtxPopCurrent", 1);
	if (!stub_tls.depth) {
		stub_violation("cuCtxPopCurrent with no current context");
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	}
	ctx = stub_tls.ctx[--stub_tls.depth];
	if (pctx)
		*pctx = ctx;
	return stub_end(&c, CUDA_SUCCESS);
}
