"""One exception class per tpcommResult_t, all under TpcommError.

Each carries the result code, its C name and the library's message (tpcommGetLastError), so a
Python user sees the same words a C user sees. Classes also derive from the matching built-in
(ValueError, TimeoutError, ...) so generic handlers keep working.
"""
from typing import Dict, Optional, Type

from . import _abi


def _code(name: str) -> int:
    """The tpcommResult_t called `name`, from _abi's table (itself checked against tpcomm.h and
    the library by python/tests/test_result_codes.py)."""
    return _abi.RESULT_NAMES.index(name)


class TpcommError(RuntimeError):
    """A tpcomm call failed. `code` is the tpcommResult_t (None for errors outside the library)."""

    code: Optional[int] = None

    def __init__(self, message: str, code: Optional[int] = None, op: Optional[str] = None) -> None:
        if code is not None:
            self.code = code
        self.op = op
        self.message = message
        super().__init__(f"{op}: {message}" if op else message)

    @property
    def name(self) -> Optional[str]:
        if self.code is None:
            return None
        return _abi.RESULT_NAMES[self.code] if 0 <= self.code < _abi.NUM_RESULTS else "unknown"


class TpcommCudaError(TpcommError):
    code = _code("tpcommUnhandledCudaError")


class TpcommSystemError(TpcommError, OSError):
    code = _code("tpcommSystemError")


class TpcommInternalError(TpcommError):
    code = _code("tpcommInternalError")


class TpcommInvalidArgumentError(TpcommError, ValueError):
    code = _code("tpcommInvalidArgument")


class TpcommInvalidUsageError(TpcommError):
    code = _code("tpcommInvalidUsage")


class TpcommRemoteError(TpcommError):
    code = _code("tpcommRemoteError")


class TpcommInProgressError(TpcommError):
    code = _code("tpcommInProgress")


class TpcommTimeoutError(TpcommError, TimeoutError):
    code = _code("tpcommTimeout")


class TpcommNoDeviceError(TpcommError):
    code = _code("tpcommNoDevice")


class TpcommNoKernelImageError(TpcommError):
    code = _code("tpcommNoKernelImage")


class TpcommUnsupportedError(TpcommError):
    code = _code("tpcommUnsupported")


class TpcommFallbackRefusedError(TpcommError):
    code = _code("tpcommFallbackRefused")


class TpcommNcclError(TpcommError):
    code = _code("tpcommNcclError")


class TpcommLibraryNotFoundError(TpcommError, OSError):
    """libtpcomm.so could not be found or loaded; the message lists every place tried."""


class TpcommCliError(TpcommError):
    """The bundled `tpcomm` CLI failed or printed something that is not JSON."""

    def __init__(self, message: str, returncode: Optional[int] = None, stderr: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


def _classes_by_code() -> Dict[int, Type[TpcommError]]:
    """Every subclass that stands for one tpcommResult_t, by code (one each: a CPU test)."""
    out: Dict[int, Type[TpcommError]] = {}
    pending = list(TpcommError.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.code is not None:
            out[cls.code] = cls
    return out


_BY_CODE = _classes_by_code()


def error_class(code: int) -> Type[TpcommError]:
    return _BY_CODE.get(code, TpcommError)


def make_error(code: int, message: str, op: Optional[str] = None) -> TpcommError:
    return error_class(code)(message, code=code, op=op)
