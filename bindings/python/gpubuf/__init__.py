# SPDX-License-Identifier: MIT
"""gpubuf: pinned host matrices that NumPy, PyTorch and GPUs use in place.

    import gpubuf, numpy as np
    m = gpubuf.open().empty((4, 4))      # float32, row-major, pinned
    np.asarray(m)[:] = 1                 # writable zero-copy view
    np.from_dlpack(m).sum()              # 16.0, the same memory

A Context (gpubuf.open()) allocates Matrix and Buffer objects; a Matrix
slices (m[256:768, 256:768]) and transposes (m.T) in O(1), exports itself
through the buffer protocol, __array_interface__ and DLPack, and, where a
driver exists, registers with CUDA (m.cuda()) or HSA (m.hsa()). Every
view and exported tensor keeps the underlying buffer alive. Failures of
libgpubuf raise gpubuf.Error (an OSError) with .errno and the library's
message. See docs/python.md in the source and help(gpubuf.Matrix).
"""
import threading

from gpubuf._gpubuf import (  # noqa: F401  (re-exported)
    DL_CPU, DL_CUDA, DL_ROCM, Buffer, Context, CpuAccess, DeviceMatrix,
    Error, Matrix, NoDeviceError, OutOfMemoryError, Pool, UnsupportedError,
    device_node, dlpack_versioned, library_version, strerror)
from gpubuf.safetensors import (  # noqa: F401  (re-exported)
    SafetensorsError, load_safetensors)

__all__ = [
    "open", "default_context", "empty", "zeros", "buffer", "import_fd",
    "Context", "Buffer", "Matrix", "DeviceMatrix", "Pool", "CpuAccess",
    "Error", "NoDeviceError", "OutOfMemoryError", "UnsupportedError",
    "device_node", "dlpack_versioned", "library_version", "strerror",
    "DL_CPU", "DL_CUDA", "DL_ROCM",
    "load_safetensors", "SafetensorsError",
]


def open(backend=None):  # noqa: A001  (gpubuf.open is the API's name)
    """Open a libgpubuf context: gpubuf.Context(backend).

    backend None or "auto": /dev/gpubuf when gpubuf.ko is loaded, else the
    memfd backend (GPUBUF_BACKEND=module|memfd in the environment decides
    first); "module" or "memfd" insist on one.
    """
    return Context(backend)


_default = None
_default_lock = threading.Lock()


def default_context():
    """The module-level context that gpubuf.empty() and friends use,
    opened with backend=None on first use."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = Context(None)
        return _default


def empty(shape, dtype="float32", order="C", align=None, near=None):
    """default_context().empty(...): see Context.empty."""
    return default_context().empty(shape, dtype, order, align, near)


def zeros(shape, dtype="float32", order="C", align=None, near=None):
    """default_context().zeros(...): see Context.zeros."""
    return default_context().zeros(shape, dtype, order, align, near)


def buffer(nbytes, numa_node=None, near=None):
    """default_context().buffer(...): see Context.buffer."""
    return default_context().buffer(nbytes, numa_node, near)


def import_fd(fd):
    """default_context().import_fd(fd): see Context.import_fd."""
    return default_context().import_fd(fd)


__version__ = "%d.%d.%d" % library_version()
