/* SPDX-License-Identifier: MIT */
/*
 * libgpubuf: pinned, struct-page backed host buffers for GPUs.
 *
 * Conventions (every function):
 *   - Failures return a negative errno value; errno is never used to report
 *     and is left untouched. gpubuf_strerror() explains a value.
 *   - Constructors return 0 and write the new object through an out-pointer;
 *     on failure the out-pointer is not written.
 *   - A struct gpubuf_ctx is immutable after gpubuf_open() and may be used
 *     from any number of threads at once. Buffers are reference counted
 *     atomically; a struct gpubuf_pool locks internally.
 *   - Buffers do not depend on their context after creation: closing a
 *     context with buffers still alive is allowed.
 *
 * Environment:
 *   GPUBUF_BACKEND=module|memfd|auto  backend selection, see gpubuf_open(3).
 *   Read with secure_getenv(), so ignored in set-user-ID programs.
 *
 * Inline functions: only the typed element accessors below are inline, so a
 * loop over elements does not pay a library call per element. They depend
 * only on the public struct gpubuf_matrix and on gpubuf_ptr(); everything
 * touching private state is a real function behind the version script.
 *
 * DLPack: this header does not include <dlpack/dlpack.h>. It forward
 * declares the DLPack structure tags, which the real header defines with
 * the same tags, so programs not using DLPack need no DLPack installation
 * and programs using it include <dlpack/dlpack.h> themselves.
 */
#ifndef GPUBUF_H
#define GPUBUF_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include <gpubuf/version.h>	/* generated from VERSION */
#include <gpubuf/uapi.h>	/* bundled copy of <linux/gpubuf.h> */

#ifdef __cplusplus
extern "C" {
#endif

/* True when the header in use is at least version major.minor.patch. */
#define GPUBUF_VERSION_AT_LEAST(major, minor, patch)			\
	((GPUBUF_VERSION_MAJOR > (major)) ||				\
	 (GPUBUF_VERSION_MAJOR == (major) && GPUBUF_VERSION_MINOR > (minor)) || \
	 (GPUBUF_VERSION_MAJOR == (major) && GPUBUF_VERSION_MINOR == (minor) && \
	  GPUBUF_VERSION_PATCH >= (patch)))

struct gpubuf_ctx;
struct gpubuf;
struct gpubuf_pool;
struct DLManagedTensor;
struct DLManagedTensorVersioned;

/* ---- versions ---------------------------------------------------------- */

int gpubuf_version_major(void);
int gpubuf_version_minor(void);
int gpubuf_version_patch(void);
/* 1 when the running library is at least major.minor.patch, else 0. */
int gpubuf_version_at_least(int major, int minor, int patch);

/* ---- context ----------------------------------------------------------- */

enum gpubuf_backend {
	GPUBUF_BACKEND_MODULE = 1,	/* /dev/gpubuf: buffers are dma-bufs */
	GPUBUF_BACKEND_MEMFD = 2,	/* memfd + mlock: no dma-buf fd */
};

/* Fall back to the memfd backend when the module is absent. */
#define GPUBUF_OPEN_ALLOW_MEMFD		(1u << 0)
/* Use the memfd backend even if the module is present. */
#define GPUBUF_OPEN_FORCE_MEMFD		(1u << 1)
/* Ignore GPUBUF_BACKEND in the environment. */
#define GPUBUF_OPEN_IGNORE_ENV		(1u << 2)
#define GPUBUF_OPEN_VALID_FLAGS		(GPUBUF_OPEN_ALLOW_MEMFD | \
					 GPUBUF_OPEN_FORCE_MEMFD | \
					 GPUBUF_OPEN_IGNORE_ENV)

/*
 * The Container Device Interface name of /dev/gpubuf, as gpubuf-info --cdi
 * writes its spec: podman run --device GPUBUF_CDI_DEVICE ...
 */
#define GPUBUF_CDI_KIND			"gpubuf.org/gpubuf"
#define GPUBUF_CDI_DEVICE		GPUBUF_CDI_KIND "=all"

int gpubuf_open(struct gpubuf_ctx **ctx, unsigned int flags);
/* As gpubuf_open(); on failure also writes a message into msg (if len > 0). */
int gpubuf_open_err(struct gpubuf_ctx **ctx, unsigned int flags,
		    char *msg, size_t len);
void gpubuf_close(struct gpubuf_ctx *ctx);
enum gpubuf_backend gpubuf_backend(const struct gpubuf_ctx *ctx);
int gpubuf_driver_version(const struct gpubuf_ctx *ctx,
			  struct gpubuf_version *out);

