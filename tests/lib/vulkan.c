// SPDX-License-Identifier: MIT
/*
 * Description: the Vulkan layer. Without a device, every entry point
 * refuses bad arguments and says why it cannot run. With one (Mesa's
 * lavapipe here: a real Vulkan driver that runs on the CPU, not a GPU),
 * buffers are imported in place, counted and released, and the library's
 * GEMV/GEMM shaders run on the imported memory: f32 and f64, every layout
 * of every operand, padded ld, sub-views, ragged sizes, k = 0, beta = 0
 * over NaN, alpha = 0 over NaN inputs, checked against a double
 * reference; padding (NaN) is never written. The streaming-read kernel
 * of gpubuf-bench's device read ceiling reads every word. One device runs
 * with the validation layer, which must report nothing.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/dma-buf.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpubuf/tools.h>

#include "tap.h"
#include "gemm_ref.h"

/* The first device, with the validation layer where it is installed. */
static struct gpubuf_vk *t_vk(unsigned int flags)
{
	struct gpubuf_vk *vk = NULL;
	int err = gpubuf_vk_open(0, flags, &vk);

	if (err) {
		printf("# gpubuf_vk_open(0, %#x): %s: %s\n", flags,
		       strerror(-err), gpubuf_last_error());
		return NULL;
	}
	return vk;
}

static int bad_arguments_are_einval(void)
{
	struct gpubuf_vk_matrix v = { 0 };
	struct gpubuf_vk *vk = (struct gpubuf_vk *)&v;
	struct gpubuf_vk_device d = { .size = sizeof(d) };
	struct gpubuf_vk_memory mem;
	struct gpubuf_vk_info info;

	T_EQ(gpubuf_vk_open(0, 0, NULL), -EINVAL);
	T_EQ(gpubuf_vk_open(0, ~0u, &vk), -EINVAL);
	T_EQ(gpubuf_vk_wrap(NULL, &vk), -EINVAL);
	T_EQ(gpubuf_vk_wrap(&d, NULL), -EINVAL);
	T_EQ(gpubuf_vk_wrap(&d, &vk), -EINVAL);		/* no handles */
	T_EQ(gpubuf_vk_info(NULL, &info), -EINVAL);
	T_EQ(gpubuf_vk_import(NULL, NULL, &mem), -EINVAL);
	T_EQ(gpubuf_vk_release(NULL, NULL), -EINVAL);
	T_EQ(gpubuf_vk_matrix_view(NULL, NULL, &v), -EINVAL);
	T_EQ(gpubuf_vk_gemv(1, NULL, &v, 0, &v), -EINVAL);
	T_EQ(gpubuf_vk_gemm(1, &v, &v, 0, NULL), -EINVAL);
	gpubuf_vk_close(NULL);
	return T_PASS;
}

static int no_such_device_is_enodev(void)
{
	struct gpubuf_vk *vk = NULL;
	int err = gpubuf_vk_open(-1, 0, &vk);

	/* Without Vulkan support the build says so first. */
	T_CHECK(err == -ENODEV || err == -EOPNOTSUPP);
	T_CHECK(gpubuf_last_error()[0]);
	T_CHECK(vk == NULL);
	if (err == -ENODEV) {
		T_EQ(gpubuf_vk_open(1000, 0, &vk), -ENODEV);
		T_CHECK(strstr(gpubuf_last_error(), "Vulkan") != NULL);
	}
	return T_PASS;
}

static int device_says_what_it_can(void)
{
	struct gpubuf_vk *vk = t_vk(0);
	struct gpubuf_vk_info info;

	T_CHECK(vk);
	T_EQ(gpubuf_vk_info(vk, &info), 0);
	printf("# %s: type %u, Vulkan %u.%u, features %#x, host import unit %llu\n",
	       info.name, info.device_type, info.api_version >> 22,
	       (info.api_version >> 12) & 0x3ff, info.features,
	       (unsigned long long)info.host_import_align);
	T_CHECK(info.name[0]);
	T_CHECK(info.api_version >= (1u << 22 | 2u << 12));
	T_CHECK(info.features & (GPUBUF_VK_FEATURE_HOST_IMPORT |
				 GPUBUF_VK_FEATURE_DMA_BUF_IMPORT));
	T_EQ(info.validation_errors, 0);
	gpubuf_vk_close(vk);
	return T_PASS;
}

static int t_dmabuf_device(struct gpubuf_vk *vk)
{
	struct gpubuf_vk_info info;

	return gpubuf_vk_info(vk, &info) == 0 &&
	       (info.features & GPUBUF_VK_FEATURE_DMA_BUF_IMPORT);
}

/*
 * T_TEST_ON takes one condition; the dma-buf tests need two. 0 to go on,
 * else the skip, with ctx and vk closed.
 */
static int t_skip_unless_dmabuf(struct gpubuf_ctx *ctx, struct gpubuf_vk *vk,
				const char *why)
{
	if (!vk) {
		gpubuf_close(ctx);
		return t_skip("needs %s", t_env_names[T_VULKAN]);
	}
	if (!t_dmabuf_device(vk)) {
		gpubuf_vk_close(vk);
		gpubuf_close(ctx);
		return t_skip("the device takes no dma-bufs (lavapipe before Mesa 24.1)%s",
			      why);
	}
	return 0;
}


/*
 * A dma-buf import that fails leaves the fd with the caller by the spec,
 * and lavapipe closes it anyway: the library imports a dup and closes it
 * only if it still names the buffer. A read-only dma-buf, which lavapipe
 * maps for writing (and cannot), fails that way; the buffer then goes in
 * as host memory, and no fd is leaked or closed twice.
 */
