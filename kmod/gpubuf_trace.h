/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gpubuf's tracepoints (system "gpubuf"), for perf, bpftrace and tracefs:
 * a buffer's life (alloc, release, held and unheld after release), its
 * importers (attach, detach, map, unmap), CPU access (fault, sync begin and
 * end) and the reserve of 2 MiB pages (fill, take, shrink). Fields are
 * numbers and a device name copied into a fixed array, so the events read
 * the same on every kernel gpubuf builds for. The fields are described in
 * docs/operations.md.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM gpubuf

#if !defined(GPUBUF_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define GPUBUF_TRACE_H

#include <linux/device.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#define GPUBUF_TRACE_DEV_LEN	32

TRACE_EVENT(gpubuf_alloc,
	    TP_PROTO(u64 size, int node, unsigned long huge_chunks,
		     unsigned long reserve_chunks, int result),
	    TP_ARGS(size, node, huge_chunks, reserve_chunks, result),
	    TP_STRUCT__entry(__field(u64, size)
			     __field(int, node)
			     __field(unsigned long, huge_chunks)
			     __field(unsigned long, small_pages)
			     __field(unsigned long, reserve_chunks)
			     __field(int, result)),
	    TP_fast_assign(__entry->size = size;
			   __entry->node = node;
			   __entry->huge_chunks = huge_chunks;
			   /* A refused ALLOC has no pages at all. */
			   __entry->small_pages = result ? 0 :
				(size >> PAGE_SHIFT) -
				(huge_chunks << GPUBUF_HUGE_ORDER);
			   __entry->reserve_chunks = reserve_chunks;
			   __entry->result = result;),
	    TP_printk("size=%llu node=%d huge_chunks=%lu small_pages=%lu reserve_chunks=%lu result=%d",
		      __entry->size, __entry->node, __entry->huge_chunks,
		      __entry->small_pages, __entry->reserve_chunks,
		      __entry->result)
);

TRACE_EVENT(gpubuf_release,
	    TP_PROTO(u64 size, u64 held),
	    TP_ARGS(size, held),
	    TP_STRUCT__entry(__field(u64, size)
			     __field(u64, held)),
	    TP_fast_assign(__entry->size = size;
			   __entry->held = held;),
	    TP_printk("size=%llu held=%llu", __entry->size, __entry->held)
);

/* Released with pages still pinned by a driver: held, or no longer. */
DECLARE_EVENT_CLASS(gpubuf_held_class,
		    TP_PROTO(u64 bytes, u64 held_bytes),
		    TP_ARGS(bytes, held_bytes),
		    TP_STRUCT__entry(__field(u64, bytes)
				     __field(u64, held_bytes)),
		    TP_fast_assign(__entry->bytes = bytes;
				   __entry->held_bytes = held_bytes;),
		    TP_printk("bytes=%llu held_bytes=%llu", __entry->bytes,
			      __entry->held_bytes)
);

DEFINE_EVENT(gpubuf_held_class, gpubuf_held,
	     TP_PROTO(u64 bytes, u64 held_bytes),
	     TP_ARGS(bytes, held_bytes)
);

DEFINE_EVENT(gpubuf_held_class, gpubuf_unheld,
	     TP_PROTO(u64 bytes, u64 held_bytes),
	     TP_ARGS(bytes, held_bytes)
);

DECLARE_EVENT_CLASS(gpubuf_attach_class,
		    TP_PROTO(u64 size, struct device *dev, int result),
		    TP_ARGS(size, dev, result),
		    TP_STRUCT__entry(__field(u64, size)
				     __array(char, dev, GPUBUF_TRACE_DEV_LEN)
				     __field(int, result)),
		    TP_fast_assign(__entry->size = size;
				   strscpy(__entry->dev,
					   dev ? dev_name(dev) : "-",
					   GPUBUF_TRACE_DEV_LEN);
				   __entry->result = result;),
		    TP_printk("size=%llu dev=%s result=%d", __entry->size,
			      __entry->dev, __entry->result)
);

DEFINE_EVENT(gpubuf_attach_class, gpubuf_attach,
	     TP_PROTO(u64 size, struct device *dev, int result),
	     TP_ARGS(size, dev, result)
);

DEFINE_EVENT(gpubuf_attach_class, gpubuf_detach,
	     TP_PROTO(u64 size, struct device *dev, int result),
	     TP_ARGS(size, dev, result)
);

/*
 * dir: enum dma_data_direction. shared: another attachment's mapping of
 * the same device was reused. sync: the mapping needs syncing (bounce
 * buffers or a device that does not snoop), per dma_need_sync().
 */
