// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf page allocation, size limits and counters.
 *
 * Buffers are built from the largest page orders the buddy allocator can
 * give cheaply: 2 MiB and 64 KiB runs keep IOMMU and GPU page tables small,
 * single pages guarantee progress. Pages are non-movable so that long-term
 * pins (cuMemHostRegister, KFD userptr, RDMA) never need migration, and
 * charged to the caller's memory cgroup.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/cpuset.h>
#include <linux/gfp.h>
#include <linux/mempolicy.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>

#include <linux/gpubuf.h>

#include "gpubuf.h"
#include "gpubuf_compat.h"
#include "gpubuf_trace.h"

/*
 * High orders are opportunistic: no direct reclaim or compaction stalls and
 * no warning, the loop simply falls back to a smaller order.
 */
#define GPUBUF_GFP_HIGH_ORDER \
	((GFP_HIGHUSER | __GFP_ZERO | __GFP_COMP | __GFP_NOWARN | \
	  __GFP_NORETRY | __GFP_ACCOUNT) & ~__GFP_DIRECT_RECLAIM)
/*
 * __GFP_RETRY_MAYFAIL makes a memory cgroup limit fail the charge with
 * ENOMEM instead of invoking the memcg OOM killer on the caller, which is
 * what plain GFP_KERNEL | __GFP_ACCOUNT did in measurements on 6.1.
 */
#define GPUBUF_GFP_ORDER0 \
	(GFP_HIGHUSER | __GFP_ZERO | __GFP_NOWARN | __GFP_RETRY_MAYFAIL | \
	 __GFP_ACCOUNT)

/* 2 MiB, 64 KiB, one page: largest first. */
static const unsigned int gpubuf_orders[] = {
	GPUBUF_HUGE_ORDER,
	PAGE_SHIFT < 16 ? 16 - PAGE_SHIFT : 0,
	0,
};

/* Limits in bytes; 0 given at load or written later means "derive from RAM". */
static u64 gpubuf_max_buffer_bytes;
static u64 gpubuf_max_total_bytes;

/*
 * @reserved_bytes counts live buffers, allocations in progress and pages
 * released but still held (below), and is what max_total_bytes limits;
 * @live_bytes and @peak_bytes count only buffers that exist, so a request
 * that fails never shows in them.
 */
static struct {
	atomic64_t live_buffers;
	atomic64_t live_bytes;
	atomic64_t reserved_bytes;
	atomic64_t peak_bytes;
	atomic64_t failed_allocs;
} gpubuf_stats;

/* What is left of a released buffer: its page array and itself. */
void gpubuf_buffer_free_record(struct gpubuf_buffer *buf)
{
	kvfree(buf->pages);
	kfree(buf);
}

static u64 gpubuf_ram_bytes(void)
{
	return (u64)totalram_pages() << PAGE_SHIFT;
}

/*
 * The page array of one buffer is kept within INT_MAX bytes, the bound
 * kvmalloc() sets for such arrays: about 1 TiB of 4 KiB pages.
 */
#define GPUBUF_MAX_BUFFER_PAGES ((u64)INT_MAX / sizeof(struct page *))

/*
 * The value a limit parameter takes when @bytes is written to it: 0 means
 * the RAM-derived default; nothing above RAM (or, per buffer, above the page
 * array's reach) is kept, which also keeps the reservation sums far from
 * wrapping.
 */
static u64 gpubuf_limit_value(const u64 *param, u64 bytes)
{
	u64 ram = gpubuf_ram_bytes();
	u64 cap = ram;

	if (param == &gpubuf_max_buffer_bytes) {
		cap = min(cap, GPUBUF_MAX_BUFFER_PAGES << PAGE_SHIFT);
		if (!bytes)
			bytes = ram / 2;
	} else if (!bytes) {
		bytes = ram / 4 * 3;
	}
	return min(bytes, cap);
}

static int gpubuf_limit_set(const char *val, const struct kernel_param *kp)
{
	u64 *limit = kp->arg;
	u64 bytes;
	int ret;

	ret = kstrtou64(val, 0, &bytes);
	if (ret)
		return ret;
	WRITE_ONCE(*limit, gpubuf_limit_value(limit, bytes));
	return 0;
}

static int gpubuf_limit_get(char *buffer, const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%llu\n", READ_ONCE(*(u64 *)kp->arg));
}

static const struct kernel_param_ops gpubuf_limit_ops = {
	.set = gpubuf_limit_set,
	.get = gpubuf_limit_get,
};

