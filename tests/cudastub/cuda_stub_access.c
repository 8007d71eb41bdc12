// SPDX-License-Identifier: MIT
/*
 * Description: what a device may do with a buffer, against a stand-in
 * driver (stub_*.c, through LD_LIBRARY_PATH; cuda_stub_test.h runs each
 * test in a fresh process): read-only registrations, a promise kept by the
 * library on writable pages and by the driver on read-only ones, writable
 * requests they refuse, never IOMEMORY; and
 * the device pointers that matrix views and kDLCUDA DLPack tensors
 * (dlpack.c) carry, a tensor holding a registration count until its
 * deleter runs. Nothing here touches a GPU.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <dlpack/dlpack.h>
#include <linux/dma-heap.h>

#include "cuda_stub_test.h"
#include "pfnmap_import.h"

/* ---- read-only registration --------------------------------------------- */

/*
 * A read-only request on a writable mapping registers it writable (no
 * CU_MEMHOSTREGISTER_READ_ONLY, which many hosts do not support) and the
 * library keeps the promise: the views say read-only, a writable request
 * is refused while the registration stands.
 */
static int read_only_request_registers_writable(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 2);
	uint64_t dp = 0, dp2 = 0;
	unsigned int rflags = 0;
	struct gpubuf_cuda_matrix cm;
	struct gpubuf_matrix m;
	struct t_call c;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp),
	     0);
	T_EQ(dp, T_DEVPTR(0, gpubuf_ptr(buf)));
	T_EQ(t_last("cuMemHostRegister", &c), 0);
	T_EQ(c.flags, T_PD);
	T_EQ(stub.registration(gpubuf_ptr(buf), &rflags, NULL, NULL), 0);
	T_EQ(rflags, T_PD);
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_F32, 4, 4, 4,
				GPUBUF_ROW_MAJOR, &m), 0);
	T_EQ(gpubuf_cuda_matrix_view(&m, 0, &cm), 0);
	T_EQ(cm.flags, GPUBUF_CUDA_MATRIX_READ_ONLY);
	/* The GPU may not write through a read-only registration. */
	stub.reset_log();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp2), -EBUSY);
	T_ERR_HAS("read-only");
	T_EQ(stub.log_count("*"), 0);
	T_EQ(gpubuf_cuda_register(buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp2),
	     0);
	T_EQ(dp2, dp);
	T_EQ(stub.log_count("cuMemHostRegister"), 0);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(gpubuf_cuda_unregister(buf, 0), -ENXIO);
	/* Once undone, the buffer may be registered for writing. */
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp2), 0);
	T_EQ(t_last("cuMemHostRegister", &c), 0);
	T_EQ(c.flags, T_PD);
	T_EQ(gpubuf_cuda_matrix_view(&m, 0, &cm), 0);
	T_EQ(cm.flags, 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * CUSTUB_ATTR=0:READ_ONLY_HOST_REGISTER_SUPPORTED=0, as a public report
 * shows for a B300 host: a read-only request still works (it failed with
 * -EOPNOTSUPP before, and so did every GEMM case of tests/lib/cuda.c).
 */
static int read_only_request_without_driver_support(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	struct t_call c;
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp),
	     0);
	T_EQ(t_last("cuMemHostRegister", &c), 0);
	T_EQ(c.flags, T_PD);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), -EBUSY);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(stub.registrations(), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* CUSTUB_DEVICES=2 */
static int read_only_registration_refuses_writable_other_device(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp),
	     0);
	stub.reset_log();
	T_EQ(gpubuf_cuda_register(buf, 1, 0, &dp), -EBUSY);
	T_ERR_HAS("read-only");
	T_EQ(stub.log_count("*"), 0);
	T_EQ(stub.retains(1), 0);
	T_EQ(gpubuf_cuda_register(buf, 1, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp),
	     0);
	T_EQ(dp, T_DEVPTR(1, gpubuf_ptr(buf)));
	T_EQ(stub.log_count("cuMemHostRegister"), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * A dma-buf fd opened O_RDONLY, from gpubuf.ko (the guest) or a dma-heap;
 * the memfd backend has none. Sets *fd, or returns the skip.
 */
static int t_read_only_dmabuf(size_t len, int *fd)
{
	struct gpubuf_alloc ga = {
		.size = len,
		.fd_flags = O_RDONLY | O_CLOEXEC,
		.numa_node = GPUBUF_NUMA_ANY,
	};
	struct dma_heap_allocation_data ha = {
		.len = len,
		.fd_flags = O_RDONLY | O_CLOEXEC,
	};
	int dev, err;

	dev = open("/dev/gpubuf", O_RDWR | O_CLOEXEC);
	if (dev >= 0) {
		err = ioctl(dev, GPUBUF_IOC_ALLOC, &ga) ? -errno : 0;
		close(dev);
		if (err)
			return t_skip("GPUBUF_IOC_ALLOC: %s", strerror(-err));
		*fd = ga.fd;
		return 0;
	}
	dev = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
	if (dev < 0)
		return t_skip("neither /dev/gpubuf nor /dev/dma_heap/system for a read-only dma-buf (the guest run has gpubuf.ko)");
	err = ioctl(dev, DMA_HEAP_IOCTL_ALLOC, &ha) ? -errno : 0;
	close(dev);
	if (err)
		return t_skip("dma-heap allocation: %s", strerror(-err));
	*fd = (int)ha.fd;
	return 0;
}

/* A new context and a buffer imported from a read-only dma-buf, or the skip. */
static int t_read_only_buf(struct gpubuf_ctx **ctx, struct gpubuf **buf)
{
	int fd = -1, err;

	err = t_read_only_dmabuf(4 * t_ps(), &fd);
	if (err)
		return err;
	*ctx = t_open();
	err = gpubuf_import(*ctx, fd, buf);
	close(fd);
	T_EQ(err, 0);
	T_EQ(gpubuf_is_readonly(*buf), 1);
	return 0;
}

/*
 * A buffer mapped read-only (a O_RDONLY dma-buf import) cannot be pinned
 * for writing: it is registered with the driver's READ_ONLY whatever the
 * caller asks.
 */
static int read_only_buffer_gets_read_only(void)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf *buf;
	struct t_call c;
	uint64_t dp;
	int err = t_read_only_buf(&ctx, &buf);

	if (err)
		return err;
	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	T_EQ(t_last("cuMemHostRegister", &c), 0);
	T_EQ(c.flags, T_PD | T_RO);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * CUSTUB_ATTR=0:READ_ONLY_HOST_REGISTER_SUPPORTED=0: a read-only mapping
 * needs the driver's READ_ONLY, so there it is refused, saying why, before
 * the driver is asked to register anything.
 */
static int read_only_buffer_without_driver_support(void)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf *buf;
	uint64_t dp;
	int err = t_read_only_buf(&ctx, &buf);

	if (err)
		return err;
	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp),
	     -EOPNOTSUPP);
	T_ERR_HAS("READ_ONLY_HOST_REGISTER_SUPPORTED");
	T_EQ(stub.log_count("cuMemHostRegister"), 0);
	T_EQ(stub.retains(0), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * Issue 23, defect 4: a dma-buf whose exporter maps it with remap_pfn_range
 * (VM_PFNMAP/VM_IO: the dma-heap system heap, many DRM drivers) has no
 * pages the NVIDIA driver could pin (cuMemHostRegister pins with
 * pin_user_pages, which refuses such vmas). Refused before the driver is
 * asked, saying why; a buffer gpubuf allocated still registers.
 */
static int pfnmap_import_refused(void)
{
	struct gpubuf_ctx *ctx = NULL;
	struct gpubuf *buf = NULL, *own;
	uint64_t dp = 7;
	int err = t_pfnmap_import(16 * t_ps(), &ctx, &buf);

	if (err)
		return err;
	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), -EOPNOTSUPP);
	T_ERR_HAS("VM_PFNMAP");
	T_ERR_HAS("cuMemHostRegister");
	T_EQ(dp, 7);
	T_EQ(stub.log_count("cuMemHostRegister"), 0);
	T_EQ(stub.registrations(), 0);
	/* Asked again, the same answer (kept with the buffer). */
	T_EQ(gpubuf_cuda_register(buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp),
	     -EOPNOTSUPP);
	T_EQ(gpubuf_cuda_unregister(buf, 0), -ENXIO);
	own = t_buf(ctx, 1);
	T_EQ(gpubuf_cuda_register(own, 0, 0, &dp), 0);
	gpubuf_unref(own);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * The stand-in pins for writing only writable pages, as the kernel does:
 * what makes read_only_buffer_gets_read_only meaningful. The library
 * passes the refusal on and keeps nothing. It takes the pages' protection
 * from how it mapped the buffer, so protection changed behind its back
 * fails a read-only request too (registered writable, as the mapping was
 * made), and works again once restored.
 */
