// SPDX-License-Identifier: MIT
/*
 * __dlpack__ for Matrix and DeviceMatrix: the keyword checks of the Python
 * array API's __dlpack__, then libgpubuf's DLPack export wrapped in a
 * capsule. A consumer renames the capsule when it takes the tensor over
 * ("used_dltensor"); a capsule dropped unused still carries its name, and
 * its destructor then calls the tensor's deleter, which drops the buffer
 * reference (and a CUDA registration or HSA lock count) it held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <dlpack/dlpack.h>

#include "pygpubuf.h"

#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
#define PGB_HAVE_DLPACK_V1 1
#endif

static const char pgb_capsule_name[] = "dltensor";

/*
 * Data at element (0,0), byte_offset 0: PyTorch 1.13 ignores byte_offset
 * (its sub-view tensors then start at the buffer's first element), and
 * DLPack's own header warns consumers not to rely on it. libgpubuf's
 * GPUBUF_0.5 export is already so; this keeps any byte_offset out of the
 * capsule whatever the library gives.
 */
static void pgb_fold_offset(DLTensor *t)
{
	if (t->data)
		t->data = (char *)t->data + t->byte_offset;
	t->byte_offset = 0;
}
#ifdef PGB_HAVE_DLPACK_V1
static const char pgb_capsule_name_v1[] = "dltensor_versioned";
#endif

static void pgb_capsule_destructor(PyObject *capsule)
{
#if PY_VERSION_HEX >= 0x030C0000
	PyObject *pending = PyErr_GetRaisedException();
#else
	PyObject *type, *value, *tb;

	PyErr_Fetch(&type, &value, &tb);
#endif
	if (PyCapsule_IsValid(capsule, pgb_capsule_name)) {
		DLManagedTensor *t = PyCapsule_GetPointer(capsule, pgb_capsule_name);

		if (t->deleter)
			t->deleter(t);
	}
#ifdef PGB_HAVE_DLPACK_V1
	else if (PyCapsule_IsValid(capsule, pgb_capsule_name_v1)) {
		struct DLManagedTensorVersioned *t =
			PyCapsule_GetPointer(capsule, pgb_capsule_name_v1);

		if (t->deleter)
			t->deleter(t);
	}
#endif
#if PY_VERSION_HEX >= 0x030C0000
	PyErr_SetRaisedException(pending);
#else
	PyErr_Restore(type, value, tb);
#endif
}

int pgb_dlpack_versioned_available(void)
{
	/* A library built against DLPack < 1.0 answers -EOPNOTSUPP first. */
#ifdef PGB_HAVE_DLPACK_V1
	return gpubuf_matrix_to_dlpack_versioned(NULL, PGB_DL_CPU, 0, NULL) == -EINVAL;
#else
	return 0;
#endif
}

/* ---- copy=True: a private compact copy, freed by its deleter ------------ */

struct pgb_copy {
	union {
		DLManagedTensor legacy;
#ifdef PGB_HAVE_DLPACK_V1
		struct DLManagedTensorVersioned v1;
#endif
	} t;
	int64_t shape[2];
	int64_t strides[2];
	/* the elements follow, row-major */
};

static void pgb_copy_delete(DLManagedTensor *t)
{
	free(t->manager_ctx);
}

#ifdef PGB_HAVE_DLPACK_V1
static void pgb_copy_delete_v1(struct DLManagedTensorVersioned *t)
{
	free(t->manager_ctx);
}
#endif

static DLDataType pgb_dl_dtype(enum gpubuf_dtype dtype)
{
	DLDataType d = { kDLFloat, (uint8_t)(gpubuf_dtype_size(dtype) * 8), 1 };

	switch (dtype) {
	case GPUBUF_DTYPE_BF16:
		d.code = kDLBfloat;
		break;
	case GPUBUF_DTYPE_I8: case GPUBUF_DTYPE_I16: case GPUBUF_DTYPE_I32:
	case GPUBUF_DTYPE_I64:
		d.code = kDLInt;
		break;
	case GPUBUF_DTYPE_U8: case GPUBUF_DTYPE_U16: case GPUBUF_DTYPE_U32:
	case GPUBUF_DTYPE_U64:
		d.code = kDLUInt;
		break;
	case GPUBUF_DTYPE_COMPLEX64: case GPUBUF_DTYPE_COMPLEX128:
		d.code = kDLComplex;
		break;
	default:
		break;
	}
	return d;
}

