// SPDX-License-Identifier: MIT
/*
 * Description: DRM PRIME import of buffers (gpubuf_drm_import/release) and
 * the amdgpu mapping's refusals. In the QEMU guest, against vgem: handles,
 * nesting per DRM file, several DRM files, the dma-buf's importer
 * attachments (debugfs bufinfo) and the module's live-buffer counter, the
 * last unref, fork, threads. On the host (memfd backend) and everywhere:
 * NULL arguments and memfd buffers. Built as a dynamic program for the
 * guest, since libgpubuf dlopen()s libdrm.so.2.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if __has_include(<drm/drm.h>)
#include <drm/drm.h>
#else
#include <libdrm/drm.h>
#endif

#include "tap.h"
#include "drm_test.h"

/* Byte off of the handle's object, read through its own export; -1. */
static int t_handle_byte(int card, uint32_t handle, size_t off)
{
	struct drm_prime_handle p = { .handle = handle, .flags = DRM_CLOEXEC };
	unsigned char *q;
	int v;

	if (ioctl(card, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p))
		return -1;
	q = mmap(NULL, T_SIZE, PROT_READ, MAP_SHARED, p.fd, 0);
	close(p.fd);
	if (q == MAP_FAILED)
		return -1;
	v = q[off];
	munmap(q, T_SIZE);
	return v;
}

static int null_arguments_einval(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx);
	uint32_t h = 77;
	uint64_t va = 77;

	T_CHECK(buf);
	T_EQ(gpubuf_drm_import(NULL, 0, &h), -EINVAL);
	T_EQ(gpubuf_drm_import(buf, 0, NULL), -EINVAL);
	T_EQ(gpubuf_drm_release(NULL, 0), -EINVAL);
	T_EQ(gpubuf_amdgpu_map(NULL, 0, &va), -EINVAL);
	T_EQ(gpubuf_amdgpu_map(buf, 0, NULL), -EINVAL);
	T_EQ(gpubuf_amdgpu_unmap(NULL, 0), -EINVAL);
	T_EQ(h, 77);
	T_EQ(va, 77);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

/* memfd pages have no dma-buf: refused whatever drm_fd is. */
static int memfd_buffer_eopnotsupp(void)
{
	struct gpubuf_ctx *ctx = NULL;
	struct gpubuf *buf;
	int card = access("/dev/dri", F_OK) ? -1 : t_open_vgem();
	int fds[] = { -1, 0, card };
	uint32_t h = 77;
	uint64_t va = 77;

	T_EQ(gpubuf_open(&ctx, GPUBUF_OPEN_FORCE_MEMFD |
			 GPUBUF_OPEN_IGNORE_ENV), 0);
	buf = t_buf(ctx);
	T_CHECK(buf);
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		T_EQ(gpubuf_drm_import(buf, fds[i], &h), -EOPNOTSUPP);
		T_CHECK(strstr(gpubuf_last_error(), "memfd"));
		T_EQ(gpubuf_drm_release(buf, fds[i]), -EOPNOTSUPP);
		T_EQ(gpubuf_amdgpu_map(buf, fds[i], &va), -EOPNOTSUPP);
		T_EQ(gpubuf_amdgpu_unmap(buf, fds[i]), -EOPNOTSUPP);
	}
	T_EQ(h, 77);
	T_EQ(va, 77);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	if (card >= 0)
		close(card);
	return T_PASS;
}

/* drm_fd: -1 and a closed fd are -EBADF, a file that is not DRM -ENOTTY. */
static int bad_drm_fd(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC), pipefd[2], closed;
	int card = t_open_vgem();
	uint32_t h = 77;
	uint64_t va = 77;

	T_CHECK(buf && null >= 0 && card >= 0);
	T_EQ(pipe(pipefd), 0);
	closed = dup(null);
	close(closed);
	struct { int fd, err; } cases[] = {
		{ -1, -EBADF }, { closed, -EBADF }, { null, -ENOTTY },
		{ pipefd[0], -ENOTTY }, { gpubuf_fd(buf), -ENOTTY },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		T_EQ(gpubuf_drm_import(buf, cases[i].fd, &h), cases[i].err);
		T_CHECK(gpubuf_last_error()[0]);
		T_EQ(gpubuf_drm_release(buf, cases[i].fd), cases[i].err);
		T_EQ(gpubuf_amdgpu_map(buf, cases[i].fd, &va), cases[i].err);
		T_EQ(gpubuf_amdgpu_unmap(buf, cases[i].fd), cases[i].err);
	}
	/* A DRM file the buffer was never imported into. */
	T_EQ(gpubuf_drm_release(buf, card), -ENXIO);
	T_EQ(h, 77);
	T_EQ(va, 77);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	close(pipefd[0]);
	close(pipefd[1]);
	close(null);
	close(card);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

