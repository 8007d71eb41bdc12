// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the reserve of zeroed 2 MiB pages (module parameter
 * reserve_bytes). It fills to its target, lends its pages to buffers and
 * takes them back zeroed again in the background, never hands out a page
 * with an earlier buffer's data, shrinks by the knob and under memory
 * pressure, and serves only callers whose memory cgroups set no limit, so
 * no limit is bypassed. Its measurements (fragmented memory, allocation
 * cost, what zeroing in the background costs others) are in
 * gpubuf_reserve_measure.c.
 */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "gpubuf_helpers.h"
#include "gpubuf_reserve.h"
#include "kselftest_harness.h"

#define CGROOT "/sys/fs/cgroup"

/* A buffer from the reserve, mapped, checked to be zero, and stamped. */
static int alloc_check_zero_and_dirty(int dev, size_t len,
				      struct gpubuf_info *info)
{
	int fd = gb_alloc(dev, len), ret = 0;
	char *p;

	if (fd < 0)
		return fd;
	if (gb_info(dev, fd, info)) {
		close(fd);
		return -EIO;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return -errno;
	}
	if (!rsv_all_zero(p, len))
		ret = -EUCLEAN;
	memset(p, 0xa5, len);
	munmap(p, len);
	close(fd);
	return ret;
}

FIXTURE(reserve) {
	int dev;
};

FIXTURE_SETUP(reserve)
{
	self->dev = gb_open();
	ASSERT_LE(0, self->dev);
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 64 * SZ_1M));
	ASSERT_EQ(64 * SZ_1M, gb_param("reserve_bytes"));
	ASSERT_EQ(0, rsv_wait_zeroed());
	/* A fresh guest has 2 MiB pages to spare. */
	ASSERT_EQ(64 * SZ_1M, gb_stat("reserve_ready_bytes"));
}

FIXTURE_TEARDOWN(reserve)
{
	gb_set_param("reserve_bytes", 0);
	close(self->dev);
}

TEST_F(reserve, knob_rounds_to_whole_pages_and_empties)
{
	EXPECT_EQ(0, gb_stat("reserve_used_bytes"));
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 3 * SZ_1M));
	EXPECT_EQ(SZ_2M, gb_param("reserve_bytes"));
	EXPECT_EQ(SZ_2M, gb_stat("reserve_ready_bytes"));
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 0));
	EXPECT_EQ(0, gb_stat("reserve_ready_bytes"));
	EXPECT_EQ(0, gb_stat("reserve_zeroing_bytes"));
	/* At most half of RAM. */
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 1ULL << 50));
	EXPECT_GE(gb_mem_total() / 2, gb_param("reserve_bytes"));
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 0));
	EXPECT_EQ(-EINVAL, gb_write_str(GPUBUF_PARAMS "reserve_bytes", "lots"));
	EXPECT_EQ(0, gb_stat("reserve_ready_bytes"));
}

TEST_F(reserve, buffer_takes_zeroed_pages_and_gives_them_back)
{
	struct gpubuf_info info;

	ASSERT_EQ(0, alloc_check_zero_and_dirty(self->dev, 16 * SZ_1M, &info));
	EXPECT_EQ(16 * SZ_1M, info.huge_bytes);
	EXPECT_EQ(16 * SZ_1M, info.reserve_bytes);
	/*
	 * Closed: the pages are the reserve's again, zeroed in the background.
	 * (ready + zeroing is not summed here: the two files are read apart,
	 * and a chunk the worker finishes in between is in neither.)
	 */
	EXPECT_EQ(0, gb_stat("reserve_used_bytes"));
	ASSERT_EQ(0, rsv_wait_zeroed());
	EXPECT_EQ(64 * SZ_1M, gb_stat("reserve_ready_bytes"));
}

TEST_F(reserve, lent_pages_are_counted_while_the_buffer_lives)
{
	struct gpubuf_info info;
	int fd = gb_alloc(self->dev, 16 * SZ_1M);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, gb_info(self->dev, fd, &info));
	EXPECT_EQ(16 * SZ_1M, info.reserve_bytes);
	EXPECT_EQ(16 * SZ_1M, gb_stat("reserve_used_bytes"));
	EXPECT_EQ(48 * SZ_1M, gb_stat("reserve_ready_bytes"));
	close(fd);
	EXPECT_EQ(0, gb_stat("reserve_used_bytes"));
}

