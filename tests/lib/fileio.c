// SPDX-License-Identifier: MIT
/*
 * Description: files read into buffers and written back from them
 * (gpubuf_read_file(3)). Byte for byte against the file, for ranges
 * aligned and not, buffer and file offsets that line up and that cannot,
 * a padded matrix; O_DIRECT where the file system takes it (asserted from
 * what the test itself finds: an O_DIRECT open of the same file), buffered
 * when asked; io_uring, with the buffer registered where the kernel allows,
 * and pread(2) when asked or when a seccomp filter refuses io_uring; a
 * file that ends early (ENODATA, the prefix in place reported); every bad
 * argument refused with its errno and nothing written, no descriptor or
 * mapping left.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "refuse_syscall.h"
#include "tap.h"

#define MIB (1u << 20)

static char t_dir[] = "/tmp/gpubuf-fileio-XXXXXX";

/* Deterministic bytes: the file's content at any offset. */
static unsigned char t_byte(uint64_t off)
{
	return (unsigned char)((off * 2654435761u) >> 13);
}

/* A file of size bytes of t_byte(); its fd (O_RDWR) or -1. */
static int t_file(const char *name, size_t size)
{
	char path[128];
	unsigned char chunk[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", t_dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	for (size_t off = 0; off < size; off += sizeof(chunk)) {
		size_t n = size - off < sizeof(chunk) ? size - off : sizeof(chunk);

		for (size_t i = 0; i < n; i++)
			chunk[i] = t_byte(off + i);
		if (pwrite(fd, chunk, n, (off_t)off) != (ssize_t)n) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* Whether this file system takes O_DIRECT (what the library should find). */
static int t_direct_ok(const char *name)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", t_dir, name);
	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* mem[0, len) equals the file's bytes from off on. */
static int t_same(const unsigned char *mem, uint64_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (mem[i] != t_byte(off + i)) {
			printf("# byte %zu (file offset %llu): %#x, want %#x\n", i,
			       (unsigned long long)(off + i), mem[i],
			       t_byte(off + i));
			return 0;
		}
	return 1;
}

struct t_case {
	size_t buf_off;
	uint64_t file_off;
	size_t len;
};

/*
 * Reads at offsets that line up (0/0, 100/100: a buffered head and tail
 * around an O_DIRECT middle) and that cannot (0/100); every byte around
 * the range stays as it was.
 */
static int reads_land_byte_for_byte(void)
{
	static const struct t_case cases[] = {
		{ 0, 0, 8 * MIB }, { 100, 100, 8 * MIB - 300 },
		{ 0, 100, 3 * MIB + 7 }, { 4096, 8192, 5 * MIB },
		{ 12345, 4 * MIB + 12345, 1 }, { 0, 0, 4096 },
	};
	struct gpubuf_ctx *ctx = t_open();
	int fd = t_file("data", 9 * MIB), direct = t_direct_ok("data");
	int fds = t_open_fds(), maps;
	struct gpubuf *buf;
	unsigned char *p;

	T_CHECK(fd >= 0);
	T_EQ(gpubuf_alloc(ctx, 10 * MIB, NULL, &buf), 0);
	p = gpubuf_ptr(buf);
	maps = t_buffer_maps();
	printf("# O_DIRECT on this file system: %s\n", direct ? "yes" : "no");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct t_case *c = &cases[i];
		struct gpubuf_io_result res;
		bool lines_up = (c->buf_off - c->file_off) % 4096 == 0;

		memset(p, 0xee, gpubuf_size(buf));
		T_EQ(gpubuf_read_file(buf, c->buf_off, fd, c->file_off, c->len,
				      NULL, &res), 0);
		T_EQ(res.bytes, c->len);
		T_CHECK(t_same(p + c->buf_off, c->file_off, c->len));
		for (size_t j = 0; j < c->buf_off; j++)
			T_EQ(p[j], 0xee);
		T_EQ(p[c->buf_off + c->len], 0xee);
		printf("# case %zu: method %u, %llu of %zu bytes by O_DIRECT, align %u\n",
		       i, res.method, (unsigned long long)res.direct_bytes,
		       c->len, res.align);
		T_CHECK(res.method == GPUBUF_IO_URING ||
			res.method == GPUBUF_IO_URING_FIXED ||
			res.method == GPUBUF_IO_PREAD);
		/* O_DIRECT exactly where offsets line up and a block fits. */
		if (direct && lines_up && c->len >= 2 * 4096) {
			T_EQ(res.align, 4096);
			T_CHECK(res.direct_bytes > 0);
			T_CHECK(res.direct_bytes >= c->len - 2 * 4096);
		} else if (!direct || !lines_up) {
			T_EQ(res.direct_bytes, 0);
		}
		T_CHECK(res.direct_bytes % 4096 == 0);
	}
	T_EQ(t_buffer_maps(), maps);
	gpubuf_unref(buf);
	close(fd);
	T_EQ(t_open_fds(), fds - 1);
	gpubuf_close(ctx);
	return T_PASS;
}

/* Each way of moving the bytes, asked for, gives the same bytes. */
static int every_method_and_size(void)
{
	static const struct {
		unsigned int flags, depth;
		size_t request;
	} ways[] = {
		{ 0, 0, 0 }, { GPUBUF_IO_NO_URING, 0, 0 },
		{ GPUBUF_IO_BUFFERED, 0, 0 },
		{ GPUBUF_IO_BUFFERED | GPUBUF_IO_NO_URING, 0, 0 },
		{ 0, 1, 4096 }, { 0, 64, 64 << 10 }, { 0, 3, 3 * 4096 },
	};
	struct gpubuf_ctx *ctx = t_open();
	int fd = t_file("ways", 6 * MIB + 333);
	struct gpubuf *buf;

	T_CHECK(fd >= 0);
	T_EQ(gpubuf_alloc(ctx, 8 * MIB, NULL, &buf), 0);
	for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
		struct gpubuf_io_opts o = GPUBUF_IO_OPTS_INIT;
		struct gpubuf_io_result res;

		o.flags = ways[i].flags;
		o.queue_depth = ways[i].depth;
		o.request_bytes = ways[i].request;
		memset(gpubuf_ptr(buf), 0, gpubuf_size(buf));
		T_EQ(gpubuf_read_file(buf, 0, fd, 0, 6 * MIB + 333, &o, &res), 0);
		T_CHECK(t_same(gpubuf_ptr(buf), 0, 6 * MIB + 333));
		printf("# flags %#x depth %u request %zu: method %u, %llu by O_DIRECT\n",
		       o.flags, o.queue_depth, o.request_bytes, res.method,
		       (unsigned long long)res.direct_bytes);
		if (o.flags & GPUBUF_IO_NO_URING)
			T_EQ(res.method, GPUBUF_IO_PREAD);
		if (o.flags & GPUBUF_IO_BUFFERED) {
			T_EQ(res.direct_bytes, 0);
			T_EQ(res.align, 0);
		}
	}
	gpubuf_unref(buf);
	close(fd);
	gpubuf_close(ctx);
	return T_PASS;
}

