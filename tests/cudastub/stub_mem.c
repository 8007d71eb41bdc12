// SPDX-License-Identifier: MIT
/*
 * The stand-in libcuda.so.1 (stub.h): host memory registration and the
 * device pointers of registered memory, then what is trivial here but
 * whose handles are still checked: streams, events, device and pinned
 * host allocations, copies and memset.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "stub.h"

/* ---- host memory registration ----------------------------------------- */

enum { STUB_MAPPED, STUB_READABLE, STUB_WRITABLE };

/* Whether /proc/self/maps covers [base, base + size) with at least need. */
static int stub_range_ok(uintptr_t base, size_t size, int need)
{
	uintptr_t at = base, end = base + size;
	unsigned long lo, hi;
	char *line = NULL, perms[8];
	size_t cap = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return 0;
	/* Entries are sorted; walk them while they cover [at, end). */
	while (at < end && getline(&line, &cap, f) > 0) {
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
			continue;
		if (hi <= at)
			continue;
		if (lo > at)
			break;
		if ((need >= STUB_READABLE && perms[0] != 'r') ||
		    (need >= STUB_WRITABLE && perms[1] != 'w'))
			break;
		at = hi;
	}
	free(line);
	fclose(f);
	return at >= end;
}

static struct stub_reg *stub_find_reg(uintptr_t p, size_t size)
{
	for (int i = 0; i < STUB_MAX_REGS; i++) {
		struct stub_reg *g = &S.reg[i];

		if (g->live && p < g->base + g->size && g->base < p + size)
			return g;
	}
	return NULL;
}