module_param_cb(max_buffer_bytes, &gpubuf_limit_ops, &gpubuf_max_buffer_bytes,
		0644);
MODULE_PARM_DESC(max_buffer_bytes,
		 "Largest single buffer, bytes (default 0 = half of RAM; at most RAM and ~1 TiB)");
module_param_cb(max_total_bytes, &gpubuf_limit_ops, &gpubuf_max_total_bytes,
		0644);
MODULE_PARM_DESC(max_total_bytes,
		 "Bytes held by all live buffers together (default 0 = 3/4 of RAM; at most RAM)");

/**
 * gpubuf_limits_init() - give limits not set at load their RAM-derived value
 *
 * Called once at module load, after parameters were parsed, so that sysfs
 * always shows the limit in force.
 */
void gpubuf_limits_init(void)
{
	gpubuf_max_buffer_bytes = gpubuf_limit_value(&gpubuf_max_buffer_bytes,
						     gpubuf_max_buffer_bytes);
	gpubuf_max_total_bytes = gpubuf_limit_value(&gpubuf_max_total_bytes,
						    gpubuf_max_total_bytes);
}

/**
 * gpubuf_stats_read() - read the counters shown in sysfs
 * @snap: filled with the current values
 */
void gpubuf_stats_read(struct gpubuf_stats_snapshot *snap)
{
	gpubuf_held_read(snap);
	snap->live_buffers = atomic64_read(&gpubuf_stats.live_buffers);
	snap->live_bytes = atomic64_read(&gpubuf_stats.live_bytes);
	snap->peak_bytes = atomic64_read(&gpubuf_stats.peak_bytes);
	snap->failed_allocs = atomic64_read(&gpubuf_stats.failed_allocs);
	gpubuf_reserve_read(snap);
}

/**
 * gpubuf_note_failed_alloc() - count an ALLOC that passed validation but failed
 */
void gpubuf_note_failed_alloc(void)
{
	atomic64_inc(&gpubuf_stats.failed_allocs);
}

/*
 * Reserve @bytes against both limits; undone by gpubuf_unreserve(). Both
 * limits are at most RAM, so the sum below cannot wrap.
 */
static int gpubuf_try_reserve(u64 bytes)
{
	if (atomic64_add_return(bytes, &gpubuf_stats.reserved_bytes) >
	    READ_ONCE(gpubuf_max_total_bytes)) {
		atomic64_sub(bytes, &gpubuf_stats.reserved_bytes);
		return -ENOSPC;
	}
	return 0;
}

/* Over the limit: free what held pages no one references any more first. */
static int gpubuf_reserve(u64 bytes)
{
	if (bytes > READ_ONCE(gpubuf_max_buffer_bytes))
		return -EFBIG;
	if (!gpubuf_try_reserve(bytes))
		return 0;
	gpubuf_held_scan();
	return gpubuf_try_reserve(bytes);
}

/* A buffer of @bytes now exists: count it and raise the peak. */
static void gpubuf_account_live(u64 bytes)
{
	u64 live = atomic64_add_return(bytes, &gpubuf_stats.live_bytes);
	u64 peak = atomic64_read(&gpubuf_stats.peak_bytes);

	while (live > peak) {
		u64 seen = atomic64_cmpxchg(&gpubuf_stats.peak_bytes, peak, live);

		if (seen == peak)
			break;
		peak = seen;
	}
}

/* Give @bytes back to the limit: a buffer or held chunks are gone. */
void gpubuf_unreserve(u64 bytes)
{
	atomic64_sub(bytes, &gpubuf_stats.reserved_bytes);
}

/* A 2 MiB chunk may go back to the reserve instead of the buddy allocator. */
void gpubuf_chunk_free(struct page *head)
{
	if (gpubuf_reserve_give_back(head))
		return;
	gpubuf_page_prepare_free(head);
	__free_pages(head, compound_order(head));
}

/*
 * Free the first @nr_pages entries of @pages. Chunks are recognised by their
 * compound order, so no separate chunk list is needed.
 */
static void gpubuf_free_pages(struct page **pages, unsigned long nr_pages)
{
	unsigned long i = 0;

	while (i < nr_pages) {
		struct page *head = pages[i];

		i += 1UL << compound_order(head);
		gpubuf_chunk_free(head);
		cond_resched();
	}
}

