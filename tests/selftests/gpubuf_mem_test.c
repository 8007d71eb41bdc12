// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: gpubuf buffers as memory — sizes, mmap semantics, zeroing,
 * CPU-access sync, sharing across fork, lifetime, limits and counters.
 */
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>


#include "gpubuf_helpers.h"
#include "kselftest_harness.h"

static void *gb_map(int fd, size_t len, off_t off)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
}

/* Fill with a pattern derived from the offset; return first mismatch or -1. */
static void fill_pattern(void *p, size_t len, uint64_t seed)
{
	uint64_t *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = seed ^ (i * 0x9e3779b97f4a7c15ULL);
}

static long check_pattern(const void *p, size_t len, uint64_t seed)
{
	const uint64_t *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i] != (seed ^ (i * 0x9e3779b97f4a7c15ULL)))
			return (long)i;
	return -1;
}

static long first_nonzero(const void *p, size_t len)
{
	const uint64_t *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i])
			return (long)i;
	return -1;
}

TEST(alloc_sizes_round_up_to_pages)
{
	const uint64_t sizes[] = { SZ_4K, SZ_1M, 64 * SZ_1M, 1, 4095, 4097,
				   SZ_1M + 1, 3 * SZ_1M - 7 };
	struct gpubuf_alloc req;
	struct gpubuf_info info;
	int dev = gb_open();
	unsigned int i;

	ASSERT_LE(0, dev);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t want = (sizes[i] + SZ_4K - 1) & ~(SZ_4K - 1);
		unsigned char *p;

		gb_alloc_req(&req, sizes[i]);
		ASSERT_EQ(0, gb_ioctl(dev, GPUBUF_IOC_ALLOC, &req));
		EXPECT_EQ(want, req.size);
		ASSERT_EQ(0, gb_info(dev, req.fd, &info));
		EXPECT_EQ(want, info.size);
		EXPECT_EQ(want, (uint64_t)lseek(req.fd, 0, SEEK_END));
		p = gb_map(req.fd, want, 0);
		ASSERT_NE(MAP_FAILED, p);
		/* First and last byte are usable. */
		p[0] = 1;
		p[want - 1] = 2;
		EXPECT_EQ(1, p[0]);
		EXPECT_EQ(2, p[want - 1]);
		munmap(p, want);
		close(req.fd);
	}
	close(dev);
}

TEST(large_buffer_uses_few_chunks)
{
	struct gpubuf_info info;
	int dev = gb_open();
	int fd;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, 64 * SZ_1M);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, gb_info(dev, fd, &info));
	/* 2 MiB chunks are expected in a fresh guest; 4 KiB would be 16384. */
	EXPECT_LE(1, info.nr_chunks);
	EXPECT_GT(16384 / 4, info.nr_chunks);
	TH_LOG("64 MiB in %u contiguous runs", info.nr_chunks);
	close(fd);
	close(dev);
}

/* Lines of /proc/vmallocinfo allocated from gpubuf's code. */
static int gpubuf_vmallocs(void)
{
	char line[512];
	FILE *f = fopen("/proc/vmallocinfo", "r");
	int n = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, " [gpubuf]") && strstr(line, " vmalloc");
	fclose(f);
	return n;
}

/*
 * A 64 MiB buffer needs a 128 KiB page array. It must come from vmalloc:
 * a high-order kmalloc with __GFP_RETRY_MAYFAIL reclaims and compacts hard
 * for contiguity nobody needs, and takes the high-order pages the buffer
 * itself wants. A small buffer's array stays a cheap kmalloc.
 */
TEST(large_page_array_is_vmalloced)
{
	int dev = gb_open(), before, fd, small;

	ASSERT_LE(0, dev);
	before = gpubuf_vmallocs();
	ASSERT_LE(0, before);
	small = gb_alloc(dev, 64 * SZ_4K);
	ASSERT_LE(0, small);
	EXPECT_EQ(before, gpubuf_vmallocs());
	fd = gb_alloc(dev, 64 * SZ_1M);
	ASSERT_LE(0, fd);
	EXPECT_EQ(before + 1, gpubuf_vmallocs());
	close(fd);
	close(small);
	EXPECT_EQ(before, gpubuf_vmallocs());
	close(dev);
}

