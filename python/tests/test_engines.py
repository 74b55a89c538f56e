"""What the engine plugins share (tpcomm.engines) and the fusion passes' graph rewrite
(tpcomm._fx_fusion), without an engine. The plugins against the real engines:
test_contract_vllm.py, test_contract_sglang.py."""
import logging

import pytest

from tpcomm import engines
from tpcomm.errors import TpcommFallbackRefusedError


@pytest.mark.parametrize("env, on", [
    ({}, False),
    ({"TPCOMM_VLLM": "1"}, True),
    ({"TPCOMM_VLLM": "0", "VLLM_PLUGINS": "tpcomm"}, False),  # the switch wins
    ({"VLLM_PLUGINS": "lora_filesystem_resolver, tpcomm"}, True),
    ({"VLLM_PLUGINS": "lora_filesystem_resolver"}, False),
    ({"TPCOMM_VLLM": ""}, False),
])
def test_enabled_by_the_switch_or_the_engines_plugin_list(monkeypatch, env, on):
    monkeypatch.delenv("TPCOMM_VLLM", raising=False)
    monkeypatch.delenv("VLLM_PLUGINS", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert engines.enabled("TPCOMM_VLLM", "VLLM_PLUGINS") is on


def test_a_bypass_is_logged_once_or_refused_under_strict(monkeypatch, caplog):
    log = logging.getLogger("engine.test")
    bypass = engines.Bypasses(log)
    monkeypatch.delenv("TPCOMM_STRICT", raising=False)
    with caplog.at_level(logging.INFO, logger="engine.test"):
        bypass("an all-reduce", "above max_size")
        bypass("an all-reduce", "above max_size")
    assert [r.getMessage() for r in caplog.records].count(
        "tpcomm plugin: an all-reduce is left to the engine (above max_size; logged once)") == 1
    monkeypatch.setenv("TPCOMM_STRICT", "1")
    with pytest.raises(TpcommFallbackRefusedError, match="an all-reduce.*above max_size"):
        bypass("an all-reduce", "above max_size")


def test_patches_are_undone_and_not_stacked():
    class Owner:
        def method(self):
            return "engine"

    def wrap(original):
        def method(self):
            return "tpcomm+" + original(self)
        return method

    patches = engines.Patches()
    patches.replace(Owner, "method", wrap(Owner.method))
    patches.replace(Owner, "method", wrap(Owner.method))  # a plugin loaded twice
    patches.replace(Owner, "added", 1)
    assert Owner().method() == "tpcomm+engine" and Owner.added == 1
    patches.undo()
    assert Owner().method() == "engine" and not hasattr(Owner, "added")


def test_tpcomm_records_reach_the_engines_logger(monkeypatch):
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append((record.name, record.getMessage()))

    target = logging.getLogger("engine.logs")
    target.setLevel(logging.INFO)
    target.propagate = False
    target.addHandler(Keep())
    tpcomm_logger = logging.getLogger("tpcomm")
    monkeypatch.setattr(tpcomm_logger, "handlers", [])
    monkeypatch.setattr(tpcomm_logger, "propagate", True)
    monkeypatch.setattr(tpcomm_logger, "level", logging.NOTSET)
    engines.forward_logs(target)
    engines.forward_logs(target)  # twice: still one line per record
    tpcomm_logger.info("tpcomm CustomAllreduce: rank 0/2")
    tpcomm_logger.debug("not at INFO")
    assert seen == [("tpcomm", "tpcomm CustomAllreduce: rank 0/2")]


# ---- the graph rewrite, over ops laid out like vLLM's (the real ones: test_contract_vllm.py)
torch = pytest.importorskip("torch")
if not hasattr(torch.library, "custom_op"):
    pytest.skip("torch.library.custom_op needs torch >= 2.4", allow_module_level=True)

import fx_stand_ins as fx  # noqa: E402

from tpcomm import _fx_fusion  # noqa: E402
from tpcomm import torch as tt  # noqa: E402


@pytest.fixture
def comm_id():
    cid = tt._torch_ops.register_runner(fx.run_on_cpu)
    yield cid
    tt.unregister_communicator(cid)


def tensors(dtype=torch.bfloat16, t=4, h=128):
    g = torch.Generator().manual_seed(3)
    return (torch.randn(t, h, generator=g).to(dtype), torch.randn(t, h, generator=g).to(dtype),
            (torch.rand(h, generator=g) + 0.5).to(dtype))


def test_all_reduce_then_add_rmsnorm_becomes_the_fused_op(comm_id):
    args = tensors()
    gm, n = fx.rewrite(fx.layer, args, comm_id)
    assert n == 1
    targets = fx.targets(gm)
    assert _fx_fusion.FUSED in targets and fx.AR not in targets and fx.NORM not in targets
    got, want = gm(*args), fx.layer(*args)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_the_last_layers_norm_whose_residual_nobody_reads_is_fused_too(comm_id):
    """vLLM's pass has this form as a second pattern (the end of the graph)."""
    args = tensors()

    def last(x, residual, weight):
        return fx.layer(x, residual, weight)[0]

    gm, n = fx.rewrite(last, args, comm_id)
    assert n == 1 and fx.NORM not in fx.targets(gm)
    assert torch.equal(gm(*args), last(*args))


def ints(n, rank, dtype, seed=0):
    """gpu_common.ints on the CPU: the GPU test's data."""
    i = torch.arange(n, dtype=torch.int64)
    return ((i * 7 + rank * 3 + seed * 5) % 17 - 8).to(dtype)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "aot_eager"])
