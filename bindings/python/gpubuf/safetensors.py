# SPDX-License-Identifier: MIT
"""Load a safetensors file straight into pinned gpubuf memory.

The format (huggingface/safetensors, public): 8 bytes, the header's length
N as a little-endian u64; N bytes of JSON, an object mapping each tensor's
name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the
data that follows the header), and optionally "__metadata__", a string to
string map; then the data, little-endian, row-major.

The file is untrusted input: the header is checked whole before anything is
allocated, and every refusal is a SafetensorsError naming the tensor.
"""
import json
import os
import struct

from gpubuf._gpubuf import Error

__all__ = ["load_safetensors", "SafetensorsError", "SafetensorsDict"]

# What the reference implementation accepts as a header, at most.
MAX_HEADER = 100_000_000
_PAGE = 4096

# The format's dtype names, their sizes, NumPy's and PyTorch's names.
_DTYPES = {
    "BOOL": (1, "bool", "bool"),
    "U8": (1, "uint8", "uint8"),
    "I8": (1, "int8", "int8"),
    "I16": (2, "<i2", "int16"),
    "U16": (2, "<u2", None),
    "F16": (2, "<f2", "float16"),
    "BF16": (2, None, "bfloat16"),
    "I32": (4, "<i4", "int32"),
    "U32": (4, "<u4", None),
    "F32": (4, "<f4", "float32"),
    "F64": (8, "<f8", "float64"),
    "I64": (8, "<i8", "int64"),
    "U64": (8, "<u8", None),
}


class SafetensorsError(ValueError):
    """A file that is not valid safetensors; .tensor names the tensor at
    fault (None for the file as a whole)."""

    def __init__(self, path, message, tensor=None):
        where = "%s: tensor %r: " % (path, tensor) if tensor is not None \
            else "%s: " % (path,)
        super().__init__(where + message)
        self.tensor = tensor


class SafetensorsDict(dict):
    """name -> array (or tensor), all views of .buffer, one pinned gpubuf
    buffer. .metadata is the file's "__metadata__"; .copied names the
    tensors whose offset in the file left them unaligned for their dtype,
    which were copied into aligned memory of the same buffer; .io is what
    the read did (Buffer.read_file's dict)."""

    buffer = None
    metadata = None
    copied = ()
    io = None


def _check_tensor(path, name, entry, data_len):
    if not isinstance(entry, dict) or \
            set(entry) != {"dtype", "shape", "data_offsets"}:
        raise SafetensorsError(path, "needs exactly dtype, shape and "
                               "data_offsets", name)
    dtype, shape, offs = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype not in _DTYPES:
        raise SafetensorsError(path, "unknown dtype %r" % (dtype,), name)
    if not isinstance(shape, list) or not all(
            type(d) is int and d >= 0 for d in shape):
        raise SafetensorsError(path, "shape must be a list of integers >= 0",
                               name)
    if not isinstance(offs, list) or len(offs) != 2 or not all(
            type(o) is int for o in offs):
        raise SafetensorsError(path, "data_offsets must be [begin, end]", name)
    begin, end = offs
    if not 0 <= begin <= end <= data_len:
        raise SafetensorsError(
            path, "data_offsets [%d, %d] outside the %d bytes of data"
            % (begin, end, data_len), name)
    count = 1
    for d in shape:
        count *= d
        if count * _DTYPES[dtype][0] > data_len:
            raise SafetensorsError(path, "shape %r is larger than the data"
                                   % (shape,), name)
    if count * _DTYPES[dtype][0] != end - begin:
        raise SafetensorsError(
            path, "shape %r of %s is %d bytes, data_offsets give %d"
            % (shape, dtype, count * _DTYPES[dtype][0], end - begin), name)
    return dtype, shape, begin, end