enum gpubuf_attr {
	GPUBUF_ATTR_BACKEND = 1,	/* enum gpubuf_backend */
	GPUBUF_ATTR_PAGE_SIZE = 2,	/* bytes */
	GPUBUF_ATTR_DMABUF = 3,		/* 1 when buffers have a dma-buf fd */
	GPUBUF_ATTR_DRIVER_ABI = 4,	/* driver ABI, 0 on memfd backend */
	GPUBUF_ATTR_LIB_ABI = 5,	/* GPUBUF_ABI_VERSION of the library */
};
int gpubuf_query(const struct gpubuf_ctx *ctx, enum gpubuf_attr attr,
		 uint64_t *value);

const char *gpubuf_strerror(int err);

/* ---- buffers ----------------------------------------------------------- */

/*
 * Allocation options. Set size to sizeof(struct gpubuf_alloc_opts) (the
 * INIT macro does); the library accepts older (shorter, down to the end of
 * numa_node) and newer (longer, with the unknown tail zero) versions.
 */
struct gpubuf_alloc_opts {
	size_t size;
	uint64_t flags;		/* GPUBUF_ALLOC_NUMA_STRICT */
	int32_t numa_node;	/* GPUBUF_NUMA_ANY or a node number */
	uint32_t reserved0;	/* must be 0 */
	uint64_t reserved[4];	/* must be 0 */
};
#define GPUBUF_ALLOC_OPTS_INIT						\
	{ sizeof(struct gpubuf_alloc_opts), 0, GPUBUF_NUMA_ANY, 0, { 0 } }

int gpubuf_alloc(struct gpubuf_ctx *ctx, size_t size,
		 const struct gpubuf_alloc_opts *opts, struct gpubuf **buf);
int gpubuf_import(struct gpubuf_ctx *ctx, int dmabuf_fd, struct gpubuf **buf);
struct gpubuf *gpubuf_ref(struct gpubuf *buf);
void gpubuf_unref(struct gpubuf *buf);
/* Current count; for tests and debugging, stale as soon as it returns. */
unsigned int gpubuf_refcount(const struct gpubuf *buf);
void *gpubuf_ptr(const struct gpubuf *buf);
size_t gpubuf_size(const struct gpubuf *buf);
int gpubuf_fd(const struct gpubuf *buf);
int gpubuf_is_readonly(const struct gpubuf *buf);

#define GPUBUF_ACCESS_READ	(1u << 0)
#define GPUBUF_ACCESS_WRITE	(1u << 1)
#define GPUBUF_ACCESS_RW	(GPUBUF_ACCESS_READ | GPUBUF_ACCESS_WRITE)
int gpubuf_sync_begin(struct gpubuf *buf, unsigned int access);
int gpubuf_sync_end(struct gpubuf *buf, unsigned int access);

/* ---- dense matrices ---------------------------------------------------- */

enum gpubuf_dtype {
	GPUBUF_DTYPE_F16 = 1,
	GPUBUF_DTYPE_BF16,
	GPUBUF_DTYPE_F32,
	GPUBUF_DTYPE_F64,
	GPUBUF_DTYPE_I8,
	GPUBUF_DTYPE_U8,
	GPUBUF_DTYPE_I16,
	GPUBUF_DTYPE_U16,
	GPUBUF_DTYPE_I32,
	GPUBUF_DTYPE_U32,
	GPUBUF_DTYPE_I64,
	GPUBUF_DTYPE_U64,
	GPUBUF_DTYPE_COMPLEX64,		/* two f32 */
	GPUBUF_DTYPE_COMPLEX128,	/* two f64 */
};

/* Bytes per element, 0 for an unknown dtype. */
size_t gpubuf_dtype_size(enum gpubuf_dtype dtype);

enum gpubuf_layout {
	GPUBUF_ROW_MAJOR = 0,
	GPUBUF_COL_MAJOR = 1,
};

/*
 * A 2-D strided view of a buffer, a plain value. Element (r, c) lives at
 * byte offset + (r * ld + c) * size (row-major) or offset + (c * ld + r) *
 * size (col-major). A view borrows buf: it owns no reference unless it came
 * from gpubuf_matrix_alloc() or was passed to gpubuf_matrix_ref(); such a
 * matrix is given up with gpubuf_matrix_release().
 */
struct gpubuf_matrix {
	struct gpubuf *buf;
	size_t offset;		/* bytes from buffer start to element (0,0) */
	size_t rows;
	size_t cols;
	size_t ld;		/* elements between row (col) starts */
	enum gpubuf_dtype dtype;
	enum gpubuf_layout layout;
};

int gpubuf_matrix_view(struct gpubuf *buf, size_t offset,
		       enum gpubuf_dtype dtype, size_t rows, size_t cols,
		       size_t ld, enum gpubuf_layout layout,
		       struct gpubuf_matrix *out);
int gpubuf_matrix_alloc(struct gpubuf_ctx *ctx, enum gpubuf_dtype dtype,
			size_t rows, size_t cols, enum gpubuf_layout layout,
			size_t align, struct gpubuf_matrix *out);