/*
 * Where a buffer's chunks may come from: @nid is the node asked for or
 * NUMA_NO_NODE (then the task's memory policy decides); @want is the node
 * the reserve serves first, @nid or the local one; @allowed is the
 * caller's cpuset's memory nodes, which reserve chunks must be on too.
 */
struct gpubuf_fill {
	int nid;
	int want;
	bool strict;
	bool from_reserve;
	nodemask_t allowed;
};

/*
 * Whether the task allocates under the default (local) memory policy. Any
 * other policy (numactl --membind, --interleave, --preferred) is the buddy
 * allocator's to follow: the reserve, which keeps its own per-node lists,
 * is not used then.
 */
static bool gpubuf_policy_is_local(void)
{
#ifdef CONFIG_NUMA
	const struct mempolicy *pol = current->mempolicy;

	if (!pol || pol->mode == MPOL_LOCAL)
		return true;
#ifdef MPOL_F_LOCAL
	/* Before 5.14, MPOL_LOCAL was a preferred policy with this flag. */
	if (pol->mode == MPOL_PREFERRED && (pol->flags & MPOL_F_LOCAL))
		return true;
#endif
	return false;
#else
	return true;
#endif
}

/*
 * The node whose reserve and fresh pages a buffer wants: @nid itself when
 * it has memory, else the allowed node with memory nearest it, as the
 * buddy allocator's zonelist would order them (a task on a CPU-only node,
 * or a non-strict request for one). Ties go to the lower node number.
 */
static int gpubuf_want_node(int nid, const nodemask_t *allowed)
{
	int i, best = NUMA_NO_NODE;

	if (node_state(nid, N_MEMORY))
		return nid;
	for_each_node_state(i, N_MEMORY) {
		if (!node_isset(i, *allowed))
			continue;
		if (best == NUMA_NO_NODE ||
		    node_distance(nid, i) < node_distance(nid, best))
			best = i;
	}
	return best == NUMA_NO_NODE ? nid : best;
}

/*
 * A 2 MiB chunk when the reserve may serve: the wanted node's reserve,
 * then a fresh page of that node, then (unless strict) another allowed
 * node's reserve. NULL: the caller goes on as without a reserve.
 */
static struct page *gpubuf_alloc_huge(struct gpubuf_buffer *buf,
				      const struct gpubuf_fill *f, gfp_t gfp)
{
	struct page *page;

	page = gpubuf_reserve_take(f->want, &f->allowed, true);
	if (!page && node_isset(f->want, f->allowed)) {
		page = alloc_pages_node(f->want, gfp | __GFP_THISNODE,
					GPUBUF_HUGE_ORDER);
		if (page)
			return page;
	}
	if (!page && !f->strict)
		page = gpubuf_reserve_take(f->want, &f->allowed, false);
	if (page)
		buf->reserve_chunks++;
	return page;
}

/*
 * Allocate one chunk of at most @remaining pages, trying orders from
 * *@order_idx down, 2 MiB ones from the reserve first when @f allows it.
 * An order that failed is not tried again for this buffer: memory that
 * could not give it once will not for a while.
 */
static struct page *gpubuf_alloc_chunk(struct gpubuf_buffer *buf,
				       const struct gpubuf_fill *f,
				       unsigned long remaining,
				       unsigned int *order_idx)
{
	unsigned int i;

	for (i = *order_idx; i < ARRAY_SIZE(gpubuf_orders); i++) {
		unsigned int order = gpubuf_orders[i];
		gfp_t gfp = order ? GPUBUF_GFP_HIGH_ORDER : GPUBUF_GFP_ORDER0;
		struct page *page = NULL;

		if ((1UL << order) > remaining)
			continue;
		if (order == GPUBUF_HUGE_ORDER && f->from_reserve)
			page = gpubuf_alloc_huge(buf, f, gfp);
		/* Without a node the task's mempolicy decides (numactl). */
		if (!page && f->nid == NUMA_NO_NODE)
			page = alloc_pages(gfp, order);
		else if (!page)
			page = alloc_pages_node(f->nid, f->strict ?
						gfp | __GFP_THISNODE : gfp,
						order);
		if (page) {
			gpubuf_page_make_mappable(page);
			if (order == GPUBUF_HUGE_ORDER)
				buf->huge_chunks++;
			*order_idx = i;
			return page;
		}
	}
	return NULL;
}

