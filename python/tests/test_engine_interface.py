"""tpcomm.torch.CustomAllreduce answers every use vLLM 0.34.0 and SGLang 0.5.23 make of their
custom all-reduce object, with the engine's signature and its "not handled" answer.

The list below was read from the engines' sources (file:line in each entry). A missing method is
an AttributeError inside the engine, even when tpcomm disabled itself (vLLM 0.34's sequence
parallelism calls ca_comm.custom_all_gather on every layer). Needs no GPU, no engine and not even
torch: without torch, tpcomm.torch is imported over a stand-in that has only the names it reads
at import time (the calls checked here never touch a tensor).
"""
import importlib
import inspect
import logging
import sys
import types
from typing import NamedTuple, Tuple

import pytest


class Use(NamedTuple):
    where: str          # engine file:line that makes the call
    name: str           # attribute or method on the ca object
    args: Tuple = ()    # how the engine calls it (None: an attribute read)
    kwargs: Tuple = ()  # (name, value) pairs
    declined: object = None  # what a disabled ca must answer ("not handled" for the engine)


X = object()  # stands for the engine's tensor: a disabled ca must not look at it
GROUP, DEVICE = object(), "cpu"

ATTR = None  # Use.args for an attribute read
CONTEXT = "context manager"
INIT = "__init__"

USES = [
    # vLLM 0.34.0
    Use("vllm/distributed/device_communicators/cuda_communicator.py:160", INIT, (),
        (("group", GROUP), ("device", DEVICE), ("symm_mem_enabled", False),
         ("register_graph_buffers", True))),
    Use("vllm/distributed/device_communicators/cuda_communicator.py:373", "disabled", ATTR,
        declined=True),
    Use("vllm/distributed/device_communicators/cuda_communicator.py:438", "should_custom_ar", (X,),
        declined=False),
    Use("vllm/distributed/device_communicators/cuda_communicator.py:440", "custom_all_reduce",
        (X,)),
    Use("vllm/distributed/device_communicators/cuda_communicator.py:479", "custom_all_gather",
        (X,)),
    Use("vllm/distributed/device_communicators/cuda_communicator.py:485", "custom_reduce_scatter",
        (X,)),
    Use("vllm/distributed/parallel_state.py:705", "capture", (), declined=CONTEXT),
    Use("vllm/models/deepseek_v41/nvidia/model.py:294", "fully_connected", ATTR, declined=False),
    Use("vllm/models/deepseek_v41/nvidia/ops/mhc.py:73", "mnnvl_lamport_ag_multicast_ptr", ATTR,
        declined=0),
    # vLLM's own class has these; nothing outside it calls them, engines' plugins may.
    Use("vllm/distributed/device_communicators/custom_all_reduce.py:478",
        "register_graph_buffers", ()),
    Use("vllm/distributed/device_communicators/custom_all_reduce.py:320", "max_size", ATTR,
        declined=8 * 1024 * 1024),
    Use("vllm/distributed/device_communicators/custom_all_reduce.py:568",
        "should_custom_all_gather", (X,), declined=False),
    Use("vllm/distributed/device_communicators/custom_all_reduce.py:662",
        "should_custom_reduce_scatter", (X,), declined=False),
    Use("vllm/distributed/device_communicators/custom_all_reduce.py:718", "close", ()),
    # SGLang 0.5.23
    Use("sglang/srt/distributed/parallel_state.py:509", INIT, (),
        (("group", GROUP), ("device", DEVICE))),
    Use("sglang/srt/distributed/parallel_state.py:625", "capture", (), declined=CONTEXT),
    Use("sglang/srt/distributed/parallel_state.py:751", "disabled", ATTR, declined=True),
    Use("sglang/srt/distributed/parallel_state.py:752", "should_custom_ar", (X,), declined=False),
    Use("sglang/srt/distributed/parallel_state.py:1047", "custom_all_reduce", (X,)),
    Use("sglang/srt/distributed/parallel_state.py:849", "_IS_CAPTURING", ATTR, declined=False),
    Use("sglang/srt/distributed/parallel_state.py:826", "fused_allreduce_rmsnorm",
        (X, X, X, 1e-6)),
    Use("sglang/multimodal_gen/runtime/distributed/group_coordinator.py:887", "close", ()),
]

