"""tpcomm's vLLM plugin against the real vLLM package (pinned in scripts/engine_contract.sh,
which installs it with a CPU-usable torch and runs this file; skipped where vLLM is not
importable). No GPU: vLLM's own dispatch code runs on objects built without their CUDA
constructors, with tpcomm's CustomAllreduce on the CPU and a recorder for FlashInfer."""
import ast
import contextlib
import inspect
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from contract_common import (Spy, assert_fused_over_pull_under_write_collapse,  # noqa: E402
                             binds, call_sites, cpu_custom_allreduce, engine, plugin_fixtures)

vllm = engine("vllm")
plugins = engine("vllm.plugins")
cuda_communicator = engine("vllm.distributed.device_communicators.cuda_communicator")
custom_all_reduce = engine("vllm.distributed.device_communicators.custom_all_reduce")
parallel_state = engine("vllm.distributed.parallel_state")
pass_manager = engine("vllm.compilation.passes.pass_manager")
engine("vllm.ir.ops")

from tpcomm import _fx_fusion, testing, vllm_plugin  # noqa: E402
from tpcomm import torch as tt  # noqa: E402
from tpcomm.errors import TpcommFallbackRefusedError  # noqa: E402

VLLM_ROOT = Path(vllm.__file__).parent
CudaCommunicator = cuda_communicator.CudaCommunicator


clean_env, installed = plugin_fixtures(vllm_plugin)


def load_through_vllm(monkeypatch):
    """vLLM's own loader, as each of its processes runs it."""
    monkeypatch.setattr(plugins, "plugins_loaded", False)
    plugins.load_general_plugins()


def test_vllm_version_is_the_one_covered():
    assert vllm.__version__ == os.environ.get("TPCOMM_CONTRACT_VLLM", vllm.__version__)


@pytest.mark.parametrize("env", [{"TPCOMM_VLLM": "1"}, {"VLLM_PLUGINS": "tpcomm"}])
def test_vllms_loader_runs_the_plugin_when_enabled(clean_env, env):
    for key, value in env.items():
        clean_env.setenv(key, value)
    load_through_vllm(clean_env)
    assert custom_all_reduce.CustomAllreduce is tt.CustomAllreduce
    assert CudaCommunicator.all_reduce._tpcomm_original is not None
    assert pass_manager.AllReduceFusionPass.__name__ == "TpcommAllReduceFusionPass"


@pytest.mark.parametrize("env", [{}, {"TPCOMM_VLLM": "0", "VLLM_PLUGINS": "tpcomm"},
                                 {"VLLM_PLUGINS": "lora_filesystem_resolver"},
                                 # vLLM loads only the plugins its list names, if it has one
                                 {"TPCOMM_VLLM": "1", "VLLM_PLUGINS": "lora_filesystem_resolver"}])
def test_disabled_the_loader_changes_nothing(clean_env, env):
    before = (custom_all_reduce.CustomAllreduce, CudaCommunicator.all_reduce,
              getattr(pass_manager, "AllReduceFusionPass", None))
    for key, value in env.items():
        clean_env.setenv(key, value)
    load_through_vllm(clean_env)
    after = (custom_all_reduce.CustomAllreduce, CudaCommunicator.all_reduce,
             getattr(pass_manager, "AllReduceFusionPass", None))
    assert after == before and before[0] is not tt.CustomAllreduce


# ---- every use vLLM makes of its custom all-reduce object exists, with vLLM's signature
def ca_uses():
    files = [VLLM_ROOT / "distributed/device_communicators/cuda_communicator.py",
             VLLM_ROOT / "distributed/parallel_state.py"]
    files += sorted((VLLM_ROOT / "models").rglob("*.py"))
    uses = {}
    for path in files:
        text = path.read_text()
        if "ca_comm" not in text:
            continue
        for name, sites in call_sites(path, {"ca_comm", "self.ca_comm"}).items():
            uses.setdefault(name, []).extend((path.relative_to(VLLM_ROOT), *s) for s in sites)
    return uses