/* The same with allocation options (a node: gpubuf_alloc_opts_near()). */
int gpubuf_matrix_alloc_opts(struct gpubuf_ctx *ctx, enum gpubuf_dtype dtype,
			     size_t rows, size_t cols,
			     enum gpubuf_layout layout, size_t align,
			     const struct gpubuf_alloc_opts *opts,
			     struct gpubuf_matrix *out);
int gpubuf_matrix_ref(const struct gpubuf_matrix *m);
void gpubuf_matrix_release(struct gpubuf_matrix *m);
int gpubuf_matrix_sub(const struct gpubuf_matrix *m, size_t row0, size_t col0,
		      size_t rows, size_t cols, struct gpubuf_matrix *out);
int gpubuf_matrix_transpose(const struct gpubuf_matrix *m,
			    struct gpubuf_matrix *out);
void *gpubuf_matrix_data(const struct gpubuf_matrix *m);
/* Address of element (r, c), NULL when out of range or m is invalid. */
void *gpubuf_matrix_elem(const struct gpubuf_matrix *m, size_t r, size_t c);
/* Element as/from double for real dtypes (f16/bf16 converted). */
int gpubuf_matrix_get(const struct gpubuf_matrix *m, size_t r, size_t c,
		      double *value);
int gpubuf_matrix_set(const struct gpubuf_matrix *m, size_t r, size_t c,
		      double value);

/*
 * Typed element pointers. Preconditions (dtype matches, r < rows, c < cols)
 * are checked with assert(), i.e. only in builds without NDEBUG.
 */
static inline void *gpubuf__matrix_at(const struct gpubuf_matrix *m,
				      size_t r, size_t c, size_t esize)
{
	size_t i = m->layout == GPUBUF_ROW_MAJOR ? r * m->ld + c
						 : c * m->ld + r;

	assert(r < m->rows && c < m->cols);
	return (char *)gpubuf_ptr(m->buf) + m->offset + i * esize;
}

#define GPUBUF__ACCESSOR(name, ctype, dt)				\
static inline ctype *gpubuf_matrix_##name(const struct gpubuf_matrix *m, \
					  size_t r, size_t c)		\
{									\
	assert(m->dtype == (dt));					\
	return (ctype *)gpubuf__matrix_at(m, r, c, sizeof(ctype));	\
}
GPUBUF__ACCESSOR(f32, float, GPUBUF_DTYPE_F32)
GPUBUF__ACCESSOR(f64, double, GPUBUF_DTYPE_F64)
GPUBUF__ACCESSOR(i8, int8_t, GPUBUF_DTYPE_I8)
GPUBUF__ACCESSOR(u8, uint8_t, GPUBUF_DTYPE_U8)
GPUBUF__ACCESSOR(i32, int32_t, GPUBUF_DTYPE_I32)
GPUBUF__ACCESSOR(i64, int64_t, GPUBUF_DTYPE_I64)
#undef GPUBUF__ACCESSOR

/* ---- sparse CSR -------------------------------------------------------- */

/*
 * Compressed sparse rows in one buffer: row_ptr has rows + 1 entries,
 * col_idx and values have nnz entries each, at byte offsets into buf.
 * Same ownership rule as struct gpubuf_matrix.
 */
struct gpubuf_csr {
	struct gpubuf *buf;
	size_t rows;
	size_t cols;
	size_t nnz;
	enum gpubuf_dtype value_dtype;
	enum gpubuf_dtype index_dtype;	/* GPUBUF_DTYPE_I32 or _I64 */
	size_t row_ptr_offset;
	size_t col_idx_offset;
	size_t values_offset;
};

/* Alignment of each array placed by gpubuf_csr_alloc(). */
#define GPUBUF_CSR_ALIGN	256

int gpubuf_csr_alloc(struct gpubuf_ctx *ctx, size_t rows, size_t cols,
		     size_t nnz, enum gpubuf_dtype value_dtype,
		     enum gpubuf_dtype index_dtype, struct gpubuf_csr *out);
int gpubuf_csr_view(struct gpubuf *buf, size_t rows, size_t cols, size_t nnz,
		    enum gpubuf_dtype value_dtype,
		    enum gpubuf_dtype index_dtype, size_t row_ptr_offset,
		    size_t col_idx_offset, size_t values_offset,
		    struct gpubuf_csr *out);
void gpubuf_csr_release(struct gpubuf_csr *csr);
void *gpubuf_csr_row_ptr(const struct gpubuf_csr *csr);
void *gpubuf_csr_col_idx(const struct gpubuf_csr *csr);
void *gpubuf_csr_values(const struct gpubuf_csr *csr);

