#!/usr/bin/env python3
"""tpcomm against what Python engines use today, in one run: one table, one plot, one JSON.

    python3 bench/compare.py --out DIR            # 2 processes, one per GPU, bf16, 1 KiB..64 MiB

Backends (each rank one process, one GPU, as in an engine):
  tpcomm     tpcomm (policy "auto"), in place, through the Python binding
  nccl       torch.distributed.all_reduce on an NCCL group, in place
  symm1      torch symmetric memory one-shot: torch.ops.symm_mem.one_shot_all_reduce_out from a
             rendezvous'd buffer into a plain tensor
  symm2      torch symmetric memory two-shot: torch.ops.symm_mem.two_shot_all_reduce_, in place
Modes: eager (a loop of calls; includes each framework's launch overhead) and graph (the same
calls captured in one CUDA graph and replayed: what engines run in decode). Time per call is the
median over --reps repetitions of the mean over --iters back-to-back calls (graph mode, up to
1 MiB: over --replays back-to-back replays of that graph), the slowest rank's.
Each backend is checked for a correct sum (integer data, exact) at every size before timing.
NVLink multicast stays off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1).

Writes DIR/compare.json (every number, the environment), DIR/compare.md (the table) and
DIR/compare.png (latency vs size, eager and graph; ratios to NCCL and to symm1).
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_common, however loaded
from bench_common import (import_tpcomm, parse_size, symm_mem_world,  # noqa: E402
                          torch_with_gpus)

BACKENDS = ("tpcomm", "nccl", "symm1", "symm2")
MODES = ("graph", "eager")
LABELS = {"tpcomm": "tpcomm (auto)", "nccl": "NCCL (torch.distributed)",
          "symm1": "torch symm-mem one-shot", "symm2": "torch symm-mem two-shot"}


def fmt_size(n):
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def sizes_between(lo, hi):
    out, n = [], lo
    while n <= hi:
        out.append(n)
        n *= 2
    return out


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output folder (created)")
    p.add_argument("--nprocs", type=int, default=2, help="processes = GPUs (default 2)")
    p.add_argument("--min", default="1K", help="smallest message (default 1K)")
    p.add_argument("--max", default="64M", help="largest message (default 64M)")
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    p.add_argument("--backends", default=",".join(BACKENDS), help="subset of " + ",".join(BACKENDS))
    p.add_argument("--modes", default=",".join(MODES), help="graph,eager or one of them")
    p.add_argument("--iters", type=int, default=50, help="calls per timed loop / graph (<=1 MiB)")
    p.add_argument("--reps", type=int, default=15, help="repetitions; the median is reported")
    p.add_argument("--replays", type=int, default=4,
                   help="graph replays per repetition (<= 1 MiB): the ranks' processes start "
                        "their replays microseconds apart, and one replay of 50 calls would "
                        "charge that skew to every call, for every backend alike")
    p.add_argument("--timeout", type=int, default=1800, help="seconds before the run is killed")
    args = p.parse_args(argv)
    args.sizes = sizes_between(parse_size(args.min), parse_size(args.max))
    args.backends = [b for b in args.backends.split(",") if b]
    args.modes = [m for m in args.modes.split(",") if m]
    for b in args.backends:
        if b not in BACKENDS:
            p.error(f"unknown backend {b!r}; choose from {', '.join(BACKENDS)}")
    for m in args.modes:
        if m not in MODES:
            p.error(f"unknown mode {m!r}; choose from {', '.join(MODES)}")
    return args


def iters_for(nbytes, base):
    """Calls per timed loop: `base` up to 4 MiB, then fewer so a 64 MiB loop stays short."""
    return max(5, min(base, base * (4 << 20) // nbytes))


# ---------------------------------------------------------------- per-rank worker (GPU side)
def make_backends(rank, world, gloo, args, max_bytes):
    """name -> (setup(n) -> call, error) for every requested backend."""
    import torch
    import torch.distributed as dist

    import tpcomm

    dtype = getattr(torch, args.dtype)
    esize = torch.finfo(dtype).bits // 8
    made = {}
    if "tpcomm" in args.backends:
        comm = tpcomm.Communicator.from_process_group(gloo, rank)

        def tp_setup(n, comm=comm):
            x = torch.empty(n, dtype=dtype, device="cuda")
            return x, (lambda: comm.all_reduce(x)), x
        made["tpcomm"] = (tp_setup, comm)
    if "nccl" in args.backends:
        def nccl_setup(n):
            x = torch.empty(n, dtype=dtype, device="cuda")
            return x, (lambda: dist.all_reduce(x)), x
        made["nccl"] = (nccl_setup, None)
    if "symm1" in args.backends or "symm2" in args.backends:
        symm_mem, group_name = symm_mem_world()
        buf = symm_mem.empty(max_bytes // esize, dtype=dtype, device=f"cuda:{rank}")
        symm_mem.rendezvous(buf, group_name)
        out = torch.empty_like(buf)

        def s1_setup(n):
            view, o = buf[:n], out[:n]
            return view, (lambda: torch.ops.symm_mem.one_shot_all_reduce_out(
                view, "sum", group_name, o)), o

        def s2_setup(n):
            view = buf[:n]
            return view, (lambda: torch.ops.symm_mem.two_shot_all_reduce_(
                view, "sum", group_name)), view
        if "symm1" in args.backends:
            made["symm1"] = (s1_setup, None)
        if "symm2" in args.backends:
            made["symm2"] = (s2_setup, None)
    return made, esize


def check_sum(setup, n, rank, world, quiesce):
    """Integer-valued data so the sum is exact in every dtype; returns '' or what was wrong."""
    import torch

    inp, call, out = setup(n)
    quiesce()
    ramp = torch.arange(n, device="cuda", dtype=torch.float32).remainder_(13)
    inp.copy_(ramp + rank)
    call()
    want = ramp * world + sum(range(world))
    bad = (out.float() != want).sum().item()
    return "" if bad == 0 else f"{bad} of {n} elements wrong"


def worker(rank, world, gloo, args):
    import torch
    import torch.distributed as dist

    from tpcomm import testing

    max_bytes = max(args.sizes)
    made, esize = make_backends(rank, world, gloo, args, max_bytes)
    sync = lambda: dist.barrier(group=gloo)  # noqa: E731

    def quiesce():
        # Before writing a buffer a peer may read (symm-mem inputs, two-shot outputs), every
        # rank's earlier calls must be complete, not just this rank's.
        torch.cuda.synchronize()
        dist.barrier(group=gloo)
    rows = []
    total = len(args.sizes) * len(made) * len(args.modes)
    t0 = time.time()
    for nbytes in args.sizes:
        n = nbytes // esize
        iters = iters_for(nbytes, args.iters)
        for name, (setup, comm) in made.items():
            row = {"backend": name, "bytes": nbytes, "count": n, "iters": iters}
            try:
                row["wrong"] = check_sum(setup, n, rank, world, quiesce)
                inp, call, _ = setup(n)
                quiesce()
                inp.zero_()  # sums of zeros stay zero however often the timing loop repeats
                if comm is not None:
                    row["algo"] = comm.last_call()["algo"]
                for mode in args.modes:
                    if mode == "eager":
                        row["eager_us"] = testing.time_eager(call, iters, args.reps, sync=sync)
                    else:
                        graph = testing.capture(call, iters)
                        replays = args.replays if nbytes <= 1 << 20 else 1
                        row["graph_us"] = testing.time_graph(graph, iters, args.reps, replays,
                                                             sync=sync)
                        del graph
            except Exception as e:  # one backend failing at one size must not lose the run
                row["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                torch.cuda.synchronize()
            rows.append(row)
            if rank == 0:
                done = len(rows) * len(args.modes)
                got = " ".join(f"{m} {row.get(m + '_us', float('nan')):8.1f} us"
                               for m in args.modes)
                print(f"[{done:3d}/{total}] {fmt_size(nbytes):>4} {name:7s} {got}"
                      f"{'  ' + row['error'] if 'error' in row else ''}"
                      f"{'  WRONG ' + row['wrong'] if row.get('wrong') else ''}"
                      f"  ({time.time() - t0:.0f} s)", flush=True)
    info = {"gpu": torch.cuda.get_device_name(rank), "torch": torch.__version__}
    try:
        info["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    except Exception:
        pass
    if "tpcomm" in made:
        comm = made["tpcomm"][1]
        info["tpcomm_stats"] = comm.stats()
        dist.barrier(group=gloo)
        comm.close()
    return {"rows": rows, "info": info}


# ---------------------------------------------------------------- reporting (CPU side)
def merge(per_rank):
    """The slowest rank's time per (backend, size, mode): a collective is as slow as its last
    rank. Errors and wrong sums of any rank are kept."""
    merged = []
    for rows in zip(*[r["rows"] for r in per_rank]):
        row = dict(rows[0])
        for mode in MODES:
            key = mode + "_us"
            vals = [r[key] for r in rows if key in r]
            if len(vals) == len(rows):
                row[key] = max(vals)
                row[key + "_per_rank"] = vals
        for r in rows[1:]:
            if r.get("error") and not row.get("error"):
                row["error"] = r["error"]
            if r.get("wrong") and not row.get("wrong"):
                row["wrong"] = r["wrong"]
        merged.append(row)
    return merged


def lookup(rows, backend, nbytes, mode):
    for r in rows:
        if r["backend"] == backend and r["bytes"] == nbytes and not r.get("wrong"):
            return r.get(mode + "_us")
    return None


def table(rows, sizes, backends, modes):
    lines = []
    for mode in modes:
        head = ["size"] + [LABELS[b].split(" (")[0] for b in backends]
        if "tpcomm" in backends:
            head += ["tpcomm algo"]
            if "nccl" in backends:
                head += ["tpcomm/NCCL"]
            if "symm1" in backends:
                head += ["tpcomm/symm1"]
        lines.append(f"\n{mode} (us per call, slowest rank, median)\n")
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for nbytes in sizes:
            cells = [fmt_size(nbytes)]
            for b in backends:
                v = lookup(rows, b, nbytes, mode)
                cells.append(f"{v:.1f}" if v is not None else "-")
            if "tpcomm" in backends:
                algo = next((r.get("algo", "?") for r in rows
                             if r["backend"] == "tpcomm" and r["bytes"] == nbytes), "?")
                cells.append(algo)
                t = lookup(rows, "tpcomm", nbytes, mode)
                for ref in ("nccl", "symm1"):
                    if ref in backends:
                        v = lookup(rows, ref, nbytes, mode)
                        cells.append(f"{t / v:.2f}x" if t and v else "-")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets(rows, sizes):
    """Issue 5's bar, in graphs at <= 64 KiB: tpcomm <= 0.4x symm1 and <= 0.2x NCCL."""
    verdicts = []
    for nbytes in [s for s in sizes if s <= 64 << 10]:
        t = lookup(rows, "tpcomm", nbytes, "graph")
        for ref, bar in (("symm1", 0.4), ("nccl", 0.2)):
            v = lookup(rows, ref, nbytes, "graph")
            if t is None or v is None:
                continue
            ok = t <= bar * v
            verdicts.append({"bytes": nbytes, "vs": ref, "ratio": t / v, "bar": bar, "ok": ok})
    return verdicts


