# SPDX-License-Identifier: MIT
"""near=: buffers, matrices and pools on the NUMA node of a device, and
gpubuf.device_node(), on a made-up sysfs tree (GPUBUF_SYSFS_ROOT, as in
tests/lib/fake_sysfs.h): node 1 has no memory and is nearest node 2."""
import errno
import os
import subprocess
import sys
import textwrap

import pytest

import gpubuf


@pytest.fixture
def sysfs(tmp_path, monkeypatch):
    def put(rel, text=None):
        path = tmp_path / rel
        if text is None:
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    put("devices/system/node/online", "0-2\n")
    put("devices/system/node/has_memory", "0,2\n")
    put("devices/system/node/node1/distance", "20 10 15\n")
    put("bus/pci/devices/0000:1a:00.0/numa_node", "1\n")
    put("bus/pci/devices/0000:1b:00.0/numa_node", "0\n")
    put("bus/pci/devices/0000:2a:00.0/numa_node", "-1\n")
    put("class/infiniband/rxe0")
    os.symlink("../../../bus/pci/devices/0000:1b:00.0",
               tmp_path / "class/infiniband/rxe0/device")
    monkeypatch.setenv("GPUBUF_SYSFS_ROOT", str(tmp_path))
    return tmp_path


def numa_maps_line(addr):
    """/proc/self/numa_maps' line for the mapping holding addr: the last
    one starting at or below it (the lines are in address order)."""
    found = None
    with open("/proc/self/numa_maps") as f:
        for line in f:
            if int(line.split()[0], 16) <= addr:
                found = line
    return found


def test_device_node_kinds(sysfs):
    assert gpubuf.device_node("pci:0000:1b:00.0") == 0
    assert gpubuf.device_node("pci:1A:00.0") == 2      # memory-less node 1
    assert gpubuf.device_node("rdma:rxe0") == 0
    assert gpubuf.device_node("pci:0000:2a:00.0") is None  # no affinity


def test_device_node_errors(sysfs):
    with pytest.raises(gpubuf.Error) as e:
        gpubuf.device_node("gpu:0")
    assert e.value.errno == errno.EINVAL
    with pytest.raises(gpubuf.Error) as e:
        gpubuf.device_node("pci:0000:99:00.0")
    assert e.value.errno == errno.ENODEV
    assert "no PCI device 0000:99:00.0" in str(e.value)
    with pytest.raises(TypeError):
        gpubuf.device_node(3)


def test_near_places_matrices_and_buffers(sysfs, ctx, backend):
    m = ctx.empty((300, 500), near="rdma:rxe0")
    addr = m.__array_interface__["data"][0]
    line = numa_maps_line(addr)
    # The memfd backend's mapping carries the policy (preferred node 0)
    # and its pages are counted there; the module's buffers are placed by
    # gpubuf.ko, which the two-node guest checks (tests/lib, 29-*).
    if backend == "memfd":
        assert " prefer:0 " in line, line
        assert "N0=" in line and "N1=" not in line and "N2=" not in line, line
    z = ctx.zeros((4, 4), "float64", near="pci:0000:2a:00.0")  # no node
    assert not z.__array_interface__["data"][0] % 256
    b = ctx.buffer(1 << 20, near="rdma:rxe0")
    assert len(memoryview(b)) == 1 << 20


def test_near_argument_errors(sysfs, ctx):
    with pytest.raises(ValueError):
        ctx.buffer(4096, numa_node=0, near="rdma:rxe0")
    with pytest.raises(TypeError):
        ctx.empty((2, 2), near=0)
    with pytest.raises(gpubuf.Error) as e:
        ctx.empty((2, 2), near="rdma:nope")
    assert e.value.errno == errno.ENODEV
    with pytest.raises(gpubuf.Error) as e:
        gpubuf.empty((2, 2), near="cuda:x")
    assert e.value.errno == errno.EINVAL


def test_near_lookup_releases_the_gil(sysfs):
    """Issue 49, item 6: near= held the GIL through the device lookup
    (sysfs reads, a GPU runtime's start), so no other thread ran
    meanwhile. The device's numa_node is a FIFO here: the lookup's read
    waits for another Python thread to write it, which it can only do if
    the GIL was released; otherwise the child hangs and is killed."""
    fifo = sysfs / "bus/pci/devices/0000:3c:00.0/numa_node"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    code = textwrap.dedent("""
        import threading, sys
        import gpubuf
        def write():
            with open(sys.argv[1], "w") as f:
                f.write("0\\n")
        for call in ("buffer", "empty", "pool"):
            t = threading.Thread(target=write)
            t.start()
            ctx = gpubuf.open()
            if call == "buffer":
                b = ctx.buffer(4096, near="pci:0000:3c:00.0")
            elif call == "empty":
                b = ctx.empty((4, 4), near="pci:0000:3c:00.0")
            else:
                b = ctx.pool(near="pci:0000:3c:00.0")
            t.join()
            print(call, "ok")
    """)
    r = subprocess.run([sys.executable, "-c", code, str(fifo)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["buffer", "ok", "empty", "ok", "pool", "ok"], r.stdout


def test_pool_lists_per_node(sysfs, ctx):
    with ctx.pool(near="rdma:rxe0") as p:
        a = p.get(4096)                      # the pool's node, 0
        p.put(a)
        b = p.get(4096, node=None)           # another list: a miss
        c = p.get(4096, node=0)              # node 0's: the cached one
        st = p.stats()
        assert (st["hits"], st["misses"]) == (1, 2), st
        p.put(c)
        d = p.get(4096, node=5, any_node=True)   # node 0's, allowed
        assert p.stats()["other_node_hits"] == 1
        p.put(b)
        p.put(d)
        assert p.stats()["node_lists"] == 2  # node 0 and none in particular
        p.trim()
        assert p.stats()["node_lists"] == 0
        with pytest.raises(gpubuf.Error) as e:
            p.get(4096, any_node=True)       # no node to widen
        assert e.value.errno == errno.EINVAL
        with pytest.raises(ValueError):
            p.get(4096, node=-1)
