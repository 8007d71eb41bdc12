# SPDX-License-Identifier: MIT
"""__dlpack__'s keywords (stream, max_version, dl_device, copy), what the
capsules hold, and that every capsule gives its reference back."""
import errno
import gc
import os
import struct
import fcntl

import pytest

import gpubuf
import dlpack_ctypes as dl

V1 = gpubuf.dlpack_versioned()


def test_classic_capsule_contents(ctx):
    m = ctx.zeros((20, 10), dtype="float64", order="F")
    s = m[3:13, 2:9]
    cap = s.__dlpack__()
    assert dl.name(cap) == "dltensor"
    t, _ = dl.tensor(cap)
    assert t.device.device_type == gpubuf.DL_CPU and t.device.device_id == 0
    assert t.ndim == 2 and (t.shape[0], t.shape[1]) == (10, 7)
    assert dl.strides(t) == (1, m.ld)                  # elements, 'F'
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 64, 1)
    # data is element (0, 0) itself: consumers that ignore byte_offset
    # (PyTorch 1.13) read the right memory.
    assert t.data == s.address and t.byte_offset == 0
    assert s.__dlpack_device__() == (gpubuf.DL_CPU, 0)


def test_max_version(ctx):
    m = ctx.zeros((4, 4))
    assert dl.name(m.__dlpack__(max_version=(0, 8))) == "dltensor"
    cap = m.__dlpack__(max_version=(1, 0))
    if not V1:
        # Built against DLPack < 1.0: the classic capsule, as the array
        # API allows a producer that has no newer one.
        assert dl.name(cap) == "dltensor"
        return
    assert dl.name(cap) == "dltensor_versioned"
    t, flags = dl.tensor(cap)
    assert flags == 0 and t.data == m.address
    with pytest.raises(TypeError):
        m.__dlpack__(max_version=1)


def test_stream_dl_device_and_positional_arguments(ctx):
    m = ctx.zeros((2, 2))
    m.__dlpack__(stream=None, dl_device=(gpubuf.DL_CPU, 0), copy=False)
    with pytest.raises(ValueError, match="stream must be None"):
        m.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="device"):
        m.__dlpack__(dl_device=(gpubuf.DL_CUDA, 0))
    with pytest.raises(TypeError):
        m.__dlpack__(None)              # keywords only
    with pytest.raises(TypeError):
        m.__dlpack__(color=1)


@pytest.mark.parametrize("order", ["C", "F"])
def test_copy_true_is_a_private_compact_copy(ctx, order):
    np = pytest.importorskip("numpy")
    m = ctx.zeros((6, 5), dtype="int32", order=order)
    a = np.asarray(m)
    a[...] = np.arange(30).reshape(6, 5)
    keep = m.buffer
    cap = m[1:5, 1:4].__dlpack__(copy=True)
    assert keep.refcount == 2               # a copy holds no reference
    t, flags = dl.tensor(cap)
    assert t.data != m.address and dl.strides(t) == (3, 1)
    assert (t.shape[0], t.shape[1]) == (4, 3)
    got = np.ctypeslib.as_array(
        (np.ctypeslib.ctypes.c_int32 * 12).from_address(t.data)).reshape(4, 3)
    assert np.array_equal(got, a[1:5, 1:4])
    a[1, 1] = -1
    assert got[0, 0] == 6                   # not the same memory
    if V1:
        _, flags = dl.tensor(m.__dlpack__(copy=True, max_version=(1, 0)))
        assert flags & dl.FLAG_IS_COPIED
    del cap
    gc.collect()


def test_empty_matrix_exports(ctx):
    m = ctx.zeros((5, 7))[2:2, :]
    t, _ = dl.tensor(m.__dlpack__())
    assert t.data is None and (t.shape[0], t.shape[1]) == (0, 7)
    np = pytest.importorskip("numpy")
    assert np.from_dlpack(m).shape == (0, 7) and np.asarray(m).shape == (0, 7)


def test_consumed_capsule_is_not_freed_twice(ctx):
    torch = pytest.importorskip("torch")
    from torch.utils import dlpack as torch_dlpack
    m = ctx.zeros((4, 4))
    keep = m.buffer
    cap = m.__dlpack__()
    t = torch_dlpack.from_dlpack(cap)
    assert dl.name(cap) == "used_dltensor"
    del cap
    gc.collect()
    assert keep.refcount == 3               # the tensor's
    del t
    gc.collect()
    assert keep.refcount == 2


GPUBUF_IOC_ALLOC = 0xC030B801   # _IOWR(0xB8, 0x01, struct gpubuf_alloc)


def read_only_dmabuf(nbytes):
    """A dma-buf fd opened O_RDONLY, straight from GPUBUF_IOC_ALLOC."""
    dev = os.open("/dev/gpubuf", os.O_RDWR | os.O_CLOEXEC)
    try:
        arg = bytearray(struct.pack("=QQIiiIQQ", nbytes, 0,
                                    os.O_RDONLY | os.O_CLOEXEC, -1, 0, 0, 0, 0))
        fcntl.ioctl(dev, GPUBUF_IOC_ALLOC, arg)
        return struct.unpack_from("=i", arg, 24)[0]
    finally:
        os.close(dev)


def test_read_only_import(ctx, backend):
    if backend != "module":
        pytest.skip("read-only dma-bufs need gpubuf.ko (the guest run covers it)")
    np = pytest.importorskip("numpy")
    fd = read_only_dmabuf(8192)
    try:
        b = ctx.import_fd(fd)
    finally:
        os.close(fd)
    m = b.matrix("float32", 16, 16)
    assert m.readonly and b.readonly
    a = np.asarray(m)
    assert not a.flags.writeable and a.sum() == 0
    with pytest.raises(ValueError, match="read-only"):
        m[0, 0] = 1.0
    with pytest.raises(BufferError, match="read-only"):
        m.__dlpack__()                      # classic capsules cannot say so
    assert memoryview(b).readonly
    with pytest.raises(ValueError, match="read-only"):
        np.frombuffer(b, dtype=np.uint8)[0] = 1
    if V1:
        _, flags = dl.tensor(m.__dlpack__(max_version=(1, 0)))
        assert flags & dl.FLAG_READ_ONLY
    with pytest.raises(gpubuf.Error) as e:
        with m.cpu_access("w"):
            pass
    assert e.value.errno == errno.EROFS
    # copy=True works: the copy is the consumer's to write.
    assert dl.name(m.__dlpack__(copy=True)) == "dltensor"
