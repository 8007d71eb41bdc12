// SPDX-License-Identifier: MIT
/*
 * gpubuf.Context: one gpubuf_open() and the constructors of buffers,
 * matrices and pools. Objects made from a context do not need it once
 * made; a Pool does (libgpubuf's pool borrows the context), and so does a
 * call running without the GIL, so close() defers the real gpubuf_close()
 * until the last of them is done (pgb_context_hold/put).
 */
#include <errno.h>
#include <string.h>

#include "pygpubuf.h"

/* ctx for a call made with the GIL held throughout. */
static struct gpubuf_ctx *pgb_context_open(pgb_Context *self)
{
	if (self->closed || !self->ctx) {
		PyErr_SetString(PyExc_ValueError, "gpubuf: the context is closed");
		return NULL;
	}
	return self->ctx;
}

struct gpubuf_ctx *pgb_context_hold(pgb_Context *self)
{
	struct gpubuf_ctx *ctx = pgb_context_open(self);

	if (ctx)
		self->users++;
	return ctx;
}

void pgb_context_put(pgb_Context *self)
{
	if (--self->users == 0 && self->closed && self->ctx) {
		gpubuf_close(self->ctx);
		self->ctx = NULL;
	}
}

static int pgb_context_init(pgb_Context *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = { "backend", NULL };
	const char *backend = NULL;
	unsigned int flags;
	struct gpubuf_ctx *ctx;
	uint64_t dmabuf = 0;
	char msg[256] = "";
	int err;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|z:Context", kwlist,
					 &backend))
		return -1;
	if (self->ctx || self->opening) {
		PyErr_SetString(PyExc_RuntimeError, "gpubuf: Context is already open");
		return -1;
	}
	/* None and "auto": the module when present, else memfd; env decides first. */
	if (!backend || !strcmp(backend, "auto")) {
		flags = GPUBUF_OPEN_ALLOW_MEMFD;
	} else if (!strcmp(backend, "module")) {
		flags = GPUBUF_OPEN_IGNORE_ENV;
	} else if (!strcmp(backend, "memfd")) {
		flags = GPUBUF_OPEN_FORCE_MEMFD | GPUBUF_OPEN_IGNORE_ENV;
	} else {
		PyErr_Format(PyExc_ValueError,
			     "gpubuf: backend must be None, 'auto', 'module' or 'memfd', not '%s'",
			     backend);
		return -1;
	}
	self->opening = 1;
	Py_BEGIN_ALLOW_THREADS
	err = gpubuf_open_err(&ctx, flags, msg, sizeof(msg));
	Py_END_ALLOW_THREADS
	self->opening = 0;
	if (err) {
		pgb_raise_text(err == -ENODEV || err == -ENOENT ? pgb_NoDeviceError : pgb_Error,
			       -err, "gpubuf_open: %s", msg[0] ? msg : gpubuf_strerror(err));
		return -1;
	}
	gpubuf_query(ctx, GPUBUF_ATTR_DMABUF, &dmabuf);
	self->ctx = ctx;
	self->closed = 0;
	self->dmabuf = dmabuf != 0;
	return 0;
}

static void pgb_context_dealloc(pgb_Context *self)
{
	/* Pools and running calls hold a strong reference: none is left. */
	if (self->ctx)
		gpubuf_close(self->ctx);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

/* shape: a (rows, cols) sequence of non-negative ints. */
static int pgb_parse_shape(PyObject *shape, size_t *rows, size_t *cols)
{
	PyObject *seq = PySequence_Fast(shape, "gpubuf: shape must be a (rows, cols) tuple");
	Py_ssize_t r, c;

	if (!seq)
		return -1;
	if (PySequence_Fast_GET_SIZE(seq) != 2) {
		Py_DECREF(seq);
		PyErr_SetString(PyExc_ValueError,
				"gpubuf: shape must have two dimensions: gpubuf matrices are 2-D");
		return -1;
	}
	r = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(seq, 0), PyExc_OverflowError);
	c = r == -1 && PyErr_Occurred() ? -1 :
	    PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(seq, 1), PyExc_OverflowError);
	Py_DECREF(seq);
	if ((r == -1 || c == -1) && PyErr_Occurred())
		return -1;
	if (r < 0 || c < 0) {
		PyErr_SetString(PyExc_ValueError, "gpubuf: negative dimensions are not allowed");
		return -1;
	}
	*rows = (size_t)r;
	*cols = (size_t)c;
	return 0;
}

/*
 * near=: None, or a device string (gpubuf_device_node(3)) whose node opts
 * get. 0, or -1 with the exception set.
 */