def test_the_gpu_tests_rewritten_graph_equals_the_unfused_one_on_the_cpu(compiled):
    """The graph test_gpu_plugin_fusion.py runs (8 x 7168 bf16 integers, a consumer after the
    norm, one graph per rank with its own comm_id), here with the fused op served on the CPU:
    both outputs, in the engine's order (norm, residual_out), equal the unfused graph's, and the
    residual the ranks share is read, not written (the fused op is out of place, as vLLM's
    fused_add_rms_norm IR op and FlashInfer's replacement are)."""
    t, h = 8, 7168
    residual = ints(t * h, 5, torch.bfloat16, 1).view(t, h)
    weight = (torch.rand(h, generator=torch.Generator().manual_seed(0)) + 0.5).bfloat16()
    residual_before = residual.clone()
    ids = [tt._torch_ops.register_runner(fx.run_on_cpu) for _ in range(fx.WORLD)]
    try:
        for rank, cid in enumerate(ids):
            x = ints(t * h, rank, torch.bfloat16).view(t, h)
            gm, n = fx.rewrite(fx.layer, (x, residual, weight), cid)
            assert n == 1 and fx.NORM not in fx.targets(gm), gm.graph
            want_out, want_res = fx.layer(x, residual, weight)  # before: the inputs as given
            run = torch.compile(gm, backend="aot_eager", fullgraph=True) if compiled else gm
            out, res = run(x, residual, weight)
            assert torch.equal(res, want_res), f"residual_out, rank {rank}"
            assert torch.equal(out, want_out), f"norm, rank {rank}"
            assert torch.equal(residual, residual_before), f"residual written, rank {rank}"
    finally:
        for cid in ids:
            tt.unregister_communicator(cid)


def test_what_the_fused_op_cannot_take_is_left_as_it_is(comm_id):
    x, r, w = tensors()
    AR, NORM = fx.AR, fx.NORM

    def reused(x, residual, weight):  # the all-reduce's result is read twice
        y = AR(x, "tp:0")
        out, res = NORM(y, residual, weight, 1e-6)
        return out, res, y

    def variance(x, residual, weight):
        return NORM(AR(x, "tp:0"), residual, weight, 1e-6, 64)

    cases = [(reused, (x, r, w), "tp:0"), (variance, (x, r, w), "tp:0"),
             (fx.layer, (x, r, w.float()), "tp:0"),  # Gemma-style fp32 weight
             (fx.layer, (x, r, w), "dp:0")]  # another group's all-reduce
    for fn, args, group in cases:
        gm, n = fx.rewrite(fn, args, comm_id, group)
        assert n == 0 and AR in fx.targets(gm), fn.__name__
