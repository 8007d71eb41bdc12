# SPDX-License-Identifier: MIT
"""10,000 create / view / export / drop cycles leave nothing behind: the
process's gpubuf mappings, locked bytes and descriptors, and gpubuf.ko's
live counters (module backend) end where they started."""
import gc
import os

import pytest

from conftest import module_counter

CYCLES = int(os.environ.get("GPUBUF_PY_MEMORY_CYCLES", "10000"))


def gpubuf_mapped_bytes():
    """Bytes of this process's mappings of gpubuf memory: memfd buffers
    ("/memfd:gpubuf") and dma-bufs ("/dmabuf:", "anon_inode:dmabuf")."""
    total = 0
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split(None, 5)
            path = fields[5].strip() if len(fields) == 6 else ""
            if "memfd:gpubuf" in path or "dmabuf" in path:
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                total += hi - lo
    return total


def status_kib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def snapshot():
    gc.collect()
    return {
        "gpubuf mapped bytes": gpubuf_mapped_bytes(),
        "VmLck kB": status_kib("VmLck"),
        "open fds": len(os.listdir("/proc/self/fd")),
        "module live_buffers": module_counter("live_buffers"),
        "module live_bytes": module_counter("live_bytes"),
    }


def test_create_export_drop_cycles(ctx):
    np = pytest.importorskip("numpy")
    try:                        # the kernel matrix's roots may lack it
        import torch
    except ImportError:
        torch = None

    def cycle(i):
        m = ctx.empty((64, 48), dtype="float32", order="F" if i & 1 else "C")
        a = np.asarray(m)
        a[0, 0] = i
        s = m[8:40, 4:44].T
        cap = s.__dlpack__()                  # dropped unused
        d = np.from_dlpack(s)
        t = torch.from_dlpack(m) if torch else np.from_dlpack(m)
        assert t[0, 0].item() == i and d.shape == (40, 32)
        if i % 7 == 0:
            c = m.__dlpack__(copy=True)
            del c
        if i == 0:      # the measure sees a live buffer's mapping
            assert gpubuf_mapped_bytes() >= m.buffer.nbytes
        with m.cpu_access("rw"):
            pass
        del m, a, s, cap, d, t

    for i in range(100):                      # warm Python's own caches
        cycle(i)
    before = snapshot()
    for i in range(CYCLES):
        cycle(i)
    after = snapshot()
    assert after == before


def test_threads_share_a_context(ctx):
    """Four threads allocate, view, export and drop on one context at once
    (the GIL is released inside libgpubuf); nothing is left afterwards."""
    import threading
    np = pytest.importorskip("numpy")
    before = snapshot()
    errors = []

    def work(seed):
        try:
            for i in range(300):
                m = ctx.empty((32, 32), dtype="int64")
                np.asarray(m)[:] = seed * 1000 + i
                d = np.from_dlpack(m[4:20, 4:20])
                assert int(d[0, 0]) == seed * 1000 + i
                del m, d
        except Exception as e:  # reported below, with the thread's seed
            errors.append((seed, repr(e)))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert snapshot() == before
