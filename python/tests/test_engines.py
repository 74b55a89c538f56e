"""What the engine plugins share (tpcomm.engines) and the fusion passes' graph rewrite
(tpcomm._fx_fusion), without an engine. The plugins against the real engines:
test_contract_vllm.py, test_contract_sglang.py."""
import logging
from typing import Optional, Tuple

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

from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

from tpcomm import _fx_fusion, testing  # noqa: E402
from tpcomm import torch as tt  # noqa: E402


@torch.library.custom_op("tpcomm_engines_test::all_reduce", mutates_args=())
def fake_all_reduce(x: torch.Tensor, group_name: str) -> torch.Tensor:
    return x * 2  # two ranks holding the same partial


@fake_all_reduce.register_fake
def _(x, group_name):
    return torch.empty_like(x)


@torch.library.custom_op("tpcomm_engines_test::add_rmsnorm", mutates_args=())
def fake_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
                     variance_size: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    return testing.add_rmsnorm_reference(x, residual, weight, eps)


@fake_add_rmsnorm.register_fake
def _(x, residual, weight, eps, variance_size=None):
    return torch.empty_like(x), torch.empty_like(residual)


AR = torch.ops.tpcomm_engines_test.all_reduce.default
NORM = torch.ops.tpcomm_engines_test.add_rmsnorm.default


def run_on_cpu(input, residual_in, residual_out, out, weight, eps, weight_offset, scale):
    o, r = testing.add_rmsnorm_reference(input.float() * 2, residual_in, weight, eps)
    residual_out.copy_(r)
    out.copy_(o)


@pytest.fixture
def comm_id():
    cid = tt._torch_ops.register_runner(run_on_cpu)
    yield cid
    tt.unregister_communicator(cid)


def tensors(dtype=torch.bfloat16, t=4, h=128):
    g = torch.Generator().manual_seed(3)
    return (torch.randn(t, h, generator=g).to(dtype), torch.randn(t, h, generator=g).to(dtype),
            (torch.rand(h, generator=g) + 0.5).to(dtype))


def layer(x, residual, weight):
    out, res = NORM(AR(x, "tp:0"), residual, weight, 1e-6)
    return out + 1, res


def rewrite(fn, args, cid, group="tp:0"):
    gm = make_fx(fn, tracing_mode="fake")(*args)
    n = _fx_fusion.fuse_allreduce_add_rmsnorm(gm.graph, AR, NORM,
                                              lambda node: node.args[1] == group, cid)
    gm.recompile()
    return gm, n


def targets(gm):
    return [node.target for node in gm.graph.nodes if node.op == "call_function"]


def test_all_reduce_then_add_rmsnorm_becomes_the_fused_op(comm_id):
    args = tensors()
    gm, n = rewrite(layer, args, comm_id)
    assert n == 1
    assert _fx_fusion.FUSED in targets(gm) and AR not in targets(gm) and NORM not in targets(gm)
    got, want = gm(*args), layer(*args)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_what_the_fused_op_cannot_take_is_left_as_it_is(comm_id):
    x, r, w = tensors()

    def reused(x, residual, weight):  # the all-reduce's result is read twice
        y = AR(x, "tp:0")
        out, res = NORM(y, residual, weight, 1e-6)
        return out, res, y

    def variance(x, residual, weight):
        return NORM(AR(x, "tp:0"), residual, weight, 1e-6, 64)

    cases = [(reused, (x, r, w), "tp:0"), (variance, (x, r, w), "tp:0"),
             (layer, (x, r, w.float()), "tp:0"),  # Gemma-style fp32 weight
             (layer, (x, r, w), "dp:0")]  # another group's all-reduce
    for fn, args, group in cases:
        gm, n = rewrite(fn, args, comm_id, group)
        assert n == 0 and AR in targets(gm), fn.__name__