/* Without io_uring (a seccomp filter says EPERM): pread, same bytes. */
static int no_io_uring_falls_back_to_pread(void)
{
	int fd = t_file("seccomp", 2 * MIB + 5), status;
	pid_t pid;

	T_CHECK(fd >= 0);
	pid = fork();
	T_CHECK(pid >= 0);
	if (pid == 0) {
		struct gpubuf_ctx *ctx = NULL;
		struct gpubuf_io_result res;
		struct gpubuf *buf;

		/* Docker's default profile since Docker 25: EPERM. */
		if (t_refuse_syscall(SYS_io_uring_setup) ||
		    gpubuf_open(&ctx, GPUBUF_OPEN_ALLOW_MEMFD) ||
		    gpubuf_alloc(ctx, 4 * MIB, NULL, &buf))
			_exit(2);
		if (gpubuf_read_file(buf, 0, fd, 0, 2 * MIB + 5, NULL, &res) ||
		    res.bytes != 2 * MIB + 5 || res.method != GPUBUF_IO_PREAD ||
		    !t_same(gpubuf_ptr(buf), 0, 2 * MIB + 5))
			_exit(1);
		_exit(0);
	}
	T_EQ(waitpid(pid, &status, 0), pid);
	T_CHECK(WIFEXITED(status));
	T_EQ(WEXITSTATUS(status), 0);
	close(fd);
	return T_PASS;
}

