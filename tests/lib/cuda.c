// SPDX-License-Identifier: MIT
/*
 * Description: the CUDA layer. On a machine without an NVIDIA driver (CI,
 * the QEMU guest) every entry point fails cleanly, names the reason and
 * leaves the buffer as it was. With a driver and a GPU (tests/gpu/run.sh)
 * buffers are registered, counted and unregistered, and the library's
 * GEMV/GEMM kernels run on zero-copy views of both layouts, padded ld and
 * sub-views, checked against a CPU reference computed in double.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>
#define T_HAVE_DLPACK 1
#endif
#endif

#include "tap.h"
#include "gemm_ref.h"

/* What a CUDA call answers on this build when no driver is usable. */
static int t_no_cuda_err(void)
{
	int n;

	return gpubuf_cuda_device_count(&n);
}

static int last_error_says_why(void)
{
	const char *e = gpubuf_last_error();

	T_CHECK(e && e[0]);
	T_CHECK(strstr(e, "NVIDIA driver") || strstr(e, "CUDA"));
	return T_PASS;
}

static int no_driver_every_call_fails(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_cuda_matrix dm = { 0x1000, 4, 4, 4, GPUBUF_DTYPE_F32,
					 GPUBUF_ROW_MAJOR, 0, 0 };
	struct gpubuf_cuda_matrix dx = { 0x2000, 4, 1, 1, GPUBUF_DTYPE_F32,
					 GPUBUF_ROW_MAJOR, 0, 0 };
	struct gpubuf_cuda_matrix dy = { 0x3000, 4, 1, 1, GPUBUF_DTYPE_F32,
					 GPUBUF_ROW_MAJOR, 0, 0 };
	struct gpubuf_cuda_matrix dc = { 0x4000, 4, 4, 4, GPUBUF_DTYPE_F32,
					 GPUBUF_ROW_MAJOR, 0, 0 };
	struct gpubuf_matrix m;
	uint64_t devptr = 0xdead;
	int want = t_no_cuda_err(), n = -1;
#if defined(GPUBUF_HAVE_CUDA) && !defined(GPUBUF_HAVE_CUDA_KERNELS)
	int want_launch = -EOPNOTSUPP;		/* built without nvcc */
#else
	int want_launch = want;
#endif

	T_CHECK(want == -ENODEV || want == -EOPNOTSUPP);
	printf("# no CUDA here: %s (%s)\n", gpubuf_strerror(want),
	       gpubuf_last_error());
	T_CHECK(last_error_says_why() == T_PASS);
	T_EQ(gpubuf_cuda_device_count(&n), want);
	T_EQ(n, -1);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 4, 4,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_cuda_register(m.buf, 0, 0, &devptr), want);
	T_EQ(devptr, 0xdead);
	T_CHECK(last_error_says_why() == T_PASS);
	T_EQ(gpubuf_cuda_register(m.buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY,
				  &devptr), want);
	/* Built with CUDA, "not registered" outranks "no driver". */
	T_EQ(gpubuf_cuda_unregister(m.buf, 0),
	     want == -EOPNOTSUPP ? -EOPNOTSUPP : -ENXIO);
	T_EQ(gpubuf_cuda_gemv(1.0, &dm, &dx, 0.0, &dy, NULL), want_launch);
	T_EQ(gpubuf_cuda_gemm(1.0, &dm, &dm, 0.0, &dc, NULL), want_launch);
	T_CHECK(last_error_says_why() == T_PASS);
	/* Nothing registered, so no device view and no kDLCUDA tensor. */
	T_EQ(gpubuf_cuda_matrix_view(&m, 0, &dm),
	     want == -EOPNOTSUPP ? -EOPNOTSUPP : -ENXIO);
	T_EQ(dm.devptr, 0x1000);
	/* The buffer is untouched and still works on the host. */
	T_EQ(gpubuf_refcount(m.buf), 1);
	*gpubuf_matrix_f32(&m, 3, 3) = 1.5f;
	T_CHECK(*gpubuf_matrix_f32(&m, 3, 3) == 1.5f);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

