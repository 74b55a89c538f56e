#!/usr/bin/env python3
"""Where an eager all-reduce call spends its host time, per backend and per piece of the path.

Run on a machine with 2 GPUs and torch (2 processes, torch.distributed):
  python3 bench/eager_cost.py --out DIR [--bytes 8K] [--calls 4000]

Eager calls are bound by the host: a call costs the time its process needs to enqueue it, not
the GPU's time, once that host cost exceeds the kernel's. This measures, on each rank:
  * host us per call of a back-to-back loop (perf_counter around the loop, GPU kept busy) and
    the GPU-timed us per call of the same loop, for tpcomm's entry points (all_reduce in place and
    out of place, all_reduce_raw, CustomAllreduce.custom_all_reduce, the bare ctypes call), torch
    symmetric-memory one-shot, NCCL through torch.distributed, and a one-kernel torch op;
  * the pure-Python pieces of tpcomm.all_reduce (timeit, no launch);
  * a cProfile of CustomAllreduce.custom_all_reduce (the call engines make).
The GPU column also holds the ranks' start skew (spread over the loop) and, for collectives, the
slower rank's pace; the host column is the cost this process pays.
Writes DIR/eager_cost.json and DIR/eager_cost.md and prints the table.
"""
import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import (import_tpcomm, parse_size, symm_mem_world,  # noqa: E402
                          torch_with_gpus)


def loop_cost(fn, calls, sync):
    """(host us, GPU us) per call of `calls` back-to-back fn() after a warm-up and a barrier."""
    import torch

    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    sync()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    end.record()
    end.synchronize()
    return (t1 - t0) * 1e6 / calls, start.elapsed_time(end) * 1000.0 / calls


def entry_points(rank, x, y, n, car, sync):
    """label -> one eager call of each path measured; symmetric memory only where it works."""
    import torch
    import torch.distributed as dist

    from tpcomm import _abi, _loader

    comm = car.comm
    lib = _loader.lib()
    handle = comm._handle
    stream = torch.cuda.current_stream().cuda_stream
    entries = {
        "torch x.zero_() (one torch kernel)": lambda: x.zero_(),
        "tpcomm Communicator.all_reduce(x)": lambda: comm.all_reduce(x),
        "tpcomm Communicator.all_reduce(x, out=y)": lambda: comm.all_reduce(x, out=y),
        "tpcomm CustomAllreduce.custom_all_reduce(x)": lambda: car.custom_all_reduce(x),
        "tpcomm all_reduce_raw(ptrs, stream)": lambda: comm.all_reduce_raw(
            x.data_ptr(), x.data_ptr(), n, _abi.BFLOAT16, stream),
        "tpcomm bare ctypes tpcommAllReduce": lambda: lib.tpcommAllReduce(
            x.data_ptr(), x.data_ptr(), n, _abi.BFLOAT16, _abi.SUM, handle, stream),
        "NCCL torch.distributed.all_reduce": lambda: dist.all_reduce(x),
    }
    try:
        symm_mem, name = symm_mem_world()
        buf = symm_mem.empty(n, dtype=x.dtype, device=f"cuda:{rank}")
        symm_mem.rendezvous(buf, name)
        buf.zero_()
        out = torch.empty_like(buf)
        torch.cuda.synchronize()
        sync()
        entries["torch symm-mem one_shot_all_reduce_out"] = (
            lambda: torch.ops.symm_mem.one_shot_all_reduce_out(buf, "sum", name, out))
    except Exception as e:  # still report the rest
        print(f"rank {rank}: symmetric memory unavailable: {e}", flush=True)
    return entries


def python_pieces(x, comm):
    """us per call of the pure-Python pieces of Communicator.all_reduce (nothing is launched)."""
    import ctypes

    import torch

    from tpcomm import _buffers, _loader

    lib = _loader.lib()
    handle = comm._handle
    buf_desc, _ = _buffers.describe(x)
    pieces = {
        "_buffers.describe(x)": lambda: _buffers.describe(x),
        "comm._torch_stream()": lambda: comm._torch_stream(),
        "comm._check_device(desc)": lambda: comm._check_device(buf_desc),
        "x.data_ptr()": lambda: x.data_ptr(),
        "x.numel()": lambda: x.numel(),
        "x.dtype": lambda: x.dtype,
        "x.device": lambda: x.device,
        "x.is_contiguous()": lambda: x.is_contiguous(),
        "ctypes call, 1 argument (tpcommCommCount)": (
            lambda c=ctypes.c_int(): lib.tpcommCommCount(handle, ctypes.byref(c))),
        "torch.cuda.current_stream().cuda_stream": lambda: torch.cuda.current_stream().cuda_stream,
    }
    piece_us = {}
    for label, fn in pieces.items():
        reps = 20000
        piece_us[label] = min(timeit.repeat(fn, number=reps, repeat=5)) * 1e6 / reps
    return piece_us


