"""tpcomm.torch.CustomAllreduce: the interface vLLM's and SGLang's engines call on their custom
all-reduce, served by tpcomm. Swap it in with a few lines (docs/PYTHON.md, tpcomm.engines).

What differs from the engines' own class, on purpose:
  - no world-size or NVLink restriction: tpcomm serves 2..8 GPUs on NVLink, PCIe P2P and
    P2P-less machines, and its policy picks the algorithm (or NCCL, counted) per size;
  - no IPC registration of user buffers: tpcomm pushes into its own staging buffers, so
    capture() has nothing to register and graph replays need no bookkeeping;
  - never silent: when it cannot run, `disabled` is True and `disabled_reason` says why, and the
    reason is logged at WARNING (the engine then uses NCCL, as it would without us).

Importing this module registers the fused all-reduce + add + RMSNorm ops and the reduce-scatter
and all-gather ops (torch.ops.tpcomm.*, _torch_ops.py); register_communicator(comm) gives the
comm_id they take.
"""
import contextlib
import logging
from typing import Any, Dict, Iterator, Optional, Set, Tuple, Union

import torch
import torch.distributed as dist

from . import _buffers, _torch_ops
from .communicator import Communicator
from .errors import TpcommError, TpcommInvalidUsageError

logger = logging.getLogger("tpcomm")

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)

# The comm_id the torch.ops.tpcomm.fused_allreduce_rmsnorm* ops take for a Communicator.
register_communicator = _torch_ops.register
unregister_communicator = _torch_ops.unregister


