// SPDX-License-Identifier: MIT
/*
 * gpubuf.Matrix: a 2-D strided view of a gpubuf buffer (struct
 * gpubuf_matrix plus one buffer reference). Slices and .T are new Matrix
 * objects over the same memory; NumPy reaches it through the buffer
 * protocol or __array_interface__, anything else through __dlpack__.
 */
#include <complex.h>
#include <errno.h>
#include <string.h>

#include "pygpubuf.h"

PyObject *pgb_matrix_new(const struct gpubuf_matrix *m, int dmabuf)
{
	size_t es = gpubuf_dtype_size(m->dtype);
	pgb_Matrix *self;
	int err = gpubuf_matrix_ref(m);

	if (err)
		return pgb_raise(err, "gpubuf_matrix_ref", 0);
	self = PyObject_New(pgb_Matrix, &pgb_MatrixType);
	if (!self) {
		gpubuf_unref(m->buf);
		return NULL;
	}
	self->m = *m;
	self->dmabuf = dmabuf;
	self->shape[0] = (Py_ssize_t)m->rows;
	self->shape[1] = (Py_ssize_t)m->cols;
	/* NumPy's convention: byte strides, ld along the outer dimension. */
	self->strides[0] = (Py_ssize_t)(m->layout == GPUBUF_ROW_MAJOR ? m->ld * es : es);
	self->strides[1] = (Py_ssize_t)(m->layout == GPUBUF_ROW_MAJOR ? es : m->ld * es);
	return (PyObject *)self;
}

static void pgb_matrix_dealloc(pgb_Matrix *self)
{
	gpubuf_matrix_release(&self->m);
	PyObject_Free(self);
}

static int pgb_matrix_readonly(const pgb_Matrix *self)
{
	return gpubuf_is_readonly(self->m.buf);
}

/* Contiguity as NumPy judges it: dimensions of length 1 do not count. */
static int pgb_matrix_contiguous(const pgb_Matrix *self, char order)
{
	Py_ssize_t es = (Py_ssize_t)gpubuf_dtype_size(self->m.dtype);
	Py_ssize_t r = self->shape[0], c = self->shape[1];

	if (!r || !c)
		return 1;
	if (order == 'C')
		return (c == 1 || self->strides[1] == es) &&
		       (r == 1 || self->strides[0] == c * es);
	return (r == 1 || self->strides[0] == es) &&
	       (c == 1 || self->strides[1] == r * es);
}

/* ---- buffer protocol and __array_interface__ ------------------------------ */

static int pgb_matrix_getbuffer(pgb_Matrix *self, Py_buffer *view, int flags)
{
	const struct pgb_dtype_info *info = pgb_dtype_info(self->m.dtype);
	Py_ssize_t es = (Py_ssize_t)gpubuf_dtype_size(self->m.dtype);
	int readonly = pgb_matrix_readonly(self);

	if (!info || !info->format) {
		PyErr_Format(PyExc_BufferError,
			     "gpubuf: %s has no buffer-protocol format; use __dlpack__ (e.g. torch.from_dlpack)",
			     info ? info->name : "this dtype");
		return -1;
	}
	if ((flags & PyBUF_WRITABLE) && readonly) {
		PyErr_SetString(PyExc_BufferError, "gpubuf: the buffer is read-only");
		return -1;
	}
	if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES &&
	    !pgb_matrix_contiguous(self, 'C')) {
		PyErr_SetString(PyExc_BufferError,
				"gpubuf: the matrix is strided (padded ld, sub-view or 'F' order); ask with PyBUF_STRIDES");
		return -1;
	}
	if (((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS &&
	     !pgb_matrix_contiguous(self, 'C')) ||
	    ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS &&
	     !pgb_matrix_contiguous(self, 'F')) ||
	    ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS &&
	     !pgb_matrix_contiguous(self, 'C') && !pgb_matrix_contiguous(self, 'F'))) {
		PyErr_SetString(PyExc_BufferError, "gpubuf: the matrix is not contiguous");
		return -1;
	}
	view->obj = Py_NewRef(self);
	view->buf = self->m.rows && self->m.cols ? gpubuf_matrix_data(&self->m) :
		    gpubuf_ptr(self->m.buf);
	view->len = self->shape[0] * self->shape[1] * es;
	view->readonly = readonly;
	view->itemsize = es;
	view->format = (flags & PyBUF_FORMAT) ? (char *)info->format : NULL;
	view->ndim = (flags & PyBUF_ND) == PyBUF_ND ? 2 : 1;
	view->shape = (flags & PyBUF_ND) == PyBUF_ND ? self->shape : NULL;
	view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? self->strides : NULL;
	view->suboffsets = NULL;
	view->internal = NULL;
	return 0;
}

