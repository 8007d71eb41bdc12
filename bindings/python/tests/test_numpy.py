# SPDX-License-Identifier: MIT
"""NumPy and gpubuf share memory: np.asarray (buffer protocol and
__array_interface__) and np.from_dlpack, every dtype NumPy has, both
orders, padded and packed ld, sub-views, transposes, lifetimes."""
import gc

import pytest

import gpubuf
from conftest import NUMPY_DTYPES

np = pytest.importorskip("numpy")

LAYOUTS = [("C", None), ("C", "packed"), ("F", None), ("F", "packed")]


def make(ctx, dtype, order, align, shape=(13, 7)):
    m = ctx.empty(shape, dtype=dtype, order=order,
                  align=np.dtype(dtype).itemsize if align == "packed" else None)
    a = np.asarray(m)
    a[...] = (np.arange(shape[0] * shape[1]).reshape(shape) % 100).astype(dtype)
    return m, a


def reference_strides(m):
    """What NumPy gives a (rows, cols) slice of an array padded to ld."""
    rows, cols = m.shape
    if m.order == "C":
        base = np.empty((rows, m.ld), dtype=m.dtype)[:, :cols]
    else:
        base = np.empty((m.ld, cols), dtype=m.dtype, order="F")[:rows, :]
    return base.strides


def address(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("order,align", LAYOUTS)
def test_asarray_is_a_writable_view(ctx, dtype, order, align):
    m, a = make(ctx, dtype, order, align)
    assert a.flags.writeable and a.dtype == np.dtype(dtype)
    assert a.shape == m.shape and a.strides == m.strides == reference_strides(m)
    assert address(a) == m.address
    a[2, 3] = 11
    assert m[2, 3] == 11
    m[4, 5] = 12
    assert a[4, 5] == 12
    d = np.from_dlpack(m)                 # NumPy 1.24: always read-only
    assert address(d) == m.address and d.strides == a.strides
    assert np.array_equal(d, a)
    a[0, 0] = 99
    assert d[0, 0] == 99


@pytest.mark.parametrize("dtype", ["float32", "int64", "complex128", "float16"])
@pytest.mark.parametrize("order,align", LAYOUTS)
def test_subviews_and_transposes(ctx, dtype, order, align):
    m, a = make(ctx, dtype, order, align, shape=(40, 30))
    s = m[5:25, 3:19]
    sa = np.asarray(s)
    assert sa.shape == (20, 16) and sa.strides == a[5:25, 3:19].strides
    assert address(sa) == address(a[5:25, 3:19])
    assert np.array_equal(sa, a[5:25, 3:19])
    ta = np.asarray(s.T)
    assert ta.shape == (16, 20) and ta.strides == sa.T.strides
    assert np.array_equal(ta, a[5:25, 3:19].T)
    td = np.from_dlpack(s.T)
    assert address(td) == address(sa) and np.array_equal(td, ta)
    ta[1, 2] = 7
    assert a[5 + 2, 3 + 1] == 7


def test_array_interface_and_buffer_protocol(ctx):
    m = ctx.zeros((3, 4), dtype="uint16")
    ai = m.__array_interface__
    assert ai["shape"] == (3, 4) and ai["typestr"] == "<u2" and ai["version"] == 3
    assert ai["data"] == (m.address, False) and ai["strides"] == m.strides
    mv = memoryview(m)
    assert mv.format == "H" and mv.shape == (3, 4) and mv.strides == m.strides
    assert not mv.readonly
    packed = ctx.zeros((3, 4), dtype="uint16", align=2)
    assert memoryview(packed).c_contiguous
    assert not memoryview(m).c_contiguous
    with pytest.raises(BufferError, match="strided"):
        np.frombuffer(m, dtype=np.uint8)   # a flat view needs packed rows
    assert np.frombuffer(packed, dtype=np.uint16).size == 12


def test_bfloat16_has_no_numpy_view(ctx):
    m = ctx.zeros((2, 2), dtype="bfloat16")
    with pytest.raises(TypeError, match="NumPy has no bfloat16"):
        np.asarray(m)
    with pytest.raises(BufferError):
        memoryview(m)


def test_lifetime_matrix_dropped_first(ctx):
    m = ctx.zeros((64, 64), dtype="float64")
    keep = m.buffer                    # watches the reference count
    assert keep.refcount == 2
    a = np.asarray(m)
    d = np.from_dlpack(m)
    assert keep.refcount == 3          # the DLPack tensor holds one
    del m
    gc.collect()
    a[63, 63] = 5.0                    # the array keeps the Matrix alive
    assert d[63, 63] == 5.0
    del a
    gc.collect()
    assert keep.refcount == 2
    del d
    gc.collect()
    assert keep.refcount == 1


def test_unused_capsule_releases(ctx):
    m = ctx.zeros((4, 4))
    keep = m.buffer
    caps = [m.__dlpack__() for _ in range(5)]
    assert keep.refcount == 7
    del caps
    gc.collect()
    assert keep.refcount == 2


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "complex128"])
def test_matmul_on_views_equals_copies(ctx, dtype):
    rng = np.random.default_rng(20261203)
    A = ctx.empty((96, 80), dtype=dtype, order="F")
    B = ctx.empty((80, 112), dtype=dtype)
    # Small integers: every product and sum is exact in every dtype.
    np.asarray(A)[...] = rng.integers(-8, 8, size=A.shape)
    np.asarray(B)[...] = rng.integers(-8, 8, size=B.shape)
    a, b = A[8:72, 4:68], B[4:68, 16:100]
    got = np.matmul(np.asarray(a), np.asarray(b))
    want = np.matmul(np.asarray(a).copy(), np.asarray(b).copy())
    assert np.array_equal(got, want)
    # Through DLPack and through the transposed views, too.
    assert np.array_equal(np.matmul(np.from_dlpack(a), np.from_dlpack(b)), want)
    assert np.array_equal(np.matmul(np.asarray(b.T), np.asarray(a.T)), want.T)


def test_from_dlpack_writability(ctx):
    """NumPy 1.x marks every from_dlpack array read-only. NumPy 2 asks for
    a versioned capsule (flag 0 for a writable buffer); 2.4 then gives a
    writable array, 2.2 still a read-only one. Either way a writable array
    must write through, and the memory is the matrix's."""
    m = ctx.zeros((3, 3))
    d = np.from_dlpack(m)
    assert d.__array_interface__["data"][0] == m.address
    if int(np.__version__.split(".")[0]) < 2:
        assert not d.flags.writeable
    if d.flags.writeable:
        d[1, 1] = 4
        assert m[1, 1] == 4.0
