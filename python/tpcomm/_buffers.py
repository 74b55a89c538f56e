"""Turns the caller's array object into (pointer, element count, dtype, device, stream).

Accepted without importing any framework:
  - torch tensors (recognised by their type's module; torch is already loaded if one exists),
  - objects with __cuda_array_interface__ (CuPy, numba, and torch too),
  - DLPack: objects with __dlpack__ / __dlpack_device__, or a raw "dltensor" capsule. A capsule is
    only read, never consumed (its deleter still runs when the capsule dies), so the caller keeps
    ownership of the memory, as with the other two forms.
Every form must describe one dense, C-contiguous block on a CUDA device.
"""
import ctypes
import sys
from collections import namedtuple

from . import _abi
from .errors import TpcommInvalidArgumentError

Buffer = namedtuple("Buffer", "ptr count dtype device stream")  # device/stream may be None

_TYPESTR = {"<f2": _abi.FLOAT16, "<f4": _abi.FLOAT32, "|f2": _abi.FLOAT16}
_DTYPE_BY_NAME = {
    "float16": _abi.FLOAT16, "half": _abi.FLOAT16, "fp16": _abi.FLOAT16,
    "float32": _abi.FLOAT32, "float": _abi.FLOAT32, "fp32": _abi.FLOAT32,
    "bfloat16": _abi.BFLOAT16, "bf16": _abi.BFLOAT16,
}


def _bad(msg):
    return TpcommInvalidArgumentError(msg, code=4)


def dtype_code(dtype):
    """A tpcommDataType_t from an int, a name ('bfloat16'), a torch.dtype or a numpy dtype."""
    if dtype is None:
        return None
    if isinstance(dtype, int):
        if dtype not in _abi.DTYPE_NAMES:
            raise _bad(f"datatype {dtype} is not float16 (6), float32 (7) or bfloat16 (9)")
        return dtype
    name = str(dtype).replace("torch.", "").lower()
    if name in _DTYPE_BY_NAME:
        return _DTYPE_BY_NAME[name]
    raise _bad(f"dtype {dtype} is not supported: tpcomm reduces float16, bfloat16 and float32")


def is_torch_tensor(obj):
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr")


_torch_codes = None
_torch_tensor = None


def torch_dtype_code(dtype):
    """The tpcommDataType_t of a torch.dtype, or None (built once: eager engines' hot path)."""
    global _torch_codes
    if _torch_codes is None:
        torch = sys.modules["torch"]
        _torch_codes = {torch.float16: _abi.FLOAT16, torch.float32: _abi.FLOAT32,
                        torch.bfloat16: _abi.BFLOAT16}
    return _torch_codes.get(dtype)


def torch_tensor_type():
    """torch.Tensor if torch has been imported (by anyone), else None; never imports it."""
    global _torch_tensor
    if _torch_tensor is None and "torch" in sys.modules:
        _torch_tensor = sys.modules["torch"].Tensor
    return _torch_tensor


def from_torch(t):
    code = torch_dtype_code(t.dtype)
    if code is None:
        raise _bad(f"tensor dtype {t.dtype} is not supported: tpcomm reduces float16, bfloat16 "
                   "and float32")
    # is_cuda and get_device() (an int) are cheaper than building t.device: eager engines pay
    # this on every call.
    if not t.is_cuda:
        raise _bad(f"tensor is on {t.device}, not on a CUDA device")
    device = t.get_device()
    if not t.is_contiguous():
        raise _bad(f"tensor of shape {tuple(t.shape)} and strides {t.stride()} is not contiguous")
    return Buffer(t.data_ptr(), t.numel(), code, device, None)


def _contiguous(shape, strides, itemsize):
    if strides is None:
        return True
    expect = itemsize
    for dim, stride in zip(reversed(shape), reversed(strides)):
        if dim != 1 and stride != expect:
            return False
        expect *= dim
    return True


