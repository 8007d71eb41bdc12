/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Differences between kernel versions, decided by compile probes
 * (scripts/kernel-compat-probe.sh writes gpubuf_compat_probed.h for the
 * kernel being built against), never by LINUX_VERSION_CODE: distribution
 * kernels backport.
 */
#ifndef GPUBUF_COMPAT_H
#define GPUBUF_COMPAT_H

#include <linux/dma-buf.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/page_counter.h>
#include <linux/scatterlist.h>
#include <linux/sched.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <linux/swap.h>

#include "gpubuf_compat_probed.h"

/* vm_flags became read-only behind vm_flags_set() in 6.3. */
static inline void gpubuf_vm_flags_set(struct vm_area_struct *vma,
				       vm_flags_t flags)
{
#ifdef GPUBUF_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

/* The namespace argument became a string literal in 6.13. */
#ifdef GPUBUF_HAVE_IMPORT_NS_IDENTIFIER
#define GPUBUF_IMPORT_DMA_BUF_NS() MODULE_IMPORT_NS(DMA_BUF)
#else
#define GPUBUF_IMPORT_DMA_BUF_NS() MODULE_IMPORT_NS("DMA_BUF")
#endif

/*
 * The vmap op takes a struct iosys_map since 5.18 and a struct dma_buf_map
 * from 5.11; before, it returns the address (NULL on failure).
 */
#if defined(GPUBUF_HAVE_IOSYS_MAP)
#define gpubuf_kmap iosys_map
#define gpubuf_kmap_set_vaddr iosys_map_set_vaddr
#elif defined(GPUBUF_HAVE_DMA_BUF_MAP)
#define gpubuf_kmap dma_buf_map
#define gpubuf_kmap_set_vaddr dma_buf_map_set_vaddr
#elif defined(GPUBUF_HAVE_VMAP_RETURNS_VADDR)
#define GPUBUF_VMAP_OP_RETURNS_VADDR 1
#else
#error "gpubuf: no known dma_buf_ops.vmap signature (see scripts/compat-probes)"
#endif

/*
 * A table of @nr_pages pages whose merged runs stay within @max_segment.
 * Before 5.15 the segment bound is only offered by the lower-level call;
 * its chaining arguments stay unused.
 */
static inline int gpubuf_sg_alloc_table(struct sg_table *sgt,
					struct page **pages,
					unsigned int nr_pages,
					unsigned long size,
					unsigned int max_segment, gfp_t gfp)
{
#ifdef GPUBUF_HAVE_SG_ALLOC_TABLE_FROM_PAGES_SEGMENT
	return sg_alloc_table_from_pages_segment(sgt, pages, nr_pages, 0, size,
						 max_segment, gfp);
#else
	return PTR_ERR_OR_ZERO(__sg_alloc_table_from_pages(sgt, pages, nr_pages,
							   0, size, max_segment,
							   NULL, 0, gfp));
#endif
}

/*
 * Until 5.11 a page charged to a memory cgroup (__GFP_ACCOUNT) carries the
 * Kmemcg page type, kept in the field that counts the page's mappings:
 * mapping such a page would count into the type (vm_insert_page() refused
 * typed pages with EINVAL), so a buffer allocated in any cgroup but the
 * root one could not be mapped. The type is dropped
 * while the buffer lives and put back just before its pages are freed,
 * when nothing maps them any more, because the free path uncharges by it.
 */
static inline void gpubuf_page_make_mappable(struct page *page)
{
#if defined(GPUBUF_HAVE_PAGE_KMEMCG_TYPE) && defined(CONFIG_MEMCG)
	/*
	 * What __ClearPageKmemcg() does (a set bit is a cleared type). Only a
	 * kmem charge sets mem_cgroup on a page of ours.
	 */
	if (page->mem_cgroup)
		page->page_type |= PG_kmemcg;
#endif
}

static inline void gpubuf_page_prepare_free(struct page *page)
{
#if defined(GPUBUF_HAVE_PAGE_KMEMCG_TYPE) && defined(CONFIG_MEMCG)
	/* What __SetPageKmemcg() does. */
	if (page->mem_cgroup)
		page->page_type &= ~PG_kmemcg;
#endif
}

/*
 * Record a chunk's page offset in the buffer where a page-cache folio keeps
 * its file offset: the head page's index, reached through the folio since
 * 5.16 (struct page lost the field in 6.16).
 */
static inline void gpubuf_chunk_set_index(struct page *page, pgoff_t index)
{
#ifdef GPUBUF_HAVE_FOLIO_INDEX
	page_folio(page)->index = index;
#else
	page->index = index;
#endif
}

/*
 * Whether a page carries a memory cgroup charge: page->memcg_data since
 * 5.11, page->mem_cgroup before.
 */
static inline bool gpubuf_page_charged(struct page *page)
{
#if !defined(CONFIG_MEMCG)
	return false;
#elif defined(GPUBUF_HAVE_PAGE_MEMCG_DATA)
	return READ_ONCE(page->memcg_data) != 0;
#else
	return !!READ_ONCE(page->mem_cgroup);
#endif
}

#ifdef CONFIG_MEMCG
/* A cgroup's memory.high; before 5.8 it was not in the page counter. */
static inline unsigned long gpubuf_memcg_high(struct mem_cgroup *memcg)
{
#ifdef GPUBUF_HAVE_PAGE_COUNTER_HIGH
	return READ_ONCE(memcg->memory.high);
#else
	return READ_ONCE(memcg->high);
#endif
}
#endif

typedef unsigned long (*gpubuf_shrink_fn)(struct shrinker *s,
					  struct shrink_control *sc);

/*
 * A NUMA-aware shrinker scanning one object at a time (its objects are
 * large): allocated by the core since 6.7, named since 6.0, embedded by
 * its user before. NULL when it cannot be registered.
 */
static inline struct shrinker *gpubuf_shrinker_create(const char *name,
						      gpubuf_shrink_fn count,
						      gpubuf_shrink_fn scan)
{
	struct shrinker *s;

#ifdef GPUBUF_HAVE_SHRINKER_ALLOC
	s = shrinker_alloc(SHRINKER_NUMA_AWARE, "%s", name);
	if (!s)
		return NULL;
	s->count_objects = count;
	s->scan_objects = scan;
	s->batch = 1;
	shrinker_register(s);
#else
	int ret;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return NULL;
	s->count_objects = count;
	s->scan_objects = scan;
	s->seeks = DEFAULT_SEEKS;
	s->batch = 1;
	s->flags = SHRINKER_NUMA_AWARE;
#ifdef GPUBUF_HAVE_REGISTER_SHRINKER_NAME
	ret = register_shrinker(s, "%s", name);
#else
	ret = register_shrinker(s);
#endif
	if (ret) {
		kfree(s);
		return NULL;
	}
#endif
	return s;
}

/*
 * Pages a shrinker freed, credited to the reclaim that called it, so that
 * it sees progress (the core credits slab pages itself, not ours).
 */
static inline void gpubuf_account_reclaimed(unsigned long pages)
{
#if defined(GPUBUF_HAVE_MM_ACCOUNT_RECLAIMED_PAGES)
	mm_account_reclaimed_pages(pages);
#elif defined(GPUBUF_HAVE_RECLAIM_STATE_RECLAIMED_SLAB)
	if (current->reclaim_state)
		current->reclaim_state->reclaimed_slab += pages;
#endif
}

static inline void gpubuf_shrinker_destroy(struct shrinker *s)
{
#ifdef GPUBUF_HAVE_SHRINKER_ALLOC
	shrinker_free(s);
#else
	unregister_shrinker(s);
	kfree(s);
#endif
}

#endif /* GPUBUF_COMPAT_H */