static int dmabuf_import_failure_keeps_fds(void)
{
	struct gpubuf_alloc ga = {
		.size = 1 << 16,
		.fd_flags = O_RDONLY | O_CLOEXEC,
		.numa_node = GPUBUF_NUMA_ANY,
	};
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk *vk = t_vk(0);
	struct gpubuf_vk_memory mem;
	struct gpubuf *buf;
	int dev, before, err;

	err = t_skip_unless_dmabuf(ctx, vk, "");
	if (err)
		return err;
	dev = open(GPUBUF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	T_CHECK(dev >= 0);
	T_EQ(ioctl(dev, GPUBUF_IOC_ALLOC, &ga), 0);
	close(dev);
	T_EQ(gpubuf_import(ctx, ga.fd, &buf), 0);
	close(ga.fd);
	T_EQ(gpubuf_is_readonly(buf), 1);
	before = t_open_fds();
	err = gpubuf_vk_import(buf, vk, &mem);
	printf("# read-only dma-buf: %s%s%s\n", err ? strerror(-err) :
	       mem.import == GPUBUF_VK_IMPORT_DMA_BUF ? "imported as a dma-buf" :
	       "imported as host memory", err ? ": " : "",
	       err ? gpubuf_last_error() : "");
	/* The buffer's own fd is still there, and nothing else was left. */
	T_CHECK(fcntl(gpubuf_fd(buf), F_GETFD) >= 0);
	if (!err && mem.import == GPUBUF_VK_IMPORT_HOST_POINTER)
		T_EQ(t_open_fds(), before);
	if (!err)
		T_EQ(gpubuf_vk_release(buf, vk), 0);
	T_EQ(t_open_fds(), before);
	gpubuf_unref(buf);
	gpubuf_vk_close(vk);
	gpubuf_close(ctx);
	return T_PASS;
}

/* A quiet NaN in every element of a parent: padding must keep it. */
static void t_fill_nan(const struct gpubuf_matrix *p)
{
	for (size_t r = 0; r < p->rows; r++)
		for (size_t c = 0; c < p->cols; c++)
			gpubuf_matrix_set(p, r, c, NAN);
}

/*
 * DMA_BUF_IOCTL_SYNC as the library issues it: this program defines
 * ioctl(), which the library's calls reach first. While on, each sync's fd
 * and flags are logged with what C's first element held at that moment;
 * fail, if set, answers the next sync (the next START with fail_start)
 * with that errno instead.
 */
static struct {
	atomic_bool on;
	int fail;
	bool fail_start;
	const float *c00;
	unsigned int n;
	struct { int fd; unsigned long long flags; float c00; } log[16];
} t_sync;

int ioctl(int fd, unsigned long req, ...)
{
	static int (*next)(int, unsigned long, ...);
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req == DMA_BUF_IOCTL_SYNC && atomic_load(&t_sync.on)) {
		const struct dma_buf_sync *s = arg;
		int fail = !t_sync.fail_start ||
			   (s->flags & DMA_BUF_SYNC_END) == DMA_BUF_SYNC_START ?
			   t_sync.fail : 0;

		if (t_sync.n < 16)
			t_sync.log[t_sync.n++] = (typeof(t_sync.log[0])){
				fd, s->flags, *t_sync.c00 };
		if (fail) {
			t_sync.fail = 0;
			errno = fail;
			return -1;
		}
	}
	if (!next)
		next = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
	return next(fd, req, arg);
}

/* Entries from..to-1 of the log: one per fd of fds, each with flags. */
static int t_synced_once_each(unsigned int from, unsigned int to,
			      const int *fds, unsigned int nfds,
			      unsigned long long flags)
{
	if (to - from != nfds) {
		printf("# %u syncs logged from %u to %u, %u buffers\n",
		       t_sync.n, from, to, nfds);
		return 0;
	}
	for (unsigned int i = 0; i < nfds; i++) {
		unsigned int seen = 0;

		for (unsigned int j = from; j < to; j++)
			seen += t_sync.log[j].fd == fds[i] &&
				t_sync.log[j].flags == flags;
		if (seen != 1) {
			printf("# fd %d: %u syncs with flags %#llx\n", fds[i],
			       seen, flags);
			return 0;
		}
	}
	return 1;
}

static void t_sync_watch(const struct gpubuf_matrix *c)
{
	t_sync.c00 = gpubuf_matrix_f32(c, 0, 0);
	t_sync.n = 0;
	atomic_store(&t_sync.on, true);
}

/*
 * Operands imported as dma-bufs have their dispatch bracketed, each
 * buffer once: DMA_BUF_IOCTL_SYNC END before the submission (C still as
 * the CPU left it), START after the fence (C holds the result). Where an
 * importer's DMA bounces (swiotlb, SEV/TDX guests), the exporter copies
 * only there. A failed END submits nothing and says so; EINTR is retried.
 */
