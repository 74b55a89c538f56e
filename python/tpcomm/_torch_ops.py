"""The fused layer epilogue (tpcommAllReduceAddRmsNorm) as torch.library ops, namespace `tpcomm`:

  torch.ops.tpcomm.fused_allreduce_rmsnorm(input, residual, weight, eps, weight_offset,
                                           quant_scale, comm_id) -> (out, residual_out)
      new tensors, the inputs untouched (SGLang's and FlashInfer's convention); `out` is
      RMSNorm(residual_out) in the input's dtype, or float8_e4m3fn when quant_scale is given;
  torch.ops.tpcomm.fused_allreduce_rmsnorm_(input, residual, weight, eps, weight_offset, comm_id)
      in place, as vLLM's fused_add_rms_norm: the norm into `input`, residual_out into `residual`;
  torch.ops.tpcomm.fused_allreduce_rmsnorm_quant_(quant_out, input, residual, weight,
                                                  quant_scale, eps, weight_offset, comm_id)
      FP8 e4m3 into `quant_out`, residual_out into `residual` (vLLM's
      fused_add_rms_norm_static_fp8_quant order); only the fused one-shot kernel takes this form,
      any other plan is tpcommUnsupported (use the first op, whose residual_out is separate).

and the two halves of the two-shot (tpcommReduceScatter / tpcommAllGather), new tensors along dim 0
as torch.distributed and vLLM have them:

  torch.ops.tpcomm.reduce_scatter(input, world_size, comm_id) -> [shape[0] / world_size, ...]
      rank r gets run r of input's dim 0, summed over the ranks (fp32, rank order);
  torch.ops.tpcomm.all_gather(input, world_size, comm_id) -> [world_size * shape[0], ...]
      every rank's input in rank order.
world_size is an argument so that the fake implementations know the output shape; the real ones
check it against the communicator's.

input, residual [..., H] (any leading dims: T = numel / H), weight [H], all one dtype (float16,
bfloat16, float32), contiguous, on one GPU; quant_scale one float32 on that GPU, read by the
kernel (CUDA-graph safe). `comm_id` names a communicator registered with register(): an op
argument must be a tensor or a number, and an int is one torch.compile keeps as a constant.
Each op checks its tensors in Python (fake implementation included, so torch.compile reports
a bad call while tracing), then enqueues the C call on torch's current stream: no host sync, no
allocation beyond the new outputs.
"""
import itertools
import math
from typing import Callable, Dict, Optional, Tuple

import torch

from . import _buffers
from .errors import TpcommInvalidArgumentError, TpcommInvalidUsageError

NAMESPACE = "tpcomm"
FP8 = torch.float8_e4m3fn
MAX_HIDDEN = 65536  # kMaxRmsNormHidden in the library

# comm_id -> runner(input, residual_in, residual_out, out, weight, eps, weight_offset, scale)
Runner = Callable[..., None]
_runners: Dict[int, Runner] = {}
# comm_id -> half_runner(reduce_scatter: bool, input, out, world_size): the halves' calls
HalfRunner = Callable[..., None]
_half_runners: Dict[int, HalfRunner] = {}
# Never 0 or 1: torch.compile specializes those ints, and under dynamic=True a comm_id should stay
# symbolic so that one compiled graph serves every communicator.
_ids = itertools.count(2)


def register(comm) -> int:
    """The comm_id under which the ops reach `comm` (a tpcomm.Communicator)."""
    return register_runner(_communicator_runner(comm), _communicator_half_runner(comm))


def register_runner(runner: Runner, half_runner: Optional[HalfRunner] = None) -> int:
    """Registers any runners (tests use ones that compute on the CPU); returns their comm_id."""
    comm_id = next(_ids)
    _runners[comm_id] = runner
    if half_runner is not None:
        _half_runners[comm_id] = half_runner
    return comm_id


def unregister(comm_id: int) -> None:
    _runners.pop(comm_id, None)
    _half_runners.pop(comm_id, None)


def _unregistered(op: str, comm_id: int) -> TpcommInvalidUsageError:
    return TpcommInvalidUsageError(
        f"tpcomm.{op}: no communicator is registered as comm_id {comm_id} (closed, or never "
        "passed to tpcomm.torch.register_communicator)", code=5)


def _runner(comm_id: int) -> Runner:
    runner = _runners.get(comm_id)
    if runner is None:
        raise _unregistered("fused_allreduce_rmsnorm", comm_id)
    return runner


def _half_runner(op: str, comm_id: int) -> HalfRunner:
    runner = _half_runners.get(comm_id)
    if runner is None:
        raise _unregistered(op, comm_id)
    return runner


