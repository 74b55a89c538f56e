"""tpcomm's SGLang plugin: the `sglang.srt.plugins` entry point (pyproject.toml), which SGLang runs
in every process (sglang.srt.plugins.load_plugins). Enabled by TPCOMM_SGLANG=1 or by naming
`tpcomm` in SGLANG_PLUGINS; otherwise nothing changes. What it replaces (SGLang 0.5.23):

  - dispatch_custom_allreduce (custom_all_reduce.py, looked up lazily by GroupCoordinator):
    where SGLang picks its legacy CustomAllreduce, tpcomm.torch.CustomAllreduce; where it picks
    CustomAllReduceV2, a subclass of it that keeps V2's workspaces (the fusions that check
    isinstance(ca, CustomAllReduceV2) use V2's push plane, comm.obj and multicast pointers, which
    tpcomm cannot stand in for) and hands the all-reduce and fused_allreduce_rmsnorm to tpcomm;
  - GroupCoordinator._can_use_flashinfer_allreduce: False while tpcomm takes the input, so
    SGLang's own order reaches "ca" (FlashInfer is tried first otherwise);
  - layernorm._forward_with_allreduce_fusion (FlashInfer's fused AR + residual + RMSNorm on
    NVIDIA): the attention-TP group's fused_allreduce_rmsnorm, i.e. tpcomm's fused op.

SGLang's QuickReduce option (WIRE_ENV, ROCm-only in SGLang) is passed through where set: tpcomm's
CustomAllreduce (the legacy class's stand-in and V2's inner one) then moves large all-reduces on
its quantized wire (engines.engine_wire; off by default, and TPCOMM_WIRE wins).
"""
import contextlib
import logging
from typing import Any, Dict, Iterator, List, Optional

from . import engines

SWITCH, PLUGIN_LIST = "TPCOMM_SGLANG", "SGLANG_PLUGINS"
CUSTOM_AR = "sglang.srt.distributed.device_communicators.custom_all_reduce"
CUSTOM_AR_V2 = "sglang.srt.distributed.device_communicators.custom_all_reduce_v2"
PARALLEL_STATE = "sglang.srt.distributed.parallel_state"
LAYERNORM = "sglang.srt.layers.layernorm"
# SGLang's QuickReduce variables (srt/distributed/device_communicators/quick_all_reduce.py):
# quantization, none for a minimum size (SGLang has no such variable), the largest message in MB.
# engines.engine_wire reads them; test_contract_sglang.py checks SGLang still has them.
WIRE_ENV = ("ROCM_QUICK_REDUCE_QUANTIZATION", None, "ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB")
WIRE_VALUES = ("FP", "INT8", "INT6", "INT4", "NONE")  # SGLang's QuickReduceRegime: no INT3

LEFT_ALONE = [
    "ROCm (AITER, QuickReduce)",
    "V2-only fusions (they keep running on CustomAllReduceV2's own workspaces)",
    "the MoE-TP group's fused norm, per-group FP8 quant fusion",
]

patches = engines.Patches()
_bypass: Optional[engines.Bypasses] = None


def engine_logger() -> logging.Logger:
    """A logger under SGLang's plugin loader's, which SGLang's logging setup prints."""
    return logging.getLogger("sglang.srt.plugins.tpcomm")


def plugin() -> None:
    """The entry point. Does nothing unless enabled (engines.enabled)."""
    if engines.enabled(SWITCH, PLUGIN_LIST):
        install()


def install() -> List[str]:
    """Makes the replacements; returns what was replaced. Logs one line saying that and what
    was left alone; under TPCOMM_STRICT=1 a replacement that cannot be made is an error."""
    global _bypass
    log = engine_logger()
    _bypass = engines.start(log)
    replaced, left = [], list(LEFT_ALONE)
    ca_module = engines.import_or_none(CUSTOM_AR)
    if ca_module is None:
        _bypass("the custom all-reduce", f"{CUSTOM_AR} cannot be imported")
        left.append("every all-reduce")
    else:
        wire = engines.engine_wire(*WIRE_ENV, log, known=WIRE_VALUES)
        patches.replace(ca_module, "dispatch_custom_allreduce",
                        _dispatch(ca_module.dispatch_custom_allreduce, ca_module, wire))
        replaced.append("custom all-reduce (CustomAllreduce; CustomAllReduceV2 kept as the base "
                        "of tpcomm's subclass)")
        if wire is not None:
            replaced.append(wire["summary"])
    ps = engines.import_or_none(PARALLEL_STATE)
    if ps is not None:
        coordinator = ps.GroupCoordinator
        patches.replace(coordinator, "_can_use_flashinfer_allreduce",
                        _flashinfer_declined(coordinator._can_use_flashinfer_allreduce))
        replaced.append("FlashInfer all-reduce (tpcomm first)")
    layernorm = engines.import_or_none(LAYERNORM)
    if layernorm is not None and hasattr(layernorm, "_forward_with_allreduce_fusion"):
        patches.replace(layernorm, "_forward_with_allreduce_fusion",
                        _fused_norm(layernorm._forward_with_allreduce_fusion))
        replaced.append("FlashInfer AR + residual + RMSNorm fusion (attention TP group -> "
                        "tpcomm::fused_allreduce_rmsnorm)")
    else:
        _bypass("the AR + RMSNorm fusion", f"{LAYERNORM}._forward_with_allreduce_fusion is "
                "missing")
        left.append("the AR + RMSNorm fusion")
    log.info(engines.summary("SGLang", engines.version("sglang"), replaced, left))
    return replaced


