// SPDX-License-Identifier: MIT
/*
 * Buffer pool: power-of-two size classes from the page size up to
 * max_class_bytes, one LIFO free list per class and NUMA node, and a bound
 * on the bytes held idle. A buffer goes back to the list of the node it
 * was allocated for, and a request for a node is served from that node's
 * list only, unless the caller allows another's (GPUBUF_POOL_ANY_NODE):
 * a pinned caching allocator that hands one socket's blocks to another
 * socket's threads loses what placing them won. Allocation happens outside
 * the lock so a slow GPUBUF_IOC_ALLOC does not serialise other threads'
 * cache hits.
 *
 * Locking: pool->lock protects nodes[], their free lists, the gpubuf.next
 * links of cached buffers and st. It is a leaf lock; nothing else is taken
 * under it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#define GPUBUF_POOL_DEFAULT_BYTES	(64u << 20)
#define GPUBUF_POOL_CLASSES		(sizeof(size_t) * 8)

static unsigned int gpubuf_log2(size_t pow2)
{
	return (unsigned int)__builtin_ctzl(pow2);
}

/* The idle buffers allocated for one node (or GPUBUF_NUMA_ANY). */
struct gpubuf_pool_node {
	int node;
	struct gpubuf *free[GPUBUF_POOL_CLASSES];	/* by log2(size) */
};

struct gpubuf_pool {
	uint64_t id;			/* unique per process, never reused */
	struct gpubuf_ctx *ctx;		/* borrowed; must outlive the pool */
	struct gpubuf_alloc_opts alloc;
	size_t max_cached;
	size_t max_class;
	pthread_mutex_t lock;
	struct gpubuf_pool_node **nodes;	/* as first asked for */
	size_t nr_nodes;
	struct gpubuf_pool_stats st;
};

/* node's lists, made on first use; NULL when out of memory. Under lock. */
static struct gpubuf_pool_node *gpubuf_pool_node(struct gpubuf_pool *p,
						 int node, bool make)
{
	struct gpubuf_pool_node *n, **grown;

	for (size_t i = 0; i < p->nr_nodes; i++)
		if (p->nodes[i]->node == node)
			return p->nodes[i];
	if (!make)
		return NULL;
	n = calloc(1, sizeof(*n));
	grown = n ? realloc(p->nodes, (p->nr_nodes + 1) * sizeof(*grown)) :
		NULL;
	if (!grown) {
		free(n);
		return NULL;
	}
	n->node = node;
	grown[p->nr_nodes++] = n;
	p->nodes = grown;
	p->st.node_lists = p->nr_nodes;
	return n;
}

/* The newest idle buffer of class cls in n's list, taken off it. */
static struct gpubuf *gpubuf_pool_take(struct gpubuf_pool *p,
				       struct gpubuf_pool_node *n, size_t cls)
{
	struct gpubuf *buf = n ? n->free[gpubuf_log2(cls)] : NULL;

	if (buf) {
		n->free[gpubuf_log2(cls)] = buf->next;
		buf->next = NULL;
		p->st.cached_bytes -= buf->size;
		p->st.cached_buffers--;
	}
	return buf;
}

/* Class size for a request, 0 when it is above the largest class. */
static size_t gpubuf_pool_class(const struct gpubuf_pool *p, size_t size)
{
	size_t c = p->ctx->page_size;

	while (c < size) {
		if (c > p->max_class / 2)
			return 0;
		c <<= 1;
	}
	return c <= p->max_class ? c : 0;
}

static atomic_uint_fast64_t gpubuf_pool_ids = 1;	/* 0: no pool */

/* Everything both versions of gpubuf_pool_create() agree on. */
static int gpubuf_pool_new(struct gpubuf_ctx *ctx, size_t max_cached,
			   size_t max_class,
			   const struct gpubuf_alloc_opts *alloc,
			   struct gpubuf_pool **poolp)
{
	struct gpubuf_pool *p;
	int err;

	if (!max_cached)
		max_cached = GPUBUF_POOL_DEFAULT_BYTES;
	if (!max_class)
		max_class = GPUBUF_POOL_DEFAULT_BYTES;
	if (max_class < ctx->page_size)
		return -EINVAL;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	err = -pthread_mutex_init(&p->lock, NULL);
	if (err) {
		free(p);
		return err;
	}
	/*
	 * Buffers are tagged with an id, not the pool's address: a new pool
	 * at a destroyed one's address must not take that pool's buffers.
	 */
	p->id = atomic_fetch_add_explicit(&gpubuf_pool_ids, 1,
					  memory_order_relaxed);
	p->ctx = ctx;
	p->alloc = *alloc;
	p->max_cached = max_cached;
	p->max_class = max_class;
	*poolp = p;
	return 0;
}

int gpubuf_pool_create_v0_2(struct gpubuf_ctx *ctx,
			    const struct gpubuf_pool_opts *opts,
			    struct gpubuf_pool **poolp);
