# SPDX-License-Identifier: MIT
"""The gpubuf API itself: contexts, matrices, views, buffers, pools, errors."""
import errno
import gc
import os

import pytest

import gpubuf
from conftest import DTYPES, run_python


def test_open_backends(ctx):
    with gpubuf.open("memfd") as m:
        assert m.backend == "memfd"
        assert m.driver_version is None
    assert ctx.backend in ("module", "memfd")
    assert ctx.page_size >= 4096
    with pytest.raises(ValueError, match="backend must be"):
        gpubuf.open("cuda")


def test_open_module_without_device_raises_errno():
    if os.path.exists("/dev/gpubuf"):
        with gpubuf.open("module") as c:
            assert c.backend == "module"
            assert len(c.driver_version) == 3
        return
    with pytest.raises(gpubuf.NoDeviceError) as e:
        gpubuf.open("module")
    assert isinstance(e.value, OSError)
    assert e.value.errno in (errno.ENOENT, errno.ENODEV)
    assert "gpubuf_open" in str(e.value)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_empty_geometry(ctx, dtype, order):
    m = ctx.empty((5, 3), dtype=dtype, order=order)
    es = m.itemsize
    assert m.shape == (5, 3) and m.dtype == dtype and m.order == order
    # Default pitch: each row (column) on a 256-byte boundary.
    assert m.ld * es % 256 == 0 and m.ld >= (3 if order == "C" else 5)
    expect = (m.ld * es, es) if order == "C" else (es, m.ld * es)
    assert m.strides == expect
    packed = ctx.empty((5, 3), dtype=dtype, order=order, align=es)
    assert packed.ld == (3 if order == "C" else 5)
    assert m.offset == 0 and m.address == m.buffer.address


def test_dtype_spellings(ctx):
    np = pytest.importorskip("numpy")
    spellings = ["float64", "f8", "<f8", np.float64, np.dtype("float64")]
    try:
        import torch
        spellings.append(torch.float64)
    except ImportError:
        pass
    for spelling in spellings:
        assert ctx.empty((1, 1), dtype=spelling).dtype == "float64"
    for bad in ("float", "int", "float8", 3, np.dtype("bool")):
        with pytest.raises(TypeError, match="unsupported dtype"):
            ctx.empty((1, 1), dtype=bad)


def test_bad_arguments(ctx):
    with pytest.raises(ValueError, match="two dimensions"):
        ctx.empty((4,))
    with pytest.raises(ValueError, match="negative"):
        ctx.empty((-1, 4))
    with pytest.raises(ValueError, match="order"):
        ctx.empty((2, 2), order="K")
    with pytest.raises(gpubuf.Error) as e:
        ctx.empty((2, 2), align=3)
    assert e.value.errno == errno.EINVAL
    with pytest.raises(gpubuf.Error) as e:
        ctx.empty((1 << 62, 1 << 62))
    assert e.value.errno in (errno.EOVERFLOW, errno.ENOMEM, errno.EINVAL)


def test_zeros_are_zero(ctx):
    m = ctx.zeros((33, 17), dtype="float64")
    assert all(m[r, c] == 0.0 for r in range(33) for c in range(17))


def test_subview_is_o1_and_aliases(ctx):
    m = ctx.zeros((1024, 1024), dtype="float32")
    s = m[256:768, 256:768]
    assert s.shape == (512, 512) and s.ld == m.ld and s.strides == m.strides
    assert s.offset == (256 * m.ld + 256) * 4
    assert s.address == m.address + s.offset
    s[0, 0] = 7.5
    assert m[256, 256] == 7.5
    assert m[-1, -1] == 0.0
    assert m[3].shape == (1, 1024)            # an int keeps its dimension
    assert m[3, :].shape == (1, 1024)
    assert m[:, 5].shape == (1024, 1)
    assert m[10:5, :].shape == (0, 1024)      # empty, like Python slices
    with pytest.raises(IndexError, match="step 1"):
        m[::2, :]
    with pytest.raises(IndexError):
        m[1024, 0]
    with pytest.raises(IndexError):
        m[0, 0, 0]
    with pytest.raises(TypeError):
        m["a", 0]