int pgb_near_opts(PyObject *near_obj, struct gpubuf_alloc_opts *opts)
{
	const char *device;
	int err;

	if (!near_obj || near_obj == Py_None)
		return 0;
	device = PyUnicode_Check(near_obj) ? PyUnicode_AsUTF8(near_obj) : NULL;
	if (!device) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError,
					"gpubuf: near must be a device string such as 'cuda:0' or None");
		return -1;
	}
	/* sysfs reads, maybe a GPU runtime's start: without the GIL. */
	Py_BEGIN_ALLOW_THREADS
	err = gpubuf_alloc_opts_near(opts, device);
	Py_END_ALLOW_THREADS
	if (err) {
		pgb_raise(err, "gpubuf_alloc_opts_near", 1);
		return -1;
	}
	return 0;
}

/*
 * Whether a failed allocation's gpubuf_last_error() is about it: only the
 * memfd backend's allocations clear and set it (ENOMEM: why mlock failed;
 * EPERM: a strict node), so elsewhere it could be an older call's.
 */
static int pgb_alloc_detail(const pgb_Context *self, int err)
{
	return !self->dmabuf && (err == -ENOMEM || err == -EPERM);
}

static PyObject *pgb_context_empty(pgb_Context *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = { "shape", "dtype", "order", "align", "near", NULL };
	PyObject *shape, *dtype_obj = NULL, *order_obj = NULL, *align_obj = Py_None;
	struct gpubuf_alloc_opts opts = GPUBUF_ALLOC_OPTS_INIT;
	PyObject *near_obj = Py_None;
	enum gpubuf_layout layout;
	enum gpubuf_dtype dtype;
	struct gpubuf_matrix m;
	struct gpubuf_ctx *ctx;
	size_t rows, cols, align = 0;
	PyObject *ret;
	int err;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOO:empty", kwlist, &shape,
					 &dtype_obj, &order_obj, &align_obj, &near_obj) ||
	    pgb_parse_shape(shape, &rows, &cols) ||
	    pgb_dtype_from_object(dtype_obj, &dtype) ||
	    pgb_order_from_object(order_obj, &layout) ||
	    pgb_near_opts(near_obj, &opts))
		return NULL;
	if (align_obj != Py_None) {
		Py_ssize_t a = PyNumber_AsSsize_t(align_obj, PyExc_OverflowError);

		if (a == -1 && PyErr_Occurred())
			return NULL;
		if (a <= 0) {
			PyErr_SetString(PyExc_ValueError,
					"gpubuf: align must be a positive power of two (bytes)");
			return NULL;
		}
		align = (size_t)a;
	}
	ctx = pgb_context_hold(self);
	if (!ctx)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = gpubuf_matrix_alloc_opts(ctx, dtype, rows, cols, layout, align, &opts, &m);
	Py_END_ALLOW_THREADS
	pgb_context_put(self);
	if (err)
		return pgb_raise(err, "gpubuf_matrix_alloc", pgb_alloc_detail(self, err));
	ret = pgb_matrix_new(&m, self->dmabuf);
	gpubuf_matrix_release(&m);	/* the Matrix took its own reference */
	return ret;
}

static PyObject *pgb_context_buffer(pgb_Context *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = { "nbytes", "numa_node", "near", NULL };
	struct gpubuf_alloc_opts opts = GPUBUF_ALLOC_OPTS_INIT;
	PyObject *node_obj = Py_None, *near_obj = Py_None;
	struct gpubuf_ctx *ctx;
	Py_ssize_t nbytes;
	struct gpubuf *buf;
	int err;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "n|OO:buffer", kwlist, &nbytes,
					 &node_obj, &near_obj))
		return NULL;
	if (nbytes < 0) {
		PyErr_SetString(PyExc_ValueError, "gpubuf: nbytes must not be negative");
		return NULL;
	}
	if (node_obj != Py_None && near_obj != Py_None) {
		PyErr_SetString(PyExc_ValueError, "gpubuf: give numa_node or near, not both");
		return NULL;
	}
	if (pgb_near_opts(near_obj, &opts))
		return NULL;
	if (node_obj != Py_None) {
		long node = PyLong_AsLong(node_obj);

		if (node == -1 && PyErr_Occurred())
			return NULL;
		if (node < 0 || node > INT32_MAX) {
			PyErr_SetString(PyExc_ValueError, "gpubuf: numa_node must be a node number or None");
			return NULL;
		}
		opts.numa_node = (int32_t)node;
		opts.flags = GPUBUF_ALLOC_NUMA_STRICT;
	}
	ctx = pgb_context_hold(self);
	if (!ctx)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = gpubuf_alloc(ctx, (size_t)nbytes, &opts, &buf);
	Py_END_ALLOW_THREADS
	pgb_context_put(self);
	if (err)
		return pgb_raise(err, "gpubuf_alloc", pgb_alloc_detail(self, err));
	return pgb_buffer_new(buf, self->dmabuf);
}