static int dmabuf_operands_synced_around_dispatch(void)
{
	const unsigned long long end = DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW;
	const unsigned long long start = DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW;
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk *vk = t_vk(0);
	struct gpubuf_vk_matrix a, b, c, x, y;
	struct gpubuf_matrix ma, mb, mc, mx;
	struct gpubuf_vk_memory mem;
	int fds[3], err;

	err = t_skip_unless_dmabuf(ctx, vk, ": no import to sync");
	if (err)
		return err;
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 8, 8,
				 GPUBUF_ROW_MAJOR, 0, &ma), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 8, 8,
				 GPUBUF_ROW_MAJOR, 0, &mb), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 8, 8,
				 GPUBUF_ROW_MAJOR, 0, &mc), 0);
	fds[0] = gpubuf_fd(ma.buf);
	fds[1] = gpubuf_fd(mb.buf);
	fds[2] = gpubuf_fd(mc.buf);
	T_CHECK(fds[0] >= 0 && fds[1] >= 0 && fds[2] >= 0);
	T_EQ(gpubuf_vk_import(ma.buf, vk, &mem), 0);
	T_EQ(mem.import, GPUBUF_VK_IMPORT_DMA_BUF);
	T_EQ(gpubuf_vk_import(mb.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_import(mc.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_matrix_view(&ma, vk, &a), 0);
	T_EQ(gpubuf_vk_matrix_view(&mb, vk, &b), 0);
	T_EQ(gpubuf_vk_matrix_view(&mc, vk, &c), 0);
	for (size_t r = 0; r < 8; r++)
		for (size_t k = 0; k < 8; k++) {
			gpubuf_matrix_set(&ma, r, k, 1);
			gpubuf_matrix_set(&mb, r, k, 2);
		}

	/* GEMM: three buffers, three ENDs, then three STARTs. */
	t_fill_nan(&mc);
	t_sync_watch(&mc);
	T_EQ(gpubuf_vk_gemm(1, &a, &b, 0, &c), 0);
	atomic_store(&t_sync.on, false);
	T_CHECK(t_synced_once_each(0, 3, fds, 3, end));
	T_CHECK(t_synced_once_each(3, t_sync.n, fds, 3, start));
	for (unsigned int i = 0; i < 3; i++)
		T_CHECK(isnan(t_sync.log[i].c00));
	for (unsigned int i = 3; i < 6; i++)
		T_EQ(t_sync.log[i].c00, 16);

	/* A twice (its buffer synced once), C as GEMV's y: two buffers. */
	T_EQ(gpubuf_matrix_sub(&ma, 0, 0, 8, 1, &mx), 0);
	T_EQ(gpubuf_vk_matrix_view(&mx, vk, &x), 0);
	T_EQ(gpubuf_matrix_sub(&mc, 0, 0, 8, 1, &mx), 0);
	T_EQ(gpubuf_vk_matrix_view(&mx, vk, &y), 0);
	t_fill_nan(&mc);
	t_sync_watch(&mc);
	T_EQ(gpubuf_vk_gemv(1, &a, &x, 0, &y), 0);
	atomic_store(&t_sync.on, false);
	T_CHECK(t_synced_once_each(0, 2, (int[]){ fds[0], fds[2] }, 2, end));
	T_CHECK(t_synced_once_each(2, t_sync.n, (int[]){ fds[0], fds[2] }, 2,
				   start));
	T_EQ(t_sync.log[3].c00, 8);

	/* EINTR is retried: one more END, the same result. */
	t_fill_nan(&mc);
	t_sync_watch(&mc);
	t_sync.fail = EINTR;
	T_EQ(gpubuf_vk_gemm(1, &a, &b, 0, &c), 0);
	atomic_store(&t_sync.on, false);
	T_EQ(t_sync.n, 7);
	T_EQ(t_get(&mc, 7, 7), 16);

	/* A failed END: its errno, nothing submitted, C untouched. */
	t_fill_nan(&mc);
	t_sync_watch(&mc);
	t_sync.fail = EIO;
	T_EQ(gpubuf_vk_gemm(1, &a, &b, 0, &c), -EIO);
	atomic_store(&t_sync.on, false);
	T_CHECK(strstr(gpubuf_last_error(), "DMA_BUF_IOCTL_SYNC (END"));
	T_EQ(t_sync.n, 1);
	T_CHECK(isnan(t_get(&mc, 0, 0)) && isnan(t_get(&mc, 7, 7)));
	/* The device is not lost: the next call computes. */
	T_EQ(gpubuf_vk_gemm(1, &a, &b, 0, &c), 0);
	T_EQ(t_get(&mc, 7, 7), 16);

	/* A failed START: its errno, and every buffer still gets its START. */
	t_fill_nan(&mc);
	t_sync_watch(&mc);
	t_sync.fail_start = true;
	t_sync.fail = EIO;
	T_EQ(gpubuf_vk_gemm(1, &a, &b, 0, &c), -EIO);
	atomic_store(&t_sync.on, false);
	t_sync.fail_start = false;
	T_CHECK(strstr(gpubuf_last_error(), "DMA_BUF_IOCTL_SYNC (START"));
	T_CHECK(t_synced_once_each(0, 3, fds, 3, end));
	T_CHECK(t_synced_once_each(3, t_sync.n, fds, 3, start));
	T_EQ(t_get(&mc, 7, 7), 16);

	gpubuf_matrix_release(&ma);
	gpubuf_matrix_release(&mb);
	gpubuf_matrix_release(&mc);
	gpubuf_vk_close(vk);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * One record per (buffer, device), counted; the view of a buffer not
 * imported is -ENXIO; the last unref releases what is left, and the device
 * outlives its close while imports stand.
 */
static int import_counts_and_releases(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk *vk = t_vk(0);
	struct gpubuf_vk_memory m1, m2;
	struct gpubuf_vk_matrix v;
	struct gpubuf_matrix m;

	T_CHECK(vk);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 64, 64,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_vk_matrix_view(&m, vk, &v), -ENXIO);
	T_CHECK(strstr(gpubuf_last_error(), "not imported"));
	T_EQ(gpubuf_vk_release(m.buf, vk), -ENXIO);
	T_EQ(gpubuf_vk_import(m.buf, vk, &m1), 0);
	printf("# imported as %s, memory type %u\n",
	       m1.import == GPUBUF_VK_IMPORT_DMA_BUF ? "a dma-buf" :
	       "host memory", m1.memory_type);
	T_CHECK(m1.buffer && m1.memory && m1.address);
	T_EQ(m1.size, gpubuf_size(m.buf));
	/* The memfd backend has no dma-buf: host memory it is. */
	if (gpubuf_fd(m.buf) < 0)
		T_EQ(m1.import, GPUBUF_VK_IMPORT_HOST_POINTER);
	/* A module buffer goes in as its dma-buf where the device takes one. */
	if (gpubuf_fd(m.buf) >= 0 && t_dmabuf_device(vk))
		T_EQ(m1.import, GPUBUF_VK_IMPORT_DMA_BUF);
	T_EQ(gpubuf_vk_import(m.buf, vk, &m2), 0);
	T_CHECK(memcmp(&m1, &m2, sizeof(m1)) == 0);
	T_EQ(gpubuf_vk_matrix_view(&m, vk, &v), 0);
	T_EQ(v.address, m1.address);
	T_CHECK(v.vk == vk && v.rows == 64 && v.ld == m.ld);
	T_EQ(gpubuf_vk_release(m.buf, vk), 0);
	T_EQ(gpubuf_vk_release(m.buf, vk), 0);
	T_EQ(gpubuf_vk_release(m.buf, vk), -ENXIO);
	/* Imported again, then left to the last unref, after the close. */
	T_EQ(gpubuf_vk_import(m.buf, vk, &m1), 0);
	gpubuf_vk_close(vk);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

/* Elements of a view start at byte offsets its dtype can address. */
static int misaligned_view_refused(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk *vk = t_vk(0);
	struct gpubuf_vk_matrix a, x, y;
	struct gpubuf_vk_memory mem;
	struct gpubuf_matrix m, odd;
	struct gpubuf *buf;

	T_CHECK(vk);
	T_EQ(gpubuf_alloc(ctx, 1 << 16, NULL, &buf), 0);
	T_EQ(gpubuf_vk_import(buf, vk, &mem), 0);
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_F32, 8, 8, 8,
				GPUBUF_ROW_MAJOR, &m), 0);
	T_EQ(gpubuf_vk_matrix_view(&m, vk, &a), 0);
	T_EQ(gpubuf_vk_matrix_view(&m, vk, &y), 0);
	/* A view struct filled in by hand, two bytes off. */
	x = a;
	x.address += 2;
	x.cols = 1;
	T_EQ(gpubuf_vk_gemv(1, &a, &x, 0, &y), -EINVAL);
	T_CHECK(strstr(gpubuf_last_error(), "gpubuf_vk_gemv"));
	/* gpubuf_matrix_view() itself refuses such an offset. */
	T_EQ(gpubuf_matrix_view(buf, 2, GPUBUF_DTYPE_F32, 8, 1, 1,
				GPUBUF_COL_MAJOR, &odd), -EINVAL);
	gpubuf_unref(buf);
	gpubuf_vk_close(vk);
	gpubuf_close(ctx);
	return T_PASS;
}

