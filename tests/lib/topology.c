// SPDX-License-Identifier: MIT
/*
 * gpubuf_device_node() and gpubuf_alloc_opts_near() on a made-up sysfs
 * tree (fake_sysfs.h): PCI functions, RDMA and DRM devices, nodes without
 * memory, devices without affinity, bad strings. The CUDA and HSA kinds
 * run against the stand-ins (tests/cudastub, tests/hsastub *_topology.c);
 * the guest test bed checks real devices on two nodes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/mempolicy.h>

#include <gpubuf.h>
#include <gpubuf/tools.h>

#include "tap.h"
#include "fake_sysfs.h"

static char t_root[256];

/* The tree for this test; GPUBUF_SYSFS_ROOT points at it. */
static int t_tree(void)
{
	if (t_fake_sysfs(t_root, sizeof(t_root))) {
		printf("# cannot build a sysfs tree under %s\n", t_root);
		return -1;
	}
	return setenv("GPUBUF_SYSFS_ROOT", t_root, 1);
}

static void t_tree_done(void)
{
	unsetenv("GPUBUF_SYSFS_ROOT");
	t_fake_sysfs_remove(t_root);
}

/* device's node, or the error; INT_MIN never comes back from either. */
static int t_node(const char *device)
{
	int node = -12345, err = gpubuf_device_node(device, &node);

	if (err) {
		printf("# %s: %s (%s)\n", device, strerror(-err),
		       gpubuf_last_error());
		return err - 1000;
	}
	printf("# %s: node %d\n", device, node);
	return node;
}

#define T_ERR(e) ((e) - 1000)

static int pci_functions_give_their_nodes(void)
{
	T_EQ(t_tree(), 0);
	T_EQ(t_node("pci:0000:1b:00.0"), 0);
	T_EQ(t_node("pci:0000:2b:00.0"), 2);
	/* Upper case and the short form are the same function. */
	T_EQ(t_node("pci:1B:00.0"), 0);
	/* Issue 49, item 6: domains past 0xffff (VMD) were refused. */
	T_EQ(t_node("pci:10000:e1:00.0"), 2);
	T_EQ(t_node("pci:10000:E1:00.0"), 2);
	T_EQ(t_node("pci:0000:e1:00.0"), T_ERR(-ENODEV));
	T_EQ(t_node("pci:0000:2B:00.0"), 2);
	t_tree_done();
	return T_PASS;
}

static int memoryless_node_gives_nearest_with_memory(void)
{
	T_EQ(t_tree(), 0);
	/* Node 1: 20 to node 0, 15 to node 2. */
	T_EQ(t_node("pci:0000:1a:00.0"), 2);
	/* Node 3: 21 to both; the lower node wins. */
	T_EQ(t_node("pci:0000:3c:00.0"), 0);
	t_tree_done();
	return T_PASS;
}

/* Nothing is cached: a changed sysfs file is read again. */
static int answers_follow_sysfs_as_it_is(void)
{
	char path[512];
	FILE *f;

	T_EQ(t_tree(), 0);
	T_EQ(t_node("pci:0000:1b:00.0"), 0);
	snprintf(path, sizeof(path), "%s/bus/pci/devices/0000:1b:00.0/numa_node",
		 t_root);
	f = fopen(path, "w");
	T_CHECK(f);
	fputs("2\n", f);
	fclose(f);
	T_EQ(t_node("pci:0000:1b:00.0"), 2);
	t_tree_done();
	return T_PASS;
}

static int no_affinity_gives_any(void)
{
	T_EQ(t_tree(), 0);
	T_EQ(t_node("pci:0000:2a:00.0"), GPUBUF_NUMA_ANY);	/* -1 */
	T_EQ(t_node("pci:0000:3d:00.0"), GPUBUF_NUMA_ANY);	/* no file */
	T_EQ(t_node("rdma:virt0"), GPUBUF_NUMA_ANY);		/* no device */
	t_tree_done();
	return T_PASS;
}

