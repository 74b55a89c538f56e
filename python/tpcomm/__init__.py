"""tpcomm: the all-reduce for tensor-parallel inference, from Python.

A ctypes binding over libtpcomm.so (bundled in the wheel). Importing it needs neither torch nor a
GPU: the library is loaded on first use, and a missing library, driver or GPU is reported then,
as a TpcommError subclass carrying the library's message.

    import tpcomm
    comm = tpcomm.Communicator.from_process_group(gloo_group, device=local_rank)
    comm.all_reduce(tensor)          # in place, on torch's current stream
    comm.last_call()                 # which algorithm ran, and why

PyTorch engines: tpcomm.torch.CustomAllreduce (the vLLM/SGLang interface). Docs: docs/PYTHON.md.
"""
from typing import Tuple

from . import _abi, _loader
from .cli import doctor, inspect
from .communicator import Communicator, get_unique_id, group
from .errors import (
    TpcommCliError, TpcommCudaError, TpcommError, TpcommFallbackRefusedError,
    TpcommInProgressError, TpcommInternalError, TpcommInvalidArgumentError,
    TpcommInvalidUsageError, TpcommLibraryNotFoundError, TpcommNcclError,
    TpcommNoDeviceError, TpcommNoKernelImageError, TpcommRemoteError, TpcommSystemError,
    TpcommTimeoutError, TpcommUnsupportedError,
)

FLOAT16, FLOAT32, BFLOAT16 = _abi.FLOAT16, _abi.FLOAT32, _abi.BFLOAT16
ALGORITHMS = _abi.ALGO_NAMES  # the names tpcomm accepts (algo=)

library_path = _loader.library_path


def library_version() -> Tuple[int, int, int]:
    """The loaded library's version as (major, minor, patch)."""
    import ctypes

    v = ctypes.c_int()
    _loader.lib().tpcommGetVersion(ctypes.byref(v))
    return (v.value // 10000, (v.value // 100) % 100, v.value % 100)


def _package_version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # Python < 3.8
        return "unknown"
    try:
        return version("tpcomm")
    except PackageNotFoundError:  # a source checkout on PYTHONPATH
        return "0+source"


__version__ = _package_version()

__all__ = [
    "ALGORITHMS", "BFLOAT16", "FLOAT16", "FLOAT32", "Communicator", "TpcommCliError",
    "TpcommCudaError", "TpcommError", "TpcommFallbackRefusedError", "TpcommInProgressError",
    "TpcommInternalError", "TpcommInvalidArgumentError", "TpcommInvalidUsageError",
    "TpcommLibraryNotFoundError", "TpcommNcclError", "TpcommNoDeviceError",
    "TpcommNoKernelImageError", "TpcommRemoteError", "TpcommSystemError", "TpcommTimeoutError",
    "TpcommUnsupportedError", "doctor", "get_unique_id", "group", "inspect", "library_path",
    "library_version",
]
