"""Helpers shared by the GPU tests (python/tests) and the benchmarks (bench/*.py): a multi-process
launcher with a deadline, and CUDA-event timing of eager calls and graph replays. Needs torch.

launch(fn, nprocs, args): one spawned process per GPU; rank r uses cuda:r and gets an NCCL
default group plus a gloo group: fn(rank, world, gloo_group, *args). Returns the ranks' return
values. A rank that raises fails the launch with its traceback; a launch past its deadline is
killed (its own processes only) and raises TimeoutError, so a hung collective cannot hang CI.
"""
import datetime
import os
import pickle
import statistics
import tempfile
import time

# NVLink multicast (NVLS) must stay off on the shared machines; set before torch is imported.
MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def set_env_defaults():
    for key, value in MULTICAST_OFF.items():
        os.environ.setdefault(key, value)


def _child(rank, fn, world, init_file, args, result_dir, distributed):
    set_env_defaults()
    import torch
    import torch.distributed as dist

    gloo = None
    if distributed:
        torch.cuda.set_device(rank)
        dist.init_process_group(
            "nccl", init_method=f"file://{init_file}", rank=rank, world_size=world,
            timeout=datetime.timedelta(seconds=120), device_id=torch.device("cuda", rank))
        gloo = dist.new_group(backend="gloo")
    try:
        result = fn(rank, world, gloo, *args)
        with open(os.path.join(result_dir, f"rank{rank}.pkl"), "wb") as f:
            pickle.dump(result, f)
    finally:
        if distributed:
            torch.cuda.synchronize()
            dist.destroy_process_group()


def launch(fn, nprocs, args=(), timeout=600, distributed=True):
    """Runs fn in `nprocs` spawned processes; returns [result of rank 0, rank 1, ...]."""
    set_env_defaults()
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="tpcomm-launch-") as tmp:
        init_file = os.path.join(tmp, "init")
        ctx = mp.start_processes(
            _child, args=(fn, nprocs, init_file, tuple(args), tmp, distributed), nprocs=nprocs,
            join=False, start_method="spawn")
        deadline = time.monotonic() + timeout
        while not ctx.join(timeout=1.0):  # raises if a rank failed (and stops the others)
            if time.monotonic() > deadline:
                for p in ctx.processes:
                    if p.is_alive():
                        p.kill()
                raise TimeoutError(f"{fn.__name__}: {nprocs} processes did not finish within "
                                   f"{timeout} s (a collective probably hung); killed them")
        results = []
        for rank in range(nprocs):
            with open(os.path.join(tmp, f"rank{rank}.pkl"), "rb") as f:
                results.append(pickle.load(f))
        return results


def time_eager(fn, iters, reps, warmup=3, sync=None):
    """Median over `reps` of the mean time (us) of `iters` back-to-back fn() calls on the current
    stream. `sync()` (e.g. a barrier) runs before each repetition so ranks start together."""
    import torch

    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(reps):
        torch.cuda.synchronize()
        if sync:
            sync()
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0 / iters)
    return statistics.median(samples)


def capture(fn, iters, warmup=3):
    """A CUDA graph of `iters` back-to-back fn() calls (warm-up runs on a side stream first, as
    torch.cuda.graph requires for NCCL and cuBLAS)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(iters):
            fn()
    torch.cuda.synchronize()
    return graph


def time_graphs(graphs, iters, reps, replays=1, sync=None):
    """Median over `reps` of the time (us) per captured call of each graph (holding `iters`
    calls, replayed `replays` times back to back per repetition), the graphs interleaved:
    repetition r times every graph once, in an order rotated by r, so that a slow drift of the
    machine (clocks, temperature) over the run spreads over all of them instead of biasing
    whichever ran last. {name: median us}; every rank must pass the same names in the same
    order."""
    import torch

    names = list(graphs)
    for name in names:
        graphs[name].replay()  # first replay uploads the graph
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = {name: [] for name in names}
    for r in range(reps):
        for i in range(len(names)):
            name = names[(i + r) % len(names)]
            torch.cuda.synchronize()
            if sync:
                sync()
            start.record()
            for _ in range(replays):
                graphs[name].replay()
            end.record()
            end.synchronize()
            samples[name].append(start.elapsed_time(end) * 1000.0 / (iters * replays))
    return {name: statistics.median(v) for name, v in samples.items()}


def time_graph(graph, iters, reps, replays=1, sync=None):
    """Median over `reps` of the time (us) per captured call: each repetition replays `graph`
    (holding `iters` calls) `replays` times back to back (time_graphs with one graph)."""
    return time_graphs({"graph": graph}, iters, reps, replays, sync)["graph"]


def add_rmsnorm_reference(sums, residual, weight, eps, weight_offset=0, quant_scale=None):
    """tpcommAllReduceAddRmsNorm's epilogue in fp32 math from `sums`, the sum over ranks of the
    inputs (fp32, or already rounded to the dtype as the unfused path does): (out, residual_out).
    out is the activation dtype, or float8_e4m3fn (saturated) when quant_scale is given."""
    import torch

    dtype = residual.dtype
    residual_out = (sums.float() + residual.float()).to(dtype)
    r = residual_out.float()
    norm = r * torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + eps) * (weight.float() + weight_offset)
    if quant_scale is None:
        return norm.to(dtype), residual_out
    fp8_max = torch.finfo(torch.float8_e4m3fn).max
    return (norm / quant_scale.float()).clamp(-fp8_max, fp8_max).to(torch.float8_e4m3fn), \
        residual_out