# SGLang calls these only when hasattr() finds them (parallel_state.py:824-936, 1154-1354), so
# absent means "not handled". Having one would route calls into it: add it only with a kernel
# (fused_allreduce_rmsnorm has one: it is in USES, and test_fused_engine_method.py checks it).
PROBED_WHEN_PRESENT = ["custom_fused_ar_rms", "fused_ar_rms",
                       "custom_fused_ar_rms_per_group_quant", "reduce_scatter", "should_custom_ag",
                       "all_gather_reg", "all_gather_unreg"]


def _torch_stand_in():
    """The names tpcomm.torch reads at import time and in a disabled __init__ (device 'cpu')."""
    torch = types.ModuleType("torch")
    torch.float16, torch.bfloat16, torch.float32 = "float16", "bfloat16", "float32"

    class device:  # noqa: N801  (torch's name)
        def __init__(self, kind, index=None):
            self.type, _, idx = str(kind).partition(":")
            self.index = int(idx) if idx else index

    class CustomOp:  # torch.library.custom_op's result, as far as _torch_ops uses it
        def __init__(self, fn):
            self.fn = fn

        def register_fake(self, fn):
            return fn

    torch.device = device
    torch.Tensor = object
    torch.float8_e4m3fn = "float8_e4m3fn"
    torch.library = types.SimpleNamespace(custom_op=lambda name, mutates_args: CustomOp)
    torch.distributed = types.ModuleType("torch.distributed")
    return torch


@pytest.fixture
def ca_class(monkeypatch):
    """tpcomm.torch.CustomAllreduce (over real torch when installed), with torch.distributed
    answering rank 0 of 2 so a CPU device gives a disabled instance without a process group."""
    try:
        importlib.import_module("torch")  # only whether real torch imports; tpcomm.torch uses it
        stand_in = None
    except ImportError:
        stand_in = _torch_stand_in()
        monkeypatch.setitem(sys.modules, "torch", stand_in)
        monkeypatch.setitem(sys.modules, "torch.distributed", stand_in.distributed)
    module = importlib.import_module("tpcomm.torch")
    monkeypatch.setattr(module, "dist", types.SimpleNamespace(
        get_rank=lambda group: 0, get_world_size=lambda group: 2))
    yield module.CustomAllreduce
    if stand_in is not None:  # forget the module built over the stand-in
        import tpcomm

        for name in ("tpcomm.torch", "tpcomm._torch_ops"):
            sys.modules.pop(name, None)
            if getattr(tpcomm, name.split(".")[1], None) is not None:
                delattr(tpcomm, name.split(".")[1])


def _disabled(cls):
    ca = cls(GROUP, DEVICE)
    assert ca.disabled and "not a CUDA device" in ca.disabled_reason
    return ca


def test_every_engine_call_binds_to_our_signature(ca_class):
    for use in USES:
        if use.args is ATTR:
            continue
        target = ca_class.__init__ if use.name == INIT else getattr(ca_class, use.name, None)
        assert callable(target), f"{use.where}: CustomAllreduce.{use.name} is missing"
        signature = inspect.signature(target)
        args = (None,) + use.args  # self
        try:
            signature.bind(*args, **dict(use.kwargs))
        except TypeError as e:
            pytest.fail(f"{use.where}: the engine calls {use.name}{use.args + use.kwargs}, "
                        f"ours is {use.name}{signature}: {e}")


def test_every_engine_construction_works(ca_class):
    for use in USES:
        if use.name == INIT:
            ca = ca_class(*use.args, **dict(use.kwargs))
            assert ca.disabled, use.where