/* Every element of parent p outside sub-view s is still NaN. */
static int t_padding_kept(const struct gpubuf_matrix *p,
			  const struct gpubuf_matrix *s, size_t r0, size_t c0)
{
	for (size_t r = 0; r < p->rows; r++)
		for (size_t c = 0; c < p->cols; c++) {
			bool inside = r >= r0 && r < r0 + s->rows &&
				      c >= c0 && c < c0 + s->cols;

			if (!inside && !isnan(t_get(p, r, c))) {
				printf("# padding (%zu,%zu) written: %g\n", r,
				       c, t_get(p, r, c));
				return 0;
			}
		}
	return 1;
}

/* Element i of a vector view, a row or a column. */
static double t_vec(const struct gpubuf_matrix *v, size_t i)
{
	return v->rows == 1 ? t_get(v, 0, i) : t_get(v, i, 0);
}

/* A vector filled with the values a 1 x n row of seed would have. */
static void t_fill_vec(const struct gpubuf_matrix *v, unsigned int seed)
{
	size_t n = v->rows == 1 ? v->cols : v->rows;

	for (size_t i = 0; i < n; i++)
		gpubuf_matrix_set(v, v->rows == 1 ? 0 : i, v->rows == 1 ? i : 0,
				  t_val(0, i, seed));
}

struct t_gemm {
	enum gpubuf_dtype dt;
	struct t_shape sh;
	unsigned int layouts;	/* bit 0: A col-major, 1: B, 2: C */
	bool transpose_a;	/* A given as the transpose of a k x m view */
	double alpha, beta;
};

/* A's operand view: a sub-view, or the transpose of a k x m sub-view. */
static int t_operand_a(struct gpubuf_ctx *ctx, const struct t_gemm *g,
		       struct gpubuf_matrix *parent, struct gpubuf_matrix *a)
{
	struct gpubuf_matrix t;

	if (!g->transpose_a)
		return t_sub_alloc(ctx, g->dt, g->sh.m, g->sh.k,
				   g->layouts & 1, parent, a);
	T_EQ(t_sub_alloc(ctx, g->dt, g->sh.k, g->sh.m, g->layouts & 1,
			 parent, &t), 0);
	return gpubuf_matrix_transpose(&t, a);
}