/* A file that ends before the range does: ENODATA, the prefix reported. */
static int short_file_is_enodata_with_the_prefix(void)
{
	struct gpubuf_ctx *ctx = t_open();
	int fd = t_file("short", MIB + 1000);
	struct gpubuf *buf;

	T_CHECK(fd >= 0);
	T_EQ(gpubuf_alloc(ctx, 4 * MIB, NULL, &buf), 0);
	for (unsigned int flags = 0; flags < 4; flags++) {
		struct gpubuf_io_opts o = GPUBUF_IO_OPTS_INIT;
		struct gpubuf_io_result res;

		o.flags = flags;
		memset(gpubuf_ptr(buf), 0, gpubuf_size(buf));
		T_EQ(gpubuf_read_file(buf, 0, fd, 4096, 2 * MIB, &o, &res),
		     -ENODATA);
		T_EQ(res.bytes, MIB + 1000 - 4096);
		T_CHECK(t_same(gpubuf_ptr(buf), 4096, MIB + 1000 - 4096));
		T_CHECK(strstr(gpubuf_last_error(), "gpubuf_read_file"));
	}
	gpubuf_unref(buf);
	close(fd);
	gpubuf_close(ctx);
	return T_PASS;
}

/* Writes: the file gets the buffer's bytes, at the offset asked. */
static int writes_land_byte_for_byte(void)
{
	static const struct t_case cases[] = {
		{ 0, 0, 4 * MIB }, { 100, 100, 3 * MIB + 11 }, { 0, 7, MIB },
	};
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf;
	unsigned char *p;

	T_EQ(gpubuf_alloc(ctx, 5 * MIB, NULL, &buf), 0);
	p = gpubuf_ptr(buf);
	for (size_t i = 0; i < gpubuf_size(buf); i++)
		p[i] = t_byte(i);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct t_case *c = &cases[i];
		struct gpubuf_io_result res;
		int fd = t_file("out", 0);
		unsigned char *back = malloc(c->len);

		T_CHECK(fd >= 0 && back);
		T_EQ(gpubuf_write_file(buf, c->buf_off, fd, c->file_off, c->len,
				       NULL, &res), 0);
		T_EQ(res.bytes, c->len);
		T_EQ(pread(fd, back, c->len, (off_t)c->file_off), c->len);
		/* The buffer holds t_byte(i) at i. */
		for (size_t j = 0; j < c->len; j++)
			T_EQ(back[j], t_byte(c->buf_off + j));
		printf("# write case %zu: method %u, %llu by O_DIRECT\n", i,
		       res.method, (unsigned long long)res.direct_bytes);
		free(back);
		close(fd);
	}
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * A padded matrix (ld > cols) from a file that holds it packed: each row
 * lands at its place, the padding is never written; and back to a file,
 * packed again.
 */
