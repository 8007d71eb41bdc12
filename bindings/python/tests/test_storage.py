# SPDX-License-Identifier: MIT
"""Files straight into pinned memory: Buffer.read_file and write_file,
Matrix.read_file, and gpubuf.load_safetensors against files written here
by the format's rules (an 8-byte little-endian header length, a JSON
header, raw little-endian row-major data), with every dtype the format and
NumPy (or PyTorch) share; every malformed header refused, naming the
tensor, with nothing left allocated; and a short fuzz over mutated headers.
"""
import gc
import json
import os
import random
import struct

import numpy as np
import pytest

import gpubuf

MIB = 1 << 20


def buffer_maps():
    """The library's buffer mappings in this process (memfd or dma-buf),
    once what is unreachable is collected."""
    gc.collect()
    with open("/proc/self/maps") as f:
        return sum("memfd:gpubuf" in line or "dmabuf" in line for line in f)


def write_safetensors(path, tensors, metadata=None, header_pad=None):
    """tensors: name -> (dtype name, shape, raw bytes), in file order.
    The header is padded with spaces to a multiple of 8, as the reference
    writer does, or by header_pad spaces when given."""
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    pad = (-len(text)) % 8 if header_pad is None else header_pad
    text += b" " * pad
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


NUMPY_TYPES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "<i2",
               "U16": "<u2", "F16": "<f2", "I32": "<i4", "U32": "<u4",
               "F32": "<f4", "F64": "<f8", "I64": "<i8", "U64": "<u8"}


