// SPDX-License-Identifier: MIT
/*
 * Description: a real block device DMA-ing into gpubuf.ko's buffers, in
 * the QEMU guest: an emulated NVMe namespace read raw and a file on ext4
 * on a virtio-blk disk, through gpubuf_read_file() (O_DIRECT where
 * aligned, io_uring), into buffers of 2 MiB chunks (PMD-mapped) and of
 * small chunks, at offsets that line up and that do not, across chunk
 * edges, checked byte for byte against the pattern the host wrote; and a
 * write to the raw disk read back through the page cache. The run with
 * swiotlb=force bounces every DMA, the one with a strict vIOMMU
 * translates it. Which io_uring form the kernel takes is printed, and on
 * 6.1 asserted: plain reads, registration refused.
 *
 *   storage_guest --make FILE SIZE   the host writes the pattern
 *   storage_guest RAWDEV FILE        the guest suite (TAP)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/utsname.h>

#include "../lib/tap.h"

#define MIB (1u << 20)

static const char *t_raw, *t_file;

/* The byte the host wrote at off (a different stream than tests/lib's). */
static unsigned char t_byte(uint64_t off)
{
	uint64_t x = off * 0x9e3779b97f4a7c15ull;

	return (unsigned char)(x >> 56 ^ x >> 29);
}

static int t_make(const char *path, unsigned long long size)
{
	static unsigned char block[1 << 16];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0) {
		perror(path);
		return 1;
	}
	for (unsigned long long off = 0; off < size; off += sizeof(block)) {
		size_t n = size - off < sizeof(block) ? size - off : sizeof(block);

		for (size_t i = 0; i < n; i++)
			block[i] = t_byte(off + i);
		if (pwrite(fd, block, n, (off_t)off) != (ssize_t)n) {
			perror(path);
			return 1;
		}
	}
	return close(fd) ? 1 : 0;
}

static int t_same(const unsigned char *mem, uint64_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (mem[i] != t_byte(off + i)) {
			printf("# byte %zu (offset %llu): %#x, want %#x\n", i,
			       (unsigned long long)(off + i), mem[i],
			       t_byte(off + i));
			return 0;
		}
	return 1;
}

/* 6.1 refuses registered buffers over file mappings: plain io_uring. */
static int t_kernel_6_1(void)
{
	struct utsname u;

	return !uname(&u) && !strncmp(u.release, "6.1.", 4);
}

struct t_read {
	size_t buf_off;
	uint64_t file_off;
	size_t len;
};

/* One buffer, each case read and checked; the bytes around untouched. */
static int t_reads(const char *path, size_t bufsize, const char *what)
{
	static const struct t_read cases[] = {
		{ 0, 0, 4 * MIB }, { 100, 100, 3 * MIB + 333 },
		{ 0, 0, MIB }, { 100, 100, MIB - 200 },
		{ 2 * MIB - 8192, 8 * MIB - 8192, 64 << 10 },	/* a chunk edge */
		{ 0, 4096 + 17, MIB },				/* never aligned */
		{ 4096, 12 * MIB, 8192 }, { 12345, 777, 1 },
	};
	struct gpubuf_ctx *ctx = t_open();
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct gpubuf *buf;
	unsigned char *p;

	T_CHECK(fd >= 0);
	T_EQ(gpubuf_alloc(ctx, bufsize, NULL, &buf), 0);
	p = gpubuf_ptr(buf);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct t_read *c = &cases[i];
		struct gpubuf_io_result res;
		bool lines_up = (c->buf_off - c->file_off) % 4096 == 0;

		if (c->buf_off + c->len > gpubuf_size(buf))
			continue;
		memset(p, 0xee, gpubuf_size(buf));
		T_EQ(gpubuf_read_file(buf, c->buf_off, fd, c->file_off, c->len,
				      NULL, &res), 0);
		T_CHECK(t_same(p + c->buf_off, c->file_off, c->len));
		if (c->buf_off)
			T_EQ(p[c->buf_off - 1], 0xee);
		T_EQ(p[c->buf_off + c->len], 0xee);
		printf("# %s, case %zu: method %u, %llu of %zu bytes by O_DIRECT\n",
		       what, i, res.method, (unsigned long long)res.direct_bytes,
		       c->len);
		if (lines_up && c->len >= 2 * 4096)
			T_CHECK(res.direct_bytes >= c->len - 2 * 4096);
		if (!lines_up)
			T_EQ(res.direct_bytes, 0);
		if (t_kernel_6_1())
			T_EQ(res.method, GPUBUF_IO_URING);
	}
	gpubuf_unref(buf);
	close(fd);
	gpubuf_close(ctx);
	return T_PASS;
}

