"""Device selection without a dependency on torch or any CUDA runtime.

tpcommCommInitRank/Begin use the calling thread's current CUDA device. libtpcomm links its own
(static) cudart, which follows the driver's current context; so making the device's *primary*
context current through the driver API (the context torch, CuPy and cudart all share) selects
the device for tpcomm whatever framework the caller uses.
"""
import ctypes
import sys

from .errors import TpcommCudaError, TpcommInvalidArgumentError, TpcommNoDeviceError

_cuda = None


def _driver():
    global _cuda
    if _cuda is None:
        try:
            _cuda = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise TpcommNoDeviceError(
                f"no NVIDIA driver: libcuda.so.1 cannot be loaded ({e})", code=9) from None
    return _cuda


def _check(result, what):
    if result != 0:
        err = ctypes.c_char_p()
        _driver().cuGetErrorString(result, ctypes.byref(err))
        text = err.value.decode() if err.value else f"CUresult {result}"
        cls = TpcommNoDeviceError if result in (100, 101, 35) else TpcommCudaError
        # 100 no device, 101 invalid device, 35 insufficient driver
        raise cls(f"{what} failed: {text}", code=cls.code)


def device_index(device):
    """None -> None (the current device); 3, "cuda:3", "3", torch.device("cuda", 3) -> 3."""
    if device is None:
        return None
    if isinstance(device, int):
        index = device
    elif hasattr(device, "type") and hasattr(device, "index"):  # torch.device, duck-typed
        if device.type != "cuda":
            raise TpcommInvalidArgumentError(f"device {device} is not a CUDA device", code=4)
        index = device.index if device.index is not None else _torch_current_device()
    elif isinstance(device, str):
        text = device.strip()
        if text.startswith("cuda"):
            text = text[4:].lstrip(":")
            index = int(text) if text else _torch_current_device()
        elif text.isdigit():
            index = int(text)
        else:
            raise TpcommInvalidArgumentError(f"device {device!r} is not a CUDA device", code=4)
    else:
        raise TpcommInvalidArgumentError(
            f"device must be an int, 'cuda:N' or a torch.device, not {type(device).__name__}", code=4)
    if index < 0:
        raise TpcommInvalidArgumentError(f"device index {index} is negative", code=4)
    return index


def _torch_current_device():
    torch = sys.modules.get("torch")
    return torch.cuda.current_device() if torch is not None else 0


def make_current(index):
    """Makes device `index` current on this thread (for tpcomm, and for torch if it is loaded)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.set_device(index)  # keeps torch's own notion of the current device in step
    cu = _driver()
    _check(cu.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    _check(cu.cuDeviceGet(ctypes.byref(dev), index), f"cuDeviceGet({index})")
    ctx = ctypes.c_void_p()
    _check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    _check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


def pointer_device(ptr):
    """The device ordinal that owns a CUDA pointer, or None if the driver does not know it
    (host memory, or no driver)."""
    try:
        cu = _driver()
    except TpcommNoDeviceError:
        return None
    ordinal = ctypes.c_int(-1)
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
    r = cu.cuPointerGetAttribute(ctypes.byref(ordinal), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 ctypes.c_uint64(ptr))
    return ordinal.value if r == 0 else None
