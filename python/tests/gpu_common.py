"""Shared by the test_gpu_*.py files: skip rules, the scenario runner, exact inputs, references.

Each 2-GPU test module lists scenarios (functions run on every rank of a 2-process launch, one
GPU each, with an NCCL default group and a gloo group). One launch per module runs them all;
each scenario is then reported as its own pytest item. The one-GPU tests run a worker in one
process that drives two ranks sharing GPU 0 (SharedGpu). Inputs are small integers, so sums are
exact in float16/bfloat16/float32 and must equal NCCL's bit for bit.
"""
import contextlib
import os
import time
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


def launch_one_process(worker):
    """Runs worker(0, 1, None) in one spawned process (the two-ranks-on-one-GPU tests), prints
    the report lines it returns."""
    from tpcomm import testing

    report = testing.launch(worker, 1, distributed=False, timeout=LAUNCH_TIMEOUT)[0]
    print("\n".join(report))


# ---- two ranks sharing GPU 0, driven by one thread (run inside a worker) ----
class SharedGpu:
    """Two tpcomm ranks on GPU 0 in this process (init_all([0, 0])), a stream each, their comm_ids
    for the torch ops, and a report of each phase's seconds.

    One thread launches both ranks' calls, so rank 0's kernel waits on the GPU for a launch this
    thread has yet to make. Whatever blocks the thread in between stalls that kernel until
    tpcomm's timeout, after which it gives up without writing its outputs. The first launch of a
    kernel in the process is such a block: CUDA's lazy module loading (the default since CUDA
    12.2) may wait for the GPU to go idle before loading it. both(call, warm=True) therefore runs
    the call once with the tpcomm ops as no-ops, which loads every other kernel it launches (and
    compiles it, under torch.compile), before the run that is checked."""

    def __init__(self, timeout_ms=60000, max_blocks=8):
        import tpcomm
        import tpcomm.torch as tt

        torch = _torch()
        torch.cuda.set_device(0)
        # Few blocks per kernel: both ranks' kernels must be resident on the one GPU at once.
        self.comms = tpcomm.Communicator.init_all([0, 0], max_blocks=max_blocks,
                                                  timeout_ms=timeout_ms)
        self.ids = [tt.register_communicator(c) for c in self.comms]
        self.streams = [torch.cuda.Stream(0), torch.cuda.Stream(0)]
        self.report = []
        self._t0 = time.monotonic()

    def phase(self, name):
        """Appends `name: seconds since the last phase` to the report."""
        _torch().cuda.synchronize()
        self.report.append(f"{name}: {time.monotonic() - self._t0:.2f} s")
        self._t0 = time.monotonic()

    def both(self, call, warm=False):
        """[call(0), call(1)], each on its rank's stream inside one tpcomm.group(), after the
        inputs made on the default stream are complete (the side streams do not wait for it);
        warm: after a run with the tpcomm ops as no-ops (the class's docstring says why).
        Raises if a rank's kernel reported an error (a timeout: a peer that never came)."""
        if warm:
            with self.no_op_tpcomm():
                self._run(call)
        out = self._run(call)
        self.check_no_async_error()
        return out

    def _run(self, call):
        import tpcomm

        torch = _torch()
        torch.cuda.synchronize()
        out = [None, None]
        with tpcomm.group():
            for r in range(2):
                with torch.cuda.stream(self.streams[r]):
                    out[r] = call(r)
        torch.cuda.synchronize()
        return out

    @contextlib.contextmanager
    def no_op_tpcomm(self):
        """The tpcomm torch ops of both comm_ids launch nothing (their outputs stay unwritten)."""
        from tpcomm import _torch_ops

        tables = (_torch_ops._runners, _torch_ops._half_runners)
        saved = [{cid: t[cid] for cid in self.ids if cid in t} for t in tables]
        for t, old in zip(tables, saved):
            t.update({cid: (lambda *args: None) for cid in old})
        try:
            yield
        finally:
            for t, old in zip(tables, saved):
                t.update(old)

    def check_no_async_error(self):
        errors = [f"rank {r}: {e}" for r, e in enumerate(c.async_error() for c in self.comms)
                  if e is not None]
        assert not errors, "a kernel failed after its call returned: " + "; ".join(errors)

    def close(self):
        import tpcomm.torch as tt

        self.check_no_async_error()
        for c, cid in zip(self.comms, self.ids):
            tt.unregister_communicator(cid)
            c.close()


def _torch():
    import torch

    return torch


# ---- the fused op's data and check (run inside workers) ----
# assert_close tolerances of the norm per dtype: its rounding; residual_out is exact.
FUSED_TOL = {"torch.bfloat16": dict(rtol=1.6e-2, atol=1e-2),
             "torch.float16": dict(rtol=2e-3, atol=2e-3),
             "torch.float32": dict(rtol=5e-5, atol=1e-5)}
FP8_TOL = dict(rtol=0.13, atol=2 ** -9)  # one e4m3 step (3 mantissa bits), subnormals


def fused_inputs(t, h, dtype, seed=0):
    """Both ranks' partials [t, h], the residual they share, the weight [h] and the fp32 sums."""
    torch = _torch()
    xs = [ints(t * h, r, dtype, seed).view(t, h) for r in range(2)]
    res = ints(t * h, 5, dtype, seed + 1).view(t, h)
    w = (torch.rand(h, device="cuda", generator=torch.Generator("cuda").manual_seed(seed))
         + 0.5).to(dtype)
    return xs, res, w, xs[0].float() + xs[1].float()


def check_fused(outs, sums, res, w, what, offset=0, scale=None):
    """Each rank's (out, residual_out) against testing.add_rmsnorm_reference, bit-identical
    across the ranks."""
    import torch

    from tpcomm import testing

    want_out, want_res = testing.add_rmsnorm_reference(sums, res, w, 1e-6, offset, scale)
    for r, (out, r_out) in enumerate(outs):
        assert_equal(r_out, want_res, f"residual_out, rank {r}, {what}")
        if scale is None:
            torch.testing.assert_close(out, want_out, **FUSED_TOL[str(res.dtype)], msg=what)
        else:
            torch.testing.assert_close(out.float(), want_out.float(), **FP8_TOL, msg=what)
    for a, b in zip(outs[0], outs[1]):
        assert torch.equal(a.view(torch.uint8), b.view(torch.uint8)), f"ranks differ: {what}"


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
