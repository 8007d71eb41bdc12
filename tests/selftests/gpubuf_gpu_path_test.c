// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the paths GPU drivers take into a gpubuf buffer, without a
 * GPU. PRIME import into vgem exercises attach/map/sync/unmap/detach;
 * gpubuf_pinprobe.ko runs pin_user_pages(FOLL_WRITE | FOLL_LONGTERM) (what
 * cuMemHostRegister does) and hmm_range_fault() (what KFD userptr does) on
 * the mapping, with a PFNMAP mapping as the control that must be refused.
 * Mappings with 2 MiB and with 4 KiB entries both take every path.
 */
#include "gpubuf_helpers.h"
#include "kselftest_harness.h"

FIXTURE(mapped) {
	int dev;
	int fd;
	size_t len;
	void *p;
};

/*
 * Every probe runs on a mapping the kernel fills with 2 MiB PMD entries
 * (placed as libgpubuf places it) and on one 4 KiB off that alignment,
 * which gets single PTEs.
 */
FIXTURE_VARIANT(mapped) {
	size_t misalign;
};

FIXTURE_VARIANT_ADD(mapped, pmd) {
	.misalign = 0,
};

FIXTURE_VARIANT_ADD(mapped, pte) {
	.misalign = SZ_4K,
};

FIXTURE_SETUP(mapped)
{
	self->len = 8 * SZ_1M;
	self->dev = gb_open();
	ASSERT_LE(0, self->dev);
	self->fd = gb_alloc(self->dev, self->len);
	ASSERT_LE(0, self->fd);
	self->p = gb_map_at(self->fd, self->len, PROT_READ | PROT_WRITE, 0,
			    variant->misalign);
	ASSERT_NE(MAP_FAILED, self->p);
}

FIXTURE_TEARDOWN(mapped)
{
	munmap(self->p, self->len);
	close(self->fd);
	close(self->dev);
}

TEST_F(mapped, mapping_is_struct_page_backed)
{
	int thp;

	EXPECT_EQ(0, gb_vma_has_flag(self->p, "pf"));
	EXPECT_EQ(0, gb_vma_has_flag(self->p, "io"));
	EXPECT_EQ(0, gb_vma_has_flag(self->p, "mx"));
	EXPECT_EQ(1, gb_vma_has_flag(self->p, "sh"));
	/* The pins below fault the pages in: check what they will find. */
	gb_stamp_pages(self->p, self->len, 0);
	thp = gb_thp_allowed();
	ASSERT_LE(0, thp);
	if (thp)
		EXPECT_EQ(variant->misalign ? 0 : self->len,
			  gb_smaps_bytes(self->p, self->len, "FilePmdMapped"));
}

TEST_F(mapped, longterm_pin_like_cuMemHostRegister)
{
	uint64_t want = gb_stamp_pages(self->p, self->len, 1), got = 0;

	ASSERT_EQ(0, gb_probe_run(PINPROBE_OP_PIN_LONGTERM, self->p, self->len, &got, NULL));
	EXPECT_EQ(want, got);
}

TEST_F(mapped, longterm_pin_of_a_sub_range)
{
	char *start = (char *)self->p + 3 * SZ_1M + 5 * SZ_4K;
	uint64_t want, got = 0;

	gb_stamp_pages(self->p, self->len, 2);
	want = 0;
	for (size_t off = 0; off < SZ_1M; off += SZ_4K)
		want += *(uint64_t *)(start + off);
	ASSERT_EQ(0, gb_probe_run(PINPROBE_OP_PIN_LONGTERM, start, SZ_1M, &got, NULL));
	EXPECT_EQ(want, got);
}

TEST_F(mapped, hmm_range_fault_like_kfd_userptr)
{
	uint64_t want = gb_stamp_pages(self->p, self->len, 3), got = 0;

	ASSERT_EQ(0, gb_probe_run(PINPROBE_OP_HMM_FAULT, self->p, self->len, &got, NULL));
	EXPECT_EQ(want, got);
}

TEST(pfnmap_control_is_refused)
{
	const size_t len = PINPROBE_PFNMAP_BYTES;
	void *p = gb_pfnmap_control(len);

	ASSERT_NE(MAP_FAILED, p) TH_LOG("PFNMAP control mapping: %s", strerror(errno));
	memset(p, 1, len);
	EXPECT_EQ(-EFAULT, gb_probe_run(PINPROBE_OP_PIN_LONGTERM, p, len, NULL, NULL));
	munmap(p, len);
}

TEST(prime_import_into_vgem)
{
	const size_t len = 4 * SZ_1M;
	uint32_t handle, handle2;
	struct gpubuf_info info;
	int dev = gb_open();
	int vgem = vgem_open();
	uint64_t *p, *q;
	int fd, again;

	ASSERT_LE(0, dev);
	ASSERT_LE(0, vgem) TH_LOG("vgem is loaded by the test bed");
	fd = gb_alloc(dev, len);
	ASSERT_LE(0, fd);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 0x600d;
	p[len / 8 - 1] = 0xf00d;

	/* Attach + map_dma_buf happen here. */
	ASSERT_EQ(0, vgem_import(vgem, fd, &handle));
	/* The same dma-buf imported twice is the same GEM object. */
	ASSERT_EQ(0, vgem_import(vgem, fd, &handle2));
	EXPECT_EQ(handle, handle2);

	/* CPU access brackets with a mapped attachment present. */
	EXPECT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW));
	p[1] = 0xabc;
	EXPECT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW));

	/*
	 * Exporting the imported handle hands back our own dma-buf (vgem
	 * refuses to mmap imported objects itself): same buffer, same pages.
	 */
	again = vgem_export(vgem, handle);
	ASSERT_LE(0, again);
	ASSERT_EQ(0, gb_info(dev, again, &info));
	EXPECT_EQ(len, info.size);
	q = mmap(NULL, len, PROT_READ, MAP_SHARED, again, 0);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0x600d, q[0]);
	EXPECT_EQ(0xabc, q[1]);
	EXPECT_EQ(0xf00d, q[len / 8 - 1]);
	munmap(q, len);
	close(again);

	/* GEM close: unmap + detach. The buffer lives on through fd and p. */
	EXPECT_EQ(0, vgem_close_handle(vgem, handle));
	EXPECT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ));
	EXPECT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ));
	EXPECT_EQ(0x600d, p[0]);
	munmap(p, len);
	close(fd);
	close(vgem);
	close(dev);
}

TEST(vgem_holds_buffer_after_fd_close)
{
	unsigned long long buffers = gb_stat("live_buffers");
	int dev = gb_open();
	int vgem = vgem_open();
	uint32_t handle;
	int fd;

	ASSERT_LE(0, dev);
	ASSERT_LE(0, vgem);
	fd = gb_alloc(dev, SZ_1M);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, vgem_import(vgem, fd, &handle));
	close(fd);
	EXPECT_EQ(buffers + 1, gb_stat("live_buffers"));
	EXPECT_EQ(0, vgem_close_handle(vgem, handle));
	EXPECT_EQ(buffers, gb_stat("live_buffers"));
	close(vgem);
	close(dev);
}

TEST_HARNESS_MAIN
