"""tpcomm's SGLang plugin against the real SGLang package (pinned in scripts/engine_contract.sh,
which installs it and runs this file; skipped where SGLang is not importable). No GPU: SGLang's
own dispatch code runs on objects built without their CUDA constructors, with tpcomm's
CustomAllreduce on the CPU and recorders for FlashInfer."""
import inspect
import logging
import os
import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from contract_common import (assert_fused_over_pull_under_write_collapse,  # noqa: E402
                             binds, call_sites, cpu_custom_allreduce, engine, plugin_fixtures,
                             probed)

sglang = engine("sglang")
sgl_plugins = engine("sglang.srt.plugins")
custom_all_reduce = engine("sglang.srt.distributed.device_communicators.custom_all_reduce")
custom_all_reduce_v2 = engine("sglang.srt.distributed.device_communicators.custom_all_reduce_v2")
parallel_state = engine("sglang.srt.distributed.parallel_state")
layernorm = engine("sglang.srt.layers.layernorm")
fi_fusion = engine("sglang.srt.layers.flashinfer_comm_fusion")
dp_attention = engine("sglang.srt.layers.dp_attention")

from tpcomm import sglang_plugin, testing  # noqa: E402
from tpcomm import torch as tt  # noqa: E402
from tpcomm.errors import TpcommFallbackRefusedError  # noqa: E402

SGLANG_ROOT = Path(sglang.__file__).parent
V2 = custom_all_reduce_v2.CustomAllReduceV2
GroupCoordinator = parallel_state.GroupCoordinator


clean_env, installed = plugin_fixtures(sglang_plugin)


def load_through_sglang(monkeypatch):
    monkeypatch.setattr(sgl_plugins, "_plugins_loaded", False)
    sgl_plugins.load_plugins()


def originals():
    return (custom_all_reduce.dispatch_custom_allreduce,
            GroupCoordinator._can_use_flashinfer_allreduce,
            layernorm._forward_with_allreduce_fusion)


def test_sglang_version_is_the_one_covered():
    from sglang.version import __version__

    assert __version__ == os.environ.get("TPCOMM_CONTRACT_SGLANG", __version__)


@pytest.mark.parametrize("env", [{"TPCOMM_SGLANG": "1"}, {"SGLANG_PLUGINS": "tpcomm"}])
def test_sglangs_loader_runs_the_plugin_when_enabled(clean_env, env):
    before = originals()
    for key, value in env.items():
        clean_env.setenv(key, value)
    load_through_sglang(clean_env)
    after = originals()
    assert all(a is not b and a._tpcomm_original is b for a, b in zip(after, before))


@pytest.mark.parametrize("env", [{}, {"TPCOMM_SGLANG": "0", "SGLANG_PLUGINS": "tpcomm"},
                                 # SGLang loads only the plugins its list names, if it has one
                                 {"TPCOMM_SGLANG": "1", "SGLANG_PLUGINS": "another_plugin"}])
def test_disabled_the_loader_changes_nothing(clean_env, env):
    before = originals()
    for key, value in env.items():
        clean_env.setenv(key, value)
    load_through_sglang(clean_env)
    assert originals() == before


# ---- which class SGLang builds
@pytest.fixture
def on_cuda(monkeypatch):
    """dispatch_custom_allreduce as it runs on an NVIDIA GPU (this machine has none)."""
    monkeypatch.setattr(custom_all_reduce, "_is_cuda", True)
    monkeypatch.setattr(custom_all_reduce_v2, "can_use_custom_all_reduce_v2",
                        lambda **kwargs: True)
    return monkeypatch


def test_where_sglang_picks_its_legacy_class_it_gets_tpcomms(installed, on_cuda):
    on_cuda.setenv("SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2", "0")
    assert custom_all_reduce.dispatch_custom_allreduce(group=None, device=None) \
        is tt.CustomAllreduce