/* Invalid arguments are refused before the driver is asked anything. */
static int bad_arguments_are_einval(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf;
	uint64_t devptr;

	T_EQ(gpubuf_alloc(ctx, 4096, NULL, &buf), 0);
	T_EQ(gpubuf_cuda_device_count(NULL), -EINVAL);
	T_EQ(gpubuf_cuda_register(NULL, 0, 0, &devptr), -EINVAL);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, NULL), -EINVAL);
	T_EQ(gpubuf_cuda_register(buf, 0, 1u << 7, &devptr), -EINVAL);
	T_EQ(gpubuf_cuda_unregister(NULL, 0), -EINVAL);
	T_EQ(gpubuf_cuda_matrix_view(NULL, 0, NULL), -EINVAL);
	T_EQ(gpubuf_refcount(buf), 1);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

/* ---- with a GPU ---------------------------------------------------------- */

static int register_counts_and_unregisters(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf;
	uint64_t p1 = 0, p2 = 0;

	T_EQ(gpubuf_alloc(ctx, 4 << 20, NULL, &buf), 0);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &p1), 0);
	T_CHECK(p1 != 0);
	printf("# host %p -> device 0x%llx\n", gpubuf_ptr(buf),
	       (unsigned long long)p1);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &p2), 0);
	T_EQ(p2, p1);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(gpubuf_cuda_unregister(buf, 0), -ENXIO);
	/* Registering again after a full unregister works. */
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &p2), 0);
	T_CHECK(p2 != 0);
	/* The last unref unregisters: a new buffer may reuse the range. */
	gpubuf_unref(buf);
	T_EQ(gpubuf_alloc(ctx, 4 << 20, NULL, &buf), 0);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &p1), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED (113 in cuda.h),
 * asked of the driver directly: -1 if it cannot be asked.
 */
static int t_read_only_register_supported(void)
{
	int (*get_attr)(int *value, int attr, int dev);
	int (*get_dev)(int *dev, int ordinal);
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int dev, v = -1;

	if (!lib)
		return -1;
	get_attr = (int (*)(int *, int, int))dlsym(lib, "cuDeviceGetAttribute");
	get_dev = (int (*)(int *, int))dlsym(lib, "cuDeviceGet");
	if (!get_attr || !get_dev || get_dev(&dev, 0) || get_attr(&v, 113, dev))
		v = -1;
	dlclose(lib);
	return v;
}

/*
 * A read-only request on a writable mapping works whatever the device
 * says about read-only registration (0 on some discrete x86 hosts), and
 * the library keeps it read-only.
 */
static int read_only_request_on_this_host(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_cuda_matrix cm;
	struct gpubuf_matrix m;
	uint64_t devptr;

	printf("# device 0: READ_ONLY_HOST_REGISTER_SUPPORTED = %d\n",
	       t_read_only_register_supported());
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 64, 64,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_cuda_register(m.buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY,
				  &devptr), 0);
	T_EQ(gpubuf_cuda_matrix_view(&m, 0, &cm), 0);
	T_EQ(cm.flags, GPUBUF_CUDA_MATRIX_READ_ONLY);
	T_EQ(gpubuf_cuda_register(m.buf, 0, 0, &devptr), -EBUSY);
	T_EQ(gpubuf_cuda_unregister(m.buf, 0), 0);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

static int bad_device_is_enodev(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf;
	uint64_t devptr;
	int n = 0;

	T_EQ(gpubuf_cuda_device_count(&n), 0);
	T_EQ(gpubuf_alloc(ctx, 4096, NULL, &buf), 0);
	T_EQ(gpubuf_cuda_register(buf, n, 0, &devptr), -ENODEV);
	T_EQ(gpubuf_cuda_register(buf, -1, 0, &devptr), -ENODEV);
	T_CHECK(strstr(gpubuf_last_error(), "no CUDA device"));
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

static int memfd_backend_registers(void)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf *buf;
	uint64_t devptr;

	T_EQ(gpubuf_open(&ctx, GPUBUF_OPEN_FORCE_MEMFD), 0);
	T_EQ(gpubuf_alloc(ctx, 2 << 20, NULL, &buf), 0);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &devptr), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

