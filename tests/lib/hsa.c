// SPDX-License-Identifier: MIT
/*
 * Description: the HSA (ROCm) layer with the runtime this machine really
 * has. Without a usable one (CI: Debian's libhsa-runtime64.so.1 but no
 * /dev/kfd; the QEMU guest: no runtime at all, and a static program) every
 * entry point fails cleanly with the documented errno, names the reason
 * and leaves the buffer as it was. With an AMD GPU (never available to
 * this project) buffers are locked, counted and unlocked.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>
#define T_HAVE_DLPACK 1
#endif
#endif

#include "tap.h"

/* What an HSA call answers on this build when no runtime is usable. */
static int t_no_hsa_err(void)
{
	int n;

	return gpubuf_hsa_agents(NULL, 0, &n);
}

/*
 * Exactly why there is no runtime: built without HSA; or the library could
 * not load libhsa-runtime64.so.1 (the guest; a static program finds none);
 * or it loaded it and hsa_init failed, which without /dev/kfd it must
 * (CI); or KFD is there and it found no GPU agent.
 */
static int no_runtime_says_exactly_why(void)
{
	int want = t_no_hsa_err();
	const char *e = gpubuf_last_error();

	printf("# no HSA here: %s (%s)\n", gpubuf_strerror(want), e);
#ifndef GPUBUF_HAVE_HSA
	T_EQ(want, -EOPNOTSUPP);
	T_CHECK(strstr(e, "built without HSA support"));
#else
	void *h;

	T_EQ(want, -ENODEV);
	h = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h) {
		T_CHECK(!strncmp(e, "no ROCm runtime: ", 17));
		T_CHECK(strstr(e, "libhsa-runtime64.so.1"));
		return T_PASS;
	}
	dlclose(h);
	if (access("/dev/kfd", F_OK) != 0) {
		T_CHECK(!strncmp(e, "hsa_init (0x", 12));
		T_CHECK(strstr(e, "no /dev/kfd"));
		T_CHECK(strstr(e, "HSA_STATUS_ERROR"));
	} else {
		T_CHECK(strstr(e, "hsa_init") || strstr(e, "no HSA GPU agent"));
	}
#endif
	return T_PASS;
}

/*
 * The view and the kernels without a runtime: no lock, so no view
 * (-ENXIO in every build); valid operands anywhere in agent memory get
 * the build's answer: -EOPNOTSUPP without HSA or without hipcc, else the
 * missing runtime's -ENODEV. Nothing is dispatched, nothing changes.
 */
static int t_no_runtime_kernels(struct gpubuf_ctx *ctx, int want)
{
	struct gpubuf_hsa_matrix a = { 0x1000, 4, 4, 4, GPUBUF_DTYPE_F32,
				       GPUBUF_ROW_MAJOR, 0, 0 };
	struct gpubuf_hsa_matrix x = { 0x2000, 4, 1, 1, GPUBUF_DTYPE_F32,
				       GPUBUF_ROW_MAJOR, 0, 0 };
	struct gpubuf_hsa_matrix y = { 0x3000, 4, 1, 1, GPUBUF_DTYPE_F32,
				       GPUBUF_ROW_MAJOR, 0, 0 };
	struct gpubuf_hsa_matrix c = { 0x4000, 4, 4, 4, GPUBUF_DTYPE_F32,
				       GPUBUF_ROW_MAJOR, 0, 0 };
	struct gpubuf_hsa_matrix v = { .agent_ptr = 0xdead };
	struct gpubuf_matrix m;
#if defined(GPUBUF_HAVE_HSA) && !defined(GPUBUF_HAVE_HSA_KERNELS)
	int want_launch = -EOPNOTSUPP;		/* built without hipcc */

	(void)want;
#else
	int want_launch = want;
#endif

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 4, 4,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_hsa_matrix_view(&m, 0, &v), -ENXIO);
	T_CHECK(strstr(gpubuf_last_error(), "not locked for HSA GPU agent 0"));
	T_EQ(v.agent_ptr, 0xdead);
	T_EQ(gpubuf_hsa_gemv(1.0, &a, &x, 0.0, &y, 0), want_launch);
	T_CHECK(gpubuf_last_error()[0]);
	printf("# gpubuf_hsa_gemv: %s (%s)\n", gpubuf_strerror(want_launch),
	       gpubuf_last_error());
	T_EQ(gpubuf_hsa_gemm(1.0, &a, &a, 0.0, &c, 0x1234), want_launch);
	/* An empty output is nothing to do, runtime or none... */
	y.rows = a.rows = 0;
	T_EQ(gpubuf_hsa_gemv(1.0, &a, &x, 0.0, &y, 0),
	     want_launch == -EOPNOTSUPP ? -EOPNOTSUPP : 0);
	/* ...but a bad operand is still refused first. */
	T_EQ(gpubuf_hsa_gemm(1.0, &a, &a, 0.0, &c, 0), -EINVAL);
	T_EQ(gpubuf_refcount(m.buf), 1);
	gpubuf_matrix_release(&m);
	return T_PASS;
}