TEST(mmap_write_read_round_trip)
{
	const size_t len = 4 * SZ_1M;
	int dev = gb_open();
	void *a, *b;
	int fd;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, len);
	ASSERT_LE(0, fd);
	a = gb_map(fd, len, 0);
	b = gb_map(fd, len, 0);
	ASSERT_NE(MAP_FAILED, a);
	ASSERT_NE(MAP_FAILED, b);
	ASSERT_NE(a, b);
	fill_pattern(a, len, 0x1234);
	/* A second mapping sees the same pages. */
	EXPECT_EQ(-1, check_pattern(b, len, 0x1234));
	munmap(a, len);
	munmap(b, len);
	close(fd);
	close(dev);
}

/*
 * mmap() maps nothing itself (uapi header, docs/kernel.md): pages come in
 * at the first touch, one 4 KiB page for one byte at a 4 KiB offset.
 */
TEST(mmap_maps_pages_at_first_touch)
{
	const size_t len = SZ_1M;
	int dev = gb_open();
	long long rss;
	char *p;
	int fd;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, len);
	ASSERT_LE(0, fd);
	p = gb_map(fd, len, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, gb_smaps_bytes(p, len, "Rss"));
	p[SZ_4K] = 1;
	/*
	 * The touched page, or (7.2 maps a whole large folio per fault) the
	 * 64 KiB chunk that holds it; never the rest of the buffer.
	 */
	rss = gb_smaps_bytes(p, len, "Rss");
	EXPECT_LE(SZ_4K, rss);
	EXPECT_GE(16 * SZ_4K, rss);
	munmap(p, len);
	close(fd);
	close(dev);
}

TEST(mmap_at_page_offset)
{
	const size_t len = 16 * SZ_4K;
	unsigned char *all, *part;
	int dev = gb_open();
	int fd;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, len);
	ASSERT_LE(0, fd);
	all = gb_map(fd, len, 0);
	ASSERT_NE(MAP_FAILED, all);
	fill_pattern(all, len, 77);
	part = gb_map(fd, 5 * SZ_4K, 3 * SZ_4K);
	ASSERT_NE(MAP_FAILED, part);
	EXPECT_EQ(0, memcmp(part, all + 3 * SZ_4K, 5 * SZ_4K));
	part[10] ^= 0xff;
	EXPECT_EQ(part[10], all[3 * SZ_4K + 10]);
	/* The last page alone. */
	munmap(part, 5 * SZ_4K);
	part = gb_map(fd, SZ_4K, len - SZ_4K);
	ASSERT_NE(MAP_FAILED, part);
	EXPECT_EQ(0, memcmp(part, all + len - SZ_4K, SZ_4K));
	munmap(part, SZ_4K);
	munmap(all, len);
	close(fd);
	close(dev);
}

TEST(mmap_past_end_is_refused)
{
	const size_t len = 8 * SZ_4K;
	int dev = gb_open();
	void *p;
	int fd;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, len);
	ASSERT_LE(0, fd);
	p = gb_map(fd, len + SZ_4K, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = gb_map(fd, 2 * SZ_4K, len - SZ_4K);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = gb_map(fd, SZ_4K, len);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	close(fd);
	close(dev);
}

TEST(mmap_private_is_refused)
{
	int dev = gb_open();
	void *p;
	int fd;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, SZ_1M);
	ASSERT_LE(0, fd);
	p = mmap(NULL, SZ_1M, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, SZ_1M, PROT_READ, MAP_PRIVATE, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	close(fd);
	close(dev);
}

TEST(mapping_cannot_grow)
{
	int dev = gb_open();
	void *p, *q;
	int fd;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, 2 * SZ_4K);
	ASSERT_LE(0, fd);
	p = gb_map(fd, SZ_4K, 0);
	ASSERT_NE(MAP_FAILED, p);
	q = mremap(p, SZ_4K, 2 * SZ_4K, MREMAP_MAYMOVE);
	EXPECT_EQ(MAP_FAILED, q);
	munmap(p, SZ_4K);
	close(fd);
	close(dev);
}