def plot(rows, sizes, backends, modes, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(modes), figsize=(6.5 * len(modes), 8.5), squeeze=False,
                             sharex=True)
    for col, mode in enumerate(modes):
        ax = axes[0][col]
        for b in backends:
            pts = [(s, lookup(rows, b, s, mode)) for s in sizes]
            pts = [(s, v) for s, v in pts if v is not None]
            if pts:
                ax.plot([s for s, _ in pts], [v for _, v in pts], marker="o", ms=3,
                        label=LABELS[b], lw=2.2 if b == "tpcomm" else 1.3)
        ax.set(xscale="log", yscale="log", ylabel="us per all-reduce", title=f"{mode}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        ax = axes[1][col]
        for ref in ("nccl", "symm1"):
            if ref in backends and "tpcomm" in backends:
                pts = [(s, lookup(rows, "tpcomm", s, mode), lookup(rows, ref, s, mode))
                       for s in sizes]
                pts = [(s, t / v) for s, t, v in pts if t and v]
                if pts:
                    ax.plot([s for s, _ in pts], [r for _, r in pts], marker="o", ms=3,
                            label=f"tpcomm / {LABELS[ref]}")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set(xscale="log", xlabel="message bytes", ylabel="time ratio (lower is better)")
        ax.set_xticks(sizes[::2])
        ax.set_xticklabels([fmt_size(s) for s in sizes[::2]], rotation=45)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def main(argv=None):
    args = parse_args(argv)
    tpcomm = import_tpcomm()
    testing = tpcomm.testing

    testing.set_env_defaults()
    if torch_with_gpus("compare.py", args.nprocs) is None:
        return 2
    os.makedirs(args.out, exist_ok=True)
    print(f"compare: {len(args.sizes)} sizes x {args.backends} x {args.modes}, {args.dtype}, "
          f"{args.nprocs} processes -> {args.out}", flush=True)
    per_rank = testing.launch(worker, args.nprocs, args=(args,), timeout=args.timeout)
    rows = merge(per_rank)
    text = table(rows, args.sizes, args.backends, args.modes)
    verdicts = targets(rows, args.sizes)

    report = {"args": {k: v for k, v in vars(args).items()}, "rows": rows,
              "ranks": [r["info"] for r in per_rank], "targets": verdicts,
              "tpcomm_library": tpcomm.library_path(),
              "env": {k: v for k, v in os.environ.items()
                      if k.startswith(("TPCOMM_", "NCCL_", "TORCH_SYMM", "NVSHMEM_"))}}
    with open(os.path.join(args.out, "compare.json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(args.out, "compare.md"), "w") as f:
        f.write(text + "\n")
    plot(rows, args.sizes, args.backends, args.modes, os.path.join(args.out, "compare.png"),
         f"all-reduce latency, {args.dtype}, {args.nprocs} processes ({per_rank[0]['info']['gpu']})")
    print(text)
    bad = [r for r in rows if r.get("wrong") or r.get("error")]
    for r in bad:
        print(f"!! {r['backend']} {fmt_size(r['bytes'])}: {r.get('wrong') or r.get('error')}")
    for v in verdicts:
        print(f"target {fmt_size(v['bytes']):>4} graph: tpcomm/{v['vs']} = {v['ratio']:.2f} "
              f"(bar {v['bar']}) {'ok' if v['ok'] else 'MISSED'}")
    print(f"wrote {args.out}/compare.json, compare.md, compare.png")
    return 1 if any(r.get("wrong") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