static PyBufferProcs pgb_matrix_as_buffer = {
	.bf_getbuffer = (getbufferproc)pgb_matrix_getbuffer,
};

static PyObject *pgb_matrix_get_array_interface(pgb_Matrix *self, void *closure)
{
	const struct pgb_dtype_info *info = pgb_dtype_info(self->m.dtype);
	void *data;

	(void)closure;
	if (!info || !info->typestr) {
		/* AttributeError: NumPy then reports the object as unusable. */
		PyErr_Format(PyExc_AttributeError,
			     "gpubuf: NumPy has no %s; use __dlpack__ (e.g. torch.from_dlpack)",
			     info ? info->name : "such dtype");
		return NULL;
	}
	data = self->m.rows && self->m.cols ? gpubuf_matrix_data(&self->m) :
	       gpubuf_ptr(self->m.buf);
	return Py_BuildValue("{s(nn)sss(NO)s(nn)si}",
			     "shape", self->shape[0], self->shape[1],
			     "typestr", info->typestr,
			     "data", PyLong_FromVoidPtr(data),
			     pgb_matrix_readonly(self) ? Py_True : Py_False,
			     "strides", self->strides[0], self->strides[1],
			     "version", 3);
}

/*
 * NumPy tries the buffer protocol, then __array_interface__, then
 * __array__. Only a dtype NumPy lacks gets this far; without __array__
 * NumPy would wrap the Matrix in a 0-d object array instead of failing.
 */
static PyObject *pgb_matrix_array(pgb_Matrix *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = { "dtype", "copy", NULL };
	const struct pgb_dtype_info *info = pgb_dtype_info(self->m.dtype);
	PyObject *dtype = Py_None, *copy = Py_None;
	PyObject *numpy, *view, *arr, *ret, *want, *have;
	int same;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", kwlist,
					 &dtype, &copy))
		return NULL;
	if (!info->format) {
		PyErr_Format(PyExc_TypeError,
			     "gpubuf: NumPy has no %s; use torch.from_dlpack(m) or a float32 matrix",
			     info->name);
		return NULL;
	}
	numpy = PyImport_ImportModule("numpy");
	if (!numpy)
		return NULL;
	view = PyMemoryView_FromObject((PyObject *)self);
	arr = view ? PyObject_CallMethod(numpy, "asarray", "O", view) : NULL;
	Py_XDECREF(view);
	if (!arr || (dtype == Py_None && copy != Py_True)) {
		Py_DECREF(numpy);
		return arr;
	}
	/* NumPy's rules: copy=False may not convert, copy=True always copies. */
	want = dtype == Py_None ? PyObject_GetAttrString(arr, "dtype") :
	       PyObject_CallMethod(numpy, "dtype", "O", dtype);
	have = PyObject_GetAttrString(arr, "dtype");
	same = want && have ? PyObject_RichCompareBool(want, have, Py_EQ) : -1;
	if (same == 0 && copy == Py_False)
		PyErr_SetString(PyExc_ValueError,
				"gpubuf: __array__(copy=False) cannot convert to another dtype");
	ret = NULL;
	if (same == 1 || (same == 0 && copy != Py_False)) {
		PyObject *astype = PyObject_GetAttrString(arr, "astype");
		PyObject *cargs = Py_BuildValue("(O)", want);
		PyObject *ckw = Py_BuildValue("{sO}", "copy",
					      copy == Py_True ? Py_True : Py_False);

		if (astype && cargs && ckw)
			ret = PyObject_Call(astype, cargs, ckw);
		Py_XDECREF(astype);
		Py_XDECREF(cargs);
		Py_XDECREF(ckw);
	}
	Py_XDECREF(want);
	Py_XDECREF(have);
	Py_DECREF(numpy);
	Py_DECREF(arr);
	return ret;
}