static int writable_pin_of_read_only_pages_refused(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 2);
	uint64_t dp;

	T_STUB();
	T_EQ(mprotect(gpubuf_ptr(buf), gpubuf_size(buf), PROT_READ), 0);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), -EINVAL);
	T_ERR_HAS("CUDA_ERROR_INVALID_VALUE");
	T_EQ(stub.registrations(), 0);
	T_EQ(stub.retains(0), 1);
	T_EQ(gpubuf_cuda_register(buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp),
	     -EINVAL);
	T_EQ(stub.registrations(), 0);
	T_EQ(stub.retains(0), 1);
	T_EQ(mprotect(gpubuf_ptr(buf), gpubuf_size(buf),
		      PROT_READ | PROT_WRITE), 0);
	T_EQ(gpubuf_cuda_register(buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp),
	     0);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* CUSTUB_DEVICES=2: every way of registering, never IOMEMORY. */
static int register_flags_never_iomemory(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *a = t_buf(ctx, 1), *b = t_buf(ctx, 1);
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_cuda_register(a, 0, 0, &dp), 0);
	T_EQ(gpubuf_cuda_register(a, 1, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp), 0);
	T_EQ(gpubuf_cuda_register(b, 1, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp), 0);
	T_EQ(gpubuf_cuda_register(b, 0, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp), 0);
	gpubuf_unref(a);
	gpubuf_unref(b);
	T_EQ(stub.flags_seen("cuMemHostRegister"), T_PD);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* ---- device pointers: matrix views, DLPack kDLCUDA (dlpack.c) ----------- */