static int t_gemm_run(struct gpubuf_ctx *ctx, struct gpubuf_vk *vk,
		      const struct t_gemm *g)
{
	struct gpubuf_matrix pa, pb, pc, a, b, c;
	struct gpubuf_vk_matrix va, vb, vc;
	struct gpubuf_vk_memory mem;
	int bad = 0;

	T_EQ(t_operand_a(ctx, g, &pa, &a), 0);
	T_EQ(t_sub_alloc(ctx, g->dt, g->sh.k, g->sh.n, (g->layouts >> 1) & 1,
			 &pb, &b), 0);
	T_EQ(t_sub_alloc(ctx, g->dt, g->sh.m, g->sh.n, (g->layouts >> 2) & 1,
			 &pc, &c), 0);
	t_fill_nan(&pa);
	t_fill_nan(&pb);
	t_fill_nan(&pc);
	/* alpha = 0 must not read A or B, beta = 0 must not read C. */
	if (g->alpha != 0) {
		t_fill(&a, 1);
		t_fill(&b, 2);
	}
	if (g->beta != 0)
		t_fill(&c, 3);
	T_EQ(gpubuf_vk_import(pa.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_import(pb.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_import(pc.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_matrix_view(&a, vk, &va), 0);
	T_EQ(gpubuf_vk_matrix_view(&b, vk, &vb), 0);
	T_EQ(gpubuf_vk_matrix_view(&c, vk, &vc), 0);
	T_EQ(gpubuf_vk_gemm(g->alpha, &va, &vb, g->beta, &vc), 0);
	for (size_t i = 0; i < g->sh.m && !bad; i++)
		for (size_t j = 0; j < g->sh.n && !bad; j++) {
			double ref = 0, mag = 0;
			double c0 = g->beta != 0 ? t_val(i, j, 3) : 0;

			for (size_t p = 0; p < g->sh.k && g->alpha != 0; p++) {
				double ab = t_val(i, p, 1) * t_val(p, j, 2);

				ref += ab;
				mag += fabs(ab);
			}
			ref = g->alpha * ref + g->beta * c0;
			mag = fabs(g->alpha) * mag + fabs(g->beta * c0);
			if (!t_close(t_get(&c, i, j), ref, mag, g->sh.k,
				     g->dt)) {
				printf("# C(%zu,%zu) = %.17g, expected %.17g\n",
				       i, j, t_get(&c, i, j), ref);
				bad = 1;
			}
		}
	if (!bad)
		bad = !t_padding_kept(&pc, &c, 2, 3);
	gpubuf_matrix_release(&pa);
	gpubuf_matrix_release(&pb);
	gpubuf_matrix_release(&pc);
	return bad ? T_FAIL : T_PASS;
}

static int gemm_every_layout_matches_reference(void)
{
	static const struct t_shape shapes[] = {
		{ 37, 45, 53 }, { 64, 32, 96 }, { 1, 1, 1 }, { 17, 33, 0 },
		{ 5, 70, 3 },
	};
	static const double ab[][2] = {
		{ 1.25, -0.5 }, { 0.75, 0 }, { 0, 2.0 },
	};
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk *vk = t_vk(0);
	struct gpubuf_vk_info info;
	int cases = 0;

	T_CHECK(vk);
	T_EQ(gpubuf_vk_info(vk, &info), 0);
	for (int d = 0; d < 2; d++) {
		enum gpubuf_dtype dt = d ? GPUBUF_DTYPE_F64 : GPUBUF_DTYPE_F32;

		if (d && !(info.features & GPUBUF_VK_FEATURE_FLOAT64)) {
			printf("# %s has no shaderFloat64: f32 only\n",
			       info.name);
			continue;
		}
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
			for (unsigned int l = 0; l < 16; l++)
				for (size_t x = 0; x < 3; x++) {
					struct t_gemm g = {
						dt, shapes[s], l & 7, l >> 3,
						ab[x][0], ab[x][1],
					};

					/* alpha/beta variants on one layout. */
					if (x && l)
						continue;
					if (t_gemm_run(ctx, vk, &g) != T_PASS) {
						printf("# dtype %d, %zux%zux%zu, layouts %u, transposed A %d, alpha %g, beta %g\n",
						       dt, g.sh.m, g.sh.n,
						       g.sh.k, g.layouts,
						       g.transpose_a, g.alpha,
						       g.beta);
						return T_FAIL;
					}
					cases++;
				}
	}
	printf("# %d GEMM cases on %s\n", cases, info.name);
	gpubuf_vk_close(vk);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * y = alpha A x + beta y. Unit strides: x a column of a column-major
 * parent, y a row of a row-major one; strided: both columns of row-major
 * parents, so incx and incy are their parents' ld. Each view sits at
 * (2, 3) in its parent, or at (4, 4) where aligned: then a row-major A's
 * rows and a unit-stride x start on 16 bytes, the case gemv.comp reads
 * four elements a load.
 */
static int t_gemv_run(struct gpubuf_ctx *ctx, struct gpubuf_vk *vk,
		      enum gpubuf_dtype dt, size_t m, size_t k,
		      enum gpubuf_layout la, double alpha, double beta,
		      bool strided, bool aligned)
{
	struct gpubuf_matrix pa, px, py, a, x, y;
	struct gpubuf_vk_matrix va, vx, vy;
	struct gpubuf_vk_memory mem;
	size_t r0 = aligned ? 4 : 2, c0 = aligned ? 4 : 3;
	int bad = 0;

	T_EQ(t_sub_alloc_at(ctx, dt, m, k, la, r0, c0, &pa, &a), 0);
	T_EQ(t_sub_alloc_at(ctx, dt, k, 1, strided ? GPUBUF_ROW_MAJOR :
			    GPUBUF_COL_MAJOR, r0, c0, &px, &x), 0);
	if (strided)
		T_EQ(t_sub_alloc_at(ctx, dt, m, 1, GPUBUF_ROW_MAJOR, r0, c0,
				    &py, &y), 0);
	else
		T_EQ(t_sub_alloc_at(ctx, dt, 1, m, GPUBUF_ROW_MAJOR, r0, c0,
				    &py, &y), 0);
	if (aligned && la == GPUBUF_ROW_MAJOR && !strided) {
		/* Else the test would not reach the path it is for. */
		T_EQ((uintptr_t)gpubuf_matrix_data(&a) % 16, 0);
		T_EQ((uintptr_t)gpubuf_matrix_data(&x) % 16, 0);
		T_EQ(a.ld * gpubuf_dtype_size(dt) % 16, 0);
	}
	t_fill_nan(&pa);
	t_fill_nan(&px);
	t_fill_nan(&py);
	if (alpha != 0) {
		t_fill(&a, 4);
		t_fill(&x, 5);
	}
	if (beta != 0)
		t_fill_vec(&y, 6);
	T_EQ(gpubuf_vk_import(pa.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_import(px.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_import(py.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_matrix_view(&a, vk, &va), 0);
	T_EQ(gpubuf_vk_matrix_view(&x, vk, &vx), 0);
	T_EQ(gpubuf_vk_matrix_view(&y, vk, &vy), 0);
	T_EQ(gpubuf_vk_gemv(alpha, &va, &vx, beta, &vy), 0);
	for (size_t i = 0; i < m && !bad; i++) {
		double ref = 0, mag = 0, y0 = beta != 0 ? t_val(0, i, 6) : 0;

		for (size_t p = 0; p < k && alpha != 0; p++) {
			ref += t_val(i, p, 4) * t_val(p, 0, 5);
			mag += fabs(t_val(i, p, 4) * t_val(p, 0, 5));
		}
		ref = alpha * ref + beta * y0;
		mag = fabs(alpha) * mag + fabs(beta * y0);
		if (!t_close(t_vec(&y, i), ref, mag, k, dt)) {
			printf("# y(%zu) = %.17g, expected %.17g\n", i,
			       t_vec(&y, i), ref);
			bad = 1;
		}
	}
	if (!bad)
		bad = !t_padding_kept(&py, &y, r0, c0);
	gpubuf_matrix_release(&pa);
	gpubuf_matrix_release(&px);
	gpubuf_matrix_release(&py);
	return bad ? T_FAIL : T_PASS;
}

static int gemv_both_layouts_match_reference(void)
{
	static const struct { size_t m, k; double alpha, beta; } cases[] = {
		{ 300, 177, -0.75, 2.0 }, { 3, 1025, 1, 0 }, { 129, 1, 2, 0.5 },
		{ 65, 0, 1, -1 }, { 40, 40, 0, 3 },
	};
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk *vk = t_vk(0);
	struct gpubuf_vk_info info;
	int n = 0;

	T_CHECK(vk);
	T_EQ(gpubuf_vk_info(vk, &info), 0);
	for (int d = 0; d < 2; d++) {
		enum gpubuf_dtype dt = d ? GPUBUF_DTYPE_F64 : GPUBUF_DTYPE_F32;

		if (d && !(info.features & GPUBUF_VK_FEATURE_FLOAT64))
			continue;
		for (int l = 0; l < 4; l++)
			for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]);
			     c++) {
				if (t_gemv_run(ctx, vk, dt, cases[c].m,
					       cases[c].k, l & 1, cases[c].alpha,
					       cases[c].beta, l >> 1,
					       false) != T_PASS) {
					printf("# dtype %d, %zux%zu, layout %d, strided vectors %d\n",
					       dt, cases[c].m, cases[c].k, l & 1,
					       l >> 1);
					return T_FAIL;
				}
				n++;
			}
	}
	printf("# %d GEMV cases\n", n);
	gpubuf_vk_close(vk);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * Views placed so that gemv.comp reads a row-major A and x four elements a
 * load: k a multiple of four, with a tail of one to three, and below the
 * eight where that path starts; both dtypes, all four layouts.
 */
static int gemv_aligned_rows_match_reference(void)
{
	static const size_t ks[] = { 7, 8, 11, 64, 177, 1026 };
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk *vk = t_vk(0);
	struct gpubuf_vk_info info;
	int n = 0;

	T_CHECK(vk);
	T_EQ(gpubuf_vk_info(vk, &info), 0);
	for (int d = 0; d < 2; d++) {
		enum gpubuf_dtype dt = d ? GPUBUF_DTYPE_F64 : GPUBUF_DTYPE_F32;

		if (d && !(info.features & GPUBUF_VK_FEATURE_FLOAT64))
			continue;
		for (int l = 0; l < 4; l++)
			for (size_t c = 0; c < sizeof(ks) / sizeof(ks[0]); c++) {
				if (t_gemv_run(ctx, vk, dt, 131, ks[c], l & 1,
					       1.5, -0.25, l >> 1,
					       true) != T_PASS) {
					printf("# dtype %d, 131x%zu, layout %d, strided vectors %d\n",
					       dt, ks[c], l & 1, l >> 1);
					return T_FAIL;
				}
				n++;
			}
	}
	printf("# %d aligned GEMV cases\n", n);
	gpubuf_vk_close(vk);
	gpubuf_close(ctx);
	return T_PASS;
}

/* The same GEMM under the validation layer: no error reported. */
static int validation_layer_reports_nothing(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk *vk = t_vk(GPUBUF_VK_OPEN_VALIDATION);
	struct t_gemm g = { GPUBUF_DTYPE_F32, { 33, 20, 17 }, 5, true, 1, 1 };
	struct gpubuf_vk_info info;

	T_CHECK(vk);
	T_EQ(t_gemm_run(ctx, vk, &g), T_PASS);
	T_EQ(t_gemv_run(ctx, vk, GPUBUF_DTYPE_F32, 70, 30, GPUBUF_COL_MAJOR,
			1, 1, true, false), T_PASS);
	T_EQ(t_gemv_run(ctx, vk, GPUBUF_DTYPE_F32, 70, 30, GPUBUF_ROW_MAJOR,
			1, 1, false, true), T_PASS);
	T_EQ(gpubuf_vk_info(vk, &info), 0);
	T_EQ(info.validation_errors, 0);
	gpubuf_vk_close(vk);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * A fork() child cannot use the parent's device (its DRM files, threads
 * and lock are the parent's): every call answers -ENODEV, and its last
 * unref forgets the parent's import without calling the driver. The
 * parent goes on as before.
 */
static int fork_child_gets_enodev(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk *vk = t_vk(0);
	struct gpubuf_vk_matrix a, c, v;
	struct gpubuf_vk_memory mem;
	struct gpubuf_matrix ma, mc;
	struct gpubuf_vk_info info;
	int status;
	pid_t pid;

	T_CHECK(vk);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 8, 8,
				 GPUBUF_ROW_MAJOR, 0, &ma), 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 8, 8,
				 GPUBUF_ROW_MAJOR, 0, &mc), 0);
	T_EQ(gpubuf_vk_import(ma.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_import(mc.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_matrix_view(&ma, vk, &a), 0);
	T_EQ(gpubuf_vk_matrix_view(&mc, vk, &c), 0);
	fflush(stdout);
	pid = fork();
	T_CHECK(pid >= 0);
	if (pid == 0) {
		int ok = gpubuf_vk_gemm(1, &a, &a, 0, &c) == -ENODEV &&
			 strstr(gpubuf_last_error(), "fork") &&
			 gpubuf_vk_import(ma.buf, vk, &mem) == -ENODEV &&
			 gpubuf_vk_matrix_view(&ma, vk, &v) == -ENODEV &&
			 gpubuf_vk_info(vk, &info) == -ENODEV &&
			 gpubuf_vk_release(mc.buf, vk) == -ENODEV;

		gpubuf_matrix_release(&ma);
		gpubuf_matrix_release(&mc);
		gpubuf_vk_close(vk);
		_exit(ok ? 0 : 1);
	}
	T_EQ(waitpid(pid, &status, 0), pid);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	t_fill(&ma, 1);
	T_EQ(gpubuf_vk_gemm(1, &a, &a, 0, &c), 0);
	T_CHECK(t_get(&mc, 0, 0) != 0 || t_get(&ma, 0, 0) == 0);
	gpubuf_matrix_release(&ma);
	gpubuf_matrix_release(&mc);
	gpubuf_vk_close(vk);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * V3: a call past GPUBUF_VK_MAX_FLOPS (read when a device is opened) goes
 * in several submissions of whole rows of the output, or of columns when
 * one row alone is past the bound; every element is still one dot
 * product, so the results are those of one submission: checked against
 * the reference for every layout, with the padding untouched. A bound of
 * 2000 splits the 37 x 45 x 53 GEMM (106 operations an element) into
 * blocks of 18 columns, 20000 into blocks of 4 rows. A bound that is not
 * a positive integer is refused when the device is opened.
 */
static int bounded_submissions_match_reference(void)
{
	static const char *const bounds[] = { "2000", "20000" };
	static const char *const bad[] = { "0", "-5", "12x", "" };
	static const struct t_shape shapes[] = { { 37, 45, 53 }, { 5, 70, 3 } };
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk *vk = NULL;
	int cases = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		T_EQ(setenv("GPUBUF_VK_MAX_FLOPS", bad[i], 1), 0);
		if (!bad[i][0]) {
			/* Empty is unset: the default. */
			vk = t_vk(0);
			T_CHECK(vk);
			gpubuf_vk_close(vk);
			continue;
		}
		T_EQ(gpubuf_vk_open(0, 0, &vk), -EINVAL);
		T_CHECK(strstr(gpubuf_last_error(), "GPUBUF_VK_MAX_FLOPS"));
		T_CHECK(vk == NULL);
	}
	for (size_t b = 0; b < sizeof(bounds) / sizeof(bounds[0]); b++) {
		T_EQ(setenv("GPUBUF_VK_MAX_FLOPS", bounds[b], 1), 0);
		vk = t_vk(0);
		T_CHECK(vk);
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
			for (unsigned int l = 0; l < 16; l++) {
				struct t_gemm g = { GPUBUF_DTYPE_F32, shapes[s],
						    l & 7, l >> 3, 1.25, -0.5 };

				if (t_gemm_run(ctx, vk, &g) != T_PASS) {
					printf("# bound %s, %zux%zux%zu, layouts %u, transposed A %d\n",
					       bounds[b], g.sh.m, g.sh.n, g.sh.k,
					       g.layouts, g.transpose_a);
					return T_FAIL;
				}
				cases++;
			}
		for (int l = 0; l < 4; l++) {
			if (t_gemv_run(ctx, vk, GPUBUF_DTYPE_F32, 300, 177, l & 1,
				       -0.75, 2.0, l >> 1, l == 0) != T_PASS) {
				printf("# bound %s, GEMV 300x177, layout %d, strided vectors %d\n",
				       bounds[b], l & 1, l >> 1);
				return T_FAIL;
			}
			cases++;
		}
		gpubuf_vk_close(vk);
	}
	unsetenv("GPUBUF_VK_MAX_FLOPS");
	printf("# %d cases under bounded submissions\n", cases);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * The device read ceiling's kernel (gpubuf_vk_stream_read, what
 * gpubuf-bench vulkan's device_read row runs) reads every 16-byte word:
 * one word holding the magic value in a zeroed buffer makes the xor equal
 * it, so the sink is written, wherever the word lies, also across
 * submissions cut by GPUBUF_VK_MAX_FLOPS; a range that stops just before
 * the word leaves the sink alone.
 */
static int t_stream_read(struct gpubuf_vk *vk, struct gpubuf *buf,
			 uint64_t addr, size_t words, struct gpubuf *sink,
			 uint64_t sink_addr, size_t pos, size_t read_words,
			 uint32_t want)
{
	uint32_t *w = gpubuf_ptr(buf), *got = gpubuf_ptr(sink);

	memset(w, 0, words * 16);
	w[pos * 4] = 0x9e3779b9u;
	*got = 0;
	T_EQ(gpubuf_vk_stream_read(vk, addr, read_words * 16, sink_addr), 0);
	if (*got != want) {
		printf("# word %zu of %zu, %zu read: sink %#x, want %#x\n",
		       pos, words, read_words, *got, want);
		return T_FAIL;
	}
	return T_PASS;
}

static int stream_read_reads_every_word(void)
{
	static const char *const bounds[] = { NULL, "4000" };
	const size_t words = (1u << 20) / 16;
	const size_t at[] = { 0, 1, 63, 64, 999, 1000, 1001, words / 2,
			      words - 1 };
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk_memory m, ms;
	struct gpubuf *buf, *sink;

	T_EQ(gpubuf_alloc(ctx, words * 16, NULL, &buf), 0);
	T_EQ(gpubuf_alloc(ctx, 4096, NULL, &sink), 0);
	for (size_t b = 0; b < sizeof(bounds) / sizeof(bounds[0]); b++) {
		struct gpubuf_vk *vk;

		if (bounds[b])
			T_EQ(setenv("GPUBUF_VK_MAX_FLOPS", bounds[b], 1), 0);
		vk = t_vk(0);
		unsetenv("GPUBUF_VK_MAX_FLOPS");
		T_CHECK(vk);
		T_EQ(gpubuf_vk_import(buf, vk, &m), 0);
		T_EQ(gpubuf_vk_import(sink, vk, &ms), 0);
		for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
			T_EQ(t_stream_read(vk, buf, m.address, words, sink,
					   ms.address, at[i], words,
					   0x9e3779b9u), T_PASS);
			/* Stopping just before the word: not read. */
			T_EQ(t_stream_read(vk, buf, m.address, words, sink,
					   ms.address, at[i], at[i], 0),
			     T_PASS);
		}
		/* Bad arguments: nothing runs. */
		T_EQ(gpubuf_vk_stream_read(NULL, m.address, 16, 0), -EINVAL);
		T_EQ(gpubuf_vk_stream_read(vk, m.address + 4, 16, 0), -EINVAL);
		T_EQ(gpubuf_vk_stream_read(vk, m.address, 24, 0), -EINVAL);
		T_EQ(gpubuf_vk_stream_read(vk, m.address, 16, ms.address + 2),
		     -EINVAL);
		T_EQ(gpubuf_vk_stream_read(vk, 0, 16, 0), -EINVAL);
		T_EQ(gpubuf_vk_release(buf, vk), 0);
		T_EQ(gpubuf_vk_release(sink, vk), 0);
		gpubuf_vk_close(vk);
	}
	gpubuf_unref(buf);
	gpubuf_unref(sink);
	gpubuf_close(ctx);
	return T_PASS;
}

struct t_thread {
	struct gpubuf_ctx *ctx;
	struct gpubuf_vk *vk;
	pthread_t id;
	int result;
};

static void *t_gemm_thread(void *arg)
{
	struct t_thread *t = arg;
	struct t_gemm g = { GPUBUF_DTYPE_F32, { 20, 24, 28 }, 0, false, 1, 1 };

	t->result = T_PASS;
	for (int i = 0; i < 8 && t->result == T_PASS; i++) {
		g.layouts = (unsigned int)i & 7;
		t->result = t_gemm_run(t->ctx, t->vk, &g);
	}
	return NULL;
}

/* Threads share one device: its queue and command buffer are locked. */
static int threads_share_a_device(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk *vk = t_vk(0);
	struct t_thread t[4];

	T_CHECK(vk);
	for (int i = 0; i < 4; i++) {
		t[i] = (struct t_thread){ .ctx = ctx, .vk = vk };
		T_EQ(pthread_create(&t[i].id, NULL, t_gemm_thread, &t[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		T_EQ(pthread_join(t[i].id, NULL), 0);
		T_EQ(t[i].result, T_PASS);
	}
	gpubuf_vk_close(vk);
	gpubuf_close(ctx);
	return T_PASS;
}

/* A read-only view cannot be an output; operands of two devices neither. */
static int outputs_checked(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_vk *vk = t_vk(0), *vk2 = t_vk(0);
	struct gpubuf_vk_matrix a, b, c;
	struct gpubuf_vk_memory mem;
	struct gpubuf_matrix m;

	T_CHECK(vk && vk2);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 8, 8,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_vk_import(m.buf, vk, &mem), 0);
	T_EQ(gpubuf_vk_import(m.buf, vk2, &mem), 0);
	T_EQ(gpubuf_vk_matrix_view(&m, vk, &a), 0);
	T_EQ(gpubuf_vk_matrix_view(&m, vk2, &b), 0);
	c = a;
	c.flags |= GPUBUF_VK_MATRIX_READ_ONLY;
	T_EQ(gpubuf_vk_gemm(1, &a, &a, 0, &c), -EROFS);
	T_EQ(gpubuf_vk_gemm(1, &a, &b, 0, &a), -EINVAL);
	T_CHECK(strstr(gpubuf_last_error(), "different Vulkan devices"));
	c.vk = NULL;
	T_EQ(gpubuf_vk_gemm(1, &c, &a, 0, &a), -EINVAL);
	gpubuf_vk_close(vk2);
	gpubuf_vk_close(vk);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST(bad_arguments_are_einval),
		T_TEST(no_such_device_is_enodev),
		T_TEST_ON(T_VULKAN, device_says_what_it_can),
		T_TEST_ON(T_VULKAN, import_counts_and_releases),
		T_TEST_ON(T_MODULE, dmabuf_import_failure_keeps_fds),
		T_TEST_ON(T_MODULE, dmabuf_operands_synced_around_dispatch),
		T_TEST_ON(T_VULKAN, misaligned_view_refused),
		T_TEST_ON(T_VULKAN, outputs_checked),
		T_TEST_ON(T_VULKAN, gemv_both_layouts_match_reference),
		T_TEST_ON(T_VULKAN, gemv_aligned_rows_match_reference),
		T_TEST_ON(T_VULKAN, gemm_every_layout_matches_reference),
		T_TEST_ON(T_VULKAN, bounded_submissions_match_reference),
		T_TEST_ON(T_VULKAN, stream_read_reads_every_word),
		T_TEST_ON(T_VULKAN, validation_layer_reports_nothing),
		T_TEST_ON(T_VULKAN, threads_share_a_device),
		T_TEST_ON(T_VULKAN, fork_child_gets_enodev),
	};

	return t_run(tests, sizeof(tests) / sizeof(tests[0]));
}