/* ---- element access and slicing ---------------------------------------- */

/* key item of one dimension of length n: [*start, *start + *len). */
static int pgb_index_range(PyObject *key, Py_ssize_t n, Py_ssize_t *start,
			   Py_ssize_t *len, int *is_int)
{
	Py_ssize_t stop, step;

	*is_int = 0;
	if (PySlice_Check(key)) {
		if (PySlice_Unpack(key, start, &stop, &step) < 0)
			return -1;
		if (step != 1) {
			PyErr_SetString(PyExc_IndexError,
					"gpubuf: slices must have step 1 (a gpubuf view has one ld); take a strided NumPy view of numpy.asarray(m)");
			return -1;
		}
		*len = PySlice_AdjustIndices(n, start, &stop, step);
		return 0;
	}
	*start = PyNumber_AsSsize_t(key, PyExc_IndexError);
	if (*start == -1 && PyErr_Occurred()) {
		if (PyErr_ExceptionMatches(PyExc_TypeError)) {
			PyErr_Clear();
			PyErr_Format(PyExc_TypeError,
				     "gpubuf: matrix indices must be ints or slices, not %.200s",
				     Py_TYPE(key)->tp_name);
		}
		return -1;
	}
	if (*start < 0)
		*start += n;
	if (*start < 0 || *start >= n) {
		PyErr_Format(PyExc_IndexError, "gpubuf: index out of range for length %zd", n);
		return -1;
	}
	*len = 1;
	*is_int = 1;
	return 0;
}

static int pgb_matrix_parse_key(pgb_Matrix *self, PyObject *key,
				Py_ssize_t start[2], Py_ssize_t len[2], int *both_ints)
{
	PyObject *k[2] = { key, Py_None };
	int is_int[2];
	static PyObject *full;
	int i;

	if (!full) {
		full = PySlice_New(NULL, NULL, NULL);
		if (!full)
			return -1;
	}
	if (PyTuple_Check(key)) {
		if (PyTuple_GET_SIZE(key) > 2 || PyTuple_GET_SIZE(key) == 0) {
			PyErr_SetString(PyExc_IndexError,
					"gpubuf: a matrix takes one or two indices");
			return -1;
		}
		k[0] = PyTuple_GET_ITEM(key, 0);
		k[1] = PyTuple_GET_SIZE(key) == 2 ? PyTuple_GET_ITEM(key, 1) : full;
	} else {
		k[1] = full;
	}
	for (i = 0; i < 2; i++)
		if (pgb_index_range(k[i], self->shape[i], &start[i], &len[i], &is_int[i]))
			return -1;
	*both_ints = is_int[0] && is_int[1];
	return 0;
}

static PyObject *pgb_matrix_get_element(pgb_Matrix *self, size_t r, size_t c)
{
	void *p = gpubuf_matrix_elem(&self->m, r, c);
	double v;

	switch (self->m.dtype) {
	case GPUBUF_DTYPE_I8: return PyLong_FromLong(*(int8_t *)p);
	case GPUBUF_DTYPE_U8: return PyLong_FromLong(*(uint8_t *)p);
	case GPUBUF_DTYPE_I16: return PyLong_FromLong(*(int16_t *)p);
	case GPUBUF_DTYPE_U16: return PyLong_FromLong(*(uint16_t *)p);
	case GPUBUF_DTYPE_I32: return PyLong_FromLong(*(int32_t *)p);
	case GPUBUF_DTYPE_U32: return PyLong_FromUnsignedLong(*(uint32_t *)p);
	case GPUBUF_DTYPE_I64: return PyLong_FromLongLong(*(int64_t *)p);
	case GPUBUF_DTYPE_U64: return PyLong_FromUnsignedLongLong(*(uint64_t *)p);
	case GPUBUF_DTYPE_COMPLEX64: {
		float *f = p;

		return PyComplex_FromDoubles(f[0], f[1]);
	}
	case GPUBUF_DTYPE_COMPLEX128: {
		double *d = p;

		return PyComplex_FromDoubles(d[0], d[1]);
	}
	default:
		if (gpubuf_matrix_get(&self->m, r, c, &v))
			return pgb_raise(-EINVAL, "gpubuf_matrix_get", 0);
		return PyFloat_FromDouble(v);
	}
}