TEST(mapping_refaults_after_madv_dontneed)
{
	const size_t len = 4 * SZ_1M;
	int dev = gb_open();
	uint64_t got = 0;
	int fd, pipefd[2];
	char *p;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, len);
	ASSERT_LE(0, fd);
	p = gb_map(fd, len, 0);
	ASSERT_NE(MAP_FAILED, p);
	fill_pattern(p, len, 5);
	/*
	 * Dropping the page table entries must not drop the memory: the next
	 * access faults the buffer's own pages back in.
	 */
	ASSERT_EQ(0, madvise(p + SZ_1M, 2 * SZ_1M, MADV_DONTNEED));
	EXPECT_EQ(-1, check_pattern(p, len, 5));
	ASSERT_EQ(0, madvise(p, len, MADV_DONTNEED));
	p[len - 1] ^= 1;
	p[len - 1] ^= 1;
	EXPECT_EQ(-1, check_pattern(p, len, 5));
	/* write() from the mapping takes the get_user_pages path. */
	ASSERT_EQ(0, madvise(p, len, MADV_DONTNEED));
	ASSERT_EQ(0, pipe(pipefd));
	ASSERT_EQ(8, write(pipefd[1], p + SZ_1M, 8));
	ASSERT_EQ(8, read(pipefd[0], &got, 8));
	close(pipefd[0]);
	close(pipefd[1]);
	EXPECT_EQ(5 ^ ((SZ_1M / 8) * 0x9e3779b97f4a7c15ULL), got);
	munmap(p, len);
	close(fd);
	close(dev);
}

TEST(no_stale_data_after_reuse)
{
	const size_t len = 32 * SZ_1M;
	int dev = gb_open();
	int round, fd;
	void *p;

	ASSERT_LE(0, dev);
	for (round = 0; round < 3; round++) {
		fd = gb_alloc(dev, len);
		ASSERT_LE(0, fd);
		p = gb_map(fd, len, 0);
		ASSERT_NE(MAP_FAILED, p);
		EXPECT_EQ(-1, first_nonzero(p, len)) {
			TH_LOG("round %d: stale data in a new buffer", round);
		}
		memset(p, 0xa5, len);
		munmap(p, len);
		close(fd);
	}
	close(dev);
}

TEST(dma_buf_sync_flags)
{
	int dev = gb_open();
	int fd;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, SZ_1M);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ));
	EXPECT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ));
	EXPECT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE));
	EXPECT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE));
	EXPECT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW));
	EXPECT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW));
	EXPECT_EQ(-EINVAL, gb_sync(fd, DMA_BUF_SYNC_START));
	EXPECT_EQ(-EINVAL, gb_sync(fd, 1ULL << 40));
	EXPECT_EQ(-EINVAL, gb_sync(fd, DMA_BUF_SYNC_VALID_FLAGS_MASK + 1));
	close(fd);
	close(dev);
}

TEST(fork_shares_the_buffer)
{
	const size_t len = SZ_1M;
	int dev = gb_open();
	int fd, status;
	uint64_t *p;
	pid_t pid;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, len);
	ASSERT_LE(0, fd);
	p = gb_map(fd, len, 0);
	ASSERT_NE(MAP_FAILED, p);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* Through the inherited mapping and through a new one. */
		uint64_t *q = gb_map(fd, len, 0);

		if (q == MAP_FAILED)
			_exit(2);
		p[0] = 0xc0ffee;
		q[len / 8 - 1] = 0xbeef;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0xc0ffee, p[0]);
	EXPECT_EQ(0xbeef, p[len / 8 - 1]);
	munmap(p, len);
	close(fd);
	close(dev);
}

TEST(mapping_outlives_its_fd_and_device)
{
	unsigned long long buffers = gb_stat("live_buffers");
	const size_t len = 2 * SZ_1M;
	int dev = gb_open();
	int fd;
	void *p;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, len);
	ASSERT_LE(0, fd);
	p = gb_map(fd, len, 0);
	ASSERT_NE(MAP_FAILED, p);
	close(fd);
	close(dev);
	/* Neither the dma-buf fd nor /dev/gpubuf is open: the mapping holds it. */
	EXPECT_EQ(buffers + 1, gb_stat("live_buffers"));
	fill_pattern(p, len, 99);
	EXPECT_EQ(-1, check_pattern(p, len, 99));
	munmap(p, len);
	EXPECT_EQ(buffers, gb_stat("live_buffers"));
}

