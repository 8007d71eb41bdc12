# SPDX-License-Identifier: MIT
"""m.cuda() and m.hsa() against libgpubuf's stand-in drivers (tests/cudastub,
tests/hsastub: they touch no GPU) and against no driver at all. Each case
runs in a child interpreter, because libgpubuf loads a runtime once per
process and these cases need different ones."""
import os
import textwrap

import pytest

import gpubuf
from conftest import run_python

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
LIB_BUILD = os.environ.get("GPUBUF_LIB_BUILD", os.path.join(TOP, "libgpubuf", "build"))
CUDA_STUB = os.path.join(LIB_BUILD, "cudastub")
HSA_STUB = os.path.join(LIB_BUILD, "hsastub")

PRELUDE = """
import ctypes, gc, sys
import gpubuf
sys.path.insert(0, %r)
import dlpack_ctypes as dl
ctx = gpubuf.open()
m = ctx.zeros((64, 32), dtype="float32")
""" % os.path.dirname(os.path.abspath(__file__))


def run(code, **env):
    return run_python(PRELUDE + textwrap.dedent(code), **env)


def built_with(layer):
    """False when libgpubuf was built without CUDA (HSA): its calls then
    answer EOPNOTSUPP and no stand-in is built."""
    m = gpubuf.open().zeros((1, 1))
    try:
        (m.cuda if layer == "cuda" else m.hsa)().close()
    except gpubuf.UnsupportedError:
        return False
    except gpubuf.Error:
        pass
    return True


def need(path, layer):
    if os.path.exists(path):
        return
    if not built_with(layer):
        pytest.skip("libgpubuf was built without %s (no toolkit or headers)" % layer)
    pytest.fail("%s missing: build it with make -C libgpubuf check "
                "(bindings/python/run-tests.sh does)" % path)


def test_cuda_without_driver_names_the_cause():
    if not built_with("cuda"):
        pytest.skip("libgpubuf was built without cuda (no toolkit or headers)")
    out = run("""
        try:
            m.cuda()
        except gpubuf.NoDeviceError as e:
            print(e.errno, e)
    """, LD_LIBRARY_PATH="/nonexistent")
    assert out.startswith("19 ") and "libcuda.so.1" in out


def test_cuda_view_on_the_stand_in_driver():
    need(os.path.join(CUDA_STUB, "libcuda.so.1"), "cuda")
    out = run("""
        stub = ctypes.CDLL("libcuda.so.1")
        s = m[8:40, 4:20]
        d = s.cuda(0)
        assert d.__dlpack_device__() == (gpubuf.DL_CUDA, 0)
        assert stub.custub_registrations() == 1
        cai = d.__cuda_array_interface__
        assert cai["shape"] == (32, 16) and cai["strides"] == s.strides
        assert cai["data"] == (d.data_ptr, False) and cai["version"] == 3
        try:
            d.__dlpack__(stream=0)
        except ValueError as e:
            print("stream 0:", e)
        cap = d.__dlpack__(stream=1)
        t, _ = dl.tensor(cap)
        assert t.device.device_type == gpubuf.DL_CUDA and t.data == d.data_ptr
        assert dl.strides(t) == (m.ld, 1)
        d.close()
        assert stub.custub_registrations() == 1    # the capsule's count
        del cap, t
        gc.collect()
        assert stub.custub_registrations() == 0
        try:
            d.__dlpack__()
        except ValueError as e:
            print("closed:", e)
        ro = m.cuda(1, read_only=True)
        assert ro.__cuda_array_interface__["data"][1] is True
        try:
            ro.__dlpack__()          # a classic capsule would let the GPU write
        except BufferError as e:
            print("ro:", e)
        if gpubuf.dlpack_versioned():
            v, flags = dl.tensor(ro.__dlpack__(max_version=(1, 0)))
            assert flags & dl.FLAG_READ_ONLY
            del v
        del ro
        gc.collect()
        msg = ctypes.create_string_buffer(256)
        assert stub.custub_violations(msg, 256) == 0, msg.value
        print("ok")
    """, LD_LIBRARY_PATH=CUDA_STUB, CUSTUB_DEVICES="2")
    assert "closed: gpubuf: the cuda view is closed" in out
    assert "stream 0: gpubuf: CUDA stream 0 is ambiguous" in out
    assert "ro: gpubuf: the view is read-only" in out and out.rstrip().endswith("ok")


def test_cuda_no_device_on_the_stand_in():
    need(os.path.join(CUDA_STUB, "libcuda.so.1"), "cuda")
    out = run("""
        try:
            m.cuda(5)
        except gpubuf.Error as e:
            print(type(e).__name__, e.errno, e)
    """, LD_LIBRARY_PATH=CUDA_STUB, CUSTUB_DEVICES="2")
    assert out.startswith("NoDeviceError 19 [Errno 19] gpubuf_cuda_register: ")
    assert "(no CUDA device 5 (2 present))" in out


def test_hsa_view_on_the_stand_in_runtime():
    need(os.path.join(HSA_STUB, "libhsa-runtime64.so.1"), "hsa")
    out = run("""
        stub = ctypes.CDLL("libhsa-runtime64.so.1")
        d = m.T.hsa(1)
        assert d.__dlpack_device__() == (gpubuf.DL_ROCM, 1)
        assert stub.hsastub_locks() == 1
        t, _ = dl.tensor(d.__dlpack__(stream=0))   # ROCm's default stream
        assert t.device.device_type == gpubuf.DL_ROCM and t.device.device_id == 1
        assert t.data == d.data_ptr
        del t                               # dropped unused: count back
        gc.collect()
        try:
            d.__cuda_array_interface__
        except AttributeError:
            pass
        d.close()
        assert stub.hsastub_locks() == 0
        try:
            m.hsa(7)
        except gpubuf.NoDeviceError as e:
            print("no agent:", e.errno)
        msg = ctypes.create_string_buffer(256)
        assert stub.hsastub_violations(msg, 256) == 0, msg.value
        print("ok")
    """, LD_LIBRARY_PATH=HSA_STUB, HSASTUB_GPUS="2")
    assert "no agent: 19" in out and out.rstrip().endswith("ok")
