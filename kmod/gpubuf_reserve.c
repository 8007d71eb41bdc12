// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf's reserve of zeroed 2 MiB pages.
 *
 * Once a machine has run for a while, its free memory is fragmented and
 * 2 MiB pages are rare: buffers then get 64 KiB and 4 KiB chunks (longer
 * scatterlists, no PMD mappings, slower pins). Like the hugetlb pool, the
 * reserve sets 2 MiB pages aside early, at load or when the reserve_bytes
 * knob grows it, and buffers take from it before asking the buddy
 * allocator. A buffer's reserve chunks come back when it is freed and are
 * zeroed again by a background worker, so ALLOC does not wait for zeroing.
 *
 * Charging. Reserve pages are charged to no memory cgroup, as the hugetlb
 * pool is not: an administrator sets them aside for the whole machine. A
 * module cannot move a charge onto a page later (the memcg charge calls
 * are not exported), so a buffer takes from the reserve only when the
 * caller's cgroup and all its ancestors set neither memory.max nor
 * memory.high: no limit can be bypassed through the reserve, and a caller
 * under a limit gets pages charged to it as without a reserve. Bytes handed
 * out show in reserve_used_bytes and in INFO, not in the caller's
 * memory.current; they count against max_total_bytes like any buffer.
 *
 * Memory pressure shrinks the reserve through a shrinker (chunks still
 * waiting to be zeroed go first); writing reserve_bytes refills it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/gfp.h>
#include <linux/list.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>
#include <linux/page_counter.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "gpubuf.h"
#include "gpubuf_compat.h"
#include "gpubuf_trace.h"

#define GPUBUF_RESERVE_PAGES	BIT(GPUBUF_HUGE_ORDER)

/*
 * page_private() of a chunk head the reserve owns, whether it sits in the
 * reserve or is lent to a buffer; the buddy allocator clears the field.
 */
#define GPUBUF_RESERVE_MARK	0x67627273UL

/*
 * Filled at load and by the knob: direct reclaim and compaction are worth
 * it here, once, where a buffer's ALLOC would rather fall back; an OOM
 * kill is not.
 */
#define GPUBUF_GFP_RESERVE \
	(GFP_HIGHUSER | __GFP_ZERO | __GFP_COMP | __GFP_RETRY_MAYFAIL | \
	 __GFP_NOWARN | __GFP_THISNODE)

struct gpubuf_rsv_list {
	struct list_head chunks;	/* head pages, linked through lru */
	unsigned long nr;
};

struct gpubuf_reserve_node {
	struct gpubuf_rsv_list ready;	/* zeroed */
	struct gpubuf_rsv_list dirty;	/* back from buffers, to be zeroed */
	unsigned long nr_zeroing;	/* in the worker's hands */
};

/*
 * Counts are in chunks, under @lock; "owned" is every chunk the reserve
 * has: ready, dirty, being zeroed and lent to buffers.
 */
static struct {
	spinlock_t lock;		/* protects everything below */
	struct gpubuf_reserve_node *nodes;	/* nr_node_ids entries */
	unsigned long nr_zeroing;
	unsigned long nr_zeroed;	/* chunks the worker has finished */
	unsigned long nr_used;
	unsigned long target;
	unsigned long fill_requested;	/* resizes asked for */
	unsigned long fill_done;	/* the last one the fill worker served */
	bool filling;			/* the fill worker is allocating */
	/* The fill worker's task while it allocates: its own reclaim. */
	struct task_struct *fill_task;
	bool fill_squeezed;		/* others' reclaim took chunks meanwhile */
	u64 shrunk_bytes;
	bool live;			/* between init and exit */
} gpubuf_rsv = {
	.lock = __SPIN_LOCK_UNLOCKED(gpubuf_rsv.lock),
};