static int dlpack_cuda_holds_registration(void)
{
#ifndef T_HAVE_DLPACK
	return t_skip("no <dlpack/dlpack.h> when this test was built");
#else
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m, s;
	DLManagedTensor *t;
	uint64_t devptr;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 64, 48,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_matrix_sub(&m, 3, 5, 10, 10, &s), 0);
	T_EQ(gpubuf_matrix_to_dlpack(&s, kDLCUDA, 0, &t), -ENXIO);
	T_EQ(gpubuf_cuda_register(m.buf, 0, 0, &devptr), 0);
	T_EQ(gpubuf_matrix_to_dlpack(&s, kDLCUDA, 0, &t), 0);
	T_EQ(t->dl_tensor.device.device_type, kDLCUDA);
	T_EQ(t->dl_tensor.device.device_id, 0);
	T_EQ((uintptr_t)t->dl_tensor.data, devptr + s.offset);
	T_EQ(t->dl_tensor.byte_offset, 0);
	/* The tensor's count keeps the registration after ours is gone. */
	T_EQ(gpubuf_cuda_unregister(m.buf, 0), 0);
	T_EQ(gpubuf_cuda_register(m.buf, 0, 0, &devptr), 0);
	T_EQ((uintptr_t)t->dl_tensor.data, devptr + s.offset);
	T_EQ(gpubuf_cuda_unregister(m.buf, 0), 0);
	t->deleter(t);
	T_EQ(gpubuf_cuda_unregister(m.buf, 0), -ENXIO);
	/* kDLCUDAHost is the host pointer. */
	T_EQ(gpubuf_matrix_to_dlpack(&s, kDLCUDAHost, 0, &t), 0);
	T_CHECK(t->dl_tensor.data == gpubuf_matrix_data(&s));
	t->deleter(t);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
#endif
}

static int t_gemm_case(struct gpubuf_ctx *ctx, enum gpubuf_dtype dt,
		       struct t_shape sh, enum gpubuf_layout la,
		       enum gpubuf_layout lb, enum gpubuf_layout lc)
{
	struct gpubuf_matrix pa, pb, pc, a, b, c;
	struct gpubuf_cuda_matrix da, db, dc;
	double alpha = 1.25, beta = -0.5;
	uint64_t devptr;
	int bad = 0;

	T_EQ(t_sub_alloc(ctx, dt, sh.m, sh.k, la, &pa, &a), 0);
	T_EQ(t_sub_alloc(ctx, dt, sh.k, sh.n, lb, &pb, &b), 0);
	T_EQ(t_sub_alloc(ctx, dt, sh.m, sh.n, lc, &pc, &c), 0);
	t_fill(&a, 1);
	t_fill(&b, 2);
	t_fill(&c, 3);
	T_EQ(gpubuf_cuda_register(pa.buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY,
				  &devptr), 0);
	T_EQ(gpubuf_cuda_register(pb.buf, 0, 0, &devptr), 0);
	T_EQ(gpubuf_cuda_register(pc.buf, 0, 0, &devptr), 0);
	T_EQ(gpubuf_cuda_matrix_view(&a, 0, &da), 0);
	T_EQ(gpubuf_cuda_matrix_view(&b, 0, &db), 0);
	T_EQ(gpubuf_cuda_matrix_view(&c, 0, &dc), 0);
	T_EQ(gpubuf_cuda_gemm(alpha, &da, &db, beta, &dc, NULL), 0);
	for (size_t i = 0; i < sh.m && !bad; i++) {
		for (size_t j = 0; j < sh.n && !bad; j++) {
			double ref = 0, mag = 0, c0 = t_val(i, j, 3);

			for (size_t p = 0; p < sh.k; p++) {
				ref += t_val(i, p, 1) * t_val(p, j, 2);
				mag += fabs(t_val(i, p, 1) * t_val(p, j, 2));
			}
			ref = alpha * ref + beta * c0;
			mag = fabs(alpha) * mag + fabs(beta * c0);
			if (!t_close(t_get(&c, i, j), ref, mag, sh.k, dt)) {
				printf("# C(%zu,%zu) = %.17g, expected %.17g\n",
				       i, j, t_get(&c, i, j), ref);
				bad = 1;
			}
		}
	}
	/* The padding around the sub-view was not written. */
	T_CHECK(t_get(&pc, 0, 0) == 0 && t_get(&pc, sh.m + 2, sh.n + 4) == 0);
	gpubuf_matrix_release(&pa);
	gpubuf_matrix_release(&pb);
	gpubuf_matrix_release(&pc);
	return bad ? T_FAIL : T_PASS;
}