/* CUSTUB_DEVICES=2 */
static int matrix_view_device_pointer(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 2);
	struct gpubuf_cuda_matrix cm;
	struct gpubuf_matrix m;
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_matrix_view(buf, 256, GPUBUF_DTYPE_F64, 4, 3, 5,
				GPUBUF_COL_MAJOR, &m), 0);
	T_EQ(gpubuf_cuda_matrix_view(&m, 0, &cm), -ENXIO);
	T_ERR_HAS("not registered");
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	memset(&cm, 0, sizeof(cm));
	T_EQ(gpubuf_cuda_matrix_view(&m, 0, &cm), 0);
	T_EQ(cm.devptr, dp + 256);
	T_EQ(cm.rows, 4);
	T_EQ(cm.cols, 3);
	T_EQ(cm.ld, 5);
	T_EQ(cm.dtype, GPUBUF_DTYPE_F64);
	T_EQ(cm.layout, GPUBUF_COL_MAJOR);
	T_EQ(cm.device, 0);
	/* Registered, but not on device 1; and no device 2. */
	T_EQ(gpubuf_cuda_matrix_view(&m, 1, &cm), -ENXIO);
	T_ERR_HAS("device 1");
	T_EQ(gpubuf_cuda_matrix_view(&m, 2, &cm), -ENXIO);
	T_EQ(gpubuf_cuda_register(buf, 1, 0, &dp), 0);
	T_EQ(gpubuf_cuda_matrix_view(&m, 1, &cm), 0);
	T_EQ(cm.devptr, T_DEVPTR(1, gpubuf_ptr(buf)) + 256);
	T_EQ(cm.device, 1);
	T_EQ(gpubuf_cuda_unregister(buf, 1), 0);
	T_EQ(gpubuf_cuda_matrix_view(&m, 1, &cm), -ENXIO);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(gpubuf_cuda_matrix_view(&m, 0, &cm), -ENXIO);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * CUSTUB_DEVICES=2: a kDLCUDA tensor needs the buffer registered on its
 * device, carries the device pointer, and holds one registration count
 * until its deleter runs.
 */
