// SPDX-License-Identifier: MIT
/*
 * gpubuf._gpubuf module: errors, dtype names, module functions and type
 * registration. The Python package (gpubuf/__init__.py) adds the default
 * context on top.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "pygpubuf.h"

PyObject *pgb_Error;
PyObject *pgb_NoDeviceError;
PyObject *pgb_UnsupportedError;
PyObject *pgb_OutOfMemoryError;

PyObject *pgb_raise_text(PyObject *type, int errnum, const char *fmt, ...)
{
	PyObject *exc, *msg;
	va_list ap;

	va_start(ap, fmt);
	msg = PyUnicode_FromFormatV(fmt, ap);
	va_end(ap);
	if (!msg)
		return NULL;
	/* OSError(errno, strerror): .errno and .strerror are set from them. */
	exc = PyObject_CallFunction(type, "iO", errnum, msg);
	Py_DECREF(msg);
	if (exc) {
		PyErr_SetObject(type, exc);
		Py_DECREF(exc);
	}
	return NULL;
}

PyObject *pgb_raise(int err, const char *what, int with_detail)
{
	const char *detail = with_detail ? gpubuf_last_error() : "";
	PyObject *type = pgb_Error;

	if (err == -ENODEV || err == -ENOENT)
		type = pgb_NoDeviceError;
	else if (err == -EOPNOTSUPP)
		type = pgb_UnsupportedError;
	else if (err == -ENOMEM)
		type = pgb_OutOfMemoryError;
	if (*detail)
		return pgb_raise_text(type, -err, "%s: %s (%s)", what,
				      gpubuf_strerror(err), detail);
	return pgb_raise_text(type, -err, "%s: %s", what, gpubuf_strerror(err));
}

static const struct pgb_dtype_info pgb_dtypes[] = {
	{ "float16", GPUBUF_DTYPE_F16, "e", "<f2" },
	/* NumPy has no bfloat16 and struct no code for it: DLPack only. */
	{ "bfloat16", GPUBUF_DTYPE_BF16, NULL, NULL },
	{ "float32", GPUBUF_DTYPE_F32, "f", "<f4" },
	{ "float64", GPUBUF_DTYPE_F64, "d", "<f8" },
	{ "int8", GPUBUF_DTYPE_I8, "b", "|i1" },
	{ "uint8", GPUBUF_DTYPE_U8, "B", "|u1" },
	{ "int16", GPUBUF_DTYPE_I16, "h", "<i2" },
	{ "uint16", GPUBUF_DTYPE_U16, "H", "<u2" },
	{ "int32", GPUBUF_DTYPE_I32, "i", "<i4" },
	{ "uint32", GPUBUF_DTYPE_U32, "I", "<u4" },
	{ "int64", GPUBUF_DTYPE_I64, "q", "<i8" },
	{ "uint64", GPUBUF_DTYPE_U64, "Q", "<u8" },
	{ "complex64", GPUBUF_DTYPE_COMPLEX64, "Zf", "<c8" },
	{ "complex128", GPUBUF_DTYPE_COMPLEX128, "Zd", "<c16" },
};

/*
 * NumPy's short codes. Words such as "float" or "int" are left out: NumPy
 * and PyTorch read them as different widths.
 */
static const struct {
	const char *alias;
	const char *name;
} pgb_dtype_aliases[] = {
	{ "f2", "float16" }, { "f4", "float32" }, { "f8", "float64" },
	{ "i1", "int8" }, { "u1", "uint8" }, { "i2", "int16" },
	{ "u2", "uint16" }, { "i4", "int32" }, { "u4", "uint32" },
	{ "i8", "int64" }, { "u8", "uint64" }, { "c8", "complex64" },
	{ "c16", "complex128" },
};

const struct pgb_dtype_info *pgb_dtype_info(enum gpubuf_dtype dtype)
{
	size_t i;

	for (i = 0; i < sizeof(pgb_dtypes) / sizeof(pgb_dtypes[0]); i++)
		if (pgb_dtypes[i].dtype == dtype)
			return &pgb_dtypes[i];
	return NULL;
}

static int pgb_dtype_from_name(const char *name, enum gpubuf_dtype *out)
{
	size_t i;

	if (!strncmp(name, "torch.", 6))
		name += 6;
	/* NumPy's typestr form: "<f4", "|u1", "=i8". */
	if (name[0] && strchr("<|=", name[0]))
		name++;
	for (i = 0; i < sizeof(pgb_dtype_aliases) / sizeof(pgb_dtype_aliases[0]); i++)
		if (!strcmp(name, pgb_dtype_aliases[i].alias))
			name = pgb_dtype_aliases[i].name;
	for (i = 0; i < sizeof(pgb_dtypes) / sizeof(pgb_dtypes[0]); i++) {
		if (!strcmp(name, pgb_dtypes[i].name)) {
			*out = pgb_dtypes[i].dtype;
			return 0;
		}
	}
	return -1;
}

