// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: buffers near the device that uses them, on a machine with
 * devices on two NUMA nodes: the guest of GPUBUF_VM_NUMA=1 and
 * GPUBUF_VM_NUMA_DEVICES=1 (tests/vm/run.sh), whose PCI Express expander
 * bridges put an e1000e and a virtio-gpu on node 1, a bochs-display on
 * node 0 and another on node 2, which has a CPU and no memory (node 1 is
 * its nearest with memory), next to q35's own VGA on the root bus (no
 * affinity) and vgem (no PCI device). gpubuf_device_node() must find each device's node from its
 * PCI address, its DRM card and, for the NIC, the soft-RoCE device bound
 * to it; buffers near a device, from the module and the memfd backend,
 * land on its node page for page (move_pages(2)); a pool keeps each
 * node's buffers apart; and ibv_reg_mr and an RDMA WRITE work on buffers
 * near the NIC.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/klog.h>

#include <linux/mempolicy.h>

#include <gpubuf.h>

#include "../selftests/gpubuf_helpers.h"
#include "rdma_verbs.h"
#include "kselftest_harness.h"

#define NEAR_BYTES	(8 * SZ_1M)

/*
 * The PCI function vendor:device whose numa_node is node (-1: none), as
 * "dddd:bb:dd.f" in addr; 0 or -1.
 */
static int find_pci(unsigned int vendor, unsigned int device, int node,
		    char *addr, size_t len)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	int ret = -1;

	while (d && ret && (e = readdir(d))) {
		unsigned int v = 0, id = 0;
		int n = -2;
		char path[512];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", e->d_name);
		f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%x", &v) != 1)
				v = 0;
			fclose(f);
		}
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device", e->d_name);
		f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%x", &id) != 1)
				id = 0;
			fclose(f);
		}
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", e->d_name);
		f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%d", &n) != 1)
				n = -2;
			fclose(f);
		}
		if (v == vendor && id == device && n == node &&
		    strlen(e->d_name) < len) {
			strcpy(addr, e->d_name);
			ret = 0;
		}
	}
	if (d)
		closedir(d);
	return ret;
}

/* The /dev/dri/cardN whose device is PCI function pci ("" vgem's). */
static int drm_card_of(const char *pci, char *card, size_t len)
{
	DIR *d = opendir("/sys/class/drm");
	struct dirent *e;
	int ret = -1;

	while (d && ret && (e = readdir(d))) {
		char path[300], real[PATH_MAX];
		const char *base;

		if (strncmp(e->d_name, "card", 4) || strchr(e->d_name, '-'))
			continue;
		snprintf(path, sizeof(path), "/sys/class/drm/%s/device", e->d_name);
		if (!realpath(path, real))
			continue;
		base = strrchr(real, '/') + 1;
		if ((pci[0] && !strcmp(base, pci)) ||
		    (!pci[0] && !strcmp(base, "vgem"))) {
			snprintf(card, len, "/dev/dri/%.16s", e->d_name);
			ret = 0;
		}
	}
	if (d)
		closedir(d);
	return ret;
}

/* Pages of [p, p + len) not on node; -errno when move_pages fails. */
static long pages_off_node(const void *p, size_t len, int node)
{
	size_t n = len / SZ_4K, i;
	void **pages = calloc(n, sizeof(*pages));
	int *status = calloc(n, sizeof(*status));
	long off = 0;

	if (!pages || !status) {
		off = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		pages[i] = (char *)p + i * SZ_4K;
	if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0)) {
		off = -errno;
		goto out;
	}
	for (i = 0; i < n; i++)
		off += status[i] != node;
out:
	free(pages);
	free(status);
	return off;
}

static int node_of(const char *device)
{
	int node = -100, err = gpubuf_device_node(device, &node);

	if (err) {
		fprintf(stderr, "# %s: %s (%s)\n", device, strerror(-err),
			gpubuf_last_error());
		return err - 1000;
	}
	fprintf(stderr, "# %s: node %d\n", device, node);
	return node;
}

/* The bed's devices, found once per test. */
struct bed {
	char nic[16], gpu[16], disp0[16], disp2[16], vga[16];	/* PCI */
	char gpu_card[32], disp0_card[32], disp2_card[32], vga_card[32];
	char vgem_card[32];
};

/*
 * The bed's drivers: the guest has no udev to load them. DRM cards and
 * the NIC appear once their probes ran, which modprobe waits for.
 */