/*
 * The whole reserve written and freed, then taken again at once (chunks
 * the worker has not reached yet are zeroed by ALLOC) and after the worker
 * is done: never an earlier buffer's byte.
 */
TEST_F(reserve, reused_pages_never_show_old_data)
{
	struct gpubuf_info info;
	int round;

	for (round = 0; round < 3; round++) {
		ASSERT_EQ(0, alloc_check_zero_and_dirty(self->dev, 64 * SZ_1M,
							&info))
			TH_LOG("round %d: non-zero byte in a new buffer", round);
		EXPECT_EQ(64 * SZ_1M, info.reserve_bytes);
		TH_LOG("round %d: %llu MiB still being zeroed after free", round,
		       gb_stat("reserve_zeroing_bytes") >> 20);
	}
	ASSERT_EQ(0, rsv_wait_zeroed());
	ASSERT_EQ(0, alloc_check_zero_and_dirty(self->dev, 64 * SZ_1M, &info));
	EXPECT_EQ(64 * SZ_1M, info.reserve_bytes);
}

TEST_F(reserve, larger_buffer_continues_from_the_buddy_allocator)
{
	struct gpubuf_info info;

	ASSERT_EQ(0, alloc_check_zero_and_dirty(self->dev, 96 * SZ_1M, &info));
	EXPECT_EQ(96 * SZ_1M, info.size);
	EXPECT_EQ(64 * SZ_1M, info.reserve_bytes);
	EXPECT_LE(64 * SZ_1M, info.huge_bytes);
	/* The reserve keeps its own pages only: the others went back. */
	ASSERT_EQ(0, rsv_wait_zeroed());
	EXPECT_EQ(64 * SZ_1M, gb_stat("reserve_ready_bytes"));
}

TEST_F(reserve, odd_sizes_take_only_whole_pages)
{
	struct gpubuf_info info;

	ASSERT_EQ(0, alloc_check_zero_and_dirty(self->dev, 3 * SZ_1M + SZ_4K,
						&info));
	EXPECT_EQ(SZ_2M, info.reserve_bytes);
	EXPECT_EQ(SZ_2M, info.huge_bytes);
}

TEST_F(reserve, strict_node_takes_from_its_node)
{
	struct gpubuf_alloc req;
	struct gpubuf_info info;

	gb_alloc_req(&req, 8 * SZ_1M);
	req.numa_node = 0;
	req.flags = GPUBUF_ALLOC_NUMA_STRICT;
	ASSERT_EQ(0, gb_ioctl(self->dev, GPUBUF_IOC_ALLOC, &req));
	ASSERT_EQ(0, gb_info(self->dev, req.fd, &info));
	EXPECT_EQ(8 * SZ_1M, info.reserve_bytes);
	close(req.fd);
}

/* Lowered below what is lent: free pages go now, lent ones when freed. */
TEST_F(reserve, knob_shrinks_while_pages_are_lent)
{
	int fd = gb_alloc(self->dev, 16 * SZ_1M);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 8 * SZ_1M));
	EXPECT_EQ(0, gb_stat("reserve_ready_bytes"));
	EXPECT_EQ(0, gb_stat("reserve_zeroing_bytes"));
	EXPECT_EQ(16 * SZ_1M, gb_stat("reserve_used_bytes"));
	close(fd);
	ASSERT_EQ(0, rsv_wait_zeroed());
	EXPECT_EQ(0, gb_stat("reserve_used_bytes"));
	EXPECT_EQ(8 * SZ_1M, gb_stat("reserve_ready_bytes"));
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 64 * SZ_1M));
	EXPECT_EQ(64 * SZ_1M, gb_stat("reserve_ready_bytes"));
}

/*
 * A buffer released while a driver still pins its 2 MiB reserve chunk (an
 * RDMA MR, a CUDA registration: here gpubuf_pinprobe's PIN_HOLD) keeps the
 * chunk held: counted in held_bytes, never zeroed, never lent to the next
 * ALLOC, and back in the reserve once unpinned. Where the kernel has
 * fail-nth (the debug kernel), the release is run again with its 1st, 2nd,
 * ... allocation failing: the module used to allocate a record of the held
 * chunks there and, when that failed, gave the pinned chunk to the reserve
 * (issue 37, K1), which zeroed it under the pin and lent it on.
 */
