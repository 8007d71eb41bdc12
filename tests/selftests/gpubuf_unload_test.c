// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: runs last. Every buffer of the earlier suites is gone, and a
 * live buffer (through its fd or only through a mapping) keeps gpubuf.ko
 * loaded; once released, the module unloads and loads again cleanly.
 * GPUBUF_KO names the module file to reload.
 */
#include "gpubuf_helpers.h"
#include "kselftest_harness.h"

static int unload(void)
{
	return gb_unload_module("gpubuf");
}

static int load(void)
{
	return gb_load_module("GPUBUF_KO", "");
}

static int is_refusal(int ret)
{
	/* 6.1 answers EWOULDBLOCK for a busy module; older kernels EBUSY. */
	return ret == -EWOULDBLOCK || ret == -EBUSY;
}

TEST(counters_are_zero_after_all_suites)
{
	EXPECT_EQ(0, gb_stat("live_buffers"));
	EXPECT_EQ(0, gb_stat("live_bytes"));
	EXPECT_LT(0, gb_stat("peak_bytes"));
}

TEST(live_buffers_pin_the_module)
{
	int dev = gb_open();
	int fd;
	void *p;

	ASSERT_LE(0, dev);
	ASSERT_TRUE(is_refusal(unload()));
	fd = gb_alloc(dev, SZ_1M);
	ASSERT_LE(0, fd);
	close(dev);
	/* /dev/gpubuf is closed: only the buffer holds the module. */
	EXPECT_TRUE(is_refusal(unload()));
	p = mmap(NULL, SZ_1M, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	close(fd);
	/* Only a mapping is left. */
	EXPECT_TRUE(is_refusal(unload()));
	munmap(p, SZ_1M);
	ASSERT_EQ(0, unload());
	EXPECT_NE(0, access(GPUBUF_DEVICE_PATH, F_OK));

	ASSERT_EQ(0, load());
	dev = gb_open();
	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, SZ_1M);
	EXPECT_LE(0, fd);
	close(fd);
	close(dev);
	EXPECT_EQ(0, gb_stat("live_buffers"));
}

/*
 * reserve_bytes given at load is filled before /dev/gpubuf appears, and
 * unload gives every page back, those lent to a freed buffer included.
 */
TEST(reserve_set_at_load_goes_back_at_unload)
{
	unsigned long long before, loaded, after;
	struct gpubuf_info info;
	int dev, fd;

	ASSERT_EQ(0, unload());
	before = gb_free_bytes();
	ASSERT_EQ(0, gb_load_module("GPUBUF_KO", "reserve_bytes=67108864"));
	EXPECT_EQ(64 * SZ_1M, gb_param("reserve_bytes"));
	EXPECT_EQ(64 * SZ_1M, gb_stat("reserve_ready_bytes"));
	loaded = gb_free_bytes();
	EXPECT_LE(48 * SZ_1M, before - loaded);

	dev = gb_open();
	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, 16 * SZ_1M);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, gb_info(dev, fd, &info));
	EXPECT_EQ(16 * SZ_1M, info.reserve_bytes);
	close(fd);
	close(dev);

	ASSERT_EQ(0, unload());
	after = gb_free_bytes();
	EXPECT_GE(16 * SZ_1M, before > after ? before - after : 0)
		TH_LOG("%llu MiB free before load, %llu MiB after unload",
		       before >> 20, after >> 20);
	ASSERT_EQ(0, load());
	EXPECT_EQ(0, gb_stat("reserve_ready_bytes"));
}

TEST_HARNESS_MAIN