def test_where_sglang_picks_v2_it_gets_a_v2_that_hands_the_all_reduce_to_tpcomm(installed,
                                                                               on_cuda):
    on_cuda.setenv("SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2", "1")
    cls = custom_all_reduce.dispatch_custom_allreduce(group=None, device=None)
    assert cls is not V2 and issubclass(cls, V2)  # SGLang's isinstance checks still hold
    # The overrides take what V2's methods take (GroupCoordinator calls them as V2's).
    for name in ("should_custom_ar", "custom_all_reduce", "capture", "close"):
        params = list(inspect.signature(getattr(V2, name)).parameters.values())[1:]
        positional = sum(p.default is p.empty for p in params)
        assert binds(getattr(cls, name).__get__(object()), positional, set()), name
    assert binds(cls, 2, set()) and binds(cls, 0, {"group", "device"})


def test_disabled_sglang_builds_its_own_classes(clean_env, on_cuda):
    on_cuda.setenv("SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2", "1")
    assert custom_all_reduce.dispatch_custom_allreduce(group=None, device=None) is V2
    on_cuda.setenv("SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2", "0")
    assert custom_all_reduce.dispatch_custom_allreduce(group=None, device=None) \
        is custom_all_reduce.CustomAllreduce


def v2_with_tpcomm(monkeypatch):
    """tpcomm's V2 subclass, its V2 half a recorder (V2's constructor needs GPUs)."""
    cls = sglang_plugin.with_tpcomm(V2)
    obj = object.__new__(cls)
    obj.tpcomm = cpu_custom_allreduce(monkeypatch)
    obj.__dict__.update(disabled=False, max_size=1 << 20)
    return obj


def test_the_v2_subclass_serves_the_all_reduce_and_fused_norm_with_tpcomm(installed,
                                                                         monkeypatch):
    obj = v2_with_tpcomm(monkeypatch)
    monkeypatch.setattr(V2, "custom_all_reduce", lambda self, inp: "v2")
    x = torch.ones(4, 64, dtype=torch.bfloat16)
    assert obj.should_custom_ar(x) and torch.equal(obj.custom_all_reduce(x), x * 2)
    big = torch.ones(1 << 20, dtype=torch.bfloat16)  # above tpcomm's max_size: V2's
    monkeypatch.setattr(V2, "should_custom_ar", lambda self, inp: True)
    assert obj.custom_all_reduce(big) == "v2"
    x, residual, weight = tensors()
    norm, res = obj.fused_allreduce_rmsnorm(x, residual, weight, 1e-6)
    want = testing.add_rmsnorm_reference(x.float() * 2, residual, weight, 1e-6)
    assert torch.equal(norm, want[0]) and torch.equal(res, want[1])


# ---- every use SGLang makes of ca_comm exists with SGLang's call
def test_every_call_sglang_makes_on_ca_comm_binds(monkeypatch):
    path = SGLANG_ROOT / "srt/distributed/parallel_state.py"
    uses = call_sites(path, {"ca_comm", "self.ca_comm"})
    optional = probed(path)  # looked up with hasattr/getattr: absent means "not handled"
    assert {"custom_all_reduce", "should_custom_ar", "capture", "disabled"} <= set(uses)
    ca = cpu_custom_allreduce(monkeypatch)
    for name, sites in uses.items():
        if name in optional and not hasattr(ca, name):
            continue
        assert hasattr(ca, name), f"SGLang uses ca_comm.{name} at lines {sites}"
        for line, positional, keywords in sites:
            if positional >= 0:
                assert binds(getattr(ca, name), positional, keywords), (line, name)
    assert "fused_allreduce_rmsnorm" in optional and hasattr(ca, "fused_allreduce_rmsnorm")


# ---- SGLang's dispatch
def coordinator(ca, **fields):
    group = object.__new__(GroupCoordinator)  # SGLang's class; its constructor skipped
    group.__dict__.update(dict(
        ca_comm=ca, qr_comm=None, pymscclpp_comm=None, torch_symm_mem_comm=None,
        pynccl_comm=None, pcie_ipc_comm=None, world_size=2, unique_name="tp",
        _fi_workspace_hint="tp", device_group=None, cpu_group=None), **fields)
    return group


