// SPDX-License-Identifier: GPL-2.0-only
/* shrinkers allocated by the core: shrinker_alloc() (6.7+) */
/* shrinker.h is not self-contained before 6.7 */
#include <linux/mm.h>
#include <linux/shrinker.h>

static void __maybe_unused gpubuf_probe(void)
{
	struct shrinker *s = shrinker_alloc(0, "probe");

	shrinker_register(s);
	shrinker_free(s);
}
