// SPDX-License-Identifier: MIT
/*
 * gpubuf.Buffer (one libgpubuf buffer: bytes through the buffer protocol,
 * matrix views of it), gpubuf.CpuAccess (DMA_BUF_IOCTL_SYNC brackets) and
 * gpubuf.Pool.
 */
#include <errno.h>
#include <string.h>

#include "pygpubuf.h"

/* ---- Buffer --------------------------------------------------------------- */

PyObject *pgb_buffer_new(struct gpubuf *buf, int dmabuf)
{
	pgb_Buffer *self = PyObject_New(pgb_Buffer, &pgb_BufferType);

	if (!self) {
		gpubuf_unref(buf);
		return NULL;
	}
	self->buf = buf;
	self->dmabuf = dmabuf;
	self->exports = 0;
	return (PyObject *)self;
}

static struct gpubuf *pgb_buffer_get(pgb_Buffer *self)
{
	if (!self->buf)
		PyErr_SetString(PyExc_ValueError,
				"gpubuf: the buffer was released or returned to its pool");
	return self->buf;
}

static void pgb_buffer_dealloc(pgb_Buffer *self)
{
	gpubuf_unref(self->buf);	/* NULL-safe */
	PyObject_Free(self);
}

static int pgb_buffer_getbuffer(pgb_Buffer *self, Py_buffer *view, int flags)
{
	struct gpubuf *buf = pgb_buffer_get(self);

	if (!buf)
		return -1;
	if (PyBuffer_FillInfo(view, (PyObject *)self, gpubuf_ptr(buf),
			      (Py_ssize_t)gpubuf_size(buf),
			      gpubuf_is_readonly(buf), flags))
		return -1;
	self->exports++;
	return 0;
}

static void pgb_buffer_releasebuffer(pgb_Buffer *self, Py_buffer *view)
{
	(void)view;
	self->exports--;
}

static PyBufferProcs pgb_buffer_as_buffer = {
	.bf_getbuffer = (getbufferproc)pgb_buffer_getbuffer,
	.bf_releasebuffer = (releasebufferproc)pgb_buffer_releasebuffer,
};

static PyObject *pgb_buffer_matrix(pgb_Buffer *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = { "dtype", "rows", "cols", "ld", "order",
				  "offset", NULL };
	PyObject *dtype_obj, *ld_obj = Py_None, *order_obj = NULL, *ret;
	struct gpubuf *buf = pgb_buffer_get(self);
	Py_ssize_t rows, cols, offset = 0, ld;
	enum gpubuf_layout layout;
	enum gpubuf_dtype dtype;
	struct gpubuf_matrix m;
	int err;

	if (!buf)
		return NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Onn|OOn:matrix", kwlist,
					 &dtype_obj, &rows, &cols, &ld_obj,
					 &order_obj, &offset) ||
	    pgb_dtype_from_object(dtype_obj, &dtype) ||
	    pgb_order_from_object(order_obj, &layout))
		return NULL;
	if (ld_obj == Py_None) {
		/* Packed; at least 1, which libgpubuf asks of empty views too. */
		ld = layout == GPUBUF_ROW_MAJOR ? cols : rows;
		if (ld < 1)
			ld = 1;
	} else {
		ld = PyNumber_AsSsize_t(ld_obj, PyExc_OverflowError);
		if (ld == -1 && PyErr_Occurred())
			return NULL;
	}
	if (rows < 0 || cols < 0 || ld < 0 || offset < 0) {
		PyErr_SetString(PyExc_ValueError,
				"gpubuf: rows, cols, ld and offset must not be negative");
		return NULL;
	}
	err = gpubuf_matrix_view(buf, (size_t)offset, dtype, (size_t)rows,
				 (size_t)cols, (size_t)ld, layout, &m);
	if (err)
		return pgb_raise(err, "gpubuf_matrix_view", 0);
	ret = pgb_matrix_new(&m, self->dmabuf);	/* takes its own reference */
	return ret;
}