/* 8 MiB: 2 MiB chunks where the module has them, PMD-mapped. */
static int raw_nvme_into_2m_chunks(void)
{
	return t_reads(t_raw, 8 * MIB, "nvme, 8 MiB buffer");
}

/* 1 MiB + 12 KiB: 64 KiB and 4 KiB chunks only. */
static int raw_nvme_into_small_chunks(void)
{
	return t_reads(t_raw, MIB + 12288, "nvme, 1 MiB + 12 KiB buffer");
}

static int ext4_file_on_virtio_blk(void)
{
	return t_reads(t_file, 8 * MIB, "ext4 on virtio-blk");
}

/* A write from a buffer by O_DIRECT, read back through the page cache. */
static int raw_nvme_write_reads_back(void)
{
	const uint64_t at = 32 * MIB;
	struct gpubuf_ctx *ctx = t_open();
	int fd = open(t_raw, O_RDWR | O_CLOEXEC);
	struct gpubuf_io_result res;
	unsigned char *back;
	struct gpubuf *buf;
	unsigned char *p;

	T_CHECK(fd >= 0);
	T_EQ(gpubuf_alloc(ctx, 4 * MIB, NULL, &buf), 0);
	p = gpubuf_ptr(buf);
	for (size_t i = 0; i < 4 * MIB; i++)
		p[i] = (unsigned char)(i * 7 + 3);
	T_EQ(gpubuf_write_file(buf, 0, fd, at, 4 * MIB, NULL, &res), 0);
	T_EQ(res.direct_bytes, 4 * MIB);
	T_EQ(fdatasync(fd), 0);
	back = malloc(4 * MIB);
	T_CHECK(back);
	T_EQ(pread(fd, back, 4 * MIB, (off_t)at), 4 * MIB);
	T_CHECK(!memcmp(back, p, 4 * MIB));
	free(back);
	/* The pattern back, for the next run on the same image. */
	for (size_t i = 0; i < 4 * MIB; i++)
		p[i] = t_byte(at + i);
	T_EQ(gpubuf_write_file(buf, 0, fd, at, 4 * MIB, NULL, &res), 0);
	gpubuf_unref(buf);
	close(fd);
	gpubuf_close(ctx);
	return T_PASS;
}

int main(int argc, char **argv)
{
	static const struct t_test tests[] = {
		T_TEST_ON(T_MODULE, raw_nvme_into_2m_chunks),
		T_TEST_ON(T_MODULE, raw_nvme_into_small_chunks),
		T_TEST_ON(T_MODULE, ext4_file_on_virtio_blk),
		T_TEST_ON(T_MODULE, raw_nvme_write_reads_back),
	};

	if (argc == 4 && !strcmp(argv[1], "--make"))
		return t_make(argv[2], strtoull(argv[3], NULL, 0));
	if (argc != 3) {
		fprintf(stderr, "usage: %s --make FILE SIZE | %s RAWDEV FILE\n",
			argv[0], argv[0]);
		return 2;
	}
	t_raw = argv[1];
	t_file = argv[2];
	return T_RUN(tests);
}