/* A row-major copy of m; *tensor is its DLTensor in the chosen struct. */
static struct pgb_copy *pgb_copy_make(const struct gpubuf_matrix *m, DLTensor **tensor,
				      int versioned)
{
	size_t es = gpubuf_dtype_size(m->dtype), r, bytes;
	struct pgb_copy *c;
	DLTensor *t;
	char *dst;

	if (__builtin_mul_overflow(m->rows, m->cols, &bytes) ||
	    __builtin_mul_overflow(bytes, es, &bytes) ||
	    __builtin_add_overflow(bytes, sizeof(*c), &bytes) ||
	    !(c = calloc(1, bytes))) {
		PyErr_NoMemory();
		return NULL;
	}
#ifdef PGB_HAVE_DLPACK_V1
	t = versioned ? &c->t.v1.dl_tensor : &c->t.legacy.dl_tensor;
#else
	(void)versioned;
	t = &c->t.legacy.dl_tensor;
#endif
	t->dtype = pgb_dl_dtype(m->dtype);
	dst = (char *)(c + 1);
	for (r = 0; r < m->rows && m->cols; r++) {
		size_t col;

		if (m->layout == GPUBUF_ROW_MAJOR) {
			memcpy(dst + r * m->cols * es, gpubuf_matrix_elem(m, r, 0), m->cols * es);
			continue;
		}
		for (col = 0; col < m->cols; col++)
			memcpy(dst + (r * m->cols + col) * es, gpubuf_matrix_elem(m, r, col), es);
	}
	c->shape[0] = (int64_t)m->rows;
	c->shape[1] = (int64_t)m->cols;
	t->data = m->rows && m->cols ? dst : NULL;
	t->device.device_type = kDLCPU;
	t->device.device_id = 0;
	t->ndim = 2;
	/* Compact row-major, spelled out: DLPack 1.2 wants strides given. */
	c->strides[0] = (int64_t)m->cols;
	c->strides[1] = 1;
	t->shape = c->shape;
	t->strides = c->strides;
	t->byte_offset = 0;
	*tensor = t;
	return c;
}

/* ---- keyword checks --------------------------------------------------------- */

struct pgb_dlpack_request {
	int versioned;
	int copy;
};

static int pgb_dlpack_parse(int device_type, int device_id, PyObject *args,
			    PyObject *kwargs, struct pgb_dlpack_request *req)
{
	static char *kwlist[] = { "stream", "max_version", "dl_device", "copy", NULL };
	PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None;
	PyObject *copy = Py_None;
	int major, minor, dev_type, dev_id;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist,
					 &stream, &max_version, &dl_device, &copy))
		return -1;
	/* gpubuf queues no work, so any stream has nothing to wait for. */
	if (stream != Py_None) {
		long s = PyLong_AsLong(stream);

		if (s == -1 && PyErr_Occurred())
			return -1;
		if (device_type == PGB_DL_CPU && s != -1) {
			PyErr_SetString(PyExc_ValueError,
					"gpubuf: stream must be None or -1 for host (kDLCPU) memory");
			return -1;
		}
		/* 0 is ROCm's default stream, but ambiguous for CUDA. */
		if (device_type == PGB_DL_CUDA && s == 0) {
			PyErr_SetString(PyExc_ValueError,
					"gpubuf: CUDA stream 0 is ambiguous; the array API asks for 1 (legacy default) or 2 (per-thread)");
			return -1;
		}
	}
	req->versioned = 0;
	if (max_version != Py_None) {
		if (!PyTuple_Check(max_version)) {
			PyErr_SetString(PyExc_TypeError, "gpubuf: max_version must be a (major, minor) tuple");
			return -1;
		}
		if (!PyArg_ParseTuple(max_version, "ii;gpubuf: max_version must be (major, minor)",
				      &major, &minor))
			return -1;
		req->versioned = major >= 1 && pgb_dlpack_versioned_available();
	}
	if (dl_device != Py_None) {
		if (!PyTuple_Check(dl_device)) {
			PyErr_SetString(PyExc_TypeError, "gpubuf: dl_device must be a (device_type, device_id) tuple");
			return -1;
		}
		if (!PyArg_ParseTuple(dl_device, "ii;gpubuf: dl_device must be (device_type, device_id)",
				      &dev_type, &dev_id))
			return -1;
		if (dev_type != device_type || dev_id != device_id) {
			PyErr_Format(PyExc_BufferError,
				     "gpubuf: this view exports to DLPack device (%d, %d) only, not (%d, %d)",
				     device_type, device_id, dev_type, dev_id);
			return -1;
		}
	}
	req->copy = copy != Py_None && PyObject_IsTrue(copy);
	if (PyErr_Occurred())
		return -1;
	if (req->copy && device_type != PGB_DL_CPU) {
		PyErr_SetString(PyExc_BufferError,
				"gpubuf: copy=True is for host views; a device view is always in place");
		return -1;
	}
	return 0;
}