def uninstall() -> None:
    """Puts SGLang's code back (engines.uninstall)."""
    engines.uninstall(patches)


def serves(ca: Any) -> bool:
    """True when `ca` is tpcomm's (or holds tpcomm's) and tpcomm is ready."""
    from .torch import CustomAllreduce

    inner = getattr(ca, "tpcomm", ca)
    return isinstance(inner, CustomAllreduce) and not inner.disabled


def _dispatch(original: Any, ca_module: Any, wire: Optional[Dict[str, Any]] = None) -> Any:
    """dispatch_custom_allreduce answering tpcomm's classes; `wire`: engines.engine_wire's
    options, applied to tpcomm's CustomAllreduce (None: the class as it is)."""
    from .torch import CustomAllreduce

    tpcomm_class = CustomAllreduce if wire is None else engines.with_wire(CustomAllreduce, wire)

    def dispatch_custom_allreduce(*args: Any, **kwargs: Any) -> Any:
        cls = original(*args, **kwargs)
        if cls is getattr(ca_module, "CustomAllreduce", None):
            return tpcomm_class
        v2 = engines.import_or_none(CUSTOM_AR_V2)
        v2_class = getattr(v2, "CustomAllReduceV2", None)
        if v2_class is not None and cls is v2_class:
            return with_tpcomm(v2_class, tpcomm_class)
        if _bypass is not None:
            _bypass("the custom all-reduce", f"SGLang picked {getattr(cls, '__name__', cls)}")
        return cls

    return dispatch_custom_allreduce


_subclasses: dict = {}


def with_tpcomm(base: type, tpcomm_class: Optional[type] = None) -> type:
    """`base` (CustomAllReduceV2) whose all-reduce and fused all-reduce + RMSNorm are tpcomm's
    wherever tpcomm takes the input; everything else (its workspaces, the fusions built on them,
    capture's graph-input registration) stays base's. `tpcomm_class`: the tpcomm class it holds
    (tpcomm.torch.CustomAllreduce where None; engines.with_wire's where the wire is asked)."""
    if tpcomm_class is None:
        from .torch import CustomAllreduce

        tpcomm_class = CustomAllreduce
    if (base, tpcomm_class) in _subclasses:
        return _subclasses[(base, tpcomm_class)]
    inner = tpcomm_class

    class TpcommCustomAllReduceV2(base):  # type: ignore[misc, valid-type]
        def __init__(self, group: Any, device: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(group, device, *args, **kwargs)
            self.tpcomm = inner(group, device)

        def should_custom_ar(self, inp: Any) -> bool:
            return self.tpcomm.should_custom_ar(inp) or super().should_custom_ar(inp)

        def custom_all_reduce(self, inp: Any) -> Any:
            if self.tpcomm.should_custom_ar(inp):
                return self.tpcomm.custom_all_reduce(inp)
            return super().custom_all_reduce(inp)

        def fused_allreduce_rmsnorm(self, input_: Any, residual_inp_: Any, weight_: Any,
                                    eps: float) -> Any:
            return self.tpcomm.fused_allreduce_rmsnorm(input_, residual_inp_, weight_, eps)

        @contextlib.contextmanager
        def capture(self) -> Iterator[None]:
            with self.tpcomm.capture(), super().capture():
                yield

        def close(self) -> None:
            self.tpcomm.close()
            super().close()

    TpcommCustomAllReduceV2.__qualname__ = TpcommCustomAllReduceV2.__name__
    _subclasses[(base, tpcomm_class)] = TpcommCustomAllReduceV2
    return TpcommCustomAllReduceV2


def _flashinfer_declined(original: Any) -> Any:
    def _can_use_flashinfer_allreduce(self: Any, input_: Any) -> bool:
        ca = self.ca_comm
        if serves(ca):
            import torch

            # Under torch.compile SGLang defers the choice to its out-of-place op ("auto"),
            # which asks should_custom_ar at run time; checking sizes here would guard shapes.
            if torch.compiler.is_compiling() or ca.should_custom_ar(input_):
                return False
        return original(self, input_)

    return _can_use_flashinfer_allreduce


def _fused_norm(original: Any) -> Any:
    def _forward_with_allreduce_fusion(norm_module: Any, x: Any, residual: Any,
                                       post_residual_addition: Any, weight: Any,
                                       use_attn_tp_group: bool = True) -> Any:
        if residual is not None and use_attn_tp_group:
            from sglang.srt.distributed.parallel_state import get_attn_tp_group

            group = get_attn_tp_group()
            if group.world_size > 1 and serves(group.ca_comm):
                r = residual if post_residual_addition is None else \
                    residual + post_residual_addition
                out = group.fused_allreduce_rmsnorm(x, r, weight, norm_module.variance_epsilon)
                if out is not None:
                    return out
                if _bypass is not None:
                    _bypass("a fused all-reduce + RMSNorm", "tpcomm declined the tensors")
        return original(norm_module, x, residual, post_residual_addition, weight,
                        use_attn_tp_group)

    return _forward_with_allreduce_fusion
