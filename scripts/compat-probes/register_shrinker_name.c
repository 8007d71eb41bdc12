// SPDX-License-Identifier: GPL-2.0-only
/* register_shrinker() with a name (6.0 to 6.6) */
/* shrinker.h is not self-contained before 6.7 */
#include <linux/mm.h>
#include <linux/shrinker.h>

static int __maybe_unused gpubuf_probe(struct shrinker *s)
{
	return register_shrinker(s, "probe");
}