static PyObject *pgb_matrix_subscript(pgb_Matrix *self, PyObject *key)
{
	Py_ssize_t start[2], len[2];
	struct gpubuf_matrix s;
	int both_ints, err;

	if (pgb_matrix_parse_key(self, key, start, len, &both_ints))
		return NULL;
	if (both_ints)
		return pgb_matrix_get_element(self, (size_t)start[0], (size_t)start[1]);
	err = gpubuf_matrix_sub(&self->m, (size_t)start[0], (size_t)start[1],
				(size_t)len[0], (size_t)len[1], &s);
	if (err)
		return pgb_raise(err, "gpubuf_matrix_sub", 0);
	return pgb_matrix_new(&s, self->dmabuf);
}

static int pgb_matrix_ass_subscript(pgb_Matrix *self, PyObject *key, PyObject *value)
{
	Py_ssize_t start[2], len[2];
	int both_ints;
	void *p;

	if (!value) {
		PyErr_SetString(PyExc_TypeError, "gpubuf: matrix elements cannot be deleted");
		return -1;
	}
	if (pgb_matrix_parse_key(self, key, start, len, &both_ints))
		return -1;
	if (!both_ints) {
		PyErr_SetString(PyExc_TypeError,
				"gpubuf: assign one element m[r, c] = v; for ranges use numpy.asarray(m)[...] = ...");
		return -1;
	}
	if (pgb_matrix_readonly(self)) {
		PyErr_SetString(PyExc_ValueError, "gpubuf: the buffer is read-only");
		return -1;
	}
	p = gpubuf_matrix_elem(&self->m, (size_t)start[0], (size_t)start[1]);
	switch (self->m.dtype) {
	case GPUBUF_DTYPE_I8: case GPUBUF_DTYPE_U8: case GPUBUF_DTYPE_I16:
	case GPUBUF_DTYPE_U16: case GPUBUF_DTYPE_I32: case GPUBUF_DTYPE_U32:
	case GPUBUF_DTYPE_I64: case GPUBUF_DTYPE_U64: {
		size_t es = gpubuf_dtype_size(self->m.dtype);
		unsigned long long u;
		long long v;
		int is_signed = self->m.dtype == GPUBUF_DTYPE_I8 ||
				self->m.dtype == GPUBUF_DTYPE_I16 ||
				self->m.dtype == GPUBUF_DTYPE_I32 ||
				self->m.dtype == GPUBUF_DTYPE_I64;
		unsigned int bits = (unsigned int)es * 8;

		if (is_signed) {
			v = PyLong_AsLongLong(value);
			if (v == -1 && PyErr_Occurred())
				return -1;
			if (bits < 64 && (v < -(1LL << (bits - 1)) || v >= (1LL << (bits - 1))))
				goto range;
			u = (unsigned long long)v;
		} else {
			/* PyNumber_Index: numpy.uint32(5) and other __index__ ints. */
			PyObject *index = PyNumber_Index(value);

			if (!index)
				return -1;
			u = PyLong_AsUnsignedLongLong(index);
			Py_DECREF(index);
			if (u == (unsigned long long)-1 && PyErr_Occurred())
				return -1;
			if (bits < 64 && u >> bits)
				goto range;
		}
		/* Little-endian x86-64 and arm64: the low bytes come first. */
		memcpy(p, &u, es);
		return 0;
	}
	case GPUBUF_DTYPE_COMPLEX64:
	case GPUBUF_DTYPE_COMPLEX128: {
		Py_complex z = PyComplex_AsCComplex(value);

		if (z.real == -1.0 && PyErr_Occurred())
			return -1;
		if (self->m.dtype == GPUBUF_DTYPE_COMPLEX64) {
			float f[2] = { (float)z.real, (float)z.imag };

			memcpy(p, f, sizeof(f));
		} else {
			memcpy(p, &z, sizeof(double) * 2);
		}
		return 0;
	}
	default: {
		double d = PyFloat_AsDouble(value);

		if (d == -1.0 && PyErr_Occurred())
			return -1;
		return gpubuf_matrix_set(&self->m, (size_t)start[0], (size_t)start[1], d) ?
		       (pgb_raise(-EINVAL, "gpubuf_matrix_set", 0), -1) : 0;
	}
	}
range:
	PyErr_Format(PyExc_OverflowError, "gpubuf: %R does not fit in %s", value,
		     pgb_dtype_info(self->m.dtype)->name);
	return -1;
}