static PyObject *pgb_buffer_cpu_access(pgb_Buffer *self, PyObject *args)
{
	struct gpubuf *buf = pgb_buffer_get(self);
	const char *mode = "rw";

	if (!buf || !PyArg_ParseTuple(args, "|s:cpu_access", &mode))
		return NULL;
	return pgb_cpu_access_new(buf, mode);
}

static PyObject *pgb_buffer_read_file(pgb_Buffer *self, PyObject *args,
				      PyObject *kwargs)
{
	struct gpubuf *buf = pgb_buffer_get(self);

	return buf ? pgb_buffer_io(buf, 0, args, kwargs) : NULL;
}

static PyObject *pgb_buffer_write_file(pgb_Buffer *self, PyObject *args,
				       PyObject *kwargs)
{
	struct gpubuf *buf = pgb_buffer_get(self);

	return buf ? pgb_buffer_io(buf, 1, args, kwargs) : NULL;
}

static PyObject *pgb_buffer_release(pgb_Buffer *self, PyObject *unused)
{
	(void)unused;
	if (self->exports) {
		PyErr_SetString(PyExc_BufferError,
				"gpubuf: the buffer is still exported through the buffer protocol");
		return NULL;
	}
	gpubuf_unref(self->buf);
	self->buf = NULL;
	Py_RETURN_NONE;
}

static PyObject *pgb_buffer_enter(pgb_Buffer *self, PyObject *unused)
{
	(void)unused;
	if (!pgb_buffer_get(self))
		return NULL;
	return Py_NewRef(self);
}

static PyObject *pgb_buffer_exit(pgb_Buffer *self, PyObject *args)
{
	(void)args;
	return pgb_buffer_release(self, NULL);
}

static PyObject *pgb_buffer_get_nbytes(pgb_Buffer *self, void *closure)
{
	struct gpubuf *buf = pgb_buffer_get(self);

	(void)closure;
	return buf ? PyLong_FromSize_t(gpubuf_size(buf)) : NULL;
}

static PyObject *pgb_buffer_get_fd(pgb_Buffer *self, void *closure)
{
	struct gpubuf *buf = pgb_buffer_get(self);

	(void)closure;
	if (!buf)
		return NULL;
	if (!self->dmabuf)
		Py_RETURN_NONE;
	return PyLong_FromLong(gpubuf_fd(buf));
}

static PyObject *pgb_buffer_get_readonly(pgb_Buffer *self, void *closure)
{
	struct gpubuf *buf = pgb_buffer_get(self);

	(void)closure;
	return buf ? PyBool_FromLong(gpubuf_is_readonly(buf)) : NULL;
}

static PyObject *pgb_buffer_get_address(pgb_Buffer *self, void *closure)
{
	struct gpubuf *buf = pgb_buffer_get(self);

	(void)closure;
	return buf ? PyLong_FromVoidPtr(gpubuf_ptr(buf)) : NULL;
}

static PyObject *pgb_buffer_get_refcount(pgb_Buffer *self, void *closure)
{
	struct gpubuf *buf = pgb_buffer_get(self);

	(void)closure;
	return buf ? PyLong_FromUnsignedLong(gpubuf_refcount(buf)) : NULL;
}

static PyObject *pgb_buffer_repr(pgb_Buffer *self)
{
	if (!self->buf)
		return PyUnicode_FromString("<gpubuf.Buffer released>");
	return PyUnicode_FromFormat("<gpubuf.Buffer nbytes=%zu%s%s>",
				    gpubuf_size(self->buf),
				    self->dmabuf ? " dma-buf" : " memfd",
				    gpubuf_is_readonly(self->buf) ? " read-only" : "");
}

