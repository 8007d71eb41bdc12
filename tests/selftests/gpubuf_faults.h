/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The systematic fault loop of 26-faults, shared with the RDMA suite
 * (tests/rdma): fail a call's 1st, 2nd, ... allocation or user copy
 * (/proc/thread-self/fail-nth) until it no longer reaches the fault, and
 * after each failure compare the module's counters, the descriptors and
 * the mappings with what they were before. Include after
 * kselftest_harness.h, gpubuf_helpers.h and gpubuf_reserve.h.
 */
#ifndef GPUBUF_FAULTS_H
#define GPUBUF_FAULTS_H

/* What a call and its undoing must leave as they found it. */
struct snap {
	unsigned long long live_buffers, live_bytes, held_bytes, held_buffers;
	unsigned long long reserve_used, reserve_owned;
	int loaded, fds, maps;
};

static inline int count_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int c, n = 0;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* With the module unloaded its counters read as absent, not as zero. */
static inline void snap_take(struct snap *s)
{
	memset(s, 0, sizeof(*s));
	s->loaded = !access("/sys/module/gpubuf/initstate", F_OK);
	if (s->loaded) {
		rsv_wait_zeroed();
		s->live_buffers = gb_stat("live_buffers");
		s->live_bytes = gb_stat("live_bytes");
		s->held_bytes = gb_stat("held_bytes");
		s->held_buffers = gb_stat("held_buffers");
		s->reserve_used = gb_stat("reserve_used_bytes");
		s->reserve_owned = gb_stat("reserve_ready_bytes") +
				   gb_stat("reserve_zeroing_bytes") +
				   s->reserve_used;
	}
	s->fds = gb_count_fds();
	s->maps = count_maps();
}

/* One call under test: 0 or -errno; undo() takes back what succeeded. */
struct fault_op {
	const char *what;
	int (*call)(void *arg);
	void (*undo)(void *arg);
	const int *errnos;	/* what the call may answer, 0-terminated */
	void *arg;
};

/* The state after a call and its undoing equals the state before. */
static inline int snap_same(struct __test_metadata *_metadata,
			    const struct fault_op *op, const struct snap *a,
			    int n)
{
	struct snap b;

	snap_take(&b);
	if (!memcmp(a, &b, sizeof(b)))
		return 1;
	TH_LOG("%s, fault %d: loaded %d (was %d), live %llu/%llu bytes (was %llu/%llu), held %llu/%llu (was %llu/%llu), reserve used %llu owned %llu (was %llu %llu), fds %d (was %d), maps %d (was %d)",
	       op->what, n, b.loaded, a->loaded, b.live_buffers, b.live_bytes,
	       a->live_buffers, a->live_bytes, b.held_buffers, b.held_bytes,
	       a->held_buffers, a->held_bytes, b.reserve_used,
	       b.reserve_owned, a->reserve_used, a->reserve_owned, b.fds,
	       a->fds, b.maps, a->maps);
	return 0;
}

/*
 * Fail the op's 1st, 2nd, ... allocation or user copy until it no longer
 * reaches the fault; check every time. Returns the fault sites reached.
 */
static inline int fault_loop(struct __test_metadata *_metadata,
			     const struct fault_op *op)
{
	int fail = gb_fail_nth_open(), n, sites = 0;
	struct snap before;

	if (fail == -ENOENT) {
		SKIP(return 0, "no /proc/thread-self/fail-nth: this kernel has no CONFIG_FAULT_INJECTION (the debug kernel of make check-debug has)");
	}
	ASSERT_LE(0, fail);
	snap_take(&before);
	for (n = 1; n < 100000; n++) {
		int ret, reached, i, ok;

		ASSERT_EQ(0, gb_fail_nth_arm(fail, n));
		ret = op->call(op->arg);
		reached = gb_fail_nth_disarm(fail);
		ASSERT_LE(0, reached);
		if (!reached) {
			EXPECT_EQ(0, ret) TH_LOG("%s without a fault", op->what);
			if (!ret)
				op->undo(op->arg);
			EXPECT_TRUE(snap_same(_metadata, op, &before, n));
			break;
		}
		sites++;
		ok = !ret;
		for (i = 0; !ok && op->errnos[i]; i++)
			ok = ret == -op->errnos[i];
		EXPECT_TRUE(ok) TH_LOG("%s, fault %d: %s, not a documented errno",
				       op->what, n, strerror(-ret));
		if (!ret)
			op->undo(op->arg);
		EXPECT_TRUE(snap_same(_metadata, op, &before, n));
		/* Nothing half done: the same call succeeds now. */
		ret = op->call(op->arg);
		EXPECT_EQ(0, ret) TH_LOG("%s after fault %d: %s", op->what, n,
					 strerror(-ret));
		if (!ret)
			op->undo(op->arg);
	}
	close(fail);
	TH_LOG("%s: %d fault sites", op->what, sites);
	return sites;
}

#endif /* GPUBUF_FAULTS_H */