static int rdma_and_drm_devices_follow_their_links(void)
{
	char fdpath[64];
	int fd;

	T_EQ(t_tree(), 0);
	T_EQ(t_node("rdma:rxe0"), 0);
	T_EQ(t_node("rdma:soft0"), 2);	/* soft-RoCE: its netdev's */
	/* Issue 49, item 6: over a VLAN, a bond or a bridge, the NIC's. */
	T_EQ(t_node("rdma:soft1"), 2);	/* vlan0 -> bond0 -> net0 */
	T_EQ(t_node("rdma:soft2"), 2);	/* br0: tap0 has none, net0 */
	T_EQ(t_node("rdma:soft3"), GPUBUF_NUMA_ANY);	/* no NIC under */
	T_EQ(t_node("rdma:soft4"), 2);	/* br1: net0 before net1 by name */
	T_EQ(t_node("rdma:soft5"), GPUBUF_NUMA_ANY);	/* 9 levels: past 8 */
	T_EQ(t_node("drm:/dev/null"), 2);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	T_CHECK(fd >= 0);
	snprintf(fdpath, sizeof(fdpath), "drm:/proc/self/fd/%d", fd);
	T_EQ(t_node(fdpath), 2);
	close(fd);
	t_tree_done();
	return T_PASS;
}

static int missing_devices_are_enodev(void)
{
	T_EQ(t_tree(), 0);
	T_EQ(t_node("pci:0000:99:00.0"), T_ERR(-ENODEV));
	T_CHECK(strstr(gpubuf_last_error(), "no PCI device 0000:99:00.0"));
	T_EQ(t_node("rdma:mlx5_9"), T_ERR(-ENODEV));
	T_EQ(t_node("drm:/nonexistent/card0"), T_ERR(-ENODEV));
	T_EQ(t_node("drm:/etc/hostname"), T_ERR(-ENODEV));	/* not a device */
	/* A character device sysfs does not list. */
	T_EQ(t_node("drm:/dev/zero"), T_ERR(-ENODEV));
	t_tree_done();
	return T_PASS;
}