static int no_runtime_every_call_fails(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m;
	uint64_t agents[2] = { 1, 2 };
	void *ap = (void *)0x1;
	int want = t_no_hsa_err(), n = -1;

	T_CHECK(want == -ENODEV || want == -EOPNOTSUPP);
	T_EQ(gpubuf_hsa_agents(agents, 2, &n), want);
	T_EQ(n, -1);
	T_EQ(agents[0], 1);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 4, 4,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_hsa_lock(m.buf, NULL, 0, &ap), want);
	T_CHECK(gpubuf_last_error()[0]);
	T_EQ(gpubuf_hsa_lock(m.buf, agents, 2, &ap), want);
	T_CHECK(ap == (void *)0x1);
	/* Built with HSA, "not locked" outranks "no runtime". */
	T_EQ(gpubuf_hsa_unlock(m.buf), want == -EOPNOTSUPP ? -EOPNOTSUPP :
							    -ENXIO);
	T_EQ(t_no_runtime_kernels(ctx, want), T_PASS);
	/* The buffer is untouched and still works on the host. */
	T_EQ(gpubuf_refcount(m.buf), 1);
	*gpubuf_matrix_f32(&m, 3, 3) = 1.5f;
	T_CHECK(*gpubuf_matrix_f32(&m, 3, 3) == 1.5f);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

/* Invalid arguments are refused before the runtime is asked anything. */
static int bad_arguments_are_einval(void)
{
	struct gpubuf_hsa_matrix view = { .agent_ptr = 7 };
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf;
	uint64_t agent = 1;
	void *ap = (void *)0x1;
	int n;

	T_EQ(gpubuf_alloc(ctx, 4096, NULL, &buf), 0);
	T_EQ(gpubuf_hsa_agents(NULL, 0, NULL), -EINVAL);
	T_EQ(gpubuf_hsa_agents(NULL, 1, &n), -EINVAL);
	T_EQ(gpubuf_hsa_agents(&agent, -1, &n), -EINVAL);
	T_EQ(gpubuf_hsa_lock(NULL, NULL, 0, &ap), -EINVAL);
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, NULL), -EINVAL);
	T_EQ(gpubuf_hsa_lock(buf, &agent, -1, &ap), -EINVAL);
	T_EQ(gpubuf_hsa_lock(buf, NULL, 1, &ap), -EINVAL);
	T_EQ(gpubuf_hsa_unlock(NULL), -EINVAL);
	T_EQ(gpubuf_hsa_matrix_view(NULL, 0, &view), -EINVAL);
	T_EQ(view.agent_ptr, 7);
	T_CHECK(ap == (void *)0x1);
	T_EQ(gpubuf_refcount(buf), 1);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

/* kDLROCMHost is the host pointer; kDLROCM needs a lock, which is not there. */
static int dlpack_rocm_needs_a_lock(void)
{
#ifndef T_HAVE_DLPACK
	return t_skip("no <dlpack/dlpack.h> when this test was built");
#else
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m;
	DLManagedTensor *t = NULL;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 8, 8,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLROCM, 0, &t), -ENXIO);
	T_CHECK(strstr(gpubuf_last_error(), "not locked for HSA GPU agent 0"));
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLROCM, -1, &t), -EINVAL);
	T_CHECK(t == NULL);
	T_EQ(gpubuf_refcount(m.buf), 1);
	T_EQ(gpubuf_matrix_to_dlpack(&m, kDLROCMHost, 0, &t), 0);
	T_CHECK(t->dl_tensor.data == gpubuf_ptr(m.buf));
	T_EQ(t->dl_tensor.device.device_type, kDLROCMHost);
	T_EQ(gpubuf_refcount(m.buf), 2);
	t->deleter(t);
	T_EQ(gpubuf_refcount(m.buf), 1);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
#endif
}

/* ---- with an AMD GPU ------------------------------------------------------ */

static int lock_counts_and_unlocks(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf;
	uint64_t agent;
	void *p1 = NULL, *p2 = NULL;
	int n = 0;

	T_EQ(gpubuf_hsa_agents(&agent, 1, &n), 0);
	T_CHECK(n > 0);
	T_EQ(gpubuf_alloc(ctx, 4 << 20, NULL, &buf), 0);
	T_EQ(gpubuf_hsa_lock(buf, &agent, 1, &p1), 0);
	T_CHECK(p1 != NULL);
	printf("# host %p -> agent %p\n", gpubuf_ptr(buf), p1);
	T_EQ(gpubuf_hsa_lock(buf, &agent, 1, &p2), 0);
	T_CHECK(p2 == p1);
	T_EQ(gpubuf_hsa_unlock(buf), 0);
	T_EQ(gpubuf_hsa_unlock(buf), 0);
	T_EQ(gpubuf_hsa_unlock(buf), -ENXIO);
	/* The last unref unlocks: a new buffer may reuse the range. */
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &p1), 0);
	gpubuf_unref(buf);
	T_EQ(gpubuf_alloc(ctx, 4 << 20, NULL, &buf), 0);
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &p1), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST_ON(T_NO_HSA, no_runtime_says_exactly_why),
		T_TEST_ON(T_NO_HSA, no_runtime_every_call_fails),
		T_TEST(bad_arguments_are_einval),
		T_TEST(dlpack_rocm_needs_a_lock),
		T_TEST_ON(T_HSA, lock_counts_and_unlocks),
	};

	return T_RUN(tests);
}