def test_transpose(ctx):
    m = ctx.zeros((3, 7), dtype="int32")
    t = m.T
    assert t.shape == (7, 3) and t.order == "F" and t.ld == m.ld
    assert t.strides == (m.strides[1], m.strides[0])
    m[1, 4] = -9
    assert t[4, 1] == -9
    assert m.T.T.shape == m.shape and m.T.T.order == "C"
    assert m.transpose().shape == (7, 3)


@pytest.mark.parametrize("dtype,value", [
    ("float16", 1.5), ("bfloat16", -2.0), ("float32", 0.25), ("float64", 1e300),
    ("int8", -128), ("uint8", 255), ("int16", -32768), ("uint16", 65535),
    ("int32", -2 ** 31), ("uint32", 2 ** 32 - 1), ("int64", -2 ** 63),
    ("uint64", 2 ** 64 - 1), ("complex64", 1.5 - 2j), ("complex128", -1e200 + 3j)])
def test_element_round_trip(ctx, dtype, value):
    m = ctx.zeros((2, 2), dtype=dtype)
    m[1, 0] = value
    assert m[1, 0] == value and m[0, 0] == 0
    if dtype.startswith(("int", "uint")):
        with pytest.raises(OverflowError):
            m[0, 0] = value + (1 if value > 0 else -1)
    with pytest.raises(TypeError):
        m[0:1, 0:1] = value


def test_fd(ctx, backend):
    m = ctx.empty((4, 4))
    if backend == "memfd":
        assert m.fd is None and m.buffer.fd is None
        return
    assert m.fd >= 0 and m.fd == m.buffer.fd
    assert os.fstat(m.fd).st_size in (0, m.buffer.nbytes)
    # Another context maps the same dma-buf: the same memory.
    with gpubuf.open("module") as other:
        b = other.import_fd(m.fd)
        b.matrix("float32", 4, 4, ld=m.ld)[2, 3] = 42.0
        assert m[2, 3] == 42.0


def test_cpu_access(ctx):
    m = ctx.zeros((8, 8))
    with m.cpu_access("rw") as acc:
        m[0, 0] = 1.0
        with pytest.raises(RuntimeError, match="already entered"):
            acc.__enter__()
    with m.cpu_access("r"):
        assert m[0, 0] == 1.0
    with m.buffer.cpu_access("w"):
        pass
    with pytest.raises(ValueError, match="'r', 'w' or 'rw'"):
        m.cpu_access("x")


def test_buffer_views(ctx):
    b = ctx.buffer(10000)
    assert b.nbytes % ctx.page_size == 0 and b.nbytes >= 10000
    mv = memoryview(b)
    mv[8:16] = bytes(range(8))
    m = b.matrix("uint8", 2, 8, ld=8)
    assert [m[1, c] for c in range(8)] == list(range(8))
    with pytest.raises(BufferError):
        b.release()                      # the memoryview still uses it
    mv.release()
    f = b.matrix("float64", 3, 2, ld=4, order="F", offset=64)
    assert f.offset == 64 and f.strides == (8, 32)
    with pytest.raises(gpubuf.Error) as e:
        b.matrix("float64", 1, b.nbytes, ld=b.nbytes)
    assert e.value.errno == errno.ERANGE
    with pytest.raises(gpubuf.Error) as e:
        b.matrix("float64", 4, 4, ld=2)
    assert e.value.errno == errno.EINVAL
    b.release()
    with pytest.raises(ValueError, match="released"):
        b.nbytes
    assert m[1, 7] == 7                      # the view holds its own reference


