// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: gpubuf buffers DMA-mapped by a GPU-like importer
 * (gpubuf_importer.ko: 64-bit DMA mask, no segment limit). The suite runs
 * in the normal guest and again in a guest booted with swiotlb=force, where
 * every mapping is bounce-buffered as in SEV/TDX confidential guests:
 * mappings must respect the DMA layer's largest mapping, and CPU-access
 * sync must use the direction each importer mapped with.
 */
#include <sys/wait.h>

#include "../testmod/gpubuf_importer.h"
#include "gpubuf_helpers.h"
#include "kselftest_harness.h"

/* swiotlb's largest single mapping: IO_TLB_SEGSIZE slabs of 2 KiB. */
#define SWIOTLB_MAX_MAPPING	(256 * 1024ULL)

static int swiotlb_forced(void)
{
	char line[1024] = "";
	FILE *f = fopen("/proc/cmdline", "r");

	if (!f)
		return 0;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	return strstr(line, "swiotlb=force") != NULL;
}

static int importer_open(void)
{
	int fd = open(IMPORTER_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int importer_map(int imp, int dmabuf, uint32_t dir,
			struct importer_map *out)
{
	memset(out, 0, sizeof(*out));
	out->fd = dmabuf;
	out->dir = dir;
	return gb_ioctl(imp, IMPORTER_IOC_MAP, out);
}

FIXTURE(importer) {
	int dev;
	int imp;
	unsigned long long buffers;
};

FIXTURE_SETUP(importer)
{
	self->buffers = gb_stat("live_buffers");
	self->dev = gb_open();
	ASSERT_LE(0, self->dev);
	self->imp = importer_open();
	ASSERT_LE(0, self->imp) TH_LOG("gpubuf_importer.ko is loaded by the test bed");
}

FIXTURE_TEARDOWN(importer)
{
	close(self->imp);
	close(self->dev);
	/* Closing the importer detached it: nothing may be left. */
	EXPECT_EQ(self->buffers, gb_stat("live_buffers"));
}

/*
 * The importer sets no segment limit, so only the exporter keeps segments
 * within what the DMA layer can map at once. Before segments were capped
 * by dma_max_mapping_size(), swiotlb=force made these fail with EIO.
 */
TEST_F(importer, maps_large_buffers_in_one_piece)
{
	static const unsigned long long sizes[] = {
		SZ_4K, SZ_1M, 8 * SZ_1M, 32 * SZ_1M,
	};
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct importer_map m;
		int fd = gb_alloc(self->dev, sizes[i]);

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, importer_map(self->imp, fd, IMPORTER_DIR_BIDIRECTIONAL, &m))
			TH_LOG("%llu bytes", sizes[i]);
		EXPECT_EQ(sizes[i], m.total);
		EXPECT_LT(0, m.nents);
		if (swiotlb_forced())
			EXPECT_GE(SWIOTLB_MAX_MAPPING, m.max_seg);
		EXPECT_EQ(0, gb_ioctl(self->imp, IMPORTER_IOC_UNMAP, NULL));
		close(fd);
	}
}

TEST_F(importer, one_mapping_per_importer_and_clean_errors)
{
	struct importer_map m;
	int fd = gb_alloc(self->dev, SZ_1M);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EBADF, importer_map(self->imp, 1000, IMPORTER_DIR_TO_DEVICE, &m));
	EXPECT_EQ(-ENOENT, gb_ioctl(self->imp, IMPORTER_IOC_UNMAP, NULL));
	ASSERT_EQ(0, importer_map(self->imp, fd, IMPORTER_DIR_TO_DEVICE, &m));
	EXPECT_EQ(-EBUSY, importer_map(self->imp, fd, IMPORTER_DIR_TO_DEVICE, &m));
	/* The importer's reference keeps the buffer after its last fd. */
	close(fd);
	EXPECT_EQ(self->buffers + 1, gb_stat("live_buffers"));
	EXPECT_EQ(0, gb_ioctl(self->imp, IMPORTER_IOC_UNMAP, NULL));
	EXPECT_EQ(self->buffers, gb_stat("live_buffers"));
}

/*
 * Issue 25, item 2: an importer may map one attachment twice. gpubuf sets
 * no cache_sgt_mapping, so each map reaches the exporter: the second must
 * get the same DMA mapping, counted (here: the same first DMA address,
 * which bounce buffering would make differ for a second mapping), and a
 * map in another direction is refused while the first stands. Before,
 * the second map overwrote the attachment's record and its second unmap
 * dereferenced NULL (an oops the dmesg check reports).
 */
