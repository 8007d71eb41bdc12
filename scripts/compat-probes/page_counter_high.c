// SPDX-License-Identifier: GPL-2.0-only
/* memory.high kept in the cgroup's page counter (5.8+) */
#include <linux/memcontrol.h>
#include <linux/page_counter.h>

static unsigned long __maybe_unused gpubuf_probe(struct mem_cgroup *memcg)
{
	return READ_ONCE(memcg->memory.high);
}
