# SPDX-License-Identifier: MIT
"""The type stubs (gpubuf/__init__.pyi) and the docstrings cover the API
that exists at run time, and nothing that does not."""
import ast
import inspect
import os

import gpubuf

STUBS = os.path.join(os.path.dirname(gpubuf.__file__), "__init__.pyi")
# Stub-only helpers (type aliases, protocols), and dunders the runtime
# has through slots rather than attributes.
# Types only the stubs name; SafetensorsDict is load_safetensors()'s return
# type, a dict with attributes, in gpubuf.safetensors.
STUB_ONLY = {"Backend", "Order", "Access", "DTypeLike", "Shape", "_FileDescriptorLike",
             "SafetensorsDict"}
SLOT_DUNDERS = {"__init__", "__len__", "__getitem__", "__setitem__", "__buffer__"}


def stub_tree():
    with open(STUBS) as f:
        return ast.parse(f.read())


def public(names):
    return {n for n in names if not n.startswith("_") or n in (
        "__dlpack__", "__dlpack_device__", "__array_interface__", "__array__",
        "__cuda_array_interface__", "__enter__", "__exit__")}


def test_stubs_exist_at_run_time():
    tree = stub_tree()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name not in STUB_ONLY:
            cls = getattr(gpubuf, node.name)
            stubbed = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
            for name in stubbed - SLOT_DUNDERS:
                assert hasattr(cls, name), "%s.%s is stubbed but missing" % (node.name, name)
            if not issubclass(cls, BaseException):
                missing = public(dir(cls)) - stubbed - {"__enter__", "__exit__"}
                assert not missing, "%s lacks stubs for %s" % (node.name, sorted(missing))
        elif isinstance(node, ast.FunctionDef):
            assert callable(getattr(gpubuf, node.name)), node.name


def test_every_exported_name_is_stubbed():
    tree = stub_tree()
    names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    names |= {t.id for n in tree.body if isinstance(n, (ast.AnnAssign,))
              for t in [n.target]}
    assert set(gpubuf.__all__) <= names, sorted(set(gpubuf.__all__) - names)


def test_everything_public_has_a_docstring():
    for name in gpubuf.__all__:
        obj = getattr(gpubuf, name)
        if isinstance(obj, int):
            continue
        assert inspect.getdoc(obj), name
        if inspect.isclass(obj):
            for attr in public(vars(obj)) - {"__enter__", "__exit__"}:
                assert inspect.getdoc(getattr(obj, attr)), "%s.%s" % (name, attr)