static PyObject *pgb_context_import_fd(pgb_Context *self, PyObject *arg)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf *buf;
	int fd, err;

	fd = PyObject_AsFileDescriptor(arg);
	if (fd < 0)
		return NULL;
	ctx = pgb_context_hold(self);
	if (!ctx)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = gpubuf_import(ctx, fd, &buf);
	Py_END_ALLOW_THREADS
	pgb_context_put(self);
	if (err)
		return pgb_raise(err, "gpubuf_import", 0);
	return pgb_buffer_new(buf, 1);
}

static PyObject *pgb_context_pool(pgb_Context *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = { "max_cached_bytes", "max_class_bytes", "near", NULL };
	struct gpubuf_alloc_opts alloc = GPUBUF_ALLOC_OPTS_INIT;
	Py_ssize_t max_cached = 0, max_class = 0;
	PyObject *near_obj = Py_None;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|nnO:pool", kwlist,
					 &max_cached, &max_class, &near_obj))
		return NULL;
	if (max_cached < 0 || max_class < 0) {
		PyErr_SetString(PyExc_ValueError, "gpubuf: pool limits must not be negative");
		return NULL;
	}
	if (pgb_near_opts(near_obj, &alloc))
		return NULL;
	return pgb_pool_new(self, max_cached, max_class, &alloc);
}

static PyObject *pgb_context_close(pgb_Context *self, PyObject *unused)
{
	(void)unused;
	self->closed = 1;
	if (self->ctx && !self->users) {	/* else the last user closes it */
		gpubuf_close(self->ctx);
		self->ctx = NULL;
	}
	Py_RETURN_NONE;
}

static PyObject *pgb_context_enter(pgb_Context *self, PyObject *unused)
{
	(void)unused;
	if (!pgb_context_open(self))
		return NULL;
	return Py_NewRef(self);
}

static PyObject *pgb_context_exit(pgb_Context *self, PyObject *args)
{
	(void)args;
	return pgb_context_close(self, NULL);
}

static PyObject *pgb_context_get_backend(pgb_Context *self, void *closure)
{
	struct gpubuf_ctx *ctx = pgb_context_open(self);

	(void)closure;
	if (!ctx)
		return NULL;
	return PyUnicode_FromString(gpubuf_backend(ctx) == GPUBUF_BACKEND_MODULE ?
				    "module" : "memfd");
}

static PyObject *pgb_context_get_page_size(pgb_Context *self, void *closure)
{
	struct gpubuf_ctx *ctx = pgb_context_open(self);
	uint64_t v = 0;
	int err;

	(void)closure;
	if (!ctx)
		return NULL;
	err = gpubuf_query(ctx, GPUBUF_ATTR_PAGE_SIZE, &v);
	if (err)
		return pgb_raise(err, "gpubuf_query", 0);
	return PyLong_FromUnsignedLongLong(v);
}

static PyObject *pgb_context_get_driver_version(pgb_Context *self, void *closure)
{
	struct gpubuf_ctx *ctx = pgb_context_open(self);
	struct gpubuf_version v;

	(void)closure;
	if (!ctx)
		return NULL;
	if (gpubuf_driver_version(ctx, &v))
		Py_RETURN_NONE;		/* memfd backend: no driver */
	return Py_BuildValue("(III)", v.major, v.minor, v.patch);
}

static PyObject *pgb_context_get_closed(pgb_Context *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(self->closed || !self->ctx);
}

static PyObject *pgb_context_repr(pgb_Context *self)
{
	if (self->closed || !self->ctx)
		return PyUnicode_FromString("<gpubuf.Context closed>");
	return PyUnicode_FromFormat("<gpubuf.Context backend=%s>",
				    gpubuf_backend(self->ctx) == GPUBUF_BACKEND_MODULE ?
				    "module" : "memfd");
}