/* Serialises resizing (the knob) with load and unload. */
static DEFINE_MUTEX(gpubuf_reserve_resize_lock);
static struct shrinker *gpubuf_reserve_shrinker;
static void gpubuf_reserve_zero_fn(struct work_struct *work);
static DECLARE_WORK(gpubuf_reserve_zero_work, gpubuf_reserve_zero_fn);
/* Woken each time the worker has zeroed a chunk. */
static DECLARE_WAIT_QUEUE_HEAD(gpubuf_reserve_zeroed_wq);
static void gpubuf_reserve_fill_fn(struct work_struct *work);
static DECLARE_WORK(gpubuf_reserve_fill_work, gpubuf_reserve_fill_fn);
/* Woken each time the fill worker is done. */
static DECLARE_WAIT_QUEUE_HEAD(gpubuf_reserve_filled_wq);

/* The knob's value in bytes, a multiple of 2 MiB. */
static u64 gpubuf_reserve_param;

/* Chunks free in the reserve: ready ones, or those waiting to be zeroed. */
static unsigned long gpubuf_rsv_free_chunks(bool dirty)
{
	unsigned long n = 0;
	int nid;

	lockdep_assert_held(&gpubuf_rsv.lock);
	for_each_node(nid)
		n += dirty ? gpubuf_rsv.nodes[nid].dirty.nr :
			     gpubuf_rsv.nodes[nid].ready.nr;
	return n;
}

static unsigned long gpubuf_rsv_owned(void)
{
	return gpubuf_rsv_free_chunks(false) + gpubuf_rsv_free_chunks(true) +
	       gpubuf_rsv.nr_zeroing + gpubuf_rsv.nr_used;
}

static void gpubuf_reserve_chunk_free(struct page *head)
{
	set_page_private(head, 0);
	__free_pages(head, GPUBUF_HUGE_ORDER);
}

static void gpubuf_reserve_zero_chunk(struct page *head)
{
	unsigned long i;

	for (i = 0; i < GPUBUF_RESERVE_PAGES; i++)
		clear_highpage(head + i);
}

static struct page *gpubuf_rsv_pop(struct gpubuf_rsv_list *list)
{
	struct page *head = list_first_entry_or_null(&list->chunks,
						      struct page, lru);

	if (head) {
		list_del(&head->lru);
		/* The shrinker's count reads it without the lock. */
		WRITE_ONCE(list->nr, list->nr - 1);
	}
	return head;
}

static void gpubuf_rsv_push(struct gpubuf_rsv_list *list, struct page *head)
{
	list_add_tail(&head->lru, &list->chunks);
	WRITE_ONCE(list->nr, list->nr + 1);
}

static void gpubuf_reserve_zero_fn(struct work_struct *work)
{
	for (;;) {
		struct page *head = NULL;
		bool over;
		int nid;

		spin_lock(&gpubuf_rsv.lock);
		/* At unload the dirty chunks are freed, not zeroed first. */
		for_each_node(nid) {
			if (!gpubuf_rsv.live)
				break;
			head = gpubuf_rsv_pop(&gpubuf_rsv.nodes[nid].dirty);
			if (head)
				break;
		}
		if (head) {
			gpubuf_rsv.nr_zeroing++;
			gpubuf_rsv.nodes[nid].nr_zeroing++;
		}
		spin_unlock(&gpubuf_rsv.lock);
		if (!head)
			return;

		gpubuf_reserve_zero_chunk(head);

		spin_lock(&gpubuf_rsv.lock);
		gpubuf_rsv.nr_zeroing--;
		gpubuf_rsv.nodes[nid].nr_zeroing--;
		/* Waiters in gpubuf_reserve_take() read it without the lock. */
		WRITE_ONCE(gpubuf_rsv.nr_zeroed, gpubuf_rsv.nr_zeroed + 1);
		/*
		 * A resize while it was zeroed could not trim it: keep it only
		 * if the reserve is still short of its target.
		 */
		over = gpubuf_rsv_owned() >= gpubuf_rsv.target;
		if (!over)
			gpubuf_rsv_push(&gpubuf_rsv.nodes[nid].ready, head);
		spin_unlock(&gpubuf_rsv.lock);
		if (over)
			gpubuf_reserve_chunk_free(head);
		wake_up_all(&gpubuf_reserve_zeroed_wq);
		cond_resched();
	}
}

