// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: gpubuf ioctl ABI — version, structure-size compatibility and
 * every documented rejection of bad input, each leaving nothing behind.
 */
#include <sys/syscall.h>

#include "gpubuf_helpers.h"
#include "kselftest_harness.h"

/* The ioctl number for the same command with a caller structure of @size. */
#define GB_IOC_WITH_SIZE(cmd, size) \
	(((cmd) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT)) | ((size) << _IOC_SIZESHIFT))

static int gb_alloc_raw(int dev, struct gpubuf_alloc *req)
{
	int ret = gb_ioctl(dev, GPUBUF_IOC_ALLOC, req);

	if (!ret)
		close(req->fd);
	return ret;
}

TEST(version_reports_abi_and_release)
{
	struct gpubuf_version v;
	int dev = gb_open();

	ASSERT_LE(0, dev);
	memset(&v, 0xff, sizeof(v));
	ASSERT_EQ(0, gb_ioctl(dev, GPUBUF_IOC_VERSION, &v));
	EXPECT_EQ(GPUBUF_ABI_VERSION, v.abi);
	EXPECT_LE(v.abi_min, v.abi);
	EXPECT_EQ(GPUBUF_TEST_VERSION_MAJOR, v.major);
	EXPECT_EQ(GPUBUF_TEST_VERSION_MINOR, v.minor);
	EXPECT_EQ(GPUBUF_TEST_VERSION_PATCH, v.patch);
	EXPECT_EQ(0, v.reserved);
	close(dev);
}

TEST(newer_caller_gets_zeroed_unknown_fields)
{
	struct {
		struct gpubuf_version v;
		uint64_t tail[2];
	} big;
	int dev = gb_open();

	ASSERT_LE(0, dev);
	memset(&big, 0xff, sizeof(big));
	ASSERT_EQ(0, gb_ioctl(dev, GB_IOC_WITH_SIZE(GPUBUF_IOC_VERSION, sizeof(big)), &big));
	EXPECT_EQ(GPUBUF_ABI_VERSION, big.v.abi);
	EXPECT_EQ(0, big.v.reserved);
	EXPECT_EQ(0, big.tail[0]);
	EXPECT_EQ(0, big.tail[1]);
	close(dev);
}

TEST(struct_sizes_are_fixed)
{
	/* The uapi layout is identical for 32- and 64-bit callers. */
	ASSERT_EQ(GPUBUF_VERSION_SIZE_VER0, sizeof(struct gpubuf_version));
	ASSERT_EQ(GPUBUF_ALLOC_SIZE_VER0, sizeof(struct gpubuf_alloc));
	ASSERT_EQ(GPUBUF_INFO_SIZE_VER0, sizeof(struct gpubuf_info));
	ASSERT_EQ(24, offsetof(struct gpubuf_alloc, fd));
	ASSERT_EQ(28, offsetof(struct gpubuf_info, nr_chunks));
	ASSERT_EQ(32, offsetof(struct gpubuf_info, huge_bytes));
	ASSERT_EQ(40, offsetof(struct gpubuf_info, reserve_bytes));
}

TEST(older_newer_struct_sizes)
{
	struct {
		struct gpubuf_alloc a;
		uint64_t tail[4];
	} big;
	int dev = gb_open();

	ASSERT_LE(0, dev);
	/* Shorter than the first published size: EINVAL. */
	gb_alloc_req(&big.a, SZ_4K);
	EXPECT_EQ(-EINVAL, gb_ioctl(dev, GB_IOC_WITH_SIZE(GPUBUF_IOC_ALLOC, 40), &big.a));
	EXPECT_EQ(-EINVAL, gb_ioctl(dev, GB_IOC_WITH_SIZE(GPUBUF_IOC_VERSION, 8), &big.a));

	/* A newer caller's longer struct with zero tail works. */
	memset(&big, 0, sizeof(big));
	gb_alloc_req(&big.a, SZ_4K);
	ASSERT_EQ(0, gb_ioctl(dev, GB_IOC_WITH_SIZE(GPUBUF_IOC_ALLOC, sizeof(big)), &big));
	EXPECT_LE(0, big.a.fd);
	EXPECT_EQ(0, big.tail[0]);
	close(big.a.fd);

	/* ... and with bytes the driver does not know: E2BIG. */
	gb_alloc_req(&big.a, SZ_4K);
	big.tail[3] = 1;
	EXPECT_EQ(-E2BIG, gb_ioctl(dev, GB_IOC_WITH_SIZE(GPUBUF_IOC_ALLOC, sizeof(big)), &big));
	close(dev);
}