#define PGB_EMPTY_DOC(name, what)						\
	name "(shape, dtype='float32', order='C', align=None, near=None)\n"	\
	"    -> Matrix\n\n"							\
	"A new (rows, cols) matrix in its own pinned buffer, " what ".\n"	\
	"dtype: a name ('float32', 'bfloat16', ...), numpy.dtype or\n"		\
	"torch.dtype. order: 'C' row-major, 'F' column-major. Each row\n"	\
	"(column) starts on an align-byte boundary (a power of two from the\n"	\
	"element size to the page size; None: 256), so ld may exceed the row\n"	\
	"length; align=itemsize packs them. near: a device ('cuda:0',\n"	\
	"'hsa:0', 'vulkan:0', 'pci:0000:3b:00.0', 'drm:/dev/dri/card0',\n"	\
	"'rdma:mlx5_0'): pages on its NUMA node, see gpubuf_device_node(3).\n" \
	"Raises gpubuf.Error (ENOMEM, EINVAL, EOVERFLOW, ENODEV) as\n"	\
	"gpubuf_matrix_alloc(3) and gpubuf_device_node(3) fail."

static PyMethodDef pgb_context_methods[] = {
	{ "empty", (PyCFunction)(void (*)(void))pgb_context_empty,
	  METH_VARARGS | METH_KEYWORDS,
	  PGB_EMPTY_DOC("empty", "contents unspecified") },
	{ "zeros", (PyCFunction)(void (*)(void))pgb_context_empty,
	  METH_VARARGS | METH_KEYWORDS,
	  PGB_EMPTY_DOC("zeros", "filled with zeros (new gpubuf buffers are\n"
			"zero-filled by the kernel, so this costs no extra pass)") },
	{ "buffer", (PyCFunction)(void (*)(void))pgb_context_buffer,
	  METH_VARARGS | METH_KEYWORDS,
	  "buffer(nbytes, numa_node=None, near=None) -> Buffer\n\n"
	  "A new pinned, zero-filled buffer of nbytes, rounded up to pages.\n"
	  "numa_node: allocate on that node only (ENOMEM when it cannot).\n"
	  "near: prefer the NUMA node of a device, as for empty()." },
	{ "import_fd", (PyCFunction)pgb_context_import_fd, METH_O,
	  "import_fd(fd) -> Buffer\n\n"
	  "Map a dma-buf file descriptor (an int or an object with fileno())\n"
	  "as a Buffer. The descriptor is duplicated: the caller keeps and\n"
	  "closes its own. Errors as gpubuf_import(3)." },
	{ "pool", (PyCFunction)(void (*)(void))pgb_context_pool,
	  METH_VARARGS | METH_KEYWORDS,
	  "pool(max_cached_bytes=0, max_class_bytes=0, near=None) -> Pool\n\n"
	  "A cache of buffers in power-of-two size classes (0: 64 MiB each),\n"
	  "see gpubuf_pool_create(3). near: its buffers on the NUMA node of a\n"
	  "device, as for empty(); Pool.get(nbytes, node=...) asks for another." },
	{ "close", (PyCFunction)pgb_context_close, METH_NOARGS,
	  "close()\n\nClose the context. Buffers and matrices made from it stay\n"
	  "valid; the device file is closed once no Pool uses it." },
	{ "__enter__", (PyCFunction)pgb_context_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)pgb_context_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef pgb_context_getset[] = {
	{ "backend", (getter)pgb_context_get_backend, NULL,
	  "'module' (/dev/gpubuf: buffers are dma-bufs) or 'memfd'.", NULL },
	{ "page_size", (getter)pgb_context_get_page_size, NULL,
	  "Allocation granularity in bytes.", NULL },
	{ "driver_version", (getter)pgb_context_get_driver_version, NULL,
	  "gpubuf.ko's (major, minor, patch), None on the memfd backend.", NULL },
	{ "closed", (getter)pgb_context_get_closed, NULL, "True after close().", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject pgb_ContextType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "gpubuf.Context",
	.tp_doc = "Context(backend=None)\n\n"
		  "An open libgpubuf context (gpubuf_open(3)). backend: None or\n"
		  "'auto' uses /dev/gpubuf when present and the memfd backend\n"
		  "otherwise, unless GPUBUF_BACKEND says; 'module' or 'memfd'\n"
		  "insist. Raises gpubuf.NoDeviceError when 'module' finds no\n"
		  "/dev/gpubuf. gpubuf.open() is the usual spelling.",
	.tp_basicsize = sizeof(pgb_Context),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)pgb_context_init,
	.tp_dealloc = (destructor)pgb_context_dealloc,
	.tp_repr = (reprfunc)pgb_context_repr,
	.tp_methods = pgb_context_methods,
	.tp_getset = pgb_context_getset,
};
