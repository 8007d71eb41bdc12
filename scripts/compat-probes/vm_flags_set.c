// SPDX-License-Identifier: GPL-2.0-only
/* vm_flags_set() (6.3+) */
#include <linux/mm.h>

static void __maybe_unused gpubuf_probe(struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_DONTEXPAND);
}
