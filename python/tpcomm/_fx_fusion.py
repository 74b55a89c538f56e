"""The graph rewrite behind the engines' fusion passes: all-reduce, then add + RMSNorm, becomes one
torch.ops.tpcomm.fused_allreduce_rmsnorm call. It needs only torch.fx, so it is tested without an
engine; the engine plugins hand it the engine's own op targets (vllm_plugin.py).
"""
from typing import Any, Callable, Optional

import torch
import torch.fx as fx

from . import _torch_ops  # noqa: F401  registers torch.ops.tpcomm.*

FUSED = torch.ops.tpcomm.fused_allreduce_rmsnorm.default


def _val(node: Any) -> Optional["torch.Tensor"]:
    return node.meta.get("val") if isinstance(node, fx.Node) else None


def fusable(inp: Any, residual: Any, weight: Any) -> bool:
    """The fused op's contract, read from the fake tensors the graph carries: one dtype of
    float16/bfloat16/float32 for all three, weight [H] with H <= the kernel's limit."""
    x, r, w = _val(inp), _val(residual), _val(weight)
    if x is None or r is None or w is None:
        return False
    return (x.dtype in (torch.float16, torch.bfloat16, torch.float32) and r.dtype == x.dtype
            and w.dtype == x.dtype and x.dim() >= 1 and w.dim() == 1
            and isinstance(x.shape[-1], int) and x.shape[-1] == w.shape[0]
            and x.shape[-1] <= _torch_ops.MAX_HIDDEN)


def fuse_allreduce_add_rmsnorm(graph: fx.Graph, all_reduce: Any, add_rmsnorm: Any,
                               is_our_group: Callable[[fx.Node], bool], comm_id: int) -> int:
    """Rewrites every `y = all_reduce(x); out, res = add_rmsnorm(y, residual, weight, eps)` whose
    all-reduce feeds nothing else into `fused_allreduce_rmsnorm(x, residual, weight, eps, 0,
    None, comm_id)`, which returns (out, res) in the same order. Returns the number rewritten.

    add_rmsnorm's arguments are (x, residual, weight, eps[, variance_size]); a call with a
    variance_size, or tensors the fused op does not take, is left as it is."""
    fused = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target != add_rmsnorm:
            continue
        args = list(node.args) + [None] * (5 - len(node.args))
        reduced, residual, weight, eps, variance_size = args[:5]
        if "variance_size" in node.kwargs:
            variance_size = node.kwargs["variance_size"]
        if (not isinstance(reduced, fx.Node) or reduced.op != "call_function"
                or reduced.target != all_reduce or len(reduced.users) != 1
                or not is_our_group(reduced) or variance_size is not None
                or not isinstance(eps, float) or weight is None):
            continue
        inp = reduced.args[0]
        if not fusable(inp, residual, weight):
            continue
        with graph.inserting_before(node):
            new = graph.call_function(FUSED, (inp, residual, weight, eps, 0, None, comm_id))
        new.meta.update(node.meta)
        node.replace_all_uses_with(new)
        graph.erase_node(node)
        graph.erase_node(reduced)
        fused += 1
    return fused