TEST_F(importer, one_attachment_mapped_twice)
{
	struct importer_map m, again;
	int fd = gb_alloc(self->dev, SZ_1M);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENOENT, gb_ioctl(self->imp, IMPORTER_IOC_MAP_AGAIN, &again));
	ASSERT_EQ(0, importer_map(self->imp, fd, IMPORTER_DIR_TO_DEVICE, &m));
	memset(&again, 0, sizeof(again));
	again.dir = IMPORTER_DIR_FROM_DEVICE;
	EXPECT_EQ(-EBUSY, gb_ioctl(self->imp, IMPORTER_IOC_MAP_AGAIN, &again));
	again.dir = IMPORTER_DIR_TO_DEVICE;
	ASSERT_EQ(0, gb_ioctl(self->imp, IMPORTER_IOC_MAP_AGAIN, &again));
	EXPECT_EQ(m.first_dma, again.first_dma);
	EXPECT_EQ(m.nents, again.nents);
	EXPECT_EQ(-EBUSY, gb_ioctl(self->imp, IMPORTER_IOC_MAP_AGAIN, &again));
	/* Both unmapped, then detached: the buffer goes with its fd. */
	EXPECT_EQ(0, gb_ioctl(self->imp, IMPORTER_IOC_UNMAP, NULL));
	close(fd);
	EXPECT_EQ(self->buffers, gb_stat("live_buffers"));
	/* Mapped again from scratch afterwards, as new. */
	fd = gb_alloc(self->dev, SZ_1M);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, importer_map(self->imp, fd, IMPORTER_DIR_BIDIRECTIONAL, &m));
	again.dir = IMPORTER_DIR_BIDIRECTIONAL;
	ASSERT_EQ(0, gb_ioctl(self->imp, IMPORTER_IOC_MAP_AGAIN, &again));
	EXPECT_EQ(m.first_dma, again.first_dma);
	close(fd);
	EXPECT_EQ(0, gb_ioctl(self->imp, IMPORTER_IOC_UNMAP, NULL));
	EXPECT_EQ(self->buffers, gb_stat("live_buffers"));
}

/*
 * An importer that maps DMA_TO_DEVICE only reads the buffer. CPU users of a
 * shared buffer bracket their accesses independently: here a writer is
 * inside its write bracket when a reader starts a read bracket. Had the
 * read sync (DMA_FROM_DEVICE) been applied to the importer's mapping, with
 * bounce buffering it would copy the device's older bounce copy over the
 * writer's data: each attachment must be synced in the direction it was
 * mapped with. With DMA-API debugging (make check-debug) a mismatched
 * direction is also a kernel warning, which the dmesg check catches.
 */
TEST_F(importer, read_sync_keeps_concurrent_cpu_writes)
{
	static const uint32_t dirs[] = {
		IMPORTER_DIR_TO_DEVICE, IMPORTER_DIR_FROM_DEVICE,
		IMPORTER_DIR_BIDIRECTIONAL,
	};
	const size_t len = 2 * SZ_1M;
	unsigned int i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		struct importer_map m;
		uint64_t *w;
		size_t k, bad = 0;
		int fd = gb_alloc(self->dev, len);

		ASSERT_LE(0, fd);
		w = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		ASSERT_NE(MAP_FAILED, w);
		ASSERT_EQ(0, importer_map(self->imp, fd, dirs[i], &m));

		/* The writer's bracket is open while the reader's starts. */
		ASSERT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE));
		for (k = 0; k < len / 8; k++)
			w[k] = 0x2222222222222222ULL + k;
		ASSERT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ));
		/* A device that only reads cannot have changed anything. */
		if (dirs[i] == IMPORTER_DIR_TO_DEVICE) {
			for (k = 0; k < len / 8; k++)
				bad += w[k] != 0x2222222222222222ULL + k;
			EXPECT_EQ(0, bad) TH_LOG("%zu words reverted to the device's copy", bad);
		}
		ASSERT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ));
		ASSERT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE));
		EXPECT_EQ(0, gb_ioctl(self->imp, IMPORTER_IOC_UNMAP, NULL));
		munmap(w, len);
		close(fd);
	}
}

/*
 * Attachments of one device in one direction share one DMA mapping:
 * overlapping mappings of the same pages are outside the DMA API (with
 * bounce buffering each gets its own copy, and a sync of one overwrites
 * what the device wrote through the other; DMA-API debugging warns). Under
 * swiotlb=force separate mappings have separate bounce addresses, which
 * is what this sees; without bouncing both answers look alike.
 */
TEST_F(importer, one_device_shares_one_mapping)
{
	struct importer_map m1, m2, m3;
	int fd, imp2, imp3;

	fd = gb_alloc(self->dev, SZ_1M);
	ASSERT_LE(0, fd);
	imp2 = importer_open();
	ASSERT_LE(0, imp2);
	imp3 = importer_open();
	ASSERT_LE(0, imp3);
	ASSERT_EQ(0, importer_map(self->imp, fd, IMPORTER_DIR_BIDIRECTIONAL, &m1));
	ASSERT_EQ(0, importer_map(imp2, fd, IMPORTER_DIR_BIDIRECTIONAL, &m2));
	EXPECT_EQ(m1.first_dma, m2.first_dma);
	EXPECT_EQ(m1.nents, m2.nents);
	/* The first importer leaves; the mapping lives on for the second. */
	ASSERT_EQ(0, gb_ioctl(self->imp, IMPORTER_IOC_UNMAP, NULL));
	ASSERT_EQ(0, importer_map(imp3, fd, IMPORTER_DIR_BIDIRECTIONAL, &m3));
	EXPECT_EQ(m2.first_dma, m3.first_dma);
	close(imp3);
	close(imp2);
	close(fd);
}