DECLARE_EVENT_CLASS(gpubuf_map_class,
		    TP_PROTO(struct device *dev, int dir, unsigned int nents,
			     bool shared, bool sync, int result),
		    TP_ARGS(dev, dir, nents, shared, sync, result),
		    TP_STRUCT__entry(__array(char, dev, GPUBUF_TRACE_DEV_LEN)
				     __field(int, dir)
				     __field(unsigned int, nents)
				     __field(bool, shared)
				     __field(bool, sync)
				     __field(int, result)),
		    TP_fast_assign(strscpy(__entry->dev,
					   dev ? dev_name(dev) : "-",
					   GPUBUF_TRACE_DEV_LEN);
				   __entry->dir = dir;
				   __entry->nents = nents;
				   __entry->shared = shared;
				   __entry->sync = sync;
				   __entry->result = result;),
		    TP_printk("dev=%s dir=%d nents=%u shared=%d sync=%d result=%d",
			      __entry->dev, __entry->dir, __entry->nents,
			      __entry->shared, __entry->sync, __entry->result)
);

DEFINE_EVENT(gpubuf_map_class, gpubuf_map,
	     TP_PROTO(struct device *dev, int dir, unsigned int nents,
		      bool shared, bool sync, int result),
	     TP_ARGS(dev, dir, nents, shared, sync, result)
);

DEFINE_EVENT(gpubuf_map_class, gpubuf_unmap,
	     TP_PROTO(struct device *dev, int dir, unsigned int nents,
		      bool shared, bool sync, int result),
	     TP_ARGS(dev, dir, nents, shared, sync, result)
);

/*
 * A CPU fault on the mapping: pmd when the page is a 2 MiB chunk's head at
 * a 2 MiB-aligned address, which the core then maps with one PMD entry
 * where the VMA and THP settings allow it (the event cannot see which).
 */
TRACE_EVENT(gpubuf_fault,
	    TP_PROTO(unsigned long pgoff, unsigned long address, bool user,
		     bool pmd),
	    TP_ARGS(pgoff, address, user, pmd),
	    TP_STRUCT__entry(__field(unsigned long, pgoff)
			     __field(unsigned long, address)
			     __field(bool, user)
			     __field(bool, pmd)),
	    TP_fast_assign(__entry->pgoff = pgoff;
			   __entry->address = address;
			   __entry->user = user;
			   __entry->pmd = pmd;),
	    TP_printk("pgoff=%lu address=0x%lx user=%d pmd=%d",
		      __entry->pgoff, __entry->address, __entry->user,
		      __entry->pmd)
);

/* DMA_BUF_IOCTL_SYNC: dir of the CPU access, mappings synced. */
DECLARE_EVENT_CLASS(gpubuf_sync_class,
		    TP_PROTO(u64 size, int dir, unsigned int mappings),
		    TP_ARGS(size, dir, mappings),
		    TP_STRUCT__entry(__field(u64, size)
				     __field(int, dir)
				     __field(unsigned int, mappings)),
		    TP_fast_assign(__entry->size = size;
				   __entry->dir = dir;
				   __entry->mappings = mappings;),
		    TP_printk("size=%llu dir=%d mappings=%u", __entry->size,
			      __entry->dir, __entry->mappings)
);

DEFINE_EVENT(gpubuf_sync_class, gpubuf_sync_begin,
	     TP_PROTO(u64 size, int dir, unsigned int mappings),
	     TP_ARGS(size, dir, mappings)
);

DEFINE_EVENT(gpubuf_sync_class, gpubuf_sync_end,
	     TP_PROTO(u64 size, int dir, unsigned int mappings),
	     TP_ARGS(size, dir, mappings)
);

/* The reserve: a chunk filled in, a chunk taken, chunks shrunk away. */
TRACE_EVENT(gpubuf_reserve_fill,
	    TP_PROTO(int node),
	    TP_ARGS(node),
	    TP_STRUCT__entry(__field(int, node)),
	    TP_fast_assign(__entry->node = node;),
	    TP_printk("node=%d", __entry->node)
);

TRACE_EVENT(gpubuf_reserve_take,
	    TP_PROTO(int want, int node, bool zeroed_now),
	    TP_ARGS(want, node, zeroed_now),
	    TP_STRUCT__entry(__field(int, want)
			     __field(int, node)
			     __field(bool, zeroed_now)),
	    TP_fast_assign(__entry->want = want;
			   __entry->node = node;
			   __entry->zeroed_now = zeroed_now;),
	    TP_printk("want=%d node=%d zeroed_now=%d", __entry->want,
		      __entry->node, __entry->zeroed_now)
);

TRACE_EVENT(gpubuf_reserve_shrink,
	    TP_PROTO(int node, unsigned long chunks),
	    TP_ARGS(node, chunks),
	    TP_STRUCT__entry(__field(int, node)
			     __field(unsigned long, chunks)),
	    TP_fast_assign(__entry->node = node;
			   __entry->chunks = chunks;),
	    TP_printk("node=%d chunks=%lu", __entry->node, __entry->chunks)
);

#endif /* GPUBUF_TRACE_H */

/* Outside the guard: read again by define_trace.h, from this folder. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE gpubuf_trace
#include <trace/define_trace.h>
