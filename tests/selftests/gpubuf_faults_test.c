// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: every allocation and user copy of gpubuf's paths failed in
 * turn, with the kernel's systematic fault injection (fail-nth; the debug
 * kernel of make check-debug has it, Debian's does not and every test here
 * skips there, saying so). For ALLOC at each chunk size, with and without
 * the reserve, on a NUMA node and strict; INFO and VERSION; mmap and the
 * first write of a 4 KiB and a 2 MiB mapping; the dma-buf sync; a vgem
 * PRIME import and its GEM close; the release; the reserve_bytes knob; and
 * module load: the Nth allocation or copy of the call fails, N = 1, 2, ...
 * until the call no longer reaches the fault. After each failure the call
 * answered a documented errno (or coped), the module's counters are back
 * where they were, no descriptor or mapping is left, and the same call
 * then succeeds. The runner checks dmesg (no WARN, BUG or KASAN report)
 * and, on the debug kernel, kmemleak. Each test prints the fault sites
 * its loop reached.
 */
#include <sys/stat.h>

#include "gpubuf_helpers.h"
#include "gpubuf_reserve.h"
#include "kselftest_harness.h"

#define SZ_64K	(64 * SZ_4K)

struct snap {
	unsigned long long live_buffers, live_bytes, held_bytes, held_buffers;
	unsigned long long reserve_used, reserve_owned;
	int fds, maps;
};

static int count_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int c, n = 0;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void snap_take(struct snap *s)
{
	rsv_wait_zeroed();
	s->live_buffers = gb_stat("live_buffers");
	s->live_bytes = gb_stat("live_bytes");
	s->held_bytes = gb_stat("held_bytes");
	s->held_buffers = gb_stat("held_buffers");
	s->reserve_used = gb_stat("reserve_used_bytes");
	s->reserve_owned = gb_stat("reserve_ready_bytes") +
			   gb_stat("reserve_zeroing_bytes") + s->reserve_used;
	s->fds = gb_count_fds();
	s->maps = count_maps();
}

/* The state after a call and its undoing equals the state before. */
static int snap_same(struct __test_metadata *_metadata, const struct snap *a,
		     const char *what, int n)
{
	struct snap b;

	snap_take(&b);
	if (!memcmp(a, &b, sizeof(b)))
		return 1;
	TH_LOG("%s, fault %d: live %llu/%llu bytes (was %llu/%llu), held %llu/%llu (was %llu/%llu), reserve used %llu owned %llu (was %llu %llu), fds %d (was %d), maps %d (was %d)",
	       what, n, b.live_buffers, b.live_bytes, a->live_buffers,
	       a->live_bytes, b.held_buffers, b.held_bytes, a->held_buffers,
	       a->held_bytes, b.reserve_used, b.reserve_owned, a->reserve_used,
	       a->reserve_owned, b.fds, a->fds, b.maps, a->maps);
	return 0;
}

/* One call under test: 0 or -errno; undo() takes back what succeeded. */
struct fault_op {
	const char *what;
	int (*call)(void *arg);
	void (*undo)(void *arg);
	const int *errnos;	/* what the call may answer, 0-terminated */
	void *arg;
};

/*
 * Fail the op's 1st, 2nd, ... allocation or user copy until it no longer
 * reaches the fault; check every time. Returns the fault sites reached.
 */
static int fault_loop(struct __test_metadata *_metadata,
		      const struct fault_op *op)
{
	int fail = gb_fail_nth_open(), n, sites = 0;
	struct snap before;

	if (fail == -ENOENT) {
		SKIP(return 0, "no /proc/thread-self/fail-nth: this kernel has no CONFIG_FAULT_INJECTION (the debug kernel of make check-debug has)");
	}
	ASSERT_LE(0, fail);
	snap_take(&before);
	for (n = 1; n < 100000; n++) {
		int ret, reached, i, ok;

		ASSERT_EQ(0, gb_fail_nth_arm(fail, n));
		ret = op->call(op->arg);
		reached = gb_fail_nth_disarm(fail);
		ASSERT_LE(0, reached);
		if (!reached) {
			EXPECT_EQ(0, ret) TH_LOG("%s without a fault", op->what);
			if (!ret)
				op->undo(op->arg);
			EXPECT_TRUE(snap_same(_metadata, &before, op->what, n));
			break;
		}
		sites++;
		ok = !ret;
		for (i = 0; !ok && op->errnos[i]; i++)
			ok = ret == -op->errnos[i];
		EXPECT_TRUE(ok) TH_LOG("%s, fault %d: %s, not a documented errno",
				       op->what, n, strerror(-ret));
		if (!ret)
			op->undo(op->arg);
		EXPECT_TRUE(snap_same(_metadata, &before, op->what, n));
		/* Nothing half done: the same call succeeds now. */
		ret = op->call(op->arg);
		EXPECT_EQ(0, ret) TH_LOG("%s after fault %d: %s", op->what, n,
					 strerror(-ret));
		if (!ret)
			op->undo(op->arg);
	}
	close(fail);
	TH_LOG("%s: %d fault sites", op->what, sites);
	return sites;
}