static int gemm_every_layout_matches_reference(void)
{
	static const struct t_shape shapes[] = {
		{ 77, 45, 53 }, { 128, 64, 256 }, { 1, 1, 1 }, { 33, 65, 0 },
	};
	static const enum gpubuf_dtype dts[] = { GPUBUF_DTYPE_F32,
						 GPUBUF_DTYPE_F64 };
	struct gpubuf_ctx *ctx = t_open();
	int cases = 0;

	for (size_t d = 0; d < 2; d++)
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
			for (unsigned int l = 0; l < 8; l++) {
				int r = t_gemm_case(ctx, dts[d], shapes[s],
						    l & 1, (l >> 1) & 1,
						    (l >> 2) & 1);

				if (r != T_PASS) {
					printf("# dtype %d, %zux%zux%zu, layouts %u\n",
					       dts[d], shapes[s].m, shapes[s].n,
					       shapes[s].k, l);
					return r;
				}
				cases++;
			}
	printf("# %d GEMM cases\n", cases);
	gpubuf_close(ctx);
	return T_PASS;
}

static int t_gemv_case(struct gpubuf_ctx *ctx, enum gpubuf_dtype dt,
		       size_t m, size_t k, enum gpubuf_layout la)
{
	struct gpubuf_matrix pa, px, py, a, x, y;
	struct gpubuf_cuda_matrix da, dx, dy;
	double alpha = -0.75, beta = 2.0;
	uint64_t devptr;
	int bad = 0;

	T_EQ(t_sub_alloc(ctx, dt, m, k, la, &pa, &a), 0);
	/* x a column of a column-major matrix, y a row of a row-major one. */
	T_EQ(t_sub_alloc(ctx, dt, k, 1, GPUBUF_COL_MAJOR, &px, &x), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, dt, 2, m, GPUBUF_ROW_MAJOR, 0, &py), 0);
	T_EQ(gpubuf_matrix_sub(&py, 1, 0, 1, m, &y), 0);
	t_fill(&a, 4);
	t_fill(&x, 5);
	t_fill(&y, 6);
	T_EQ(gpubuf_cuda_register(pa.buf, 0, 0, &devptr), 0);
	T_EQ(gpubuf_cuda_register(px.buf, 0, 0, &devptr), 0);
	T_EQ(gpubuf_cuda_register(py.buf, 0, 0, &devptr), 0);
	T_EQ(gpubuf_cuda_matrix_view(&a, 0, &da), 0);
	T_EQ(gpubuf_cuda_matrix_view(&x, 0, &dx), 0);
	T_EQ(gpubuf_cuda_matrix_view(&y, 0, &dy), 0);
	T_EQ(gpubuf_cuda_gemv(alpha, &da, &dx, beta, &dy, NULL), 0);
	for (size_t i = 0; i < m && !bad; i++) {
		double ref = 0, mag = 0, y0 = t_val(0, i, 6);

		for (size_t p = 0; p < k; p++) {
			ref += t_val(i, p, 4) * t_val(p, 0, 5);
			mag += fabs(t_val(i, p, 4) * t_val(p, 0, 5));
		}
		ref = alpha * ref + beta * y0;
		mag = fabs(alpha) * mag + fabs(beta * y0);
		if (!t_close(t_get(&y, 0, i), ref, mag, k, dt)) {
			printf("# y(%zu) = %.17g, expected %.17g\n", i,
			       t_get(&y, 0, i), ref);
			bad = 1;
		}
	}
	gpubuf_matrix_release(&pa);
	gpubuf_matrix_release(&px);
	gpubuf_matrix_release(&py);
	return bad ? T_FAIL : T_PASS;
}