def sample(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(size=shape).astype(dtype)
    info = np.iinfo(np.dtype(dtype))
    return rng.integers(info.min, info.max, size=shape, dtype=np.dtype(dtype),
                        endpoint=True)


def inside(arr_addr, nbytes, buf):
    return buf.address <= arr_addr and arr_addr + nbytes <= buf.address + \
        buf.nbytes


# ---- Buffer.read_file, write_file, Matrix.read_file ----------------------

def test_read_file_path_fd_and_file_object(ctx, tmp_path):
    data = os.urandom(3 * MIB + 123)
    p = tmp_path / "data.bin"
    p.write_bytes(data)
    buf = ctx.buffer(4 * MIB)
    r = buf.read_file(p, file_offset=100, offset=100)
    assert r["bytes"] == len(data) - 100
    assert r["method"] in ("io_uring-fixed", "io_uring", "pread")
    assert bytes(memoryview(buf)[100:len(data)]) == data[100:]
    fd = os.open(p, os.O_RDONLY)
    os.lseek(fd, 77, os.SEEK_SET)
    r = buf.read_file(fd, nbytes=4096, uring=False)
    assert r["method"] == "pread" and r["bytes"] == 4096
    assert os.lseek(fd, 0, os.SEEK_CUR) == 77      # its offset left alone
    os.close(fd)
    with open(p, "rb") as f:
        r = buf.read_file(f, nbytes=MIB, direct=False)
    assert r["direct_bytes"] == 0 and r["align"] == 0
    assert bytes(memoryview(buf)[:MIB]) == data[:MIB]


def test_read_past_the_end_says_what_landed(ctx, tmp_path):
    p = tmp_path / "short.bin"
    p.write_bytes(b"x" * 10000)
    buf = ctx.buffer(MIB)
    with pytest.raises(gpubuf.Error) as e:
        buf.read_file(p, nbytes=20000)
    assert e.value.errno == 61                      # ENODATA
    assert e.value.bytes_done == 10000
    assert bytes(memoryview(buf)[:10000]) == b"x" * 10000
    with pytest.raises(gpubuf.Error) as e:
        buf.read_file(p, nbytes=2 * MIB)            # past the buffer
    assert e.value.errno == 22
    with pytest.raises(FileNotFoundError):
        buf.read_file(tmp_path / "missing")


def test_write_file_and_matrix_rows(ctx, tmp_path):
    m = ctx.empty((64, 300), "float32")
    a = np.asarray(m)
    a[:] = np.arange(64 * 300, dtype=np.float32).reshape(64, 300)
    p = tmp_path / "m.bin"
    r = m.write_file(p)
    assert r["bytes"] == 64 * 300 * 4
    assert np.array_equal(np.fromfile(p, dtype="<f4").reshape(64, 300), a)
    # Into a view whose rows are padded: each row in place, padding kept.
    big = ctx.empty((64, 400), "float32")
    np.asarray(big)[:] = -1
    view = big[:, :300]
    view.read_file(p)
    assert np.array_equal(np.asarray(view), a)
    assert (np.asarray(big)[:, 300:] == -1).all()


# ---- load_safetensors ----------------------------------------------------

def test_every_numpy_dtype_in_place(ctx, tmp_path):
    shapes = [(3, 5), (7,), (2, 3, 4), (0, 4), ()]
    tensors, want = {}, {}
    # Largest elements first, as the reference writer orders them: every
    # tensor's offset is then a multiple of its element size.
    order = sorted(NUMPY_TYPES.items(),
                   key=lambda t: -np.dtype(t[1]).itemsize)
    for i, (name, np_type) in enumerate(order):
        shape = shapes[i % len(shapes)]
        arr = sample(np_type, shape, i)
        tensors["t_" + name] = (name, shape, arr.tobytes())
        want["t_" + name] = arr
    path = tmp_path / "all.safetensors"
    write_safetensors(path, tensors, metadata={"format": "np"})
    maps = buffer_maps()
    out = gpubuf.load_safetensors(path, ctx)
    assert set(out) == set(want)
    assert out.metadata == {"format": "np"}
    assert out.copied == ()
    assert buffer_maps() == maps + 1                # one buffer for all
    for name, arr in want.items():
        got = out[name]
        assert got.dtype == arr.dtype and got.shape == arr.shape, name
        assert np.array_equal(got, arr), name
        if got.nbytes:
            assert inside(got.ctypes.data, got.nbytes, out.buffer), name
    del out, got
    gc.collect()
    assert buffer_maps() == maps


def test_torch_with_bfloat16(ctx, tmp_path):
    torch = pytest.importorskip("torch")
    t16 = torch.randn(33, 17).to(torch.bfloat16)
    f32 = torch.randn(1000)
    path = tmp_path / "t.safetensors"
    write_safetensors(path, {
        "bf": ("BF16", (33, 17), t16.view(torch.int16).numpy().tobytes()),
        "f": ("F32", (1000,), f32.numpy().tobytes())})
    out = gpubuf.load_safetensors(path, ctx, framework="torch")
    assert out["bf"].dtype == torch.bfloat16 and torch.equal(out["bf"], t16)
    assert torch.equal(out["f"], f32)
    assert inside(out["bf"].data_ptr(), 33 * 17 * 2, out.buffer)
    with pytest.raises(gpubuf.SafetensorsError, match="framework='torch'") as e:
        gpubuf.load_safetensors(path, ctx)          # NumPy has no bfloat16
    assert e.value.tensor == "bf"


def test_files_written_by_the_safetensors_package(ctx, tmp_path):
    """Files written by the format's own implementation (Debian's
    python3-safetensors: trixie 0.5, sid 0.8; make check-kernels installs
    it in those roots), with every dtype it shares with gpubuf, NumPy's
    through safetensors.numpy and BF16 through safetensors.torch."""
    st_numpy = pytest.importorskip(
        "safetensors.numpy",
        reason="no safetensors package (python3-safetensors: trixie and "
        "later; make check-kernels runs this there)")
    want = {"t_" + name: sample(np_type, (3, 1 + i % 4), i)
            for i, (name, np_type) in enumerate(NUMPY_TYPES.items())}
    want["scalar"] = np.array(2.5, dtype="<f4")      # a 0-d array
    want["empty"] = np.zeros((0, 3), "<f8")
    path = tmp_path / "real.safetensors"
    st_numpy.save_file(want, str(path), metadata={"by": "safetensors"})
    out = gpubuf.load_safetensors(path, ctx)
    assert set(out) == set(want)
    assert out.metadata == {"by": "safetensors"}
    for name, arr in want.items():
        got = out[name]
        assert got.dtype == arr.dtype and got.shape == arr.shape, name
        assert np.array_equal(got, arr), name
        if got.nbytes and name not in out.copied:
            assert inside(got.ctypes.data, got.nbytes, out.buffer), name
    # The reference writer sorts by alignment and pads its header to 8:
    # nothing needed copying into alignment.
    assert out.copied == ()
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    tensors = {"bf": torch.randn(9, 7).to(torch.bfloat16),
               "f16": torch.randn(5).half(), "i64": torch.arange(6)}
    st_torch.save_file(tensors, str(tmp_path / "t.safetensors"))
    out = gpubuf.load_safetensors(tmp_path / "t.safetensors", ctx,
                                  framework="torch")
    for name, t in tensors.items():
        assert out[name].dtype == t.dtype and torch.equal(out[name], t), name
        assert inside(out[name].data_ptr(),
                      out[name].numel() * out[name].element_size(),
                      out.buffer), name


def test_odd_header_length_copies_misaligned_tensors(ctx, tmp_path):
    a = np.arange(100, dtype="<f4")
    b = np.arange(10, dtype="<i8")
    c = np.arange(7, dtype="uint8")
    path = tmp_path / "odd.safetensors"
    # A header 3 bytes past a multiple of 8 (a writer that does not pad):
    # after the 7-byte tensor c, a and b sit at offsets in the file that
    # are not multiples of their element sizes.
    for pad in range(8):
        write_safetensors(path, {"c": ("U8", (7,), c.tobytes()),
                                 "a": ("F32", (100,), a.tobytes()),
                                 "b": ("I64", (10,), b.tobytes())},
                          header_pad=pad)
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
        if (8 + n) % 8 == 3:
            break
    assert (8 + n) % 8 == 3
    out = gpubuf.load_safetensors(path, ctx)
    assert np.array_equal(out["a"], a) and np.array_equal(out["b"], b)
    assert np.array_equal(out["c"], c)
    assert set(out.copied) == {"a", "b"}
    for name in out.copied:
        assert out[name].ctypes.data % out[name].itemsize == 0, name
        assert inside(out[name].ctypes.data, out[name].nbytes, out.buffer)


def test_large_file_goes_direct(ctx, tmp_path):
    arr = np.random.default_rng(5).standard_normal((512, 1024)).astype("<f4")
    path = tmp_path / "big.safetensors"
    write_safetensors(path, {"w": ("F32", arr.shape, arr.tobytes())})
    out = gpubuf.load_safetensors(path, ctx)
    assert np.array_equal(out["w"], arr)
    # The buffer is laid out so that the file's blocks meet its pages: where
    # O_DIRECT is used at all, all but the partial first and last blocks.
    assert out.io["bytes"] == arr.nbytes
    if out.io["align"]:
        assert out.io["direct_bytes"] >= arr.nbytes - 2 * 4096


GOOD = {"x": ("F32", (2, 2), b"\0" * 16), "y": ("U8", (3,), b"abc")}


def raw_file(path, header_obj=None, header_bytes=None, data=b"\0" * 19,
             length=None, whole=None):
    if whole is not None:
        with open(path, "wb") as f:
            f.write(whole)
        return
    text = header_bytes if header_bytes is not None else \
        json.dumps(header_obj).encode()
    n = len(text) if length is None else length
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", n) + text + data)


BAD = [
    ("shorter than the 8-byte", None, dict(whole=b"\x10\0\0"), None),
    ("does not fit", None, dict(header_obj={}, length=1 << 40), None),
    ("not JSON", None, dict(header_bytes=b"{nope"), None),
    ("not a JSON object", None, dict(header_bytes=b"[1, 2]"), None),
    ("unknown dtype", "x", dict(header_obj={"x": {"dtype": "F8", "shape": [1],
                                                  "data_offsets": [0, 1]}},
                                data=b"\0"), None),
    ("shape must be", "x", dict(header_obj={"x": {
        "dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}},
        data=b"\0"), None),
    ("outside the", "x", dict(header_obj={"x": {
        "dtype": "U8", "shape": [4], "data_offsets": [0, 4]}},
        data=b"\0"), None),
    ("data_offsets give", "x", dict(header_obj={"x": {
        "dtype": "F32", "shape": [2], "data_offsets": [0, 4]}},
        data=b"\0" * 8), None),
    ("overlaps", None, dict(header_obj={
        "x": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
        "y": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}},
        data=b"\0" * 6), None),
    ("leaves a hole", "y", dict(header_obj={
        "x": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
        "y": {"dtype": "U8", "shape": [2], "data_offsets": [4, 6]}},
        data=b"\0" * 6), None),
    ("after the last tensor", None, dict(header_obj={
        "x": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}},
        data=b"\0" * 5), None),
    ("larger than the data", "x", dict(header_obj={"x": {
        "dtype": "U64", "shape": [1 << 40, 1 << 40],
        "data_offsets": [0, 8]}}, data=b"\0" * 8), None),
    ("data_offsets must be", "x", dict(header_obj={"x": {
        "dtype": "U8", "shape": [1], "data_offsets": [0]}},
        data=b"\0"), None),
    ("needs exactly", "x", dict(header_obj={"x": {
        "dtype": "U8", "shape": [1], "data_offsets": [0, 1], "extra": 1}},
        data=b"\0"), None),
    ("__metadata__ must", None, dict(header_obj={"__metadata__": {"a": 1}},
                                     data=b""), None),
    ("not JSON", None, dict(header_bytes=b'{"x": 1, "x": 2}'), None),
]


@pytest.mark.parametrize("why,tensor,kw,_", BAD, ids=[b[0] for b in BAD])
def test_bad_files_refused_naming_the_tensor(ctx, tmp_path, why, tensor, kw,
                                             _):
    path = tmp_path / "bad.safetensors"
    raw_file(path, **kw)
    maps = buffer_maps()
    with pytest.raises(gpubuf.SafetensorsError, match=why) as e:
        gpubuf.load_safetensors(path, ctx)
    if tensor is not None:
        assert e.value.tensor == tensor
        assert repr(tensor) in str(e.value)
    assert buffer_maps() == maps                    # nothing allocated


def test_fuzzed_headers_load_or_are_refused(ctx, tmp_path):
    """2000 mutations of a valid file's header (flipped bytes, cut or
    stretched lengths): each loads or raises SafetensorsError, nothing
    else, and leaves no buffer behind once its result is dropped."""
    good = tmp_path / "good.safetensors"
    write_safetensors(good, GOOD, metadata={"k": "v"})
    raw = good.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    rng = random.Random(49)
    maps = buffer_maps()
    loaded = refused = 0
    path = tmp_path / "fuzz.safetensors"
    for i in range(2000):
        b = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            kind = rng.randrange(3)
            if kind == 0:
                b[8 + rng.randrange(n)] = rng.randrange(256)
            elif kind == 1:
                b[rng.randrange(8)] = rng.randrange(256)
            else:
                del b[8 + rng.randrange(n):][:rng.randint(1, 8)]
        path.write_bytes(bytes(b))
        try:
            out = gpubuf.load_safetensors(path, ctx)
            loaded += 1
            del out
        except gpubuf.SafetensorsError:
            refused += 1
    gc.collect()
    assert loaded + refused == 2000
    assert refused > 1000
    assert buffer_maps() == maps