/**
 * gpubuf_reserve_serves_current() - may the caller's buffer use the reserve?
 *
 * Only when no memory cgroup from the caller's up to the root limits it:
 * a reserve page is charged to nobody, so handing it to a limited cgroup
 * would let the limit be exceeded. A cheap test of the knob comes first.
 */
bool gpubuf_reserve_serves_current(void)
{
	bool serves = true;
#ifdef CONFIG_MEMCG
	struct mem_cgroup *m;
#endif

	if (!READ_ONCE(gpubuf_rsv.target))
		return false;
#ifdef CONFIG_MEMCG
	/* The task's cgroup, which __GFP_ACCOUNT would charge; NULL if off. */
	rcu_read_lock();
	for (m = mem_cgroup_from_task(current); m; m = parent_mem_cgroup(m)) {
		if (READ_ONCE(m->memory.max) != PAGE_COUNTER_MAX ||
		    gpubuf_memcg_high(m) != PAGE_COUNTER_MAX) {
			serves = false;
			break;
		}
	}
	rcu_read_unlock();
#endif
	return serves;
}

static struct page *gpubuf_rsv_take_locked(int nid, bool *dirty)
{
	struct gpubuf_reserve_node *n = &gpubuf_rsv.nodes[nid];
	struct page *head;

	head = gpubuf_rsv_pop(&n->ready);
	*dirty = !head;
	if (!head)
		head = gpubuf_rsv_pop(&n->dirty);
	return head;
}

/*
 * Of the allowed nodes other than @nid whose lists hold a chunk, the one
 * nearest @nid (ties: the lower number), as the buddy allocator would fall
 * back; NUMA_NO_NODE if none does. Under gpubuf_rsv.lock.
 */
static int gpubuf_rsv_nearest_locked(int nid, const nodemask_t *allowed)
{
	int i, best = NUMA_NO_NODE;

	for_each_node_mask(i, *allowed) {
		struct gpubuf_reserve_node *n = &gpubuf_rsv.nodes[i];

		if (i == nid || (!n->ready.nr && !n->dirty.nr))
			continue;
		if (best == NUMA_NO_NODE ||
		    node_distance(nid, i) < node_distance(nid, best))
			best = i;
	}
	return best;
}

/**
 * gpubuf_reserve_take() - lend a zeroed 2 MiB chunk to a buffer
 * @nid:      the node wanted
 * @allowed:  the nodes the caller may allocate on (its cpuset's)
 * @only_nid: @nid's lists only; else those of the nearest other allowed
 *            node that has a chunk (without @nid's, which the caller asked
 *            first)
 *
 * A zeroed chunk comes first, then one still waiting for the worker, which
 * is zeroed here (as the buddy allocator would zero a fresh page). When
 * the only chunk that would do is in the worker's hands, this waits the
 * moment it takes to zero it (killable), then looks again: it is still
 * the reserve's.
 *
 * Return: the chunk's head page with one reference, or NULL (none, or a
 * fatal signal while waiting).
 */
struct page *gpubuf_reserve_take(int nid, const nodemask_t *allowed,
				 bool only_nid)
{
	struct page *head;
	bool dirty = false;

	for (;;) {
		unsigned long zeroing = 0, zeroed;
		int i, from;

		head = NULL;
		spin_lock(&gpubuf_rsv.lock);
		if (only_nid)
			from = node_isset(nid, *allowed) ? nid : NUMA_NO_NODE;
		else
			from = gpubuf_rsv_nearest_locked(nid, allowed);
		if (from != NUMA_NO_NODE)
			head = gpubuf_rsv_take_locked(from, &dirty);
		for_each_node_mask(i, *allowed) {
			bool own = i == nid;

			/* Only a chunk that would do is worth waiting for. */
			if (own == only_nid)
				zeroing += gpubuf_rsv.nodes[i].nr_zeroing;
		}
		if (head)
			gpubuf_rsv.nr_used++;
		zeroed = gpubuf_rsv.nr_zeroed;
		spin_unlock(&gpubuf_rsv.lock);
		if (head || !zeroing)
			break;
		/* Any chunk the worker finishes may be ours: look again. */
		if (wait_event_killable(gpubuf_reserve_zeroed_wq,
					READ_ONCE(gpubuf_rsv.nr_zeroed) != zeroed))
			return NULL;
	}

	if (head && dirty)
		gpubuf_reserve_zero_chunk(head);
	if (head)
		trace_gpubuf_reserve_take(nid, page_to_nid(head), dirty);
	return head;
}