CUresult CUDAAPI stub_cuMemHostRegister(void *p, size_t size,
					unsigned int flags)
{
	const unsigned int known = CU_MEMHOSTREGISTER_PORTABLE |
				   CU_MEMHOSTREGISTER_DEVICEMAP |
				   CU_MEMHOSTREGISTER_IOMEMORY |
				   CU_MEMHOSTREGISTER_READ_ONLY;
	uintptr_t base = (uintptr_t)p;
	struct CUctx_st *cur;
	struct stub_reg *g = NULL;
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemHostRegister);
	c.ptr = p;
	c.size = size;
	c.flags = flags;
	STUB_ENTER(&c, "cuMemHostRegister", 1);
	cur = stub_need_ctx("cuMemHostRegister");
	if (!cur)
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (!p || !size || base + size < base || (flags & ~known))
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	/* Device memory behind a BAR; never right for gpubuf's pages. */
	if (flags & CU_MEMHOSTREGISTER_IOMEMORY) {
		stub_violation("cuMemHostRegister(%p) with IOMEMORY", p);
		return stub_end(&c, CUDA_ERROR_NOT_SUPPORTED);
	}
	if (!stub_attr_value(cur->device,
			     CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED) ||
	    ((flags & CU_MEMHOSTREGISTER_READ_ONLY) &&
	     !stub_attr_value(cur->device,
			      CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED)))
		return stub_end(&c, CUDA_ERROR_NOT_SUPPORTED);
	if (stub_find_reg(base, size))
		return stub_end(&c, CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	/* Pinning for writing fails on a PROT_READ page, as in the kernel. */
	if (!stub_range_ok(base, size, (flags & CU_MEMHOSTREGISTER_READ_ONLY) ?
			   STUB_READABLE : STUB_WRITABLE))
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	for (int i = 0; i < STUB_MAX_REGS && !g; i++)
		if (!S.reg[i].live)
			g = &S.reg[i];
	if (!g)
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	g->live = 1;
	g->device = cur->device;
	g->base = base;
	g->size = size;
	g->flags = flags;
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuMemHostUnregister(void *p)
{
	uintptr_t base = (uintptr_t)p;
	struct stub_reg *g;
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemHostUnregister);
	c.ptr = p;
	STUB_ENTER(&c, "cuMemHostUnregister", 1);
	if (!stub_need_ctx("cuMemHostUnregister"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	g = stub_find_reg(base, 1);
	if (!g || g->base != base) {
		stub_violation("cuMemHostUnregister(%p): not a registration's start",
			       p);
		return stub_end(&c, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	}
	c.size = g->size;
	c.flags = g->flags;
	/* The pages were pinned through that mapping: it must still exist. */
	if (!stub_range_ok(g->base, g->size, STUB_MAPPED))
		stub_violation("cuMemHostUnregister(%p) after the range was unmapped",
			       p);
	g->live = 0;
	return stub_end(&c, CUDA_SUCCESS);
}

/* Distinct per device and invertible: host addresses are below 2^48. */
static CUdeviceptr stub_devptr(int device, uintptr_t host)
{
	return (CUdeviceptr)host | ((CUdeviceptr)(device + 1) << 48);
}

int stub_devptr_host(int device, uint64_t dptr, uintptr_t *host)
{
	uintptr_t h = (uintptr_t)(dptr & ((1ull << 48) - 1));
	struct stub_reg *g;

	if (dptr >> 48 != (uint64_t)device + 1)
		return -1;
	g = stub_find_reg(h, 1);
	if (!g || !(g->flags & CU_MEMHOSTREGISTER_DEVICEMAP) ||
	    (!(g->flags & CU_MEMHOSTREGISTER_PORTABLE) && g->device != device))
		return -1;
	*host = h;
	return 0;
}

CUresult CUDAAPI stub_cuMemHostGetDevicePointer(CUdeviceptr *pdptr,
						void *p,
						unsigned int flags)
{
	uintptr_t host = (uintptr_t)p;
	struct CUctx_st *cur;
	struct stub_reg *g;
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemHostGetDevicePointer);
	c.ptr = p;
	c.flags = flags;
	STUB_ENTER(&c, "cuMemHostGetDevicePointer", 1);
	cur = stub_need_ctx("cuMemHostGetDevicePointer");
	if (!cur)
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (!pdptr || flags)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	g = stub_find_reg(host, 1);
	if (!g || !(g->flags & CU_MEMHOSTREGISTER_DEVICEMAP))
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	/* Only PORTABLE registrations are visible from other contexts. */
	if (!(g->flags & CU_MEMHOSTREGISTER_PORTABLE) &&
	    g->device != cur->device)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	if (!stub_attr_value(cur->device, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY))
		return stub_end(&c, CUDA_ERROR_NOT_SUPPORTED);
	*pdptr = stub_devptr(cur->device, host);
	c.size = (size_t)*pdptr;
	return stub_end(&c, CUDA_SUCCESS);
}

/* ---- streams, events, memory: trivial, but handles are checked -------- */

int stub_stream_ok(CUstream s, const struct CUctx_st *cur)
{
	if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return 1;
	return s >= S.stream && s < S.stream + STUB_MAX_STREAMS && s->live &&
	       s->device == cur->device && s->gen == cur->gen;
}

CUresult CUDAAPI stub_cuStreamCreate(CUstream *ps, unsigned int flags)
{
	struct CUstream_st *s = NULL;
	struct CUctx_st *cur;
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuStreamCreate);
	c.flags = flags;
	STUB_ENTER(&c, "cuStreamCreate", 1);
	cur = stub_need_ctx("cuStreamCreate");
	if (!cur)
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (!ps || (flags & ~CU_STREAM_NON_BLOCKING))
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	for (int i = 0; i < STUB_MAX_STREAMS && !s; i++)
		if (!S.stream[i].live)
			s = &S.stream[i];
	if (!s)
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	s->live = 1;
	s->device = cur->device;
	s->gen = cur->gen;
	*ps = s;
	c.stream = s;
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuStreamDestroy(CUstream s)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuStreamDestroy);
	c.stream = s;
	STUB_ENTER(&c, "cuStreamDestroy", 1);
	if (!(s >= S.stream && s < S.stream + STUB_MAX_STREAMS && s->live)) {
		stub_violation("cuStreamDestroy of an unknown stream");
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	s->live = 0;
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuStreamSynchronize(CUstream s)
{
	struct CUctx_st *cur;
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuStreamSynchronize);
	c.stream = s;
	STUB_ENTER(&c, "cuStreamSynchronize", 1);
	cur = stub_current();
	/* The NULL stream is the current context's. */
	if (!s && !stub_need_ctx("cuStreamSynchronize(NULL)"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (s && !(cur ? stub_stream_ok(s, cur) :
		   (s >= S.stream && s < S.stream + STUB_MAX_STREAMS && s->live))) {
		stub_violation("cuStreamSynchronize of an unknown stream");
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuEventCreate(CUevent *pe, unsigned int flags)
{
	struct CUevent_st *e = NULL;
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuEventCreate);
	c.flags = flags;
	STUB_ENTER(&c, "cuEventCreate", 1);
	if (!stub_need_ctx("cuEventCreate"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (!pe)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	for (int i = 0; i < STUB_MAX_EVENTS && !e; i++)
		if (!S.event[i].live)
			e = &S.event[i];
	if (!e)
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	e->live = 1;
	*pe = e;
	c.ptr = e;
	return stub_end(&c, CUDA_SUCCESS);
}

static int stub_event_ok(const struct CUevent_st *e)
{
	return e >= S.event && e < S.event + STUB_MAX_EVENTS && e->live;
}

CUresult CUDAAPI stub_cuEventDestroy(CUevent e)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuEventDestroy);
	c.ptr = e;
	STUB_ENTER(&c, "cuEventDestroy", 1);
	if (!stub_event_ok(e)) {
		stub_violation("cuEventDestroy of an unknown event");
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	e->live = 0;
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuEventRecord(CUevent e, CUstream s)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuEventRecord);
	c.ptr = e;
	c.stream = s;
	STUB_ENTER(&c, "cuEventRecord", 1);
	if (!stub_event_ok(e))
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuEventSynchronize(CUevent e)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuEventSynchronize);
	c.ptr = e;
	STUB_ENTER(&c, "cuEventSynchronize", 1);
	if (!stub_event_ok(e))
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuEventElapsedTime(float *ms, CUevent start,
					 CUevent end)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuEventElapsedTime);
	STUB_ENTER(&c, "cuEventElapsedTime", 1);
	if (!ms)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	if (!stub_event_ok(start) || !stub_event_ok(end))
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	*ms = 1.0f;
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuMemAlloc(CUdeviceptr *pd, size_t size)
{
	struct stub_rec c;
	int slot = -1;

	stub_begin(&c, STUB_ID_cuMemAlloc);
	c.size = size;
	STUB_ENTER(&c, "cuMemAlloc", 1);
	if (!stub_need_ctx("cuMemAlloc"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (!pd || !size)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	for (int i = 0; i < STUB_MAX_DEVALLOCS && slot < 0; i++)
		if (!S.devalloc[i].p)
			slot = i;
	if (slot < 0)
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	/* Address space only: nothing reads or writes device memory here. */
	S.devalloc[slot].p = S.next_devalloc;
	S.devalloc[slot].size = size;
	S.next_devalloc += (size + 0xfffff) & ~(CUdeviceptr)0xfffff;
	*pd = S.devalloc[slot].p;
	c.ptr = (const void *)(uintptr_t)*pd;
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuMemFree(CUdeviceptr p)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemFree);
	c.ptr = (const void *)(uintptr_t)p;
	STUB_ENTER(&c, "cuMemFree", 1);
	for (int i = 0; i < STUB_MAX_DEVALLOCS; i++) {
		if (p && S.devalloc[i].p == p) {
			S.devalloc[i].p = 0;
			c.size = S.devalloc[i].size;
			return stub_end(&c, CUDA_SUCCESS);
		}
	}
	stub_violation("cuMemFree(%#llx) of unknown device memory",
		       (unsigned long long)p);
	return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
}

CUresult CUDAAPI stub_cuMemHostAlloc(void **pp, size_t size,
				     unsigned int flags)
{
	struct stub_rec c;
	int slot = -1;
	void *p;

	stub_begin(&c, STUB_ID_cuMemHostAlloc);
	c.size = size;
	c.flags = flags;
	STUB_ENTER(&c, "cuMemHostAlloc", 1);
	if (!stub_need_ctx("cuMemHostAlloc"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (!pp || !size)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	for (int i = 0; i < STUB_MAX_HOSTALLOCS && slot < 0; i++)
		if (!S.hostalloc[i].p)
			slot = i;
	if (slot < 0)
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	/* Real memory: the caller writes it. */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	S.hostalloc[slot].p = p;
	S.hostalloc[slot].size = size;
	*pp = p;
	c.ptr = p;
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuMemFreeHost(void *p)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemFreeHost);
	c.ptr = p;
	STUB_ENTER(&c, "cuMemFreeHost", 1);
	for (int i = 0; i < STUB_MAX_HOSTALLOCS; i++) {
		if (p && S.hostalloc[i].p == p) {
			munmap(p, S.hostalloc[i].size);
			c.size = S.hostalloc[i].size;
			S.hostalloc[i].p = NULL;
			return stub_end(&c, CUDA_SUCCESS);
		}
	}
	stub_violation("cuMemFreeHost(%p) of memory cuMemHostAlloc did not give",
		       p);
	return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
}

CUresult CUDAAPI stub_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src,
					size_t size, CUstream s)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemcpyHtoDAsync);
	c.ptr = src;
	c.size = size;
	c.flags = dst;
	c.stream = s;
	STUB_ENTER(&c, "cuMemcpyHtoDAsync", 1);
	if (!stub_need_ctx("cuMemcpyHtoDAsync"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src,
					size_t size, CUstream s)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemcpyDtoHAsync);
	c.ptr = dst;
	c.size = size;
	c.flags = src;
	c.stream = s;
	STUB_ENTER(&c, "cuMemcpyDtoHAsync", 1);
	if (!stub_need_ctx("cuMemcpyDtoHAsync"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	return stub_end(&c, CUDA_SUCCESS);
}

CUresult CUDAAPI stub_cuMemsetD8Async(CUdeviceptr dst, unsigned char v,
				      size_t n, CUstream s)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemsetD8Async);
	c.ptr = (const void *)(uintptr_t)dst;
	c.size = n;
	c.flags = v;
	c.stream = s;
	STUB_ENTER(&c, "cuMemsetD8Async", 1);
	if (!stub_need_ctx("cuMemsetD8Async"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	return stub_end(&c, CUDA_SUCCESS);
}