TEST(closing_device_keeps_buffers)
{
	struct gpubuf_info info;
	int dev = gb_open();
	int fd;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, SZ_1M);
	ASSERT_LE(0, fd);
	close(dev);
	dev = gb_open();
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, gb_info(dev, fd, &info));
	EXPECT_EQ(SZ_1M, info.size);
	close(fd);
	close(dev);
}

TEST(counters_track_buffers)
{
	unsigned long long buffers = gb_stat("live_buffers");
	unsigned long long bytes = gb_stat("live_bytes");
	int dev = gb_open();
	int a, b;

	ASSERT_LE(0, dev);
	ASSERT_NE(~0ULL, buffers);
	a = gb_alloc(dev, SZ_1M);
	b = gb_alloc(dev, 3 * SZ_4K + 5);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	EXPECT_EQ(buffers + 2, gb_stat("live_buffers"));
	EXPECT_EQ(bytes + SZ_1M + 4 * SZ_4K, gb_stat("live_bytes"));
	EXPECT_LE(bytes + SZ_1M + 4 * SZ_4K, gb_stat("peak_bytes"));
	close(a);
	EXPECT_EQ(buffers + 1, gb_stat("live_buffers"));
	close(b);
	EXPECT_EQ(buffers, gb_stat("live_buffers"));
	EXPECT_EQ(bytes, gb_stat("live_bytes"));
	close(dev);
}

TEST(limits_are_enforced)
{
	unsigned long long max_buffer = gb_param("max_buffer_bytes");
	unsigned long long max_total = gb_param("max_total_bytes");
	unsigned long long failed = gb_stat("failed_allocs");
	unsigned long long live = gb_stat("live_bytes");
	int dev = gb_open();
	int a, b;

	ASSERT_LE(0, dev);
	ASSERT_NE(~0ULL, max_buffer);
	/* Defaults are derived from RAM: neither 0 nor unlimited. */
	EXPECT_LT(0, max_buffer);
	EXPECT_LE(max_buffer, max_total);

	ASSERT_EQ(0, gb_set_param("max_buffer_bytes", SZ_1M));
	EXPECT_EQ(-EFBIG, gb_alloc(dev, SZ_1M + 1));
	a = gb_alloc(dev, SZ_1M);
	EXPECT_LE(0, a);
	close(a);

	ASSERT_EQ(0, gb_set_param("max_total_bytes", live + SZ_1M + SZ_1M / 2));
	a = gb_alloc(dev, SZ_1M);
	EXPECT_LE(0, a);
	b = gb_alloc(dev, SZ_1M);
	EXPECT_EQ(-ENOSPC, b);
	close(a);
	b = gb_alloc(dev, SZ_1M);
	EXPECT_LE(0, b);
	close(b);
	EXPECT_EQ(failed + 2, gb_stat("failed_allocs"));

	/* Nothing above RAM is kept: the value in force is shown. */
	ASSERT_EQ(0, gb_set_param("max_total_bytes", ~0ULL));
	EXPECT_GE(gb_mem_total(), gb_param("max_total_bytes"));
	EXPECT_LT(gb_mem_total() / 2, gb_param("max_total_bytes"));

	/* 0 restores the RAM-derived default. */
	ASSERT_EQ(0, gb_set_param("max_buffer_bytes", 0));
	ASSERT_EQ(0, gb_set_param("max_total_bytes", 0));
	EXPECT_EQ(max_buffer, gb_param("max_buffer_bytes"));
	EXPECT_EQ(max_total, gb_param("max_total_bytes"));
	/* The defaults gpubuf(4) names: half and three quarters of RAM. */
	EXPECT_EQ(gb_mem_total() / 2, gb_param("max_buffer_bytes"));
	EXPECT_EQ(gb_mem_total() / 4 * 3, gb_param("max_total_bytes"));
	EXPECT_EQ(-EINVAL, gb_write_str(GPUBUF_PARAMS "max_total_bytes", "lots"));
	close(dev);
}

