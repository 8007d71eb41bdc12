# SPDX-License-Identifier: MIT
"""Fixtures for gpubuf's Python tests, and TAP output for make check.

GPUBUF_TAP=FILE writes one TAP line per test to FILE ("-" for stdout), so
tests/check.sh and the QEMU guest count pytest's results like every other
suite's. Tests run on the backend libgpubuf picks (GPUBUF_BACKEND decides:
memfd on the host, module in the guest); `backend` says which ran.
"""
import os
import subprocess
import sys
import textwrap

import pytest

import gpubuf

# Every dtype and the NumPy / PyTorch names of those each one has.
DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8",
          "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "complex64", "complex128"]
NUMPY_DTYPES = [d for d in DTYPES if d != "bfloat16"]
# PyTorch before 2.3 (Debian 12 has 1.13) has no uint16, uint32 or uint64.
TORCH_UNSIGNED = ["uint16", "uint32", "uint64"]
try:
    import torch as _torch
    TORCH_MISSING = [d for d in TORCH_UNSIGNED if not hasattr(_torch, d)]
except ImportError:
    TORCH_MISSING = TORCH_UNSIGNED
TORCH_DTYPES = [d for d in DTYPES if d not in TORCH_MISSING]


@pytest.fixture
def ctx():
    with gpubuf.open() as c:
        yield c


@pytest.fixture
def backend(ctx):
    return ctx.backend


def module_counter(name):
    """gpubuf.ko's counter (live_buffers, live_bytes), None without it."""
    try:
        with open(os.path.join("/sys/class/misc/gpubuf", name)) as f:
            return int(f.read())
    except OSError:
        return None


def run_python(code, **env):
    """Run code (dedented) in a child interpreter that imports the same
    gpubuf; return its stdout, failing on a non-zero exit or a crash. env's
    LD_LIBRARY_PATH goes before the inherited one, which may be how
    libgpubuf itself is found (the guest run)."""
    if "LD_LIBRARY_PATH" in env and os.environ.get("LD_LIBRARY_PATH"):
        env["LD_LIBRARY_PATH"] += os.pathsep + os.environ["LD_LIBRARY_PATH"]
    e = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), **env)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=e,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, "exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr)
    return p.stdout


class _Tap:
    def __init__(self, path):
        self.out = sys.stdout if path == "-" else open(path, "w")
        self.n = 0
        # Each result names the backend it ran on.
        with gpubuf.open() as c:
            self.prefix = "python [%s backend]: " % c.backend

    def line(self, ok, name, extra=""):
        self.n += 1
        self.out.write("%s %d - %s%s%s\n" % (
            "ok" if ok else "not ok", self.n, self.prefix, name, extra))
        self.out.flush()

    def pytest_runtest_logreport(self, report):
        name = report.nodeid.split("tests/")[-1]
        if report.when == "call":
            if report.skipped:
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
                self.line(True, name, " # SKIP %s" % reason)
            else:
                self.line(report.passed, name)
            if report.failed:
                for text in str(report.longrepr).splitlines()[-15:]:
                    self.out.write("# %s\n" % text)
        elif report.when == "setup" and not report.passed:
            if report.skipped:
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
                self.line(True, name, " # SKIP %s" % reason)
            else:
                self.line(False, name + " (setup)")
        elif report.when == "teardown" and report.failed:
            self.line(False, name + " (teardown)")

    def pytest_collectreport(self, report):
        if report.skipped:      # a module's importorskip: say what was left out
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
            self.line(True, "collect %s" % report.nodeid, " # SKIP %s" % reason)
        if report.failed:
            self.line(False, "collect %s" % report.nodeid)
            for text in str(report.longrepr).splitlines()[-15:]:
                self.out.write("# %s\n" % text)

    def pytest_sessionfinish(self, session):
        self.out.write("1..%d\n" % self.n)
        self.out.flush()


def pytest_configure(config):
    path = os.environ.get("GPUBUF_TAP")
    if path:
        config.pluginmanager.register(_Tap(path), "gpubuf-tap")