def test_import_fd_rejects_non_dmabuf(ctx):
    with open("/proc/self/stat", "rb") as f:
        with pytest.raises(gpubuf.Error) as e:
            ctx.import_fd(f)
    assert e.value.errno > 0 and "gpubuf_import" in str(e.value)
    with pytest.raises(TypeError):
        ctx.import_fd("3")


def test_pool(ctx):
    with ctx.pool(max_cached_bytes=1 << 20) as pool:
        b = pool.get(5000)
        addr = b.address
        pool.put(b)
        with pytest.raises(ValueError, match="returned to its pool"):
            b.address
        again = pool.get(6000)                   # same size class
        assert again.address == addr
        st = pool.stats()
        assert st["hits"] == 1 and st["misses"] == 1 and st["puts"] == 1
        # A buffer still viewed elsewhere is dropped, not cached.
        m = again.matrix("uint8", 1, 16)
        pool.put(again)
        assert pool.stats()["drops"] == 1 and m[0, 0] == 0
        with pytest.raises(gpubuf.Error) as e:
            pool.put(ctx.buffer(4096))
        assert e.value.errno == errno.EXDEV
        pool.trim()
        assert pool.stats()["cached_bytes"] == 0
    with pytest.raises(ValueError, match="pool is closed"):
        pool.get(1)


def test_context_close_keeps_objects(ctx):
    c = gpubuf.open()
    m = c.zeros((4, 4))
    pool = c.pool()
    c.close()
    assert c.closed
    with pytest.raises(ValueError, match="context is closed"):
        c.empty((1, 1))
    # The pool still works on the context it borrowed until it goes.
    b = pool.get(4096)
    pool.put(b)
    del pool
    gc.collect()
    m[3, 3] = 2.0
    assert m[3, 3] == 2.0


def test_errors_carry_errno_and_message(ctx):
    with pytest.raises(OSError) as e:
        ctx.buffer(1 << 60)
    assert isinstance(e.value, gpubuf.Error)
    # EFBIG: over gpubuf.ko's max_buffer_bytes; the memfd backend's own answers.
    assert e.value.errno in (errno.EFBIG, errno.ENOMEM, errno.EOVERFLOW, errno.EINVAL)
    assert e.value.strerror.startswith("gpubuf_alloc: ")
    assert gpubuf.strerror(e.value.errno)
    assert issubclass(gpubuf.NoDeviceError, gpubuf.Error)
    assert issubclass(gpubuf.UnsupportedError, gpubuf.Error)
    assert issubclass(gpubuf.OutOfMemoryError, gpubuf.Error)
    assert issubclass(gpubuf.OutOfMemoryError, MemoryError)


def test_enomem_arrives_as_memory_error():
    # A child whose address space has 64 MiB to spare: the 256 MiB
    # mapping of a new buffer fails with ENOMEM, on either backend.
    out = run_python('''
        import resource, gpubuf
        ctx = gpubuf.open()
        with open("/proc/self/status") as f:
            vm = [int(l.split()[1]) * 1024 for l in f
                  if l.startswith("VmSize:")][0]
        resource.setrlimit(resource.RLIMIT_AS,
                           (vm + (64 << 20), resource.RLIM_INFINITY))
        try:
            ctx.buffer(256 << 20)
        except MemoryError as e:
            assert isinstance(e, gpubuf.OutOfMemoryError), type(e)
            assert isinstance(e, gpubuf.Error)
            print("MemoryError", e.errno, e.strerror)
        else:
            print("allocated")
    ''')
    assert out.startswith("MemoryError 12 gpubuf_alloc: "), out


def test_repr_and_module_defaults():
    m = gpubuf.empty((2, 3), dtype="int16")
    assert "(2, 3) int16" in repr(m)
    assert gpubuf.default_context() is gpubuf.default_context()
    assert gpubuf.zeros((1, 1))[0, 0] == 0.0
    assert gpubuf.buffer(1).nbytes >= 1
    assert gpubuf.__version__ == "%d.%d.%d" % gpubuf.library_version()
    assert "Context" in repr(gpubuf.default_context())
