"""Shared by the test_gpu_*.py files: skip rules, the scenario runner, exact inputs, references.

Each GPU test module lists scenarios (functions run on every rank of a 2-process launch, one
GPU each, with an NCCL default group and a gloo group). One launch per module runs them all;
each scenario is then reported as its own pytest item. Inputs are small integers, so sums are
exact in float16/bfloat16/float32 and must equal NCCL's bit for bit.
"""
import os
import traceback

import pytest

WORLD = 2
LAUNCH_TIMEOUT = int(os.environ.get("TPCOMM_TEST_TIMEOUT", "600"))


def require_gpus(n=WORLD):
    """Module-level skip unless torch and n GPUs are there. Returns the torch module."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.device_count() < n:
        pytest.skip(f"needs {n} CUDA GPUs", allow_module_level=True)
    return torch


def run_scenarios(rank, world, gloo, module_name, names):
    """Worker body: runs each scenario, records None or its traceback, and re-aligns the ranks
    after each one (a failure that left a collective pending shows up as the launch timeout)."""
    import importlib

    import torch
    import torch.distributed as dist

    module = importlib.import_module(module_name)
    results = {}
    for name in names:
        try:
            getattr(module, "scenario_" + name)(rank, world, gloo)
            results[name] = None
        except Exception:
            results[name] = traceback.format_exc()
        print(f"rank {rank}: {name} {'ok' if results[name] is None else 'FAILED'}", flush=True)
        torch.cuda.synchronize()
        dist.barrier(group=gloo)
    return results


def check(outcome, name):
    errors = [f"--- rank {r} ---\n{res[name]}" for r, res in enumerate(outcome) if res.get(name)]
    assert not errors, "\n".join(errors)


def launch_module(module_name, names):
    from tpcomm import testing

    return testing.launch(run_scenarios, WORLD, args=(module_name, names),
                          timeout=LAUNCH_TIMEOUT)


# ---- data and references (run inside workers) ----
def ints(n, rank, dtype, seed=0):
    """Integers in [-8, 8], different per rank and seed: any sum over <= 8 ranks is exact."""
    import torch

    i = torch.arange(n, device="cuda", dtype=torch.int64)
    return ((i * 7 + rank * 3 + seed * 5) % 17 - 8).to(dtype)


def nccl_sum(x):
    import torch.distributed as dist

    ref = x.clone()
    dist.all_reduce(ref)
    return ref


def assert_same_on_all_ranks(t):
    """Bit-identical across ranks (TP ranks must never drift apart)."""
    import torch
    import torch.distributed as dist

    raw = t.contiguous().view(torch.uint8).flatten()
    gathered = torch.empty(dist.get_world_size() * raw.numel(), dtype=torch.uint8,
                           device=raw.device)
    dist.all_gather_into_tensor(gathered, raw)
    parts = gathered.view(dist.get_world_size(), -1)
    for r in range(1, parts.shape[0]):
        assert torch.equal(parts[0], parts[r]), f"rank {r}'s result differs from rank 0's"


def assert_equal(got, want, what):
    import torch

    if got.shape != want.shape or got.dtype != want.dtype:
        raise AssertionError(f"{what}: got {got.dtype}{tuple(got.shape)}, want "
                             f"{want.dtype}{tuple(want.shape)}")
    if not torch.equal(got, want):
        diff = (got != want).flatten().nonzero().flatten()
        i = diff[0].item()
        raise AssertionError(f"{what}: {diff.numel()} of {got.numel()} elements differ (first at "
                             f"{i}: got {got.flatten()[i].item()}, want {want.flatten()[i].item()})")


def sizes(esize):
    """Element counts from 1 element to 8 MiB: odd counts, exact powers, slot-size edges."""
    kib, mib = 1024, 1024 * 1024
    return [1, 7, kib // esize, kib // esize + 3, 64 * kib // esize, 256 * kib // esize + 1,
            mib // esize, 4 * mib // esize - 5, 8 * mib // esize]
