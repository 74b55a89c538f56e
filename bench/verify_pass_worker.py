"""verify_pass.py's worker (GPU side, one per rank): captures every backend's forward as a CUDA
graph per verify width, times them interleaved and, with --profile, traces the all-reduce
kernels."""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # siblings, however loaded
from verify_pass_model import Stack, bytes_per_rank, make_reduce  # noqa: E402


# Substrings of each backend's all-reduce kernel names (CUPTI's demangled names).
AR_KERNELS = {"tpcomm": ("tpcomm::",), "tpcomm_fused": ("tpcomm::",),
              "nccl": ("ncclDevKernel", "ncclKernel"),
              "symm": ("one_shot_all_reduce",)}


def kernel_times(graph, backend, replays, sync):
    """Replays `graph` under torch.profiler (CUDA activities only) and returns, over the
    backend's all-reduce kernels, the median and 90th percentile of their durations and the
    median gap from the previous kernel's end to their start, in us. The kernel's duration on a
    rank includes its wait for the slower peer, so a rank that runs ahead shows long kernels and
    the one behind short ones: both ranks' numbers together tell skew from cost."""
    import tempfile

    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            graph.replay()
        torch.cuda.synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = [e for e in json.load(f).get("traceEvents", []) if e.get("cat") == "kernel"]
    finally:
        os.unlink(path)
    events.sort(key=lambda e: e["ts"])
    durs, gaps, prev_end = [], [], None
    for e in events:
        if any(k in e.get("name", "") for k in AR_KERNELS[backend]):
            durs.append(float(e["dur"]))
            if prev_end is not None:
                gaps.append(float(e["ts"]) - prev_end)
        prev_end = float(e["ts"]) + float(e["dur"])
    if not durs:
        return {"kernels": 0, "kernel_names": sorted({e.get("name", "")[:60] for e in events})[:8]}
    durs.sort()
    return {"kernels": len(durs), "kernel_us": statistics.median(durs),
            "kernel_p90_us": durs[min(len(durs) - 1, int(0.9 * len(durs)))],
            "gap_before_us": statistics.median(gaps) if gaps else None}


def capture_forwards(stack, reducers, x, k, args, sync):
    """Every backend's forward at width k captured as a CUDA graph: (rows, graphs, outs), with
    a failed capture's error in its row."""
    import torch

    from tpcomm import testing

    rows, graphs, outs = {}, {}, {}
    for name in args.backends:
        rows[name] = {"backend": name, "k": k}
        try:
            reduce = reducers[name](k)
            outs[name] = {}

            def fwd(reduce=reduce, x=x, out=outs[name]):
                out["x"] = stack.forward(x, reduce)
            torch.cuda.synchronize()
            sync()
            graphs[name] = testing.capture(fwd, iters=1, warmup=2)
        except Exception as e:
            rows[name]["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            torch.cuda.synchronize()
    return rows, graphs, outs


def captured_everywhere(graphs, rows, args, world, gloo):
    """The graphs every rank captured (ranks must time the same graphs in the same order)."""
    import torch.distributed as dist

    everyone = [None] * world
    dist.all_gather_object(everyone, sorted(graphs), group=gloo)
    ok = {n: graphs[n] for n in args.backends if all(n in names for names in everyone)}
    for n in graphs:
        if n not in ok:
            rows[n]["error"] = "capture failed on another rank"
    return ok


def record_output(row, x, device):
    """The forward's checksum and finiteness: TP ranks must hold the same activations, bit for
    bit."""
    import torch

    bits = x.view(torch.int16).to(torch.int64)
    row["checksum"] = int((bits * torch.arange(1, bits.numel() + 1, device=device)
                           .view_as(bits)).sum().item())
    row["finite"] = bool(torch.isfinite(x).all().item())


def profile_backend(row, graph, name, reducer, x, k, rank, sync):
    """The all-reduce kernels' durations inside the model's graph and in a graph of the same
    all-reduce alone, into row and printed per rank."""
    from tpcomm import testing

    row["profile_model"] = kernel_times(graph, name, 1, sync)
    # The same all-reduce alone: a graph of copy + all-reduce pairs (a kernel that is not
    # launched for PDL before each, as the GEMM is in the model).
    src = x.clone()
    reduce = reducer(k)
    alone = testing.capture(
        lambda reduce=reduce: reduce(0, lambda o: o.copy_(src)), iters=50, warmup=2)
    row["profile_alone"] = kernel_times(alone, name, 2, sync)
    del alone
    for where in ("model", "alone"):
        p = row["profile_" + where]
        print(f"[rank {rank}] k={k:3d} {name:7s} {where:5s}: " + (
            f"{p['kernels']} kernels, median {p['kernel_us']:.2f} us, p90 "
            f"{p['kernel_p90_us']:.2f}, gap before {p['gap_before_us'] or 0:.2f}"
            if p["kernels"] else f"no all-reduce kernel among {p['kernel_names']}"),
            flush=True)


def worker(rank, world, gloo, args):
    import torch
    import torch.distributed as dist

    import tpcomm
    from tpcomm import testing

    device = torch.device("cuda", rank)
    t0 = time.time()
    say = (lambda msg: print(f"[{time.time() - t0:6.1f} s] {msg}", flush=True)) if rank == 0 \
        else (lambda msg: None)
    say(f"building the stack: {args.layers} layers, hidden {args.hidden}, intermediate "
        f"{args.intermediate}, context {args.context}, {bytes_per_rank(args) / 2**30:.1f} GiB "
        "per rank")
    stack = Stack(args, rank, device)
    uses_tpcomm = {"tpcomm", "tpcomm_fused"} & set(args.backends)
    comm = tpcomm.Communicator.from_process_group(gloo, rank) if uses_tpcomm else None
    reducers = {b: make_reduce(b, rank, gloo, args, comm) for b in args.backends}
    sync = lambda: dist.barrier(group=gloo)  # noqa: E731
    torch.manual_seed(args.seed)  # the same activations on every rank (TP replicates them)
    inputs = {k: torch.randn(k, args.hidden, device=device, dtype=torch.bfloat16) for k in args.k}
    results = []
    for k in args.k:
        # Every backend's forward is captured first and then timed interleaved (time_graphs):
        # the all-reduce time is a difference of two forwards ~2% apart, so a drift of the
        # machine between one backend's timing and the next would land in it.
        rows, graphs, outs = capture_forwards(stack, reducers, inputs[k], k, args, sync)
        ok = captured_everywhere(graphs, rows, args, world, gloo)
        for name, us in testing.time_graphs(ok, 1, args.reps, args.replays, sync).items():
            rows[name]["forward_us"] = us
            record_output(rows[name], outs[name]["x"], device)
            if args.profile and name != "none":
                profile_backend(rows[name], graphs[name], name, reducers[name], inputs[k], k,
                                rank, sync)
        for name in args.backends:
            row = rows[name]
            results.append(row)
            say(f"k={k:3d} {name:7s} {row.get('forward_us', float('nan')):10.1f} us per forward"
                f"{'  ' + row['error'] if 'error' in row else ''}")
        del graphs, outs
    info = {"gpu": torch.cuda.get_device_name(rank), "torch": torch.__version__}
    if comm is not None:
        info["tpcomm_stats"] = comm.stats()
        sync()
        comm.close()
    return {"rows": results, "info": info}