/* Also require column indices strictly increasing within each row. */
#define GPUBUF_CSR_CHECK_SORTED		(1u << 0)
#define GPUBUF_CSR_VALID_FLAGS		(GPUBUF_CSR_CHECK_SORTED)
int gpubuf_csr_validate(const struct gpubuf_csr *csr, unsigned int flags,
			size_t *bad_row);

/* ---- DLPack ------------------------------------------------------------ */

int gpubuf_matrix_to_dlpack(const struct gpubuf_matrix *m, int device_type,
			    int device_id, struct DLManagedTensor **out);
int gpubuf_matrix_to_dlpack_versioned(const struct gpubuf_matrix *m,
				      int device_type, int device_id,
				      struct DLManagedTensorVersioned **out);

/* ---- pool -------------------------------------------------------------- */

/*
 * Pool options, versioned by size like struct gpubuf_alloc_opts. The
 * allocation options are referenced, not embedded, so that each structure
 * can grow without moving the other's fields; they are copied during
 * gpubuf_pool_create() and need not outlive the call.
 *
 * This layout is symbol version GPUBUF_0.2 of gpubuf_pool_create(); a
 * program linked against GPUBUF_0.1 (alloc embedded by value) keeps that
 * layout.
 */
struct gpubuf_pool_opts {
	size_t size;			/* sizeof(struct gpubuf_pool_opts) */
	size_t max_cached_bytes;	/* bound on idle bytes; 0 = 64 MiB */
	size_t max_class_bytes;		/* largest pooled size; 0 = 64 MiB */
	const struct gpubuf_alloc_opts *alloc;	/* new buffers; NULL = default */
	uint64_t reserved[4];		/* must be 0 */
};
#define GPUBUF_POOL_OPTS_INIT						\
	{ sizeof(struct gpubuf_pool_opts), 0, 0, NULL, { 0 } }

struct gpubuf_pool_stats {
	uint64_t hits;			/* gets served from the cache */
	uint64_t misses;		/* gets that allocated */
	uint64_t puts;			/* buffers returned */
	uint64_t drops;			/* returned buffers freed, not cached */
	uint64_t cached_bytes;		/* idle bytes now */
	uint64_t cached_buffers;	/* idle buffers now */
	uint64_t other_node_hits;	/* hits from another node's list */
	uint64_t node_lists;		/* nodes with free lists now */
	uint64_t reserved[2];		/* zero */
};

int gpubuf_pool_create(struct gpubuf_ctx *ctx,
		       const struct gpubuf_pool_opts *opts,
		       struct gpubuf_pool **pool);
void gpubuf_pool_destroy(struct gpubuf_pool *pool);
int gpubuf_pool_get(struct gpubuf_pool *pool, size_t size,
		    struct gpubuf **buf);
/*
 * A buffer for NUMA node (or GPUBUF_NUMA_ANY), from that node's idle
 * buffers only, or with GPUBUF_POOL_ANY_NODE from another node's when it
 * has none; else allocated there. gpubuf_pool_get() is this for the node
 * of the pool's allocation options. See gpubuf_pool_create(3).
 */
#define GPUBUF_POOL_ANY_NODE	(1u << 0)
int gpubuf_pool_get_node(struct gpubuf_pool *pool, size_t size, int node,
			 unsigned int flags, struct gpubuf **buf);
int gpubuf_pool_put(struct gpubuf_pool *pool, struct gpubuf *buf);
void gpubuf_pool_trim(struct gpubuf_pool *pool);
void gpubuf_pool_stats(struct gpubuf_pool *pool,
		       struct gpubuf_pool_stats *stats);

/* ---- near a device ------------------------------------------------------ */

/*
 * The NUMA node a device's buffers belong on, from sysfs. device is one of
 *   "pci:DDDD:BB:DD.F" (or "pci:BB:DD.F")  a PCI function
 *   "cuda:N"     CUDA device N (cuDeviceGetPCIBusId)
 *   "hsa:N"      HSA GPU agent N, gpubuf_hsa_agents() order
 *   "vulkan:N"   Vulkan device N, gpubuf_vk_open() order (opens it)
 *   "drm:PATH"   a DRM device file, or /proc/self/fd/FD for an open one
 *   "rdma:NAME"  an ibverbs device (ibv_get_device_name())
 * *node is the device's numa_node; a node without memory gives the nearest
 * node with memory (the distance table; the lowest of equals). A device
 * with no affinity (numa_node -1, no PCI device behind it: lavapipe, vgem)
 * gives GPUBUF_NUMA_ANY, the allocating thread's own policy. -EINVAL for a
 * string of no such form, -ENODEV for no such device or runtime,
 * -EOPNOTSUPP for a runtime the library was built without;
 * gpubuf_last_error() says why. See gpubuf_device_node(3).
 */
