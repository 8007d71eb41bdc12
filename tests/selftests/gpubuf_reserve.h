/* SPDX-License-Identifier: GPL-2.0-only */
/* Helpers of the reserve suites (27-reserve, 28-reserve-measure). */
#ifndef GPUBUF_RESERVE_TEST_H
#define GPUBUF_RESERVE_TEST_H

#include <time.h>

#include "gpubuf_helpers.h"

/* Whether [p, p + len) holds only zero bytes. */
static inline int rsv_all_zero(const void *p, size_t len)
{
	const uint64_t *w = p;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		if (w[i])
			return 0;
	return 1;
}

/*
 * Wait until the reserve's worker has zeroed every page that came back;
 * 0, or -ETIMEDOUT after 120 s (TCG on a busy host is slow, not stuck).
 */
static inline int rsv_wait_zeroed(void)
{
	int i;

	for (i = 0; i < 12000; i++) {
		if (!gb_stat("reserve_zeroing_bytes"))
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

static inline unsigned long long rsv_cg_current(const char *cg)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/memory.current", cg);
	return gb_read_u64(path);
}

static inline double rsv_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif /* GPUBUF_RESERVE_TEST_H */