TEST_F(reserve, held_chunk_is_never_lent_while_pinned)
{
	int fail_nth = gb_fail_nth_open(), nth, reached = 0;

	if (fail_nth == -ENOENT)
		TH_LOG("no /proc/thread-self/fail-nth (no CONFIG_FAULT_INJECTION): the release runs without injected failures");
	else
		ASSERT_LE(0, fail_nth);
	for (nth = 0;; nth++) {
		struct pinprobe_req req = { .len = SZ_2M,
					    .op = PINPROBE_OP_PIN_HOLD };
		struct gpubuf_info info;
		int fd, probe, more = 0;
		uint64_t sum;
		char *p;

		fd = gb_alloc(self->dev, SZ_2M);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, gb_info(self->dev, fd, &info));
		ASSERT_EQ(SZ_2M, info.reserve_bytes);
		p = mmap(NULL, SZ_2M, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		ASSERT_NE(MAP_FAILED, p);
		sum = gb_stamp_pages(p, SZ_2M, 37 + nth);
		probe = open(PINPROBE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, probe);
		req.addr = (uintptr_t)p;
		ASSERT_EQ(0, gb_ioctl(probe, PINPROBE_IOC_RUN, &req));
		ASSERT_EQ(sum, req.checksum);
		ASSERT_EQ(0, munmap(p, SZ_2M));

		/* The release: close() drops the buffer's last reference. */
		if (nth)
			ASSERT_EQ(0, gb_fail_nth_arm(fail_nth, nth));
		close(fd);
		if (nth) {
			more = gb_fail_nth_disarm(fail_nth);
			ASSERT_LE(0, more);
			reached += more;
		}
		EXPECT_EQ(SZ_2M, gb_stat("held_bytes"))
			TH_LOG("fault %d of the release", nth);
		EXPECT_EQ(1, gb_stat("held_buffers"));
		EXPECT_EQ(SZ_2M, gb_stat("reserve_used_bytes"));

		/* Every other reserve chunk, taken: none may be the pinned one. */
		ASSERT_EQ(0, alloc_check_zero_and_dirty(self->dev, 64 * SZ_1M,
							&info));
		EXPECT_EQ(62 * SZ_1M, info.reserve_bytes);
		ASSERT_EQ(0, rsv_wait_zeroed());
		req.op = PINPROBE_OP_HELD_SUM;
		ASSERT_EQ(0, gb_ioctl(probe, PINPROBE_IOC_RUN, &req));
		EXPECT_EQ(sum, req.checksum)
			TH_LOG("fault %d: the pinned chunk was zeroed or reused",
			       nth);

		/* Unpinned: the chunk comes back to the reserve, zeroed. */
		close(probe);
		EXPECT_EQ(0, gb_stat("held_bytes"));
		EXPECT_EQ(0, gb_stat("held_buffers"));
		EXPECT_EQ(0, gb_stat("reserve_used_bytes"));
		ASSERT_EQ(0, rsv_wait_zeroed());
		EXPECT_EQ(64 * SZ_1M, gb_stat("reserve_ready_bytes"));
		if (fail_nth < 0 || (nth && !more))
			break;
	}
	if (fail_nth >= 0) {
		TH_LOG("release of a pinned buffer: %d fault sites", reached);
		close(fail_nth);
	}
}

/* drop_caches runs every shrinker: the reserve's gives all free pages back. */
TEST_F(reserve, memory_pressure_shrinks_it)
{
	unsigned long long shrunk = gb_stat("reserve_shrunk_bytes");
	int fd = gb_alloc(self->dev, 4 * SZ_1M);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, gb_write_str("/proc/sys/vm/drop_caches", "2"));
	EXPECT_EQ(0, gb_stat("reserve_ready_bytes"));
	EXPECT_EQ(60 * SZ_1M, gb_stat("reserve_shrunk_bytes") - shrunk);
	/* Lent pages are not the shrinker's; they come back when freed. */
	EXPECT_EQ(4 * SZ_1M, gb_stat("reserve_used_bytes"));
	close(fd);
	ASSERT_EQ(0, rsv_wait_zeroed());
	EXPECT_EQ(4 * SZ_1M, gb_stat("reserve_ready_bytes"));
	/* The target stays; writing it refills. */
	EXPECT_EQ(64 * SZ_1M, gb_param("reserve_bytes"));
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 64 * SZ_1M));
	EXPECT_EQ(64 * SZ_1M, gb_stat("reserve_ready_bytes"));
}

