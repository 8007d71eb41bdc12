# SPDX-License-Identifier: MIT
"""Read a DLPack capsule's tensor with ctypes, to check what consumers see."""
import ctypes


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


FLAG_READ_ONLY = 1
FLAG_IS_COPIED = 2

_api = ctypes.pythonapi
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def name(capsule):
    return _api.PyCapsule_GetName(capsule).decode()


def tensor(capsule):
    """(DLTensor, flags or None) of a capsule that is still unconsumed.
    The DLTensor keeps the capsule alive: it reads the capsule's memory."""
    n = name(capsule)
    p = _api.PyCapsule_GetPointer(capsule, n.encode())
    if n == "dltensor_versioned":
        v = DLManagedTensorVersioned.from_address(p)
        t, flags = v.dl_tensor, v.flags
    else:
        t, flags = DLManagedTensor.from_address(p).dl_tensor, None
    t.capsule = capsule
    return t, flags


def strides(t):
    return None if not t.strides else (t.strides[0], t.strides[1])