static int padded_matrix_reads_and_writes_rows(void)
{
	const size_t rows = 300, cols = 1000;
	struct gpubuf_ctx *ctx = t_open();
	int fd = t_file("matrix", rows * cols * 4 + 4096), out;
	struct gpubuf_io_result res;
	struct gpubuf_matrix m;
	unsigned char *base;
	unsigned char *back;
	size_t ld;

	T_CHECK(fd >= 0);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, rows, 1100,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	ld = m.ld;
	m.cols = cols;			/* the view: 1000 of each row */
	base = gpubuf_matrix_data(&m);
	memset(base, 0xee, rows * ld * 4);
	T_EQ(gpubuf_matrix_read_file(&m, fd, 4096, NULL, &res), 0);
	T_EQ(res.bytes, rows * cols * 4);
	for (size_t r = 0; r < rows; r++) {
		T_CHECK(t_same(base + r * ld * 4, 4096 + r * cols * 4, cols * 4));
		for (size_t j = cols * 4; j < ld * 4; j++)
			T_EQ(base[r * ld * 4 + j], 0xee);
	}
	out = t_file("matrix-out", 0);
	back = malloc(rows * cols * 4);
	T_CHECK(out >= 0 && back);
	T_EQ(gpubuf_matrix_write_file(&m, out, 0, NULL, &res), 0);
	T_EQ(res.bytes, rows * cols * 4);
	T_EQ(pread(out, back, rows * cols * 4, 0), rows * cols * 4);
	T_CHECK(t_same(back, 4096, rows * cols * 4));
	free(back);
	close(out);
	close(fd);
	m.cols = 1100;
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

/* Every bad argument: its errno, nothing written, nothing left open. */
static int bad_arguments_write_nothing(void)
{
	struct gpubuf_ctx *ctx = t_open();
	int fd = t_file("bad", MIB), fds, pipefd[2], dir, wo, app;
	struct gpubuf_io_opts o = GPUBUF_IO_OPTS_INIT;
	struct gpubuf_io_result res;
	struct gpubuf *buf;
	char path[128];
	unsigned char *p;

	T_CHECK(fd >= 0);
	T_EQ(gpubuf_alloc(ctx, MIB, NULL, &buf), 0);
	p = gpubuf_ptr(buf);
	memset(p, 0xee, MIB);
	T_EQ(pipe(pipefd), 0);
	dir = open(t_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/bad", t_dir);
	wo = open(path, O_WRONLY | O_CLOEXEC);
	app = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	T_CHECK(dir >= 0 && wo >= 0 && app >= 0);
	fds = t_open_fds();
	T_EQ(gpubuf_read_file(NULL, 0, fd, 0, 4096, NULL, &res), -EINVAL);
	T_EQ(gpubuf_read_file(buf, 1, fd, 0, MIB, NULL, &res), -EINVAL);
	T_EQ(gpubuf_read_file(buf, SIZE_MAX, fd, 0, 2, NULL, &res), -EINVAL);
	T_EQ(gpubuf_read_file(buf, 0, fd, INT64_MAX, 4096, NULL, &res), -EINVAL);
	T_EQ(gpubuf_read_file(buf, 0, -1, 0, 4096, NULL, &res), -EBADF);
	T_EQ(gpubuf_read_file(buf, 0, pipefd[0], 0, 4096, NULL, &res), -ESPIPE);
	{
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		T_CHECK(null >= 0);
		T_EQ(gpubuf_read_file(buf, 0, null, 0, 4096, NULL, &res), -ESPIPE);
		close(null);
	}
	T_EQ(gpubuf_read_file(buf, 0, dir, 0, 4096, NULL, &res), -EISDIR);
	T_EQ(gpubuf_read_file(buf, 0, wo, 0, 4096, NULL, &res), -EBADF);
	T_EQ(gpubuf_write_file(buf, 0, app, 0, 4096, NULL, &res), -EINVAL);
	T_CHECK(strstr(gpubuf_last_error(), "O_APPEND"));
	o.flags = 1u << 7;
	T_EQ(gpubuf_read_file(buf, 0, fd, 0, 4096, &o, &res), -EINVAL);
	o.flags = 0;
	o.queue_depth = 5000;
	T_EQ(gpubuf_read_file(buf, 0, fd, 0, 4096, &o, &res), -EINVAL);
	o.queue_depth = 0;
	o.request_bytes = 1000;
	T_EQ(gpubuf_read_file(buf, 0, fd, 0, 4096, &o, &res), -EINVAL);
	o.request_bytes = 0;
	o.reserved[3] = 1;
	T_EQ(gpubuf_read_file(buf, 0, fd, 0, 4096, &o, &res), -EINVAL);
	o.reserved[3] = 0;
	o.size = 4096;			/* a garbage size, refused unread */
	T_EQ(gpubuf_read_file(buf, 0, fd, 0, 4096, &o, &res), -E2BIG);
	T_EQ(res.bytes, 0);
	o.size = 8;			/* shorter than any version */
	T_EQ(gpubuf_read_file(buf, 0, fd, 0, 4096, &o, &res), -EINVAL);
	{
		/* A newer, larger structure: fine with a zero tail only. */
		struct { struct gpubuf_io_opts o; uint64_t more; } big = {
			GPUBUF_IO_OPTS_INIT, 1 };

		big.o.size = sizeof(big);
		T_EQ(gpubuf_read_file(buf, 0, fd, 0, 4096, &big.o, &res), -E2BIG);
		big.more = 0;
		T_EQ(gpubuf_read_file(buf, 0, fd, 0, 4096, &big.o, &res), 0);
		T_CHECK(t_same(p, 0, 4096));
		memset(p, 0xee, 4096);
	}
	/* Length 0 reads nothing and succeeds. */
	T_EQ(gpubuf_read_file(buf, 0, fd, 0, 0, NULL, &res), 0);
	for (size_t i = 0; i < MIB; i++)
		T_EQ(p[i], 0xee);
	T_EQ(t_open_fds(), fds);
	close(pipefd[0]);
	close(pipefd[1]);
	close(dir);
	close(wo);
	close(app);
	close(fd);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

/* The caller's descriptor: its offset and flags as they were. */
static int callers_fd_left_alone(void)
{
	struct gpubuf_ctx *ctx = t_open();
	int fd = t_file("alone", 2 * MIB), fl;
	struct gpubuf *buf;

	T_CHECK(fd >= 0);
	T_EQ(lseek(fd, 12345, SEEK_SET), 12345);
	fl = fcntl(fd, F_GETFL);
	T_EQ(gpubuf_alloc(ctx, 2 * MIB, NULL, &buf), 0);
	T_EQ(gpubuf_read_file(buf, 0, fd, 0, 2 * MIB, NULL, NULL), 0);
	T_EQ(gpubuf_write_file(buf, 0, fd, 0, 2 * MIB, NULL, NULL), 0);
	T_EQ(lseek(fd, 0, SEEK_CUR), 12345);
	T_EQ(fcntl(fd, F_GETFL), fl);
	T_EQ(fl & O_DIRECT, 0);
	gpubuf_unref(buf);
	close(fd);
	gpubuf_close(ctx);
	return T_PASS;
}

struct t_half {
	struct gpubuf *buf;
	int fd, result;
	size_t off, len;
};

static void *t_read_half(void *arg)
{
	struct t_half *h = arg;

	for (int i = 0; i < 8 && !h->result; i++)
		h->result = gpubuf_read_file(h->buf, h->off, h->fd, h->off,
					     h->len, NULL, NULL);
	return NULL;
}

/* Two threads reading the two halves of one buffer at once. */
static int threads_read_disjoint_ranges(void)
{
	struct gpubuf_ctx *ctx = t_open();
	int fd = t_file("threads", 8 * MIB);
	struct t_half h[2];
	pthread_t t[2];
	struct gpubuf *buf;

	T_CHECK(fd >= 0);
	T_EQ(gpubuf_alloc(ctx, 8 * MIB, NULL, &buf), 0);
	for (int i = 0; i < 2; i++) {
		/* Split off the alignment: [0, 4 MiB + 100), the rest. */
		h[i] = (struct t_half){ buf, fd, 0, i * (4 * MIB + 100),
					i ? 4 * MIB - 100 : 4 * MIB + 100 };
		T_EQ(pthread_create(&t[i], NULL, t_read_half, &h[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		T_EQ(pthread_join(t[i], NULL), 0);
		T_EQ(h[i].result, 0);
	}
	T_CHECK(t_same(gpubuf_ptr(buf), 0, 8 * MIB));
	gpubuf_unref(buf);
	close(fd);
	gpubuf_close(ctx);
	return T_PASS;
}

/* A read-only import (a dma-buf opened O_RDONLY): EACCES, nothing read. */
static int read_into_read_only_import_is_eacces(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_alloc a = { .size = 4096, .numa_node = GPUBUF_NUMA_ANY,
				  .fd_flags = O_RDONLY | O_CLOEXEC };
	int dev = open(GPUBUF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	int fd = t_file("ro", 4096);
	struct gpubuf *buf;

	T_CHECK(dev >= 0 && fd >= 0);
	T_EQ(ioctl(dev, GPUBUF_IOC_ALLOC, &a), 0);
	close(dev);
	T_EQ(gpubuf_import(ctx, a.fd, &buf), 0);
	T_EQ(gpubuf_is_readonly(buf), 1);
	T_EQ(gpubuf_read_file(buf, 0, fd, 0, 4096, NULL, NULL), -EACCES);
	T_EQ(((volatile unsigned char *)gpubuf_ptr(buf))[0], 0);
	/* Writing the file from it is fine. */
	T_EQ(gpubuf_write_file(buf, 0, fd, 0, 4096, NULL, NULL), 0);
	gpubuf_unref(buf);
	close(a.fd);
	close(fd);
	gpubuf_close(ctx);
	return T_PASS;
}

static void t_cleanup(void)
{
	static const char *const names[] = {
		"data", "ways", "seccomp", "short", "out", "matrix",
		"matrix-out", "bad", "alone", "threads", "ro",
	};
	char path[128];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", t_dir, names[i]);
		unlink(path);
	}
	rmdir(t_dir);
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST(reads_land_byte_for_byte),
		T_TEST(every_method_and_size),
		T_TEST(no_io_uring_falls_back_to_pread),
		T_TEST(short_file_is_enodata_with_the_prefix),
		T_TEST(writes_land_byte_for_byte),
		T_TEST(padded_matrix_reads_and_writes_rows),
		T_TEST(bad_arguments_write_nothing),
		T_TEST(callers_fd_left_alone),
		T_TEST(threads_read_disjoint_ranges),
		T_TEST_ON(T_MODULE, read_into_read_only_import_is_eacces),
	};
	int rc;

	if (!mkdtemp(t_dir)) {
		perror("mkdtemp");
		return 1;
	}
	rc = T_RUN(tests);
	t_cleanup();
	return rc;
}
