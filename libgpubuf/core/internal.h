/* SPDX-License-Identifier: MIT */
/*
 * libgpubuf's core, private to the library: never installed, never
 * included by gpubuf.h. The core owns contexts, buffers, their mappings,
 * matrix views, pools and error reporting, and knows no consumer: each
 * consumer (a GPU runtime or device-file interface, in its own folder
 * beside core/) attaches what it keeps for a buffer as a hold (below), and
 * the core releases whatever is attached when the last reference goes.
 */
#ifndef GPUBUF_INTERNAL_H
#define GPUBUF_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpubuf.h"

/* Everything else is hidden by -fvisibility=hidden and the version script. */
#define GPUBUF_EXPORT __attribute__((visibility("default")))

/*
 * Bind an exported implementation to one version node of libgpubuf.map:
 * "name@@NODE" is the default that new programs link against (a static
 * link resolves plain "name" to it too), "name@NODE" keeps an older
 * behaviour for programs linked before it changed. The map lists such a
 * name in every node that has a version of it.
 */
#if defined(__has_attribute)
#if __has_attribute(symver)
/* GCC 10+: the attribute survives -flto, a top-level .symver does not. */
#define GPUBUF_SYMVER(impl, versioned)					\
	extern __typeof__(impl) impl __attribute__((symver(versioned)))