static int bed_drivers(void)
{
	static const char *const mods[] = {
		"e1000e", "virtio_pci", "virtio-gpu", "bochs",
	};
	struct why w = { "" };
	char cmd[64];

	for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
		snprintf(cmd, sizeof(cmd), "modprobe %s", mods[i]);
		if (run_cmd(&w, cmd)) {
			fprintf(stderr, "# %s\n", w.text);
			return -1;
		}
	}
	return 0;
}

static int bed_find(struct bed *b)
{
	memset(b, 0, sizeof(*b));
	if (bed_drivers())
		return -3;
	if (find_pci(0x8086, 0x10d3, 1, b->nic, sizeof(b->nic)) ||
	    find_pci(0x1af4, 0x1050, 1, b->gpu, sizeof(b->gpu)) ||
	    find_pci(0x1234, 0x1111, 0, b->disp0, sizeof(b->disp0)) ||
	    find_pci(0x1234, 0x1111, 2, b->disp2, sizeof(b->disp2)) ||
	    find_pci(0x1234, 0x1111, -1, b->vga, sizeof(b->vga)))
		return -1;
	if (drm_card_of(b->gpu, b->gpu_card, sizeof(b->gpu_card)) ||
	    drm_card_of(b->disp0, b->disp0_card, sizeof(b->disp0_card)) ||
	    drm_card_of(b->disp2, b->disp2_card, sizeof(b->disp2_card)) ||
	    drm_card_of(b->vga, b->vga_card, sizeof(b->vga_card)) ||
	    drm_card_of("", b->vgem_card, sizeof(b->vgem_card)))
		return -2;
	return 0;
}

#define BED(b)								\
	ASSERT_EQ(0, bed_find(&(b)))					\
		TH_LOG("the bed's devices (e1000e and virtio-gpu on node 1, "	\
		       "bochs-displays on nodes 0 and 2, the root bus's VGA, vgem) "	\
		       "and their DRM cards: tests/vm/run.sh GPUBUF_VM_NUMA_DEVICES=1")

TEST(pci_functions_give_their_bridges_nodes)
{
	char dev[64];
	struct bed b;

	BED(b);
	snprintf(dev, sizeof(dev), "pci:%s", b.nic);
	EXPECT_EQ(1, node_of(dev));
	snprintf(dev, sizeof(dev), "pci:%s", b.gpu);
	EXPECT_EQ(1, node_of(dev));
	snprintf(dev, sizeof(dev), "pci:%s", b.disp0);
	EXPECT_EQ(0, node_of(dev));
	/* Node 2 has a CPU and no memory: node 1 is nearer (15) than 0 (25). */
	snprintf(dev, sizeof(dev), "pci:%s", b.disp2);
	EXPECT_EQ(1, node_of(dev));
	/* The root bus has no proximity domain: no affinity. */
	snprintf(dev, sizeof(dev), "pci:%s", b.vga);
	EXPECT_EQ(GPUBUF_NUMA_ANY, node_of(dev));
}