/* No free descriptor: EMFILE, checked before any page is allocated. */
TEST(alloc_without_a_free_fd_is_emfile)
{
	unsigned long long live = gb_stat("live_buffers");
	unsigned long long failed = gb_stat("failed_allocs");
	struct rlimit old, none;
	int dev = gb_open(), next, fd;

	ASSERT_LE(0, dev);
	/* Every descriptor below the lowest free one is open. */
	next = dup(dev);
	ASSERT_LE(0, next);
	close(next);
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old));
	none = old;
	none.rlim_cur = next;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &none));
	fd = gb_alloc(dev, SZ_1M);
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &old));
	EXPECT_EQ(-EMFILE, fd);
	EXPECT_EQ(live, gb_stat("live_buffers"));
	/* It passed validation and got no buffer: counted as failed. */
	EXPECT_EQ(failed + 1, gb_stat("failed_allocs"));
	fd = gb_alloc(dev, SZ_1M);
	EXPECT_LE(0, fd);
	close(fd);
	close(dev);
}

/*
 * The system file table full (fs.file-max reached, for a caller without
 * CAP_SYS_ADMIN, which may go past it): ENFILE from the dma-buf's file,
 * after the pages were allocated, and all of them go back. A child in a
 * cgroup of its own drops CAP_SYS_ADMIN and asks for 64 MiB while the
 * parent holds file-max at 0; the cgroup's charge shows any page kept.
 */

TEST(alloc_with_a_full_file_table_is_enfile)
{
	unsigned long long live = gb_stat("live_buffers");
	unsigned long long bytes = gb_stat("live_bytes");
	unsigned long long failed = gb_stat("failed_allocs");
	unsigned long long before, after;
	int ready[2], go[2], result[2], ret = -1, status, restored = -1;
	char file_max[32] = "", cg[64], current[80];
	FILE *f;
	pid_t pid;

	f = fopen("/proc/sys/fs/file-max", "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(file_max, sizeof(file_max), f));
	fclose(f);
	snprintf(cg, sizeof(cg), "/sys/fs/cgroup/gpubuf-enfile-%d", getpid());
	snprintf(current, sizeof(current), "%s/memory.current", cg);
	ASSERT_EQ(0, gb_write_str("/sys/fs/cgroup/cgroup.subtree_control",
				  "+memory"));
	ASSERT_EQ(0, mkdir(cg, 0755));
	ASSERT_EQ(0, pipe2(ready, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(go, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(result, O_CLOEXEC));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int dev, err;
		char c;

		close(ready[0]);
		close(go[1]);
		close(result[0]);
		err = gb_cg_write(cg, "cgroup.procs", "0");
		dev = err ? err : gb_open();
		err = dev < 0 ? dev : gb_drop_cap(CAP_SYS_ADMIN);
		/* From here on this process opens no file. */
		if (write(ready[1], &err, sizeof(err)) != sizeof(err) || err ||
		    read(go[0], &c, 1) != 1)
			_exit(1);
		err = gb_alloc(dev, 64 * SZ_1M);
		if (write(result[1], &err, sizeof(err)) != sizeof(err))
			_exit(1);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	close(result[1]);
	if (read(ready[0], &ret, sizeof(ret)) != sizeof(ret))
		ret = -EPIPE;
	before = gb_read_u64(current);
	/* No ASSERT until file-max is restored. */
	if (!ret && !gb_write_str("/proc/sys/fs/file-max", "0")) {
		if (write(go[1], "g", 1) != 1 ||
		    read(result[0], &ret, sizeof(ret)) != sizeof(ret))
			ret = -EPIPE;
		restored = gb_write_str("/proc/sys/fs/file-max", file_max);
	}
	after = gb_read_u64(current);
	close(go[1]);
	waitpid(pid, &status, 0);
	close(ready[0]);
	close(result[0]);
	rmdir(cg);
	ASSERT_EQ(0, restored) TH_LOG("file-max not restored to %s", file_max);
	EXPECT_EQ(-ENFILE, ret);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	/* Nothing left: no buffer, no byte, no charged page. */
	EXPECT_EQ(live, gb_stat("live_buffers"));
	EXPECT_EQ(bytes, gb_stat("live_bytes"));
	EXPECT_EQ(failed + 1, gb_stat("failed_allocs"));
	ASSERT_NE(~0ULL, before);
	EXPECT_GT(before + SZ_1M / 2, after) {
		TH_LOG("the cgroup kept %lld bytes of the refused 64 MiB",
		       (long long)(after - before));
	}
}

TEST_HARNESS_MAIN