static PyMethodDef pgb_buffer_methods[] = {
	{ "matrix", (PyCFunction)(void (*)(void))pgb_buffer_matrix,
	  METH_VARARGS | METH_KEYWORDS,
	  "matrix(dtype, rows, cols, ld=None, order='C', offset=0) -> Matrix\n\n"
	  "A view of the buffer: element (r, c) at byte offset +\n"
	  "(r * ld + c) * itemsize ('C') or offset + (c * ld + r) * itemsize\n"
	  "('F'). ld None packs rows (columns). Raises gpubuf.Error: EINVAL\n"
	  "for a bad dtype or ld, ERANGE when the view leaves the buffer." },
	{ "cpu_access", (PyCFunction)pgb_buffer_cpu_access, METH_VARARGS,
	  "cpu_access(mode='rw') -> CpuAccess\n\n"
	  "A context manager bracketing CPU access with DMA_BUF_IOCTL_SYNC\n"
	  "(gpubuf_sync_begin/end); mode is 'r', 'w' or 'rw'." },
	{ "read_file", (PyCFunction)(void (*)(void))pgb_buffer_read_file,
	  METH_VARARGS | METH_KEYWORDS,
	  "read_file(file, file_offset=0, nbytes=None, offset=0, *, direct=True,\n"
	  "          uring=True, queue_depth=0, request_bytes=0) -> dict\n\n"
	  "Read nbytes of file (a path, a descriptor or an object with fileno())\n"
	  "from file_offset into the buffer at offset, with O_DIRECT where\n"
	  "aligned and io_uring (gpubuf_read_file(3)); nbytes None: the rest of\n"
	  "the file. The GIL is released. Returns bytes, direct_bytes, method\n"
	  "('io_uring-fixed', 'io_uring' or 'pread') and align. Raises\n"
	  "gpubuf.Error with .bytes_done, the prefix in place (ENODATA: the\n"
	  "file ended first)." },
	{ "write_file", (PyCFunction)(void (*)(void))pgb_buffer_write_file,
	  METH_VARARGS | METH_KEYWORDS,
	  "write_file(file, file_offset=0, nbytes=None, offset=0, *, direct=True,\n"
	  "           uring=True, queue_depth=0, request_bytes=0) -> dict\n\n"
	  "Write nbytes of the buffer from offset to file (a path is created)\n"
	  "at file_offset; nbytes None: the rest of the buffer. As read_file." },
	{ "release", (PyCFunction)pgb_buffer_release, METH_NOARGS,
	  "release()\n\nDrop this object's reference now. Matrices, tensors and\n"
	  "views made from it keep their own. BufferError while a\n"
	  "memoryview of it is alive." },
	{ "__enter__", (PyCFunction)pgb_buffer_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)pgb_buffer_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef pgb_buffer_getset[] = {
	{ "nbytes", (getter)pgb_buffer_get_nbytes, NULL, "Size in bytes (whole pages).", NULL },
	{ "fd", (getter)pgb_buffer_get_fd, NULL,
	  "The dma-buf file descriptor (owned by the buffer: dup it to keep it),\n"
	  "None on the memfd backend.", NULL },
	{ "readonly", (getter)pgb_buffer_get_readonly, NULL,
	  "True for an imported dma-buf mapped read-only.", NULL },
	{ "address", (getter)pgb_buffer_get_address, NULL,
	  "Address of the CPU mapping.", NULL },
	{ "refcount", (getter)pgb_buffer_get_refcount, NULL,
	  "libgpubuf's reference count of the buffer (for tests).", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject pgb_BufferType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "gpubuf.Buffer",
	.tp_doc = "A pinned gpubuf buffer; made by Context.buffer(),\n"
		  "Context.import_fd() and Pool.get(). Supports the buffer\n"
		  "protocol as bytes (memoryview(b), numpy.frombuffer(b)).",
	.tp_basicsize = sizeof(pgb_Buffer),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)pgb_buffer_dealloc,
	.tp_repr = (reprfunc)pgb_buffer_repr,
	.tp_as_buffer = &pgb_buffer_as_buffer,
	.tp_methods = pgb_buffer_methods,
	.tp_getset = pgb_buffer_getset,
};

/* ---- CpuAccess ------------------------------------------------------------ */

typedef struct {
	PyObject_HEAD
	struct gpubuf *buf;	/* one reference */
	unsigned int access;
	int active;
} pgb_CpuAccess;

PyObject *pgb_cpu_access_new(struct gpubuf *buf, const char *mode)
{
	pgb_CpuAccess *self;
	unsigned int access;

	if (pgb_access_from_str(mode, &access))
		return NULL;
	self = PyObject_New(pgb_CpuAccess, &pgb_CpuAccessType);
	if (!self)
		return NULL;
	self->buf = gpubuf_ref(buf);
	self->access = access;
	self->active = 0;
	return (PyObject *)self;
}

static void pgb_cpu_access_dealloc(pgb_CpuAccess *self)
{
	/* Left without __exit__ (a generator dropped mid-way): end it. */
	if (self->active)
		gpubuf_sync_end(self->buf, self->access);
	gpubuf_unref(self->buf);
	PyObject_Free(self);
}

static PyObject *pgb_cpu_access_enter(pgb_CpuAccess *self, PyObject *unused)
{
	int err;

	(void)unused;
	if (self->active) {
		PyErr_SetString(PyExc_RuntimeError, "gpubuf: cpu_access is already entered");
		return NULL;
	}
	self->active = 1;	/* claimed before the GIL goes: one enter only */
	Py_BEGIN_ALLOW_THREADS
	err = gpubuf_sync_begin(self->buf, self->access);
	Py_END_ALLOW_THREADS
	if (err) {
		self->active = 0;
		return pgb_raise(err, "gpubuf_sync_begin", 0);
	}
	return Py_NewRef(self);
}

static PyObject *pgb_cpu_access_exit(pgb_CpuAccess *self, PyObject *args)
{
	int err;

	(void)args;
	if (!self->active)
		Py_RETURN_FALSE;
	self->active = 0;
	Py_BEGIN_ALLOW_THREADS
	err = gpubuf_sync_end(self->buf, self->access);
	Py_END_ALLOW_THREADS
	if (err)
		return pgb_raise(err, "gpubuf_sync_end", 0);
	Py_RETURN_FALSE;
}

static PyMethodDef pgb_cpu_access_methods[] = {
	{ "__enter__", (PyCFunction)pgb_cpu_access_enter, METH_NOARGS,
	  "gpubuf_sync_begin(): DMA_BUF_SYNC_START." },
	{ "__exit__", (PyCFunction)pgb_cpu_access_exit, METH_VARARGS,
	  "gpubuf_sync_end(): DMA_BUF_SYNC_END." },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pgb_CpuAccessType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "gpubuf.CpuAccess",
	.tp_doc = "with m.cpu_access('rw'): ... -- CPU access bracketed by\n"
		  "DMA_BUF_IOCTL_SYNC start and end (no-ops on memfd buffers).",
	.tp_basicsize = sizeof(pgb_CpuAccess),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)pgb_cpu_access_dealloc,
	.tp_methods = pgb_cpu_access_methods,
};