def test_every_attribute_and_call_vllm_makes_on_ca_comm_binds(monkeypatch):
    ca = cpu_custom_allreduce(monkeypatch)
    uses = ca_uses()
    assert {"custom_all_reduce", "should_custom_ar", "custom_all_gather",
            "custom_reduce_scatter", "capture", "disabled"} <= set(uses)  # the scan works
    for name, sites in uses.items():
        assert hasattr(ca, name), f"vLLM uses ca_comm.{name} at {sites}"
        for where, line, positional, keywords in sites:
            if positional >= 0:
                assert binds(getattr(ca, name), positional, keywords), (where, line, name)
    # vLLM's own class: every method vLLM calls takes what vLLM's signature takes.
    for name in uses:
        theirs = getattr(custom_all_reduce.CustomAllreduce, name, None)
        if inspect.isfunction(theirs):
            params = list(inspect.signature(theirs).parameters.values())[1:]
            positional = sum(p.default is p.empty and p.kind == p.POSITIONAL_OR_KEYWORD
                             for p in params)
            assert binds(getattr(ca, name), positional, set()), name


def test_the_constructor_takes_cuda_communicators_call():
    tree = ast.parse(Path(cuda_communicator.__file__).read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == "CustomAllreduce"]
    assert calls  # CudaCommunicator.__init__ builds the TP group's one
    for call in calls:
        keywords = {k.arg for k in call.keywords}
        assert {"group", "device"} <= keywords
        assert binds(tt.CustomAllreduce, len(call.args), keywords), ast.unparse(call)


# ---- vLLM's dispatch reaches tpcomm when enabled, and is vLLM's own when not
def communicator(ca, **backends):
    comm = object.__new__(CudaCommunicator)  # vLLM's class; its CUDA constructor skipped
    fields = dict(ca_comm=ca, fi_ar_comm=None, fi_pcie_ipc_ar_comm=None, qr_comm=None,
                  aiter_ar_comm=None, use_aiter_allreduce=False, symm_mem_comm=None,
                  pynccl_comm=None, world_size=2, unique_name="tp:0")
    fields.update(backends)
    comm.__dict__.update(fields)
    return comm


def test_all_reduce_asks_tpcomm_before_flashinfer(installed, monkeypatch):
    ca, flashinfer = cpu_custom_allreduce(monkeypatch), Spy()
    x = torch.ones(8, 16, dtype=torch.bfloat16)
    out = CudaCommunicator.all_reduce(communicator(ca, fi_ar_comm=flashinfer), x)
    assert [c[0] for c in ca.calls] == ["custom_all_reduce"] and torch.equal(out, x * 2)
    assert flashinfer.calls == []


def test_disabled_vllm_tries_flashinfer_first(clean_env, monkeypatch):
    ca, flashinfer = cpu_custom_allreduce(monkeypatch), Spy(all_reduce="flashinfer")
    x = torch.ones(8, 16, dtype=torch.bfloat16)
    assert CudaCommunicator.all_reduce(communicator(ca, fi_ar_comm=flashinfer), x) == \
        "flashinfer"
    assert ca.calls == [] and [c[0] for c in flashinfer.calls] == ["should_use_fi_ar",
                                                                  "all_reduce"]


def test_an_input_tpcomm_declines_goes_vllms_way_or_fails_under_strict(installed, monkeypatch):
    ca, flashinfer = cpu_custom_allreduce(monkeypatch), Spy(all_reduce="flashinfer")
    ca.max_size = 16
    x = torch.ones(8, 16, dtype=torch.bfloat16)
    comm = communicator(ca, fi_ar_comm=flashinfer)
    assert CudaCommunicator.all_reduce(comm, x) == "flashinfer"
    installed.setenv("TPCOMM_STRICT", "1")
    with pytest.raises(TpcommFallbackRefusedError, match="all-reduce"):
        CudaCommunicator.all_reduce(comm, x)


@pytest.mark.parametrize("method", ["custom_all_gather", "custom_reduce_scatter"])
def test_sequence_parallel_collectives_reach_tpcomms_methods(installed, monkeypatch, method):
    ca = cpu_custom_allreduce(monkeypatch)
    got = []
    monkeypatch.setattr(ca, method, lambda inp: got.append(inp) or "tpcomm")
    x = torch.ones(4, 8).t()  # vLLM makes it contiguous before handing it over
    assert getattr(CudaCommunicator, method)(communicator(ca), x) == "tpcomm"
    assert len(got) == 1 and got[0].is_contiguous() and torch.equal(got[0], x)