static int gpubuf_fill_pages(struct gpubuf_buffer *buf)
{
	struct gpubuf_fill f = {
		.strict = buf->flags & GPUBUF_ALLOC_NUMA_STRICT,
		.nid = buf->numa_node == GPUBUF_NUMA_ANY ? NUMA_NO_NODE :
							  buf->numa_node,
	};
	unsigned int order_idx = 0;
	unsigned long done = 0;

	/*
	 * The reserve follows an explicit node, or the default policy's
	 * local node; the cpuset's nodes (read once, as the page allocator
	 * reads them) bound which of its lists may serve.
	 */
	f.from_reserve = gpubuf_reserve_serves_current() &&
			 (f.nid != NUMA_NO_NODE || gpubuf_policy_is_local());
	f.allowed = cpuset_current_mems_allowed;
	f.want = gpubuf_want_node(f.nid == NUMA_NO_NODE ? numa_node_id() :
				  f.nid, &f.allowed);
	while (done < buf->nr_pages) {
		struct page *page;
		unsigned long i, n;

		if (fatal_signal_pending(current))
			goto err_free;
		page = gpubuf_alloc_chunk(buf, &f, buf->nr_pages - done,
					  &order_idx);
		if (!page)
			goto err_free;
		n = 1UL << compound_order(page);
		/*
		 * Orders only ever decrease, so every chunk starts at a
		 * buffer offset aligned to its own size. The fault path
		 * relies on it: the core maps a 2 MiB compound page with one
		 * PMD at the 2 MiB-aligned address of the faulting offset.
		 */
		if (WARN_ON_ONCE(done & (n - 1))) {
			gpubuf_free_pages(&page, 1);
			goto err_free;
		}
		/*
		 * The chunk's offset in the buffer, as a page-cache folio
		 * carries its file offset: the fault path reads it (in recent
		 * kernels, Debian's 6.12 and 7.2 among them) to keep PMDs
		 * within the file's size, and a stale value left by the
		 * page's last user (an anonymous THP holds its virtual page
		 * number there) would make it fall back to 4 KiB entries.
		 */
		gpubuf_chunk_set_index(page, done);
		/*
		 * A buddy allocation never crosses a memory section, so its
		 * struct pages are contiguous (nth_page() is gone in 6.18+).
		 */
		for (i = 0; i < n; i++)
			buf->pages[done + i] = page + i;
		if (!done || page_to_pfn(page) !=
			     page_to_pfn(buf->pages[done - 1]) + 1)
			buf->nr_chunks++;
		done += n;
		cond_resched();
	}
	return 0;

err_free:
	gpubuf_free_pages(buf->pages, done);
	return fatal_signal_pending(current) ? -EINTR : -ENOMEM;
}

/* Pages charged by gpubuf_charge_headroom(). */
#define GPUBUF_HEADROOM_PAGES	4

/**
 * gpubuf_charge_headroom() - make it likely the caller's cgroup has room
 *
 * The kernel charges some allocations made on the caller's behalf to its
 * memory cgroup with GFP_KERNEL_ACCOUNT: a grown fd table, the inode and
 * file of a new dma-buf, the page tables of a mapping. When such a charge
 * finds the cgroup at its limit, the cgroup's OOM killer runs (usually on
 * the caller) instead of the allocation failing. Charging four pages first,
 * in a way that fails (__GFP_RETRY_MAYFAIL, as the buffer's own pages are
 * charged), turns that into ENOMEM. The pages go back at once, so what
 * follows takes their place: best effort, since another task of the cgroup
 * may charge in between. Four single pages cover the page tables one fault
 * may need in a fresh part of the address space (a table at each level
 * below the top), a grown fd table, or the objects of an export; two were
 * measured to be too few for the first. Checked at mmap() for the upper
 * levels, and in faults not made by the CPU in user mode (GUP, the
 * kernel's copies into user memory) that start a new PTE table: the core
 * has allocated that one already, the check keeps room for the next.
 * Single pages, so that a fragmented system never compacts for a probe.
 *
 * Return: 0, or -ENOMEM when the cgroup (or the system) has no room.
 */
int gpubuf_charge_headroom(void)
{
	struct page *pages[GPUBUF_HEADROOM_PAGES];
	int i, n, ret = 0;

	for (n = 0; n < GPUBUF_HEADROOM_PAGES; n++) {
		pages[n] = alloc_page(GPUBUF_GFP_META);
		if (!pages[n]) {
			ret = -ENOMEM;
			break;
		}
	}
	for (i = 0; i < n; i++)
		__free_page(pages[i]);
	return ret;
}

