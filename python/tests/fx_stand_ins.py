"""Stand-ins for an engine's TP all-reduce and add + RMSNorm ops, laid out as vLLM's compiled graph
holds them (torch.ops.vllm.all_reduce(x, group_name); torch.ops.vllm_ir.fused_add_rms_norm(x,
residual, weight, eps[, variance_size]) -> (out, residual_out), inputs untouched), the layer tail
tpcomm._fx_fusion rewrites, and a CPU runner for the fused op. Shared by the CPU rewrite tests
(test_engines.py) and the GPU one (test_gpu_plugin_fusion.py), so both rewrite the same graph.

The stand-ins' bodies model WORLD ranks that hold the same partial (the sum is WORLD * x), so the
unfused graph, run as it is, is the reference the rewritten one must equal. Needs torch >= 2.4."""
from typing import Optional, Tuple

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from tpcomm import _fx_fusion, testing

WORLD = 2
EPS = 1e-6


@torch.library.custom_op("tpcomm_stand_in::all_reduce", mutates_args=())
def all_reduce(x: torch.Tensor, group_name: str) -> torch.Tensor:
    return x * WORLD


@all_reduce.register_fake
def _(x, group_name):
    return torch.empty_like(x)


@torch.library.custom_op("tpcomm_stand_in::add_rmsnorm", mutates_args=())
def add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
                variance_size: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    return testing.add_rmsnorm_reference(x, residual, weight, eps)


@add_rmsnorm.register_fake
def _(x, residual, weight, eps, variance_size=None):
    return torch.empty_like(x), torch.empty_like(residual)


AR = torch.ops.tpcomm_stand_in.all_reduce.default
NORM = torch.ops.tpcomm_stand_in.add_rmsnorm.default


def layer(x, residual, weight):
    """A layer's tail: the all-reduce, add + RMSNorm, and a consumer of the norm (the next
    layer's GEMM in a model), which runs after the fused op in the rewritten graph."""
    out, res = NORM(AR(x, "tp:0"), residual, weight, EPS)
    return out * 1, res


def rewrite(fn, args, comm_id, group="tp:0"):
    """fn traced (fake tensors, as the engine's pass sees it) and rewritten for `comm_id`, whose
    all-reduces in `group` are fused: (graph module, number of rewrites)."""
    gm = make_fx(fn, tracing_mode="fake")(*args)
    n = _fx_fusion.fuse_allreduce_add_rmsnorm(gm.graph, AR, NORM,
                                              lambda node: node.args[1] == group, comm_id)
    gm.recompile()
    return gm, n


def targets(gm):
    return [node.target for node in gm.graph.nodes if node.op == "call_function"]


def run_on_cpu(input, residual_in, residual_out, out, weight, eps, weight_offset, scale):
    """The fused op's runner (tpcomm._torch_ops.register_runner) for WORLD ranks that hold the
    same partial: what the library computes on the GPU, in fp32 on the CPU."""
    o, r = testing.add_rmsnorm_reference(input.float() * WORLD, residual_in, weight, eps,
                                         weight_offset, scale)
    residual_out.copy_(r)
    out.copy_(o)
