"""tpcomm.torch.CustomAllreduce: the interface vLLM's and SGLang's engines call on their custom
all-reduce, served by tpcomm. Swap it in with a few lines (docs/PYTHON.md, tpcomm.engines).

What differs from the engines' own class, on purpose:
  - no world-size or NVLink restriction: tpcomm serves 2..8 GPUs on NVLink, PCIe P2P and
    P2P-less machines, and its policy picks the algorithm (or NCCL, counted) per size;
  - no IPC registration of user buffers: tpcomm pushes into its own staging buffers, so
    capture() has nothing to register and graph replays need no bookkeeping;
  - never silent: when it cannot run, `disabled` is True and `disabled_reason` says why, and the
    reason is logged at WARNING (the engine then uses NCCL, as it would without us).
"""
import contextlib
import logging

import torch
import torch.distributed as dist

from . import _buffers
from .communicator import Communicator
from .errors import TpcommError

logger = logging.getLogger("tpcomm")

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


class CustomAllreduce:
    """One rank's custom all-reduce over `group` (a CPU/gloo group, as engines pass; an NCCL
    group works too). Creation is collective over the group.

    max_size: the largest input (bytes) should_custom_ar accepts; larger ones go to the engine's
    NCCL path. Other keyword arguments engines pass (e.g. vLLM's symm_mem_enabled) are accepted
    and ignored; `config` is passed to tpcomm (buffer_bytes, timeout_ms, strict, algo, nccl).
    """

    def __init__(self, group, device, max_size=8 * 1024 * 1024, config=None, **engine_kwargs):
        self.disabled = True
        self.disabled_reason = None
        self.max_size = int(max_size)
        self.group = group
        self.comm = None
        self._IS_CAPTURING = False  # the engines' attribute name, kept for code that reads it
        self._captured_before = 0
        self.device = _as_device(device)
        self._device_index = self.device.index if self.device.type == "cuda" else None
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        if self.world_size == 1:
            self._disable("world size 1: there is nothing to reduce", logging.INFO)
            return
        if self.device.type != "cuda":
            self._disable(f"device {self.device} is not a CUDA device")
            return
        try:
            self.comm = Communicator.from_process_group(group, self.device, **(config or {}))
        except TpcommError as e:  # every rank sees an error (creation agrees on success)
            self._disable(f"the tpcomm communicator could not be created: {e}")
            return
        self.disabled = False
        logger.info("tpcomm CustomAllreduce: rank %d/%d on %s, inputs up to %d bytes",
                    self.rank, self.world_size, self.device, self.max_size)

    def _disable(self, reason, level=logging.WARNING):
        self.disabled, self.disabled_reason = True, reason
        logger.log(level, "tpcomm CustomAllreduce disabled on rank %s (the engine will use NCCL): "
                   "%s", getattr(self, "rank", "?"), reason)

    # ---- the engines' interface ----
    def should_custom_ar(self, inp):
        """True when custom_all_reduce will serve `inp`: enabled, a supported dtype, contiguous,
        non-empty, at most max_size bytes, and on this communicator's GPU."""
        # Engines call this and then custom_all_reduce on every eager all-reduce, so it reads
        # only cheap tensor properties (get_device(): an int, no torch.device object).
        if self.disabled:
            return False
        if _buffers.torch_dtype_code(inp.dtype) is None or not inp.is_contiguous():
            return False
        nbytes = inp.numel() * inp.element_size()
        return (0 < nbytes <= self.max_size and inp.is_cuda
                and inp.get_device() == self._device_index)

    def custom_all_reduce(self, inp):
        """A new tensor holding the sum over ranks, or None when should_custom_ar(inp) is False
        (the engine then takes its NCCL path). Works eagerly and under CUDA graph capture."""
        if not self.should_custom_ar(inp):
            return None
        out = torch.empty_like(inp)  # contiguous like inp (preserve_format of a dense tensor)
        # should_custom_ar has checked what Communicator.all_reduce would check again.
        self.comm._all_reduce_checked(inp.data_ptr(), out.data_ptr(), inp.numel(),
                                      _buffers.torch_dtype_code(inp.dtype))
        return out

    def all_reduce(self, inp, *, out=None, registered=False):
        """Out of place into `out` (allocated if None). `registered` is accepted for vLLM's
        signature: tpcomm needs no registered buffers."""
        if out is None:
            out = torch.empty_like(inp)
        self.comm.all_reduce(inp, out=out)
        return out

    @contextlib.contextmanager
    def capture(self):
        """The engines wrap CUDA graph capture in this. tpcomm needs no graph-buffer registration,
        so it only logs how many all-reduces were captured (calls made while not capturing,
        e.g. warm-up runs, execute normally)."""
        self._IS_CAPTURING = True
        if not self.disabled:
            self._captured_before = self.comm.stats()["captured"]
        try:
            yield
        finally:
            self._IS_CAPTURING = False
            if not self.disabled and not self.comm.closed:
                n = self.comm.stats()["captured"] - self._captured_before
                logger.info("tpcomm CustomAllreduce: %d all-reduce(s) captured into CUDA graphs "
                            "(no buffer registration needed)", n)

    def register_graph_buffers(self):
        """Kept for engines that call it: nothing to register."""

    def finalize_p2p(self):
        """Kept for engines that call it (newer vLLM): tpcomm tests P2P itself at creation."""

    def close(self):
        """Frees the communicator. Idempotent. Not done at garbage collection: graphs captured
        with it must be gone first, which only the engine knows."""
        if self.comm is not None:
            self.comm.close()
        self.disabled = True
        if self.disabled_reason is None:
            self.disabled_reason = "closed"

    def __repr__(self):
        state = f"disabled ({self.disabled_reason})" if self.disabled else "enabled"
        return f"<tpcomm.torch.CustomAllreduce rank {self.rank}/{self.world_size} {state}>"


def _as_device(device):
    device = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
    if device.type == "cuda" and device.index is None:  # "cuda" means the current GPU
        device = torch.device("cuda", torch.cuda.current_device())
    return device