/**
 * gpubuf_reserve_give_back() - offer a buffer's idle 2 MiB chunk to the reserve
 * @head: the chunk's head page; only our reference is left (a chunk with
 *        more is refused with a warning and given up by the reserve)
 *
 * The reserve keeps its own chunks, and adopts other uncharged ones, while
 * it owns fewer than its target; a chunk charged to a cgroup is never kept,
 * since only freeing it uncharges it.
 *
 * Return: whether the reserve kept it; if not, the caller frees it.
 */
bool gpubuf_reserve_give_back(struct page *head)
{
	bool ours = page_private(head) == GPUBUF_RESERVE_MARK;
	bool keep;

	/*
	 * A chunk that someone else still references (a pin) must never be
	 * zeroed and lent again: give it up, and let the last put free it.
	 */
	if (WARN_ON_ONCE(page_ref_count(head) != 1)) {
		gpubuf_reserve_forget(head);
		return false;
	}
	if (compound_order(head) != GPUBUF_HUGE_ORDER ||
	    (!ours && gpubuf_page_charged(head)))
		return false;

	spin_lock(&gpubuf_rsv.lock);
	if (ours)
		gpubuf_rsv.nr_used--;
	keep = gpubuf_rsv.live && gpubuf_rsv_owned() < gpubuf_rsv.target;
	if (keep) {
		set_page_private(head, GPUBUF_RESERVE_MARK);
		gpubuf_rsv_push(&gpubuf_rsv.nodes[page_to_nid(head)].dirty,
				head);
	}
	spin_unlock(&gpubuf_rsv.lock);

	if (keep)
		queue_work(system_unbound_wq, &gpubuf_reserve_zero_work);
	else
		set_page_private(head, 0);
	return keep;
}

/**
 * gpubuf_reserve_forget() - the reserve gives up a lent chunk still pinned
 * @head: the chunk's head page
 *
 * At unload, for a chunk that a driver still pins: whoever drops the last
 * reference frees it to the buddy allocator.
 */
void gpubuf_reserve_forget(struct page *head)
{
	if (page_private(head) != GPUBUF_RESERVE_MARK)
		return;
	spin_lock(&gpubuf_rsv.lock);
	gpubuf_rsv.nr_used--;
	spin_unlock(&gpubuf_rsv.lock);
	set_page_private(head, 0);
}

/*
 * Take up to @max chunks off the dirty lists (they need no zeroing), then
 * the ready ones, of node @nid or of every node (NUMA_NO_NODE), onto @out.
 */
static unsigned long gpubuf_rsv_detach(int nid, unsigned long max,
				       struct list_head *out)
{
	unsigned long n = 0;
	int pass, i;

	lockdep_assert_held(&gpubuf_rsv.lock);
	for (pass = 0; pass < 2; pass++) {
		for_each_node(i) {
			struct gpubuf_reserve_node *rn = &gpubuf_rsv.nodes[i];
			struct gpubuf_rsv_list *list = pass ? &rn->ready :
							      &rn->dirty;
			struct page *head;

			if (nid != NUMA_NO_NODE && i != nid)
				continue;
			while (n < max && (head = gpubuf_rsv_pop(list))) {
				list_add(&head->lru, out);
				n++;
			}
		}
	}
	return n;
}

static void gpubuf_rsv_free_list(struct list_head *list)
{
	struct page *head, *tmp;

	list_for_each_entry_safe(head, tmp, list, lru) {
		list_del(&head->lru);
		gpubuf_reserve_chunk_free(head);
		cond_resched();
	}
}

/*
 * The shrinker's objects are whole 2 MiB pages, not 4 KiB ones: reclaim
 * scans a share of the objects that halves with each priority step, so
 * the reserve gives way little by little once reclaim gets serious, and
 * all at once only to drop_caches, instead of being one large cache that
 * the first kswapd pass takes. On a fragmented machine one of its pages
 * is worth far more than a page of cache.
 */