/* ---- export ----------------------------------------------------------------- */

PyObject *pgb_dlpack_export(const struct gpubuf_matrix *m, int device_type,
			    int device_id, int read_only, PyObject *args,
			    PyObject *kwargs)
{
	struct pgb_dlpack_request req;
	DLManagedTensor *t;
	PyObject *cap;
	int err;

	if (pgb_dlpack_parse(device_type, device_id, args, kwargs, &req))
		return NULL;
#ifdef PGB_HAVE_DLPACK_V1
	if (req.versioned) {
		struct DLManagedTensorVersioned *v;

		if (req.copy) {
			DLTensor *ct;
			struct pgb_copy *c = pgb_copy_make(m, &ct, 1);

			if (!c)
				return NULL;
			v = &c->t.v1;
			v->version.major = DLPACK_MAJOR_VERSION;
			v->version.minor = DLPACK_MINOR_VERSION;
			v->manager_ctx = c;
			v->deleter = pgb_copy_delete_v1;
			v->flags = DLPACK_FLAG_BITMASK_IS_COPIED;
		} else {
			Py_BEGIN_ALLOW_THREADS
			err = gpubuf_matrix_to_dlpack_versioned(m, device_type, device_id, &v);
			Py_END_ALLOW_THREADS
			if (err)
				return pgb_raise(err, "gpubuf_matrix_to_dlpack_versioned",
						 device_type != PGB_DL_CPU);
			pgb_fold_offset(&v->dl_tensor);
			if (read_only)
				v->flags |= DLPACK_FLAG_BITMASK_READ_ONLY;
		}
		cap = PyCapsule_New(v, pgb_capsule_name_v1, pgb_capsule_destructor);
		if (!cap)
			v->deleter(v);
		return cap;
	}
#endif
	if (req.copy) {
		DLTensor *ct;
		struct pgb_copy *c = pgb_copy_make(m, &ct, 0);

		if (!c)
			return NULL;
		t = &c->t.legacy;
		t->manager_ctx = c;
		t->deleter = pgb_copy_delete;
	} else {
		if (gpubuf_is_readonly(m->buf) || read_only) {
			PyErr_SetString(PyExc_BufferError,
					"gpubuf: the view is read-only and a classic DLPack capsule cannot say so; "
					"ask for max_version=(1, 0) with DLPack >= 1.0, or use numpy.asarray(m)");
			return NULL;
		}
		Py_BEGIN_ALLOW_THREADS
		err = gpubuf_matrix_to_dlpack(m, device_type, device_id, &t);
		Py_END_ALLOW_THREADS
		if (err)
			return pgb_raise(err, "gpubuf_matrix_to_dlpack", device_type != PGB_DL_CPU);
		pgb_fold_offset(&t->dl_tensor);
	}
	cap = PyCapsule_New(t, pgb_capsule_name, pgb_capsule_destructor);
	if (!cap)
		t->deleter(t);
	return cap;
}