GPUBUF_SYMVER(gpubuf_pool_create_v0_2, "gpubuf_pool_create@@GPUBUF_0.2");
GPUBUF_EXPORT int gpubuf_pool_create_v0_2(struct gpubuf_ctx *ctx,
					  const struct gpubuf_pool_opts *opts,
					  struct gpubuf_pool **poolp)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_pool_opts o = GPUBUF_POOL_OPTS_INIT;
	struct gpubuf_alloc_opts alloc;
	int err;

	if (!ctx || !poolp)
		return -EINVAL;
	if (opts) {
		err = gpubuf_ext_copy(&o, sizeof(o), opts, opts->size,
				      offsetof(struct gpubuf_pool_opts,
					       reserved));
		if (err)
			return err;
	}
	if (o.reserved[0] || o.reserved[1] || o.reserved[2] || o.reserved[3])
		return -EINVAL;
	/* A separate, separately versioned structure: its own size rules. */
	err = gpubuf_alloc_opts_get(o.alloc, &alloc);
	if (err)
		return err;
	return gpubuf_pool_new(ctx, o.max_cached_bytes, o.max_class_bytes,
			       &alloc, poolp);
}

/*
 * GPUBUF_0.1 layout, frozen here: the allocation options embedded by
 * value, so their size can never exceed what 0.1 embedded.
 */
struct gpubuf_alloc_opts_v0_1 {
	size_t size;
	uint64_t flags;
	int32_t numa_node;
	uint32_t reserved0;
	uint64_t reserved[4];
};

struct gpubuf_pool_opts_v0_1 {
	size_t size;
	size_t max_cached_bytes;
	size_t max_class_bytes;
	struct gpubuf_alloc_opts_v0_1 alloc;	/* size 0 = defaults */
	uint64_t reserved[4];
};

int gpubuf_pool_create_v0_1(struct gpubuf_ctx *ctx,
			    const struct gpubuf_pool_opts_v0_1 *opts,
			    struct gpubuf_pool **poolp);
GPUBUF_SYMVER(gpubuf_pool_create_v0_1, "gpubuf_pool_create@GPUBUF_0.1");
GPUBUF_EXPORT int gpubuf_pool_create_v0_1(
	struct gpubuf_ctx *ctx, const struct gpubuf_pool_opts_v0_1 *opts,
	struct gpubuf_pool **poolp)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_pool_opts_v0_1 o = {
		.size = sizeof(o), .alloc.numa_node = GPUBUF_NUMA_ANY,
	};
	struct gpubuf_alloc_opts alloc;
	int err;

	if (!ctx || !poolp)
		return -EINVAL;
	if (opts) {
		err = gpubuf_ext_copy(&o, sizeof(o), opts, opts->size,
				      offsetof(struct gpubuf_pool_opts_v0_1,
					       alloc));
		if (err)
			return err;
	}
	if (o.reserved[0] || o.reserved[1] || o.reserved[2] || o.reserved[3])
		return -EINVAL;
	/*
	 * The embedded copy is all there is: a larger claimed size would
	 * read past it (into reserved[] and beyond the caller's struct).
	 */
	if (o.alloc.size > sizeof(o.alloc))
		return -E2BIG;
	if (o.alloc.size)
		err = gpubuf_alloc_opts_parse(&o.alloc, o.alloc.size, &alloc);
	else
		err = gpubuf_alloc_opts_get(NULL, &alloc);
	if (err)
		return err;
	return gpubuf_pool_new(ctx, o.max_cached_bytes, o.max_class_bytes,
			       &alloc, poolp);
}

GPUBUF_EXPORT int gpubuf_pool_get_node(struct gpubuf_pool *p, size_t size,
				       int node, unsigned int flags,
				       struct gpubuf **bufp)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_alloc_opts alloc;
	struct gpubuf *buf = NULL;
	size_t cls;
	int err;

	if (!p || !bufp || !size || node < GPUBUF_NUMA_ANY ||
	    (flags & ~GPUBUF_POOL_ANY_NODE))
		return -EINVAL;
	cls = gpubuf_pool_class(p, size);
	pthread_mutex_lock(&p->lock);
	if (cls) {
		buf = gpubuf_pool_take(p, gpubuf_pool_node(p, node, false), cls);
		for (size_t i = 0; !buf && (flags & GPUBUF_POOL_ANY_NODE) &&
		     i < p->nr_nodes; i++) {
			buf = gpubuf_pool_take(p, p->nodes[i], cls);
			if (buf)
				p->st.other_node_hits++;
		}
	}
	if (buf)
		p->st.hits++;
	else
		p->st.misses++;
	pthread_mutex_unlock(&p->lock);
	if (buf) {
		*bufp = buf;
		return 0;
	}
	/*
	 * The pool's options on the node asked for; a strict pool asked for
	 * no node in particular places like any allocation does.
	 */
	alloc = p->alloc;
	alloc.numa_node = node;
	if (node == GPUBUF_NUMA_ANY)
		alloc.flags &= ~(uint64_t)GPUBUF_ALLOC_NUMA_STRICT;
	/* Above the largest class: an ordinary allocation, never cached. */
	err = gpubuf_alloc(p->ctx, cls ? cls : size, &alloc, &buf);
	if (err)
		return err;
	buf->pool_id = p->id;
	buf->pool_node = node;
	*bufp = buf;
	return 0;
}