static int malformed_strings_are_einval(void)
{
	static const char *const bad[] = {
		"", "0000:1b:00.0", "gpu:0", "pci:", "pci:zz:00.0",
		"pci:0000:1b:20.0", "pci:0000:1b:00.8", "pci:00000:1b:00.0",
		"pci:0000:1b:00.0x", "pci:010000:e1:00.0", "pci:123456789:e1:00.0",
		"pci:000:1b:00.0", "rdma:", "rdma:../x", "rdma:a/b",
		"cuda:", "cuda:-1", "cuda:1x", "hsa:x", "vulkan:99999999999",
	};
	int node = 7;

	T_EQ(t_tree(), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (t_node(bad[i]) != T_ERR(-EINVAL)) {
			printf("# \"%s\" was not refused with EINVAL\n", bad[i]);
			return T_FAIL;
		}
	T_EQ(gpubuf_device_node(NULL, &node), -EINVAL);
	T_EQ(gpubuf_device_node("pci:1b:00.0", NULL), -EINVAL);
	T_EQ(node, 7);
	t_tree_done();
	return T_PASS;
}

/* No NUMA in the kernel: no node directory; node 0 has the memory. */
static int kernel_without_numa_has_node_0(void)
{
	char path[512];

	T_EQ(t_tree(), 0);
	snprintf(path, sizeof(path), "%s/devices/system/node/has_memory",
		 t_root);
	T_EQ(unlink(path), 0);
	T_EQ(t_node("pci:0000:1b:00.0"), 0);
	t_tree_done();
	return T_PASS;
}

/* Sets numa_node only; a failure leaves the options as they were. */
static int alloc_opts_near_sets_the_node(void)
{
	struct gpubuf_alloc_opts o = GPUBUF_ALLOC_OPTS_INIT;
	struct gpubuf_alloc_opts before;

	T_EQ(t_tree(), 0);
	o.flags = GPUBUF_ALLOC_NUMA_STRICT;
	T_EQ(gpubuf_alloc_opts_near(&o, "pci:0000:1a:00.0"), 0);
	T_EQ(o.numa_node, 2);
	T_EQ(o.flags, GPUBUF_ALLOC_NUMA_STRICT);
	T_EQ(o.size, sizeof(o));
	before = o;
	T_EQ(gpubuf_alloc_opts_near(&o, "pci:0000:99:00.0"), -ENODEV);
	T_EQ(memcmp(&o, &before, sizeof(o)), 0);
	T_EQ(gpubuf_alloc_opts_near(NULL, "pci:1b:00.0"), -EINVAL);
	T_EQ(gpubuf_alloc_opts_near(&o, "pci:0000:2a:00.0"), 0);
	T_EQ(o.numa_node, GPUBUF_NUMA_ANY);
	t_tree_done();
	return T_PASS;
}

/* On the real sysfs: a buffer near node 0's device lands and maps. */
static int buffer_near_a_real_device_allocates(void)
{
	struct gpubuf_alloc_opts o = GPUBUF_ALLOC_OPTS_INIT;
	struct gpubuf_ctx *ctx;
	struct gpubuf *buf;
	int err;

	err = gpubuf_alloc_opts_near(&o, "drm:/dev/null");
	/* /dev/null has no device link: no affinity, on any machine. */
	T_EQ(err, 0);
	T_EQ(o.numa_node, GPUBUF_NUMA_ANY);
	T_EQ(gpubuf_open(&ctx, 0), 0);
	T_EQ(gpubuf_alloc(ctx, 1 << 20, &o, &buf), 0);
	memset(gpubuf_ptr(buf), 0x5a, 1 << 20);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

/* The page at p's node, by get_mempolicy(); -1 when unknown. */
static int t_page_node(const void *p)
{
	int node = -1;

	if (syscall(SYS_get_mempolicy, &node, NULL, 0UL, p,
		    MPOL_F_NODE | MPOL_F_ADDR))
		return -1;
	return node;
}

/*
 * A matrix near node 0's device (in the made-up tree) has its pages on
 * node 0, on either backend; bad options are refused as gpubuf_alloc()
 * refuses them.
 */
static int matrix_near_a_device_lands_on_its_node(void)
{
	struct gpubuf_alloc_opts o = GPUBUF_ALLOC_OPTS_INIT;
	struct gpubuf_matrix m;
	struct gpubuf_ctx *ctx;

	T_EQ(t_tree(), 0);
	T_EQ(gpubuf_alloc_opts_near(&o, "rdma:rxe0"), 0);
	t_tree_done();
	T_EQ(o.numa_node, 0);
	o.flags = GPUBUF_ALLOC_NUMA_STRICT;
	T_EQ(gpubuf_open(&ctx, 0), 0);
	T_EQ(gpubuf_matrix_alloc_opts(ctx, GPUBUF_DTYPE_F32, 300, 500,
				      GPUBUF_ROW_MAJOR, 0, &o, &m), 0);
	T_EQ(m.ld, 512);
	gpubuf_matrix_set(&m, 299, 499, 1.5);
	T_EQ(t_page_node(gpubuf_matrix_data(&m)), 0);
	T_EQ(t_page_node(gpubuf_matrix_elem(&m, 299, 499)), 0);
	gpubuf_matrix_release(&m);
	o.reserved[0] = 1;
	T_EQ(gpubuf_matrix_alloc_opts(ctx, GPUBUF_DTYPE_F32, 3, 5,
				      GPUBUF_ROW_MAJOR, 0, &o, &m), -EINVAL);
	T_EQ(gpubuf_matrix_alloc_opts(ctx, GPUBUF_DTYPE_F32, 3, 5,
				      GPUBUF_ROW_MAJOR, 0, NULL, &m), 0);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

/* gpubuf-info's call: the resolved sysfs directory, or -ENOENT and "". */
static int device_sysfs_resolves_links(void)
{
	char dir[4096], want[600];

	T_EQ(t_tree(), 0);
	snprintf(want, sizeof(want), "/bus/pci/devices/0000:1b:00.0");
	T_EQ(gpubuf_device_sysfs("rdma:rxe0", dir, sizeof(dir)), 0);
	T_CHECK(strlen(dir) > strlen(want) &&
		!strcmp(dir + strlen(dir) - strlen(want), want));
	T_EQ(gpubuf_device_sysfs("rdma:virt0", dir, sizeof(dir)), -ENOENT);
	T_EQ(dir[0], '\0');
	T_EQ(gpubuf_device_sysfs("pci:0000:99:00.0", dir, sizeof(dir)), -ENODEV);
	T_EQ(gpubuf_device_sysfs("pci:1b:00.0", dir, 8), -ENAMETOOLONG);
	T_EQ(gpubuf_device_sysfs("pci:1b:00.0", NULL, 8), -EINVAL);
	t_tree_done();
	return T_PASS;
}

/* lavapipe has no PCI address: no affinity. */
static int vulkan_cpu_device_has_no_affinity(void)
{
	struct gpubuf_vk_info info;
	struct gpubuf_vk *vk;

	T_EQ(gpubuf_vk_open(0, 0, &vk), 0);
	T_EQ(gpubuf_vk_info(vk, &info), 0);
	gpubuf_vk_close(vk);
	T_EQ(t_tree(), 0);
	if (info.pci_valid)
		/* A real PCI device is not in the made-up tree. */
		T_EQ(t_node("vulkan:0"), T_ERR(-ENODEV));
	else
		T_EQ(t_node("vulkan:0"), GPUBUF_NUMA_ANY);
	T_EQ(t_node("vulkan:99"), T_ERR(-ENODEV));
	t_tree_done();
	return T_PASS;
}

/*
 * In a new process with the Vulkan loader's debug output on stderr (a
 * file here): how many logical devices the call made, by the loader's
 * line for each vkCreateDevice. -1 if the process failed.
 */
static int t_devices_created(int open_device)
{
	char path[] = "/tmp/gpubuf-vkdebug.XXXXXX";
	char line[512];
	int fd = mkstemp(path), status, n = 0;
	pid_t pid;
	FILE *f;

	if (fd < 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* A fresh process: the loader reads its settings once. */
		dup2(fd, 2);
		setenv("VK_LOADER_DEBUG", "all", 1);
		execl("/proc/self/exe", "topology", "--vulkan-child",
		      open_device ? "open" : "node", (char *)NULL);
		_exit(127);
	}
	close(fd);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		unlink(path);
		return -1;
	}
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		n += !!strstr(line, "vkCreateDevice");
	if (f)
		fclose(f);
	unlink(path);
	return n;
}

/*
 * Issue 49, item 6: "vulkan:N" opened a whole device, every pipeline
 * built, only to read its PCI address (gpubuf-info --topology, three
 * times per device). Its node now comes from the instance alone; the
 * loader's own account of vkCreateDevice says so, and says that opening
 * the device does make one (else the count would prove nothing).
 */
static int vulkan_node_opens_no_device(void)
{
	T_CHECK(t_devices_created(1) >= 1);
	T_EQ(t_devices_created(0), 0);
	return T_PASS;
}

/* The new process of t_devices_created(): one call, its result. */
static int t_vulkan_child(const char *what)
{
	struct gpubuf_vk *vk;
	int node = -5, err;

	if (!strcmp(what, "open")) {
		err = gpubuf_vk_open(0, 0, &vk);
		if (!err)
			gpubuf_vk_close(vk);
	} else {
		err = gpubuf_device_node("vulkan:0", &node);
	}
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct t_test tests[] = {
		T_TEST(pci_functions_give_their_nodes),
		T_TEST(memoryless_node_gives_nearest_with_memory),
		T_TEST(no_affinity_gives_any),
		T_TEST(answers_follow_sysfs_as_it_is),
		T_TEST(rdma_and_drm_devices_follow_their_links),
		T_TEST(missing_devices_are_enodev),
		T_TEST(malformed_strings_are_einval),
		T_TEST(kernel_without_numa_has_node_0),
		T_TEST(alloc_opts_near_sets_the_node),
		T_TEST(buffer_near_a_real_device_allocates),
		T_TEST(matrix_near_a_device_lands_on_its_node),
		T_TEST(device_sysfs_resolves_links),
		T_TEST_ON(T_VULKAN, vulkan_cpu_device_has_no_affinity),
		T_TEST_ON(T_VULKAN, vulkan_node_opens_no_device),
	};

	if (argc == 3 && !strcmp(argv[1], "--vulkan-child"))
		return t_vulkan_child(argv[2]);

	return T_RUN(tests);
}
