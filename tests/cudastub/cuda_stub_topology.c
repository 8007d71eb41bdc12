// SPDX-License-Identifier: MIT
/*
 * Description: "cuda:N" in gpubuf_device_node(3), against a stand-in
 * driver (cuda_stub_test.h runs each test in a fresh process) and a
 * made-up sysfs tree (tests/lib/fake_sysfs.h): the driver's PCI bus id,
 * in its upper-case form, names the device whose numa_node counts. Nothing
 * here touches a GPU.
 */
#include "cuda_stub_test.h"
#include "fake_sysfs.h"

static char t_root[256];

static int t_tree(void)
{
	if (t_fake_sysfs(t_root, sizeof(t_root)))
		return -1;
	return setenv("GPUBUF_SYSFS_ROOT", t_root, 1);
}

/* Node 1 has no memory: 0000:1a:00.0 is near node 2. */
static int cuda_devices_give_their_nodes(void)
{
	int node = 99;

	T_EQ(t_tree(), 0);
	T_EQ(gpubuf_device_node("cuda:0", &node), 0);
	T_EQ(node, 2);
	T_EQ(gpubuf_device_node("cuda:1", &node), 0);
	T_EQ(node, 0);
	T_EQ(gpubuf_device_node("cuda:2", &node), 0);
	T_EQ(node, GPUBUF_NUMA_ANY);
	T_STUB();
	T_EQ(stub.log_count("cuDeviceGetPCIBusId"), 3);
	/* A bus id sysfs does not have, and a device the driver does not. */
	T_EQ(gpubuf_device_node("cuda:3", &node), -ENODEV);
	T_ERR_HAS("no PCI device 0000:99:00.0");
	T_EQ(gpubuf_device_node("cuda:4", &node), 0);
	T_EQ(node, 2);		/* 10000:E1:00.0: VMD's domain, not cut */
	T_EQ(gpubuf_device_node("cuda:5", &node), -ENODEV);
	T_EQ(stub.log_count("cuDeviceGetPCIBusId"), 5);
	t_fake_sysfs_remove(t_root);
	T_CLEAN();
	return T_PASS;
}

static int pci_bus_id_failure_is_reported(void)
{
	int node = 99;

	T_EQ(t_tree(), 0);
	T_CHECK(gpubuf_device_node("cuda:0", &node) < 0);
	T_ERR_HAS("cuDeviceGetPCIBusId");
	T_EQ(node, 99);
	t_fake_sysfs_remove(t_root);
	T_STUB();
	T_CLEAN();
	return T_PASS;
}

/* name, environment ("K=V K=V") */
#define T_CASES(X)							\
	X(cuda_devices_give_their_nodes, "CUSTUB_DEVICES=5 "		\
	  "CUSTUB_PCI=0000:1A:00.0,0000:1B:00.0,0000:2A:00.0,0000:99:00.0,"	\
	  "10000:E1:00.0")						\
	X(pci_bus_id_failure_is_reported,				\
	  "CUSTUB_FAIL=cuDeviceGetPCIBusId:1:CUDA_ERROR_UNKNOWN")

T_STUB_MAIN(T_CASES)
