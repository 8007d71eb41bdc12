// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: libgpubuf's ABI handshake against drivers older and newer
 * than the library. gpubuf.ko is swapped for gpubuf_fakeabi.ko, a
 * /dev/gpubuf that reports a chosen ABI range, then put back.
 * GPUBUF_KO and GPUBUF_FAKEABI_KO name the module files.
 */
#include <gpubuf.h>

#include "gpubuf_helpers.h"
#include "kselftest_harness.h"

/* Open with the fake driver reporting [abi_min, abi]; return the result. */
static int open_against(const char *params, char *msg, size_t len)
{
	struct gpubuf_ctx *ctx = NULL;
	int ret;

	gb_unload_module("gpubuf_fakeabi");
	ret = gb_load_module("GPUBUF_FAKEABI_KO", params);
	if (ret)
		return 1000 + ret;	/* setup failure, distinct from any errno */
	ret = gpubuf_open_err(&ctx, GPUBUF_OPEN_ALLOW_MEMFD | GPUBUF_OPEN_IGNORE_ENV,
			      msg, len);
	if (!ret)
		gpubuf_close(ctx);
	return ret;
}

FIXTURE(fake_driver) {
	char msg[256];
};

FIXTURE_SETUP(fake_driver)
{
	ASSERT_EQ(0, gb_unload_module("gpubuf")) TH_LOG("no gpubuf buffer may be alive here");
}

FIXTURE_TEARDOWN(fake_driver)
{
	gb_unload_module("gpubuf_fakeabi");
	EXPECT_EQ(0, gb_load_module("GPUBUF_KO", ""));
}

TEST_F(fake_driver, library_too_old)
{
	/* The driver serves ABI 2..5 only; the library speaks 1. */
	ASSERT_EQ(-EPROTO, open_against("abi=5 abi_min=2", self->msg, sizeof(self->msg)));
	TH_LOG("%s", self->msg);
	EXPECT_NE(NULL, strstr(self->msg, "library too old"));
	EXPECT_NE(NULL, strstr(self->msg, "speaks ABI 1"));
	EXPECT_NE(NULL, strstr(self->msg, "driver 9.8.7 serves ABI 2..5"));
}

TEST_F(fake_driver, driver_too_old)
{
	ASSERT_EQ(-EPROTO, open_against("abi=0 abi_min=0", self->msg, sizeof(self->msg)));
	TH_LOG("%s", self->msg);
	EXPECT_NE(NULL, strstr(self->msg, "driver too old"));
	EXPECT_NE(NULL, strstr(self->msg, "serves ABI 0..0"));
}

TEST_F(fake_driver, nonsense_range_is_refused)
{
	ASSERT_EQ(-EPROTO, open_against("abi=1 abi_min=3", self->msg, sizeof(self->msg)));
	EXPECT_NE(NULL, strstr(self->msg, "invalid ABI range 3..1"));
}

TEST_F(fake_driver, matching_range_is_accepted)
{
	struct gpubuf_version v;
	struct gpubuf_ctx *ctx;

	/* A newer driver that still serves the library's revision. */
	ASSERT_EQ(0, open_against("abi=7 abi_min=1", self->msg, sizeof(self->msg)));
	ASSERT_EQ(0, gpubuf_open(&ctx, GPUBUF_OPEN_IGNORE_ENV));
	EXPECT_EQ(GPUBUF_BACKEND_MODULE, gpubuf_backend(ctx));
	ASSERT_EQ(0, gpubuf_driver_version(ctx, &v));
	EXPECT_EQ(7, v.abi);
	EXPECT_EQ(9, v.major);
	gpubuf_close(ctx);
}

TEST_HARNESS_MAIN
