"""The queries of a Communicator (what would run, what ran, its machines, its async error): a
mixin of tpcomm.Communicator, which gives it the live handle (_live)."""
import ctypes
from typing import Any, Dict, Optional, Tuple

from . import _abi, _buffers, _loader
from ._config import check, error_for
from .errors import TpcommError, TpcommInvalidArgumentError

DType = Any  # as in communicator.py: a tpcommDataType_t, a name, a torch or numpy dtype


class Queries:
    """Communicator's queries; each asks the library through the handle _live() gives."""

    def _live(self) -> Any:
        raise NotImplementedError  # Communicator._live

    def explain_add_rmsnorm(self, tokens: int, hidden: int, dtype: DType = "bfloat16",
                            fp8: bool = False) -> Dict[str, Any]:
        """What tpcommAllReduceAddRmsNorm would run for `tokens` x `hidden` (the plan depends on
        the shapes only): the fused one-shot variant (fused_*) or the all-reduce then the epilogue kernel
        (add_rmsnorm*), with the reason. Raises the error the call would raise."""
        params = _abi.RmsNormParams(_abi.RMSNORM_PARAMS_VERSION, 1e-6, 0,
                                    1 if fp8 else None)  # only tested against NULL, never read
        info = _abi.CallInfo()
        check(_loader.lib().tpcommCommExplainAddRmsNorm(
            self._live(), int(tokens), int(hidden), _buffers.dtype_code(dtype),
            ctypes.byref(params), ctypes.byref(info)), "tpcommCommExplainAddRmsNorm")
        return _abi.call_info_dict(info, _loader.lib())

    # ---- across machines (docs/MULTINODE.md) ----
    @property
    def nodes(self) -> Tuple[int, int]:
        """(machines, ranks on each machine) of this communicator: (1, world_size) on one
        machine (tpcommCommNodes)."""
        nodes, local = ctypes.c_int(), ctypes.c_int()
        check(_loader.lib().tpcommCommNodes(self._live(), ctypes.byref(nodes), ctypes.byref(local)),
              "tpcommCommNodes")
        return nodes.value, local.value

    # ---- what ran ----
    def stats(self) -> Dict[str, Any]:
        """{'calls': {algo: n}, 'fallbacks': n, 'captured': n, 'bytes': n, 'ptx_jit_calls': n,
        'node_link_calls': n}. A captured call counts once, at capture, not at each replay.
        ptx_jit_calls: calls whose kernels the driver JIT-compiled from PTX (no SASS for this GPU
        in the build). node_link_calls: the NCCL legs between machines this rank ran, each also
        counted in calls['nccl'] and never as a fallback; 0 on one machine."""
        lib, handle = _loader.lib(), self._live()
        s = _abi.Stats()
        check(lib.tpcommCommGetStats(handle, ctypes.byref(s)), "tpcommCommGetStats")
        return dict(_abi.stats_dict(s),
                    ptx_jit_calls=_counter(lib.tpcommCommGetPtxJitCalls, handle,
                                           "tpcommCommGetPtxJitCalls"),
                    node_link_calls=_counter(lib.tpcommCommGetNodeLinkCalls, handle,
                                             "tpcommCommGetNodeLinkCalls"))

    def last_call(self) -> Dict[str, Any]:
        """{'algo', 'bytes', 'dtype', 'blocks', 'reason'} of the last enqueued call."""
        info = _abi.CallInfo()
        check(_loader.lib().tpcommCommGetLastCall(self._live(), ctypes.byref(info)),
              "tpcommCommGetLastCall")
        return _abi.call_info_dict(info, _loader.lib())

    def explain(self, nbytes: Optional[int] = None, dtype: DType = "bfloat16",
                count: Optional[int] = None, collective: str = "all_reduce") -> Dict[str, Any]:
        """What the policy would choose for a call of `nbytes` (or `count` elements) per rank,
        without running it. Raises the error the call would raise (e.g. strict mode refusing
        NCCL). collective: "all_reduce", "reduce_scatter" or "all_gather" (their per-rank count:
        recvcount, sendcount; the answer's bytes are then the whole message)."""
        code = _buffers.dtype_code(dtype)
        if count is None:
            if nbytes is None:
                raise TpcommInvalidArgumentError("explain: give nbytes or count", code=4)
            count = int(nbytes) // _abi.DTYPE_SIZES[code]
        coll = _abi.COLL_NAMES.index(collective) if collective in _abi.COLL_NAMES else None
        if coll is None:
            raise TpcommInvalidArgumentError(
                f"explain: collective {collective!r} is not one of {_abi.COLL_NAMES}", code=4)
        info = _abi.CallInfo()
        if coll == 0:
            r = _loader.lib().tpcommCommExplain(self._live(), int(count), code, ctypes.byref(info))
            check(r, "tpcommCommExplain")
        else:
            r = _loader.lib().tpcommCommExplainCollective(self._live(), coll, int(count), code,
                                                          ctypes.byref(info))
            check(r, "tpcommCommExplainCollective")
        return _abi.call_info_dict(info, _loader.lib())

    def async_error(self) -> Optional[TpcommError]:
        """The TpcommError a kernel reported after its call returned (e.g. a peer that stopped
        answering), or None. Once set, every later call raises it too."""
        code = ctypes.c_int()
        check(_loader.lib().tpcommCommGetAsyncError(self._live(), ctypes.byref(code)),
              "tpcommCommGetAsyncError")
        if code.value == _abi.SUCCESS:
            return None
        return error_for(code.value, "asynchronous error")


def _counter(fn, handle, name):
    """One of the library's uint64 per-communicator counters."""
    value = ctypes.c_uint64()
    check(fn(handle, ctypes.byref(value)), name)
    return int(value.value)