static Py_ssize_t pgb_matrix_length(pgb_Matrix *self)
{
	return self->shape[0];
}

static PyMappingMethods pgb_matrix_as_mapping = {
	.mp_length = (lenfunc)pgb_matrix_length,
	.mp_subscript = (binaryfunc)pgb_matrix_subscript,
	.mp_ass_subscript = (objobjargproc)pgb_matrix_ass_subscript,
};

/* ---- methods -------------------------------------------------------------- */

static PyObject *pgb_matrix_transpose(pgb_Matrix *self, PyObject *unused)
{
	struct gpubuf_matrix t;
	int err;

	(void)unused;
	err = gpubuf_matrix_transpose(&self->m, &t);
	if (err)
		return pgb_raise(err, "gpubuf_matrix_transpose", 0);
	return pgb_matrix_new(&t, self->dmabuf);
}

static PyObject *pgb_matrix_get_T(pgb_Matrix *self, void *closure)
{
	(void)closure;
	return pgb_matrix_transpose(self, NULL);
}

static PyObject *pgb_matrix_dlpack(pgb_Matrix *self, PyObject *args, PyObject *kwargs)
{
	return pgb_dlpack_export(&self->m, PGB_DL_CPU, 0, 0, args, kwargs);
}

static PyObject *pgb_matrix_dlpack_device(pgb_Matrix *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return Py_BuildValue("(ii)", PGB_DL_CPU, 0);
}

static PyObject *pgb_matrix_cpu_access(pgb_Matrix *self, PyObject *args)
{
	const char *mode = "rw";

	if (!PyArg_ParseTuple(args, "|s:cpu_access", &mode))
		return NULL;
	return pgb_cpu_access_new(self->m.buf, mode);
}

static PyObject *pgb_matrix_cuda(pgb_Matrix *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = { "device", "read_only", NULL };
	int device = 0, read_only = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|ip:cuda", kwlist,
					 &device, &read_only))
		return NULL;
	return pgb_device_matrix_new(self, PGB_DL_CUDA, device, read_only);
}

static PyObject *pgb_matrix_hsa(pgb_Matrix *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = { "agent", NULL };
	int agent = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|i:hsa", kwlist, &agent))
		return NULL;
	return pgb_device_matrix_new(self, PGB_DL_ROCM, agent, 0);
}

static PyObject *pgb_matrix_read_file(pgb_Matrix *self, PyObject *args,
				      PyObject *kwargs)
{
	return pgb_matrix_io(&self->m, 0, args, kwargs);
}

static PyObject *pgb_matrix_write_file(pgb_Matrix *self, PyObject *args,
				       PyObject *kwargs)
{
	return pgb_matrix_io(&self->m, 1, args, kwargs);
}