/* ">" from a numpy.dtype's byteorder: gpubuf's elements are little-endian. */
static int pgb_big_endian(PyObject *dtype)
{
	PyObject *order = PyObject_GetAttrString(dtype, "byteorder");
	const char *s = order && PyUnicode_Check(order) ? PyUnicode_AsUTF8(order) : NULL;
	int big = s && !strcmp(s, ">");

	Py_XDECREF(order);
	PyErr_Clear();
	return big;
}

int pgb_dtype_from_object(PyObject *obj, enum gpubuf_dtype *out)
{
	PyObject *given = obj, *name = NULL, *dtype = NULL;
	const char *s;
	int ret;

	if (!obj || obj == Py_None) {
		*out = GPUBUF_DTYPE_F32;
		return 0;
	}
	/*
	 * A type (numpy.float32, numpy.longlong): numpy.dtype() names it, when
	 * the caller has NumPy loaded; else the type's own name.
	 */
	if (PyType_Check(obj)) {
		PyObject *key = PyUnicode_FromString("numpy");
		PyObject *numpy = key ? PyImport_GetModule(key) : NULL;

		Py_XDECREF(key);
		dtype = numpy ? PyObject_CallMethod(numpy, "dtype", "O", obj) : NULL;
		Py_XDECREF(numpy);
		PyErr_Clear();
		if (dtype)
			obj = dtype;
	}
	if (PyUnicode_Check(obj)) {
		name = Py_NewRef(obj);
	} else if (PyObject_HasAttrString(obj, "itemsize") &&
		   PyObject_HasAttrString(obj, "name")) {
		/* numpy.dtype; its name does not show a byte order. */
		name = pgb_big_endian(obj) ? PyUnicode_FromString("big-endian") :
		       PyObject_GetAttrString(obj, "name");
	} else if (PyType_Check(obj)) {
		name = PyObject_GetAttrString(obj, "__name__");
	} else {
		name = PyObject_Str(obj);			/* torch.float32 */
	}
	Py_XDECREF(dtype);
	if (!name)
		return -1;
	s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
	ret = s ? pgb_dtype_from_name(s, out) : -1;
	if (ret)
		PyErr_Format(PyExc_TypeError,
			     "gpubuf: unsupported dtype %R (float16, bfloat16, float32, float64, int8, uint8, int16, uint16, int32, uint32, int64, uint64, complex64, complex128; little-endian)",
			     given);
	Py_DECREF(name);
	return ret;
}

int pgb_order_from_object(PyObject *obj, enum gpubuf_layout *out)
{
	const char *s;

	if (!obj || obj == Py_None) {
		*out = GPUBUF_ROW_MAJOR;
		return 0;
	}
	s = PyUnicode_Check(obj) ? PyUnicode_AsUTF8(obj) : NULL;
	if (s && !strcasecmp(s, "C")) {
		*out = GPUBUF_ROW_MAJOR;
		return 0;
	}
	if (s && !strcasecmp(s, "F")) {
		*out = GPUBUF_COL_MAJOR;
		return 0;
	}
	PyErr_Format(PyExc_ValueError,
		     "gpubuf: order must be 'C' (row-major) or 'F' (column-major), not %R",
		     obj);
	return -1;
}

int pgb_access_from_str(const char *mode, unsigned int *out)
{
	if (!strcmp(mode, "r"))
		*out = GPUBUF_ACCESS_READ;
	else if (!strcmp(mode, "w"))
		*out = GPUBUF_ACCESS_WRITE;
	else if (!strcmp(mode, "rw") || !strcmp(mode, "wr"))
		*out = GPUBUF_ACCESS_RW;
	else {
		PyErr_Format(PyExc_ValueError,
			     "gpubuf: access mode must be 'r', 'w' or 'rw', not '%s'",
			     mode);
		return -1;
	}
	return 0;
}

static PyObject *pgb_library_version(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	return Py_BuildValue("(iii)", gpubuf_version_major(),
			     gpubuf_version_minor(), gpubuf_version_patch());
}

static PyObject *pgb_dlpack_versioned(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	return PyBool_FromLong(pgb_dlpack_versioned_available());
}

static PyObject *pgb_strerror(PyObject *mod, PyObject *arg)
{
	long err = PyLong_AsLong(arg);

	(void)mod;
	if (err == -1 && PyErr_Occurred())
		return NULL;
	if (err > INT_MAX || err < -INT_MAX) {
		PyErr_SetString(PyExc_OverflowError, "gpubuf: not an errno value");
		return NULL;
	}
	return PyUnicode_FromString(gpubuf_strerror(err > 0 ? -(int)err : (int)err));
}