static const int alloc_errnos[] = { ENOMEM, EFAULT, EINTR, 0 };
static const int copy_errnos[] = { EFAULT, ENOMEM, 0 };
static const int map_errnos[] = { ENOMEM, EFAULT, EAGAIN, 0 };

struct alloc_arg {
	int dev;
	uint64_t size;
	int node;
	uint32_t flags;
	int fd;
};

static int do_alloc(void *p)
{
	struct alloc_arg *a = p;
	struct gpubuf_alloc req;

	gb_alloc_req(&req, a->size);
	req.numa_node = a->node;
	req.flags = a->flags;
	if (gb_ioctl(a->dev, GPUBUF_IOC_ALLOC, &req))
		return -errno;
	a->fd = req.fd;
	return 0;
}

static void undo_close(void *p)
{
	struct alloc_arg *a = p;

	close(a->fd);
	a->fd = -1;
}

static void alloc_loop(struct __test_metadata *_metadata, uint64_t size,
		       int node, uint32_t flags, const char *what)
{
	struct alloc_arg a = { .dev = gb_open(), .size = size, .node = node,
			       .flags = flags, .fd = -1 };
	struct fault_op op = { what, do_alloc, undo_close, alloc_errnos, &a };

	ASSERT_LE(0, a.dev);
	fault_loop(_metadata, &op);
	close(a.dev);
}

TEST(alloc_4k) { alloc_loop(_metadata, SZ_4K, GPUBUF_NUMA_ANY, 0, "ALLOC 4 KiB"); }
TEST(alloc_64k) { alloc_loop(_metadata, SZ_64K, GPUBUF_NUMA_ANY, 0, "ALLOC 64 KiB"); }
TEST(alloc_2m) { alloc_loop(_metadata, SZ_2M, GPUBUF_NUMA_ANY, 0, "ALLOC 2 MiB"); }
TEST(alloc_mixed) { alloc_loop(_metadata, SZ_2M + SZ_64K + SZ_4K, GPUBUF_NUMA_ANY, 0, "ALLOC 2 MiB + 64 KiB + 4 KiB"); }
TEST(alloc_node_strict)
{
	alloc_loop(_metadata, SZ_2M + SZ_4K, 0, GPUBUF_ALLOC_NUMA_STRICT,
		   "ALLOC on node 0, strict");
}

TEST(alloc_from_the_reserve)
{
	if (access("/proc/thread-self/fail-nth", F_OK))
		SKIP(return, "no /proc/thread-self/fail-nth: this kernel has no CONFIG_FAULT_INJECTION");
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 8 * SZ_1M));
	ASSERT_EQ(0, rsv_wait_zeroed());
	alloc_loop(_metadata, 4 * SZ_1M + SZ_4K, GPUBUF_NUMA_ANY, 0,
		   "ALLOC from the reserve");
	gb_set_param("reserve_bytes", 0);
}

/* A buffer to work on, made before the loop. */
struct buf_arg {
	int dev, fd, vgem;
	uint32_t handle;
	char *p;
	size_t len, off;
};

static int buf_setup(struct buf_arg *b, size_t len)
{
	memset(b, 0, sizeof(*b));
	b->vgem = -1;
	b->p = MAP_FAILED;
	b->len = len;
	b->dev = gb_open();
	if (b->dev < 0)
		return b->dev;
	b->fd = gb_alloc(b->dev, len);
	return b->fd < 0 ? b->fd : 0;
}

static void buf_teardown(struct buf_arg *b)
{
	if (b->p != MAP_FAILED)
		munmap(b->p, b->len);
	if (b->vgem >= 0)
		close(b->vgem);
	close(b->fd);
	close(b->dev);
}

static int do_info(void *p)
{
	struct buf_arg *b = p;
	struct gpubuf_info info;

	return gb_info(b->dev, b->fd, &info);
}

static int do_version(void *p)
{
	struct buf_arg *b = p;
	struct gpubuf_version v = { 0 };

	return gb_ioctl(b->dev, GPUBUF_IOC_VERSION, &v) ? -errno : 0;
}

static void undo_nothing(void *p)
{
	(void)p;
}

TEST(info_and_version)
{
	struct buf_arg b;
	struct fault_op info = { "INFO", do_info, undo_nothing, copy_errnos, &b };
	struct fault_op version = { "VERSION", do_version, undo_nothing,
				    copy_errnos, &b };

	ASSERT_EQ(0, buf_setup(&b, SZ_1M));
	fault_loop(_metadata, &info);
	fault_loop(_metadata, &version);
	buf_teardown(&b);
}

