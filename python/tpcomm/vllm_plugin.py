"""tpcomm's vLLM plugin: the `vllm.general_plugins` entry point (pyproject.toml), which vLLM runs
in every process it starts (vllm.plugins.load_general_plugins), before any TP group exists.

Why a general plugin and not a platform plugin: a platform plugin replaces the whole CUDA
platform (one is active per process), so tpcomm would have to track vLLM's CudaPlatform in every
release; the names a general plugin touches below are few, each checked by
python/tests/test_contract_vllm.py against the real vLLM wheel. Enabled by TPCOMM_VLLM=1 or by
naming `tpcomm` in VLLM_PLUGINS; otherwise nothing changes. What it replaces:

  - custom_all_reduce.CustomAllreduce -> tpcomm.torch.CustomAllreduce, which
    CudaCommunicator.__init__ imports lazily and builds for the TP group; vLLM's own
    custom_all_gather / custom_reduce_scatter and graph_capture() call it from then on;
  - CudaCommunicator.all_reduce asks tpcomm first: vLLM tries NCCL symmetric memory, QuickReduce,
    FlashInfer (on by default) and others before its custom all-reduce;
  - the fuse_allreduce_rms pass (AllReduceFusionPass, FlashInfer's fused op) -> a pass that
    rewrites all-reduce + fused_add_rms_norm into torch.ops.tpcomm.fused_allreduce_rmsnorm.

vLLM's QuickReduce option (WIRE_ENV, ROCm-only in vLLM) is passed through where set: tpcomm's
CustomAllreduce then moves large all-reduces on its quantized wire (engines.engine_wire; off by
default, and TPCOMM_WIRE wins).
"""
import functools
import logging
from typing import Any, List, Optional

from . import engines

SWITCH, PLUGIN_LIST = "TPCOMM_VLLM", "VLLM_PLUGINS"
CUSTOM_AR = "vllm.distributed.device_communicators.custom_all_reduce"
CUDA_COMM = "vllm.distributed.device_communicators.cuda_communicator"
PASS_MANAGER = "vllm.compilation.passes.pass_manager"
FUSION = "vllm.compilation.passes.fusion.allreduce_rms_fusion"
# vLLM's QuickReduce variables (vllm/envs.py): quantization, its minimum size in KB, the largest
# message in MB. engines.engine_wire reads them; test_contract_vllm.py checks vLLM still has them.
WIRE_ENV = ("VLLM_ROCM_QUICK_REDUCE_QUANTIZATION",
            "VLLM_ROCM_QUICK_REDUCE_QUANTIZATION_MIN_SIZE_KB",
            "VLLM_ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB")
WIRE_VALUES = engines.QUICK_REDUCE_VALUES  # vLLM's choices for the first

LEFT_ALONE = [
    "unfused (tpcomm's all-reduce, then vLLM's norm): all-reduce + RMSNorm without a residual "
    "(first layer), FP8/NVFP4-quantized and Gemma forms",
    "groups other than TP, ROCm (AITER, QuickReduce)",
]

patches = engines.Patches()
_bypass: Optional[engines.Bypasses] = None


def engine_logger() -> logging.Logger:
    """vLLM's logger for tpcomm: a child of `vllm`, so vLLM's handler and format print it."""
    from vllm.logger import init_logger

    return init_logger("vllm.tpcomm")


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
    from .torch import CustomAllreduce

    replaced, left = [], list(LEFT_ALONE)
    ca_module = engines.import_or_none(CUSTOM_AR)
    cuda_comm = engines.import_or_none(CUDA_COMM)
    if ca_module is None or cuda_comm is None:
        _bypass("the custom all-reduce", f"{CUSTOM_AR} or {CUDA_COMM} cannot be imported")
        left.append("every all-reduce (vLLM's CUDA communicator is missing)")
    else:
        wire = engines.engine_wire(*WIRE_ENV, log, known=WIRE_VALUES)
        ca_class = CustomAllreduce if wire is None else engines.with_wire(CustomAllreduce, wire)
        patches.replace(ca_module, "CustomAllreduce", ca_class)
        patches.replace(cuda_comm.CudaCommunicator, "all_reduce",
                        _tpcomm_first(cuda_comm.CudaCommunicator.all_reduce))
        replaced += ["custom all-reduce (CustomAllreduce, capture, custom_all_gather, "
                     "custom_reduce_scatter)",
                     "all-reduce dispatch (tpcomm before NCCL symm-mem, FlashInfer, torch "
                     "symm-mem)"]
        if wire is not None:
            replaced.append(wire["summary"])
    pass_manager = engines.import_or_none(PASS_MANAGER)
    if pass_manager is None:
        _bypass("the fuse_allreduce_rms pass", f"{PASS_MANAGER} cannot be imported")
        left.append("the fuse_allreduce_rms pass")
    else:
        fused_pass = fusion_pass_class()
        patches.replace(pass_manager, "AllReduceFusionPass", fused_pass)
        fusion = engines.import_or_none(FUSION)
        if fusion is not None:
            patches.replace(fusion, "AllReduceFusionPass", fused_pass)
        replaced.append("fuse_allreduce_rms (all-reduce + fused_add_rms_norm -> "
                        "tpcomm::fused_allreduce_rmsnorm)")
    log.info(engines.summary("vLLM", engines.version("vllm"), replaced, left))
    return replaced


