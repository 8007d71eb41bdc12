// SPDX-License-Identifier: MIT
/*
 * gpubuf.DeviceMatrix: a Matrix as a CUDA device or an HSA GPU agent sees
 * it, made by Matrix.cuda() and Matrix.hsa(). It holds one CUDA
 * registration count (gpubuf_cuda_register) or one HSA lock count
 * (gpubuf_hsa_lock) until close() or its end; each exported tensor holds
 * its own, so a tensor outlives the object safely.
 */
#include <errno.h>

#include "pygpubuf.h"

#define PGB_MAX_AGENTS 64

typedef struct {
	PyObject_HEAD
	pgb_Matrix *host;	/* strong: the view and its buffer reference */
	int device_type;	/* PGB_DL_CUDA or PGB_DL_ROCM */
	int device;		/* CUDA ordinal or HSA GPU agent index */
	int read_only;
	int held;		/* a registration or lock count is held */
	uint64_t base;		/* the buffer's start for the device */
} pgb_DeviceMatrix;

static const char *pgb_device_name(const pgb_DeviceMatrix *self)
{
	return self->device_type == PGB_DL_CUDA ? "cuda" : "hsa";
}

static int pgb_device_hold(pgb_DeviceMatrix *self)
{
	struct gpubuf *buf = self->host->m.buf;
	unsigned int flags = self->read_only ? GPUBUF_CUDA_REGISTER_READ_ONLY : 0;
	uint64_t agents[PGB_MAX_AGENTS];
	void *agent_ptr = NULL;
	int err, count = 0;

	if (self->device_type == PGB_DL_CUDA) {
		Py_BEGIN_ALLOW_THREADS
		err = gpubuf_cuda_register(buf, self->device, flags, &self->base);
		Py_END_ALLOW_THREADS
		if (err) {
			pgb_raise(err, "gpubuf_cuda_register", 1);
			return -1;
		}
		return 0;
	}
	Py_BEGIN_ALLOW_THREADS
	err = gpubuf_hsa_agents(agents, PGB_MAX_AGENTS, &count);
	Py_END_ALLOW_THREADS
	if (err) {
		pgb_raise(err, "gpubuf_hsa_agents", 1);
		return -1;
	}
	if (self->device < 0 || self->device >= count || self->device >= PGB_MAX_AGENTS) {
		pgb_raise_text(pgb_NoDeviceError, ENODEV,
			       "gpubuf_hsa_lock: no HSA GPU agent %d (%d present)",
			       self->device, count);
		return -1;
	}
	Py_BEGIN_ALLOW_THREADS
	err = gpubuf_hsa_lock(buf, &agents[self->device], 1, &agent_ptr);
	Py_END_ALLOW_THREADS
	if (err) {
		pgb_raise(err, "gpubuf_hsa_lock", 1);
		return -1;
	}
	self->base = (uint64_t)(uintptr_t)agent_ptr;
	return 0;
}

static void pgb_device_drop(pgb_DeviceMatrix *self)
{
	if (!self->held)
		return;
	self->held = 0;
	if (self->device_type == PGB_DL_CUDA)
		gpubuf_cuda_unregister(self->host->m.buf, self->device);
	else
		gpubuf_hsa_unlock(self->host->m.buf);
}

PyObject *pgb_device_matrix_new(pgb_Matrix *host, int device_type, int device,
				int read_only)
{
	pgb_DeviceMatrix *self;

	if (device < 0) {
		PyErr_SetString(PyExc_ValueError, "gpubuf: device numbers are >= 0");
		return NULL;
	}
	self = PyObject_New(pgb_DeviceMatrix, &pgb_DeviceMatrixType);
	if (!self)
		return NULL;
	self->host = (pgb_Matrix *)Py_NewRef(host);
	self->device_type = device_type;
	self->device = device;
	self->read_only = read_only;
	self->held = 0;
	self->base = 0;
	if (pgb_device_hold(self)) {
		Py_DECREF(self);
		return NULL;
	}
	self->held = 1;
	return (PyObject *)self;
}

static void pgb_device_dealloc(pgb_DeviceMatrix *self)
{
	pgb_device_drop(self);
	Py_XDECREF(self->host);
	PyObject_Free(self);
}

static int pgb_device_check(pgb_DeviceMatrix *self)
{
	if (!self->held) {
		PyErr_Format(PyExc_ValueError, "gpubuf: the %s view is closed",
			     pgb_device_name(self));
		return -1;
	}
	return 0;
}

static PyObject *pgb_device_dlpack(pgb_DeviceMatrix *self, PyObject *args, PyObject *kwargs)
{
	if (pgb_device_check(self))
		return NULL;
	return pgb_dlpack_export(&self->host->m, self->device_type, self->device,
				 self->read_only, args, kwargs);
}

static PyObject *pgb_device_dlpack_device(pgb_DeviceMatrix *self, PyObject *unused)
{
	(void)unused;
	return Py_BuildValue("(ii)", self->device_type, self->device);
}

static PyObject *pgb_device_close(pgb_DeviceMatrix *self, PyObject *unused)
{
	(void)unused;
	pgb_device_drop(self);
	Py_RETURN_NONE;
}

