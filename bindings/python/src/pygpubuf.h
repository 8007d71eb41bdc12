/* SPDX-License-Identifier: MIT */
/*
 * gpubuf._gpubuf: the CPython extension over libgpubuf. Shared declarations
 * of its types (one file each: context.c, buffer.c, matrix.c, device.c),
 * the DLPack capsules (dlpack.c) and the errors and dtypes (module.c).
 *
 * Ownership: every Buffer, Matrix, exported tensor and device view holds
 * its own libgpubuf buffer reference, so any of them may outlive the
 * others and the Context that made them.
 */
#ifndef PYGPUBUF_H
#define PYGPUBUF_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <gpubuf.h>

/* Python 3.9 (bullseye) lacks these 3.10 conveniences. */
#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *pgb_new_ref(PyObject *obj)
{
	Py_INCREF(obj);
	return obj;
}
#define Py_NewRef(obj) pgb_new_ref((PyObject *)(obj))

static inline int PyModule_AddObjectRef(PyObject *mod, const char *name,
					PyObject *value)
{
	Py_INCREF(value);
	if (PyModule_AddObject(mod, name, value) < 0) {
		Py_DECREF(value);
		return -1;
	}
	return 0;
}
#endif

/* ---- errors and dtypes (module.c) -------------------------------------- */

extern PyObject *pgb_Error;		/* gpubuf.Error(OSError) */
extern PyObject *pgb_NoDeviceError;	/* ENODEV, ENOENT */
extern PyObject *pgb_UnsupportedError;	/* EOPNOTSUPP */
extern PyObject *pgb_OutOfMemoryError;	/* ENOMEM, also a MemoryError */

/*
 * Raise the gpubuf.Error subclass for err (a negative errno) with what and
 * gpubuf_strerror(err); with_detail adds gpubuf_last_error(), which only
 * the GPU layers clear and fill. Returns NULL for "return pgb_raise(...)".
 */
PyObject *pgb_raise(int err, const char *what, int with_detail);
/* Raise type(errnum, message from fmt): an OSError subclass. */
PyObject *pgb_raise_text(PyObject *type, int errnum, const char *fmt, ...);

struct pgb_dtype_info {
	const char *name;		/* "float32" */
	enum gpubuf_dtype dtype;
	const char *format;		/* struct module / PEP 3118, NULL: none */
	const char *typestr;		/* __array_interface__, NULL: none */
};

const struct pgb_dtype_info *pgb_dtype_info(enum gpubuf_dtype dtype);
/* A str name, a numpy.dtype, a numpy scalar type or a torch.dtype. */
int pgb_dtype_from_object(PyObject *obj, enum gpubuf_dtype *out);
/* "C" or "F" (case-insensitive); NULL or None is "C". */
int pgb_order_from_object(PyObject *obj, enum gpubuf_layout *out);
/* "r", "w" or "rw" to GPUBUF_ACCESS_*. */
int pgb_access_from_str(const char *mode, unsigned int *out);

/* ---- Context (context.c) ------------------------------------------------ */

typedef struct {
	PyObject_HEAD
	struct gpubuf_ctx *ctx;		/* NULL once closed and unused */
	int closed;
	int opening;			/* __init__ is in gpubuf_open() */
	int dmabuf;			/* buffers have a dma-buf fd */
	Py_ssize_t users;		/* Pools and GIL-free calls using ctx */
} pgb_Context;

extern PyTypeObject pgb_ContextType;
/*
 * ctx of an open Context, else NULL with ValueError set, counted as in use
 * until pgb_context_put(): close() from another thread, while a call runs
 * without the GIL, then leaves gpubuf_close() to the last user.
 */
struct gpubuf_ctx *pgb_context_hold(pgb_Context *self);
void pgb_context_put(pgb_Context *self);

/* ---- Buffer, CpuAccess, Pool (buffer.c) --------------------------------- */

typedef struct {
	PyObject_HEAD
	struct gpubuf *buf;		/* one reference; NULL after put() */
	int dmabuf;
	Py_ssize_t exports;		/* live buffer-protocol views */
} pgb_Buffer;

typedef struct {
	PyObject_HEAD
	pgb_Context *context;		/* strong, held: the pool borrows its ctx */
	struct gpubuf_pool *pool;	/* NULL once destroyed */
	int closed;			/* close() asked; no new calls */
	Py_ssize_t busy;		/* get() calls running without the GIL */
} pgb_Pool;

extern PyTypeObject pgb_BufferType;
extern PyTypeObject pgb_CpuAccessType;
extern PyTypeObject pgb_PoolType;

/* A new Buffer owning the caller's reference to buf (taken over). */
PyObject *pgb_buffer_new(struct gpubuf *buf, int dmabuf);
/* A CpuAccess context manager for buf (takes its own reference). */
PyObject *pgb_cpu_access_new(struct gpubuf *buf, const char *mode);
PyObject *pgb_pool_new(pgb_Context *context, Py_ssize_t max_cached,
		       Py_ssize_t max_class,
		       const struct gpubuf_alloc_opts *alloc);
/* near=None or a device string into opts (context.c); -1: raised. */
int pgb_near_opts(PyObject *near_obj, struct gpubuf_alloc_opts *opts);

/* ---- Matrix (matrix.c) --------------------------------------------------- */

typedef struct {
	PyObject_HEAD
	struct gpubuf_matrix m;		/* owns one buffer reference */
	int dmabuf;
	Py_ssize_t shape[2];		/* buffer protocol: element counts */
	Py_ssize_t strides[2];		/* buffer protocol: bytes */
} pgb_Matrix;

extern PyTypeObject pgb_MatrixType;

/* A new Matrix for m, taking one more reference to m->buf. */
PyObject *pgb_matrix_new(const struct gpubuf_matrix *m, int dmabuf);

/* ---- file I/O (fileio.c) ------------------------------------------------- */

PyObject *pgb_buffer_io(struct gpubuf *buf, int write, PyObject *args,
			PyObject *kwargs);
PyObject *pgb_matrix_io(const struct gpubuf_matrix *m, int write,
			PyObject *args, PyObject *kwargs);

/* ---- DLPack (dlpack.c) --------------------------------------------------- */

/* kDLCPU, kDLCUDA and kDLROCM as dlpack.h numbers them. */
enum { PGB_DL_CPU = 1, PGB_DL_CUDA = 2, PGB_DL_ROCM = 10 };

/*
 * __dlpack__(stream=, max_version=, dl_device=, copy=) of a view of
 * device_type/device_id: checks the keywords against what gpubuf can give,
 * then returns a "dltensor" or "dltensor_versioned" capsule. read_only: the
 * consumer may only read (a read-only GPU registration), as for a read-only
 * buffer: no classic capsule, the flag on a versioned one.
 */
PyObject *pgb_dlpack_export(const struct gpubuf_matrix *m, int device_type,
			    int device_id, int read_only, PyObject *args,
			    PyObject *kwargs);
/* 1 when this build makes versioned (DLPack >= 1.0) capsules. */
int pgb_dlpack_versioned_available(void);

/* ---- CUDA and HSA views (device.c) ------------------------------------- */

extern PyTypeObject pgb_DeviceMatrixType;

PyObject *pgb_device_matrix_new(pgb_Matrix *host, int device_type,
				int device, int read_only);

#endif /* PYGPUBUF_H */
