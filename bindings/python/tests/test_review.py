# SPDX-License-Identifier: MIT
"""Regression tests for defects a review of the extension found: closing a
Pool or Context while another thread is inside libgpubuf without the GIL,
stream numbers, integer-like and big-endian dtypes, empty views, __array__'s
keywords, out-of-range errno values. Races run in a child interpreter, so
that a crash is a failure and not the end of the test run."""
import pytest

import gpubuf
from conftest import run_python


def child(code, **env):
    return run_python(code, **env)


def test_pool_close_while_get_runs():
    out = child("""
        import threading, gpubuf
        c = gpubuf.open()
        refused = 0
        for _ in range(200):
            p = c.pool()
            def getter():
                global refused
                try:
                    while True:
                        p.get(1 << 20)
                except ValueError:
                    refused += 1
            t = threading.Thread(target=getter)
            t.start()
            p.close()
            t.join()
        print("refused", refused)
    """)
    assert out.startswith("refused 200")


def test_context_close_while_allocating():
    # MALLOC_PERTURB_ fills freed memory, so that an allocation still
    # running on a context close() already freed goes wrong visibly.
    out = child("""
        import threading, gpubuf
        done = 0
        for _ in range(300):
            c = gpubuf.open()
            started = threading.Event()
            def alloc():
                global done
                try:
                    while True:
                        c.buffer(1 << 16)
                        started.set()
                except ValueError:
                    done += 1
            t = threading.Thread(target=alloc)
            t.start()
            started.wait()
            c.close()
            t.join()
        print("done", done)
    """, MALLOC_PERTURB_="165")
    assert out.startswith("done 300")


def test_host_stream_minus_one(ctx):
    ctx.zeros((2, 2)).__dlpack__(stream=-1)
    with pytest.raises(ValueError, match="None or -1"):
        ctx.zeros((2, 2)).__dlpack__(stream=0)


def test_unsigned_elements_take_integer_likes(ctx):
    np = pytest.importorskip("numpy")
    m = ctx.zeros((1, 3), dtype="uint32")
    m[0, 0] = np.uint32(5)
    m[0, 1] = np.int64(6)
    m[0, 2] = True
    assert [m[0, i] for i in range(3)] == [5, 6, 1]
    with pytest.raises(TypeError):
        m[0, 0] = 1.5


def test_numpy_dtype_forms(ctx):
    np = pytest.importorskip("numpy")
    assert ctx.empty((1, 1), dtype=np.longlong).dtype == "int64"
    assert ctx.empty((1, 1), dtype=np.dtype("<i2")).dtype == "int16"
    for big in (np.dtype(">i2"), np.dtype(">f4"), ">f4"):
        with pytest.raises(TypeError, match="little-endian"):
            ctx.empty((1, 1), dtype=big)


def test_empty_views_of_a_buffer(ctx):
    b = ctx.buffer(4096)
    assert b.matrix("float32", 0, 0).shape == (0, 0)
    assert b.matrix("float32", 3, 0).shape == (3, 0)
    assert b.matrix("float32", 0, 5, order="F").shape == (0, 5)


def test_array_keywords(ctx):
    np = pytest.importorskip("numpy")
    m = ctx.zeros((2, 3), dtype="float32")
    view = m.__array__()
    view[0, 0] = 1
    assert m[0, 0] == 1.0
    conv = m.__array__(np.float64)
    assert conv.dtype == np.float64 and not np.shares_memory(conv, view)
    copied = m.__array__(copy=True)
    copied[0, 0] = 7
    assert m[0, 0] == 1.0
    assert np.shares_memory(m.__array__(np.float32, copy=False), view)
    with pytest.raises(ValueError, match="copy=False"):
        m.__array__(np.float64, copy=False)


def test_strerror_range():
    assert gpubuf.strerror(12) == gpubuf.strerror(-12)
    for bad in (2 ** 31, 2 ** 32 + 12, -(2 ** 40)):
        with pytest.raises(OverflowError):
            gpubuf.strerror(bad)


def test_memfd_mlock_limit_says_what_to_do():
    """Issue 51, item 5: where RLIMIT_MEMLOCK stops the memfd backend's
    mlock (a container: Docker's default is 64 MiB), the error names the
    limit and what to do. CAP_IPC_LOCK (root's) is dropped first."""
    import platform
    if platform.machine() != "x86_64":
        pytest.skip("capget/capset numbers of x86-64 only")
    out = child("""
        import ctypes, resource, gpubuf
        libc = ctypes.CDLL(None, use_errno=True)
        hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)  # capability version 3
        caps = (ctypes.c_uint32 * 6)()
        assert libc.syscall(125, hdr, caps) == 0    # capget
        for i in range(3):                          # effective, permitted,
            caps[i] &= ~(1 << 14)                   # inheritable: IPC_LOCK
        assert libc.syscall(126, hdr, caps) == 0    # capset
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (1 << 20, 1 << 20))
        c = gpubuf.open("memfd")
        try:
            c.buffer(4 << 20)
        except gpubuf.OutOfMemoryError as e:
            print(e.errno, str(e))
        c.buffer(256 << 10)                         # within the limit
    """)
    assert out.startswith("12 "), out               # ENOMEM
    assert "RLIMIT_MEMLOCK is 1048576 bytes" in out, out
    assert "/dev/gpubuf" in out and "--ulimit memlock=-1" in out, out
