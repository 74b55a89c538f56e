"""Communicator creation over a torch.distributed process group (tpcommCommInitRankBegin/End).

Protocol, every step collective over `group`:
  1. Begin on every rank -> a 2048-byte handle (or an error),
  2. all-gather [ok flag | handle] -> every rank knows whether all began,
  3. End with all handles,
  4. all-gather [ok flag] -> every rank knows whether all finished.
A rank that failed raises its own error; the others raise TpcommRemoteError naming it. Without
the flags, one rank's failure would leave the others inside tpcomm's first all-reduce until the
timeout (or worse, using tpcomm while the failed rank falls back to NCCL).
When the ranks span machines (tpcommCommNodes says nodes > 1, the same answer on every rank: it
comes from the same handles), a second round links them (docs/MULTINODE.md):
  5. tpcommCommNodeLinkBegin -> a link handle, 6. all-gather [ok flag | handle],
  7. tpcommCommNodeLinkEnd with all link handles, 8. all-gather [ok flag].
"""
import ctypes

from . import _abi, _device, _loader
from ._config import check, error_for
from .errors import TpcommInvalidUsageError, TpcommRemoteError


def _all_gather_bytes(group, payload, device_index):
    """bytes from every rank of `group`, in group-rank order. CPU tensors for gloo/mpi groups,
    CUDA tensors for an NCCL-only group (plain all_gather: all_gather_object breaks with gloo
    under inference mode, pytorch issue 126032)."""
    import torch
    import torch.distributed as dist

    backend = str(dist.get_backend(group)).lower()
    on_cpu = "gloo" in backend or "mpi" in backend or "nccl" not in backend
    dev = torch.device("cpu") if on_cpu else torch.device("cuda", device_index)
    with torch.inference_mode(False):
        raw = bytearray(payload)  # frombuffer shares this memory: keep it alive here
        mine = torch.frombuffer(raw, dtype=torch.uint8).to(dev)
        outs = [torch.empty_like(mine) for _ in range(dist.get_world_size(group))]
        dist.all_gather(outs, mine, group=group)
        outs = [o.cpu().contiguous() for o in outs]
        return [ctypes.string_at(o.data_ptr(), o.numel()) for o in outs]


def create(cls, group, device, cfg):
    import torch
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized():
        raise TpcommInvalidUsageError(
            "from_process_group: torch.distributed is not initialized", code=5)
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    if rank < 0:
        raise TpcommInvalidUsageError("from_process_group: this process is not in the group", code=5)

    def resolve():
        index = _device.device_index(device)
        return torch.cuda.current_device() if index is None else index

    return begin_exchange_end(cls, rank, world, cfg, resolve,
                              lambda payload, index: _all_gather_bytes(group, payload, index))


def begin_exchange_end(cls, rank, world, cfg, resolve, all_gather):
    """The protocol above, with the device lookup and the all-gather passed in (unit-tested with
    threads standing in for ranks). all_gather(payload, device_index) -> [bytes per rank]."""
    # 1-2: Begin everywhere, then learn who failed. Any local exception (no library, no driver,
    # a bad device) must still take part in the exchange, or the other ranks wait forever.
    handle, comm, local_err, index, lib = _abi.RankHandle(), ctypes.c_void_p(), None, 0, None
    try:
        lib = _loader.lib()
        index = resolve()
        _device.make_current(index)
        r = lib.tpcommCommInitRankBegin(ctypes.byref(comm), world, rank, ctypes.byref(cfg),
                                        ctypes.byref(handle))
        if r != _abi.SUCCESS:
            local_err = error_for(r, "tpcommCommInitRankBegin")
    except Exception as e:
        local_err = e
    flag = b"\x01" if local_err is None else b"\x00"
    raw = ctypes.string_at(ctypes.addressof(handle), _abi.RANK_HANDLE_BYTES)
    blobs = all_gather(flag + raw, index)
    failed = [r for r, b in enumerate(blobs) if b[0] != 1]
    if failed:
        if local_err is None:
            check(lib.tpcommCommDestroy(comm), "tpcommCommDestroy")
            raise TpcommRemoteError(
                f"from_process_group: rank(s) {failed} of {world} could not start a tpcomm "
                "communicator (their own error says why)", code=6)
        raise local_err

    # 3-4: End everywhere (End destroys the communicator itself on failure), then agree.
    r = lib.tpcommCommInitRankEnd(comm, _handles(blobs, world))
    local_err = None if r == _abi.SUCCESS else error_for(r, "tpcommCommInitRankEnd")
    _agree(lib, comm, world, local_err, all_gather(_flag(local_err), index),
           "failed to complete the tpcomm communicator", destroy_own=False)
    _link_machines(lib, comm, world, index, all_gather)
    return cls(comm.value, expected_device=index)


def _flag(err):
    return b"\x01" if err is None else b"\x00"


def _handles(blobs, world):
    handles = (_abi.RankHandle * world)()
    for r, blob in enumerate(blobs):
        ctypes.memmove(ctypes.addressof(handles[r]), blob[1:], _abi.RANK_HANDLE_BYTES)
    return handles


def _agree(lib, comm, world, local_err, flags, what, destroy_own):
    """Raises on every rank when any rank failed a step. destroy_own: this rank's own failure
    left the communicator alive (the link calls), so it is destroyed here too."""
    failed = [r for r, f in enumerate(flags) if f[0] != 1]
    if not failed:
        return
    if local_err is None or destroy_own:
        check(lib.tpcommCommDestroy(comm), "tpcommCommDestroy")
    if local_err is None:
        raise TpcommRemoteError(
            f"from_process_group: rank(s) {failed} of {world} {what} (their own error says why)",
            code=6)
    raise local_err


def _link_machines(lib, comm, world, index, all_gather):
    """5-8: the second round, only where the ranks span machines."""
    nodes, local = ctypes.c_int(1), ctypes.c_int(world)
    r = lib.tpcommCommNodes(comm, ctypes.byref(nodes), ctypes.byref(local))
    if r != _abi.SUCCESS:
        err = error_for(r, "tpcommCommNodes")
        check(lib.tpcommCommDestroy(comm), "tpcommCommDestroy")
        raise err
    if nodes.value <= 1:
        return
    handle, local_err = _abi.RankHandle(), None
    r = lib.tpcommCommNodeLinkBegin(comm, ctypes.byref(handle))
    if r != _abi.SUCCESS:
        local_err = error_for(r, "tpcommCommNodeLinkBegin")
    raw = ctypes.string_at(ctypes.addressof(handle), _abi.RANK_HANDLE_BYTES)
    blobs = all_gather(_flag(local_err) + raw, index)
    _agree(lib, comm, world, local_err, [b[:1] for b in blobs],
           f"could not begin linking the {nodes.value} machines", destroy_own=True)
    r = lib.tpcommCommNodeLinkEnd(comm, _handles(blobs, world))
    local_err = None if r == _abi.SUCCESS else error_for(r, "tpcommCommNodeLinkEnd")
    _agree(lib, comm, world, local_err, all_gather(_flag(local_err), index),
           f"failed to link the {nodes.value} machines (NCCL between them)", destroy_own=True)
