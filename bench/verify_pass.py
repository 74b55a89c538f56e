#!/usr/bin/env python3
"""The speculative-decoding verify pass of the seed story, with each all-reduce swapped in.

    python3 bench/verify_pass.py --out DIR --layers 61      # 2 processes, bf16, CUDA graphs

A tensor-parallel transformer stack with the dimensions of the seed's model class (61 layers,
hidden 7168), random weights, two all-reduces per layer (attention output, MLP output), run as
one CUDA graph per verify width k = 1, 4, 8, 16, 64 tokens, with four all-reduces:
  nccl    torch.distributed.all_reduce (NCCL), in place
  symm    torch symmetric memory one-shot (the output projection writes straight into a
          rendezvous'd buffer; two buffers alternate so a fast rank never overwrites what a
          slow one still reads)
  tpcomm  tpcomm.Communicator.all_reduce, in place
  none    no all-reduce at all: the compute-only time, so that
          all-reduce time per forward = forward(backend) - forward(none).
For each k every backend's forward is captured first, then all are timed interleaved
(repetition r runs each graph once, in an order rotated by r; median over --reps): the
all-reduce time is a difference of two forwards a few percent apart, and timing the backends one
after the other let the machine's drift over the run land in it. --profile adds the all-reduce
kernels' own durations (torch.profiler) in the model and alone, per rank.
Per layer and rank (TP = number of processes): RMSNorm; QKV projection [H, 3H/TP]; attention
over a --context-token KV cache (SDPA; --context 0 replaces it by an elementwise stand-in);
output projection [H/TP, H] -> all-reduce; RMSNorm; gate/up [H, 2I/TP]; SiLU*mul; down
[I/TP, H] -> all-reduce. The MoE of the real model is stood in for by a dense MLP whose
intermediate size (default 18432 = 8 routed x 2048 + 2048 shared) matches the active FLOPs per
token. No embedding or LM head (no all-reduce there).

Break-even model (EAGLE-style chain speculation; stated, not measured): a round drafts k-1
tokens, each costing --draft-cost x T(1), then verifies k tokens in T(k); with i.i.d. per-token
acceptance a, a round yields E(a) = (1 - a^k) / (1 - a) tokens. Plain decoding yields one token
per T(1). Speculation breaks even when E(a) = [T(k) + (k-1) * draft_cost * T(1)] / T(1); we
report that E* (mean tokens a verify must yield) and the acceptance a* solving it, per backend,
with T from the same backend (and a* for a free draft as the lower bound).

Writes DIR/verify_pass.json, DIR/verify_pass.md and DIR/verify_pass.png.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_common, however loaded
from bench_common import import_tpcomm, symm_mem_world, torch_with_gpus  # noqa: E402

BACKENDS = ("nccl", "symm", "tpcomm", "none")
LABELS = {"nccl": "NCCL (torch.distributed)", "symm": "torch symm-mem one-shot",
          "tpcomm": "tpcomm", "none": "no all-reduce (compute only)"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output folder (created)")
    p.add_argument("--nprocs", type=int, default=2, help="processes = GPUs = TP size (default 2)")
    p.add_argument("--layers", type=int, default=61)
    p.add_argument("--hidden", type=int, default=7168)
    p.add_argument("--intermediate", type=int, default=18432, help="dense MLP size (all ranks)")
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--context", type=int, default=2048, help="KV-cache tokens attended (0: none)")
    p.add_argument("--k", default="1,4,8,16,64", help="verify widths (tokens per forward)")
    p.add_argument("--backends", default=",".join(BACKENDS), help="subset of " + ",".join(BACKENDS))
    p.add_argument("--shared-weights", action="store_true",
                   help="all layers share one layer's weights (fits small GPUs; same shapes)")
    p.add_argument("--reps", type=int, default=10, help="timed repetitions; the median is reported")
    p.add_argument("--replays", type=int, default=5, help="graph replays per repetition")
    p.add_argument("--draft-cost", type=float, default=0.05,
                   help="cost of drafting one token, as a fraction of T(1) (default 0.05)")
    p.add_argument("--profile", action="store_true",
                   help="also trace one replay per backend and k with torch.profiler and report "
                        "the all-reduce kernels' own durations and the gaps before them, inside "
                        "the model and in a graph of all-reduces alone (diagnostic; slower)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=int, default=3600, help="seconds before the run is killed")
    args = p.parse_args(argv)
    args.k = sorted({int(v) for v in args.k.split(",") if v})
    args.backends = [b for b in args.backends.split(",") if b]
    for b in args.backends:
        if b not in BACKENDS:
            p.error(f"unknown backend {b!r}; choose from {', '.join(BACKENDS)}")
    if args.hidden % (args.nprocs * args.head_dim):
        p.error(f"--hidden {args.hidden} must split into {args.nprocs} ranks of whole "
                f"{args.head_dim}-wide heads")
    if args.intermediate % args.nprocs:
        p.error(f"--intermediate {args.intermediate} must divide by {args.nprocs}")
    if 1 not in args.k:
        args.k = [1] + args.k  # T(1) is the plain decode step every break-even needs
    return args


def shapes(args):
    """Per-rank weight shapes of one layer (TP-sharded as Megatron does)."""
    tp, h, i = args.nprocs, args.hidden, args.intermediate
    return {"w_qkv": (h, 3 * h // tp), "w_o": (h // tp, h), "w_gu": (h, 2 * i // tp),
            "w_d": (i // tp, h)}


def bytes_per_rank(args):
    per_layer = sum(a * b for a, b in shapes(args).values()) * 2
    kv = 2 * args.context * (args.hidden // args.nprocs) * 2
    layers = 1 if args.shared_weights else args.layers
    return per_layer * layers + kv * args.layers


# ---------------------------------------------------------------- break-even (pure math)
def expected_tokens(alpha, k):
    """Tokens one chain-speculation round yields with per-token acceptance alpha, verifying k."""
    if alpha >= 1.0:
        return float(k)
    return (1.0 - alpha ** k) / (1.0 - alpha)


def break_even(t_verify, t_decode, k, draft_cost):
    """(E*, a*): tokens per round needed to match plain decoding, and the acceptance giving
    them; a* is None when even a = 1 (E = k) cannot pay for the round."""
    need = (t_verify + (k - 1) * draft_cost * t_decode) / t_decode
    if need <= 1.0:
        return need, 0.0
    if need >= k:
        return need, None
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if expected_tokens(mid, k) < need:
            lo = mid
        else:
            hi = mid
    return need, (lo + hi) / 2


# ---------------------------------------------------------------- the model (GPU side)
class Stack:
    """The TP transformer stack of one rank; `reduce(site, produce)` is the all-reduce seam."""

    def __init__(self, args, rank, device):
        import torch

        torch.manual_seed(args.seed * 1000 + rank)  # each rank its own shard
        self.args, self.device = args, device
        self.heads = args.hidden // args.nprocs // args.head_dim
        bf16 = torch.bfloat16

        def weight(shape):
            return (torch.randn(shape, device=device, dtype=bf16) / math.sqrt(shape[0]))

        n_distinct = 1 if args.shared_weights else args.layers
        made = [{name: weight(shape) for name, shape in shapes(args).items()}
                for _ in range(n_distinct)]
        self.layers = [made[l % n_distinct] for l in range(args.layers)]
        self.kv = []
        if args.context:
            for _ in range(args.layers):
                k = torch.randn(1, self.heads, args.context, args.head_dim, device=device, dtype=bf16)
                self.kv.append((k, torch.randn_like(k)))
        self.norm = torch.ones(args.hidden, device=device, dtype=bf16)

    def attention(self, qkv, layer):
        import torch
        import torch.nn.functional as F

        q, k, v = qkv.chunk(3, dim=-1)
        if not self.kv:
            return q * torch.sigmoid(k) + v
        n = q.shape[0]
        q4 = q.view(n, self.heads, self.args.head_dim).transpose(0, 1).unsqueeze(0)
        kc, vc = self.kv[layer]
        o = F.scaled_dot_product_attention(q4, kc, vc)
        return o.squeeze(0).transpose(0, 1).reshape(n, -1) + v

    def forward(self, x, reduce):
        import torch
        import torch.nn.functional as F

        h_dim = self.args.hidden
        for l, w in enumerate(self.layers):
            h = F.rms_norm(x, (h_dim,), self.norm)
            a = self.attention(h @ w["w_qkv"], l)
            x = x + reduce(2 * l, lambda out, a=a, w=w: torch.matmul(a, w["w_o"], out=out))
            h = F.rms_norm(x, (h_dim,), self.norm)
            g, u = (h @ w["w_gu"]).chunk(2, dim=-1)
            m = F.silu(g) * u
            x = x + reduce(2 * l + 1, lambda out, m=m, w=w: torch.matmul(m, w["w_d"], out=out))
        return x


def make_reduce(name, rank, gloo, args, comm):
    """reduce(site, produce) -> the all-reduced [k, H] tensor; produce(out) writes the partial."""
    import torch
    import torch.distributed as dist

    h = args.hidden

    def fresh(site, produce, k):
        out = torch.empty(k, h, device="cuda", dtype=torch.bfloat16)
        produce(out)
        return out

    if name == "none":
        return lambda k: (lambda site, produce: fresh(site, produce, k))
    if name == "nccl":
        def nccl(k):
            def reduce(site, produce):
                out = fresh(site, produce, k)
                dist.all_reduce(out)
                return out
            return reduce
        return nccl
    if name == "tpcomm":
        def tp(k):
            def reduce(site, produce):
                out = fresh(site, produce, k)
                comm.all_reduce(out)
                return out
            return reduce
        return tp
    if name == "symm":
        symm_mem, group_name = symm_mem_world()
        kmax = max(args.k)
        bufs = [symm_mem.empty(kmax * h, dtype=torch.bfloat16, device=f"cuda:{rank}")
                for _ in range(2)]
        for b in bufs:
            symm_mem.rendezvous(b, group_name)

        def symm(k):
            def reduce(site, produce):
                src = bufs[site % 2][: k * h].view(k, h)
                produce(src)
                out = torch.empty(k, h, device="cuda", dtype=torch.bfloat16)
                torch.ops.symm_mem.one_shot_all_reduce_out(src, "sum", group_name, out)
                return out
            return reduce
        return symm
    raise ValueError(name)


# Substrings of each backend's all-reduce kernel names (CUPTI's demangled names).
AR_KERNELS = {"tpcomm": ("tpcomm::",), "nccl": ("ncclDevKernel", "ncclKernel"),
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
    comm = tpcomm.Communicator.from_process_group(gloo, rank) if "tpcomm" in args.backends else None
    reducers = {b: make_reduce(b, rank, gloo, args, comm) for b in args.backends}
    sync = lambda: dist.barrier(group=gloo)  # noqa: E731
    torch.manual_seed(args.seed)  # the same activations on every rank (TP replicates them)
    inputs = {k: torch.randn(k, args.hidden, device=device, dtype=torch.bfloat16) for k in args.k}
    results = []
    for k in args.k:
        # Every backend's forward is captured first and then timed interleaved (time_graphs):
        # the all-reduce time is a difference of two forwards ~2% apart, so a drift of the
        # machine between one backend's timing and the next would land in it.
        rows, graphs, outs = {}, {}, {}
        for name in args.backends:
            rows[name] = {"backend": name, "k": k}
            try:
                reduce = reducers[name](k)
                outs[name] = {}

                def fwd(reduce=reduce, x=inputs[k], out=outs[name]):
                    out["x"] = stack.forward(x, reduce)
                torch.cuda.synchronize()
                sync()
                graphs[name] = testing.capture(fwd, iters=1, warmup=2)
            except Exception as e:
                rows[name]["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                torch.cuda.synchronize()
        # Ranks must time the same graphs in the same order: only those every rank captured.
        everyone = [None] * world
        dist.all_gather_object(everyone, sorted(graphs), group=gloo)
        ok = {n: graphs[n] for n in args.backends if all(n in names for names in everyone)}
        for n in graphs:
            if n not in ok:
                rows[n]["error"] = "capture failed on another rank"
        for name, us in testing.time_graphs(ok, 1, args.reps, args.replays, sync).items():
            row = rows[name]
            row["forward_us"] = us
            x = outs[name]["x"]
            # TP ranks must hold the same activations, bit for bit.
            bits = x.view(torch.int16).to(torch.int64)
            row["checksum"] = int((bits * torch.arange(1, bits.numel() + 1, device=device)
                                   .view_as(bits)).sum().item())
            row["finite"] = bool(torch.isfinite(x).all().item())
            if args.profile and name != "none":
                row["profile_model"] = kernel_times(graphs[name], name, 1, sync)
                # The same all-reduce alone: a graph of copy + all-reduce pairs (a kernel that
                # is not launched for PDL before each, as the GEMM is in the model).
                src = inputs[k].clone()
                reduce = reducers[name](k)
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


# ---------------------------------------------------------------- reporting (CPU side)
def summarize(per_rank, args):
    """Slowest rank's forward time; all-reduce time and share; break-even per backend and k."""
    rows = []
    for same in zip(*[r["rows"] for r in per_rank]):
        row = {"backend": same[0]["backend"], "k": same[0]["k"]}
        errs = [r["error"] for r in same if "error" in r]
        if errs:
            row["error"] = errs[0]
        else:
            row["forward_us"] = max(r["forward_us"] for r in same)
            row["forward_us_per_rank"] = [r["forward_us"] for r in same]
            row["finite"] = all(r["finite"] for r in same)
            if row["backend"] != "none":
                row["replicas_identical"] = len({r["checksum"] for r in same}) == 1
        rows.append(row)
    by = {(r["backend"], r["k"]): r for r in rows}
    for r in rows:
        base = by.get(("none", r["k"]))
        if r["backend"] != "none" and "forward_us" in r and base and "forward_us" in base:
            r["allreduce_us"] = r["forward_us"] - base["forward_us"]
            r["allreduce_share"] = max(0.0, r["allreduce_us"]) / r["forward_us"]
            r["allreduce_us_per_call"] = r["allreduce_us"] / (2 * args.layers)
        dec = by.get((r["backend"], 1))
        if r["k"] > 1 and "forward_us" in r and dec and "forward_us" in dec:
            r["tokens_needed"], r["alpha_breakeven"] = break_even(
                r["forward_us"], dec["forward_us"], r["k"], args.draft_cost)
            r["alpha_breakeven_free_draft"] = break_even(
                r["forward_us"], dec["forward_us"], r["k"], 0.0)[1]
    return rows


