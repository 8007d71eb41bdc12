// SPDX-License-Identifier: MIT
/*
 * Holds: what consumers (GPU runtimes, device files) attach to a buffer,
 * each with its own release operation. The core keeps the list and
 * releases it with the buffer; what a hold is, only its consumer knows.
 */
#include "core/internal.h"

void gpubuf_hold_add(struct gpubuf *buf, struct gpubuf_hold *hold,
		     const struct gpubuf_hold_ops *ops)
{
	hold->ops = ops;
	hold->next = buf->holds;
	buf->holds = hold;
}

void gpubuf_hold_del(struct gpubuf *buf, struct gpubuf_hold *hold)
{
	for (struct gpubuf_hold **pp = &buf->holds; *pp; pp = &(*pp)->next)
		if (*pp == hold) {
			*pp = hold->next;
			hold->next = NULL;
			return;
		}
}

struct gpubuf_hold *gpubuf_hold_next(const struct gpubuf *buf,
				     const struct gpubuf_hold *prev,
				     const struct gpubuf_hold_ops *ops)
{
	struct gpubuf_hold *h = prev ? prev->next : buf->holds;

	while (h && h->ops != ops)
		h = h->next;
	return h;
}

bool gpubuf_held(const struct gpubuf *buf)
{
	return buf->holds != NULL;
}

void gpubuf_hold_release_all(struct gpubuf *buf)
{
	struct gpubuf_hold *h;

	while ((h = buf->holds)) {
		buf->holds = h->next;
		h->next = NULL;
		h->ops->release(buf, h);
	}
}