def from_cai(obj, dtype=None):
    cai = obj.__cuda_array_interface__
    shape = tuple(cai["shape"])
    code = dtype_code(dtype) if dtype is not None else _TYPESTR.get(cai["typestr"])
    if code is None:
        raise _bad(f"__cuda_array_interface__ typestr {cai['typestr']!r} is not float16 or "
                   "float32 (for bfloat16 pass dtype='bfloat16')")
    itemsize = _abi.DTYPE_SIZES[code]
    if not _contiguous(shape, cai.get("strides"), itemsize):
        raise _bad(f"array of shape {shape} and strides {cai.get('strides')} is not C-contiguous")
    count = 1
    for d in shape:
        count *= d
    ptr, readonly = cai["data"]
    if readonly:
        raise _bad("the array is read-only")
    return Buffer(int(ptr or 0), count, code, None, cai.get("stream"))


# ---- DLPack (dlpack.h v0.x/1.x DLTensor layout, stable across versions) ----
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_kDLCUDA, _kDLCUDAManaged = 2, 13
_DL_CODES = {(2, 16): _abi.FLOAT16, (2, 32): _abi.FLOAT32, (4, 16): _abi.BFLOAT16}  # kDLFloat, kDLBfloat

_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype, _capsule_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_capsule_ptr = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_ptr.restype, _capsule_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def is_capsule(obj):
    return type(obj).__name__ == "PyCapsule"


def from_capsule(capsule):
    name = _capsule_name(capsule)
    if name not in (b"dltensor", b"dltensor_versioned"):
        raise _bad(f"capsule named {name!r} is not an unconsumed DLPack tensor")
    addr = _capsule_ptr(capsule, name)
    if name == b"dltensor_versioned":
        # DLManagedTensorVersioned: {DLPackVersion version (2 x u32); void* manager_ctx;
        # deleter; uint64 flags; DLTensor dl_tensor}
        addr += 8 + 8 + 8 + 8
    t = _DLTensor.from_address(addr)  # DLManagedTensor starts with its DLTensor
    if t.device.device_type not in (_kDLCUDA, _kDLCUDAManaged):
        raise _bad(f"DLPack tensor is on device type {t.device.device_type}, not CUDA (2)")
    code = _DL_CODES.get((t.dtype.code, t.dtype.bits))
    if code is None or t.dtype.lanes != 1:
        raise _bad(f"DLPack dtype (code {t.dtype.code}, {t.dtype.bits} bits, {t.dtype.lanes} "
                   "lanes) is not float16, bfloat16 or float32")
    shape = [t.shape[i] for i in range(t.ndim)]
    strides = None
    if t.strides:
        strides = [t.strides[i] * (_abi.DTYPE_SIZES[code]) for i in range(t.ndim)]
    if not _contiguous(shape, strides, _abi.DTYPE_SIZES[code]):
        raise _bad(f"DLPack tensor of shape {shape} is not C-contiguous")
    count = 1
    for d in shape:
        count *= d
    return Buffer((t.data or 0) + t.byte_offset, count, code, t.device.device_id, None), capsule


def describe(obj, dtype=None, stream=None):
    """(Buffer, keepalive). keepalive must live until the call is enqueued (DLPack capsules)."""
    if is_torch_tensor(obj):
        buf = from_torch(obj)
        if dtype is not None and dtype_code(dtype) != buf.dtype:
            raise _bad(f"dtype={dtype} does not match the tensor's {obj.dtype}")
        return buf, None
    if hasattr(obj, "__cuda_array_interface__"):
        return from_cai(obj, dtype), None
    if is_capsule(obj):
        return from_capsule(obj)
    if hasattr(obj, "__dlpack__"):
        # The DLPack contract: the producer orders its pending work before our stream (1 names
        # the legacy default stream, which is what stream 0 means to tpcomm).
        return from_capsule(obj.__dlpack__(stream=stream_handle(stream) or 1))
    raise _bad(f"cannot read a CUDA buffer from {type(obj).__name__}: pass a torch tensor, an "
               "object with __cuda_array_interface__ (CuPy, numba) or a DLPack tensor")


def stream_handle(stream):
    """cudaStream_t as int: from an int, a torch.cuda.Stream (.cuda_stream), a CuPy stream
    (.ptr), or None (0: the legacy default stream)."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    raise _bad(f"cannot read a CUDA stream handle from {type(stream).__name__}")