#endif
#endif
#ifndef GPUBUF_SYMVER
#define GPUBUF_SYMVER(impl, versioned)					\
	__asm__(".symver " #impl ", " versioned)
#endif

_Static_assert(sizeof(struct gpubuf_version) == GPUBUF_VERSION_SIZE_VER0,
	       "uapi struct gpubuf_version size");
_Static_assert(sizeof(struct gpubuf_alloc) == GPUBUF_ALLOC_SIZE_VER0,
	       "uapi struct gpubuf_alloc size");
_Static_assert(sizeof(struct gpubuf_info) == GPUBUF_INFO_SIZE_VER0,
	       "uapi struct gpubuf_info size");

static inline void gpubuf_restore_errno(int *saved)
{
	errno = *saved;
}

/*
 * errno is not how libgpubuf reports errors, and a caller must not find it
 * changed by the system calls we make: put this first in such functions.
 */
#define GPUBUF_KEEP_ERRNO						\
	int gpubuf_saved_errno_ __attribute__((unused,			\
		cleanup(gpubuf_restore_errno)))				\
		= errno

/* Immutable after gpubuf_open(), hence shareable between threads unlocked. */
struct gpubuf_ctx {
	enum gpubuf_backend backend;
	int fd;				/* /dev/gpubuf, -1 on memfd backend */
	size_t page_size;
	struct gpubuf_version drv;	/* zero on memfd backend */
};

/*
 * mapping.c: map size bytes of fd from offset 0, MAP_SHARED, at an address
 * aligned for PMD mappings when size allows (errno and MAP_FAILED like
 * mmap); and fault a mapping in, returning 0 or -ENOMEM/-EINTR/-EFAULT.
 */
void *gpubuf_map_placed(size_t size, int prot, int fd, size_t page_size);
int gpubuf_map_populate(void *ptr, size_t size, bool writable);

/*
 * mapping.c: whether a GPU driver can pin buf's pages (pin_user_pages()
 * or hmm_range_fault() underneath): 0, or -EOPNOTSUPP with the reason as
 * the last error, naming what, when an imported buffer's exporter maps it
 * VM_PFNMAP or VM_IO (remap_pfn_range: the dma-heap system heap, many
 * graphics drivers). Buffers gpubuf allocated always can; 0 too when
 * /proc cannot tell.
 */
struct gpubuf;
int gpubuf_buf_check_pinnable(struct gpubuf *buf, const char *what);

#define GPUBUF_BUF_READONLY	(1u << 0)	/* mapped PROT_READ only */
#define GPUBUF_BUF_IMPORTED	(1u << 1)	/* from gpubuf_import() */

struct gpubuf;
struct gpubuf_hold;

/*
 * What a consumer keeps attached to a buffer: a registration with a GPU
 * driver, a lock, an import into a device file. The consumer embeds a
 * struct gpubuf_hold in its own record and finds the record again by its
 * ops (gpubuf_hold_next(), gpubuf_container_of()). Holds are kept under
 * buf->lock.
 */
struct gpubuf_hold_ops {
	/*
	 * Undo the hold and free its record, from the last gpubuf_unref():
	 * the hold is already off the buffer's list and nobody else can
	 * reach the buffer, so no lock is taken. Must not fail: what cannot
	 * be undone (the runtime gone, a fork() child's inherited record) is
	 * forgotten.
	 */
	void (*release)(struct gpubuf *buf, struct gpubuf_hold *hold);
};

struct gpubuf_hold {
	const struct gpubuf_hold_ops *ops;
	struct gpubuf_hold *next;
};

#define gpubuf_container_of(ptr, type, member)				\
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* core/hold.c; the caller holds buf->lock. */
void gpubuf_hold_add(struct gpubuf *buf, struct gpubuf_hold *hold,
		     const struct gpubuf_hold_ops *ops);
/* Unlink @hold if it is attached; the record stays the caller's. */
void gpubuf_hold_del(struct gpubuf *buf, struct gpubuf_hold *hold);
/* The next hold with @ops after @prev (NULL: the first), or NULL. */
struct gpubuf_hold *gpubuf_hold_next(const struct gpubuf *buf,
				     const struct gpubuf_hold *prev,
				     const struct gpubuf_hold_ops *ops);
/* Whether anything is attached; unlocked at one reference (pool.c). */
bool gpubuf_held(const struct gpubuf *buf);
/* Release every hold, newest first (last gpubuf_unref()). */
void gpubuf_hold_release_all(struct gpubuf *buf);

struct gpubuf {
	atomic_uint refs;
	enum gpubuf_backend backend;
	unsigned int flags;		/* GPUBUF_BUF_* */
	int fd;				/* dma-buf fd, -1 for memfd buffers */
	void *ptr;
	size_t size;			/* mapped bytes, page multiple */
	uint64_t pool_id;		/* gpubuf_pool.id that made it, or 0 */
	int pool_node;			/* the node its pool allocated it for */
	struct gpubuf *next;		/* pool free list link, pool lock */
	pthread_mutex_t lock;		/* the holds */
	struct gpubuf_hold *holds;	/* newest first */
	atomic_int pinnable;		/* gpubuf_buf_check_pinnable(), 0: unknown */
};

/* Round x up to a power-of-two a; false on overflow. */
static inline bool gpubuf_align_up(size_t x, size_t a, size_t *out)
{
	size_t t;

	if (__builtin_add_overflow(x, a - 1, &t))
		return false;
	*out = t & ~(a - 1);
	return true;
}

static inline bool gpubuf_is_pow2(size_t x)
{
	return x && !(x & (x - 1));
}

int gpubuf_matrix_check(const struct gpubuf_matrix *m);

/* gpubuf_last_error() text for the calling thread (error.c). */
void gpubuf_error_clear(void);
__attribute__((format(printf, 1, 2)))
void gpubuf_error_set(const char *fmt, ...);
/* dlerror()'s text, or a stand-in when it has none (it can have none). */
const char *gpubuf_dlerror(void);
int gpubuf_alloc_opts_get(const struct gpubuf_alloc_opts *in,
			  struct gpubuf_alloc_opts *o);
int gpubuf_alloc_opts_parse(const void *in, size_t in_size,
			    struct gpubuf_alloc_opts *o);
/*
 * Largest size field accepted in an option structure. Today's are 48 and
 * 64 bytes and grow by 8-byte fields; 512 leaves room for years of growth
 * while a garbage size reads at most this much.
 */
#define GPUBUF_EXT_SIZE_MAX	512
_Static_assert(sizeof(struct gpubuf_alloc_opts) <= GPUBUF_EXT_SIZE_MAX &&
	       sizeof(struct gpubuf_pool_opts) <= GPUBUF_EXT_SIZE_MAX,
	       "an option structure outgrew GPUBUF_EXT_SIZE_MAX");
int gpubuf_ext_copy(void *dst, size_t dst_size, const void *src,
		    size_t src_size, size_t min_size);

#endif /* GPUBUF_INTERNAL_H */