int gpubuf_device_node(const char *device, int *node);
/* opts->numa_node = that node; nothing else in opts changes. */
int gpubuf_alloc_opts_near(struct gpubuf_alloc_opts *opts, const char *device);

/* ---- files ------------------------------------------------------------- */

/*
 * Reads from a file straight into a buffer's pages and writes back from
 * them: O_DIRECT for the part where offset, length and memory line up on
 * the file's alignment, buffered I/O for an unaligned head or tail, many
 * requests in flight through io_uring, pread(2)/pwrite(2) where io_uring
 * is missing or refused. See gpubuf_read_file(3).
 */
struct gpubuf_io_opts {
	size_t size;			/* sizeof(struct gpubuf_io_opts) */
	unsigned int flags;		/* GPUBUF_IO_* */
	unsigned int queue_depth;	/* requests in flight; 0 = 16 */
	size_t request_bytes;		/* bytes per request, 4 KiB units; 0 = 1 MiB */
	uint64_t reserved[4];		/* must be 0 */
};
#define GPUBUF_IO_OPTS_INIT						\
	{ sizeof(struct gpubuf_io_opts), 0, 0, 0, { 0 } }
#define GPUBUF_IO_BUFFERED	(1u << 0)	/* never O_DIRECT */
#define GPUBUF_IO_NO_URING	(1u << 1)	/* pread/pwrite, one at a time */

enum gpubuf_io_method {
	GPUBUF_IO_PREAD = 1,		/* pread(2)/pwrite(2) */
	GPUBUF_IO_URING,		/* io_uring, plain reads or writes */
	GPUBUF_IO_URING_FIXED,		/* io_uring, the buffer registered */
};

struct gpubuf_io_result {
	uint64_t bytes;			/* [0, bytes) of the range is in place */
	uint64_t direct_bytes;		/* bytes moved with O_DIRECT */
	uint32_t method;		/* enum gpubuf_io_method */
	uint32_t align;			/* O_DIRECT's alignment; 0: not used */
	uint64_t reserved[2];		/* zero */
};

int gpubuf_read_file(struct gpubuf *buf, size_t buf_offset, int fd,
		     uint64_t file_offset, size_t len,
		     const struct gpubuf_io_opts *opts,
		     struct gpubuf_io_result *res);
int gpubuf_write_file(struct gpubuf *buf, size_t buf_offset, int fd,
		      uint64_t file_offset, size_t len,
		      const struct gpubuf_io_opts *opts,
		      struct gpubuf_io_result *res);
/* The matrix's elements, packed in its layout in the file (ld ignored). */
int gpubuf_matrix_read_file(const struct gpubuf_matrix *m, int fd,
			    uint64_t file_offset,
			    const struct gpubuf_io_opts *opts,
			    struct gpubuf_io_result *res);
int gpubuf_matrix_write_file(const struct gpubuf_matrix *m, int fd,
			     uint64_t file_offset,
			     const struct gpubuf_io_opts *opts,
			     struct gpubuf_io_result *res);

/* ---- errors in detail -------------------------------------------------- */

/*
 * Text of the last failure in the calling thread that had more to say than
 * its errno (a GPU runtime's error name, a library that could not be
 * loaded), or "" if there was none. Per thread; valid until this thread's
 * next libgpubuf call.
 */
const char *gpubuf_last_error(void);

/* ---- CUDA (driver API, loaded with dlopen) ----------------------------- */

/*
 * Register a buffer's whole mapping with CUDA (cuMemHostRegister: page
 * locked, PORTABLE | DEVICEMAP) and give the device pointer through which
 * kernels on device reach it in place. Counted per buffer and device; the
 * last gpubuf_unref() of a buffer undoes every registration still held.
 * Errors include -ENODEV (no NVIDIA driver or no such device) and
 * -EOPNOTSUPP (library built without CUDA, or the device cannot map host
 * memory); gpubuf_last_error() then holds the CUDA error name.
 *
 * READ_ONLY is a promise the library keeps (views and DLPack tensors are
 * marked read-only; a writable request fails with -EBUSY while it
 * stands); a writable mapping is still registered writable, so it works
 * on hosts without read-only registration. A buffer mapped read-only
 * (gpubuf_is_readonly()) is registered with the driver's READ_ONLY flag,
 * and -EOPNOTSUPP where the device cannot do that.
 */
#define GPUBUF_CUDA_REGISTER_READ_ONLY	(1u << 0)	/* GPU only reads */
#define GPUBUF_CUDA_REGISTER_VALID_FLAGS (GPUBUF_CUDA_REGISTER_READ_ONLY)

int gpubuf_cuda_device_count(int *count);
int gpubuf_cuda_register(struct gpubuf *buf, int device, unsigned int flags,
			 uint64_t *devptr);
int gpubuf_cuda_unregister(struct gpubuf *buf, int device);