def profile_custom_all_reduce(car, x):
    """cProfile's top entries (by own time) over 2000 CustomAllreduce.custom_all_reduce(x)."""
    p = cProfile.Profile()
    p.enable()
    for _ in range(2000):
        car.custom_all_reduce(x)
    p.disable()
    s = io.StringIO()
    pstats.Stats(p, stream=s).sort_stats("tottime").print_stats(14)
    return s.getvalue()


def worker(rank, world, gloo, args):
    import torch
    import torch.distributed as dist

    from tpcomm.torch import CustomAllreduce

    dtype = torch.bfloat16
    n = args.bytes // 2
    x = torch.zeros(n, dtype=dtype, device="cuda")
    y = torch.empty_like(x)
    sync = lambda: dist.barrier(group=gloo)  # noqa: E731
    car = CustomAllreduce(gloo, torch.device("cuda", rank), max_size=args.bytes)
    entries = entry_points(rank, x, y, n, car, sync)

    loops = {}
    for label, fn in entries.items():
        host, gpu = loop_cost(fn, args.calls, sync)
        loops[label] = {"host_us": host, "gpu_us": gpu}
        if rank == 0:
            print(f"  {label:48s} host {host:6.2f} us/call, GPU {gpu:6.2f} us/call", flush=True)
    torch.cuda.synchronize()
    sync()
    piece_us = python_pieces(x, car.comm)

    # Both ranks profile (the calls are collective); rank 0's profile is reported.
    torch.cuda.synchronize()
    sync()
    prof = profile_custom_all_reduce(car, x)
    torch.cuda.synchronize()
    sync()
    car.close()
    return {"loops": loops, "pieces": piece_us, "profile": prof,
            "gpu": torch.cuda.get_device_name(rank), "torch": torch.__version__}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="output folder (created)")
    p.add_argument("--bytes", default="8K", help="message size (default 8K, bf16)")
    p.add_argument("--calls", type=int, default=4000, help="calls per timed loop")
    args = p.parse_args(argv)
    args.bytes = parse_size(args.bytes)
    tpcomm = import_tpcomm()
    tpcomm.testing.set_env_defaults()
    if torch_with_gpus("eager_cost.py", 2) is None:
        return 2
    os.makedirs(args.out, exist_ok=True)
    print(f"eager_cost: {args.bytes} bytes bf16, {args.calls} calls per loop, 2 processes",
          flush=True)
    ranks = tpcomm.testing.launch(worker, 2, args=(args,), timeout=600)
    lines = [f"eager host cost, {args.bytes} bytes bf16, {args.calls} back-to-back calls "
             f"({ranks[0]['gpu']}, torch {ranks[0]['torch']})", "",
             "| entry point | host us/call (rank 0 / 1) | GPU us/call (rank 0 / 1) |",
             "|---|---|---|"]
    for label in ranks[0]["loops"]:
        a, b = ranks[0]["loops"][label], ranks[1]["loops"].get(label, {})
        lines.append(f"| {label} | {a['host_us']:.2f} / {b.get('host_us', float('nan')):.2f} | "
                     f"{a['gpu_us']:.2f} / {b.get('gpu_us', float('nan')):.2f} |")
    lines += ["", "| Python piece (no launch) | us (rank 0) |", "|---|---|"]
    lines += [f"| {k} | {v:.3f} |" for k, v in ranks[0]["pieces"].items()]
    text = "\n".join(lines)
    with open(os.path.join(args.out, "eager_cost.md"), "w") as f:
        f.write(text + "\n\n```\n" + ranks[0]["profile"] + "```\n")
    with open(os.path.join(args.out, "eager_cost.json"), "w") as f:
        json.dump({"bytes": args.bytes, "calls": args.calls, "ranks": ranks}, f, indent=1)
    print(text)
    print(ranks[0]["profile"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