TEST(unknown_commands_are_enotty)
{
	struct gpubuf_alloc req;
	int dev = gb_open();

	ASSERT_LE(0, dev);
	gb_alloc_req(&req, SZ_4K);
	EXPECT_EQ(-ENOTTY, gb_ioctl(dev, _IOWR(GPUBUF_IOC_MAGIC, 0x3f, struct gpubuf_alloc), &req));
	EXPECT_EQ(-ENOTTY, gb_ioctl(dev, _IOWR('x', 0x01, struct gpubuf_alloc), &req));
	/* Right number, wrong direction. */
	EXPECT_EQ(-ENOTTY, gb_ioctl(dev, _IOW(GPUBUF_IOC_MAGIC, 0x01, struct gpubuf_alloc), &req));
	EXPECT_EQ(-ENOTTY, gb_ioctl(dev, _IOWR(GPUBUF_IOC_MAGIC, 0x00, struct gpubuf_version), &req));
	close(dev);
}

TEST(alloc_rejects_bad_size)
{
	struct gpubuf_alloc req;
	int dev = gb_open();

	ASSERT_LE(0, dev);
	gb_alloc_req(&req, 0);
	EXPECT_EQ(-EINVAL, gb_alloc_raw(dev, &req));
	/* Page rounding would wrap around 64 bits. */
	gb_alloc_req(&req, UINT64_MAX);
	EXPECT_EQ(-EINVAL, gb_alloc_raw(dev, &req));
	gb_alloc_req(&req, UINT64_MAX - SZ_4K + 2);
	EXPECT_EQ(-EINVAL, gb_alloc_raw(dev, &req));
	/* Representable after rounding, but far over the per-buffer cap. */
	gb_alloc_req(&req, UINT64_MAX - SZ_4K + 1);
	EXPECT_EQ(-EFBIG, gb_alloc_raw(dev, &req));
	close(dev);
}

TEST(alloc_rejects_unknown_flags)
{
	struct gpubuf_alloc req;
	int dev = gb_open();
	int bit;

	ASSERT_LE(0, dev);
	for (bit = 1; bit < 64; bit++) {
		gb_alloc_req(&req, SZ_4K);
		req.flags = 1ULL << bit;
		EXPECT_EQ(-EINVAL, gb_alloc_raw(dev, &req)) {
			TH_LOG("flags bit %d accepted", bit);
		}
	}
	close(dev);
}

TEST(alloc_rejects_bad_fd_flags)
{
	/* O_WRONLY: a dma-buf that can never be mmapped or read is no use. */
	const uint32_t bad[] = { O_NONBLOCK, O_APPEND, O_ACCMODE, O_RDWR | O_TRUNC,
				 O_CLOEXEC | O_DIRECT, 0x80000000u, O_WRONLY,
				 O_WRONLY | O_CLOEXEC };
	struct gpubuf_alloc req;
	int dev = gb_open();
	unsigned int i;

	ASSERT_LE(0, dev);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gb_alloc_req(&req, SZ_4K);
		req.fd_flags = bad[i];
		EXPECT_EQ(-EINVAL, gb_alloc_raw(dev, &req)) {
			TH_LOG("fd_flags %#x accepted", bad[i]);
		}
	}
	close(dev);
}

TEST(alloc_numa_node_validation)
{
	struct gpubuf_alloc req;
	struct gpubuf_info info;
	int dev = gb_open();

	ASSERT_LE(0, dev);
	gb_alloc_req(&req, SZ_4K);
	req.numa_node = -2;
	EXPECT_EQ(-EINVAL, gb_alloc_raw(dev, &req));
	gb_alloc_req(&req, SZ_4K);
	req.numa_node = 1 << 20;
	EXPECT_EQ(-EINVAL, gb_alloc_raw(dev, &req));
	/* The guest has one node: node 1 is not online. */
	gb_alloc_req(&req, SZ_4K);
	req.numa_node = 1;
	EXPECT_EQ(-EINVAL, gb_alloc_raw(dev, &req));
	gb_alloc_req(&req, SZ_4K);
	req.flags = GPUBUF_ALLOC_NUMA_STRICT;
	EXPECT_EQ(-EINVAL, gb_alloc_raw(dev, &req));

	gb_alloc_req(&req, SZ_1M);
	req.numa_node = 0;
	req.flags = GPUBUF_ALLOC_NUMA_STRICT;
	ASSERT_EQ(0, gb_ioctl(dev, GPUBUF_IOC_ALLOC, &req));
	ASSERT_EQ(0, gb_info(dev, req.fd, &info));
	EXPECT_EQ(0, info.numa_node);
	EXPECT_EQ(GPUBUF_ALLOC_NUMA_STRICT, info.flags);
	close(req.fd);
	close(dev);
}

