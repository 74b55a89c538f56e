"""Probe: does splitting a host-transport all-reduce between LL (host_oneshot) and bulk
(host_bulk), run concurrently, beat either alone? One process drives both GPUs; two
communicators per GPU (one forced to each algorithm, separate epochs/slots); per call the
message's first p goes through LL on stream A and the rest through bulk on stream B (fork/join
inside the CUDA graph). Time: 50 calls per graph, slowest GPU, median of 7 replays.

Run on a 2-GPU machine: PYTHONPATH=python TPCOMM_LIBRARY=build/src/libtpcomm.so
  python3 docs/bench/host_split/probe_hybrid.py 16,64,256,1024   (sizes in KiB)
Result and conclusion: probe_hybrid.txt, docs/BENCHMARKS.md (fifth round)."""
import os, sys, statistics
os.environ.setdefault("TPCOMM_TRANSPORT", "host")
import torch, tpcomm

devs = [0, 1]
LL = tpcomm.Communicator.init_all(devs, algo="host_oneshot")
BK = tpcomm.Communicator.init_all(devs, algo="host_bulk")
N, REPS = 50, 7

def run(nbytes, p):
    n = nbytes // 2
    nl = int(n * p) // 8 * 8
    xs, ys, graphs, sa, sb = [], [], [], [], []
    for d in devs:
        with torch.cuda.device(d):
            x = torch.randn(n, dtype=torch.bfloat16, device=d)
            y = torch.empty_like(x)
            xs.append(x); ys.append(y)
            sa.append(torch.cuda.Stream(d)); sb.append(torch.cuda.Stream(d))
    def step(i):
        a, b = sa[i], sb[i]
        b.wait_stream(a)
        if nl > 0:
            LL[i].all_reduce(xs[i][:nl], out=ys[i][:nl], stream=a)
        if nl < n:
            BK[i].all_reduce(xs[i][nl:], out=ys[i][nl:], stream=b)
        a.wait_stream(b)
    # warm up eagerly (both GPUs' calls enqueued before any waits)
    for _ in range(3):
        for i in range(2):
            with torch.cuda.device(devs[i]), torch.cuda.stream(sa[i]):
                step(i)
    for d in devs: torch.cuda.synchronize(d)
    # check against a reference: sum of both inputs
    want = (xs[0].float().cpu() + xs[1].float().cpu()).to(torch.bfloat16)
    ok = all(torch.equal(ys[i].cpu(), want) for i in range(2))
    for i in range(2):
        with torch.cuda.device(devs[i]):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=sa[i]):
                for _ in range(N):
                    step(i)
            graphs.append(g)
    for d in devs: torch.cuda.synchronize(d)
    times = []
    for _ in range(REPS + 1):
        st, en = [], []
        for i in range(2):
            with torch.cuda.device(devs[i]):
                e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
                e0.record(sa[i]); st.append(e0); en.append(e1)
        for i in range(2):
            with torch.cuda.device(devs[i]), torch.cuda.stream(sa[i]):
                graphs[i].replay()
        for i in range(2):
            with torch.cuda.device(devs[i]):
                en[i].record(sa[i])
        for d in devs: torch.cuda.synchronize(d)
        times.append(max(st[i].elapsed_time(en[i]) for i in range(2)) * 1000 / N)
    return statistics.median(times[1:]), ok

sizes = [int(s) * 1024 for s in (sys.argv[1] if len(sys.argv) > 1 else "64,128,256,512,1024").split(",")]
ps = [0.0, 0.25, 0.375, 0.5, 0.625, 0.75, 1.0]
print("bytes  " + "  ".join(f"p={p:<5}" for p in ps), flush=True)
for s in sizes:
    row = []
    for p in ps:
        t, ok = run(s, p)
        row.append(f"{t:7.2f}{'' if ok else '!'}")
    print(f"{s // 1024:5d}K " + "  ".join(row), flush=True)
