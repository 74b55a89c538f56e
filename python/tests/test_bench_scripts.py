"""bench/compare.py, bench/verify_pass.py and bench/eager_cost.py without a GPU: they parse their arguments, import
without torch, refuse clearly when torch or GPUs are missing, and their reporting and
break-even math are right (the GPU numbers come from the real runs)."""
import importlib.util
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO, "bench")
pytestmark = pytest.mark.skipif(not os.path.isdir(BENCH), reason="not a source checkout")


def load(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", os.path.join(BENCH, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script", ["compare.py", "verify_pass.py", "eager_cost.py"])
def test_help_needs_no_torch(script):
    r = subprocess.run([sys.executable, os.path.join(BENCH, script), "--help"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "--out" in r.stdout, r.stderr


@pytest.mark.parametrize("script", ["compare.py", "verify_pass.py", "eager_cost.py"])
def test_module_import_does_not_import_torch(script):
    code = (f"import importlib.util, sys; s = importlib.util.spec_from_file_location('m', "
            f"{os.path.join(BENCH, script)!r}); m = importlib.util.module_from_spec(s); "
            "s.loader.exec_module(m); assert 'torch' not in sys.modules; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_compare_arguments():
    m = load("compare")
    a = m.parse_args(["--out", "x"])
    assert a.sizes[0] == 1024 and a.sizes[-1] == 64 << 20 and len(a.sizes) == 17
    assert a.backends == ["tpcomm", "nccl", "symm1", "symm2"] and a.modes == ["graph", "eager"]
    a = m.parse_args(["--out", "x", "--min", "4KiB", "--max", "1M", "--backends", "tpcomm,nccl"])
    assert a.sizes == [4096 * 2 ** i for i in range(9)] and a.backends == ["tpcomm", "nccl"]
    with pytest.raises(SystemExit):
        m.parse_args(["--out", "x", "--backends", "mpi"])
    assert m.iters_for(1024, 50) == 50 and m.iters_for(64 << 20, 50) == 5


def test_compare_report_from_fake_ranks(tmp_path):
    m = load("compare")
    sizes = [1024, 65536]

    def rows(scale):
        out = []
        for s in sizes:
            for b, t in (("tpcomm", 3.0), ("nccl", 15.0), ("symm1", 7.0), ("symm2", 9.0)):
                out.append({"backend": b, "bytes": s, "graph_us": t * scale, "eager_us": 2 * t,
                            "wrong": "", "algo": "oneshot"})
        return out
    merged = m.merge([{"rows": rows(1.0)}, {"rows": rows(1.1)}])
    assert merged[0]["graph_us"] == pytest.approx(3.3)  # the slowest rank counts
    text = m.table(merged, sizes, list(m.BACKENDS), list(m.MODES))
    assert "| 1K | 3.3 | 16.5 | 7.7 | 9.9 | oneshot | 0.20x | 0.43x |" in text
    verdicts = m.targets(merged, sizes)
    assert {(v["vs"], v["ok"]) for v in verdicts} == {("symm1", False), ("nccl", True)}
    pytest.importorskip("matplotlib")
    m.plot(merged, sizes, list(m.BACKENDS), list(m.MODES), str(tmp_path / "c.png"), "t")
    assert (tmp_path / "c.png").stat().st_size > 1000


@pytest.mark.parametrize("script,extra", [
    ("compare.py", []), ("verify_pass.py", ["--hidden", "8192", "--intermediate", "8192"])])
def test_refuses_clearly_without_torch_or_enough_gpus(script, extra, tmp_path):
    # 64 processes: never runnable here, so this cannot start a real benchmark on a GPU box
    r = subprocess.run([sys.executable, os.path.join(BENCH, script), "--out", str(tmp_path),
                        "--nprocs", "64"] + extra, capture_output=True, text=True)
    assert r.returncode == 2 and ("needs torch" in r.stderr or "GPUs" in r.stderr), r.stderr


def test_verify_pass_arguments_and_shapes():
    m = load("verify_pass")
    a = m.parse_args(["--out", "x"])
    assert (a.layers, a.hidden, a.intermediate, a.k) == (61, 7168, 18432, [1, 4, 8, 16, 64])
    assert load("verify_pass_model").shapes(a) == {"w_qkv": (7168, 10752), "w_o": (3584, 7168),
                           "w_gu": (7168, 18432), "w_d": (9216, 7168)}
    assert 30 << 30 < m.bytes_per_rank(a) < 45 << 30  # ~37 GiB weights + ~3.4 GiB KV
    assert m.parse_args(["--out", "x", "--k", "8,4"]).k == [1, 4, 8]  # T(1) always measured
    with pytest.raises(SystemExit):
        m.parse_args(["--out", "x", "--hidden", "1000"])


def test_break_even_math():
    m = load("verify_pass_report")
    assert m.expected_tokens(0.0, 8) == 1.0 and m.expected_tokens(1.0, 8) == 8.0
    assert m.expected_tokens(0.5, 2) == pytest.approx(1.5)
    # A verify as cheap as a decode step breaks even at once; one that costs k steps never does.
    assert m.break_even(100.0, 100.0, 4, 0.0) == (1.0, 0.0)
    assert m.break_even(400.0, 100.0, 4, 0.0)[1] is None
    need, alpha = m.break_even(150.0, 100.0, 4, 0.05)  # (150 + 3*5) / 100 = 1.65 tokens
    assert need == pytest.approx(1.65)
    assert m.expected_tokens(alpha, 4) == pytest.approx(1.65, abs=1e-9)


def test_verify_pass_summary_from_fake_ranks():
    m = load("verify_pass")
    a = m.parse_args(["--out", "x", "--k", "1,4", "--layers", "2"])
    fake = []
    for k in (1, 4):
        for b, t in (("nccl", 1000.0), ("symm", 900.0), ("tpcomm", 820.0), ("none", 800.0)):
            fake.append({"backend": b, "k": k, "forward_us": t * (1 + (k > 1)), "checksum": 5,
                         "finite": True})
    rows = m.summarize([{"rows": fake}, {"rows": fake}], a)
    by = {(r["backend"], r["k"]): r for r in rows}
    assert by[("nccl", 1)]["allreduce_us"] == pytest.approx(200.0)
    assert by[("tpcomm", 1)]["allreduce_us_per_call"] == pytest.approx(20.0 / 4)
    assert by[("tpcomm", 4)]["replicas_identical"]
    assert by[("tpcomm", 4)]["tokens_needed"] == pytest.approx((1640 + 3 * 0.05 * 820) / 820)
    (t1, t4) = m.targets(rows)
    assert t1["ok"] and t1["ar_ratio"] == pytest.approx(0.1)
    assert "| 4 | tpcomm |" in m.table(rows, a)


def test_time_graphs_interleaves_and_rotates(monkeypatch):
    """testing.time_graphs times every graph once per repetition, in an order rotated by the
    repetition (a drift over the run must not land on one backend), and reports each graph's
    median per captured call. A fake torch records what ran; the timings are made up."""
    import types

    from tpcomm import testing

    log = []
    clock = {"t": 0.0}

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            self.t = clock["t"]

        def synchronize(self):
            pass

        def elapsed_time(self, other):  # ms, as torch's
            return other.t - self.t

    class Graph:
        def __init__(self, name, ms):
            self.name, self.ms = name, ms

        def replay(self):
            log.append(self.name)
            clock["t"] += self.ms

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=Event, synchronize=lambda: None))
    monkeypatch.setitem(sys.modules, "torch", fake)
    syncs = []
    graphs = {"a": Graph("a", 1.0), "b": Graph("b", 2.0), "c": Graph("c", 4.0)}
    got = testing.time_graphs(graphs, iters=10, reps=3, replays=2, sync=lambda: syncs.append(1))
    # One upload replay each, then per repetition every graph `replays` times, rotated.
    assert log[:3] == ["a", "b", "c"]
    assert log[3:] == ["a", "a", "b", "b", "c", "c", "b", "b", "c", "c", "a", "a",
                       "c", "c", "a", "a", "b", "b"]
    assert len(syncs) == 9  # ranks line up before every sample
    assert got == {"a": pytest.approx(100.0), "b": pytest.approx(200.0), "c": pytest.approx(400.0)}
    # time_graph is the one-graph case: an upload replay, then `replays` per repetition.
    log.clear()
    assert testing.time_graph(graphs["b"], iters=10, reps=3, replays=2) == pytest.approx(200.0)
    assert log == ["b"] * 7


def test_verify_pass_fused_option_adds_both_sequences_and_judges_every_k():
    m = load("verify_pass")
    assert "tpcomm_fused" not in m.parse_args(["--out", "x"]).backends
    a = m.parse_args(["--out", "x", "--fused", "--backends", "nccl,none", "--layers", "3"])
    assert a.backends == ["nccl", "none", "tpcomm", "tpcomm_fused"]
    rows = [{"backend": b, "k": k, "forward_us": t} for k in (1, 4)
            for b, t in (("tpcomm", 1000.0), ("tpcomm_fused", 990.0 if k == 1 else 1010.0))]
    f1, f4 = m.fused_targets(rows, a)
    assert f1["faster"] and f1["saved_us_per_call"] == pytest.approx(10.0 / 5)  # 2 x 3 - 1 calls
    assert not f4["faster"] and f4["unfused_us"] == 1000.0


def test_verify_pass_fused_seam_replaces_each_add_and_norm_but_the_last():
    """Stack.forward on the CPU: a reduce with add_norm gets every all-reduce that a residual add
    and an RMSNorm follow (2 x layers - 1), the last one goes through reduce, and the result is
    the unfused sequence's when add_norm computes the same."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    model = load("verify_pass_model")
    a = load("verify_pass").parse_args(["--out", "x", "--layers", "3", "--hidden", "256",
                                        "--intermediate", "512", "--context", "0"])
    stack = model.Stack(a, 0, torch.device("cpu"))
    calls = []

    def reduce(site, produce):  # one rank: the all-reduce of a partial is the partial
        out = torch.empty(2, a.hidden, dtype=torch.bfloat16)
        produce(out)
        calls.append(("reduce", site))
        return out

    def fused_reduce(site, produce):
        return reduce(site, produce)

    def add_norm(site, produce, x, gamma):
        calls.append(("add_norm", site))
        x = x + fused_reduce(site, produce)
        return F.rms_norm(x, (a.hidden,), gamma, model.EPS), x

    fused_reduce.add_norm = add_norm
    x = torch.randn(2, a.hidden).to(torch.bfloat16)
    plain = stack.forward(x, reduce)
    calls.clear()
    fused = stack.forward(x, fused_reduce)
    assert torch.equal(plain, fused)
    assert [c for c in calls if c[0] == "add_norm"] == [("add_norm", s) for s in range(5)]
    assert calls[-1] == ("reduce", 5)