TEST(alloc_rejects_nonzero_reserved)
{
	struct gpubuf_alloc req;
	int dev = gb_open();

	ASSERT_LE(0, dev);
	gb_alloc_req(&req, SZ_4K);
	req.fd = 3;
	EXPECT_EQ(-EINVAL, gb_alloc_raw(dev, &req));
	gb_alloc_req(&req, SZ_4K);
	req.reserved0 = 1;
	EXPECT_EQ(-EINVAL, gb_alloc_raw(dev, &req));
	gb_alloc_req(&req, SZ_4K);
	req.reserved[1] = 1ULL << 63;
	EXPECT_EQ(-EINVAL, gb_alloc_raw(dev, &req));
	close(dev);
}

/*
 * Every rejection of kernel.md's ALLOC table that a test can cause (ENOMEM,
 * EINTR, EMFILE and ENFILE have theirs in 20-mem and 40-accounting), one
 * after another: no fd, buffer or byte is left, and only the requests
 * that passed validation (EFBIG, ENOSPC) count as failed.
 */
struct rejection {
	const char *what;
	int err;
	void (*set)(struct gpubuf_alloc *req);
};

static void rj_size0(struct gpubuf_alloc *r) { r->size = 0; }
static void rj_round(struct gpubuf_alloc *r) { r->size = UINT64_MAX - SZ_4K + 2; }
static void rj_huge(struct gpubuf_alloc *r) { r->size = UINT64_MAX - SZ_4K + 1; }
static void rj_flag(struct gpubuf_alloc *r) { r->flags = 1ULL << 40; }
static void rj_fdfl(struct gpubuf_alloc *r) { r->fd_flags = O_NONBLOCK; }
static void rj_acc(struct gpubuf_alloc *r) { r->fd_flags = O_ACCMODE; }
static void rj_node(struct gpubuf_alloc *r) { r->numa_node = 1 << 20; }
static void rj_strict(struct gpubuf_alloc *r) { r->flags = GPUBUF_ALLOC_NUMA_STRICT; }
static void rj_fd(struct gpubuf_alloc *r) { r->fd = 3; }
static void rj_rsv0(struct gpubuf_alloc *r) { r->reserved0 = 1; }
static void rj_rsv(struct gpubuf_alloc *r) { r->reserved[0] = 1; }
static void rj_total(struct gpubuf_alloc *r) { r->size = 4 * SZ_1M; }

TEST(rejections_leave_nothing_behind)
{
	static const struct rejection cases[] = {
		{ "size 0", EINVAL, rj_size0 },
		{ "size rounding past 2^64", EINVAL, rj_round },
		{ "size past max_buffer_bytes", EFBIG, rj_huge },
		{ "unknown flags bit", EINVAL, rj_flag },
		{ "fd_flags O_NONBLOCK", EINVAL, rj_fdfl },
		{ "fd_flags O_ACCMODE", EINVAL, rj_acc },
		{ "numa_node past any node", EINVAL, rj_node },
		{ "strict without a node", EINVAL, rj_strict },
		{ "fd set on input", EINVAL, rj_fd },
		{ "reserved0 set", EINVAL, rj_rsv0 },
		{ "reserved[0] set", EINVAL, rj_rsv },
		{ "past max_total_bytes", ENOSPC, rj_total },
	};
	unsigned long long buffers = gb_stat("live_buffers");
	unsigned long long bytes = gb_stat("live_bytes");
	unsigned long long failed = gb_stat("failed_allocs");
	unsigned long long total = gb_param("max_total_bytes");
	struct gpubuf_alloc req;
	int dev = gb_open();
	unsigned int i;
	int fds;

	ASSERT_LE(0, dev);
	fds = gb_count_fds();
	/* Room for 1 MiB more than what is live: 4 MiB is past it. */
	ASSERT_EQ(0, gb_set_param("max_total_bytes", bytes +
				  gb_stat("held_bytes") + SZ_1M));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gb_alloc_req(&req, SZ_4K);
		cases[i].set(&req);
		EXPECT_EQ(-cases[i].err, gb_alloc_raw(dev, &req)) {
			TH_LOG("%s", cases[i].what);
		}
	}
	gb_set_param("max_total_bytes", total);
	ASSERT_EQ(total, gb_param("max_total_bytes"));
	/* A bad argument pointer: refused before anything is made. */
	EXPECT_EQ(-EFAULT, gb_ioctl(dev, GPUBUF_IOC_ALLOC, (void *)8));
	EXPECT_EQ(fds, gb_count_fds());
	EXPECT_EQ(buffers, gb_stat("live_buffers"));
	EXPECT_EQ(bytes, gb_stat("live_bytes"));
	/* Only the over-cap requests passed validation. */
	EXPECT_EQ(failed + 2, gb_stat("failed_allocs"));
	close(dev);
}

