"""What the engine contract tests share: importing the real engine (skip where it is not
installed, fail under TPCOMM_CONTRACT=1, which scripts/engine_contract.sh sets), an enabled
tpcomm CustomAllreduce whose tensors live on the CPU, and the call sites of the engine's
custom all-reduce object read from the engine's own source."""
import ast
import importlib
import inspect
import os
import types
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest


def engine(module: str):
    try:
        return importlib.import_module(module)
    except Exception as e:  # an engine's import can fail in many ways; say which
        if os.environ.get("TPCOMM_CONTRACT") == "1":
            pytest.fail(f"{module} cannot be imported in the contract venv: {e!r}")
        pytest.skip(f"{module} is not importable here ({e!r}); scripts/engine_contract.sh "
                    "installs it", allow_module_level=True)


def plugin_fixtures(plugin):
    """The fixtures `clean_env` (monkeypatch with the plugin's switches and TPCOMM_STRICT unset;
    the plugin uninstalled afterwards) and `installed` (clean_env with the plugin installed) for
    a plugin module (tpcomm.vllm_plugin, tpcomm.sglang_plugin). Assign them to those names in the
    test module."""
    @pytest.fixture
    def clean_env(monkeypatch):
        for key in (plugin.SWITCH, plugin.PLUGIN_LIST, "TPCOMM_STRICT"):
            monkeypatch.delenv(key, raising=False)
        yield monkeypatch
        plugin.uninstall()

    @pytest.fixture
    def installed(clean_env):
        plugin.install()
        return clean_env

    return clean_env, installed


def cpu_custom_allreduce(monkeypatch, world_size=2):
    """An enabled tpcomm.torch.CustomAllreduce on the CPU: its fused op runs
    fx_stand_ins.run_on_cpu (two ranks holding the same partial); its plain all-reduce (a GPU
    kernel) is replaced by a recorder, `ca.calls`."""
    from fx_stand_ins import run_on_cpu
    from tpcomm import torch as tt

    monkeypatch.setattr(tt, "dist", types.SimpleNamespace(
        get_rank=lambda group: 0, get_world_size=lambda group: world_size))
    ca = tt.CustomAllreduce(object(), "cpu", max_size=1 << 20)
    ca.disabled, ca.disabled_reason = False, None
    ca.comm_id = tt._torch_ops.register_runner(run_on_cpu)
    ca.calls = []

    def custom_all_reduce(inp):
        ca.calls.append(("custom_all_reduce", inp))
        return inp * world_size

    def should_custom_ar(inp):
        return 0 < inp.numel() * inp.element_size() <= ca.max_size

    ca.custom_all_reduce, ca.should_custom_ar = custom_all_reduce, should_custom_ar
    return ca


class Spy:
    """A stand-in for an engine's *other* backend (FlashInfer, ...): says it would take every
    input and records what it was given."""

    def __init__(self, **answers):
        self.calls: List[Tuple[str, tuple]] = []
        self.disabled = False
        self.answers = answers

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self.calls.append((name, args))
            return self.answers.get(name, True)
        return call


def call_sites(path: Path, receivers: Set[str]) -> Dict[str, List[Tuple[int, int, Set[str]]]]:
    """{attribute: [(line, positional count, keyword names) or (line, -1, {}) for a read]} for
    every `<receiver>.attribute` in the file, receiver one of `receivers` (`ca_comm`,
    `self.ca_comm`, ...)."""
    tree = ast.parse(path.read_text())
    calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    found: Dict[str, List[Tuple[int, int, Set[str]]]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or ast.unparse(node.value) not in receivers:
            continue
        call = calls.get(id(node))
        if call is None:
            found.setdefault(node.attr, []).append((node.lineno, -1, set()))
        else:
            found.setdefault(node.attr, []).append(
                (node.lineno, len(call.args), {k.arg for k in call.keywords if k.arg}))
    return found


def probed(path: Path) -> Set[str]:
    """Names the file looks up with hasattr/getattr(ca_comm, "name"...): optional hooks."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("hasattr", "getattr") and len(node.args) >= 2 \
                and isinstance(node.args[1], ast.Constant):
            names.add(node.args[1].value)
    return names


def binds(method, positional: int, keywords: Set[str]) -> bool:
    """Whether a call with that many positional arguments and those keywords binds."""
    sig = inspect.signature(method)
    try:
        sig.bind(*([None] * positional), **{k: None for k in keywords})
        return True
    except TypeError:
        return False


DATA = Path(__file__).resolve().parents[2] / "tests" / "cpu" / "data"


def assert_fused_over_pull_under_write_collapse():
    """What tpcomm runs for the engines' fused op (torch.ops.tpcomm.fused_allreduce_rmsnorm, i.e.
    tpcommAllReduceAddRmsNorm) on the issue's box, simulated on the CPU: the 8-GPU two-socket PCIe
    fixture with a fabric probe whose stores collapse (`tpcomm doctor --topology --probe`, the
    planner the library runs). At every world 2..8 the decode sizes (1 and 16 tokens of 7168 bf16)
    take a fused pull kernel, never a push and never the unfused pair; where the all-reduce is
    island_pull the fused island."""
    from tpcomm import cli

    report = cli.doctor("--topology", str(DATA / "topo" / "rtx_pro_6000_8x_pcie_2socket.json"),
                        "--probe", str(DATA / "probe" / "broadcom_turin_collapse.json"))
    assert report["fabric_probe"]["policy_verdict"] == "write_collapse"
    worlds = report["policy"]["worlds"]
    assert [w["world"] for w in worlds] == list(range(2, 9))
    for w in worlds:
        for r in w["fused"]:
            what = f"world {w['world']} T={r['tokens']}: {r['variant']} ({r['reason']})"
            if r["tokens"] <= 16:
                assert r["variant"] in ("fused_p2p_oneshot_pull_ll", "fused_p2p_oneshot_pull",
                                        "fused_p2p_twoshot_pull"), what
            if r["allreduce"] == "island_pull":
                assert r["variant"] == "fused_p2p_island_pull", what
            assert r["variant"] in ("add_rmsnorm",) or "pull" in r["variant"], what