static PyMethodDef pgb_matrix_methods[] = {
	{ "read_file", (PyCFunction)(void (*)(void))pgb_matrix_read_file,
	  METH_VARARGS | METH_KEYWORDS,
	  "read_file(file, file_offset=0, *, direct=True, uring=True,\n"
	  "          queue_depth=0, request_bytes=0) -> dict\n\n"
	  "Fill the matrix from file (a path, a descriptor or an object with\n"
	  "fileno()), where it lies packed in the matrix's order from\n"
	  "file_offset (gpubuf_matrix_read_file(3)); the padding between rows\n"
	  "is left alone. As Buffer.read_file." },
	{ "write_file", (PyCFunction)(void (*)(void))pgb_matrix_write_file,
	  METH_VARARGS | METH_KEYWORDS,
	  "write_file(file, file_offset=0, *, direct=True, uring=True,\n"
	  "           queue_depth=0, request_bytes=0) -> dict\n\n"
	  "Write the matrix's elements, packed, to file at file_offset." },
	{ "transpose", (PyCFunction)pgb_matrix_transpose, METH_NOARGS,
	  "transpose() -> Matrix\n\nThe same memory with rows and columns swapped (m.T)." },
	{ "__dlpack__", (PyCFunction)(void (*)(void))pgb_matrix_dlpack,
	  METH_VARARGS | METH_KEYWORDS,
	  "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n\n"
	  "A DLPack capsule of this view (kDLCPU), sharing the memory and\n"
	  "holding a buffer reference until the consumer's deleter runs.\n"
	  "max_version >= (1, 0) gives a \"dltensor_versioned\" capsule when\n"
	  "gpubuf.dlpack_versioned() is True, else a classic \"dltensor\".\n"
	  "stream must be None or -1 (host memory has no stream); dl_device\n"
	  "must be None or (1, 0); copy=True exports a private compact copy,\n"
	  "copy=False and None never copy. BufferError: a read-only buffer\n"
	  "asked for a classic capsule (it cannot say read-only), or a\n"
	  "device gpubuf cannot export to." },
	{ "__dlpack_device__", (PyCFunction)pgb_matrix_dlpack_device, METH_NOARGS,
	  "__dlpack_device__() -> (1, 0): kDLCPU, device 0." },
	{ "__array__", (PyCFunction)(void (*)(void))pgb_matrix_array,
	  METH_VARARGS | METH_KEYWORDS,
	  "__array__() -> numpy.ndarray view; TypeError for bfloat16." },
	{ "cpu_access", (PyCFunction)pgb_matrix_cpu_access, METH_VARARGS,
	  "cpu_access(mode='rw') -> CpuAccess\n\n"
	  "with m.cpu_access('rw'): ... brackets CPU access to the whole buffer\n"
	  "with DMA_BUF_IOCTL_SYNC (a no-op on the memfd backend)." },
	{ "cuda", (PyCFunction)(void (*)(void))pgb_matrix_cuda,
	  METH_VARARGS | METH_KEYWORDS,
	  "cuda(device=0, read_only=False) -> DeviceMatrix\n\n"
	  "Register the buffer with CUDA device `device` (cuMemHostRegister,\n"
	  "gpubuf_cuda_register(3)) and return this view in the device's\n"
	  "address space: its __dlpack__ is kDLCUDA (torch.from_dlpack,\n"
	  "cupy.from_dlpack). Raises gpubuf.NoDeviceError without an NVIDIA\n"
	  "driver or device, gpubuf.UnsupportedError when libgpubuf was\n"
	  "built without CUDA; the message carries the driver's error name." },
	{ "hsa", (PyCFunction)(void (*)(void))pgb_matrix_hsa,
	  METH_VARARGS | METH_KEYWORDS,
	  "hsa(agent=0) -> DeviceMatrix\n\n"
	  "Lock the buffer for HSA GPU agent `agent` (gpubuf_hsa_lock(3)) and\n"
	  "return this view in its address space, __dlpack__ kDLROCM. Errors\n"
	  "as cuda(), for the ROCm runtime." },
	{ NULL, NULL, 0, NULL },
};

static PyObject *pgb_matrix_get_shape(pgb_Matrix *self, void *closure)
{
	(void)closure;
	return Py_BuildValue("(nn)", self->shape[0], self->shape[1]);
}

static PyObject *pgb_matrix_get_strides(pgb_Matrix *self, void *closure)
{
	(void)closure;
	return Py_BuildValue("(nn)", self->strides[0], self->strides[1]);
}

static PyObject *pgb_matrix_get_dtype(pgb_Matrix *self, void *closure)
{
	(void)closure;
	return PyUnicode_FromString(pgb_dtype_info(self->m.dtype)->name);
}

static PyObject *pgb_matrix_get_itemsize(pgb_Matrix *self, void *closure)
{
	(void)closure;
	return PyLong_FromSize_t(gpubuf_dtype_size(self->m.dtype));
}

static PyObject *pgb_matrix_get_ld(pgb_Matrix *self, void *closure)
{
	(void)closure;
	return PyLong_FromSize_t(self->m.ld);
}

static PyObject *pgb_matrix_get_order(pgb_Matrix *self, void *closure)
{
	(void)closure;
	return PyUnicode_FromString(self->m.layout == GPUBUF_ROW_MAJOR ? "C" : "F");
}

static PyObject *pgb_matrix_get_offset(pgb_Matrix *self, void *closure)
{
	(void)closure;
	return PyLong_FromSize_t(self->m.offset);
}

