// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the reserve of 2 MiB pages on a machine with two NUMA nodes
 * (the guest of GPUBUF_VM_NUMA=1, where each node has one CPU and half the
 * memory, and the reserve is filled from both in turn). A buffer without a
 * node follows the task's memory policy: the default one takes the local
 * node's reserve, --membind and --interleave are the buddy allocator's to
 * follow; a cpuset's memory nodes bound which reserve lists may serve; a
 * buffer for a node without NUMA_STRICT takes that node's reserve, then
 * that node's free 2 MiB pages, before another node's reserve; a task on
 * a node without memory (the third node of GPUBUF_VM_NUMA_DEVICES=1) takes
 * the nearest node's. Where each page landed is read back with
 * move_pages(2).
 */
#include <sched.h>
#include <sys/stat.h>
#include <linux/mempolicy.h>

#include "gpubuf_helpers.h"
#include "gpubuf_reserve.h"
#include "kselftest_harness.h"

#define RSV_BYTES	(32 * SZ_1M)
#define CG_DIR		"/sys/fs/cgroup/gpubuf-numa"

/* Pages of [p, p + len) on node 0 and node 1; -errno on failure. */
static int pages_per_node(void *p, size_t len, unsigned long count[2])
{
	size_t i, n = len / SZ_4K;
	void **pages = calloc(n, sizeof(*pages));
	int *status = calloc(n, sizeof(*status));
	int ret = 0;

	count[0] = count[1] = 0;
	if (!pages || !status) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		pages[i] = (char *)p + i * SZ_4K;
	if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0)) {
		ret = -errno;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (status[i] < 0 || status[i] > 1) {
			ret = status[i] < 0 ? status[i] : -ERANGE;
			goto out;
		}
		count[status[i]]++;
	}
out:
	free(pages);
	free(status);
	return ret;
}

/*
 * ALLOC @len (node @node, @flags), map and touch it; where its pages are in
 * @count, what the reserve lent in *@reserve. 0 or -errno.
 */
static int alloc_and_place(int dev, size_t len, int node, uint32_t flags,
			   unsigned long count[2], unsigned long long *reserve)
{
	struct gpubuf_alloc req;
	struct gpubuf_info info;
	int ret;
	char *p;

	gb_alloc_req(&req, len);
	req.numa_node = node;
	req.flags = flags;
	if (gb_ioctl(dev, GPUBUF_IOC_ALLOC, &req))
		return -errno;
	ret = gb_info(dev, req.fd, &info);
	if (ret)
		goto out;
	*reserve = info.reserve_bytes;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, req.fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	memset(p, 1, len);
	ret = pages_per_node(p, len, count);
	munmap(p, len);
out:
	close(req.fd);
	return ret;
}

static int set_policy(int mode, unsigned long nodes)
{
	return syscall(SYS_set_mempolicy, mode, nodes ? &nodes : NULL,
		       nodes ? 8 * sizeof(nodes) : 0) ? -errno : 0;
}

FIXTURE(numa) {
	int dev;
};

FIXTURE_SETUP(numa)
{
	cpu_set_t cpus;

	if (access("/sys/devices/system/node/node1/meminfo", F_OK))
		SKIP(return, "one NUMA node: this suite runs in the two-node guest (GPUBUF_VM_NUMA=1)");
	self->dev = gb_open();
	ASSERT_LE(0, self->dev);
	/* On node 0's CPU: the local node is 0. */
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpus), &cpus));
	ASSERT_EQ(0, gb_set_param("reserve_bytes", RSV_BYTES));
	ASSERT_EQ(0, rsv_wait_zeroed());
	ASSERT_EQ(RSV_BYTES, gb_stat("reserve_ready_bytes"));
}

FIXTURE_TEARDOWN(numa)
{
	gb_set_param("reserve_bytes", 0);
	close(self->dev);
}

TEST_F(numa, default_policy_takes_the_local_reserve)
{
	unsigned long count[2];
	unsigned long long rsv;

	ASSERT_EQ(0, alloc_and_place(self->dev, 8 * SZ_1M, GPUBUF_NUMA_ANY, 0,
				     count, &rsv));
	EXPECT_EQ(8 * SZ_1M, rsv);
	EXPECT_EQ(8 * SZ_1M / SZ_4K, count[0]);
}

/* numactl --membind=1 on node 0's CPU: node 1's memory, not the reserve. */
TEST_F(numa, membind_gets_the_bound_node)
{
	unsigned long count[2];
	unsigned long long rsv;

	ASSERT_EQ(0, set_policy(MPOL_BIND, 1UL << 1));
	ASSERT_EQ(0, alloc_and_place(self->dev, 8 * SZ_1M, GPUBUF_NUMA_ANY, 0,
				     count, &rsv));
	EXPECT_EQ(0, count[0]);
	EXPECT_EQ(8 * SZ_1M / SZ_4K, count[1]);
	EXPECT_EQ(0, rsv);
}