class CustomAllreduce:
    """One rank's custom all-reduce over `group` (a CPU/gloo group, as engines pass; an NCCL
    group works too). Creation is collective over the group.

    max_size: the largest input (bytes) should_custom_ar accepts; larger ones go to the engine's
    NCCL path. Other keyword arguments engines pass (e.g. vLLM's symm_mem_enabled) are accepted
    and ignored; `config` is passed to tpcomm (buffer_bytes, timeout_ms, strict, algo, nccl).
    """

    # Engine code reads these to decide on paths of its own, which tpcomm leaves alone: vLLM
    # shards some layers when its ca object is `fully_connected` (a choice of its own model code,
    # not one tpcomm should make for it; the all-gathers it does make reach custom_all_gather),
    # and takes NVLink-multicast kernels when the MNNVL pointers are non-zero (DeepSeek-V4.1 mHC).
    fully_connected = False
    mnnvl_multicast_ptr = 0
    mnnvl_lamport_ag_multicast_ptr = 0

    def __init__(self, group: Any, device: Union[int, str, "torch.device"],
                 max_size: int = 8 * 1024 * 1024, config: Optional[Dict[str, Any]] = None,
                 **engine_kwargs: Any) -> None:
        self.disabled = True
        self.disabled_reason: Optional[str] = None
        self.max_size = int(max_size)
        self.group = group
        self.comm: Optional[Communicator] = None
        self.comm_id: Optional[int] = None  # the fused ops' handle on self.comm
        self._IS_CAPTURING = False  # the engines' attribute name, kept for code that reads it
        self._captured_before = 0
        self._declined_logged: Set[Tuple[str, str]] = set()
        self.device = _as_device(device)
        self._device_index = self.device.index if self.device.type == "cuda" else None
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        if self.world_size == 1:
            self._disable("world size 1: there is nothing to reduce", logging.INFO)
            return
        if self.device.type != "cuda":
            self._disable(f"device {self.device} is not a CUDA device")
            return
        try:
            self.comm = Communicator.from_process_group(group, self.device, **(config or {}))
        except Exception as e:  # every rank sees an error (creation agrees on failure too)
            # Not only TpcommError: the creation protocol re-raises a rank's own exception of
            # any type (a torch RuntimeError setting up the device, a gloo error in the
            # exchange), and an engine that sees it crashes where it would run on NCCL.
            what = str(e) if isinstance(e, TpcommError) else f"{type(e).__name__}: {e}"
            self._disable(f"the tpcomm communicator could not be created: {what}")
            return
        self.comm_id = register_communicator(self.comm)
        self.disabled = False
        logger.info("tpcomm CustomAllreduce: rank %d/%d on %s, inputs up to %d bytes",
                    self.rank, self.world_size, self.device, self.max_size)

    def _disable(self, reason: str, level: int = logging.WARNING) -> None:
        self.disabled, self.disabled_reason = True, reason
        logger.log(level, "tpcomm CustomAllreduce disabled on rank %s (the engine will use NCCL): "
                   "%s", getattr(self, "rank", "?"), reason)

    # ---- the engines' interface ----
    def should_custom_ar(self, inp: "torch.Tensor") -> bool:
        """True when custom_all_reduce will serve `inp`: enabled, a supported dtype, contiguous,
        non-empty, at most max_size bytes, and on this communicator's GPU."""
        # Engines call this and then custom_all_reduce on every eager all-reduce, so it reads
        # only cheap tensor properties (get_device(): an int, no torch.device object).
        if self.disabled:
            return False
        if _buffers.torch_dtype_code(inp.dtype) is None or not inp.is_contiguous():
            return False
        nbytes = inp.numel() * inp.element_size()
        return (0 < nbytes <= self.max_size and inp.is_cuda
                and inp.get_device() == self._device_index)

    def custom_all_reduce(self, inp: "torch.Tensor") -> Optional["torch.Tensor"]:
        """A new tensor holding the sum over ranks, or None when should_custom_ar(inp) is False
        (the engine then takes its NCCL path). Works eagerly and under CUDA graph capture."""
        comm = self.comm
        if comm is None or not self.should_custom_ar(inp):
            return None
        out = torch.empty_like(inp)  # contiguous like inp (preserve_format of a dense tensor)
        # should_custom_ar has checked what Communicator.all_reduce would check again.
        comm._all_reduce_checked(inp.data_ptr(), out.data_ptr(), inp.numel(),
                                 _buffers.torch_dtype_code(inp.dtype))
        return out

    def all_reduce(self, inp: "torch.Tensor", *, out: Optional["torch.Tensor"] = None,
                   registered: bool = False) -> "torch.Tensor":
        """Out of place into `out` (allocated if None). `registered` is accepted for vLLM's
        signature: tpcomm needs no registered buffers."""
        if self.comm is None:
            raise TpcommInvalidUsageError(
                "CustomAllreduce.all_reduce: this rank's custom all-reduce is disabled "
                f"({self.disabled_reason}); check should_custom_ar() first")
        if out is None:
            out = torch.empty_like(inp)
        self.comm.all_reduce(inp, out=out)
        return out

    def fused_allreduce_rmsnorm(self, input_: "torch.Tensor", residual_inp_: "torch.Tensor",
                                weight_: "torch.Tensor", eps: float
                                ) -> Optional[Tuple["torch.Tensor", "torch.Tensor"]]:
        """SGLang's hook (0.5.23, srt/distributed/parallel_state.py:811-836,
        GroupCoordinator.fused_allreduce_rmsnorm, reached through
        tensor_model_parallel_fused_allreduce_rmsnorm): (norm_out, residual_out), two new tensors
        with residual_out = residual_inp_ + sum of input_ over ranks and norm_out =
        RMSNorm(residual_out) * weight_, the inputs left unchanged (as FlashInfer's fused kernel
        SGLang uses on CUDA: srt/layers/flashinfer_comm_fusion.py:902-923). None means "not
        handled": SGLang then runs the all-reduce and the norm itself. SGLang passes Gemma's
        1 + weight precomputed, so no weight offset here. A tpcomm error is logged at WARNING
        and raised (SGLang catches it and falls back; the log keeps that visible)."""
        reason = self._fused_declines(input_, residual_inp_, weight_)
        if reason is not None:
            self._log_declined("fused_allreduce_rmsnorm", reason)
            return None
        try:
            if torch.compiler.is_compiling():  # the op: torch.compile traces it
                return torch.ops.tpcomm.fused_allreduce_rmsnorm(
                    input_, residual_inp_, weight_, float(eps), 0, None, self.comm_id)
            return _torch_ops.functional(input_, residual_inp_, weight_, float(eps), 0, None,
                                         self.comm_id)
        except TpcommError as e:
            logger.warning("tpcomm CustomAllreduce.fused_allreduce_rmsnorm on rank %d failed: %s",
                           self.rank, e)
            raise

    def _fused_declines(self, inp, residual, weight) -> Optional[str]:
        """Why fused_allreduce_rmsnorm would not serve these tensors, or None."""
        if self.disabled or self.comm_id is None:
            return "this rank's custom all-reduce is disabled"
        if _buffers.torch_dtype_code(inp.dtype) is None:
            return f"dtype {inp.dtype} is not float16, bfloat16 or float32"
        if inp.dim() < 1 or residual.shape != inp.shape or weight.shape != inp.shape[-1:] \
                or residual.dtype != inp.dtype or weight.dtype != inp.dtype:
            return "input, residual and weight are not [T, H], [T, H], [H] of one dtype"
        if not (inp.is_contiguous() and residual.is_contiguous() and weight.is_contiguous()):
            return "a tensor is not contiguous"
        if not 0 < inp.numel() * inp.element_size() <= self.max_size:
            return f"the input is empty or above max_size ({self.max_size} bytes)"
        if inp.shape[-1] > _torch_ops.MAX_HIDDEN:
            return f"hidden {inp.shape[-1]} is above {_torch_ops.MAX_HIDDEN}"
        if any(t.device != self.device for t in (inp, residual, weight)):
            return f"a tensor is not on {self.device}"
        return None

    # vLLM's CudaCommunicator.custom_all_gather / custom_reduce_scatter call these on every
    # sequence-parallel gather/scatter (and DeepSeek-V4.1's logits gather) with a contiguous
    # tensor, and take their own NCCL path on None. The contract is vLLM 0.34.0's
    # (vllm/distributed/device_communicators/custom_all_reduce.py, CustomAllreduce.
    # custom_all_gather / custom_reduce_scatter; cuda_communicator.py calls them): a new tensor
    # along dim 0, [world * shape[0], ...] gathered in rank order, or [shape[0] / world, ...] with
    # rank r's run summed over the ranks; None when should_custom_* is False. vLLM's own gates on
    # 16-byte sizes and `fully_connected` are its kernels' limits, not tpcomm's: tpcomm serves
    # any size up to max_size.
    def should_custom_all_gather(self, inp: "torch.Tensor") -> bool:
        """True when custom_all_gather will serve `inp`: enabled, a supported dtype, contiguous,
        1..max_size bytes, on this communicator's GPU."""
        return self._half_declines(inp, reduce_scatter=False) is None

    def custom_all_gather(self, inp: "torch.Tensor") -> Optional["torch.Tensor"]:
        """Every rank's `inp` along dim 0 in rank order, a new tensor; None (not handled, the
        engine gathers on its own path) when should_custom_all_gather(inp) is False."""
        return self._half("custom_all_gather", inp, reduce_scatter=False)

    def should_custom_reduce_scatter(self, inp: "torch.Tensor") -> bool:
        """True when custom_reduce_scatter will serve `inp`: should_custom_all_gather's
        conditions and a first dim that the world size divides."""
        return self._half_declines(inp, reduce_scatter=True) is None

    def custom_reduce_scatter(self, inp: "torch.Tensor") -> Optional["torch.Tensor"]:
        """This rank's run of `inp`'s dim 0 summed over the ranks, a new tensor; None (not
        handled) when should_custom_reduce_scatter(inp) is False."""
        return self._half("custom_reduce_scatter", inp, reduce_scatter=True)

    def _half_declines(self, inp, reduce_scatter: bool) -> Optional[str]:
        """Why custom_reduce_scatter / custom_all_gather would not serve `inp`, or None."""
        if self.disabled or self.comm_id is None:
            return "this rank's custom all-reduce is disabled"
        if _buffers.torch_dtype_code(inp.dtype) is None:
            return f"dtype {inp.dtype} is not float16, bfloat16 or float32"
        if not inp.is_contiguous():
            return "the input is not contiguous"
        if not 0 < inp.numel() * inp.element_size() <= self.max_size:
            return f"the input is empty or above max_size ({self.max_size} bytes)"
        if inp.device != self.device:
            return f"the input is not on {self.device}"
        if inp.dim() < 1:
            return "the input is a scalar"
        if reduce_scatter and inp.shape[0] % self.world_size:
            return f"the first dim is not a multiple of world size {self.world_size}"
        return None

    def _half(self, op: str, inp, reduce_scatter: bool) -> Optional["torch.Tensor"]:
        reason = self._half_declines(inp, reduce_scatter)
        if reason is not None:
            self._log_declined(op, reason)
            return None
        name = "reduce_scatter" if reduce_scatter else "all_gather"
        if torch.compiler.is_compiling():  # the op: torch.compile traces it
            return getattr(torch.ops.tpcomm, name)(inp, self.world_size, self.comm_id)
        return _torch_ops.half_functional(name, inp, self.world_size, self.comm_id)

    def _log_declined(self, op: str, why: str = "tpcomm has no kernel for it") -> None:
        if (op, why) not in self._declined_logged:
            self._declined_logged.add((op, why))
            logger.info("tpcomm CustomAllreduce: %s is not served by tpcomm (%s); the engine uses "
                        "its own path (logged once per reason)", op, why)

    @contextlib.contextmanager
    def capture(self) -> Iterator[None]:
        """The engines wrap CUDA graph capture in this. tpcomm needs no graph-buffer registration,
        so it only logs how many all-reduces were captured (calls made while not capturing,
        e.g. warm-up runs, execute normally)."""
        self._IS_CAPTURING = True
        comm = None if self.disabled else self.comm
        if comm is not None:
            self._captured_before = comm.stats()["captured"]
        try:
            yield
        finally:
            self._IS_CAPTURING = False
            if comm is not None and not self.disabled and not comm.closed:
                n = comm.stats()["captured"] - self._captured_before
                logger.info("tpcomm CustomAllreduce: %d all-reduce(s) captured into CUDA graphs "
                            "(no buffer registration needed)", n)

    def register_graph_buffers(self) -> None:
        """Kept for engines that call it: nothing to register."""

    def finalize_p2p(self) -> None:
        """Kept for engines that call it (newer vLLM): tpcomm tests P2P itself at creation."""

    def close(self) -> None:
        """Frees the communicator. Idempotent. Not done at garbage collection: graphs captured
        with it must be gone first, which only the engine knows."""
        if self.comm_id is not None:
            unregister_communicator(self.comm_id)
            self.comm_id = None
        if self.comm is not None:
            self.comm.close()
        self.disabled = True
        if self.disabled_reason is None:
            self.disabled_reason = "closed"

    def __repr__(self) -> str:
        state = f"disabled ({self.disabled_reason})" if self.disabled else "enabled"
        return f"<tpcomm.torch.CustomAllreduce rank {self.rank}/{self.world_size} {state}>"


def _as_device(device: Union[int, str, "torch.device"]) -> "torch.device":
    device = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
    if device.type == "cuda" and device.index is None:  # "cuda" means the current GPU
        device = torch.device("cuda", torch.cuda.current_device())
    return device
