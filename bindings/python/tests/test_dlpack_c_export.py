# SPDX-License-Identifier: MIT
"""libgpubuf's C DLPack export handed to PyTorch as it is, with no binding
in between (issue 23): what a C or C++ program that links libgpubuf and
passes the DLManagedTensor to PyTorch gets.

Since GPUBUF_0.5, data is element (0, 0) and byte_offset 0, which every
consumer reads right. GPUBUF_0.1's export, which programs linked before
0.5 still get, puts the view's offset in byte_offset; PyTorch 1.13
(Debian 12) ignores byte_offset, so a sub-view came out as the top-left
corner of its parent. The library is reached with ctypes, through the
copy the gpubuf extension already loaded.
"""
import ctypes

import pytest

import gpubuf  # noqa: F401  (loads libgpubuf.so.0)
import dlpack_ctypes as dl

torch = pytest.importorskip("torch")
from torch.utils import dlpack as torch_dlpack  # noqa: E402

F32, ROW_MAJOR, KDLCPU = 3, 0, 1


class Matrix(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("offset", ctypes.c_size_t),
                ("rows", ctypes.c_size_t), ("cols", ctypes.c_size_t),
                ("ld", ctypes.c_size_t), ("dtype", ctypes.c_int),
                ("layout", ctypes.c_int)]


EXPORT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Matrix), ctypes.c_int,
                          ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))

lib = ctypes.CDLL("libgpubuf.so.0")
lib.gpubuf_open.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
lib.gpubuf_close.argtypes = [ctypes.c_void_p]
lib.gpubuf_matrix_alloc.argtypes = [
    ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_size_t,
    ctypes.c_int, ctypes.c_size_t, ctypes.POINTER(Matrix)]
lib.gpubuf_matrix_sub.argtypes = [
    ctypes.POINTER(Matrix), ctypes.c_size_t, ctypes.c_size_t,
    ctypes.c_size_t, ctypes.c_size_t, ctypes.POINTER(Matrix)]
lib.gpubuf_matrix_release.argtypes = [ctypes.POINTER(Matrix)]
lib.gpubuf_matrix_data.argtypes = [ctypes.POINTER(Matrix)]
lib.gpubuf_matrix_data.restype = ctypes.c_void_p
libc = ctypes.CDLL(None)
libc.dlvsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
libc.dlvsym.restype = ctypes.c_void_p
capsule_new = ctypes.pythonapi.PyCapsule_New
capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
capsule_new.restype = ctypes.py_object


def export_fn(version):
    """gpubuf_matrix_to_dlpack as programs linked against version get it."""
    p = libc.dlvsym(lib._handle, b"gpubuf_matrix_to_dlpack",
                    version.encode())
    assert p, f"no gpubuf_matrix_to_dlpack@{version}"
    return EXPORT(p)


@pytest.fixture
def parent():
    """A 12 x 10 f32 row-major matrix whose element (i, j) is 100 i + j, and
    its 5 x 4 sub-view at (3, 2)."""
    ctx = ctypes.c_void_p()
    assert lib.gpubuf_open(ctypes.byref(ctx), 0) == 0
    m, s = Matrix(), Matrix()
    assert lib.gpubuf_matrix_alloc(ctx, F32, 12, 10, ROW_MAJOR, 0,
                                   ctypes.byref(m)) == 0
    data = ctypes.cast(lib.gpubuf_matrix_data(ctypes.byref(m)),
                       ctypes.POINTER(ctypes.c_float))
    for i in range(12):
        for j in range(10):
            data[i * m.ld + j] = 100 * i + j
    assert lib.gpubuf_matrix_sub(ctypes.byref(m), 3, 2, 5, 4,
                                 ctypes.byref(s)) == 0
    yield m, s
    lib.gpubuf_matrix_release(ctypes.byref(m))
    lib.gpubuf_close(ctx)


def to_torch(fn, s):
    out = ctypes.c_void_p()
    assert fn(ctypes.byref(s), KDLCPU, 0, ctypes.byref(out)) == 0
    managed = ctypes.cast(out, ctypes.POINTER(dl.DLManagedTensor)).contents
    t = managed.dl_tensor
    seen = (t.data, t.byte_offset)
    # PyTorch takes the tensor over and calls its deleter when done.
    return torch_dlpack.from_dlpack(capsule_new(out, b"dltensor", None)), seen


def expected(r0=3, c0=2):
    return torch.tensor([[100.0 * (r0 + i) + c0 + j for j in range(4)]
                         for i in range(5)])


def test_default_export_reads_right_in_torch(parent):
    m, s = parent
    t, (data, byte_offset) = to_torch(export_fn("GPUBUF_0.5"), s)
    assert data == lib.gpubuf_matrix_data(ctypes.byref(s))
    assert byte_offset == 0
    assert torch.equal(t, expected())
    # In place: a write through PyTorch lands in the sub-view's element.
    t[4, 3] = -1.0
    data = ctypes.cast(lib.gpubuf_matrix_data(ctypes.byref(m)),
                       ctypes.POINTER(ctypes.c_float))
    assert data[(3 + 4) * m.ld + 2 + 3] == -1.0


def test_linked_symbol_is_the_new_one(parent):
    """What a program links now is the GPUBUF_0.5 export."""
    _, s = parent
    t, (data, byte_offset) = to_torch(EXPORT(
        ctypes.cast(lib.gpubuf_matrix_to_dlpack, ctypes.c_void_p).value), s)
    assert byte_offset == 0
    assert torch.equal(t, expected())


def test_v0_1_export_keeps_its_promise(parent):
    """GPUBUF_0.1's layout is unchanged; what PyTorch makes of it is
    printed, since only some versions read byte_offset."""
    m, s = parent
    t, (data, byte_offset) = to_torch(export_fn("GPUBUF_0.1"), s)
    assert data == lib.gpubuf_matrix_data(ctypes.byref(m))
    assert byte_offset == (3 * m.ld + 2) * 4
    if torch.equal(t, expected()):
        print(f"# torch {torch.__version__} honours byte_offset")
    else:
        assert torch.equal(t, expected(0, 0))
        print(f"# torch {torch.__version__} ignores byte_offset: "
              "the 0.1 export's sub-view reads as the parent's corner")
