// SPDX-License-Identifier: MIT
/*
 * Description: "hsa:N" in gpubuf_device_node(3), against a stand-in
 * runtime (hsa_stub_test.h runs each test in a fresh process) and a
 * made-up sysfs tree (tests/lib/fake_sysfs.h): an agent's
 * HSA_AMD_AGENT_INFO_DOMAIN and _BDFID name the PCI function whose
 * numa_node counts. Nothing touches a GPU.
 */
#include "hsa_stub_test.h"
#include "fake_sysfs.h"

static char t_root[256];

static int t_tree(void)
{
	if (t_fake_sysfs(t_root, sizeof(t_root)))
		return -1;
	return setenv("GPUBUF_SYSFS_ROOT", t_root, 1);
}

static int agents_give_their_nodes(void)
{
	int node = 99;

	T_EQ(t_tree(), 0);
	T_EQ(gpubuf_device_node("hsa:0", &node), 0);
	T_EQ(node, 0);		/* 3c:00.0, node 3 without memory: 0 */
	T_EQ(gpubuf_device_node("hsa:1", &node), 0);
	T_EQ(node, 2);		/* 2b:00.0 */
	T_EQ(gpubuf_device_node("hsa:2", &node), 0);
	T_EQ(node, GPUBUF_NUMA_ANY);	/* 2a:00.0 */
	T_EQ(gpubuf_device_node("hsa:3", &node), 0);
	T_EQ(node, 2);		/* 10000:e1:00.0: VMD's domain, not masked */
	T_EQ(gpubuf_device_node("hsa:4", &node), -ENODEV);
	T_ERR_HAS("no HSA GPU agent 4 (4 present)");
	T_STUB();
	T_EQ(stub.calls("hsa_agent_get_info") >= 8, 1);
	t_fake_sysfs_remove(t_root);
	T_CLEAN();
	return T_PASS;
}

/*
 * The runtime's start asks each of its 4 agents its type (2 CPUs, 2
 * GPUs); the 5th hsa_agent_get_info is the BDFID's, and fails.
 */
static int agent_info_failure_is_reported(void)
{
	int node = 99, n;

	T_EQ(t_tree(), 0);
	T_EQ(gpubuf_hsa_agents(NULL, 0, &n), 0);
	T_STUB();
	T_EQ(stub.calls("hsa_agent_get_info"), 4);
	T_EQ(gpubuf_device_node("hsa:0", &node), -EIO);
	T_ERR_HAS("hsa_agent_get_info(BDFID)");
	T_EQ(node, 99);
	t_fake_sysfs_remove(t_root);
	T_CLEAN();
	return T_PASS;
}

/* name, environment ("K=V K=V"), where */
#define T_CASES(X)							\
	X(agents_give_their_nodes,					\
	  "HSASTUB_GPUS=4 HSASTUB_PCI=0000:3c:00.0,0000:2b:00.0,0000:2a:00.0,10000:e1:00.0", \
	  T_ANY)							\
	X(agent_info_failure_is_reported,				\
	  "HSASTUB_FAIL=hsa_agent_get_info:5:HSA_STATUS_ERROR", T_ANY)

T_STUB_MAIN(T_CASES)