def test_graph_capture_enters_tpcomms_capture(installed, monkeypatch):
    ca = cpu_custom_allreduce(monkeypatch)
    group = object.__new__(parallel_state.GroupCoordinator)
    group.__dict__["device_communicator"] = communicator(ca)
    stream = object()
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: stream)  # no GPU here
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    with group.graph_capture(parallel_state.GraphCaptureContext(stream)):
        assert ca._IS_CAPTURING
    assert not ca._IS_CAPTURING


# ---- the fusion pass
def traced_layer():
    """What vLLM's compiled graph holds for a layer's tail: its all-reduce op, then its IR op
    fused_add_rms_norm (the pattern vLLM's AllReduceFusionPass matches)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def layer(x, residual, weight):
        y = torch.ops.vllm.all_reduce(x, "tp:0")
        return torch.ops.vllm_ir.fused_add_rms_norm(y, residual, weight, 1e-6)

    g = torch.Generator().manual_seed(5)
    args = (torch.randn(4, 256, generator=g).bfloat16(),
            torch.randn(4, 256, generator=g).bfloat16(),
            (torch.rand(256, generator=g) + 0.5).bfloat16())
    return make_fx(layer, tracing_mode="fake")(*args), args


def fusion_pass(monkeypatch, ca):
    tp = object.__new__(parallel_state.GroupCoordinator)
    tp.__dict__.update(world_size=2, unique_name="tp:0", device_communicator=communicator(ca))
    monkeypatch.setattr(parallel_state, "get_tp_group", lambda: tp)
    cls = pass_manager.AllReduceFusionPass
    assert cls.__name__ == "TpcommAllReduceFusionPass"
    from vllm.config import CompilationConfig

    # What VllmInductorPass reads of a VllmConfig (a whole one infers a device: none here).
    config = types.SimpleNamespace(compilation_config=CompilationConfig(), model_config=None,
                                   device_config=None)
    return cls(config)


def test_the_fuse_allreduce_rms_pass_emits_tpcomms_op(installed, monkeypatch):
    ca = cpu_custom_allreduce(monkeypatch)
    gm, (x, residual, weight) = traced_layer()
    ops = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert torch.ops.vllm.all_reduce.default in ops  # vLLM's ops, as its pattern names them
    p = fusion_pass(monkeypatch, ca)
    assert p.is_applicable_for_range(None)
    p(gm.graph)
    gm.recompile()
    ops = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert ops.count(_fx_fusion.FUSED) == 1 and torch.ops.vllm.all_reduce.default not in ops
    out, res = gm(x, residual, weight)
    want_out, want_res = testing.add_rmsnorm_reference(x.float() * 2, residual, weight, 1e-6)
    assert torch.equal(res, want_res) and torch.equal(out, want_out)
    # vLLM's own IR op computes the same epilogue: the rewrite keeps the model's numbers.
    ref_out, ref_res = torch.ops.vllm_ir.fused_add_rms_norm(x * 2, residual, weight, 1e-6)
    torch.testing.assert_close(out, ref_out, atol=2e-2, rtol=2e-2)
    assert torch.equal(res, ref_res)


def test_under_a_write_collapse_verdict_the_pass_still_reaches_a_fused_pull_kernel(installed,
                                                                                  monkeypatch):
    # The pass reads no fabric verdict: it emits tpcomm's op on every box...
    test_the_fuse_allreduce_rms_pass_emits_tpcomms_op(installed, monkeypatch)
    # ...and on the PCIe box whose switches collapse peer writes, tpcomm runs that op fused, by
    # pulls (what the library's planner says for the simulated box).
    assert_fused_over_pull_under_write_collapse()


def test_without_a_tpcomm_communicator_the_pass_stands_aside_or_fails_strict(installed,
                                                                             monkeypatch):
    ca = cpu_custom_allreduce(monkeypatch)
    ca.disabled, ca.disabled_reason = True, "no P2P"
    assert not fusion_pass(monkeypatch, ca).is_applicable_for_range(None)
    installed.setenv("TPCOMM_STRICT", "1")
    with pytest.raises(TpcommFallbackRefusedError, match="fuse_allreduce_rms.*no P2P"):
        fusion_pass(monkeypatch, ca)


# ---- logging through vLLM's logger
def test_the_plugin_line_and_tpcomms_lines_print_through_vllms_logger(tmp_path):
    code = ("import logging\n"
            "from vllm.config.logging import LoggingConfig\n"
            "from vllm.logger import configure_logging\n"
            "configure_logging(LoggingConfig())  # each vLLM process starts with it\n"
            "from vllm.plugins import load_general_plugins\n"
            "load_general_plugins()\n"
            "logging.getLogger('tpcomm').info('tpcomm CustomAllreduce: probe line')\n")
    env = dict(os.environ, TPCOMM_VLLM="1", VLLM_LOGGING_LEVEL="INFO")
    env.pop("VLLM_PLUGINS", None)
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    lines = [ln for ln in out.splitlines() if "tpcomm" in ln]
    plugin_line = [ln for ln in lines if "tpcomm vLLM plugin" in ln]
    assert len(plugin_line) == 1, out
    assert "INFO" in plugin_line[0] and "replaced custom all-reduce" in plugin_line[0]
    assert f"vLLM {vllm.__version__}" in plugin_line[0] and "Left to vLLM" in plugin_line[0]
    assert any("probe line" in ln and "INFO" in ln for ln in lines), out


# ---- vLLM's QuickReduce option, passed through to tpcomm's quantized wire (test_engine_wire.py
# has the mapping)
@pytest.fixture(autouse=True)
def no_wire_env(monkeypatch):
    """Every test here starts with vLLM's QuickReduce variables and TPCOMM_WIRE unset."""
    for name in (*vllm_plugin.WIRE_ENV, "TPCOMM_WIRE"):
        monkeypatch.delenv(name, raising=False)