/* ---- Pool ------------------------------------------------------------------ */

PyObject *pgb_pool_new(pgb_Context *context, Py_ssize_t max_cached,
		       Py_ssize_t max_class,
		       const struct gpubuf_alloc_opts *alloc)
{
	struct gpubuf_pool_opts opts = GPUBUF_POOL_OPTS_INIT;
	struct gpubuf_ctx *ctx;
	pgb_Pool *self;
	int err;

	opts.max_cached_bytes = (size_t)max_cached;
	opts.max_class_bytes = (size_t)max_class;
	opts.alloc = alloc;
	ctx = pgb_context_hold(context);	/* until the pool is destroyed */
	if (!ctx)
		return NULL;
	self = PyObject_New(pgb_Pool, &pgb_PoolType);
	if (!self) {
		pgb_context_put(context);
		return NULL;
	}
	self->pool = NULL;
	self->closed = 0;
	self->busy = 0;
	self->context = (pgb_Context *)Py_NewRef(context);
	err = gpubuf_pool_create(ctx, &opts, &self->pool);
	if (err) {
		Py_DECREF(self);
		return pgb_raise(err, "gpubuf_pool_create", 0);
	}
	return (PyObject *)self;
}

static struct gpubuf_pool *pgb_pool_get_pool(pgb_Pool *self)
{
	if (self->closed || !self->pool) {
		PyErr_SetString(PyExc_ValueError, "gpubuf: the pool is closed");
		return NULL;
	}
	return self->pool;
}

