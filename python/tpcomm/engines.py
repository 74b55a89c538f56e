"""Swapping tpcomm.torch.CustomAllreduce into vLLM and SGLang without editing their source.

Both engines import their CustomAllreduce lazily, inside the constructor of the object that owns
the tensor-parallel group (vLLM: CudaCommunicator.__init__; SGLang: GroupCoordinator.__init__,
through dispatch_custom_allreduce), so replacing the name in the defining module before that
constructor runs is enough. It must happen in every worker process: vLLM runs the
`vllm.general_plugins` entry point (ours is vllm_plugin, opt-in with TPCOMM_VLLM=1) in each
process it starts; for SGLang call patch_sglang() from sitecustomize.py or your launcher
(docs/PYTHON.md). Each patch logs one line, so an enabled swap is never invisible.
"""
import importlib
import logging
import os

logger = logging.getLogger("tpcomm")

VLLM_MODULE = "vllm.distributed.device_communicators.custom_all_reduce"
SGLANG_MODULE = "sglang.srt.distributed.device_communicators.custom_all_reduce"


def _patch(module_name: str, engine: str) -> type:
    from .torch import CustomAllreduce  # imports torch: only when a patch is asked for

    module = importlib.import_module(module_name)
    setattr(module, "CustomAllreduce", CustomAllreduce)
    if hasattr(module, "dispatch_custom_allreduce"):  # SGLang; takes (group, device) in some
        setattr(module, "dispatch_custom_allreduce",  # versions
                lambda *args, **kwargs: CustomAllreduce)
    logger.warning("tpcomm: %s's custom all-reduce is now tpcomm.torch.CustomAllreduce (pid %d)",
                   engine, os.getpid())
    return CustomAllreduce


def patch_vllm() -> None:
    """Makes vLLM build tpcomm.torch.CustomAllreduce for its TP group (vLLM versions that
    import CustomAllreduce from custom_all_reduce.py inside CudaCommunicator.__init__).
    Custom all-reduce must still be enabled in vLLM (no --disable-custom-all-reduce)."""
    cls = _patch(VLLM_MODULE, "vLLM")
    # Older vLLM picked the class through cuda_communicator.dispatch_custom_allreduce().
    try:
        cuda_comm = importlib.import_module("vllm.distributed.device_communicators.cuda_communicator")
    except ImportError:
        return
    if hasattr(cuda_comm, "dispatch_custom_allreduce"):
        setattr(cuda_comm, "dispatch_custom_allreduce", lambda *args, **kwargs: cls)


def patch_sglang() -> None:
    """Makes SGLang build tpcomm.torch.CustomAllreduce for its TP group. Custom all-reduce must
    still be enabled (no --disable-custom-all-reduce)."""
    _patch(SGLANG_MODULE, "SGLang")


def vllm_plugin() -> None:
    """The `vllm.general_plugins` entry point: patches only when TPCOMM_VLLM=1, so installing
    tpcomm never changes vLLM behind anyone's back."""
    if os.environ.get("TPCOMM_VLLM", "0") == "1":
        patch_vllm()
