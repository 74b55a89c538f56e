"""tpcomm.engines swaps CustomAllreduce into vLLM / SGLang by module attribute. Checked against
stand-in modules laid out like the engines' (needs torch, not a GPU, not the engines)."""
import sys
import types

import pytest

pytest.importorskip("torch")

from tpcomm import engines  # noqa: E402


def _fake(monkeypatch, dotted, **attrs):
    parts = dotted.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name not in sys.modules:
            monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    module = sys.modules[dotted]
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


def test_patch_vllm(monkeypatch):
    from tpcomm.torch import CustomAllreduce

    ca = _fake(monkeypatch, engines.VLLM_MODULE, CustomAllreduce=object)
    cuda = _fake(monkeypatch, "vllm.distributed.device_communicators.cuda_communicator",
                 dispatch_custom_allreduce=lambda: object)
    engines.patch_vllm()
    assert ca.CustomAllreduce is CustomAllreduce
    assert cuda.dispatch_custom_allreduce() is CustomAllreduce  # older vLLM's lookup


def test_patch_sglang_with_and_without_arguments(monkeypatch):
    from tpcomm.torch import CustomAllreduce

    ca = _fake(monkeypatch, engines.SGLANG_MODULE, CustomAllreduce=object,
               dispatch_custom_allreduce=lambda: object)
    engines.patch_sglang()
    assert ca.CustomAllreduce is CustomAllreduce
    assert ca.dispatch_custom_allreduce() is CustomAllreduce
    assert ca.dispatch_custom_allreduce(group=None, device="cuda:0") is CustomAllreduce


def test_vllm_plugin_patches_only_when_asked(monkeypatch):
    ca = _fake(monkeypatch, engines.VLLM_MODULE, CustomAllreduce=object)
    monkeypatch.delenv("TPCOMM_VLLM", raising=False)
    engines.vllm_plugin()
    assert ca.CustomAllreduce is object
    monkeypatch.setenv("TPCOMM_VLLM", "1")
    engines.vllm_plugin()
    assert ca.CustomAllreduce is not object
