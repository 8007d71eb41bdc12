// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: /proc/PID/fdinfo of an open /dev/gpubuf: the buffers
 * allocated through that open file and still alive, and their bytes
 * (gpubuf-buffers, gpubuf-bytes), counted per open file, down when a
 * buffer's last fd and mapping go, and kept right when the device file
 * is closed before its buffers.
 */
#include "gpubuf_helpers.h"
#include "kselftest_harness.h"

/* The value of key in fd's fdinfo; -1 when absent. */
static long long fdinfo_key(int fd, const char *key)
{
	char path[64], line[256];
	long long v = -1;
	size_t len = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ':')
			v = strtoll(line + len + 1, NULL, 10);
	fclose(f);
	return v;
}

TEST(counts_per_open_file)
{
	int a = gb_open(), b = gb_open(), fa1, fa2, fb;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	EXPECT_EQ(0, fdinfo_key(a, "gpubuf-buffers"));
	EXPECT_EQ(0, fdinfo_key(a, "gpubuf-bytes"));
	fa1 = gb_alloc(a, SZ_1M);
	fa2 = gb_alloc(a, 3 * SZ_1M);
	fb = gb_alloc(b, SZ_2M);
	ASSERT_LE(0, fa1);
	ASSERT_LE(0, fa2);
	ASSERT_LE(0, fb);
	EXPECT_EQ(2, fdinfo_key(a, "gpubuf-buffers"));
	EXPECT_EQ(4 * SZ_1M, fdinfo_key(a, "gpubuf-bytes"));
	EXPECT_EQ(1, fdinfo_key(b, "gpubuf-buffers"));
	EXPECT_EQ(SZ_2M, fdinfo_key(b, "gpubuf-bytes"));
	close(fa1);
	EXPECT_EQ(1, fdinfo_key(a, "gpubuf-buffers"));
	EXPECT_EQ(3 * SZ_1M, fdinfo_key(a, "gpubuf-bytes"));
	close(fa2);
	close(fb);
	EXPECT_EQ(0, fdinfo_key(a, "gpubuf-buffers"));
	EXPECT_EQ(0, fdinfo_key(b, "gpubuf-bytes"));
	close(a);
	close(b);
}

/* A mapping keeps the buffer, and so its count, past its fd. */
TEST(mapping_keeps_the_count)
{
	int dev = gb_open(), fd;
	char *p;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, SZ_2M);
	ASSERT_LE(0, fd);
	p = mmap(NULL, SZ_2M, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	close(fd);
	p[0] = 1;
	EXPECT_EQ(1, fdinfo_key(dev, "gpubuf-buffers"));
	munmap(p, SZ_2M);
	EXPECT_EQ(0, fdinfo_key(dev, "gpubuf-buffers"));
	close(dev);
}

/* The device file closed first: its buffers still release cleanly. */
TEST(device_closed_before_its_buffers)
{
	unsigned long long live = gb_stat("live_buffers");
	int dev = gb_open(), fd;

	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, SZ_1M);
	ASSERT_LE(0, fd);
	close(dev);
	EXPECT_EQ(live + 1, gb_stat("live_buffers"));
	dev = gb_open();
	ASSERT_LE(0, dev);
	/* A new open file counts only its own. */
	EXPECT_EQ(0, fdinfo_key(dev, "gpubuf-buffers"));
	close(fd);
	EXPECT_EQ(live, gb_stat("live_buffers"));
	close(dev);
}

TEST_HARNESS_MAIN