static PyObject *pgb_matrix_get_fd(pgb_Matrix *self, void *closure)
{
	(void)closure;
	if (!self->dmabuf)
		Py_RETURN_NONE;
	return PyLong_FromLong(gpubuf_fd(self->m.buf));
}

static PyObject *pgb_matrix_get_readonly(pgb_Matrix *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(pgb_matrix_readonly(self));
}

static PyObject *pgb_matrix_get_address(pgb_Matrix *self, void *closure)
{
	(void)closure;
	return PyLong_FromVoidPtr(self->m.rows && self->m.cols ?
				  gpubuf_matrix_data(&self->m) : gpubuf_ptr(self->m.buf));
}

static PyObject *pgb_matrix_get_buffer(pgb_Matrix *self, void *closure)
{
	(void)closure;
	return pgb_buffer_new(gpubuf_ref(self->m.buf), self->dmabuf);
}

static PyObject *pgb_matrix_repr(pgb_Matrix *self)
{
	return PyUnicode_FromFormat("<gpubuf.Matrix (%zd, %zd) %s order=%s ld=%zu %s>",
				    self->shape[0], self->shape[1],
				    pgb_dtype_info(self->m.dtype)->name,
				    self->m.layout == GPUBUF_ROW_MAJOR ? "C" : "F",
				    self->m.ld, self->dmabuf ? "dma-buf" : "memfd");
}

static PyGetSetDef pgb_matrix_getset[] = {
	{ "shape", (getter)pgb_matrix_get_shape, NULL, "(rows, cols).", NULL },
	{ "strides", (getter)pgb_matrix_get_strides, NULL,
	  "Byte strides (row, column), as numpy.asarray(m).strides.", NULL },
	{ "dtype", (getter)pgb_matrix_get_dtype, NULL, "Element type name, e.g. 'float32'.", NULL },
	{ "itemsize", (getter)pgb_matrix_get_itemsize, NULL, "Bytes per element.", NULL },
	{ "ld", (getter)pgb_matrix_get_ld, NULL,
	  "Leading dimension: elements between row ('C') or column ('F') starts.", NULL },
	{ "order", (getter)pgb_matrix_get_order, NULL, "'C' (row-major) or 'F' (column-major).", NULL },
	{ "offset", (getter)pgb_matrix_get_offset, NULL, "Byte offset of element (0, 0) in the buffer.", NULL },
	{ "T", (getter)pgb_matrix_get_T, NULL, "The transposed view (same memory).", NULL },
	{ "fd", (getter)pgb_matrix_get_fd, NULL,
	  "The buffer's dma-buf fd on the module backend (owned by the buffer:\n"
	  "dup it to keep it), None on memfd.", NULL },
	{ "readonly", (getter)pgb_matrix_get_readonly, NULL, "True for a read-only import.", NULL },
	{ "address", (getter)pgb_matrix_get_address, NULL, "Address of element (0, 0).", NULL },
	{ "buffer", (getter)pgb_matrix_get_buffer, NULL,
	  "A new Buffer object for the whole underlying buffer.", NULL },
	{ "__array_interface__", (getter)pgb_matrix_get_array_interface, NULL,
	  "NumPy's array interface (version 3): numpy.asarray(m) is a writable\n"
	  "view of the same memory (read-only for read-only buffers).", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject pgb_MatrixType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "gpubuf.Matrix",
	.tp_doc = "A 2-D strided view of a pinned gpubuf buffer.\n\n"
		  "Made by Context.empty()/zeros() and Buffer.matrix(). m[r0:r1, c0:c1]\n"
		  "and m.T are O(1) views of the same memory (ints keep their\n"
		  "dimension: m[2, :] is 1 x cols; m[r, c] is the element's value).\n"
		  "numpy.asarray(m) is a writable zero-copy view (buffer protocol);\n"
		  "numpy.from_dlpack(m) and torch.from_dlpack(m) share it too.\n"
		  "Every view and exported tensor keeps the buffer alive.",
	.tp_basicsize = sizeof(pgb_Matrix),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)pgb_matrix_dealloc,
	.tp_repr = (reprfunc)pgb_matrix_repr,
	.tp_as_mapping = &pgb_matrix_as_mapping,
	.tp_as_buffer = &pgb_matrix_as_buffer,
	.tp_methods = pgb_matrix_methods,
	.tp_getset = pgb_matrix_getset,
};