static PyObject *pgb_device_enter(pgb_DeviceMatrix *self, PyObject *unused)
{
	(void)unused;
	if (pgb_device_check(self))
		return NULL;
	return Py_NewRef(self);
}

static PyObject *pgb_device_exit(pgb_DeviceMatrix *self, PyObject *args)
{
	(void)args;
	return pgb_device_close(self, NULL);
}

static PyObject *pgb_device_get_data_ptr(pgb_DeviceMatrix *self, void *closure)
{
	(void)closure;
	if (pgb_device_check(self))
		return NULL;
	return PyLong_FromUnsignedLongLong(self->base + self->host->m.offset);
}

static PyObject *pgb_device_get_cai(pgb_DeviceMatrix *self, void *closure)
{
	const struct pgb_dtype_info *info = pgb_dtype_info(self->host->m.dtype);

	(void)closure;
	if (self->device_type != PGB_DL_CUDA) {
		PyErr_SetString(PyExc_AttributeError,
				"gpubuf: __cuda_array_interface__ is for CUDA views");
		return NULL;
	}
	if (!info->typestr) {
		PyErr_Format(PyExc_AttributeError,
			     "gpubuf: the CUDA array interface has no %s; use __dlpack__",
			     info->name);
		return NULL;
	}
	if (pgb_device_check(self))
		return NULL;
	/* version 3; stream None: gpubuf queues no work to wait for. */
	return Py_BuildValue("{s(nn)sss(KO)s(nn)sisO}",
			     "shape", self->host->shape[0], self->host->shape[1],
			     "typestr", info->typestr,
			     /* The interface asks for 0 as an empty array's address. */
			     "data", self->host->m.rows && self->host->m.cols ?
			     (unsigned long long)(self->base + self->host->m.offset) : 0ULL,
			     self->read_only || gpubuf_is_readonly(self->host->m.buf) ?
			     Py_True : Py_False,
			     "strides", self->host->strides[0], self->host->strides[1],
			     "version", 3, "stream", Py_None);
}

static PyObject *pgb_device_get_host(pgb_DeviceMatrix *self, void *closure)
{
	(void)closure;
	return Py_NewRef(self->host);
}

static PyObject *pgb_device_get_device(pgb_DeviceMatrix *self, void *closure)
{
	(void)closure;
	return PyLong_FromLong(self->device);
}

static PyObject *pgb_device_get_shape(pgb_DeviceMatrix *self, void *closure)
{
	return PyObject_GetAttrString((PyObject *)self->host, (const char *)closure);
}

static PyObject *pgb_device_repr(pgb_DeviceMatrix *self)
{
	return PyUnicode_FromFormat("<gpubuf.DeviceMatrix %s:%d (%zd, %zd) %s%s>",
				    pgb_device_name(self), self->device,
				    self->host->shape[0], self->host->shape[1],
				    pgb_dtype_info(self->host->m.dtype)->name,
				    self->held ? "" : " closed");
}

static PyMethodDef pgb_device_methods[] = {
	{ "__dlpack__", (PyCFunction)(void (*)(void))pgb_device_dlpack,
	  METH_VARARGS | METH_KEYWORDS,
	  "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n\n"
	  "A kDLCUDA or kDLROCM capsule of the device address of this view.\n"
	  "Any stream is accepted (but 0 for CUDA, which the array API leaves\n"
	  "ambiguous): gpubuf queues no work to wait for. A read_only CUDA view\n"
	  "gives no classic capsule (BufferError) and flags a versioned one." },
	{ "__dlpack_device__", (PyCFunction)pgb_device_dlpack_device, METH_NOARGS,
	  "__dlpack_device__() -> (2, device) for CUDA, (10, agent) for HSA." },
	{ "close", (PyCFunction)pgb_device_close, METH_NOARGS,
	  "close()\n\nDrop this object's registration (lock) count now;\n"
	  "exported tensors keep theirs." },
	{ "__enter__", (PyCFunction)pgb_device_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)pgb_device_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef pgb_device_getset[] = {
	{ "data_ptr", (getter)pgb_device_get_data_ptr, NULL,
	  "Device address of element (0, 0).", NULL },
	{ "device", (getter)pgb_device_get_device, NULL,
	  "CUDA device ordinal or HSA GPU agent index.", NULL },
	{ "host", (getter)pgb_device_get_host, NULL, "The host Matrix.", NULL },
	{ "shape", (getter)pgb_device_get_shape, NULL, "As the host Matrix.", "shape" },
	{ "dtype", (getter)pgb_device_get_shape, NULL, "As the host Matrix.", "dtype" },
	{ "strides", (getter)pgb_device_get_shape, NULL, "As the host Matrix.", "strides" },
	{ "__cuda_array_interface__", (getter)pgb_device_get_cai, NULL,
	  "Numba's and CuPy's CUDA array interface (version 3), CUDA views only.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject pgb_DeviceMatrixType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "gpubuf.DeviceMatrix",
	.tp_doc = "A Matrix in a GPU's address space (Matrix.cuda(), Matrix.hsa()).",
	.tp_basicsize = sizeof(pgb_DeviceMatrix),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)pgb_device_dealloc,
	.tp_repr = (reprfunc)pgb_device_repr,
	.tp_methods = pgb_device_methods,
	.tp_getset = pgb_device_getset,
};