def uninstall() -> None:
    """Puts vLLM's code back (engines.uninstall)."""
    engines.uninstall(patches)


def _tpcomm_first(original: Any) -> Any:
    """CudaCommunicator.all_reduce that lets tpcomm's CustomAllreduce serve every input it
    takes (tpcomm's planner picks NCCL itself where NCCL is faster) and vLLM's order the rest."""
    from .torch import CustomAllreduce

    def all_reduce(self: Any, input_: Any) -> Any:
        ca = self.ca_comm
        if isinstance(ca, CustomAllreduce):
            if ca.should_custom_ar(input_):
                return ca.custom_all_reduce(input_)
            if _bypass is not None:
                _bypass("an all-reduce", ca.disabled_reason or "should_custom_ar() declined it "
                        "(dtype, layout, device, or above max_size)")
        elif self.world_size > 1 and self.unique_name.split(":")[0] == "tp" \
                and _bypass is not None:
            _bypass("the TP all-reduce", "vLLM built no custom all-reduce (custom all-reduce "
                    "disabled, or AITER on ROCm)")
        return original(self, input_)

    all_reduce.__doc__ = original.__doc__
    return all_reduce


@functools.lru_cache(maxsize=None)
def fusion_pass_class() -> type:
    """A vLLM inductor pass that fuses all-reduce + fused_add_rms_norm into tpcomm's op.
    Defined on demand: it subclasses vLLM's VllmInductorPass."""
    import torch
    from vllm.compilation.passes.vllm_inductor_pass import VllmInductorPass

    from . import _fx_fusion

    class TpcommAllReduceFusionPass(VllmInductorPass):
        """Stands where vLLM's AllReduceFusionPass (FlashInfer) stood in the post-grad passes."""

        def __init__(self, config: Any) -> None:
            super().__init__(config)
            self.comm_id: Optional[int] = None
            self.group_name = ""
            self.matched_count = 0
            from vllm.distributed.parallel_state import get_tp_group

            tp = get_tp_group()
            ca: Any = getattr(tp.device_communicator, "ca_comm", None)
            if tp.world_size <= 1:
                return
            if not _serves(ca):
                reason = getattr(ca, "disabled_reason", None) or "no tpcomm CustomAllreduce"
                if _bypass is not None:
                    _bypass("the fuse_allreduce_rms pass", reason)
                return
            self.comm_id, self.group_name = ca.comm_id, tp.unique_name

        def is_applicable_for_range(self, compile_range: Any) -> bool:
            return self.comm_id is not None

        @VllmInductorPass.time_and_log
        def __call__(self, graph: Any) -> None:
            if self.comm_id is None:
                return
            self.matched_count = _fx_fusion.fuse_allreduce_add_rmsnorm(
                graph, torch.ops.vllm.all_reduce.default,
                torch.ops.vllm_ir.fused_add_rms_norm.default,
                lambda node: len(node.args) > 1 and node.args[1] == self.group_name,
                self.comm_id)

        def uuid(self) -> str:
            return VllmInductorPass.hash_source(self, _fx_fusion)

    return TpcommAllReduceFusionPass


def _serves(ca: Any) -> bool:
    from .torch import CustomAllreduce

    return isinstance(ca, CustomAllreduce) and not ca.disabled and ca.comm_id is not None