def test_vllm_still_has_the_quickreduce_variables_the_plugin_reads():
    """A release that renames them, or changes the quantization's values, fails here rather
    than leaving the option silently unread."""
    envs = engine("vllm.envs")
    quick_reduce = engine("vllm.distributed.device_communicators.quick_all_reduce")
    quant, min_kb, max_mb = vllm_plugin.WIRE_ENV
    assert {quant, min_kb, max_mb} <= set(envs.environment_variables)
    tree = ast.parse(Path(envs.__file__).read_text())
    choices = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
               and ast.unparse(n.func) == "env_with_choices" and n.args
               and isinstance(n.args[0], ast.Constant) and n.args[0].value == quant]
    assert len(choices) == 1, f"vllm/envs.py: env_with_choices({quant!r}, ...) not found"
    default, values = ast.literal_eval(choices[0].args[1]), ast.literal_eval(choices[0].args[2])
    assert default == "NONE"  # off by default in vLLM too
    assert set(values) == set(vllm_plugin.WIRE_VALUES) == set(quick_reduce.QuickReduceRegime
                                                              .__members__)


def test_with_quickreduce_quantization_the_plugin_installs_the_wire_class(clean_env):
    clean_env.setenv("VLLM_ROCM_QUICK_REDUCE_QUANTIZATION", "INT8")
    clean_env.setenv("VLLM_ROCM_QUICK_REDUCE_QUANTIZATION_MIN_SIZE_KB", "256")
    clean_env.setenv("VLLM_ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB", "64")
    replaced = vllm_plugin.install()
    cls = custom_all_reduce.CustomAllreduce
    assert cls is not tt.CustomAllreduce and issubclass(cls, tt.CustomAllreduce)
    assert cls.wire_options == {"config": {"wire": "int8", "wire_min_bytes": 256 * 1024},
                                "max_size": 64 << 20}
    assert "quantized wire int8 from VLLM_ROCM_QUICK_REDUCE_QUANTIZATION=INT8 (from 256 KB, " \
        "VLLM_ROCM_QUICK_REDUCE_QUANTIZATION_MIN_SIZE_KB=256; all-reduces up to 64 MiB)" in replaced
    tree = ast.parse(Path(cuda_communicator.__file__).read_text())
    for call in [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Name) and n.func.id == "CustomAllreduce"]:
        assert binds(cls, len(call.args), {k.arg for k in call.keywords}), ast.unparse(call)
    done = len(vllm_plugin.patches.done)
    vllm_plugin.install()  # vLLM may load a plugin twice: nothing replaced again
    assert len(vllm_plugin.patches.done) == done and custom_all_reduce.CustomAllreduce is cls
