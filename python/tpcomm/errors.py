"""One exception class per tpcommResult_t, all under TpcommError.

Each carries the result code, its C name and the library's message (tpcommGetLastError), so a
Python user sees the same words a C user sees. Classes also derive from the matching built-in
(ValueError, TimeoutError, ...) so generic handlers keep working.
"""
from . import _abi


class TpcommError(RuntimeError):
    """A tpcomm call failed. `code` is the tpcommResult_t (None for errors outside the library)."""

    code = None

    def __init__(self, message, code=None, op=None):
        if code is not None:
            self.code = code
        self.op = op
        self.message = message
        super().__init__(f"{op}: {message}" if op else message)

    @property
    def name(self):
        if self.code is None:
            return None
        return _abi.RESULT_NAMES[self.code] if 0 <= self.code < _abi.NUM_RESULTS else "unknown"


class TpcommCudaError(TpcommError):
    code = 1


class TpcommSystemError(TpcommError, OSError):
    code = 2


class TpcommInternalError(TpcommError):
    code = 3


class TpcommInvalidArgumentError(TpcommError, ValueError):
    code = 4


class TpcommInvalidUsageError(TpcommError):
    code = 5


class TpcommRemoteError(TpcommError):
    code = 6


class TpcommInProgressError(TpcommError):
    code = 7


class TpcommTimeoutError(TpcommError, TimeoutError):
    code = 8


class TpcommNoDeviceError(TpcommError):
    code = 9


class TpcommNoKernelImageError(TpcommError):
    code = 10


class TpcommUnsupportedError(TpcommError):
    code = 11


class TpcommFallbackRefusedError(TpcommError):
    code = 12


class TpcommNcclError(TpcommError):
    code = 13


class TpcommLibraryNotFoundError(TpcommError, OSError):
    """libtpcomm.so could not be found or loaded; the message lists every place tried."""


class TpcommCliError(TpcommError):
    """The bundled `tpcomm` CLI failed or printed something that is not JSON."""

    def __init__(self, message, returncode=None, stderr=""):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


_BY_CODE = {cls.code: cls for cls in (
    TpcommCudaError, TpcommSystemError, TpcommInternalError, TpcommInvalidArgumentError,
    TpcommInvalidUsageError, TpcommRemoteError, TpcommInProgressError, TpcommTimeoutError,
    TpcommNoDeviceError, TpcommNoKernelImageError, TpcommUnsupportedError,
    TpcommFallbackRefusedError, TpcommNcclError)}


def error_class(code):
    return _BY_CODE.get(code, TpcommError)


def make_error(code, message, op=None):
    return error_class(code)(message, code=code, op=op)
