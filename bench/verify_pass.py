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
--fused adds
  tpcomm_fused  where the layer runs all-reduce -> residual add -> RMSNorm, one fused call
          (torch.ops.tpcomm.fused_allreduce_rmsnorm), timed next to tpcomm's unfused sequence:
          the report says whether the fused forward is faster at every k (issue 22).
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
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # siblings, however loaded
from bench_common import import_tpcomm, torch_with_gpus  # noqa: E402
from verify_pass_model import BACKENDS, DEFAULT_BACKENDS, bytes_per_rank  # noqa: E402
from verify_pass_report import fused_targets, plot, summarize, table, targets  # noqa: E402
from verify_pass_worker import worker  # noqa: E402


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
    p.add_argument("--backends", default=",".join(DEFAULT_BACKENDS),
                   help="subset of " + ",".join(BACKENDS))
    p.add_argument("--fused", action="store_true",
                   help="also time tpcomm_fused (the fused all-reduce + add + RMSNorm) against "
                        "tpcomm's unfused sequence")
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
    if args.fused:  # the fused sequence and the unfused one it is measured against
        args.backends += [b for b in ("tpcomm", "tpcomm_fused") if b not in args.backends]
    if args.hidden % (args.nprocs * args.head_dim):
        p.error(f"--hidden {args.hidden} must split into {args.nprocs} ranks of whole "
                f"{args.head_dim}-wide heads")
    if args.intermediate % args.nprocs:
        p.error(f"--intermediate {args.intermediate} must divide by {args.nprocs}")
    if 1 not in args.k:
        args.k = [1] + args.k  # T(1) is the plain decode step every break-even needs
    return args


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
    fused = fused_targets(rows, args)
    report = {"args": vars(args), "rows": rows, "ranks": [r["info"] for r in per_rank],
              "targets": verdicts, "fused_targets": fused, "bytes_per_rank": need,
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
    for v in fused:
        print(f"fused k={v['k']:3d}: forward {v['fused_us']:.0f} us fused vs {v['unfused_us']:.0f} "
              f"unfused ({v['saved_us_per_call']:+.2f} us per call) -> "
              f"{'ok' if v['faster'] else 'NOT faster'}")
    print(f"wrote {args.out}/verify_pass.json, verify_pass.md, verify_pass.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())