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
 * translates it. Which io_uring form the kernel takes is printed, and
 * asserted on the kernels measured (t_expected_method()); a buffer
 * released while a registration pins it is held until the ring closes.
 *
 *   storage_guest --make FILE SIZE   the host writes the pattern
 *   storage_guest RAWDEV FILE        the guest suite (TAP)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#ifdef GPUBUF_HAVE_URING
#include <liburing.h>
#endif

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

/*
 * The io_uring form each kernel of make check and make check-kernels
 * takes over a gpubuf mapping (measured on Debian's kernels, 2026-12-07):
 * 5.10 and 6.1 refuse to register a file-backed mapping (EOPNOTSUPP), so
 * reads are plain; 6.12 and 7.2 leave it to GUP's long-term pin rules,
 * which the mapping passes. 0: a kernel not measured, nothing asserted.
 */
static unsigned int t_expected_method(const char **release)
{
	static const struct {
		const char *release;
		unsigned int method;
	} forms[] = {
		{ "5.10.", GPUBUF_IO_URING }, { "6.1.", GPUBUF_IO_URING },
		{ "6.12.", GPUBUF_IO_URING_FIXED }, { "7.2.", GPUBUF_IO_URING_FIXED },
	};
	static struct utsname u;

	if (uname(&u))
		strcpy(u.release, "unknown");
	*release = u.release;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		if (!strncmp(u.release, forms[i].release, strlen(forms[i].release)))
			return forms[i].method;
	return 0;
}

static unsigned long long t_stat(const char *name)
{
	char path[128];
	unsigned long long v = ~0ull;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/misc/gpubuf/%s", name);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = ~0ull;
		fclose(f);
	}
	return v;
}

/* Wait (up to 60 s) for pins of earlier tests' rings to be dropped. */
static unsigned long long t_held_drained(void)
{
	for (int i = 0; i < 600 && t_stat("held_bytes") != 0; i++)
		usleep(100 * 1000);
	return t_stat("held_bytes");
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
	const char *release;
	unsigned int want = t_expected_method(&release);
	struct gpubuf *buf;
	unsigned char *p;

	if (!want)
		printf("# %s: io_uring form of kernel %s not measured, not asserted\n",
		       what, release);
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
		if (want)
			T_EQ(res.method, want);
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

/*
 * Once gpubuf_read_file() returns, nothing of it should pin the buffer:
 * released at once, it is freed, not held. With the buffer registered
 * (6.12, 7.2) the ring's own teardown, in a kernel worker, unpins it
 * later: this fails there, the open defect docs/storage.md names.
 */
static int read_file_leaves_no_pin_behind(void)
{
	struct gpubuf_ctx *ctx = t_open();
	int fd = open(t_raw, O_RDONLY | O_CLOEXEC);
	unsigned long long held = t_held_drained();
	struct gpubuf_io_result res;
	struct gpubuf *buf;

	T_CHECK(fd >= 0);
	T_CHECK(held != ~0ull);
	for (int i = 0; i < 4; i++) {
		T_EQ(gpubuf_alloc(ctx, 4 * MIB, NULL, &buf), 0);
		T_EQ(gpubuf_read_file(buf, 0, fd, 0, 4 * MIB, NULL, &res), 0);
		gpubuf_unref(buf);
		T_EQ(t_stat("held_bytes"), held);
	}
	printf("# method %u: released right after the read, nothing held\n",
	       res.method);
	close(fd);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * A buffer released while an io_uring registration pins its pages is held
 * (held_bytes), as with RDMA, and freed once the ring is gone; where the
 * kernel refuses the registration, it says EOPNOTSUPP and nothing is held.
 */
static int released_while_registered_is_held(void)
{
#ifdef GPUBUF_HAVE_URING
	const size_t size = 4 * MIB;
	struct gpubuf_ctx *ctx = t_open();
	const char *release;
	unsigned int want = t_expected_method(&release);
	unsigned long long held = t_held_drained();
	struct io_uring ring;
	struct gpubuf *buf;
	struct iovec iov;
	int ret, i;

	T_CHECK(held != ~0ull);
	T_EQ(gpubuf_alloc(ctx, size, NULL, &buf), 0);
	T_EQ(io_uring_queue_init(4, &ring, 0), 0);
	iov.iov_base = gpubuf_ptr(buf);
	iov.iov_len = size;
	ret = io_uring_register_buffers(&ring, &iov, 1);
	if (want == GPUBUF_IO_URING) {
		T_EQ(ret, -EOPNOTSUPP);
		printf("# kernel %s refuses the registration (EOPNOTSUPP): nothing to hold\n",
		       release);
	} else {
		if (want)
			T_EQ(ret, 0);
		else if (ret)
			printf("# kernel %s: registration %d, not measured\n",
			       release, ret);
	}
	gpubuf_unref(buf);	/* unmapped and closed: only the ring's pins */
	if (ret) {
		T_EQ(t_stat("held_bytes"), held);
		io_uring_queue_exit(&ring);
		gpubuf_close(ctx);
		return T_PASS;
	}
	T_EQ(t_stat("held_bytes"), held + size);
	io_uring_queue_exit(&ring);
	/* The ring's teardown runs in a kernel worker: wait for it. */
	for (i = 0; i < 600 && t_stat("held_bytes") != held; i++)
		usleep(100 * 1000);
	T_EQ(t_stat("held_bytes"), held);
	gpubuf_close(ctx);
	return T_PASS;
#else
	return t_skip("built without liburing (liburing-dev)");
#endif
}

int main(int argc, char **argv)
{
	static const struct t_test tests[] = {
		T_TEST_ON(T_MODULE, raw_nvme_into_2m_chunks),
		T_TEST_ON(T_MODULE, raw_nvme_into_small_chunks),
		T_TEST_ON(T_MODULE, ext4_file_on_virtio_blk),
		T_TEST_ON(T_MODULE, raw_nvme_write_reads_back),
		T_TEST_ON(T_MODULE, read_file_leaves_no_pin_behind),
		T_TEST_ON(T_MODULE, released_while_registered_is_held),
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