/* Destroy the pool and let go of the context, once no get() is running. */
static void pgb_pool_finish(pgb_Pool *self)
{
	if (self->busy)
		return;
	if (self->pool) {
		gpubuf_pool_destroy(self->pool);
		self->pool = NULL;
	}
	if (self->context) {
		pgb_context_put(self->context);
		Py_CLEAR(self->context);
	}
}

static void pgb_pool_dealloc(pgb_Pool *self)
{
	pgb_pool_finish(self);	/* busy is 0: a running get() holds self */
	PyObject_Free(self);
}

static PyObject *pgb_pool_get(pgb_Pool *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = { "nbytes", "node", "any_node", NULL };
	struct gpubuf_pool *pool = pgb_pool_get_pool(self);
	PyObject *node_obj = NULL;
	int dmabuf, err, any_node = 0;
	struct gpubuf *buf;
	Py_ssize_t nbytes;
	long node = 0;

	if (!pool || !PyArg_ParseTupleAndKeywords(args, kwargs, "n|$Op:get", kwlist,
						  &nbytes, &node_obj, &any_node))
		return NULL;
	if (nbytes < 0) {
		PyErr_SetString(PyExc_ValueError, "gpubuf: nbytes must not be negative");
		return NULL;
	}
	/* node=None: any node's (GPUBUF_NUMA_ANY) list. */
	if (node_obj && node_obj != Py_None) {
		node = PyLong_AsLong(node_obj);
		if (node == -1 && PyErr_Occurred())
			return NULL;
		if (node < 0 || node > INT32_MAX) {
			PyErr_SetString(PyExc_ValueError, "gpubuf: node must be a node number or None");
			return NULL;
		}
	}
	dmabuf = self->context->dmabuf;
	self->busy++;
	Py_BEGIN_ALLOW_THREADS
	if (node_obj)
		err = gpubuf_pool_get_node(pool, (size_t)nbytes,
					   node_obj == Py_None ? GPUBUF_NUMA_ANY : (int)node,
					   any_node ? GPUBUF_POOL_ANY_NODE : 0, &buf);
	else if (any_node)
		err = -EINVAL;	/* any_node without a node: nothing to widen */
	else
		err = gpubuf_pool_get(pool, (size_t)nbytes, &buf);
	Py_END_ALLOW_THREADS
	self->busy--;
	if (self->closed)
		pgb_pool_finish(self);	/* close() came meanwhile */
	if (err)
		return pgb_raise(err, "gpubuf_pool_get", 0);
	return pgb_buffer_new(buf, dmabuf);
}

static PyObject *pgb_pool_put(pgb_Pool *self, PyObject *arg)
{
	struct gpubuf_pool *pool = pgb_pool_get_pool(self);
	pgb_Buffer *b = (pgb_Buffer *)arg;
	int err;

	if (!pool)
		return NULL;
	if (!PyObject_TypeCheck(arg, &pgb_BufferType)) {
		PyErr_SetString(PyExc_TypeError, "gpubuf: Pool.put() takes a gpubuf.Buffer");
		return NULL;
	}
	if (!pgb_buffer_get(b))
		return NULL;
	if (b->exports) {
		PyErr_SetString(PyExc_BufferError,
				"gpubuf: the buffer is still exported through the buffer protocol");
		return NULL;
	}
	err = gpubuf_pool_put(pool, b->buf);
	if (err)
		return pgb_raise(err, "gpubuf_pool_put", 0);	/* still b's */
	b->buf = NULL;
	Py_RETURN_NONE;
}