GPUBUF_EXPORT int gpubuf_pool_get(struct gpubuf_pool *p, size_t size,
				  struct gpubuf **bufp)
{
	if (!p)
		return -EINVAL;
	return gpubuf_pool_get_node(p, size, p->alloc.numa_node, 0, bufp);
}

/*
 * Takes over the caller's reference. Only a buffer nobody else references
 * is cached: a tensor's consumer or a second holder may still be using it.
 * Only this pool's own buffers are accepted at all: one from another pool,
 * context or gpubuf_alloc() has other allocation options, maybe another
 * backend, and a later gpubuf_pool_get() would hand it out as ours.
 */
int gpubuf_pool_put_v0_2(struct gpubuf_pool *p, struct gpubuf *buf);
GPUBUF_SYMVER(gpubuf_pool_put_v0_2, "gpubuf_pool_put@@GPUBUF_0.2");
GPUBUF_EXPORT int gpubuf_pool_put_v0_2(struct gpubuf_pool *p,
				       struct gpubuf *buf)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_pool_node *n;
	bool keep;

	if (!p || !buf)
		return -EINVAL;
	if (buf->pool_id != p->id)
		return -EXDEV;		/* still the caller's */
	/*
	 * A buffer a consumer still holds (a registration, a lock, a device
	 * file's handle) is not cached: the next owner would inherit its
	 * counts and flags. At one reference nobody else can be attaching
	 * anything, so the list is read unlocked.
	 */
	keep = gpubuf_refcount(buf) == 1 && !gpubuf_held(buf) &&
	       gpubuf_pool_class(p, buf->size) == buf->size;
	pthread_mutex_lock(&p->lock);
	p->st.puts++;
	n = keep && p->max_cached - p->st.cached_bytes >= buf->size ?
	    gpubuf_pool_node(p, buf->pool_node, true) : NULL;
	if (n) {
		buf->next = n->free[gpubuf_log2(buf->size)];
		n->free[gpubuf_log2(buf->size)] = buf;
		p->st.cached_bytes += buf->size;
		p->st.cached_buffers++;
	} else {
		keep = false;
		p->st.drops++;
	}
	pthread_mutex_unlock(&p->lock);
	if (!keep)
		gpubuf_unref(buf);
	return 0;
}

/*
 * GPUBUF_0.1 promised to take over every buffer's reference. Programs
 * linked then still have that promise kept; a foreign buffer is dropped,
 * never cached.
 */
int gpubuf_pool_put_v0_1(struct gpubuf_pool *p, struct gpubuf *buf);
GPUBUF_SYMVER(gpubuf_pool_put_v0_1, "gpubuf_pool_put@GPUBUF_0.1");
GPUBUF_EXPORT int gpubuf_pool_put_v0_1(struct gpubuf_pool *p,
				       struct gpubuf *buf)
{
	GPUBUF_KEEP_ERRNO;
	int err = gpubuf_pool_put_v0_2(p, buf);

	if (err != -EXDEV)
		return err;
	pthread_mutex_lock(&p->lock);
	p->st.puts++;
	p->st.drops++;
	pthread_mutex_unlock(&p->lock);
	gpubuf_unref(buf);
	return 0;
}

GPUBUF_EXPORT void gpubuf_pool_trim(struct gpubuf_pool *p)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf *idle = NULL, *b, *next;

	if (!p)
		return;
	/*
	 * Every list onto one chain, then munmap outside the lock. The
	 * lists, empty now, go too: a program that asked for many nodes in
	 * turn does not keep one per node it ever named.
	 */
	pthread_mutex_lock(&p->lock);
	for (size_t n = 0; n < p->nr_nodes; n++) {
		for (size_t i = 0; i < GPUBUF_POOL_CLASSES; i++) {
			for (b = p->nodes[n]->free[i]; b; b = next) {
				next = b->next;
				b->next = idle;
				idle = b;
			}
		}
		free(p->nodes[n]);
	}
	free(p->nodes);
	p->nodes = NULL;
	p->nr_nodes = 0;
	p->st.node_lists = 0;
	p->st.cached_bytes = 0;
	p->st.cached_buffers = 0;
	pthread_mutex_unlock(&p->lock);
	for (b = idle; b; b = next) {
		next = b->next;
		b->next = NULL;
		gpubuf_unref(b);
	}
}

GPUBUF_EXPORT void gpubuf_pool_destroy(struct gpubuf_pool *p)
{
	GPUBUF_KEEP_ERRNO;
	if (!p)
		return;
	gpubuf_pool_trim(p);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

GPUBUF_EXPORT void gpubuf_pool_stats(struct gpubuf_pool *p,
				     struct gpubuf_pool_stats *st)
{
	if (!p || !st)
		return;
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	pthread_mutex_unlock(&p->lock);
}
