# SPDX-License-Identifier: MIT
"""Build gpubuf's CPython extension against libgpubuf.

Which libgpubuf:
  GPUBUF_IN_TREE=1   the tree's own build (libgpubuf/build from `make lib`, or
                     GPUBUF_LIB_BUILD), linked with an RPATH to it: for
                     tests and `make python`, not for installing
  otherwise          pkg-config gpubuf (what `make install` installed), else
                     the tree's headers and build without an RPATH: the
                     extension then loads the system's libgpubuf.so.0.
Offline: only setuptools and python3-dev are used (pip install
--no-build-isolation ./bindings/python, or python3 setup.py build).
"""
import os
import shlex
import subprocess
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", ".."))
LIB_BUILD = os.environ.get("GPUBUF_LIB_BUILD") or os.path.join(TOP, "libgpubuf", "build")


def version():
    with open(os.path.join(TOP, "VERSION")) as f:
        return f.read().strip()


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "gpubuf"], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return shlex.split(out)


def libgpubuf_flags():
    in_tree = os.environ.get("GPUBUF_IN_TREE") == "1"
    cflags = None if in_tree else pkg_config("--cflags")
    libs = None if in_tree else pkg_config("--libs")
    if cflags is not None and libs is not None:
        print("gpubuf: building against the installed libgpubuf (pkg-config gpubuf: %s)"
              % " ".join(cflags + libs), file=sys.stderr)
        return dict(
            include_dirs=[f[2:] for f in cflags if f.startswith("-I")],
            library_dirs=[f[2:] for f in libs if f.startswith("-L")],
            libraries=[f[2:] for f in libs if f.startswith("-l")],
            runtime_library_dirs=[])
    if not os.path.exists(os.path.join(LIB_BUILD, "libgpubuf.so")):
        raise SystemExit(
            "gpubuf: no installed libgpubuf (pkg-config gpubuf) and no "
            f"in-tree build in {LIB_BUILD}: run `make lib` or `make install` first")
    print("gpubuf: building against the tree's libgpubuf in %s%s" % (
        LIB_BUILD, ", RPATH to it" if in_tree else ""), file=sys.stderr)
    return dict(
        include_dirs=[os.path.join(TOP, "libgpubuf", "include"),
                      os.path.join(LIB_BUILD, "include")],
        library_dirs=[LIB_BUILD],
        libraries=["gpubuf"],
        runtime_library_dirs=[LIB_BUILD] if in_tree else [])


SOURCES = ["module.c", "context.c", "buffer.c", "matrix.c", "dlpack.c",
           "device.c", "fileio.c"]

setup(
    name="gpubuf",
    version=version(),
    description="Pinned, zero-copy matrices shared with NumPy, PyTorch and GPUs",
    license="MIT",
    packages=["gpubuf"],
    package_data={"gpubuf": ["__init__.pyi", "py.typed"]},
    ext_modules=[Extension(
        "gpubuf._gpubuf",
        sources=[os.path.join("src", s) for s in SOURCES],
        depends=[os.path.join("src", "pygpubuf.h")],
        extra_compile_args=["-std=gnu11", "-Wall", "-Wextra", "-Werror",
                            "-Wno-missing-field-initializers",
                            "-Wno-cast-function-type"],
        **libgpubuf_flags())],
    python_requires=">=3.9",
)