def _communicator_runner(comm) -> Runner:
    def run(input, residual_in, residual_out, out, weight, eps, weight_offset, scale):
        device = input.get_device() if input.is_cuda else None
        if device != comm.device:
            where = f"GPU {device}" if device is not None else str(input.device)
            raise TpcommInvalidArgumentError(
                f"tpcomm.fused_allreduce_rmsnorm: the tensors are on {where}, but rank "
                f"{comm.rank}'s communicator is on GPU {comm.device}", code=4)
        if input.numel() == 0:
            return  # no rows: nothing to reduce (and an empty tensor may have no address)
        hidden = input.shape[-1]
        comm._add_rmsnorm_torch_stream(
            input.data_ptr(), residual_in.data_ptr(), residual_out.data_ptr(), out.data_ptr(),
            weight.data_ptr(), input.numel() // hidden, hidden,
            _buffers.torch_dtype_code(input.dtype), eps, weight_offset,
            scale.data_ptr() if scale is not None else 0)
    return run


def _communicator_half_runner(comm) -> HalfRunner:
    def run(rs, input, out, world_size):
        op = "reduce_scatter" if rs else "all_gather"
        device = input.get_device() if input.is_cuda else None
        if device != comm.device:
            where = f"GPU {device}" if device is not None else str(input.device)
            raise TpcommInvalidArgumentError(
                f"tpcomm.{op}: the input is on {where}, but rank {comm.rank}'s communicator is on "
                f"GPU {comm.device}", code=4)
        if world_size != comm.world_size:
            raise _bad(op, f"world_size is {world_size}, the communicator's is {comm.world_size}")
        count = out.numel() if rs else input.numel()
        if count == 0:
            return  # nothing moves (and an empty tensor may have no address)
        comm._half_torch_stream(rs, input.data_ptr(), out.data_ptr(), count,
                                _buffers.torch_dtype_code(input.dtype))
    return run


# ---- validation (shared by the real and the fake implementations) ----
def _bad(op, msg):
    return TpcommInvalidArgumentError(f"tpcomm.{op}: {msg}", code=4)


def _describe(t):
    return f"{t.dtype} {tuple(t.shape)} on {t.device}"


def check(op, input, residual, weight, eps, weight_offset, quant_scale=None, outs=()):
    """Raises TpcommInvalidArgumentError naming the op and the bad value, before anything runs.
    `outs`: (name, tensor, dtype) of caller-given outputs."""
    if _buffers.torch_dtype_code(input.dtype) is None:
        raise _bad(op, f"input is {input.dtype}; float16, bfloat16 or float32 are supported")
    if input.dim() < 1:
        raise _bad(op, "input is a scalar; it must be [tokens, hidden]")
    hidden = input.shape[-1]
    if not 1 <= hidden <= MAX_HIDDEN:
        raise _bad(op, f"hidden (input's last dim) is {hidden}; it must be 1..{MAX_HIDDEN}")
    if residual.shape != input.shape or residual.dtype != input.dtype:
        raise _bad(op, f"residual is {_describe(residual)}, input {_describe(input)}; they must "
                       "match")
    if weight.shape != (hidden,) or weight.dtype != input.dtype:
        raise _bad(op, f"weight is {_describe(weight)}; it must be {input.dtype} ({hidden},)")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps > 0):
        raise _bad(op, f"eps is {eps!r}; it must be finite and > 0")
    if weight_offset not in (0, 1):
        raise _bad(op, f"weight_offset is {weight_offset!r} (0: weight, 1: 1 + weight, Gemma)")
    named = [("input", input), ("residual", residual), ("weight", weight)]
    if quant_scale is not None:
        if quant_scale.dtype != torch.float32 or quant_scale.numel() != 1:
            raise _bad(op, f"quant_scale is {_describe(quant_scale)}; it must be one float32")
        named.append(("quant_scale", quant_scale))
    for name, t, dtype in outs:
        if t.shape != input.shape or t.dtype != dtype:
            raise _bad(op, f"{name} is {_describe(t)}; it must be {dtype} {tuple(input.shape)}")
        named.append((name, t))
    for name, t in named:
        if t.device != input.device:
            raise _bad(op, f"{name} is on {t.device}, input on {input.device}")
        if not t.is_contiguous():
            raise _bad(op, f"{name} ({tuple(t.shape)}, strides {t.stride()}) is not contiguous")


# ---- the ops ----
@torch.library.custom_op(f"{NAMESPACE}::fused_allreduce_rmsnorm", mutates_args=())
def fused_allreduce_rmsnorm(input: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                            eps: float, weight_offset: int, quant_scale: Optional[torch.Tensor],
                            comm_id: int) -> Tuple[torch.Tensor, torch.Tensor]:
    return functional(input, residual, weight, eps, weight_offset, quant_scale, comm_id)