static PyObject *pgb_pool_trim(pgb_Pool *self, PyObject *unused)
{
	struct gpubuf_pool *pool = pgb_pool_get_pool(self);

	(void)unused;
	if (!pool)
		return NULL;
	gpubuf_pool_trim(pool);
	Py_RETURN_NONE;
}

static PyObject *pgb_pool_stats(pgb_Pool *self, PyObject *unused)
{
	struct gpubuf_pool *pool = pgb_pool_get_pool(self);
	struct gpubuf_pool_stats st;

	(void)unused;
	if (!pool)
		return NULL;
	gpubuf_pool_stats(pool, &st);
	return Py_BuildValue("{sKsKsKsKsKsKsKsK}", "hits", st.hits, "misses", st.misses,
			     "puts", st.puts, "drops", st.drops,
			     "cached_bytes", st.cached_bytes,
			     "cached_buffers", st.cached_buffers,
			     "other_node_hits", st.other_node_hits,
			     "node_lists", st.node_lists);
}

static PyObject *pgb_pool_close(pgb_Pool *self, PyObject *unused)
{
	(void)unused;
	self->closed = 1;
	pgb_pool_finish(self);
	Py_RETURN_NONE;
}

static PyObject *pgb_pool_enter(pgb_Pool *self, PyObject *unused)
{
	(void)unused;
	if (!pgb_pool_get_pool(self))
		return NULL;
	return Py_NewRef(self);
}

static PyObject *pgb_pool_exit(pgb_Pool *self, PyObject *args)
{
	(void)args;
	return pgb_pool_close(self, NULL);
}

static PyMethodDef pgb_pool_methods[] = {
	{ "get", (PyCFunction)(void (*)(void))pgb_pool_get, METH_VARARGS | METH_KEYWORDS,
	  "get(nbytes, *, node=..., any_node=False) -> Buffer\n\n"
	  "A cached buffer of nbytes' size class, or a new one. node: a NUMA\n"
	  "node (None: no node), served from that node's cached buffers only,\n"
	  "or with any_node=True from another node's when it has none; left\n"
	  "out, the pool's own node (gpubuf_pool_get_node(3))." },
	{ "put", (PyCFunction)pgb_pool_put, METH_O,
	  "put(buffer)\n\nGive a buffer from get() back; the Buffer object is\n"
	  "released. It is cached only when nothing else (a Matrix, a tensor)\n"
	  "still refers to it. EXDEV for another pool's buffer." },
	{ "trim", (PyCFunction)pgb_pool_trim, METH_NOARGS, "trim()\n\nFree every cached buffer." },
	{ "stats", (PyCFunction)pgb_pool_stats, METH_NOARGS,
	  "stats() -> dict\n\nhits, misses, puts, drops, cached_bytes, cached_buffers,\n"
	  "other_node_hits, node_lists (nodes with free lists now; trim frees them)." },
	{ "close", (PyCFunction)pgb_pool_close, METH_NOARGS,
	  "close()\n\nFree the cached buffers; buffers handed out stay valid." },
	{ "__enter__", (PyCFunction)pgb_pool_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)pgb_pool_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pgb_PoolType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "gpubuf.Pool",
	.tp_doc = "A buffer cache made by Context.pool() (gpubuf_pool_create(3)).",
	.tp_basicsize = sizeof(pgb_Pool),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)pgb_pool_dealloc,
	.tp_methods = pgb_pool_methods,
};