def test_a_disabled_instance_answers_every_use_as_not_handled(ca_class):
    ca = _disabled(ca_class)
    for use in USES:
        if use.name == INIT:
            continue
        assert hasattr(ca, use.name), f"{use.where}: {use.name} is missing"
        value = getattr(ca, use.name)
        if use.args is ATTR:
            assert value == use.declined and type(value) is type(use.declined), \
                f"{use.where}: {use.name} is {value!r}, the engine needs {use.declined!r}"
        elif use.declined == CONTEXT:
            with value(*use.args):
                assert ca._IS_CAPTURING
            assert not ca._IS_CAPTURING
        else:
            assert value(*use.args, **dict(use.kwargs)) is use.declined, use.where


def test_gather_and_scatter_decline_when_enabled_too_and_say_so_once(ca_class, caplog):
    ca = _disabled(ca_class)
    ca.disabled = False  # as after a successful creation: the answer must not depend on it
    with caplog.at_level(logging.INFO, logger="tpcomm"):
        for _ in range(3):
            assert ca.custom_all_gather(X) is None
            assert ca.custom_reduce_scatter(X) is None
    lines = [r.getMessage() for r in caplog.records if "not served by tpcomm" in r.getMessage()]
    assert len(lines) == 2, lines
    assert any("custom_all_gather" in line for line in lines)
    assert any("custom_reduce_scatter" in line for line in lines)
    assert ca.should_custom_all_gather(X) is False
    assert ca.should_custom_reduce_scatter(X) is False


def test_hooks_the_engines_probe_for_stay_absent(ca_class):
    present = [name for name in PROBED_WHEN_PRESENT if hasattr(ca_class, name)]
    assert not present, f"SGLang would route calls into {present}"


def test_all_reduce_on_a_disabled_instance_is_a_clear_error(ca_class):
    from tpcomm.errors import TpcommInvalidUsageError

    ca = _disabled(ca_class)
    with pytest.raises(TpcommInvalidUsageError, match="disabled.*not a CUDA device"):
        ca.all_reduce(X)


@pytest.mark.parametrize("error", [
    RuntimeError("CUDA error: invalid device ordinal"),  # torch, setting up the device
    ValueError("bad value"),
    OSError(5, "Input/output error"),
])
def test_a_creation_failure_of_any_type_falls_back_with_a_warning(ca_class, monkeypatch, caplog,
                                                                 error):
    """The creation protocol re-raises a rank's own exception whatever its type: the engine must
    get a disabled instance (and use NCCL) with a WARNING naming it, never the exception."""
    module = sys.modules[ca_class.__module__]

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(module.Communicator, "from_process_group", fail)
    with caplog.at_level(logging.WARNING, logger="tpcomm"):
        ca = ca_class(GROUP, "cuda:0")
    assert ca.disabled and ca.comm is None and ca.comm_id is None
    assert f"could not be created: {type(error).__name__}: {error}" in ca.disabled_reason
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
    assert "will use NCCL" in warnings[0].getMessage()
    assert f"{type(error).__name__}: {error}" in warnings[0].getMessage()
    assert ca.should_custom_ar(X) is False


def test_a_tpcomm_creation_failure_still_falls_back_with_its_message(ca_class, monkeypatch,
                                                                     caplog):
    from tpcomm.errors import TpcommRemoteError

    module = sys.modules[ca_class.__module__]

    def fail(*args, **kwargs):
        raise TpcommRemoteError("rank(s) [1] of 2 could not start", code=6)

    monkeypatch.setattr(module.Communicator, "from_process_group", fail)
    with caplog.at_level(logging.WARNING, logger="tpcomm"):
        ca = ca_class(GROUP, "cuda:0")
    assert ca.disabled and "could not be created: rank(s) [1] of 2" in ca.disabled_reason
    assert any("rank(s) [1] of 2" in r.getMessage() for r in caplog.records
               if r.levelno == logging.WARNING)