static int gemv_both_layouts_match_reference(void)
{
	struct gpubuf_ctx *ctx = t_open();

	for (int d = 0; d < 2; d++) {
		enum gpubuf_dtype dt = d ? GPUBUF_DTYPE_F64 : GPUBUF_DTYPE_F32;

		for (int l = 0; l < 2; l++) {
			T_EQ(t_gemv_case(ctx, dt, 1000, 777, l), T_PASS);
			T_EQ(t_gemv_case(ctx, dt, 3, 4097, l), T_PASS);
			T_EQ(t_gemv_case(ctx, dt, 513, 1, l), T_PASS);
		}
	}
	gpubuf_close(ctx);
	return T_PASS;
}

/* A kernel writes host memory in place; the CPU sees it at once. */
static int gpu_writes_reach_host_memory(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix a, b, c;
	struct gpubuf_cuda_matrix da, db, dc;
	uint64_t devptr;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 16, 16,
				 GPUBUF_ROW_MAJOR, 0, &a), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 16, 16,
				 GPUBUF_COL_MAJOR, 0, &b), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 16, 16,
				 GPUBUF_ROW_MAJOR, 0, &c), 0);
	for (size_t i = 0; i < 16; i++) {
		*gpubuf_matrix_f32(&a, i, i) = 1.0f;	/* identity */
		for (size_t j = 0; j < 16; j++)
			*gpubuf_matrix_f32(&b, i, j) = (float)(i * 16 + j);
		/* NaN in C must not matter when beta is 0 */
		for (size_t j = 0; j < 16; j++)
			*gpubuf_matrix_f32(&c, i, j) = NAN;
	}
	T_EQ(gpubuf_cuda_register(a.buf, 0, 0, &devptr), 0);
	T_EQ(gpubuf_cuda_register(b.buf, 0, 0, &devptr), 0);
	T_EQ(gpubuf_cuda_register(c.buf, 0, 0, &devptr), 0);
	T_EQ(gpubuf_cuda_matrix_view(&a, 0, &da), 0);
	T_EQ(gpubuf_cuda_matrix_view(&b, 0, &db), 0);
	T_EQ(gpubuf_cuda_matrix_view(&c, 0, &dc), 0);
	T_EQ(gpubuf_cuda_gemm(1.0, &da, &db, 0.0, &dc, NULL), 0);
	for (size_t i = 0; i < 16; i++)
		for (size_t j = 0; j < 16; j++)
			T_CHECK(*gpubuf_matrix_f32(&c, i, j) ==
				(float)(i * 16 + j));
	gpubuf_matrix_release(&a);
	gpubuf_matrix_release(&b);
	gpubuf_matrix_release(&c);
	gpubuf_close(ctx);
	return T_PASS;
}

static int unregistered_view_is_enxio(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_cuda_matrix dm;
	struct gpubuf_matrix m;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F64, 8, 8,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_cuda_matrix_view(&m, 0, &dm),
	     t_no_cuda_err() == -EOPNOTSUPP ? -EOPNOTSUPP : -ENXIO);
	T_EQ(gpubuf_cuda_unregister(m.buf, 0),
	     t_no_cuda_err() == -EOPNOTSUPP ? -EOPNOTSUPP : -ENXIO);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST_ON(T_NO_CUDA, no_driver_every_call_fails),
		T_TEST(bad_arguments_are_einval),
		T_TEST(unregistered_view_is_enxio),
		T_TEST_ON(T_CUDA, register_counts_and_unregisters),
		T_TEST_ON(T_CUDA, read_only_request_on_this_host),
		T_TEST_ON(T_CUDA, bad_device_is_enodev),
		T_TEST_ON(T_CUDA, memfd_backend_registers),
		T_TEST_ON(T_CUDA, dlpack_cuda_holds_registration),
		T_TEST_ON(T_CUDA, gpu_writes_reach_host_memory),
		T_TEST_ON(T_CUDA, gemv_both_layouts_match_reference),
		T_TEST_ON(T_CUDA, gemm_every_layout_matches_reference),
	};

	return T_RUN(tests);
}