TEST(drm_cards_give_their_devices_nodes)
{
	char dev[64];
	struct bed b;
	int fd;

	BED(b);
	snprintf(dev, sizeof(dev), "drm:%s", b.gpu_card);
	EXPECT_EQ(1, node_of(dev));
	snprintf(dev, sizeof(dev), "drm:%s", b.disp0_card);
	EXPECT_EQ(0, node_of(dev));
	snprintf(dev, sizeof(dev), "drm:%s", b.disp2_card);
	EXPECT_EQ(1, node_of(dev));
	snprintf(dev, sizeof(dev), "drm:%s", b.vga_card);
	EXPECT_EQ(GPUBUF_NUMA_ANY, node_of(dev));
	snprintf(dev, sizeof(dev), "drm:%s", b.vgem_card);
	EXPECT_EQ(GPUBUF_NUMA_ANY, node_of(dev));
	fd = open(b.gpu_card, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	snprintf(dev, sizeof(dev), "drm:/proc/self/fd/%d", fd);
	EXPECT_EQ(1, node_of(dev));
	close(fd);
}

/* Near each device, on each backend, preferred and strict. */
TEST(buffers_near_each_device_land_on_its_node)
{
	static const unsigned int open_flags[] = {
		GPUBUF_OPEN_IGNORE_ENV,
		GPUBUF_OPEN_FORCE_MEMFD | GPUBUF_OPEN_IGNORE_ENV,
	};
	struct bed b;

	BED(b);
	for (int k = 0; k < 2; k++) {
		struct gpubuf_ctx *ctx;

		ASSERT_EQ(0, gpubuf_open(&ctx, open_flags[k]));
		for (int d = 0; d < 4; d++) {
			/* The last has no affinity; node 2's display, node 1. */
			const char *card = d == 0 ? b.gpu_card : d == 1 ?
					   b.disp0_card : d == 2 ?
					   b.disp2_card : b.vga_card;
			struct gpubuf_alloc_opts o = GPUBUF_ALLOC_OPTS_INIT;
			int want = d == 1 ? 0 : 1;
			char dev[64];

			snprintf(dev, sizeof(dev), "drm:%s", card);
			ASSERT_EQ(0, gpubuf_alloc_opts_near(&o, dev));
			for (int strict = 0; strict < 2; strict++) {
				struct gpubuf *buf;
				long off;

				o.flags = strict ? GPUBUF_ALLOC_NUMA_STRICT : 0;
				if (d == 3 && strict) {
					/* No affinity: nothing to require. */
					EXPECT_EQ(-EINVAL, gpubuf_alloc(ctx, NEAR_BYTES, &o, &buf));
					continue;
				}
				ASSERT_EQ(0, gpubuf_alloc(ctx, NEAR_BYTES, &o, &buf));
				memset(gpubuf_ptr(buf), 0x5a, NEAR_BYTES);
				if (d < 3) {
					off = pages_off_node(gpubuf_ptr(buf), NEAR_BYTES, want);
					EXPECT_EQ(0, off)
						TH_LOG("%s backend, near %s (node %d)%s: %ld pages elsewhere",
						       k ? "memfd" : "module", dev, want,
						       strict ? ", strict" : "", off);
				}
				gpubuf_unref(buf);
			}
		}
		gpubuf_close(ctx);
	}
}

#define FILL_CHUNK	(16 * SZ_1M)
#define FILL_MAX	128		/* 2 GiB: more than node 1 has */

/* How many times the kernel's log says it OOM-killed a task. */
static int oom_kills_logged(void)
{
	int len = klogctl(10, NULL, 0);	/* SYSLOG_ACTION_SIZE_BUFFER */
	char *log, *p;
	int n = 0;

	if (len <= 0)
		return -1;
	log = calloc(1, (size_t)len + 1);
	if (!log)
		return -1;
	len = klogctl(3, log, len);	/* SYSLOG_ACTION_READ_ALL */
	for (p = log; len > 0 && (p = strstr(p, "oom-kill:")); p++)
		n++;
	free(log);
	return len < 0 ? -1 : n;
}

/*
 * Issue 49, item 2: a strict memfd request was MPOL_BIND plus mlock, and
 * on a full node that runs the mempolicy-constrained OOM killer, which
 * may kill any process there (this one, with a gigabyte locked, here)
 * where gpubuf_alloc(3) promises ENOMEM. Node 1 is filled with locked
 * pages preferred there until they spill to node 0; a strict request for
 * node 1 must then fail with ENOMEM, kill nothing and leave no mapping,
 * and succeed on node 1 once the pages are given back.
 */
FIXTURE(full_node) {
	int unused;
};
FIXTURE_SETUP(full_node) {}
FIXTURE_TEARDOWN(full_node) {}

TEST_F_TIMEOUT(full_node, memfd_strict_on_a_full_node_is_enomem_without_oom, 300)
{
	struct gpubuf_alloc_opts o = GPUBUF_ALLOC_OPTS_INIT;
	unsigned long node1 = 1UL << 1;
	void *fill[FILL_MAX];
	struct gpubuf_ctx *ctx;
	struct gpubuf *buf;
	int kills, n, err, spilled = 0;

	kills = oom_kills_logged();
	ASSERT_LE(0, kills);
	for (n = 0; n < FILL_MAX; n++) {
		fill[n] = mmap(NULL, FILL_CHUNK, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, fill[n]);
		ASSERT_EQ(0, syscall(SYS_mbind, fill[n], FILL_CHUNK,
				     MPOL_PREFERRED, &node1, 3UL, 0UL));
		ASSERT_EQ(0, mlock(fill[n], FILL_CHUNK));
		if (pages_off_node(fill[n], FILL_CHUNK, 1)) {
			spilled = 1;
			n++;
			break;
		}
	}
	TH_LOG("node 1 full after %d MiB of locked pages", n * 16);
	ASSERT_TRUE(spilled);

	ASSERT_EQ(0, gpubuf_open(&ctx, GPUBUF_OPEN_FORCE_MEMFD |
				 GPUBUF_OPEN_IGNORE_ENV));
	o.numa_node = 1;
	o.flags = GPUBUF_ALLOC_NUMA_STRICT;
	err = gpubuf_alloc(ctx, NEAR_BYTES, &o, &buf);
	EXPECT_EQ(-ENOMEM, err)
		TH_LOG("gpubuf_alloc: %d (%s)", err, gpubuf_last_error());
	if (!err)
		gpubuf_unref(buf);
	EXPECT_NE(NULL, strstr(gpubuf_last_error(), "came from other nodes"))
		TH_LOG("last error: %s", gpubuf_last_error());
	EXPECT_EQ(kills, oom_kills_logged());
	/* A preference still gets its buffer, wherever the pages are. */
	o.flags = 0;
	ASSERT_EQ(0, gpubuf_alloc(ctx, NEAR_BYTES, &o, &buf));
	gpubuf_unref(buf);

	while (n--)
		ASSERT_EQ(0, munmap(fill[n], FILL_CHUNK));
	o.flags = GPUBUF_ALLOC_NUMA_STRICT;
	ASSERT_EQ(0, gpubuf_alloc(ctx, NEAR_BYTES, &o, &buf))
		TH_LOG("after the fill: %s", gpubuf_last_error());
	EXPECT_EQ(0, pages_off_node(gpubuf_ptr(buf), NEAR_BYTES, 1));
	gpubuf_unref(buf);
	gpubuf_close(ctx);
}

/*
 * Node 2 has a CPU and no memory: mbind() refuses it (EINVAL). A memfd
 * preference for it allocates all the same and says why; a strict
 * request fails with EINVAL (issue 49, item 2).
 */
TEST(memfd_preference_for_a_node_without_memory_allocates)
{
	struct gpubuf_alloc_opts o = GPUBUF_ALLOC_OPTS_INIT;
	struct gpubuf_ctx *ctx;
	struct gpubuf *buf;
	char mem[32] = "";
	FILE *f = fopen("/sys/devices/system/node/has_memory", "r");

	if (f) {
		if (!fgets(mem, sizeof(mem), f))
			mem[0] = '\0';
		fclose(f);
	}
	if (access("/sys/devices/system/node/node2", F_OK) || strcmp(mem, "0-1\n"))
		SKIP(return, "needs node 2 without memory (GPUBUF_VM_NUMA_DEVICES=1); has_memory: %s",
		     mem);
	ASSERT_EQ(0, gpubuf_open(&ctx, GPUBUF_OPEN_FORCE_MEMFD |
				 GPUBUF_OPEN_IGNORE_ENV));
	o.numa_node = 2;
	ASSERT_EQ(0, gpubuf_alloc(ctx, NEAR_BYTES, &o, &buf))
		TH_LOG("%s", gpubuf_last_error());
	EXPECT_NE(NULL, strstr(gpubuf_last_error(), "numa_node 2 is a preference"))
		TH_LOG("%s", gpubuf_last_error());
	EXPECT_NE(NULL, strstr(gpubuf_last_error(), strerror(EINVAL)));
	gpubuf_unref(buf);
	o.flags = GPUBUF_ALLOC_NUMA_STRICT;
	EXPECT_EQ(-EINVAL, gpubuf_alloc(ctx, NEAR_BYTES, &o, &buf));
	gpubuf_close(ctx);
}

/* Real nodes this time: each list's buffers are on its node. */
TEST(pool_keeps_each_nodes_buffers)
{
	struct gpubuf_pool_stats st;
	struct gpubuf_pool *pool;
	struct gpubuf_ctx *ctx;
	struct gpubuf *a, *b1, *c;

	ASSERT_EQ(0, gpubuf_open(&ctx, 0));
	ASSERT_EQ(0, gpubuf_pool_create(ctx, NULL, &pool));
	ASSERT_EQ(0, gpubuf_pool_get_node(pool, SZ_1M, 1, 0, &a));
	memset(gpubuf_ptr(a), 1, SZ_1M);
	EXPECT_EQ(0, pages_off_node(gpubuf_ptr(a), SZ_1M, 1));
	ASSERT_EQ(0, gpubuf_pool_put(pool, a));
	ASSERT_EQ(0, gpubuf_pool_get_node(pool, SZ_1M, 0, 0, &b1));
	EXPECT_NE(a, b1);
	memset(gpubuf_ptr(b1), 1, SZ_1M);
	EXPECT_EQ(0, pages_off_node(gpubuf_ptr(b1), SZ_1M, 0));
	ASSERT_EQ(0, gpubuf_pool_put(pool, b1));
	ASSERT_EQ(0, gpubuf_pool_get_node(pool, SZ_1M, 1, 0, &c));
	EXPECT_EQ(a, c);
	EXPECT_EQ(0, pages_off_node(gpubuf_ptr(c), SZ_1M, 1));
	/* Node 1's list is empty now: another node's buffer only if allowed. */
	ASSERT_EQ(0, gpubuf_pool_get_node(pool, SZ_1M, 1, GPUBUF_POOL_ANY_NODE, &a));
	EXPECT_EQ(b1, a);
	gpubuf_pool_stats(pool, &st);
	EXPECT_EQ(2, st.hits);
	EXPECT_EQ(1, st.other_node_hits);
	ASSERT_EQ(0, gpubuf_pool_put(pool, a));
	ASSERT_EQ(0, gpubuf_pool_put(pool, c));
	gpubuf_pool_destroy(pool);
	gpubuf_close(ctx);
}

/*
 * Soft-RoCE on the node-1 NIC (set-up first, tests run in order): its RDMA
 * device is near node 1, through the NIC it is bound to.
 */
FIXTURE(soft_roce) {
	int unused;
};
FIXTURE_SETUP(soft_roce) {}
FIXTURE_TEARDOWN(soft_roce) {}

TEST_F_TIMEOUT(soft_roce, rxe0_on_the_node1_nic, 180)
{
	struct why w = { "" };

	ASSERT_EQ(0, rxe_setup(&w)) TH_LOG("%s", w.text);
	EXPECT_EQ(1, node_of("rdma:" RXE_NAME));
}

/* Two buffers near rxe0, registered; A is written into B by RDMA. */
TEST_F_TIMEOUT(soft_roce, rdma_write_between_buffers_near_the_nic, 300)
{
	struct gpubuf_alloc_opts o = GPUBUF_ALLOC_OPTS_INIT;
	struct gpubuf *buf[2] = { NULL, NULL };
	struct ibv_mr *mr[2] = { NULL, NULL };
	struct gpubuf_ctx *ctx;
	struct why w = { "" };
	struct rc_pair rc;
	uint8_t *a, *bb;

	ASSERT_EQ(0, rc_open(&w, &rc)) TH_LOG("%s", w.text);
	ASSERT_EQ(0, gpubuf_open(&ctx, 0));
	ASSERT_EQ(0, gpubuf_alloc_opts_near(&o, "rdma:" RXE_NAME));
	ASSERT_EQ(1, o.numa_node);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, gpubuf_alloc(ctx, NEAR_BYTES, &o, &buf[i]));
		mr[i] = ibv_reg_mr(rc.pd, gpubuf_ptr(buf[i]), NEAR_BYTES, MR_ACCESS);
		ASSERT_NE(NULL, mr[i]) TH_LOG("ibv_reg_mr: %s", strerror(errno));
	}
	a = gpubuf_ptr(buf[0]);
	bb = gpubuf_ptr(buf[1]);
	for (size_t i = 0; i < NEAR_BYTES; i++)
		a[i] = (uint8_t)(i * 2654435761u >> 13);
	ASSERT_EQ(0, rdma_op(&w, &rc, rc.qp[0], IBV_WR_RDMA_WRITE, mr[0], a,
			     NEAR_BYTES - SZ_4K, (uintptr_t)bb, mr[1]->rkey))
		TH_LOG("%s", w.text);
	EXPECT_EQ(0, memcmp(a, bb, NEAR_BYTES - SZ_4K));
	for (int i = 0; i < 2; i++)
		EXPECT_EQ(0, pages_off_node(gpubuf_ptr(buf[i]), NEAR_BYTES, 1));
	for (int i = 0; i < 2; i++) {
		ibv_dereg_mr(mr[i]);
		gpubuf_unref(buf[i]);
	}
	gpubuf_close(ctx);
	rc_close(&rc);
}

TEST_HARNESS_MAIN