/* The handle is our buffer's pages, attached once, closed by release. */
static int import_gives_handle(void)
{
	struct gpubuf_ctx *ctx = t_open();
	long live = t_live();
	struct gpubuf *buf = t_buf(ctx);
	int card = t_open_vgem();
	uint32_t h = 0;

	T_CHECK(buf && card >= 0 && live >= 0);
	T_EQ(t_live(), live + 1);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	T_EQ(gpubuf_drm_import(buf, card, &h), 0);
	T_CHECK(h != 0);
	T_EQ(t_attachments(gpubuf_fd(buf)), 1);
	T_EQ(t_handle_is(card, h, buf), 1);
	/* Exported back, the handle's object maps the same pages. */
	((unsigned char *)gpubuf_ptr(buf))[T_SIZE - 1] = 0xc3;
	T_EQ(t_handle_byte(card, h, 0), 0x5a);
	T_EQ(t_handle_byte(card, h, T_SIZE - 1), 0xc3);

	T_EQ(gpubuf_drm_release(buf, card), 0);
	T_EQ(t_handle_is(card, h, buf), 0);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	T_EQ(gpubuf_drm_release(buf, card), -ENXIO);
	gpubuf_unref(buf);
	T_EQ(t_live(), live);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * The kernel returns the same handle for a second import into one DRM
 * file, without a reference of its own: only the last release closes it.
 * A dup() of the fd is the same file and counts there too.
 */
static int same_file_nests(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx);
	int card = t_open_vgem(), card2;
	uint32_t h1 = 0, h2 = 0, h3 = 0;

	T_CHECK(buf && card >= 0);
	card2 = dup(card);
	T_EQ(gpubuf_drm_import(buf, card, &h1), 0);
	T_EQ(gpubuf_drm_import(buf, card, &h2), 0);
	T_EQ(gpubuf_drm_import(buf, card2, &h3), 0);
	T_EQ(h1, h2);
	T_EQ(h1, h3);
	T_EQ(t_attachments(gpubuf_fd(buf)), 1);
	T_EQ(gpubuf_drm_release(buf, card), 0);
	T_EQ(gpubuf_drm_release(buf, card2), 0);
	T_EQ(t_handle_is(card, h1, buf), 1);
	T_EQ(t_attachments(gpubuf_fd(buf)), 1);
	T_EQ(gpubuf_drm_release(buf, card), 0);
	T_EQ(t_handle_is(card, h1, buf), 0);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	T_EQ(gpubuf_drm_release(buf, card2), -ENXIO);
	close(card2);
	close(card);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

/* Each DRM file imports a foreign dma-buf with an attachment of its own. */
static int several_drm_files(void)
{
	struct gpubuf_ctx *ctx = t_open();
	long live = t_live();
	struct gpubuf *buf = t_buf(ctx);
	int card[3];
	uint32_t h[3];

	T_CHECK(buf);
	for (int i = 0; i < 3; i++) {
		card[i] = t_open_vgem();
		T_CHECK(card[i] >= 0);
		T_EQ(gpubuf_drm_import(buf, card[i], &h[i]), 0);
		T_EQ(t_attachments(gpubuf_fd(buf)), i + 1);
	}
	for (int i = 0; i < 3; i++)
		T_EQ(t_handle_is(card[i], h[i], buf), 1);
	/* Releasing one file's import leaves the others alone. */
	T_EQ(gpubuf_drm_release(buf, card[1]), 0);
	T_EQ(t_handle_is(card[1], h[1], buf), 0);
	T_EQ(t_handle_is(card[0], h[0], buf), 1);
	T_EQ(t_handle_is(card[2], h[2], buf), 1);
	T_EQ(t_attachments(gpubuf_fd(buf)), 2);
	T_EQ(gpubuf_drm_release(buf, card[0]), 0);
	T_EQ(gpubuf_drm_release(buf, card[2]), 0);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	for (int i = 0; i < 3; i++)
		close(card[i]);
	gpubuf_unref(buf);
	T_EQ(t_live(), live);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * The last unref closes every handle still held, in every DRM file, and
 * the buffer is freed; the caller's DRM files stay open and usable.
 */
static int last_unref_releases(void)
{
	struct gpubuf_ctx *ctx = t_open();
	long live = t_live();
	struct gpubuf *buf = t_buf(ctx);
	int a = t_open_vgem(), b = t_open_vgem(), dmabuf;
	uint32_t ha, hb;

	T_CHECK(buf && a >= 0 && b >= 0);
	T_EQ(gpubuf_drm_import(buf, a, &ha), 0);
	T_EQ(gpubuf_drm_import(buf, a, &ha), 0);
	T_EQ(gpubuf_drm_import(buf, b, &hb), 0);
	dmabuf = dup(gpubuf_fd(buf));	/* to look the buffer up afterwards */
	T_EQ(t_attachments(dmabuf), 2);
	gpubuf_unref(buf);
	T_EQ(t_attachments(dmabuf), 0);
	close(dmabuf);
	T_EQ(t_live(), live);
	/* The handles are gone: nothing of that number in either file. */
	struct drm_prime_handle p = { .handle = ha, .flags = DRM_CLOEXEC };
	T_EQ(ioctl(a, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p), -1);
	T_EQ(errno, ENOENT);
	p.handle = hb;
	T_EQ(ioctl(b, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p), -1);
	T_EQ(errno, ENOENT);
	close(a);
	close(b);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * The caller closes drm_fd first: the library's dup keeps the DRM file,
 * so the handle and the attachment stay until the last unref.
 */
static int drm_fd_closed_first(void)
{
	struct gpubuf_ctx *ctx = t_open();
	long live = t_live();
	struct gpubuf *buf = t_buf(ctx);
	int card = t_open_vgem(), dmabuf;
	uint32_t h;

	T_CHECK(buf && card >= 0);
	T_EQ(gpubuf_drm_import(buf, card, &h), 0);
	close(card);
	T_EQ(t_attachments(gpubuf_fd(buf)), 1);
	T_EQ(gpubuf_drm_release(buf, card), -EBADF);
	dmabuf = dup(gpubuf_fd(buf));
	gpubuf_unref(buf);
	T_EQ(t_attachments(dmabuf), 0);
	close(dmabuf);
	T_EQ(t_live(), live);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * Import after the fd that made the buffer is closed: a second buffer
 * from gpubuf_import() of a dup keeps the dma-buf after the first buffer
 * (its fd and mapping) and the dup are gone.
 */
static int import_after_owner_closed(void)
{
	struct gpubuf_ctx *ctx = t_open();
	long live = t_live();
	struct gpubuf *a = t_buf(ctx), *b = NULL;
	int card = t_open_vgem(), fd;
	uint32_t h;

	T_CHECK(a && card >= 0);
	((unsigned char *)gpubuf_ptr(a))[4096] = 0x17;
	fd = dup(gpubuf_fd(a));
	T_EQ(gpubuf_import(ctx, fd, &b), 0);
	close(fd);
	gpubuf_unref(a);
	T_EQ(t_live(), live + 1);
	T_EQ(gpubuf_drm_import(b, card, &h), 0);
	T_EQ(t_handle_is(card, h, b), 1);
	T_EQ(t_handle_byte(card, h, 4096), 0x17);
	T_EQ(gpubuf_drm_release(b, card), 0);
	T_EQ(t_attachments(gpubuf_fd(b)), 0);
	gpubuf_unref(b);
	T_EQ(t_live(), live);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

/* A fork() child shares the DRM file: its last unref must not close it. */
static int fork_child_leaves_handles(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx);
	int card = t_open_vgem(), status;
	uint32_t h;
	pid_t pid;

	T_CHECK(buf && card >= 0);
	T_EQ(gpubuf_drm_import(buf, card, &h), 0);
	pid = fork();
	T_CHECK(pid >= 0);
	if (pid == 0) {
		/* Not the child's import: release refuses, unref forgets. */
		int r = gpubuf_drm_release(buf, card);

		gpubuf_unref(buf);
		_exit(r == -ENXIO ? 0 : 1);
	}
	T_EQ(waitpid(pid, &status, 0), pid);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	T_EQ(t_handle_is(card, h, buf), 1);
	T_EQ(t_attachments(gpubuf_fd(buf)), 1);
	T_EQ(gpubuf_drm_release(buf, card), 0);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	gpubuf_unref(buf);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

struct t_thr {
	struct gpubuf *buf;
	int card;
	uint32_t handle;
	int bad;
};

static void *t_thr_fn(void *arg)
{
	struct t_thr *t = arg;

	for (int i = 0; i < 200; i++) {
		uint32_t h;

		if (gpubuf_drm_import(t->buf, t->card, &h) || h != t->handle)
			t->bad++;
		if (gpubuf_drm_release(t->buf, t->card))
			t->bad++;
	}
	return NULL;
}

/* Imports and releases from several threads keep the count exact. */
static int threads_count_exactly(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx);
	struct t_thr t[4];
	pthread_t tid[4];
	int card = t_open_vgem();
	uint32_t h;

	T_CHECK(buf && card >= 0);
	/* One import held throughout, so every thread sees the same handle. */
	T_EQ(gpubuf_drm_import(buf, card, &h), 0);
	for (int i = 0; i < 4; i++) {
		t[i] = (struct t_thr){ buf, card, h, 0 };
		T_EQ(pthread_create(&tid[i], NULL, t_thr_fn, &t[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(tid[i], NULL);
		T_EQ(t[i].bad, 0);
	}
	T_EQ(t_handle_is(card, h, buf), 1);
	T_EQ(gpubuf_drm_release(buf, card), 0);
	T_EQ(t_handle_is(card, h, buf), 0);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	gpubuf_unref(buf);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

/* vgem is not amdgpu: -ENODEV naming the driver, nothing left behind. */
static int amdgpu_refuses_vgem(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx);
	int card = t_open_vgem();
	uint64_t va = 77;

	T_CHECK(buf && card >= 0);
	T_EQ(gpubuf_amdgpu_map(buf, card, &va), -ENODEV);
	printf("# %s\n", gpubuf_last_error());
	T_CHECK(strstr(gpubuf_last_error(), "vgem"));
	T_EQ(va, 77);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	T_EQ(gpubuf_amdgpu_unmap(buf, card), -ENXIO);
	gpubuf_unref(buf);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * Run with GPUBUF_TEST_NO_LIBDRM=1 and a stand-in libdrm.so.2 that lacks
 * libdrm's functions first on LD_LIBRARY_PATH (tests/check.sh does so in
 * the guest): no libdrm at run time is -ENODEV with the reason.
 */
static int no_libdrm_enodev(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx);
	int card = t_open_vgem();
	uint32_t h = 77;
	uint64_t va = 77;

	T_CHECK(buf && card >= 0);
	T_EQ(gpubuf_drm_import(buf, card, &h), -ENODEV);
	printf("# %s\n", gpubuf_last_error());
	T_CHECK(strstr(gpubuf_last_error(), "libdrm"));
	T_EQ(gpubuf_amdgpu_map(buf, card, &va), -ENODEV);
	T_CHECK(strstr(gpubuf_last_error(), "libdrm"));
	/* Nothing was imported, so nothing to release. */
	T_EQ(gpubuf_drm_release(buf, card), -ENXIO);
	T_EQ(gpubuf_amdgpu_unmap(buf, card), -ENXIO);
	T_EQ(h, 77);
	T_EQ(va, 77);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	gpubuf_unref(buf);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

int main(void)
{
	static const struct t_test no_libdrm[] = {
		T_TEST(null_arguments_einval),
		T_TEST(memfd_buffer_eopnotsupp),
		T_TEST_ON(T_VGEM, no_libdrm_enodev),
	};

	static const struct t_test tests[] = {
		T_TEST(null_arguments_einval),
		T_TEST(memfd_buffer_eopnotsupp),
		T_TEST_ON(T_VGEM, bad_drm_fd),
		T_TEST_ON(T_VGEM, import_gives_handle),
		T_TEST_ON(T_VGEM, same_file_nests),
		T_TEST_ON(T_VGEM, several_drm_files),
		T_TEST_ON(T_VGEM, last_unref_releases),
		T_TEST_ON(T_VGEM, drm_fd_closed_first),
		T_TEST_ON(T_VGEM, import_after_owner_closed),
		T_TEST_ON(T_VGEM, fork_child_leaves_handles),
		T_TEST_ON(T_VGEM, threads_count_exactly),
		T_TEST_ON(T_VGEM, amdgpu_refuses_vgem),
	};

	if (getenv("GPUBUF_TEST_NO_LIBDRM"))
		return T_RUN(no_libdrm);
	return T_RUN(tests);
}