static PyObject *pgb_device_node(PyObject *mod, PyObject *arg)
{
	const char *device = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
	int node = GPUBUF_NUMA_ANY, err;

	(void)mod;
	if (!device) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError, "gpubuf: device_node() takes a device string");
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	err = gpubuf_device_node(device, &node);
	Py_END_ALLOW_THREADS
	if (err)
		return pgb_raise(err, "gpubuf_device_node", 1);
	if (node == GPUBUF_NUMA_ANY)
		Py_RETURN_NONE;
	return PyLong_FromLong(node);
}

static PyMethodDef pgb_module_methods[] = {
	{ "device_node", pgb_device_node, METH_O,
	  "device_node(device) -> int or None\n\n"
	  "The NUMA node a device's buffers belong on: 'cuda:N', 'hsa:N',\n"
	  "'vulkan:N', 'pci:DDDD:BB:DD.F', 'drm:PATH' or 'rdma:NAME'; None for\n"
	  "a device without affinity. See gpubuf_device_node(3)." },
	{ "library_version", pgb_library_version, METH_NOARGS,
	  "library_version() -> (major, minor, patch)\n\n"
	  "Version of the libgpubuf this process loaded." },
	{ "dlpack_versioned", pgb_dlpack_versioned, METH_NOARGS,
	  "dlpack_versioned() -> bool\n\n"
	  "True when __dlpack__(max_version=(1, 0)) gives versioned\n"
	  "\"dltensor_versioned\" capsules: the extension and libgpubuf were\n"
	  "built against DLPack 1.0 or later. Otherwise every capsule is a\n"
	  "classic \"dltensor\"." },
	{ "strerror", pgb_strerror, METH_O,
	  "strerror(errno) -> str\n\nlibgpubuf's explanation of an errno value." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef pgb_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "gpubuf._gpubuf",
	.m_doc = "CPython binding of libgpubuf; use the gpubuf package.",
	.m_size = -1,
	.m_methods = pgb_module_methods,
};

static int pgb_add_error(PyObject *mod, const char *name, PyObject *base,
			 const char *doc, PyObject **out)
{
	char qualified[64];

	snprintf(qualified, sizeof(qualified), "gpubuf.%s", name);
	*out = PyErr_NewExceptionWithDoc(qualified, doc, base, NULL);
	if (!*out)
		return -1;
	return PyModule_AddObjectRef(mod, name, *out);
}

/* ENOMEM is both a gpubuf.Error and a MemoryError, as Python code expects. */
static int pgb_add_memory_error(PyObject *mod)
{
	PyObject *bases = PyTuple_Pack(2, pgb_Error, PyExc_MemoryError);
	int ret;

	if (!bases)
		return -1;
	ret = pgb_add_error(mod, "OutOfMemoryError", bases,
			    "ENOMEM: no memory for the buffer, its mapping or the\n"
			    "library's own records (also a MemoryError).",
			    &pgb_OutOfMemoryError);
	Py_DECREF(bases);
	return ret;
}

static int pgb_add_type(PyObject *mod, const char *name, PyTypeObject *type)
{
	if (PyType_Ready(type) < 0)
		return -1;
	return PyModule_AddObjectRef(mod, name, (PyObject *)type);
}

PyMODINIT_FUNC PyInit__gpubuf(void)
{
	PyObject *mod = PyModule_Create(&pgb_module);

	if (!mod)
		return NULL;
	if (pgb_add_error(mod, "Error", PyExc_OSError,
			  "A libgpubuf call failed: .errno is the errno value,\n"
			  ".strerror libgpubuf's explanation and, for GPU\n"
			  "runtimes, the runtime's own error text.",
			  &pgb_Error) ||
	    pgb_add_error(mod, "NoDeviceError", pgb_Error,
			  "ENODEV or ENOENT: no /dev/gpubuf, no GPU driver or\n"
			  "runtime, or no such device.",
			  &pgb_NoDeviceError) ||
	    pgb_add_error(mod, "UnsupportedError", pgb_Error,
			  "EOPNOTSUPP: this libgpubuf was built without the\n"
			  "feature, or the backend cannot do it.",
			  &pgb_UnsupportedError) ||
	    pgb_add_memory_error(mod) ||
	    pgb_add_type(mod, "Context", &pgb_ContextType) ||
	    pgb_add_type(mod, "Buffer", &pgb_BufferType) ||
	    pgb_add_type(mod, "CpuAccess", &pgb_CpuAccessType) ||
	    pgb_add_type(mod, "Pool", &pgb_PoolType) ||
	    pgb_add_type(mod, "Matrix", &pgb_MatrixType) ||
	    pgb_add_type(mod, "DeviceMatrix", &pgb_DeviceMatrixType) ||
	    PyModule_AddIntConstant(mod, "DL_CPU", PGB_DL_CPU) ||
	    PyModule_AddIntConstant(mod, "DL_CUDA", PGB_DL_CUDA) ||
	    PyModule_AddIntConstant(mod, "DL_ROCM", PGB_DL_ROCM)) {
		Py_DECREF(mod);
		return NULL;
	}
	return mod;
}
