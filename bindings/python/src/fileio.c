// SPDX-License-Identifier: MIT
/*
 * Buffer.read_file()/write_file() and Matrix.read_file()/write_file():
 * gpubuf_read_file(3) and its siblings, without the GIL. The file is a
 * path (opened and closed here), an int descriptor or an object with
 * fileno(); its own offset is left alone either way.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pygpubuf.h"

struct pgb_io_args {
	PyObject *file;
	unsigned long long file_offset;
	PyObject *nbytes;		/* None: the rest of the file */
	Py_ssize_t offset;		/* in the buffer */
	int direct, uring;
	unsigned int queue_depth;
	Py_ssize_t request_bytes;
};

/* The descriptor to use, and whether it is ours to close; -1 on error. */
static int pgb_io_fd(PyObject *file, int write, int *opened)
{
	PyObject *path = NULL;
	int fd;

	*opened = 0;
	/*
	 * An int or an object with fileno(): the public call for both (the
	 * private _PyLong_AsInt is gone from Python 3.13). ValueError for
	 * a negative descriptor, OverflowError past int.
	 */
	if (PyLong_Check(file) || PyObject_HasAttrString(file, "fileno"))
		return PyObject_AsFileDescriptor(file);
	if (!PyUnicode_FSConverter(file, &path))
		return -1;
	Py_BEGIN_ALLOW_THREADS
	fd = open(PyBytes_AS_STRING(path),
		  (write ? O_WRONLY | O_CREAT : O_RDONLY) | O_CLOEXEC, 0666);
	Py_END_ALLOW_THREADS
	if (fd < 0)
		PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, file);
	else
		*opened = 1;
	Py_DECREF(path);
	return fd;
}

static const char *pgb_io_method(uint32_t m)
{
	return m == GPUBUF_IO_URING_FIXED ? "io_uring-fixed" :
	       m == GPUBUF_IO_URING ? "io_uring" :
	       m == GPUBUF_IO_PREAD ? "pread" : "none";
}

/* Raise gpubuf.Error with .bytes_done: what landed before the failure. */
static PyObject *pgb_io_raise(int err, const char *fn,
			      const struct gpubuf_io_result *res)
{
	PyObject *type, *value, *tb, *n;

	pgb_raise(err, fn, 1);
	PyErr_Fetch(&type, &value, &tb);
	PyErr_NormalizeException(&type, &value, &tb);
	n = PyLong_FromUnsignedLongLong(res->bytes);
	if (value && n)
		PyObject_SetAttrString(value, "bytes_done", n);
	Py_XDECREF(n);
	PyErr_Restore(type, value, tb);
	return NULL;
}

static int pgb_io_parse(PyObject *args, PyObject *kwargs, const char *name,
			struct pgb_io_args *a)
{
	static char *kwlist[] = { "file", "file_offset", "nbytes", "offset",
				  "direct", "uring", "queue_depth",
				  "request_bytes", NULL };
	char fmt[64];

	*a = (struct pgb_io_args){ .nbytes = Py_None, .direct = 1, .uring = 1 };
	snprintf(fmt, sizeof(fmt), "O|KOn$ppIn:%s", name);
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kwlist, &a->file,
					 &a->file_offset, &a->nbytes,
					 &a->offset, &a->direct, &a->uring,
					 &a->queue_depth, &a->request_bytes))
		return -1;
	if (a->offset < 0 || a->request_bytes < 0) {
		PyErr_SetString(PyExc_ValueError,
				"gpubuf: offset and request_bytes must not be negative");
		return -1;
	}
	return 0;
}

/*
 * The transfer itself. buf (one reference held here) or m; for a buffer,
 * nbytes None reads the rest of the file (writes: the rest of the buffer).
 */
static PyObject *pgb_io(struct gpubuf *buf, const struct gpubuf_matrix *m,
			int write, PyObject *args, PyObject *kwargs,
			const char *name, const char *fn)
{
	struct gpubuf_io_opts o = GPUBUF_IO_OPTS_INIT;
	struct gpubuf_io_result res;
	struct pgb_io_args a;
	unsigned long long len = 0;
	int fd, opened, err;
	struct stat st;

	if (pgb_io_parse(args, kwargs, name, &a))
		return NULL;
	if (m && (a.nbytes != Py_None || a.offset)) {
		PyErr_SetString(PyExc_TypeError,
				"gpubuf: a matrix moves all of its elements: no nbytes or offset");
		return NULL;
	}
	if (a.nbytes != Py_None) {
		len = PyLong_AsUnsignedLongLong(a.nbytes);
		if (len == (unsigned long long)-1 && PyErr_Occurred())
			return NULL;
	}
	fd = pgb_io_fd(a.file, write, &opened);
	if (fd < 0) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_ValueError, "gpubuf: a negative file descriptor");
		return NULL;
	}
	if (!m && a.nbytes == Py_None) {
		if (write)
			len = (unsigned long long)gpubuf_size(buf) - (unsigned long long)a.offset;
		else if (!fstat(fd, &st) && (unsigned long long)st.st_size > a.file_offset)
			len = (unsigned long long)st.st_size - a.file_offset;
	}
	o.flags = (a.direct ? 0 : GPUBUF_IO_BUFFERED) |
		  (a.uring ? 0 : GPUBUF_IO_NO_URING);
	o.queue_depth = a.queue_depth;
	o.request_bytes = (size_t)a.request_bytes;
	Py_BEGIN_ALLOW_THREADS
	if (m)
		err = write ? gpubuf_matrix_write_file(m, fd, a.file_offset, &o, &res) :
			      gpubuf_matrix_read_file(m, fd, a.file_offset, &o, &res);
	else
		err = write ? gpubuf_write_file(buf, (size_t)a.offset, fd,
						a.file_offset, (size_t)len, &o, &res) :
			      gpubuf_read_file(buf, (size_t)a.offset, fd,
					       a.file_offset, (size_t)len, &o, &res);
	if (opened)
		close(fd);
	Py_END_ALLOW_THREADS
	if (err)
		return pgb_io_raise(err, fn, &res);
	return Py_BuildValue("{sKsKsssI}", "bytes", (unsigned long long)res.bytes,
			     "direct_bytes", (unsigned long long)res.direct_bytes,
			     "method", pgb_io_method(res.method),
			     "align", res.align);
}

PyObject *pgb_buffer_io(struct gpubuf *buf, int write, PyObject *args,
			PyObject *kwargs)
{
	PyObject *ret;

	/* A release() from another thread must not unmap it under the I/O. */
	gpubuf_ref(buf);
	ret = pgb_io(buf, NULL, write, args, kwargs,
		     write ? "write_file" : "read_file",
		     write ? "gpubuf_write_file" : "gpubuf_read_file");
	gpubuf_unref(buf);
	return ret;
}

PyObject *pgb_matrix_io(const struct gpubuf_matrix *m, int write,
			PyObject *args, PyObject *kwargs)
{
	struct gpubuf_matrix copy = *m;
	PyObject *ret;

	gpubuf_ref(copy.buf);
	ret = pgb_io(NULL, &copy, write, args, kwargs,
		     write ? "write_file" : "read_file",
		     write ? "gpubuf_matrix_write_file" : "gpubuf_matrix_read_file");
	gpubuf_unref(copy.buf);
	return ret;
}
