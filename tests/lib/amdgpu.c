// SPDX-License-Identifier: MIT
/*
 * Description: gpubuf_amdgpu_map/unmap against the stand-in libdrm.so.2
 * and libdrm_amdgpu.so.1 (tests/amdgpustub), in the QEMU guest on vgem:
 * which DRM file's GPU VM a mapping lands in, nesting, the GEM handle a
 * mapping shares with gpubuf_drm_import(), the last unref, and
 * libdrm_amdgpu's failures as libgpubuf reports them. The stand-in
 * libdrm keeps a GPU VM per DRM file as the amdgpu kernel driver does and
 * answers "is this address mapped in the file behind this fd". Without the
 * stand-ins loaded (on the host, or the guest's plain run) there is
 * nothing to test: the plan is empty. tests/check.sh runs it twice in
 * the guest, with a libdrm_amdgpu that has amdgpu_device_initialize2
 * (2.4.121) and with one that has not (2.4.114).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"
#include "drm_test.h"
#include "../amdgpustub/amdgpu_stub.h"

/* libgpubuf's VA alignment (drm/amdgpu.c). */
#define T_VA_ALIGN	(2ull << 20)

static gpubuf_amdgpu_stub_va_query_fn *t_va_query;
static gpubuf_amdgpu_stub_va_count_fn *t_va_count;
static gpubuf_amdgpu_stub_devices_fn *t_devices;
/* The stand-in's, as another libdrm_amdgpu user in the process calls them. */
static int (*t_amd_init)(int fd, uint32_t *major, uint32_t *minor, void **dev);
static int (*t_amd_deinit)(void *dev);