/*
 * In a child: join cgroup @cg, allocate 16 MiB, and write what INFO said
 * it got from the reserve and how much the cgroup was charged meanwhile.
 */
struct cg_result {
	int err;
	unsigned long long reserve_bytes;
	unsigned long long charged;
};

static struct cg_result alloc_in_cgroup(const char *cg)
{
	struct cg_result r = { .err = -1 };
	int pipefd[2], status;
	pid_t pid;

	if (pipe(pipefd))
		return r;
	pid = fork();
	if (pid == 0) {
		struct gpubuf_info info;
		unsigned long long before;
		int dev, fd;

		close(pipefd[0]);
		r.err = gb_cg_write(cg, "cgroup.procs", "0");
		dev = r.err ? -1 : gb_open();
		before = rsv_cg_current(cg);
		fd = dev < 0 ? -1 : gb_alloc(dev, 16 * SZ_1M);
		if (!r.err && fd < 0)
			r.err = fd;
		if (!r.err && gb_info(dev, fd, &info))
			r.err = -EIO;
		if (!r.err) {
			r.reserve_bytes = info.reserve_bytes;
			r.charged = rsv_cg_current(cg) - before;
		}
		if (write(pipefd[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
		_exit(0);
	}
	close(pipefd[1]);
	if (pid < 0 || read(pipefd[0], &r, sizeof(r)) != sizeof(r))
		r.err = -1;
	close(pipefd[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	return r;
}

FIXTURE(reserve_memcg) {
	char parent[128];
	char child[160];
};

FIXTURE_SETUP(reserve_memcg)
{
	snprintf(self->parent, sizeof(self->parent),
		 CGROOT "/gpubuf-reserve-%d", getpid());
	snprintf(self->child, sizeof(self->child), "%s/job", self->parent);
	ASSERT_EQ(0, gb_write_str(CGROOT "/cgroup.subtree_control", "+memory"))
		TH_LOG("cgroup2 with the memory controller is mounted by the test bed");
	ASSERT_EQ(0, mkdir(self->parent, 0755));
	ASSERT_EQ(0, gb_cg_write(self->parent, "cgroup.subtree_control",
				 "+memory"));
	ASSERT_EQ(0, mkdir(self->child, 0755));
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 64 * SZ_1M));
	ASSERT_EQ(0, rsv_wait_zeroed());
}

FIXTURE_TEARDOWN(reserve_memcg)
{
	gb_set_param("reserve_bytes", 0);
	rmdir(self->child);
	rmdir(self->parent);
}

TEST_F(reserve_memcg, unlimited_cgroup_is_served_uncharged)
{
	struct cg_result r = alloc_in_cgroup(self->child);

	ASSERT_EQ(0, r.err);
	EXPECT_EQ(16 * SZ_1M, r.reserve_bytes);
	/* Only metadata (page array, dma-buf file) is charged. */
	EXPECT_GT(SZ_1M, r.charged);
}

TEST_F(reserve_memcg, memory_max_gets_charged_pages)
{
	struct cg_result r;

	ASSERT_EQ(0, gb_cg_write(self->child, "memory.max", "256M"));
	r = alloc_in_cgroup(self->child);
	ASSERT_EQ(0, r.err);
	EXPECT_EQ(0, r.reserve_bytes);
	EXPECT_LE(16 * SZ_1M, r.charged);
}

TEST_F(reserve_memcg, memory_high_gets_charged_pages)
{
	struct cg_result r;

	ASSERT_EQ(0, gb_cg_write(self->child, "memory.high", "256M"));
	r = alloc_in_cgroup(self->child);
	ASSERT_EQ(0, r.err);
	EXPECT_EQ(0, r.reserve_bytes);
	EXPECT_LE(16 * SZ_1M, r.charged);
}

/* A limit anywhere above counts: the child's own files say "max". */
TEST_F(reserve_memcg, limited_ancestor_gets_charged_pages)
{
	struct cg_result r;

	ASSERT_EQ(0, gb_cg_write(self->parent, "memory.max", "256M"));
	r = alloc_in_cgroup(self->child);
	ASSERT_EQ(0, r.err);
	EXPECT_EQ(0, r.reserve_bytes);
	EXPECT_LE(16 * SZ_1M, r.charged);
}

TEST_HARNESS_MAIN