/*
 * The page array: small ones from kmalloc, which serves orders up to
 * PAGE_ALLOC_COSTLY_ORDER without effort, larger ones from vmalloc.
 * kvmalloc() would try kmalloc first at any size, and with
 * __GFP_RETRY_MAYFAIL (needed so that a cgroup limit is ENOMEM, not an OOM
 * kill) that attempt reclaims and compacts hard for a physically
 * contiguous array nobody needs, using up the high-order pages that the
 * buffer itself wants next. Freed with kvfree().
 */
static struct page **gpubuf_page_array_alloc(unsigned long nr_pages)
{
	size_t bytes = array_size(nr_pages, sizeof(struct page *));

	if (bytes <= PAGE_SIZE << PAGE_ALLOC_COSTLY_ORDER)
		return kmalloc(bytes, GPUBUF_GFP_META);
	return __vmalloc(bytes, GPUBUF_GFP_META);
}

/**
 * gpubuf_buffer_create() - allocate a zeroed buffer within the limits
 * @size:      bytes, already a non-zero multiple of PAGE_SIZE
 * @flags:     validated GPUBUF_ALLOC_* flags
 * @numa_node: GPUBUF_NUMA_ANY or an online node
 * @client:    the open file of /dev/gpubuf asking; the buffer counts in
 *             its fdinfo and holds a reference to it while it lives
 *
 * Return: the buffer, or ERR_PTR(-EFBIG, -ENOSPC, -ENOMEM or -EINTR) with
 * nothing left allocated or reserved. The ALLOC ioctl traces the outcome.
 */
struct gpubuf_buffer *gpubuf_buffer_create(u64 size, u64 flags, int numa_node,
					   struct gpubuf_client *client)
{
	struct gpubuf_buffer *buf;
	int ret;

	ret = gpubuf_reserve(size);
	if (ret)
		return ERR_PTR(ret);

	buf = kzalloc(sizeof(*buf), GPUBUF_GFP_META);
	if (!buf) {
		ret = -ENOMEM;
		goto err_unreserve;
	}
	buf->nr_pages = size >> PAGE_SHIFT;
	buf->flags = flags;
	buf->numa_node = numa_node;
	mutex_init(&buf->lock);
	INIT_LIST_HEAD(&buf->attachments);

	buf->pages = gpubuf_page_array_alloc(buf->nr_pages);
	if (!buf->pages) {
		ret = -ENOMEM;
		goto err_free_buf;
	}

	ret = gpubuf_fill_pages(buf);
	if (ret)
		goto err_free_array;
	/* Room for what the dma-buf core allocates when exporting it. */
	ret = gpubuf_charge_headroom();
	if (ret)
		goto err_free_pages;

	atomic64_inc(&gpubuf_stats.live_buffers);
	gpubuf_account_live(size);
	/* Counted in the fdinfo of the file it came through, while it lives. */
	kref_get(&client->ref);
	buf->client = client;
	atomic64_inc(&client->buffers);
	atomic64_add(size, &client->bytes);
	return buf;

err_free_pages:
	gpubuf_free_pages(buf->pages, buf->nr_pages);
err_free_array:
	kvfree(buf->pages);
err_free_buf:
	mutex_destroy(&buf->lock);
	kfree(buf);
err_unreserve:
	gpubuf_unreserve(size);
	return ERR_PTR(ret);
}

/**
 * gpubuf_buffer_destroy() - free a buffer made by gpubuf_buffer_create()
 * @buf: the buffer; no attachment or kernel mapping may remain
 *
 * Pages still pinned by a GPU or RDMA driver stay allocated until that
 * driver unpins them, and stay counted against max_total_bytes until
 * then: they are held (gpubuf_held), not freed.
 */
void gpubuf_buffer_destroy(struct gpubuf_buffer *buf)
{
	u64 bytes = gpubuf_buffer_bytes(buf), kept;

	WARN_ON(!list_empty(&buf->attachments) || buf->vmap_count);
	mutex_destroy(&buf->lock);
	atomic64_dec(&buf->client->buffers);
	atomic64_sub(bytes, &buf->client->bytes);
	gpubuf_client_put(buf->client);
	kept = gpubuf_free_or_hold(buf);
	trace_gpubuf_release(bytes, kept);
	if (!kept)
		gpubuf_buffer_free_record(buf);
	atomic64_dec(&gpubuf_stats.live_buffers);
	atomic64_sub(bytes, &gpubuf_stats.live_bytes);
	gpubuf_unreserve(bytes - kept);
}