def _parse_header(path, fd, size):
    if size < 8:
        raise SafetensorsError(path, "shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", os.pread(fd, 8, 0))
    if n > MAX_HEADER or n > size - 8:
        raise SafetensorsError(path, "header length %d does not fit a file of "
                               "%d bytes (at most %d)" % (n, size, MAX_HEADER))
    raw = os.pread(fd, n, 8)
    if len(raw) != n:
        raise SafetensorsError(path, "the header was cut short")
    try:
        header = json.loads(raw.decode("utf-8"),
                            object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError) as e:
        raise SafetensorsError(path, "the header is not JSON: %s" % (e,)) \
            from None
    if not isinstance(header, dict):
        raise SafetensorsError(path, "the header is not a JSON object")
    meta = header.pop("__metadata__", None)
    if meta is not None and not (isinstance(meta, dict) and all(
            isinstance(k, str) and isinstance(v, str)
            for k, v in meta.items())):
        raise SafetensorsError(path, "__metadata__ must map strings to strings")
    data_len = size - 8 - n
    tensors = {name: _check_tensor(path, name, e, data_len)
               for name, e in header.items()}
    # The data is the tensors, each once: no overlap, no hole, no tail.
    at = 0
    for name, (_, _, begin, end) in sorted(tensors.items(),
                                           key=lambda t: t[1][2:]):
        if begin != at:
            raise SafetensorsError(
                path, "data_offsets [%d, %d]: %s byte %d" % (
                    begin, end, "overlaps the tensor before it at" if begin < at
                    else "leaves a hole before", at), name)
        at = end
    if at != data_len:
        raise SafetensorsError(path, "%d bytes of data after the last tensor"
                               % (data_len - at,))
    return 8 + n, data_len, tensors, meta or {}


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("a name appears twice")
    return dict(pairs)


def load_safetensors(path, ctx=None, framework="numpy", direct=True,
                     uring=True):
    """Read the safetensors file at path into one pinned gpubuf buffer and
    return a SafetensorsDict of views of it: NumPy arrays (framework
    "numpy"; BF16 needs "torch") or torch tensors ("torch"). The data is
    read straight into the buffer with Buffer.read_file (O_DIRECT where
    aligned, io_uring); the buffer is laid out so that the file's 4 KiB
    blocks line up with its pages. Raises SafetensorsError for a file that
    is not valid safetensors (nothing is allocated then), gpubuf.Error for
    a read that fails (the buffer is freed)."""
    if framework not in ("numpy", "torch"):
        raise ValueError("framework must be 'numpy' or 'torch'")
    if framework == "numpy":
        import numpy as fw
    else:
        import torch as fw
    if ctx is None:
        from gpubuf import default_context
        ctx = default_context()
    path = os.fspath(path)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        start, data_len, tensors, meta = _parse_header(path, fd, size)
        for name, (dtype, _, _, _) in tensors.items():
            if _DTYPES[dtype][1 if framework == "numpy" else 2] is None:
                raise SafetensorsError(path, "%s has no %s dtype%s" % (
                    dtype, framework, "; use framework='torch'"
                    if framework == "numpy" else ""), name)
        # The data's first byte at the same offset in a page as in the file.
        lead = start % _PAGE
        misaligned = [n for n, t in tensors.items()
                      if (start + t[2]) % _DTYPES[t[0]][0]]
        extra = sum(t[3] - t[2] + 8 for n, t in tensors.items()
                    if n in misaligned)
        buf = ctx.buffer(max(lead + data_len + extra, 1))
        try:
            io = buf.read_file(fd, file_offset=start, nbytes=data_len,
                               offset=lead, direct=direct, uring=uring) \
                if data_len else {"bytes": 0, "direct_bytes": 0,
                                  "method": "none", "align": 0}
        except Error:
            buf.release()
            raise
    finally:
        os.close(fd)
    out = SafetensorsDict()
    out.buffer, out.metadata, out.io = buf, meta, io
    spare = (lead + data_len + 7) // 8 * 8
    copied = []
    for name, (dtype, shape, begin, end) in sorted(tensors.items(),
                                                   key=lambda t: t[1][2]):
        esize, np_name, torch_name = _DTYPES[dtype]
        at = lead + begin
        if name in misaligned:
            # Copied once, within the buffer, to an offset its dtype can
            # address; said in .copied.
            with memoryview(buf) as mem:
                mem[spare:spare + end - begin] = mem[at:at + end - begin]
            at = spare
            spare += (end - begin + 7) // 8 * 8
            copied.append(name)
        count = (end - begin) // esize
        if framework == "numpy":
            arr = fw.frombuffer(buf, dtype=np_name, count=count, offset=at)
        else:
            arr = fw.frombuffer(buf, dtype=getattr(fw, torch_name),
                                count=count, offset=at) if count else \
                fw.empty(0, dtype=getattr(fw, torch_name))
        out[name] = arr.reshape(shape)
    out.copied = tuple(copied)
    return out
