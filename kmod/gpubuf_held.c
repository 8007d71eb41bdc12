// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf's held pages: chunks of released buffers that a driver still pins.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "gpubuf.h"
#include "gpubuf_compat.h"
#include "gpubuf_trace.h"

/*
 * Pages of released buffers that a GPU or RDMA driver still references
 * (an MR, a CUDA registration, a KFD userptr pin them past the buffer's
 * last fd and mapping): the chunks stay ours, counted in held_bytes and
 * against max_total_bytes, until only our reference is left. The record is
 * the released buffer itself, its page array compacted to the pinned chunk
 * heads, so that holding needs no allocation and so cannot fail: a chunk
 * that is still pinned is never freed, and never reaches the reserve. The
 * list is revisited by a delayed work, before an allocation would be
 * refused, and when the counters are read; under gpubuf_held_lock, which
 * also covers the held counters.
 */
static LIST_HEAD(gpubuf_held_list);
static DEFINE_MUTEX(gpubuf_held_lock);
static u64 gpubuf_held_bytes;
static u64 gpubuf_held_buffers;
static void gpubuf_held_work_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(gpubuf_held_work, gpubuf_held_work_fn);

/* Only our reference left: nobody else can reach a released chunk. */
static bool gpubuf_chunk_idle(struct page *head)
{
	return page_ref_count(head) == 1;
}

/*
 * Free the chunks of every held record that only we reference now, and
 * give their bytes back to the limit. Returns whether any remain.
 */
static bool gpubuf_held_scan_locked(void)
{
	struct gpubuf_buffer *buf, *tmp;
	u64 freed = 0;

	lockdep_assert_held(&gpubuf_held_lock);
	list_for_each_entry_safe(buf, tmp, &gpubuf_held_list, held_node) {
		unsigned long i, kept = 0;

		for (i = 0; i < buf->nr_held; i++) {
			struct page *head = buf->pages[i];

			if (gpubuf_chunk_idle(head)) {
				freed += PAGE_SIZE << compound_order(head);
				gpubuf_chunk_free(head);
			} else {
				buf->pages[kept++] = head;
			}
		}
		buf->nr_held = kept;
		if (!kept) {
			list_del(&buf->held_node);
			gpubuf_buffer_free_record(buf);
			gpubuf_held_buffers--;
		}
	}
	gpubuf_held_bytes -= freed;
	gpubuf_unreserve(freed);
	if (freed)
		trace_gpubuf_unheld(freed, gpubuf_held_bytes);
	return !list_empty(&gpubuf_held_list);
}

/**
 * gpubuf_held_scan() - free held pages that no driver references any more
 */
void gpubuf_held_scan(void)
{
	mutex_lock(&gpubuf_held_lock);
	gpubuf_held_scan_locked();
	mutex_unlock(&gpubuf_held_lock);
}

/**
 * gpubuf_held_read() - the held counters, after freeing what is unpinned
 * @snap: its held_* fields are filled in
 */
void gpubuf_held_read(struct gpubuf_stats_snapshot *snap)
{
	mutex_lock(&gpubuf_held_lock);
	gpubuf_held_scan_locked();
	snap->held_bytes = gpubuf_held_bytes;
	snap->held_buffers = gpubuf_held_buffers;
	mutex_unlock(&gpubuf_held_lock);
}

static void gpubuf_held_work_fn(struct work_struct *work)
{
	bool more;

	mutex_lock(&gpubuf_held_lock);
	more = gpubuf_held_scan_locked();
	mutex_unlock(&gpubuf_held_lock);
	if (more)
		schedule_delayed_work(&gpubuf_held_work, HZ);
}

/**
 * gpubuf_held_release_all() - at unload, give up every held chunk
 *
 * What only we reference is freed; for the rest our reference is dropped,
 * and the driver that still pins a chunk frees it with its last unpin,
 * as for any page: nothing of the module is needed for that.
 */
void gpubuf_held_release_all(void)
{
	struct gpubuf_buffer *buf, *tmp;

	cancel_delayed_work_sync(&gpubuf_held_work);
	mutex_lock(&gpubuf_held_lock);
	list_for_each_entry_safe(buf, tmp, &gpubuf_held_list, held_node) {
		unsigned long i;

		for (i = 0; i < buf->nr_held; i++) {
			struct page *head = buf->pages[i];

			if (gpubuf_chunk_idle(head)) {
				gpubuf_chunk_free(head);
				continue;
			}
			gpubuf_reserve_forget(head);
			gpubuf_page_prepare_free(head);
			__free_pages(head, compound_order(head));
		}
		list_del(&buf->held_node);
		gpubuf_buffer_free_record(buf);
	}
	mutex_unlock(&gpubuf_held_lock);
}

/*
 * Free @buf's chunks that only we reference. If some are still pinned,
 * @buf itself becomes their record on the held list (its page array
 * compacted to their heads), still counted against the limit, and belongs
 * to that list from then on; otherwise the caller frees it. Returns the
 * bytes kept.
 */
u64 gpubuf_free_or_hold(struct gpubuf_buffer *buf)
{
	unsigned long i = 0, n = 0;
	u64 kept = 0;

	while (i < buf->nr_pages) {
		struct page *head = buf->pages[i];
		unsigned int order = compound_order(head);

		i += 1UL << order;
		if (gpubuf_chunk_idle(head)) {
			gpubuf_chunk_free(head);
		} else {
			/* The page array itself, reused: chunk heads in front. */
			buf->pages[n++] = head;
			kept += PAGE_SIZE << order;
		}
		cond_resched();
	}
	if (!n)
		return 0;
	buf->nr_held = n;
	mutex_lock(&gpubuf_held_lock);
	list_add_tail(&buf->held_node, &gpubuf_held_list);
	gpubuf_held_bytes += kept;
	gpubuf_held_buffers++;
	trace_gpubuf_held(kept, gpubuf_held_bytes);
	mutex_unlock(&gpubuf_held_lock);
	schedule_delayed_work(&gpubuf_held_work, HZ);
	return kept;
}