static unsigned long gpubuf_reserve_count(struct shrinker *s,
					  struct shrink_control *sc)
{
	struct gpubuf_reserve_node *rn = &gpubuf_rsv.nodes[sc->nid];

	/*
	 * The reclaim the fill's own allocations start would free what it
	 * just took: nothing to give it. Anyone else's reclaim (kswapd, a
	 * task short of memory) may take chunks during a fill, which then
	 * stops. A racy read is what shrinkers expect: the scan rechecks.
	 */
	if (READ_ONCE(gpubuf_rsv.fill_task) == current)
		return 0;
	return READ_ONCE(rn->ready.nr) + READ_ONCE(rn->dirty.nr);
}

static unsigned long gpubuf_reserve_scan(struct shrinker *s,
					 struct shrink_control *sc)
{
	LIST_HEAD(out);
	unsigned long n;

	spin_lock(&gpubuf_rsv.lock);
	n = gpubuf_rsv.fill_task == current ? 0 :
	    gpubuf_rsv_detach(sc->nid, sc->nr_to_scan, &out);
	if (n && gpubuf_rsv.filling)
		WRITE_ONCE(gpubuf_rsv.fill_squeezed, true);
	gpubuf_rsv.shrunk_bytes += (u64)n * GPUBUF_HUGE_BYTES;
	spin_unlock(&gpubuf_rsv.lock);
	gpubuf_rsv_free_list(&out);
	if (n)
		trace_gpubuf_reserve_shrink(sc->nid, n);
	/* Freed pages are reclaim's progress, as slab pages would be. */
	gpubuf_account_reclaimed(n * GPUBUF_RESERVE_PAGES);
	return n ? n : SHRINK_STOP;
}

/*
 * Grow to the target from the buddy allocator, the nodes with memory in
 * turn; a node that cannot give a chunk is not asked again this time.
 * Stops at unload, and once reclaim has taken chunks back meanwhile: the
 * memory is wanted elsewhere, and growing would only feed the shrinker.
 */
static void gpubuf_reserve_fill(void)
{
	nodemask_t nodes = node_states[N_MEMORY];
	int nid = first_node(nodes);

	while (nid < MAX_NUMNODES && READ_ONCE(gpubuf_rsv.live) &&
	       !READ_ONCE(gpubuf_rsv.fill_squeezed)) {
		struct page *head;
		bool full;

		spin_lock(&gpubuf_rsv.lock);
		full = gpubuf_rsv_owned() >= gpubuf_rsv.target;
		spin_unlock(&gpubuf_rsv.lock);
		if (full)
			break;

		head = gpubuf_fail_reserve_fill() ? NULL :
		       alloc_pages_node(nid, GPUBUF_GFP_RESERVE,
					GPUBUF_HUGE_ORDER);
		if (!head) {
			node_clear(nid, nodes);
			nid = next_node_in(nid, nodes);
			continue;
		}
		/* The target can have shrunk, or a give-back filled it, since. */
		spin_lock(&gpubuf_rsv.lock);
		full = gpubuf_rsv_owned() >= gpubuf_rsv.target;
		if (!full) {
			set_page_private(head, GPUBUF_RESERVE_MARK);
			gpubuf_rsv_push(&gpubuf_rsv.nodes[nid].ready, head);
		}
		spin_unlock(&gpubuf_rsv.lock);
		if (full) {
			__free_pages(head, GPUBUF_HUGE_ORDER);
			break;
		}
		trace_gpubuf_reserve_fill(nid);
		nid = next_node_in(nid, nodes);
		cond_resched();
	}
}

/*
 * The fill runs here, not in the writer of reserve_bytes: a fatal signal
 * to the writer should end its wait, not the fill. Only the reclaim that
 * this worker's own allocations start gets nothing from the shrinker.
 */
