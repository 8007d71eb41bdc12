// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf's fault attribute, for kernels built with fault injection.
 *
 * A task's fail-nth (Documentation/fault-injection) fails the allocations
 * of its own calls, but the reserve's fill runs in a kworker, which no
 * test can arm. /sys/kernel/debug/gpubuf/fail_reserve_fill is a fault
 * attribute like failslab's (probability, interval, times, space, ...)
 * over the fill's chunk allocations: a failed one looks to the fill like a
 * node that had no 2 MiB page to give. The zeroing worker and the scan of
 * held pages allocate nothing, so there is nothing there to fail.
 */
#include <linux/debugfs.h>
#include <linux/fault-inject.h>

#include "gpubuf.h"

static DECLARE_FAULT_ATTR(gpubuf_fail_reserve_fill_attr);
static struct dentry *gpubuf_debugfs_dir;

bool gpubuf_fail_reserve_fill(void)
{
	return should_fail(&gpubuf_fail_reserve_fill_attr, GPUBUF_HUGE_BYTES);
}

/* Without debugfs the attribute stays off: nothing here can fail a load. */
void gpubuf_faults_init(void)
{
	/* The allocation it stands for is __GFP_NOWARN: no call trace. */
	gpubuf_fail_reserve_fill_attr.verbose = 1;
	gpubuf_debugfs_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	fault_create_debugfs_attr("fail_reserve_fill", gpubuf_debugfs_dir,
				  &gpubuf_fail_reserve_fill_attr);
}

void gpubuf_faults_exit(void)
{
	debugfs_remove_recursive(gpubuf_debugfs_dir);
}