/*
 * The first CUDA call of the library on a device retains that device's
 * primary context for the rest of the process, so unregistering the last
 * buffer does not destroy it (and the next registration re-create it).
 * gpubuf_cuda_device_release() gives that retain back and unloads the
 * library's kernels there; registrations keep their own retains, and the
 * library's next call on the device takes it again. Not while another
 * thread uses the device through libgpubuf. 0 also when nothing was
 * held; -ENODEV for no driver or no such device.
 */
int gpubuf_cuda_device_release(int device);

/*
 * A matrix in a CUDA device's address space, a plain value like struct
 * gpubuf_matrix: element (r, c) is at devptr + (r * ld + c) * size
 * (row-major) or devptr + (c * ld + r) * size (col-major). It can describe
 * registered gpubuf memory (gpubuf_cuda_matrix_view()) or any other device
 * memory the caller fills in, e.g. from cuMemAlloc().
 */
struct gpubuf_cuda_matrix {
	uint64_t devptr;	/* CUdeviceptr of element (0,0) */
	size_t rows;
	size_t cols;
	size_t ld;		/* elements between row (col) starts */
	enum gpubuf_dtype dtype;
	enum gpubuf_layout layout;
	int device;		/* CUDA device ordinal */
	unsigned int flags;	/* GPUBUF_CUDA_MATRIX_* */
};

/* The GPU may only read it: refused as an output with -EROFS. */
#define GPUBUF_CUDA_MATRIX_READ_ONLY	(1u << 0)

int gpubuf_cuda_matrix_view(const struct gpubuf_matrix *m, int device,
			    struct gpubuf_cuda_matrix *out);

/*
 * y = alpha * A x + beta * y and C = alpha * A B + beta * C on the GPU, for
 * GPUBUF_DTYPE_F32 and _F64 views of either layout and any ld. Vectors are
 * views with one column (or one row). stream is a CUstream of the
 * device's primary context, or NULL to run synchronously.
 */
int gpubuf_cuda_gemv(double alpha, const struct gpubuf_cuda_matrix *a,
		     const struct gpubuf_cuda_matrix *x, double beta,
		     const struct gpubuf_cuda_matrix *y, void *stream);
int gpubuf_cuda_gemm(double alpha, const struct gpubuf_cuda_matrix *a,
		     const struct gpubuf_cuda_matrix *b, double beta,
		     const struct gpubuf_cuda_matrix *c, void *stream);

/* ---- DRM (libdrm, loaded with dlopen) ---------------------------------- */

/*
 * Import a module-backend buffer's dma-buf into the DRM file behind drm_fd
 * (drmPrimeFDToHandle) and give its GEM handle. Counted per buffer and DRM
 * file: a second import into the same file returns the same handle, and
 * only the last gpubuf_drm_release() closes it. The library keeps a dup()
 * of drm_fd while a handle is held; the last gpubuf_unref() of the buffer
 * closes every handle still held. -EOPNOTSUPP for memfd buffers (no
 * dma-buf) and builds without libdrm's headers, -ENODEV without libdrm.so.2.
 */
int gpubuf_drm_import(struct gpubuf *buf, int drm_fd, uint32_t *gem_handle);
int gpubuf_drm_release(struct gpubuf *buf, int drm_fd);

/*
 * amdgpu only (libdrm_amdgpu.so.1): import the dma-buf as an amdgpu buffer
 * object and map it at a GPU virtual address of the device's VM, counted
 * like gpubuf_drm_import(). -ENODEV when drm_fd is not an amdgpu device.
 */
int gpubuf_amdgpu_map(struct gpubuf *buf, int drm_fd, uint64_t *gpu_va);
int gpubuf_amdgpu_unmap(struct gpubuf *buf, int drm_fd);

/* ---- HSA (ROCm runtime, loaded with dlopen) ----------------------------- */

/*
 * The GPU agents' hsa_agent_t handles in the runtime's enumeration order
 * (the index is the DLPack kDLROCM device_id): up to max of them into
 * agents, and how many there are into *count.
 */
int gpubuf_hsa_agents(uint64_t *agents, int max, int *count);

/*
 * Lock a buffer's whole mapping for GPU agents (hsa_amd_memory_lock_to_pool
 * on the CPU's fine-grained system pool) and give the address through
 * which those agents reach it in place. agents holds hsa_agent_t handles;
 * NULL and 0 mean every GPU agent. Counted per buffer: a further lock for
 * a subset of the locked agents counts and returns the same pointer, one
 * for another agent is -EBUSY. The last gpubuf_unref() drops the lock.
 * Errors include -ENODEV (no ROCm runtime, no GPU agent, not a GPU agent)
 * and -EOPNOTSUPP (library built without HSA); gpubuf_last_error() then
 * says why. Never run on AMD hardware: see gpubuf_hsa_lock(3).
 */