static int do_mmap(void *p)
{
	struct buf_arg *b = p;

	b->p = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
	return b->p == MAP_FAILED ? -errno : 0;
}

static void undo_munmap(void *p)
{
	struct buf_arg *b = p;

	munmap(b->p, b->len);
	b->p = MAP_FAILED;
}

/* The first write of [off, off + 4 KiB): a PTE, or with off 0 a PMD. */
static int do_touch(void *p)
{
	struct buf_arg *b = p;
	size_t len = b->off ? SZ_4K : SZ_2M;

	return madvise(b->p + b->off, len, MADV_POPULATE_WRITE) ? -errno : 0;
}

static void undo_zap(void *p)
{
	struct buf_arg *b = p;

	madvise(b->p, b->len, MADV_DONTNEED);
}

TEST(mmap_and_first_touch)
{
	struct buf_arg b;
	struct fault_op map = { "mmap", do_mmap, undo_munmap, map_errnos, &b };
	struct fault_op pte = { "first write, 4 KiB entry", do_touch, undo_zap,
				map_errnos, &b };
	struct fault_op pmd = { "first write, 2 MiB entry", do_touch, undo_zap,
				map_errnos, &b };

	ASSERT_EQ(0, buf_setup(&b, 2 * SZ_2M));
	fault_loop(_metadata, &map);
	b.p = gb_map_at(b.fd, b.len, PROT_READ | PROT_WRITE, 0, 0);
	ASSERT_NE(MAP_FAILED, b.p);
	b.off = SZ_2M + SZ_4K;		/* a 4 KiB entry */
	fault_loop(_metadata, &pte);
	b.off = 0;			/* a 2 MiB entry where THP allows */
	fault_loop(_metadata, &pmd);
	buf_teardown(&b);
}

static int do_import(void *p)
{
	struct buf_arg *b = p;

	return vgem_import(b->vgem, b->fd, &b->handle);
}

static void undo_gem_close(void *p)
{
	struct buf_arg *b = p;

	vgem_close_handle(b->vgem, b->handle);
}

static int do_sync(void *p)
{
	struct buf_arg *b = p;
	int ret = gb_sync(b->fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW);

	return ret ? ret : gb_sync(b->fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW);
}

TEST(vgem_import_and_sync)
{
	struct buf_arg b;
	struct fault_op import = { "vgem PRIME import (attach, map)", do_import,
				   undo_gem_close, alloc_errnos, &b };
	struct fault_op sync = { "DMA_BUF_IOCTL_SYNC with an importer", do_sync,
				 undo_nothing, copy_errnos, &b };

	ASSERT_EQ(0, buf_setup(&b, SZ_2M + SZ_4K));
	b.vgem = vgem_open();
	if (b.vgem < 0) {
		buf_teardown(&b);
		SKIP(return, "no vgem card");
	}
	fault_loop(_metadata, &import);
	ASSERT_EQ(0, do_import(&b));
	fault_loop(_metadata, &sync);
	undo_gem_close(&b);
	buf_teardown(&b);
}

/* The release runs in close(), as the fd is the buffer's last reference. */
static int do_release(void *p)
{
	struct alloc_arg *a = p;

	close(a->fd);
	a->fd = -1;
	return 0;
}

static void undo_realloc(void *p)
{
	struct alloc_arg *a = p;

	a->fd = gb_alloc(a->dev, a->size);
}

TEST(release)
{
	struct alloc_arg a = { .dev = gb_open(), .size = SZ_2M + SZ_4K };
	struct fault_op op = { "release", do_release, undo_realloc,
			       alloc_errnos, &a };

	ASSERT_LE(0, a.dev);
	a.fd = gb_alloc(a.dev, a.size);
	ASSERT_LE(0, a.fd);
	/* The loop's snapshots see the buffer allocated again each time. */
	fault_loop(_metadata, &op);
	close(a.fd);
	close(a.dev);
}

static int do_resize(void *p)
{
	return gb_set_param("reserve_bytes", *(unsigned long long *)p);
}

static void undo_resize(void *p)
{
	(void)p;
	gb_set_param("reserve_bytes", 0);
	rsv_wait_zeroed();
}

TEST(reserve_knob)
{
	unsigned long long bytes = 8 * SZ_1M;
	struct fault_op op = { "reserve_bytes write", do_resize, undo_resize,
			       copy_errnos, &bytes };

	fault_loop(_metadata, &op);
	EXPECT_EQ(0, gb_param("reserve_bytes"));
}

TEST_HARNESS_MAIN