static int dlpack_cuda_holds_registration(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 2);
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
	struct DLManagedTensorVersioned *tv = NULL;
#else
	DLManagedTensor *t2 = NULL;
#endif
	DLManagedTensor *t = NULL;
	struct gpubuf_matrix m;
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_matrix_view(buf, 512, GPUBUF_DTYPE_F32, 8, 8, 8,
				GPUBUF_ROW_MAJOR, &m), 0);
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLCUDA, 0, &t), -ENXIO);
	T_CHECK(t == NULL);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLCUDA, 1, &t), -ENXIO);
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLCUDA, 0, &t), 0);
	T_CHECK((uint64_t)(uintptr_t)t->dl_tensor.data == dp + 512);
	T_EQ(t->dl_tensor.byte_offset, 0);
	T_EQ(t->dl_tensor.device.device_type, kDLCUDA);
	T_EQ(t->dl_tensor.device.device_id, 0);
	/* Two tensors, two counts. */
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
	T_EQ(gpubuf_matrix_to_dlpack_versioned(&m, kDLCUDA, 0, &tv), 0);
	T_CHECK((uint64_t)(uintptr_t)tv->dl_tensor.data == dp + 512);
#else
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLCUDA, 0, &t2), 0);
	T_CHECK((uint64_t)(uintptr_t)t2->dl_tensor.data == dp + 512);
#endif

	stub.reset_log();
	/* The caller's count and buffer go; the tensors keep theirs. */
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	gpubuf_unref(buf);
	T_EQ(stub.log_count("cuMemHostUnregister"), 0);
	T_EQ(stub.registrations(), 1);
	t->deleter(t);
	T_EQ(stub.log_count("cuMemHostUnregister"), 0);
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
	tv->deleter(tv);
#else
	t2->deleter(t2);
#endif
	T_EQ(stub.log_count("cuMemHostUnregister"), 1);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * A read-only registration of a writable buffer stays read-only wherever
 * its device pointer goes: the device view says so, gemv/gemm refuse it
 * as an output without calling the driver, and a kDLCUDA export is
 * refused (legacy) or flagged (versioned), never handed out writable.
 */
static int read_only_registration_stays_read_only(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 4), *wbuf = t_buf(ctx, 4);
	struct gpubuf_cuda_matrix ca, cc;
	struct gpubuf_matrix a, c;
	DLManagedTensor *t = NULL;
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_F32, 16, 16, 16,
				GPUBUF_ROW_MAJOR, &c), 0);
	T_EQ(gpubuf_matrix_view(wbuf, 0, GPUBUF_DTYPE_F32, 16, 16, 16,
				GPUBUF_ROW_MAJOR, &a), 0);
	T_EQ(gpubuf_cuda_register(buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp),
	     0);
	T_EQ(gpubuf_cuda_register(wbuf, 0, 0, &dp), 0);
	T_EQ(gpubuf_cuda_matrix_view(&c, 0, &cc), 0);
	T_EQ(cc.flags, GPUBUF_CUDA_MATRIX_READ_ONLY);
	T_EQ(gpubuf_cuda_matrix_view(&a, 0, &ca), 0);
	T_EQ(ca.flags, 0);
	stub.reset_log();
	T_EQ(gpubuf_cuda_gemm(1.0, &ca, &ca, 0.0, &cc, NULL), -EROFS);
	T_ERR_HAS("read-only");
	cc.rows = 16;
	cc.cols = 1;
	T_EQ(gpubuf_cuda_gemv(1.0, &ca, &ca, 0.0, &cc, NULL), -EINVAL);
	ca.cols = 1;
	T_EQ(gpubuf_cuda_matrix_view(&a, 0, &ca), 0);
	T_EQ(gpubuf_cuda_gemv(1.0, &ca, &cc, 0.0, &cc, NULL), -EROFS);
	T_EQ(stub.log_count("*"), 0);
	T_EQ(gpubuf_cuda_matrix_view(&c, 0, &cc), 0);
	T_EQ(gpubuf_matrix_to_dlpack(&c, kDLCUDA, 0, &t), -EROFS);
	T_CHECK(t == NULL);
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
	{
		struct DLManagedTensorVersioned *tv = NULL;

		T_EQ(gpubuf_matrix_to_dlpack_versioned(&c, kDLCUDA, 0, &tv),
		     0);
		T_CHECK(tv->flags & DLPACK_FLAG_BITMASK_READ_ONLY);
		tv->deleter(tv);
	}