TEST(fd_flags_are_honoured)
{
	struct gpubuf_alloc req;
	int dev = gb_open();
	void *p;

	ASSERT_LE(0, dev);
	gb_alloc_req(&req, SZ_4K);
	ASSERT_EQ(0, gb_ioctl(dev, GPUBUF_IOC_ALLOC, &req));
	EXPECT_EQ(FD_CLOEXEC, fcntl(req.fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDWR, fcntl(req.fd, F_GETFL) & O_ACCMODE);
	close(req.fd);

	gb_alloc_req(&req, SZ_4K);
	req.fd_flags = O_RDONLY;
	ASSERT_EQ(0, gb_ioctl(dev, GPUBUF_IOC_ALLOC, &req));
	EXPECT_EQ(0, fcntl(req.fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDONLY, fcntl(req.fd, F_GETFL) & O_ACCMODE);
	/* A read-only fd maps read-only, shared, and never writable. */
	p = mmap(NULL, SZ_4K, PROT_READ | PROT_WRITE, MAP_SHARED, req.fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, SZ_4K, PROT_READ, MAP_SHARED, req.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, ((volatile char *)p)[100]);
	munmap(p, SZ_4K);
	close(req.fd);
	close(dev);
}

TEST(info_on_own_buffer)
{
	struct gpubuf_info info;
	int dev = gb_open();
	int fd;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, 3 * SZ_4K + 1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, gb_info(dev, fd, &info));
	EXPECT_EQ(4 * SZ_4K, info.size);
	EXPECT_EQ(0, info.flags);
	EXPECT_EQ(GPUBUF_NUMA_ANY, info.numa_node);
	EXPECT_LE(1, info.nr_chunks);
	EXPECT_GE(4, info.nr_chunks);
	/* 16 KiB cannot hold a 2 MiB page, so none of it is huge or lent. */
	EXPECT_EQ(0, info.huge_bytes);
	EXPECT_EQ(0, info.reserve_bytes);
	info.reserved0 = 1;
	EXPECT_EQ(-EINVAL, gb_ioctl(dev, GPUBUF_IOC_INFO, &info));
	/* The new out fields were reserved: non-zero on input is refused. */
	info.reserved0 = 0;
	info.huge_bytes = 1;
	EXPECT_EQ(-EINVAL, gb_ioctl(dev, GPUBUF_IOC_INFO, &info));
	info.huge_bytes = 0;
	info.reserve_bytes = 1;
	EXPECT_EQ(-EINVAL, gb_ioctl(dev, GPUBUF_IOC_INFO, &info));
	close(fd);
	close(dev);
}

TEST(info_on_bad_fds)
{
	struct gpubuf_info info;
	int dev = gb_open();
	int pipefd[2];

	ASSERT_LE(0, dev);
	EXPECT_EQ(-EBADF, gb_info(dev, -1, &info));
	EXPECT_EQ(-EBADF, gb_info(dev, 1000000, &info));
	ASSERT_EQ(0, pipe(pipefd));
	EXPECT_EQ(-EINVAL, gb_info(dev, pipefd[0], &info));
	EXPECT_EQ(-EINVAL, gb_info(dev, dev, &info));
	close(pipefd[0]);
	close(pipefd[1]);
	close(dev);
}

TEST(info_on_foreign_dmabuf)
{
	struct gpubuf_info info;
	int dev = gb_open();
	int vgem = vgem_open();
	int handle, dmabuf;

	ASSERT_LE(0, dev);
	ASSERT_LE(0, vgem) TH_LOG("vgem is loaded by the test bed");
	handle = vgem_dumb(vgem, 64, 64, NULL);
	ASSERT_LE(0, handle);
	dmabuf = vgem_export(vgem, handle);
	ASSERT_LE(0, dmabuf);
	EXPECT_EQ(-ENODEV, gb_info(dev, dmabuf, &info));
	close(dmabuf);
	close(vgem);
	close(dev);
}

TEST_HARNESS_MAIN