/* Whether the stand-ins are what libdrm.so.2 and libdrm_amdgpu.so.1 are. */
static int t_stub_load(void)
{
	/* The same objects libgpubuf gets: one per soname in a process. */
	void *drm = dlopen("libdrm.so.2", RTLD_NOW | RTLD_LOCAL);
	void *amd = dlopen("libdrm_amdgpu.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!drm || !amd)
		return 0;
	t_va_query = (gpubuf_amdgpu_stub_va_query_fn *)
		dlsym(drm, GPUBUF_AMDGPU_STUB_VA_QUERY);
	t_va_count = (gpubuf_amdgpu_stub_va_count_fn *)
		dlsym(drm, GPUBUF_AMDGPU_STUB_VA_COUNT);
	t_devices = (gpubuf_amdgpu_stub_devices_fn *)
		dlsym(amd, GPUBUF_AMDGPU_STUB_DEVICES);
	t_amd_init = (__typeof__(t_amd_init))dlsym(amd, "amdgpu_device_initialize");
	t_amd_deinit = (__typeof__(t_amd_deinit))
		dlsym(amd, "amdgpu_device_deinitialize");
	return t_va_query && t_va_count && t_devices && t_amd_init &&
	       t_amd_deinit;
}

/* Whether va is mapped (1), with these AMDGPU_VM_PAGE_* flags if so. */
static int t_mapped(int card, uint64_t va, uint64_t *flags)
{
	return t_va_query(card, va, flags);
}

/* The basics: a 2 MiB-aligned address mapped readable and writable in
 * the caller's file, attached once; unmap undoes all of it. */
static int map_and_unmap(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx);
	int card = t_open_vgem();
	uint64_t va = 0, flags = 0;

	T_CHECK(buf && card >= 0);
	T_EQ(gpubuf_amdgpu_map(buf, card, &va), 0);
	T_CHECK(va != 0 && va % T_VA_ALIGN == 0);
	T_EQ(t_mapped(card, va, &flags), 1);
	T_EQ(t_mapped(card, va + T_SIZE - 1, NULL), 1);
	T_EQ(flags, 6);		/* AMDGPU_VM_PAGE_READABLE | _WRITEABLE */
	T_EQ(t_attachments(gpubuf_fd(buf)), 1);
	T_EQ(gpubuf_amdgpu_unmap(buf, card), 0);
	T_EQ(t_mapped(card, va, NULL), 0);
	T_EQ(t_va_count(card), 0);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	T_EQ(t_devices(), 0);
	T_EQ(gpubuf_amdgpu_unmap(buf, card), -ENXIO);
	gpubuf_unref(buf);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

/* A second map of a buffer into one file counts; the last unmap unmaps. */
static int map_nests(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx);
	int card = t_open_vgem(), card2;
	uint64_t va1 = 0, va2 = 0;

	T_CHECK(buf && card >= 0);
	card2 = dup(card);
	T_EQ(gpubuf_amdgpu_map(buf, card, &va1), 0);
	T_EQ(gpubuf_amdgpu_map(buf, card2, &va2), 0);
	T_EQ(va1, va2);
	T_EQ(t_va_count(card), 1);
	T_EQ(gpubuf_amdgpu_unmap(buf, card), 0);
	T_EQ(t_mapped(card, va1, NULL), 1);
	T_EQ(gpubuf_amdgpu_unmap(buf, card2), 0);
	T_EQ(t_mapped(card, va1, NULL), 0);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	T_EQ(t_devices(), 0);
	close(card2);
	close(card);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

/* The last unref undoes a mapping still held; the file stays usable. */
static int last_unref_unmaps(void)
{
	struct gpubuf_ctx *ctx = t_open();
	long live = t_live();
	struct gpubuf *buf = t_buf(ctx);
	int card = t_open_vgem(), dmabuf;
	uint64_t va = 0;

	T_CHECK(buf && card >= 0);
	T_EQ(gpubuf_amdgpu_map(buf, card, &va), 0);
	T_EQ(gpubuf_amdgpu_map(buf, card, &va), 0);
	dmabuf = dup(gpubuf_fd(buf));
	gpubuf_unref(buf);
	T_EQ(t_mapped(card, va, NULL), 0);
	T_EQ(t_va_count(card), 0);
	T_EQ(t_attachments(dmabuf), 0);
	T_EQ(t_devices(), 0);
	close(dmabuf);
	T_EQ(t_live(), live);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * A mapping lands in the VM of the caller's DRM file (issue 23, defect 2).
 * libdrm_amdgpu keeps one device per GPU and process, made from the first
 * fd it was given, and imports and maps through that fd (libdrm 2.4.114
 * amdgpu_device.c: amdgpu_device_initialize; amdgpu_bo.c:
 * amdgpu_bo_import, amdgpu_bo_va_op_raw; the stand-in does the same): a
 * buffer mapped through a second open of the GPU must still be mapped in
 * that second file, and only there.
 */
static int map_in_second_open(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *b1 = t_buf(ctx), *b2 = t_buf(ctx);
	int first = t_open_vgem(), second = t_open_vgem();
	uint64_t va1 = 0, va2 = 0;

	T_CHECK(b1 && b2 && first >= 0 && second >= 0);
	T_EQ(gpubuf_amdgpu_map(b1, first, &va1), 0);
	T_EQ(gpubuf_amdgpu_map(b2, second, &va2), 0);
	T_EQ(t_mapped(second, va2, NULL), 1);
	T_EQ(t_mapped(first, va2, NULL), 0);
	T_EQ(t_mapped(first, va1, NULL), 1);
	T_EQ(t_mapped(second, va1, NULL), 0);
	/* One VA manager for the GPU: ranges apart in every file. */
	T_CHECK(va1 + T_SIZE <= va2 || va2 + T_SIZE <= va1);
	T_EQ(gpubuf_amdgpu_unmap(b2, second), 0);
	T_EQ(gpubuf_amdgpu_unmap(b1, first), 0);
	T_EQ(t_va_count(first), 0);
	T_EQ(t_va_count(second), 0);
	T_EQ(t_devices(), 0);
	gpubuf_unref(b1);
	gpubuf_unref(b2);
	close(first);
	close(second);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * The same when another library in the process (Mesa, ROCr) initialised
 * libdrm_amdgpu first, on a file of its own (issue 23, defect 2).
 */
static int map_after_other_libdrm_user(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx);
	int theirs = t_open_vgem(), mine = t_open_vgem();
	uint32_t major, minor;
	uint64_t va = 0;
	void *dev = NULL;

	T_CHECK(buf && theirs >= 0 && mine >= 0);
	T_EQ(t_amd_init(theirs, &major, &minor, &dev), 0);
	T_EQ(gpubuf_amdgpu_map(buf, mine, &va), 0);
	T_EQ(t_mapped(mine, va, NULL), 1);
	T_EQ(t_mapped(theirs, va, NULL), 0);
	T_EQ(gpubuf_amdgpu_unmap(buf, mine), 0);
	T_EQ(t_va_count(mine), 0);
	T_EQ(t_va_count(theirs), 0);
	T_EQ(t_amd_deinit(dev), 0);
	T_EQ(t_devices(), 0);
	gpubuf_unref(buf);
	close(theirs);
	close(mine);
	gpubuf_close(ctx);
	return T_PASS;
}

/* Two buffers in one file: two live mappings, ranges apart. */
static int two_buffers_one_file(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *b1 = t_buf(ctx), *b2 = t_buf(ctx);
	int card = t_open_vgem();
	uint64_t va1 = 0, va2 = 0;

	T_CHECK(b1 && b2 && card >= 0);
	T_EQ(gpubuf_amdgpu_map(b1, card, &va1), 0);
	T_EQ(gpubuf_amdgpu_map(b2, card, &va2), 0);
	T_CHECK(va1 + T_SIZE <= va2 || va2 + T_SIZE <= va1);
	T_EQ(t_va_count(card), 2);
	T_EQ(gpubuf_amdgpu_unmap(b1, card), 0);
	T_EQ(t_mapped(card, va2, NULL), 1);
	T_EQ(gpubuf_amdgpu_unmap(b2, card), 0);
	T_EQ(t_va_count(card), 0);
	gpubuf_unref(b1);
	gpubuf_unref(b2);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * One GEM handle, two holders (issue 23, defect 3). The kernel keeps one
 * handle per dma-buf and DRM file (a second PRIME import returns it again
 * without a reference of its own), so an import and a mapping of one
 * buffer in one file share it: releasing the import must not end the
 * mapping (closing the handle unmaps it: linux 6.1 amdgpu_gem.c,
 * amdgpu_gem_object_close, which the stand-in follows), and the last
 * unmap must not close the handle the import handed out.
 */
static int gem_release_keeps_mapping(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx);
	int card = t_open_vgem();
	uint64_t va = 0;
	uint32_t h = 0;

	T_CHECK(buf && card >= 0);
	T_EQ(gpubuf_drm_import(buf, card, &h), 0);
	T_EQ(gpubuf_amdgpu_map(buf, card, &va), 0);
	T_EQ(t_attachments(gpubuf_fd(buf)), 1);
	T_EQ(gpubuf_drm_release(buf, card), 0);
	T_EQ(t_mapped(card, va, NULL), 1);
	T_EQ(t_handle_is(card, h, buf), 1);
	T_EQ(gpubuf_drm_release(buf, card), -ENXIO);
	T_EQ(gpubuf_amdgpu_unmap(buf, card), 0);
	T_EQ(t_mapped(card, va, NULL), 0);
	T_EQ(t_handle_is(card, h, buf), 0);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	gpubuf_unref(buf);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

static int unmap_keeps_gem_import(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx);
	int card = t_open_vgem();
	uint64_t va = 0;
	uint32_t h = 0;

	T_CHECK(buf && card >= 0);
	T_EQ(gpubuf_amdgpu_map(buf, card, &va), 0);
	T_EQ(gpubuf_drm_import(buf, card, &h), 0);
	T_EQ(gpubuf_amdgpu_unmap(buf, card), 0);
	T_EQ(t_mapped(card, va, NULL), 0);
	T_EQ(t_handle_is(card, h, buf), 1);
	T_EQ(t_attachments(gpubuf_fd(buf)), 1);
	T_EQ(gpubuf_amdgpu_unmap(buf, card), -ENXIO);
	T_EQ(gpubuf_drm_release(buf, card), 0);
	T_EQ(t_handle_is(card, h, buf), 0);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	T_EQ(t_devices(), 0);
	gpubuf_unref(buf);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

/* A mapping that fails leaves the import's handle alone (defect 3). */
static int failed_map_keeps_gem_import(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx);
	int card = t_open_vgem();
	uint64_t va = 77;
	uint32_t h = 0;
	int r;

	T_CHECK(buf && card >= 0);
	T_EQ(gpubuf_drm_import(buf, card, &h), 0);
	setenv(GPUBUF_AMDGPU_STUB_FAIL, "amdgpu_va_range_alloc:12", 1);
	r = gpubuf_amdgpu_map(buf, card, &va);
	unsetenv(GPUBUF_AMDGPU_STUB_FAIL);
	T_EQ(r, -ENOMEM);
	T_EQ(va, 77);
	T_EQ(t_handle_is(card, h, buf), 1);
	T_EQ(t_devices(), 0);
	T_EQ(gpubuf_amdgpu_unmap(buf, card), -ENXIO);
	T_EQ(gpubuf_drm_release(buf, card), 0);
	T_EQ(t_handle_is(card, h, buf), 0);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	gpubuf_unref(buf);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

/* The last unref ends both: the mapping, then the one handle. */
static int last_unref_ends_import_and_mapping(void)
{
	struct gpubuf_ctx *ctx = t_open();
	long live = t_live();
	struct gpubuf *buf = t_buf(ctx);
	int card = t_open_vgem(), dmabuf;
	uint64_t va = 0;
	uint32_t h = 0;

	T_CHECK(buf && card >= 0);
	T_EQ(gpubuf_drm_import(buf, card, &h), 0);
	T_EQ(gpubuf_amdgpu_map(buf, card, &va), 0);
	T_EQ(gpubuf_drm_import(buf, card, &h), 0);
	dmabuf = dup(gpubuf_fd(buf));
	T_EQ(t_attachments(dmabuf), 1);
	gpubuf_unref(buf);
	T_EQ(t_mapped(card, va, NULL), 0);
	T_EQ(t_va_count(card), 0);
	T_EQ(t_attachments(dmabuf), 0);
	T_EQ(t_devices(), 0);
	close(dmabuf);
	T_EQ(t_live(), live);
	struct drm_prime_handle p = { .handle = h, .flags = DRM_CLOEXEC };
	T_EQ(ioctl(card, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p), -1);
	T_EQ(errno, ENOENT);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * libdrm_amdgpu returns some failures as -1 with errno set (issue 23,
 * defect 6a): amdgpu_device_initialize passes on amdgpu_get_auth's
 * drmIoctl(DRM_IOCTL_GET_CLIENT) result, amdgpu_bo_import that of
 * drmPrimeFDToHandle (libdrm 2.4.114 amdgpu_device.c, amdgpu_bo.c). The
 * caller gets errno, not -1 read as -EPERM; nothing is left behind.
 */
static int libdrm_amdgpu_errno_kept(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx);
	int card = t_open_vgem();
	uint64_t va = 77;
	int r;

	T_CHECK(buf && card >= 0);
	setenv(GPUBUF_AMDGPU_STUB_FAIL, "amdgpu_device_initialize:13", 1);
	r = gpubuf_amdgpu_map(buf, card, &va);
	unsetenv(GPUBUF_AMDGPU_STUB_FAIL);
	printf("# %s\n", gpubuf_last_error());
	T_EQ(r, -EACCES);
	T_CHECK(strstr(gpubuf_last_error(), "amdgpu_device_initialize"));
	T_EQ(va, 77);
	T_EQ(t_va_count(card), 0);
	T_EQ(t_attachments(gpubuf_fd(buf)), 0);
	T_EQ(t_devices(), 0);
	T_EQ(gpubuf_amdgpu_unmap(buf, card), -ENXIO);
	gpubuf_unref(buf);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST_ON(T_VGEM, map_and_unmap),
		T_TEST_ON(T_VGEM, map_nests),
		T_TEST_ON(T_VGEM, last_unref_unmaps),
		T_TEST_ON(T_VGEM, map_in_second_open),
		T_TEST_ON(T_VGEM, map_after_other_libdrm_user),
		T_TEST_ON(T_VGEM, two_buffers_one_file),
		T_TEST_ON(T_VGEM, gem_release_keeps_mapping),
		T_TEST_ON(T_VGEM, unmap_keeps_gem_import),
		T_TEST_ON(T_VGEM, failed_map_keeps_gem_import),
		T_TEST_ON(T_VGEM, last_unref_ends_import_and_mapping),
		T_TEST_ON(T_VGEM, libdrm_amdgpu_errno_kept),
	};

	if (!t_stub_load()) {
		printf("TAP version 13\n1..0 # SKIP needs the libdrm and libdrm_amdgpu stand-ins (tests/amdgpustub) on LD_LIBRARY_PATH\n");
		return 0;
	}
	return T_RUN(tests);
}