int gpubuf_hsa_lock(struct gpubuf *buf, const uint64_t *agents, int n_agents,
		    void **agent_ptr);
int gpubuf_hsa_unlock(struct gpubuf *buf);

/*
 * A matrix in an HSA GPU agent's address space, the twin of struct
 * gpubuf_cuda_matrix: element (r, c) is at agent_ptr + (r * ld + c) * size
 * (row-major) or agent_ptr + (c * ld + r) * size (col-major). It can
 * describe a locked gpubuf buffer (gpubuf_hsa_matrix_view()) or any other
 * memory the agent reaches, e.g. from hsa_amd_memory_pool_allocate().
 */
struct gpubuf_hsa_matrix {
	uint64_t agent_ptr;	/* address of element (0,0) for the agent */
	size_t rows;
	size_t cols;
	size_t ld;		/* elements between row (col) starts */
	enum gpubuf_dtype dtype;
	enum gpubuf_layout layout;
	int agent;		/* GPU agent index (gpubuf_hsa_agents order) */
	unsigned int flags;	/* GPUBUF_HSA_MATRIX_* */
};

/* The GPU may only read it: refused as an output with -EROFS. */
#define GPUBUF_HSA_MATRIX_READ_ONLY	(1u << 0)

int gpubuf_hsa_matrix_view(const struct gpubuf_matrix *m, int agent,
			   struct gpubuf_hsa_matrix *out);

/*
 * gpubuf_cuda_gemv()/gemm() on an HSA GPU agent, through an AQL queue.
 * signal is 0 to run synchronously, or an hsa_signal_t handle the caller
 * owns, which the dispatch's completion decrements by one. When the
 * runtime stops the agent's queue on an error, the calls waiting on it
 * (else the next call on that agent) return -EIO; the call after that
 * makes a new queue. See gpubuf_hsa_gemm(3).
 */
int gpubuf_hsa_gemv(double alpha, const struct gpubuf_hsa_matrix *a,
		    const struct gpubuf_hsa_matrix *x, double beta,
		    const struct gpubuf_hsa_matrix *y, uint64_t signal);
int gpubuf_hsa_gemm(double alpha, const struct gpubuf_hsa_matrix *a,
		    const struct gpubuf_hsa_matrix *b, double beta,
		    const struct gpubuf_hsa_matrix *c, uint64_t signal);

/* ---- Vulkan (libvulkan.so.1, loaded with dlopen) ------------------------ */

/*
 * A Vulkan device the library computes on: its own instance and device
 * (gpubuf_vk_open), or an application's (gpubuf_vk_wrap). Buffers are
 * imported into it in place, as a dma-buf where the driver takes one
 * (VK_EXT_external_memory_dma_buf), else as host memory
 * (VK_EXT_external_memory_host); kernels reach them through buffer device
 * addresses (Vulkan 1.2). Thread-safe; calls on one device are serialised.
 */
struct gpubuf_vk;

/* gpubuf_vk_open() flags */
#define GPUBUF_VK_OPEN_VALIDATION (1u << 0)	/* VK_LAYER_KHRONOS_validation */
#define GPUBUF_VK_OPEN_VALID_FLAGS (GPUBUF_VK_OPEN_VALIDATION)

/*
 * Create an instance and a device on physical device index (enumeration
 * order) with one compute queue. -ENODEV: no libvulkan.so.1, no such
 * device, or one without Vulkan 1.2, bufferDeviceAddress or shaderInt64;
 * -EOPNOTSUPP: library built without Vulkan headers; gpubuf_last_error()
 * says which.
 */
int gpubuf_vk_open(int index, unsigned int flags, struct gpubuf_vk **vk);

/*
 * An application's device, for the library to import into and compute
 * on. The device must have been created with Vulkan 1.2's
 * bufferDeviceAddress and shaderInt64 enabled, and features names what
 * else was enabled (GPUBUF_VK_FEATURE_*). The library never destroys the
 * application's objects; gpubuf_vk_close() and the release of every
 * import must come before vkDestroyDevice().
 */
struct gpubuf_vk_device {
	size_t size;			/* sizeof(struct gpubuf_vk_device) */
	void *get_instance_proc_addr;	/* PFN_vkGetInstanceProcAddr, or NULL */
	void *instance;			/* VkInstance */
	void *physical_device;		/* VkPhysicalDevice */
	void *device;			/* VkDevice */
	void *queue;			/* VkQueue of a compute-capable family */
	uint32_t queue_family;
	uint32_t features;		/* GPUBUF_VK_FEATURE_* enabled */
	uint64_t reserved[4];		/* zero */
};
#define GPUBUF_VK_FEATURE_FLOAT64	(1u << 0)	/* shaderFloat64 */
#define GPUBUF_VK_FEATURE_HOST_IMPORT	(1u << 1)	/* VK_EXT_external_memory_host */
#define GPUBUF_VK_FEATURE_DMA_BUF_IMPORT (1u << 2)	/* ..._fd and ..._dma_buf */
#define GPUBUF_VK_FEATURE_VALID	(GPUBUF_VK_FEATURE_FLOAT64 |		\
				 GPUBUF_VK_FEATURE_HOST_IMPORT |	\
				 GPUBUF_VK_FEATURE_DMA_BUF_IMPORT)