def functional(input, residual, weight, eps, weight_offset, quant_scale, comm_id):
    """The body of fused_allreduce_rmsnorm, callable without the dispatcher's cost (eager
    callers; torch.compile must see the op)."""
    check("fused_allreduce_rmsnorm", input, residual, weight, eps, weight_offset, quant_scale)
    runner = _runner(comm_id)
    out = torch.empty_like(input, dtype=FP8 if quant_scale is not None else input.dtype)
    residual_out = torch.empty_like(residual)
    runner(input, residual, residual_out, out, weight, eps, weight_offset, quant_scale)
    return out, residual_out


@fused_allreduce_rmsnorm.register_fake
def _(input, residual, weight, eps, weight_offset, quant_scale, comm_id):
    check("fused_allreduce_rmsnorm", input, residual, weight, eps, weight_offset, quant_scale)
    out = torch.empty_like(input, dtype=FP8 if quant_scale is not None else input.dtype)
    return out, torch.empty_like(residual)


@torch.library.custom_op(f"{NAMESPACE}::fused_allreduce_rmsnorm_",
                         mutates_args=("input", "residual"))
def fused_allreduce_rmsnorm_(input: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                             eps: float, weight_offset: int, comm_id: int) -> None:
    check("fused_allreduce_rmsnorm_", input, residual, weight, eps, weight_offset)
    _runner(comm_id)(input, residual, residual, input, weight, eps, weight_offset, None)


@fused_allreduce_rmsnorm_.register_fake
def _(input, residual, weight, eps, weight_offset, comm_id):
    check("fused_allreduce_rmsnorm_", input, residual, weight, eps, weight_offset)


@torch.library.custom_op(f"{NAMESPACE}::fused_allreduce_rmsnorm_quant_",
                         mutates_args=("quant_out", "residual"))
def fused_allreduce_rmsnorm_quant_(quant_out: torch.Tensor, input: torch.Tensor,
                                   residual: torch.Tensor, weight: torch.Tensor,
                                   quant_scale: torch.Tensor, eps: float, weight_offset: int,
                                   comm_id: int) -> None:
    check("fused_allreduce_rmsnorm_quant_", input, residual, weight, eps, weight_offset,
          quant_scale, outs=(("quant_out", quant_out, FP8),))
    _runner(comm_id)(input, residual, residual, quant_out, weight, eps, weight_offset,
                     quant_scale)


@fused_allreduce_rmsnorm_quant_.register_fake
def _(quant_out, input, residual, weight, quant_scale, eps, weight_offset, comm_id):
    check("fused_allreduce_rmsnorm_quant_", input, residual, weight, eps, weight_offset,
          quant_scale, outs=(("quant_out", quant_out, FP8),))


# ---- reduce-scatter and all-gather ----
def half_shape(op, input, world_size):
    """Checks a reduce-scatter's or all-gather's input (raising TpcommInvalidArgumentError naming
    the op) and gives its output shape along dim 0."""
    if _buffers.torch_dtype_code(input.dtype) is None:
        raise _bad(op, f"input is {input.dtype}; float16, bfloat16 or float32 are supported")
    if input.dim() < 1:
        raise _bad(op, "input is a scalar; it must have a first dim to split or gather along")
    if isinstance(world_size, int) and world_size < 1:  # a SymInt while tracing: unchecked
        raise _bad(op, f"world_size is {world_size!r}; it must be >= 1")
    if not input.is_contiguous():
        raise _bad(op, f"input ({tuple(input.shape)}, strides {input.stride()}) is not "
                       "contiguous")
    first = input.shape[0]
    if op == "reduce_scatter":
        if first % world_size:
            raise _bad(op, f"input's first dim {first} is not a multiple of world_size "
                           f"{world_size}")
        return (first // world_size,) + tuple(input.shape[1:])
    return (first * world_size,) + tuple(input.shape[1:])


def half_functional(op, input, world_size, comm_id):
    """The body of reduce_scatter (op "reduce_scatter") and all_gather, callable without the
    dispatcher's cost (eager callers; torch.compile must see the op)."""
    out = input.new_empty(half_shape(op, input, world_size))
    _half_runner(op, comm_id)(op == "reduce_scatter", input, out, world_size)
    return out


@torch.library.custom_op(f"{NAMESPACE}::reduce_scatter", mutates_args=())
def reduce_scatter(input: torch.Tensor, world_size: int, comm_id: int) -> torch.Tensor:
    return half_functional("reduce_scatter", input, world_size, comm_id)


@reduce_scatter.register_fake
def _(input, world_size, comm_id):
    return input.new_empty(half_shape("reduce_scatter", input, world_size))


@torch.library.custom_op(f"{NAMESPACE}::all_gather", mutates_args=())
def all_gather(input: torch.Tensor, world_size: int, comm_id: int) -> torch.Tensor:
    return half_functional("all_gather", input, world_size, comm_id)


@all_gather.register_fake
def _(input, world_size, comm_id):
    return input.new_empty(half_shape("all_gather", input, world_size))