def table(rows, args):
    head = ["k", "backend", "forward us", "all-reduce us", "AR share", "us per AR call",
            "E* tokens", f"a* (draft {args.draft_cost:g})", "a* (free draft)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def f(v, fmt):
        return "-" if v is None else (fmt.format(v) if not isinstance(v, str) else v)
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['k']} | {r['backend']} | error: {r['error']} |")
            continue
        a = r.get("alpha_breakeven", "never" if "tokens_needed" in r else None)
        a0 = r.get("alpha_breakeven_free_draft", "never" if "tokens_needed" in r else None)
        lines.append("| " + " | ".join([
            str(r["k"]), r["backend"], f(r.get("forward_us"), "{:.0f}"),
            f(r.get("allreduce_us"), "{:.0f}"), f(r.get("allreduce_share"), "{:.1%}"),
            f(r.get("allreduce_us_per_call"), "{:.1f}"), f(r.get("tokens_needed"), "{:.2f}"),
            f(a, "{:.3f}"), f(a0, "{:.3f}")]) + " |")
    return "\n".join(lines)


def targets(rows):
    """Issue 5: tpcomm's all-reduce time per forward <= 0.25x NCCL's, and a faster forward, at
    every k."""
    by = {(r["backend"], r["k"]): r for r in rows}
    out = []
    for (b, k), r in sorted(by.items(), key=lambda kv: kv[0][1]):
        n = by.get(("nccl", k))
        if b != "tpcomm" or not n or "allreduce_us" not in r or "allreduce_us" not in n:
            continue
        out.append({"k": k, "ar_ratio": r["allreduce_us"] / n["allreduce_us"]
                    if n["allreduce_us"] > 0 else None,
                    "faster": r["forward_us"] < n["forward_us"],
                    "ok": n["allreduce_us"] > 0 and r["allreduce_us"] <= 0.25 * n["allreduce_us"]
                    and r["forward_us"] < n["forward_us"]})
    return out


