# SPDX-License-Identifier: MIT
"""PyTorch and gpubuf share memory through DLPack (torch.from_dlpack and
torch.utils.dlpack): every dtype PyTorch has, both orders, padded and
packed ld, sub-views, transposes, lifetimes, torch.mm on views."""
import gc

import pytest

from conftest import TORCH_DTYPES, TORCH_UNSIGNED

torch = pytest.importorskip("torch")
from torch.utils import dlpack as torch_dlpack  # noqa: E402

LAYOUTS = [("C", None), ("C", "packed"), ("F", None), ("F", "packed")]


def tdtype(name):
    return getattr(torch, name)


def make(ctx, dtype, order, align, shape=(13, 7)):
    es = torch.empty((), dtype=tdtype(dtype)).element_size()
    m = ctx.empty(shape, dtype=dtype, order=order,
                  align=es if align == "packed" else None)
    t = torch.from_dlpack(m)
    t.copy_((torch.arange(shape[0] * shape[1]).reshape(shape) % 100).to(tdtype(dtype)))
    return m, t


def reference_stride(m):
    """What PyTorch gives a (rows, cols) slice of a tensor padded to ld."""
    rows, cols = m.shape
    if m.order == "C":
        return torch.empty((rows, m.ld))[:, :cols].stride()
    return torch.empty((cols, m.ld))[:, :rows].t().stride()


@pytest.mark.parametrize("dtype", TORCH_DTYPES)
@pytest.mark.parametrize("order,align", LAYOUTS)
def test_from_dlpack_shares_memory(ctx, dtype, order, align):
    m, t = make(ctx, dtype, order, align)
    assert t.dtype == tdtype(dtype) and tuple(t.shape) == m.shape
    assert t.stride() == tuple(s // m.itemsize for s in m.strides) == reference_stride(m)
    assert t.data_ptr() == m.address and t.device.type == "cpu"
    t[2, 3] = 11
    assert m[2, 3] == 11
    m[4, 5] = 12
    assert t[4, 5].item() == 12
    u = torch_dlpack.from_dlpack(m.__dlpack__())
    assert u.data_ptr() == m.address and torch.equal(u, t)


@pytest.mark.parametrize("dtype", TORCH_UNSIGNED)
def test_wide_unsigned_shared_or_refused(ctx, dtype):
    """PyTorch >= 2.3 shares them (tested above too); older ones refuse
    the capsule, which must then give its reference back."""
    m = ctx.zeros((2, 2), dtype=dtype)
    keep = m.buffer
    if dtype in TORCH_DTYPES:
        assert torch.from_dlpack(m).data_ptr() == m.address
        return
    with pytest.raises((RuntimeError, TypeError, BufferError)):
        torch.from_dlpack(m)
    gc.collect()
    assert keep.refcount == 2


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int16", "complex64"])
@pytest.mark.parametrize("order,align", LAYOUTS)
def test_subviews_and_transposes(ctx, dtype, order, align):
    m, t = make(ctx, dtype, order, align, shape=(40, 30))
    s = torch.from_dlpack(m[5:25, 3:19])
    assert s.data_ptr() == t[5:25, 3:19].data_ptr()
    assert s.stride() == t[5:25, 3:19].stride() and torch.equal(s, t[5:25, 3:19])
    st = torch.from_dlpack(m[5:25, 3:19].T)
    assert st.stride() == s.t().stride() and torch.equal(st, s.t())
    st[1, 2] = 7
    assert t[5 + 2, 3 + 1].item() == 7


def test_numpy_and_torch_see_each_others_writes(ctx):
    np = pytest.importorskip("numpy")
    m = ctx.zeros((8, 8), dtype="float32", order="F")
    a, t = np.asarray(m), torch.from_dlpack(m)
    a[1, 2] = 3.0
    assert t[1, 2].item() == 3.0
    t[5, 6] = -1.0
    assert a[5, 6] == -1.0
    assert torch.equal(torch.from_numpy(a), t)


def test_lifetime_matrix_dropped_first(ctx):
    m = ctx.zeros((32, 32), dtype="float64", align=1024)
    keep, ld = m.buffer, m.ld
    t = torch.from_dlpack(m[1:31, 1:31])
    assert keep.refcount == 3
    del m
    gc.collect()
    t.fill_(2.0)
    assert keep.matrix("float64", 32, 32, ld=ld)[1, 1] == 2.0
    del t
    gc.collect()
    assert keep.refcount == 1


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bfloat16", "complex64"])
def test_mm_on_views_equals_copies(ctx, dtype):
    g = torch.Generator().manual_seed(20261203)
    A = ctx.empty((96, 80), dtype=dtype, order="F")
    B = ctx.empty((80, 112), dtype=dtype)
    # Small integers: exact in every dtype, bfloat16 included.
    torch.from_dlpack(A).copy_(torch.randint(-4, 4, A.shape, generator=g))
    torch.from_dlpack(B).copy_(torch.randint(-4, 4, B.shape, generator=g))
    a, b = torch.from_dlpack(A[8:72, 4:68]), torch.from_dlpack(B[4:68, 16:100])
    if dtype == "bfloat16":      # no bf16 CPU matmul in PyTorch 1.13: compare in f32
        a, b = a.float(), b.float()
    want = torch.mm(a.clone().contiguous(), b.clone().contiguous())
    assert torch.equal(torch.mm(a, b), want)
    assert torch.equal(torch.mm(torch.from_dlpack(B[4:68, 16:100].T).to(a.dtype),
                                torch.from_dlpack(A[8:72, 4:68].T).to(a.dtype)), want.t())