static void gpubuf_reserve_fill_fn(struct work_struct *work)
{
	unsigned long seq;

	spin_lock(&gpubuf_rsv.lock);
	seq = gpubuf_rsv.fill_requested;
	WRITE_ONCE(gpubuf_rsv.filling, true);
	WRITE_ONCE(gpubuf_rsv.fill_squeezed, false);
	WRITE_ONCE(gpubuf_rsv.fill_task, current);
	spin_unlock(&gpubuf_rsv.lock);

	gpubuf_reserve_fill();

	spin_lock(&gpubuf_rsv.lock);
	WRITE_ONCE(gpubuf_rsv.fill_task, NULL);
	WRITE_ONCE(gpubuf_rsv.filling, false);
	WRITE_ONCE(gpubuf_rsv.fill_done, seq);
	spin_unlock(&gpubuf_rsv.lock);
	wake_up_all(&gpubuf_reserve_filled_wq);
}

/* Give back free chunks while the reserve owns more than its target. */
static void gpubuf_reserve_trim(void)
{
	unsigned long owned, excess;
	LIST_HEAD(out);

	spin_lock(&gpubuf_rsv.lock);
	owned = gpubuf_rsv_owned();
	excess = owned > gpubuf_rsv.target ? owned - gpubuf_rsv.target : 0;
	gpubuf_rsv_detach(NUMA_NO_NODE, excess, &out);
	spin_unlock(&gpubuf_rsv.lock);
	gpubuf_rsv_free_list(&out);
}

/* Bytes written to the knob: whole chunks, at most half of RAM. */
static u64 gpubuf_reserve_value(u64 bytes)
{
	u64 half_ram = ((u64)totalram_pages() << PAGE_SHIFT) / 2;

	return round_down(min(bytes, half_ram), (u64)GPUBUF_HUGE_BYTES);
}

/*
 * Set the target, give back what is over it, and have the worker fill up
 * to it; returns once that fill is done, or when the caller is killed (the
 * fill goes on without it).
 */
static void gpubuf_reserve_resize(u64 bytes)
{
	unsigned long owned, target, seq;

	spin_lock(&gpubuf_rsv.lock);
	gpubuf_rsv.target = bytes >> (GPUBUF_HUGE_ORDER + PAGE_SHIFT);
	seq = ++gpubuf_rsv.fill_requested;
	spin_unlock(&gpubuf_rsv.lock);
	gpubuf_reserve_trim();
	queue_work(system_unbound_wq, &gpubuf_reserve_fill_work);
	if (wait_event_killable(gpubuf_reserve_filled_wq,
				(long)(READ_ONCE(gpubuf_rsv.fill_done) - seq) >= 0))
		return;
	spin_lock(&gpubuf_rsv.lock);
	owned = gpubuf_rsv_owned();
	target = gpubuf_rsv.target;
	spin_unlock(&gpubuf_rsv.lock);
	if (owned < target)
		pr_info("reserve: %lu of %lu MiB of 2 MiB pages set aside\n",
			owned * (GPUBUF_HUGE_BYTES >> 20),
			target * (GPUBUF_HUGE_BYTES >> 20));
}

static int gpubuf_reserve_set(const char *val, const struct kernel_param *kp)
{
	u64 bytes;
	int ret;

	ret = kstrtou64(val, 0, &bytes);
	if (ret)
		return ret;
	bytes = gpubuf_reserve_value(bytes);
	/*
	 * A fill can take seconds, and every read of this module's
	 * parameters (gpubuf-info, the Prometheus timer) takes the
	 * parameter lock our caller holds: wait without it. Our own mutex
	 * keeps writers in order, and is never held with the parameter
	 * lock, so the two cannot deadlock.
	 */
	kernel_param_unlock(THIS_MODULE);
	mutex_lock(&gpubuf_reserve_resize_lock);
	WRITE_ONCE(gpubuf_reserve_param, bytes);
	/* At load, gpubuf_reserve_init() fills it once the rest is set up. */
	if (gpubuf_rsv.live)
		gpubuf_reserve_resize(bytes);
	mutex_unlock(&gpubuf_reserve_resize_lock);
	kernel_param_lock(THIS_MODULE);
	return 0;
}

static int gpubuf_reserve_get(char *buffer, const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%llu\n", READ_ONCE(gpubuf_reserve_param));
}

