// SPDX-License-Identifier: GPL-2.0-only
/* vm_operations_struct.get_policy gained its interleave-index argument in 6.7 */
#include <linux/mempolicy.h>
#include <linux/mm.h>

static struct mempolicy *gpubuf_probe_policy(struct vm_area_struct *vma,
					     unsigned long addr, pgoff_t *ilx)
{
	return NULL;
}

static const struct vm_operations_struct gpubuf_probe_ops __maybe_unused = {
	.get_policy = gpubuf_probe_policy,
};