#endif
	/* The refused export kept no count: one unregister undoes it all. */
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(gpubuf_cuda_unregister(buf, 0), -ENXIO);
	gpubuf_unref(buf);
	gpubuf_unref(wbuf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* A pool never hands out a buffer that is still registered. */
static int pool_drops_registered_buffers(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_pool_opts po = GPUBUF_POOL_OPTS_INIT;
	struct gpubuf_pool_stats st;
	struct gpubuf_pool *pool;
	struct gpubuf *buf;
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_pool_create(ctx, &po, &pool), 0);
	T_EQ(gpubuf_pool_get(pool, 1 << 20, &buf), 0);
	T_EQ(gpubuf_cuda_register(buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp),
	     0);
	stub.reset_log();
	T_EQ(gpubuf_pool_put(pool, buf), 0);
	T_EQ(stub.log_count("cuMemHostUnregister"), 1);
	gpubuf_pool_stats(pool, &st);
	T_EQ(st.drops, 1);
	T_EQ(st.cached_buffers, 0);
	/* The next buffer of that class registers writable, from scratch. */
	T_EQ(gpubuf_pool_get(pool, 1 << 20, &buf), 0);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	T_EQ(stub.log_count("cuMemHostRegister"), 1);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(gpubuf_pool_put(pool, buf), 0);
	gpubuf_pool_stats(pool, &st);
	T_EQ(st.cached_buffers, 1);
	gpubuf_pool_destroy(pool);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * A child after fork() must not call into the driver state it inherited:
 * every CUDA call there is -ENODEV, and its last unref of a registered
 * buffer forgets the parent's registration without a driver call.
 */
static int fork_child_never_calls_driver(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 2), *other = t_buf(ctx, 1);
	uint64_t dp;
	int status;
	pid_t pid;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	stub.reset_log();
	pid = fork();
	T_CHECK(pid >= 0);
	if (pid == 0) {
		int n, bad = 0;

		bad |= gpubuf_cuda_device_count(&n) != -ENODEV;
		bad |= !strstr(gpubuf_last_error(), "fork");
		bad |= gpubuf_cuda_register(other, 0, 0, &dp) != -ENODEV;
		bad |= gpubuf_cuda_unregister(buf, 0) != -ENODEV;
		gpubuf_unref(buf);
		bad |= stub.log_count("*") != 0;
		_exit(bad);
	}
	T_EQ(waitpid(pid, &status, 0), pid);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The parent's registration is untouched. */
	T_EQ(stub.registrations(), 1);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	gpubuf_unref(buf);
	gpubuf_unref(other);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* ---- the tests, each run in a fresh process ----------------------------- */

/* name, environment ("K=V K=V") */
#define T_CASES(X)							\
	X(read_only_request_registers_writable, "")			\
	X(read_only_request_without_driver_support,			\
	  "CUSTUB_ATTR=0:READ_ONLY_HOST_REGISTER_SUPPORTED=0")		\
	X(read_only_registration_refuses_writable_other_device,	\
	  "CUSTUB_DEVICES=2")						\
	X(read_only_buffer_gets_read_only, "")				\
	X(read_only_buffer_without_driver_support,			\
	  "CUSTUB_ATTR=0:READ_ONLY_HOST_REGISTER_SUPPORTED=0")		\
	X(writable_pin_of_read_only_pages_refused, "")			\
	X(pfnmap_import_refused, "")					\
	X(register_flags_never_iomemory, "CUSTUB_DEVICES=2")		\
	X(matrix_view_device_pointer, "CUSTUB_DEVICES=2")		\
	X(dlpack_cuda_holds_registration, "CUSTUB_DEVICES=2")		\
	X(read_only_registration_stays_read_only, "")			\
	X(pool_drops_registered_buffers, "")				\
	X(fork_child_never_calls_driver, "")

T_STUB_MAIN(T_CASES)
