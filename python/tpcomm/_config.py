"""Keyword arguments -> tpcommConfig_t, and the result check every binding call goes through."""
import ctypes

from . import _abi, _loader
from .errors import TpcommInvalidArgumentError, make_error

_NCCL_MODES = {"auto": _abi.NCCL_AUTO, "off": _abi.NCCL_OFF}


def make_config(buffer_bytes=None, timeout_ms=None, strict=None, algo=None, nccl=None,
                nccl_comm=None, max_blocks=None, init_timeout_ms=None, launch_knobs=None,
                wire=None, wire_min_bytes=None):
    """None everywhere means 'the library default': the TPCOMM_* environment variable if set,
    else the built-in value (TPCOMM_CONFIG_INITIALIZER). `launch_knobs`: TPCOMM_KNOBS's syntax
    ("name=value,..."), applied on top of the environment's. `wire` ("int8", "int4", "fp8",
    "fp8_e5m2"; off by default) and `wire_min_bytes`: the communicator's large all-reduces over
    PCIe or host memory move quantized (the knobs wire and wire_min_bytes; docs/PROTOCOL.md, "The
    quantized wire's codec", states the error). The library checks every value at init."""
    cfg = _abi.Config.initializer()
    knobs = [launch_knobs] if launch_knobs else []
    if wire is not None:
        knobs.append(f"wire={wire}")
    if wire_min_bytes is not None:
        knobs.append(f"wire_min_bytes={int(wire_min_bytes)}")
    if knobs:
        cfg.launchKnobs = ",".join(knobs).encode()
    if buffer_bytes is not None:
        cfg.bufferBytes = int(buffer_bytes)
    if timeout_ms is not None:
        cfg.timeoutMs = int(timeout_ms)
    if strict is not None:
        cfg.strict = 1 if strict else 0
    if algo is not None:
        cfg.algo = algo_code(algo)
    if nccl_comm is not None:
        cfg.ncclMode, cfg.ncclComm = _abi.NCCL_GIVEN, ctypes.c_void_p(int(nccl_comm))
    elif nccl is not None:
        if nccl not in _NCCL_MODES:
            raise TpcommInvalidArgumentError(f"nccl={nccl!r}: expected 'auto' or 'off'", code=4)
        cfg.ncclMode = _NCCL_MODES[nccl]
    if max_blocks is not None:
        cfg.maxBlocks = int(max_blocks)
    if init_timeout_ms is not None:
        cfg.initTimeoutMs = int(init_timeout_ms)
    return cfg


def algo_code(algo):
    if isinstance(algo, int) and 0 <= algo < _abi.NUM_ALGOS:
        return algo
    if isinstance(algo, str) and algo in _abi.ALGO_NAMES:
        return _abi.ALGO_NAMES.index(algo)
    raise TpcommInvalidArgumentError(
        f"algo={algo!r}: expected one of {', '.join(_abi.ALGO_NAMES)}", code=4)


def last_error():
    msg = _loader.lib().tpcommGetLastError()
    return msg.decode("utf-8", "replace") if msg else ""


def error_for(result, op):
    msg = last_error() or _loader.lib().tpcommGetErrorString(result).decode()
    return make_error(result, msg, None if op in msg else op)


def check(result, op):
    """Raises the TpcommError subclass of `result` with the library's message, unless success."""
    if result != _abi.SUCCESS:
        raise error_for(result, op)


# tpcommAllReduceWire's codes for Communicator.all_reduce(wire=...): None keeps the
# communicator's (-1), "none" is full precision for that call (0).
WIRE_CODES = {"none": 0, "int8": 1, "int4": 2, "fp8": 3, "fp8_e4m3": 3, "fp8_e5m2": 4}


def wire_code(wire):
    """The C code of a per-call `wire` argument; a TpcommInvalidArgumentError names the known
    codecs for anything else."""
    if wire is None:
        return -1
    code = WIRE_CODES.get(wire) if isinstance(wire, str) else None
    if code is None:
        from .errors import TpcommInvalidArgumentError
        raise TpcommInvalidArgumentError(
            f"wire={wire!r} is not a codec (known: {', '.join(WIRE_CODES)}, or None for the "
            "communicator's)", code=4)
    return code