@pytest.fixture
def flashinfer_would_take_it(monkeypatch):
    monkeypatch.setattr(fi_fusion, "can_use_flashinfer_allreduce", lambda *a, **k: True)


def test_flashinfer_all_reduce_is_declined_while_tpcomm_takes_the_input(
        installed, monkeypatch, flashinfer_would_take_it):
    ca = cpu_custom_allreduce(monkeypatch)
    group, x = coordinator(ca), torch.ones(4, 64, dtype=torch.bfloat16)
    assert group._can_use_flashinfer_allreduce(x) is False
    assert group._resolve_outplace_all_reduce_method(x) == "ca"
    assert torch.equal(group._all_reduce_out_place(x, "ca"), x * 2)
    assert [c[0] for c in ca.calls] == ["custom_all_reduce"]
    ca.max_size = 16  # an input tpcomm declines: FlashInfer's again
    assert group._can_use_flashinfer_allreduce(x) is True


def test_disabled_sglang_tries_flashinfer_first(clean_env, monkeypatch,
                                                flashinfer_would_take_it):
    group = coordinator(cpu_custom_allreduce(monkeypatch))
    assert group._can_use_flashinfer_allreduce(torch.ones(4, 64, dtype=torch.bfloat16)) is True


def tensors(t=3, h=256, dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(7)
    return (torch.randn(t, h, generator=g).to(dtype), torch.randn(t, h, generator=g).to(dtype),
            (torch.rand(h, generator=g) + 0.5).to(dtype))


@pytest.fixture
def fusion_setup(monkeypatch):
    """The attention-TP group served by a CPU tpcomm; FlashInfer's fused op a recorder."""
    ca = cpu_custom_allreduce(monkeypatch)
    group = coordinator(ca)
    monkeypatch.setattr(parallel_state, "get_attn_tp_group", lambda: group)
    monkeypatch.setattr(layernorm, "get_parallel", lambda: types.SimpleNamespace(
        attn_tp_size=2, moe_ep_size=1, moe_tp_size=2))
    flashinfer = []
    monkeypatch.setattr(fi_fusion, "flashinfer_allreduce_residual_rmsnorm",
                        lambda **kw: flashinfer.append(kw) or ("fi_norm", "fi_residual"))
    return ca, flashinfer


def test_the_flashinfer_fusion_path_becomes_tpcomms_fused_op(installed, fusion_setup):
    ca, flashinfer = fusion_setup
    x, residual, weight = tensors()
    extra = torch.full_like(residual, 0.5)
    norm = types.SimpleNamespace(variance_epsilon=1e-6)
    got = layernorm._forward_with_allreduce_fusion(norm, x, residual, extra, weight)
    want = testing.add_rmsnorm_reference(x.float() * 2, residual + extra, weight, 1e-6)
    assert flashinfer == [] and torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_under_a_write_collapse_verdict_the_fusion_path_still_reaches_a_fused_pull_kernel(
        installed, fusion_setup):
    # SGLang's fusion path reads no fabric verdict: it calls tpcomm's fused op on every box...
    test_the_flashinfer_fusion_path_becomes_tpcomms_fused_op(installed, fusion_setup)
    # ...which tpcomm runs fused, by pulls, on the simulated collapsing PCIe box.
    assert_fused_over_pull_under_write_collapse()


def test_disabled_the_fusion_path_is_flashinfers(clean_env, fusion_setup):
    ca, flashinfer = fusion_setup
    x, residual, weight = tensors()
    norm = types.SimpleNamespace(variance_epsilon=1e-6)
    assert layernorm._forward_with_allreduce_fusion(norm, x, residual, None, weight) == \
        ("fi_norm", "fi_residual")
    assert len(flashinfer) == 1


def test_a_fused_call_tpcomm_declines_is_an_error_under_strict(installed, fusion_setup):
    ca, flashinfer = fusion_setup
    x, residual, weight = tensors()
    norm = types.SimpleNamespace(variance_epsilon=1e-6)
    weight = weight.float()  # not the input's dtype: tpcomm says "not handled"
    assert layernorm._forward_with_allreduce_fusion(norm, x, residual, None, weight) == \
        ("fi_norm", "fi_residual")
    installed.setenv("TPCOMM_STRICT", "1")
    with pytest.raises(TpcommFallbackRefusedError, match="fused all-reduce"):
        layernorm._forward_with_allreduce_fusion(norm, x, residual, None, weight)


def test_the_plugin_line_goes_through_sglangs_logger(clean_env, caplog):
    clean_env.setenv("SGLANG_PLUGINS", "tpcomm")
    with caplog.at_level(logging.INFO):
        load_through_sglang(clean_env)
        logging.getLogger("tpcomm").info("tpcomm CustomAllreduce: probe line")
    lines = [(r.name, r.getMessage()) for r in caplog.records if "tpcomm" in r.getMessage()]
    plugin = [m for n, m in lines if "tpcomm SGLang plugin" in m]
    assert len(plugin) == 1 and "replaced custom all-reduce" in plugin[0]
    assert any(m.endswith("probe line") for n, m in lines)
    assert {n for n, m in lines} <= {"sglang.srt.plugins.tpcomm", "tpcomm",
                                     "sglang.srt.plugins"}


# ---- SGLang's QuickReduce option, passed through to tpcomm's quantized wire
# (test_engine_wire.py has the mapping)
@pytest.fixture(autouse=True)
def no_wire_env(monkeypatch):
    """Every test here starts with SGLang's QuickReduce variables and TPCOMM_WIRE unset."""
    for name in (*sglang_plugin.WIRE_ENV, "TPCOMM_WIRE"):
        if name:
            monkeypatch.delenv(name, raising=False)


def test_sglang_still_reads_the_quickreduce_variables_the_plugin_reads():
    """A release that renames them, or changes the quantization's values, fails here rather
    than leaving the option silently unread."""
    import ast

    quick_reduce = engine("sglang.srt.distributed.device_communicators.quick_all_reduce")
    tree = ast.parse(Path(quick_reduce.__file__).read_text())
    read = {n.args[0].value for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args
            and ast.unparse(n.func) in ("os.environ.get", "os.getenv")
            and isinstance(n.args[0], ast.Constant)}
    assert {name for name in sglang_plugin.WIRE_ENV if name} <= read, read
    assert sglang_plugin.WIRE_ENV[1] is None  # SGLang has no minimum-size variable: say so if
    assert not [name for name in read if "MIN_SIZE" in name]  # one comes
    assert list(quick_reduce.QuickReduceRegime.__members__) == list(sglang_plugin.WIRE_VALUES)


def test_with_quickreduce_quantization_both_classes_carry_the_wire(clean_env, on_cuda):
    clean_env.setenv("ROCM_QUICK_REDUCE_QUANTIZATION", "INT4")
    replaced = sglang_plugin.install()
    assert "quantized wire int4 from ROCM_QUICK_REDUCE_QUANTIZATION=INT4 (all-reduces up to " \
        "2048 MiB)" in replaced
    on_cuda.setenv("SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2", "0")
    legacy = custom_all_reduce.dispatch_custom_allreduce(group=None, device=None)
    assert legacy is not tt.CustomAllreduce and issubclass(legacy, tt.CustomAllreduce)
    assert legacy.wire_options == {"config": {"wire": "int4"}, "max_size": 2048 << 20}
    on_cuda.setenv("SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2", "1")
    cls = custom_all_reduce.dispatch_custom_allreduce(group=None, device=None)
    assert cls is not V2 and issubclass(cls, V2)
    # Built without V2's GPU constructor, its tpcomm half on the CPU (disabled, max_size set).
    on_cuda.setattr(V2, "__init__",
                    lambda self, *args, **kwargs: self.__dict__.update(disabled=True))
    on_cuda.setattr(tt, "dist", types.SimpleNamespace(get_rank=lambda group: 0,
                                                      get_world_size=lambda group: 2))
    obj = cls(object(), "cpu")
    assert isinstance(obj.tpcomm, legacy) and obj.tpcomm.max_size == 2048 << 20