static const struct kernel_param_ops gpubuf_reserve_ops = {
	.set = gpubuf_reserve_set,
	.get = gpubuf_reserve_get,
};

module_param_cb(reserve_bytes, &gpubuf_reserve_ops, NULL, 0644);
MODULE_PARM_DESC(reserve_bytes,
		 "Zeroed 2 MiB pages set aside for buffers, bytes (default 0 = none; whole 2 MiB pages, at most half of RAM; writing it grows or shrinks the reserve)");

/**
 * gpubuf_reserve_read() - the reserve's counters, in bytes
 * @snap: its reserve_* fields are filled in
 */
void gpubuf_reserve_read(struct gpubuf_stats_snapshot *snap)
{
	spin_lock(&gpubuf_rsv.lock);
	snap->reserve_ready_bytes = (u64)gpubuf_rsv_free_chunks(false) *
				    GPUBUF_HUGE_BYTES;
	snap->reserve_zeroing_bytes = (u64)(gpubuf_rsv_free_chunks(true) +
					    gpubuf_rsv.nr_zeroing) *
				      GPUBUF_HUGE_BYTES;
	snap->reserve_used_bytes = (u64)gpubuf_rsv.nr_used * GPUBUF_HUGE_BYTES;
	snap->reserve_shrunk_bytes = gpubuf_rsv.shrunk_bytes;
	spin_unlock(&gpubuf_rsv.lock);
}

/**
 * gpubuf_reserve_init() - set up the reserve and fill it to reserve_bytes
 *
 * A reserve that cannot be filled completely is not an error: what was
 * taken shows in reserve_ready_bytes.
 *
 * Return: 0 or -ENOMEM.
 */
int gpubuf_reserve_init(void)
{
	int nid;

	gpubuf_rsv.nodes = kcalloc(nr_node_ids, sizeof(*gpubuf_rsv.nodes),
				   GFP_KERNEL);
	if (!gpubuf_rsv.nodes)
		return -ENOMEM;
	for_each_node(nid) {
		INIT_LIST_HEAD(&gpubuf_rsv.nodes[nid].ready.chunks);
		INIT_LIST_HEAD(&gpubuf_rsv.nodes[nid].dirty.chunks);
	}
	gpubuf_reserve_shrinker = gpubuf_shrinker_create("gpubuf-reserve",
							 gpubuf_reserve_count,
							 gpubuf_reserve_scan);
	if (!gpubuf_reserve_shrinker) {
		kfree(gpubuf_rsv.nodes);
		return -ENOMEM;
	}

	mutex_lock(&gpubuf_reserve_resize_lock);
	spin_lock(&gpubuf_rsv.lock);
	WRITE_ONCE(gpubuf_rsv.live, true);
	spin_unlock(&gpubuf_rsv.lock);
	gpubuf_reserve_resize(gpubuf_reserve_value(gpubuf_reserve_param));
	mutex_unlock(&gpubuf_reserve_resize_lock);
	return 0;
}

/**
 * gpubuf_reserve_exit() - free the reserve at unload
 *
 * No buffer exists any more; chunks still lent to held buffers that a
 * driver pins were dropped by gpubuf_held_release_all() before.
 */
void gpubuf_reserve_exit(void)
{
	LIST_HEAD(out);

	mutex_lock(&gpubuf_reserve_resize_lock);
	spin_lock(&gpubuf_rsv.lock);
	WRITE_ONCE(gpubuf_rsv.live, false);	/* the fill reads it unlocked */
	spin_unlock(&gpubuf_rsv.lock);
	mutex_unlock(&gpubuf_reserve_resize_lock);

	gpubuf_shrinker_destroy(gpubuf_reserve_shrinker);
	cancel_work_sync(&gpubuf_reserve_fill_work);
	cancel_work_sync(&gpubuf_reserve_zero_work);
	spin_lock(&gpubuf_rsv.lock);
	gpubuf_rsv_detach(NUMA_NO_NODE, ULONG_MAX, &out);
	spin_unlock(&gpubuf_rsv.lock);
	gpubuf_rsv_free_list(&out);
	kfree(gpubuf_rsv.nodes);
}