def plot(rows, args, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(17, 5))
    ks = args.k
    for b in args.backends:
        pts = [(r["k"], r) for r in rows if r["backend"] == b and "forward_us" in r]
        if not pts:
            continue
        style = {"ls": "--"} if b == "none" else {}
        axes[0].plot([k for k, _ in pts], [r["forward_us"] / 1000 for _, r in pts], marker="o",
                     label=LABELS[b], **style)
        ar = [(k, r["allreduce_us"] / 1000) for k, r in pts if "allreduce_us" in r]
        if ar:
            axes[1].plot([k for k, _ in ar], [v for _, v in ar], marker="o", label=LABELS[b])
        al = [(k, r.get("alpha_breakeven")) for k, r in pts if "tokens_needed" in r]
        if al:
            axes[2].plot([k for k, v in al if v is not None], [v for _, v in al if v is not None],
                         marker="o", label=LABELS[b])
    axes[0].set(ylabel="ms per verify forward", title="forward time (CUDA graph)")
    axes[1].set(ylabel="ms of all-reduce per forward", title=f"all-reduce time ({2 * args.layers} calls)")
    axes[2].set(ylabel="break-even acceptance a*", ylim=(0, 1),
                title=f"acceptance needed (draft cost {args.draft_cost:g} x T(1))")
    for ax in axes:
        ax.set(xscale="log", xlabel="verify width k (tokens)")
        ax.set_xticks(ks)
        ax.set_xticklabels([str(k) for k in ks])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def main(argv=None):
    args = parse_args(argv)
    tpcomm = import_tpcomm()
    testing = tpcomm.testing

    testing.set_env_defaults()
    torch = torch_with_gpus("verify_pass.py", args.nprocs)
    if torch is None:
        return 2
    need = bytes_per_rank(args)
    have = torch.cuda.get_device_properties(0).total_memory
    if need > 0.9 * have:
        print(f"the stack needs {need / 2**30:.1f} GiB per GPU of {have / 2**30:.1f}: use fewer "
              "--layers, --shared-weights or a smaller --context", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    per_rank = testing.launch(worker, args.nprocs, args=(args,), timeout=args.timeout)
    rows = summarize(per_rank, args)
    text = table(rows, args)
    verdicts = targets(rows)
    report = {"args": vars(args), "rows": rows, "ranks": [r["info"] for r in per_rank],
              "targets": verdicts, "bytes_per_rank": need,
              "model": {"breakeven": "chain speculation, i.i.d. acceptance a: "
                                     "E(a) = (1 - a^k)/(1 - a) = [T(k) + (k-1) c T(1)] / T(1)",
                        "draft_cost_c": args.draft_cost}}
    with open(os.path.join(args.out, "verify_pass.json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(args.out, "verify_pass.md"), "w") as f:
        f.write(text + "\n")
    plot(rows, args, os.path.join(args.out, "verify_pass.png"),
         f"verify pass: {args.layers} layers, hidden {args.hidden}, TP {args.nprocs}, bf16 "
         f"({per_rank[0]['info']['gpu']})")
    print(text)
    for r in rows:
        if r.get("replicas_identical") is False:
            print(f"!! {r['backend']} k={r['k']}: ranks' activations differ")
    for v in verdicts:
        ratio = "n/a" if v["ar_ratio"] is None else f"{v['ar_ratio']:.2f}"
        print(f"target k={v['k']:3d}: tpcomm all-reduce / NCCL = {ratio} (bar 0.25), forward "
              f"{'faster' if v['faster'] else 'NOT faster'} -> {'ok' if v['ok'] else 'MISSED'}")
    print(f"wrote {args.out}/verify_pass.json, verify_pass.md, verify_pass.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
