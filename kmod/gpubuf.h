/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gpubuf internal interfaces shared by the module's files.
 *
 * Locks, outermost first:
 * - gpubuf_reserve_resize_lock (mutex, gpubuf_reserve.c) serialises the
 *   reserve_bytes knob with load and unload; a write of the knob takes it
 *   inside the kernel's module-parameter lock.
 * - gpubuf_held_lock (mutex, gpubuf_held.c): the list of released buffers
 *   whose chunks a driver still pins, and the held_* counters.
 * - gpubuf_buffer.lock (mutex): one buffer's attachments and kernel
 *   mapping; never held with the two above. The dma-buf core may hold the
 *   buffer's reservation lock around map_dma_buf, vmap and mmap (6.2+), so
 *   buffer.lock nests inside it and is never held while calling back into
 *   the dma-buf core.
 * - gpubuf_rsv.lock (spinlock, gpubuf_reserve.c): the reserve's lists and
 *   counters; innermost (taken under the resize and held locks), nothing
 *   sleeps under it.
 */
#ifndef GPUBUF_INTERNAL_H
#define GPUBUF_INTERNAL_H

#include <linux/atomic.h>
#include <linux/gfp.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>
#include <linux/types.h>

struct dma_buf;
struct seq_file;

/**
 * struct gpubuf_client - one open file of /dev/gpubuf, for its fdinfo
 * @ref:     the file's reference and one per live buffer it allocated, so
 *           the counts outlive the file when its buffers do
 * @buffers: buffers allocated through the file and not yet released
 * @bytes:   their bytes
 */
struct gpubuf_client {
	struct kref ref;
	atomic64_t buffers;
	atomic64_t bytes;
};

/**
 * struct gpubuf_buffer - one allocation, owned by its dma-buf once exported
 * @pages:       every PAGE_SIZE page in order; high-order chunks are compound
 *               pages whose head and tail pages all appear here
 * @nr_pages:    number of entries in @pages
 * @nr_chunks:   number of physically contiguous runs in @pages
 * @huge_chunks: number of 2 MiB pages among them
 * @reserve_chunks: how many of those came from the reserve
 * @flags:       GPUBUF_ALLOC_* flags it was allocated with
 * @numa_node:   requested node or GPUBUF_NUMA_ANY
 * @lock:        protects @attachments, @vmap_count and @vaddr
 * @attachments: list of struct gpubuf_attachment
 * @vmap_count:  number of outstanding vmaps of @vaddr
 * @vaddr:       kernel virtual mapping while @vmap_count > 0
 * @held_node:   on the held list once released while a driver still pins
 *               some of its chunks (gpubuf_held.c)
 * @nr_held:     how many chunk heads, compacted to the front of @pages,
 *               are still pinned then
 * @client:      the open file of /dev/gpubuf it was allocated through
 */
struct gpubuf_buffer {
	struct page **pages;
	unsigned long nr_pages;
	unsigned int nr_chunks;
	unsigned long huge_chunks;
	unsigned long reserve_chunks;
	u64 flags;
	int numa_node;
	struct mutex lock; /* see @lock above */
	struct list_head attachments;
	unsigned int vmap_count;
	void *vaddr;
	struct list_head held_node;
	unsigned long nr_held;
	struct gpubuf_client *client;
};

/* The largest chunk: one 2 MiB page, mapped with one PMD entry. */
#define GPUBUF_HUGE_ORDER	(PAGE_SHIFT < 21 ? 21 - PAGE_SHIFT : 0)
#define GPUBUF_HUGE_BYTES	(PAGE_SIZE << GPUBUF_HUGE_ORDER)

/*
 * Metadata allocated for a caller (buffer structs, page arrays,
 * attachments, scatterlists) is charged to its memory cgroup, and a limit
 * fails the allocation instead of invoking the cgroup's OOM killer.
 */
#define GPUBUF_GFP_META	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

static inline u64 gpubuf_buffer_bytes(const struct gpubuf_buffer *buf)
{
	return (u64)buf->nr_pages << PAGE_SHIFT;
}

/* gpubuf_alloc.c */
struct gpubuf_buffer *gpubuf_buffer_create(u64 size, u64 flags, int numa_node,
					   struct gpubuf_client *client);
void gpubuf_buffer_destroy(struct gpubuf_buffer *buf);
void gpubuf_limits_init(void);
void gpubuf_note_failed_alloc(void);
int gpubuf_charge_headroom(void);

/**
 * struct gpubuf_stats_snapshot - counters shown in sysfs
 * @live_buffers:  buffers allocated and not yet released
 * @live_bytes:    bytes held by those buffers
 * @peak_bytes:    highest @live_bytes since the module was loaded
 * @failed_allocs: ALLOC requests that passed validation but got no buffer
 * @held_bytes:    bytes of released buffers that a driver still pins
 *                 (counted against max_total_bytes until it unpins)
 * @held_buffers:  released buffers with such pages
 * @reserve_ready_bytes:   zeroed 2 MiB pages waiting in the reserve
 * @reserve_zeroing_bytes: reserve pages back from buffers, being zeroed
 * @reserve_used_bytes:    reserve pages lent to buffers (live or held)
 * @reserve_shrunk_bytes:  reserve pages given back under memory pressure
 *                         since load
 */
struct gpubuf_stats_snapshot {
	u64 live_buffers;
	u64 live_bytes;
	u64 peak_bytes;
	u64 failed_allocs;
	u64 held_bytes;
	u64 held_buffers;
	u64 reserve_ready_bytes;
	u64 reserve_zeroing_bytes;
	u64 reserve_used_bytes;
	u64 reserve_shrunk_bytes;
};

void gpubuf_stats_read(struct gpubuf_stats_snapshot *snap);
void gpubuf_unreserve(u64 bytes);
void gpubuf_chunk_free(struct page *head);
void gpubuf_buffer_free_record(struct gpubuf_buffer *buf);

/* gpubuf_held.c */
u64 gpubuf_free_or_hold(struct gpubuf_buffer *buf);
void gpubuf_held_scan(void);
void gpubuf_held_read(struct gpubuf_stats_snapshot *snap);
void gpubuf_held_release_all(void);

/* gpubuf_reserve.c */
int gpubuf_reserve_init(void);
void gpubuf_reserve_exit(void);
bool gpubuf_reserve_serves_current(void);
struct page *gpubuf_reserve_take(int nid, const nodemask_t *allowed,
				 bool only_nid);
bool gpubuf_reserve_give_back(struct page *head);
void gpubuf_reserve_forget(struct page *head);
void gpubuf_reserve_read(struct gpubuf_stats_snapshot *snap);

/* gpubuf_faults.c: only with fault injection's debugfs attributes */
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
bool gpubuf_fail_reserve_fill(void);
void gpubuf_faults_init(void);
void gpubuf_faults_exit(void);
#else
static inline bool gpubuf_fail_reserve_fill(void) { return false; }
static inline void gpubuf_faults_init(void) {}
static inline void gpubuf_faults_exit(void) {}
#endif

/* gpubuf_dmabuf.c */
struct dma_buf *gpubuf_export(struct gpubuf_buffer *buf, u32 fd_flags);
struct gpubuf_buffer *gpubuf_dmabuf_to_buffer(struct dma_buf *dmabuf);

/* gpubuf_ioctl.c */
long gpubuf_dev_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* gpubuf_main.c */
void gpubuf_client_put(struct gpubuf_client *client);

#endif /* GPUBUF_INTERNAL_H */