int gpubuf_vk_wrap(const struct gpubuf_vk_device *dev, struct gpubuf_vk **vk);
/* Drops the caller's reference; imports still standing keep the device. */
void gpubuf_vk_close(struct gpubuf_vk *vk);

struct gpubuf_vk_info {
	char name[256];			/* VkPhysicalDeviceProperties.deviceName */
	uint32_t device_type;		/* VkPhysicalDeviceType (4: CPU) */
	uint32_t api_version;
	uint32_t vendor_id;
	uint32_t features;		/* GPUBUF_VK_FEATURE_* usable */
	uint64_t host_import_align;	/* minImportedHostPointerAlignment */
	uint64_t validation_errors;	/* validation layer errors so far */
	/* VK_EXT_pci_bus_info, where pci_valid (not lavapipe: no PCI) */
	uint32_t pci_domain;
	uint8_t pci_bus, pci_device, pci_function, pci_valid;
	uint64_t reserved[3];
};
int gpubuf_vk_info(struct gpubuf_vk *vk, struct gpubuf_vk_info *info);

/*
 * buf's memory in vk's device, in place: a VkBuffer over the whole
 * buffer bound to imported VkDeviceMemory, for the application's own
 * shaders too. Counted per (buffer, device); the last gpubuf_unref() of a
 * buffer undoes what is left. -EOPNOTSUPP when the device can import it
 * neither way (gpubuf_last_error() says why), -EINVAL for a host pointer
 * or size the device cannot import (minImportedHostPointerAlignment).
 */
struct gpubuf_vk_memory {
	uint64_t buffer;		/* VkBuffer */
	uint64_t memory;		/* VkDeviceMemory */
	uint64_t address;		/* the VkBuffer's device address */
	uint64_t size;
	uint32_t import;		/* GPUBUF_VK_IMPORT_* */
	uint32_t memory_type;		/* memoryTypeIndex */
	uint64_t reserved[2];
};
#define GPUBUF_VK_IMPORT_DMA_BUF	1
#define GPUBUF_VK_IMPORT_HOST_POINTER	2

int gpubuf_vk_import(struct gpubuf *buf, struct gpubuf_vk *vk,
		     struct gpubuf_vk_memory *out);
int gpubuf_vk_release(struct gpubuf *buf, struct gpubuf_vk *vk);

/*
 * A matrix view in vk's device: element (0,0) at a buffer device address,
 * from gpubuf_vk_matrix_view() or filled in by the caller for other
 * memory of that device.
 */
struct gpubuf_vk_matrix {
	uint64_t address;	/* VkDeviceAddress of element (0,0) */
	size_t rows;
	size_t cols;
	size_t ld;		/* elements between row (col) starts */
	enum gpubuf_dtype dtype;
	enum gpubuf_layout layout;
	struct gpubuf_vk *vk;
	unsigned int flags;	/* GPUBUF_VK_MATRIX_* */
};

/* The GPU may only read it: refused as an output with -EROFS. */
#define GPUBUF_VK_MATRIX_READ_ONLY	(1u << 0)

/* The view of an imported buffer; -ENXIO if m's buffer is not imported. */
int gpubuf_vk_matrix_view(const struct gpubuf_matrix *m, struct gpubuf_vk *vk,
			  struct gpubuf_vk_matrix *out);

/*
 * gpubuf_cuda_gemv()/gemm() as SPIR-V compute shaders on vk's device,
 * synchronous: the results are in memory when the call returns. f64 needs
 * shaderFloat64 (-EOPNOTSUPP without). Addresses are trusted like CUDA
 * device pointers: a view may also name other memory of vk's device
 * (VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT), and what it names must stay
 * imported or allocated until the call returns. See gpubuf_vk_gemm(3).
 */
int gpubuf_vk_gemv(double alpha, const struct gpubuf_vk_matrix *a,
		   const struct gpubuf_vk_matrix *x, double beta,
		   const struct gpubuf_vk_matrix *y);
int gpubuf_vk_gemm(double alpha, const struct gpubuf_vk_matrix *a,
		   const struct gpubuf_vk_matrix *b, double beta,
		   const struct gpubuf_vk_matrix *c);

#ifdef __cplusplus
}
#endif

#endif /* GPUBUF_H */