/*
 * A driver's kernel mapping of the buffer (dma_buf_vmap, with CPU-access
 * syncs) reads what userspace wrote through mmap() and writes what
 * userspace then reads: one set of pages. Every kernel, through the vmap
 * op's three generations (address, dma_buf_map, iosys_map).
 */
TEST_F(importer, vmap_sees_the_mapped_pages)
{
	const size_t len = 4 * SZ_1M, n = len / 8;
	struct importer_vmap req = { .seed = 0x5eed0000 };
	uint64_t *p, want = 0;
	size_t i;
	int fd;

	fd = gb_alloc(self->dev, len);
	ASSERT_LE(0, fd);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < n; i++) {
		p[i] = i * 7 + 3;
		want += p[i];
	}
	req.fd = fd;
	ASSERT_EQ(0, gb_ioctl(self->imp, IMPORTER_IOC_VMAP, &req));
	EXPECT_EQ(want, req.sum);
	for (i = 0; i < n; i++)
		if (p[i] != req.seed + i)
			break;
	EXPECT_EQ(n, i) TH_LOG("word %zu differs after the kernel's writes", i);
	/* Twice: the shared kernel mapping is made again after the last user. */
	ASSERT_EQ(0, gb_ioctl(self->imp, IMPORTER_IOC_VMAP, &req));
	munmap(p, len);
	close(fd);
}

static int importer_mmap_via(int imp, int dmabuf, uint32_t flags)
{
	struct importer_mmap_via req = { .fd = dmabuf, .flags = flags };

	return gb_ioctl(imp, IMPORTER_IOC_MMAP_VIA, &req);
}

/*
 * An importer whose mmap() sets its vma up as VM_PFNMAP, VM_IO or
 * VM_MIXEDMAP before it calls dma_buf_mmap() is refused with EINVAL
 * (docs/kernel.md, gpubuf(4)): such a vma cannot hold the buffer's
 * struct-page entries safely. The same importer passing a plain vma maps
 * the buffer's own pages (the control), and the refusals leave no mapping
 * and no reference behind: once the importer is closed the buffer is gone.
 */
TEST_F(importer, special_vma_of_an_importer_is_einval)
{
	static const struct {
		uint32_t flags;
		const char *name;
	} special[] = {
		{ IMPORTER_MMAP_PFNMAP, "VM_PFNMAP" },
		{ IMPORTER_MMAP_IO, "VM_IO" },
		{ IMPORTER_MMAP_MIXEDMAP, "VM_MIXEDMAP" },
		{ IMPORTER_MMAP_PFNMAP | IMPORTER_MMAP_IO, "VM_PFNMAP | VM_IO" },
	};
	const size_t len = 4 * SZ_1M, n = len / 8;
	uint64_t *p, *q;
	unsigned int k;
	size_t i;
	int fd;

	fd = gb_alloc(self->dev, len);
	ASSERT_LE(0, fd);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < n; i++)
		p[i] = i * 5 + 1;

	/* The control: a plain vma through the importer is the buffer's. */
	ASSERT_EQ(0, importer_mmap_via(self->imp, fd, 0));
	q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->imp, 0);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(1, gb_vma_has_flag(q, "hg"));
	EXPECT_EQ(0, gb_vma_has_flag(q, "pf"));
	for (i = 0; i < n; i++)
		if (q[i] != i * 5 + 1)
			break;
	EXPECT_EQ(n, i) TH_LOG("word %zu differs through the importer", i);
	q[n - 1] = 42;
	EXPECT_EQ(42, p[n - 1]);
	munmap(q, len);

	for (k = 0; k < sizeof(special) / sizeof(special[0]); k++) {
		ASSERT_EQ(0, importer_mmap_via(self->imp, fd, special[k].flags));
		q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 self->imp, 0);
		if (q != MAP_FAILED) {
			munmap(q, len);
			EXPECT_TRUE(0) TH_LOG("%s was mapped", special[k].name);
			continue;
		}
		EXPECT_EQ(EINVAL, errno) TH_LOG("%s", special[k].name);
	}
	munmap(p, len);
	close(fd);
	/* The importer's reference is the last: nothing else kept one. */
	EXPECT_EQ(self->buffers + 1, gb_stat("live_buffers"));
	close(self->imp);
	self->imp = -1;
	EXPECT_EQ(self->buffers, gb_stat("live_buffers"));
}

TEST_HARNESS_MAIN
