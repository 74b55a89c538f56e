"""What the bench/*.py scripts share: finding the tpcomm package, checking for
torch and enough GPUs, and switching on torch symmetric memory across torch versions."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def import_tpcomm():
    """The installed package, else python/ of this checkout (spawned workers inherit sys.path)."""
    try:
        import tpcomm
    except ImportError:
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
        import tpcomm
    import tpcomm.testing  # noqa: F401  (a submodule: not imported by the package itself)
    return tpcomm


def parse_size(text):
    """Bytes from "8K", "8KiB", "1M", "64m" or a plain number."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower().rstrip("ib").rstrip("b")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def torch_with_gpus(script, nprocs):
    """torch, once it imports and sees `nprocs` GPUs; else None after saying why on stderr (the
    script then exits with 2)."""
    try:
        import torch
    except ImportError:
        print(f"bench/{script} needs torch (with CUDA) on this machine", file=sys.stderr)
        return None
    if torch.cuda.device_count() < nprocs:
        print(f"bench/{script} needs {nprocs} GPUs, {torch.cuda.device_count()} visible",
              file=sys.stderr)
        return None
    return torch


def symm_mem_world():
    """torch symmetric memory over the WORLD group with the CUDA backend (IPC-mapped cudaMalloc
    memory, not NVSHMEM): (the symm_mem module, the group's name), ready for symm_mem.empty and
    rendezvous."""
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem

    try:
        symm_mem.set_backend("CUDA")
    except Exception:  # older torch: one backend only
        pass
    name = dist.group.WORLD.group_name
    enable_symm_mem(symm_mem, name)
    return symm_mem, name


def enable_symm_mem(symm_mem, group_name):
    """Older torch needs enable_symm_mem_for_group before rendezvous; newer deprecates it."""
    import warnings

    fn = getattr(symm_mem, "enable_symm_mem_for_group", None)
    if fn is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(group_name)