TEST_F(numa, interleave_spreads_the_pages)
{
	unsigned long count[2];
	unsigned long long rsv;

	ASSERT_EQ(0, set_policy(MPOL_INTERLEAVE, 3));
	ASSERT_EQ(0, alloc_and_place(self->dev, 16 * SZ_1M, GPUBUF_NUMA_ANY,
				     0, count, &rsv));
	TH_LOG("interleaved: %lu pages on node 0, %lu on node 1", count[0],
	       count[1]);
	EXPECT_LT(0, count[0]);
	EXPECT_LT(0, count[1]);
	EXPECT_EQ(0, rsv);
}

/* A container whose cpuset.mems is node 1 gets node 1 only, reserve too. */
TEST_F(numa, cpuset_mems_bound_the_reserve)
{
	unsigned long count[2];
	unsigned long long rsv;
	char pid[32];
	int ret;

	if (gb_write_str("/sys/fs/cgroup/cgroup.subtree_control", "+cpuset"))
		SKIP(return, "no cpuset controller in cgroup v2");
	mkdir(CG_DIR, 0755);
	ASSERT_EQ(0, gb_cg_write(CG_DIR, "cpuset.cpus", "0-1"));
	ASSERT_EQ(0, gb_cg_write(CG_DIR, "cpuset.mems", "1"));
	snprintf(pid, sizeof(pid), "%d", getpid());
	ASSERT_EQ(0, gb_cg_write(CG_DIR, "cgroup.procs", pid));
	ret = alloc_and_place(self->dev, 8 * SZ_1M, GPUBUF_NUMA_ANY, 0, count,
			      &rsv);
	gb_write_str("/sys/fs/cgroup/cgroup.procs", pid);
	rmdir(CG_DIR);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(0, count[0]);
	EXPECT_EQ(8 * SZ_1M / SZ_4K, count[1]);
	/* Node 1's half of the reserve served it. */
	EXPECT_EQ(8 * SZ_1M, rsv);
}

/*
 * Node 1 without NUMA_STRICT, its reserve lent out: node 1's own free
 * 2 MiB pages, not node 0's reserve.
 */
TEST_F(numa, node_without_strict_prefers_its_own_memory)
{
	unsigned long count[2];
	unsigned long long rsv;
	struct gpubuf_alloc hold;
	struct gpubuf_info info;

	gb_alloc_req(&hold, RSV_BYTES / 2);
	hold.numa_node = 1;
	hold.flags = GPUBUF_ALLOC_NUMA_STRICT;
	ASSERT_EQ(0, gb_ioctl(self->dev, GPUBUF_IOC_ALLOC, &hold));
	ASSERT_EQ(0, gb_info(self->dev, hold.fd, &info));
	ASSERT_EQ(RSV_BYTES / 2, info.reserve_bytes);
	ASSERT_EQ(0, alloc_and_place(self->dev, 8 * SZ_1M, 1, 0, count, &rsv));
	close(hold.fd);
	EXPECT_EQ(0, count[0]);
	EXPECT_EQ(8 * SZ_1M / SZ_4K, count[1]);
	EXPECT_EQ(0, rsv);
}

/*
 * Issue 49, item 3: a task on node 2's CPU (a node with no memory, nearer
 * node 1 (15) than node 0 (25) in the guest of GPUBUF_VM_NUMA_DEVICES=1)
 * wanted node 2's reserve, found none, and took node 0's in node-number
 * order. It must get the nearest node with memory, as the buddy
 * allocator's zonelist gives: node 1's reserve.
 */
TEST_F(numa, cpu_only_node_takes_the_nearest_reserve)
{
	unsigned long count[2];
	unsigned long long rsv;
	char mem[32] = "";
	cpu_set_t cpus;
	FILE *f;

	f = fopen("/sys/devices/system/node/has_memory", "r");
	if (f) {
		if (!fgets(mem, sizeof(mem), f))
			mem[0] = '\0';
		fclose(f);
	}
	if (access("/sys/devices/system/node/node2/cpu2", F_OK) ||
	    strcmp(mem, "0-1\n"))
		SKIP(return, "needs node 2 with CPU 2 and no memory (GPUBUF_VM_NUMA_DEVICES=1); has_memory: %s",
		     mem);
	CPU_ZERO(&cpus);
	CPU_SET(2, &cpus);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpus), &cpus));
	ASSERT_EQ(0, alloc_and_place(self->dev, 8 * SZ_1M, GPUBUF_NUMA_ANY, 0,
				     count, &rsv));
	TH_LOG("from CPU 2: %lu pages on node 0, %lu on node 1", count[0],
	       count[1]);
	EXPECT_EQ(8 * SZ_1M, rsv);
	EXPECT_EQ(0, count[0]);
	EXPECT_EQ(8 * SZ_1M / SZ_4K, count[1]);
	/* A request for node 2 without NUMA_STRICT: node 1's, too. */
	ASSERT_EQ(0, alloc_and_place(self->dev, 8 * SZ_1M, 2, 0, count, &rsv));
	EXPECT_EQ(8 * SZ_1M, rsv);
	EXPECT_EQ(0, count[0]);
	EXPECT_EQ(8 * SZ_1M / SZ_4K, count[1]);
}

TEST_HARNESS_MAIN
