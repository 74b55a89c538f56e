"""tpcomm.Communicator: one rank of a tpcomm communicator, and the calls on it.

Three ways to create one (see docs/PYTHON.md):
  Communicator.from_process_group(group, device)   a torch.distributed group exchanges the handles
  Communicator.from_unique_id(rank, world, uid)    ranks meet through tpcomm's own socket rendezvous
  Communicator.init_all(devices)                   one process driving several GPUs
"""
import contextlib
import ctypes
import sys
from typing import Any, Iterator, List, Optional, Sequence

from . import _abi, _buffers, _config, _device, _loader
from ._config import check, make_config
from ._queries import Queries
from .errors import TpcommInvalidArgumentError, TpcommInvalidUsageError

# A GPU: an index, "cuda:N", a torch.device, or None (the current one).
Device = Any
# A data type: a tpcommDataType_t, a name ("bfloat16"), a torch or numpy dtype, or None.
DType = Any


def get_unique_id() -> bytes:
    """128 bytes that name one rendezvous; rank 0 makes it and sends it to the others."""
    uid = _abi.UniqueId()
    check(_loader.lib().tpcommGetUniqueId(ctypes.byref(uid)), "tpcommGetUniqueId")
    return ctypes.string_at(ctypes.addressof(uid), _abi.UNIQUE_ID_BYTES)


@contextlib.contextmanager
def group() -> Iterator[None]:
    """tpcommGroupStart/End: wrap one collective's calls on every rank when a single thread
    drives several ranks (init_all), so a fallback to NCCL cannot deadlock."""
    check(_loader.lib().tpcommGroupStart(), "tpcommGroupStart")
    try:
        yield
    finally:
        check(_loader.lib().tpcommGroupEnd(), "tpcommGroupEnd")


class Communicator(Queries):
    """A ready tpcomm communicator for this rank. Not thread-safe (like an NCCL communicator).

    close() frees it. It is not freed by garbage collection: a CUDA graph that captured its calls
    keeps using its staging memory after the Python object is gone, so only the caller knows when
    that is safe.
    """

    def __init__(self, handle: Optional[int], expected_device: Optional[int] = None) -> None:
        # Use the classmethods; this wraps a handle the library has already made ready.
        self._handle: Optional[ctypes.c_void_p] = ctypes.c_void_p(handle)
        lib = _loader.lib()
        value = ctypes.c_int()
        check(lib.tpcommCommUserRank(self._handle, ctypes.byref(value)), "tpcommCommUserRank")
        self.rank = value.value
        check(lib.tpcommCommCount(self._handle, ctypes.byref(value)), "tpcommCommCount")
        self.world_size = value.value
        check(lib.tpcommCommCuDevice(self._handle, ctypes.byref(value)), "tpcommCommCuDevice")
        self.device = value.value
        if expected_device is not None and self.device != expected_device:
            self.close()
            raise TpcommInvalidUsageError(
                f"the communicator was created on GPU {self.device}, but GPU {expected_device} "
                "was asked for (the current CUDA device was not what tpcomm saw)", code=5)

    # ---- creation ----
    @classmethod
    def from_unique_id(cls, rank: int, world_size: int, unique_id: bytes, device: Device = None,
                       **config: Any) -> "Communicator":
        """Collective over `world_size` processes on this machine (tpcommCommInitRank); blocks
        until all have joined. `config`: see make_config (buffer_bytes, timeout_ms, strict,
        algo, nccl, nccl_comm, max_blocks, init_timeout_ms, launch_knobs, and the opt-in
        quantized wire: wire="int8" | "int4" | "fp8" | "fp8_e5m2", wire_min_bytes)."""
        if not isinstance(unique_id, (bytes, bytearray)) or len(unique_id) != _abi.UNIQUE_ID_BYTES:
            raise TpcommInvalidArgumentError(
                f"unique_id must be the {_abi.UNIQUE_ID_BYTES} bytes of get_unique_id()", code=4)
        index = _device.device_index(device)
        cfg = make_config(**config)
        lib = _loader.lib()
        if index is not None:
            _device.make_current(index)
        uid = _abi.UniqueId()
        ctypes.memmove(ctypes.addressof(uid), bytes(unique_id), _abi.UNIQUE_ID_BYTES)
        handle = ctypes.c_void_p()
        check(lib.tpcommCommInitRank(ctypes.byref(handle), int(world_size), uid, int(rank),
                                     ctypes.byref(cfg)), "tpcommCommInitRank")
        return cls(handle.value, expected_device=index)

    @classmethod
    def from_process_group(cls, group: Any = None, device: Device = None,
                           **config: Any) -> "Communicator":
        """Collective over a torch.distributed group (gloo/CPU preferred; NCCL works too): the
        group all-gathers the rank handles, and all ranks agree on success, so a failure on one
        rank raises on every rank instead of leaving the others to time out."""
        from ._process_group import create

        return create(cls, group, device, make_config(**config))

    @classmethod
    def init_all(cls, devices: Sequence[Device], **config: Any) -> List["Communicator"]:
        """One communicator per device, all driven by this process. Wrap each collective's calls
        on all of them in `with tpcomm.group():`."""
        indices = [_device.device_index(d) for d in devices]
        cfg = make_config(**config)
        lib = _loader.lib()
        handles = (ctypes.c_void_p * len(indices))()
        devlist = (ctypes.c_int * len(indices))(*indices)
        check(lib.tpcommCommInitAll(handles, len(indices), devlist, ctypes.byref(cfg)),
              "tpcommCommInitAll")
        return [cls(handles[i], expected_device=indices[i]) for i in range(len(indices))]

    # ---- the collective ----
    def all_reduce(self, tensor: Any, out: Any = None, stream: Any = None, *,
                   dtype: DType = None, wire: Optional[str] = None) -> Any:
        """Sum over all ranks, bit-identical on every rank. In place unless `out` is given;
        returns the tensor holding the result. `tensor`/`out`: a torch tensor, an object with
        __cuda_array_interface__, or a DLPack tensor, dense and contiguous on this GPU.
        `stream`: an int handle, a torch/CuPy stream, or None (torch: the current stream;
        otherwise the array's __cuda_array_interface__ stream, else the default stream).
        `wire`: this call's quantized wire ("int8", "int4", "fp8", "fp8_e5m2", or "none" for
        full precision; None: the communicator's), under the communicator's rules for it
        (wire_min_bytes, the fabrics where a two-shot runs; last_call() says whether it was
        taken). Every rank must pass the same wire.
        Graph-capture safe: inside torch.cuda.graph the call is captured like a kernel."""
        code = _config.wire_code(wire)
        if (code < 0 and stream is None and dtype is None
                and self._all_reduce_plain_torch(tensor, out)):
            return tensor if out is None else out
        torch_in = _buffers.is_torch_tensor(tensor)
        src, keep_src = _buffers.describe(tensor, dtype, stream)
        dst, keep_dst = (src, None) if out is None else _buffers.describe(out, dtype, stream)
        if out is not None and (dst.count != src.count or dst.dtype != src.dtype):
            raise TpcommInvalidArgumentError(
                f"out has {dst.count} x {_abi.DTYPE_NAMES[dst.dtype]}, the input "
                f"{src.count} x {_abi.DTYPE_NAMES[src.dtype]}", code=4)
        for buf in (src,) if out is None else (src, dst):
            if buf.device != self.device:  # unknown (None) or another GPU: the slow check
                self._check_device(buf)
        if src.count == 0:
            return tensor if out is None else out
        if stream is None:
            handle = self._torch_stream() if torch_in else (src.stream or 0)
        else:
            handle = _buffers.stream_handle(stream)
        if code < 0:
            check(_loader.lib().tpcommAllReduce(src.ptr, dst.ptr, src.count, src.dtype, _abi.SUM,
                                                self._live(), handle), "tpcommAllReduce")
        else:
            check(_loader.lib().tpcommAllReduceWire(src.ptr, dst.ptr, src.count, src.dtype,
                                                    _abi.SUM, code, self._live(), handle),
                  "tpcommAllReduceWire")
        del keep_src, keep_dst  # DLPack capsules may die now: the call is enqueued
        return tensor if out is None else out

    def _all_reduce_plain_torch(self, tensor, out):
        """The common eager call, done without building buffer descriptions (about half of the
        wrapper's own cost): plain torch tensors, dense, of a supported dtype, on this GPU, on
        the current stream. False, having done nothing, for anything else (empty tensors too):
        the general path then serves it or says what is wrong."""
        plain = _buffers.torch_tensor_type()
        if plain is None or type(tensor) is not plain:
            return False
        code = _buffers.torch_dtype_code(tensor.dtype)
        if (code is None or not tensor.is_cuda or tensor.get_device() != self.device
                or not tensor.is_contiguous()):
            return False
        count = tensor.numel()
        if count == 0:
            return False
        send = recv = tensor.data_ptr()
        if out is not None:
            if (type(out) is not plain or out.dtype != tensor.dtype or out.numel() != count
                    or not out.is_cuda or out.get_device() != self.device
                    or not out.is_contiguous()):
                return False
            recv = out.data_ptr()
        self._all_reduce_checked(send, recv, count, code)
        return True

    def _all_reduce_checked(self, sendptr, recvptr, count, dtype_code):
        """The call on the current torch stream, for torch tensors the caller has already
        checked (tpcomm.torch.CustomAllreduce.should_custom_ar: dense, a supported dtype, on
        this GPU): an engine's eager call should not pay for the same checks twice."""
        check(_loader.lib().tpcommAllReduce(sendptr, recvptr, count, dtype_code, _abi.SUM,
                                            self._live(), self._torch_stream()),
              "tpcommAllReduce")

    def all_reduce_raw(self, sendptr: int, recvptr: int, count: int, dtype: DType,
                       stream: Any = 0) -> None:
        """The C call itself, for callers that hold raw device pointers."""
        check(_loader.lib().tpcommAllReduce(
            int(sendptr), int(recvptr), int(count), _buffers.dtype_code(dtype), _abi.SUM,
            self._live(), _buffers.stream_handle(stream)), "tpcommAllReduce")

    # ---- reduce-scatter and all-gather (the two halves of the two-shot) ----
    def reduce_scatter(self, tensor: Any, out: Any = None, stream: Any = None, *,
                       dtype: DType = None) -> Any:
        """tpcommReduceScatter: `tensor` holds world_size runs of n elements; rank r's `out`
        (n elements) gets run r summed over the ranks in rank order, the same bits on every rank.
        `out` None: a new torch tensor (torch input only), shaped [shape[0] / world_size, ...]
        where the first dim divides. In place when `out` is this rank's run of `tensor`.
        Buffers and streams as for all_reduce. Returns `out`."""
        return self._half(True, tensor, out, stream, dtype)

    def all_gather(self, tensor: Any, out: Any = None, stream: Any = None, *,
                   dtype: DType = None) -> Any:
        """tpcommAllGather: `out` (world_size x the input's elements; a new torch tensor shaped
        [world_size * shape[0], ...] when None, torch input only) gets every rank's `tensor` in
        rank order. In place when `tensor` is this rank's run of `out`. Returns `out`."""
        return self._half(False, tensor, out, stream, dtype)

    def reduce_scatter_raw(self, sendptr: int, recvptr: int, recvcount: int, dtype: DType,
                           stream: Any = 0) -> None:
        """The C call itself on raw device pointers (recvcount: elements per rank)."""
        self._half_call(True, int(sendptr), int(recvptr), int(recvcount),
                        _buffers.dtype_code(dtype), _buffers.stream_handle(stream))

    def all_gather_raw(self, sendptr: int, recvptr: int, sendcount: int, dtype: DType,
                       stream: Any = 0) -> None:
        """The C call itself on raw device pointers (sendcount: elements per rank)."""
        self._half_call(False, int(sendptr), int(recvptr), int(sendcount),
                        _buffers.dtype_code(dtype), _buffers.stream_handle(stream))

    def _half(self, rs, tensor, out, stream, dtype):
        op = "reduce_scatter" if rs else "all_gather"
        world = self.world_size
        src, keep_src = _buffers.describe(tensor, dtype, stream)
        if rs and src.count % world:
            raise TpcommInvalidArgumentError(
                f"{op}: the input has {src.count} elements, not a multiple of the world size "
                f"{world}", code=4)
        per = src.count // world if rs else src.count
        if out is None:
            if not _buffers.is_torch_tensor(tensor):
                raise TpcommInvalidArgumentError(
                    f"{op}: give out= for a non-torch input (only torch tensors are allocated)",
                    code=4)
            out = tensor.new_empty(_half_shape(rs, tuple(tensor.shape), world, per))
        dst, keep_dst = _buffers.describe(out, dtype, stream)
        want = per if rs else per * world
        if dst.count != want or dst.dtype != src.dtype:
            raise TpcommInvalidArgumentError(
                f"{op}: out has {dst.count} x {_abi.DTYPE_NAMES[dst.dtype]}, it must hold {want} "
                f"x {_abi.DTYPE_NAMES[src.dtype]}", code=4)
        for buf in (src, dst):
            if buf.device != self.device:  # unknown (None) or another GPU: the slow check
                self._check_device(buf)
        if per == 0:
            return out
        if stream is None:
            handle = (self._torch_stream() if _buffers.is_torch_tensor(tensor)
                      else (src.stream or 0))
        else:
            handle = _buffers.stream_handle(stream)
        self._half_call(rs, src.ptr, dst.ptr, per, src.dtype, handle)
        del keep_src, keep_dst  # DLPack capsules may die now: the call is enqueued
        return out

    def _half_call(self, rs, sendptr, recvptr, count, dtype_code, stream):
        name = "tpcommReduceScatter" if rs else "tpcommAllGather"
        handle = self._live()
        check(getattr(_loader.lib(), name)(sendptr, recvptr, count, dtype_code, handle, stream),
              name)

    def _half_torch_stream(self, rs, sendptr, recvptr, count, dtype_code):
        """_half_call on torch's current stream (tpcomm.torch's ops, tensors already checked)."""
        self._half_call(rs, sendptr, recvptr, count, dtype_code, self._torch_stream())

    # ---- the fused layer epilogue ----
    def all_reduce_add_rmsnorm_raw(self, input: int, residual_in: int, residual_out: int,
                                   norm_out: int, gamma: int, tokens: int, hidden: int,
                                   dtype: DType, eps: float = 1e-6, weight_offset: int = 0,
                                   quant_scale: int = 0, stream: Any = 0) -> None:
        """tpcommAllReduceAddRmsNorm on raw device pointers (include/tpcomm/tpcomm.h has the
        semantics and the in-place forms): residual_out = residual_in + sum of input over ranks,
        norm_out = RMSNorm(residual_out) * (weight_offset + gamma), or FP8 e4m3 bytes scaled by
        the float at device address `quant_scale` (0: no FP8). tpcomm.torch has it for tensors,
        as torch.library ops."""
        self._add_rmsnorm(input, residual_in, residual_out, norm_out, gamma, tokens, hidden,
                          _buffers.dtype_code(dtype), eps, weight_offset, quant_scale,
                          _buffers.stream_handle(stream))

    def _add_rmsnorm(self, input, residual_in, residual_out, norm_out, gamma, tokens, hidden,
                     dtype_code, eps, weight_offset, quant_scale, stream):
        params = _abi.RmsNormParams(_abi.RMSNORM_PARAMS_VERSION, float(eps), int(weight_offset),
                                    quant_scale or None)
        check(_loader.lib().tpcommAllReduceAddRmsNorm(
            input, residual_in, residual_out, norm_out, gamma, int(tokens), int(hidden),
            dtype_code, ctypes.byref(params), self._live(), stream), "tpcommAllReduceAddRmsNorm")

    def _add_rmsnorm_torch_stream(self, *args):
        """_add_rmsnorm on torch's current stream (tpcomm.torch's ops, tensors already checked)."""
        self._add_rmsnorm(*args, self._torch_stream())

    # ---- lifetime ----
    @property
    def closed(self) -> bool:
        return self._handle is None

    def close(self) -> None:
        """Frees the communicator (not collective). Idempotent. Make sure no captured graph that
        uses it is replayed afterwards, and no peer still runs a collective with it."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            check(_loader.lib().tpcommCommDestroy(handle), "tpcommCommDestroy")

    def __enter__(self) -> "Communicator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"GPU {self.device}"
        return f"<tpcomm.Communicator rank {self.rank}/{self.world_size}, {state}>"

    # ---- helpers ----
    def _live(self):
        if self._handle is None:
            raise TpcommInvalidUsageError("the communicator is closed", code=5)
        return self._handle

    def _check_device(self, buf):
        device = buf.device
        if device is None:  # __cuda_array_interface__ does not say; ask the driver
            device = _device.pointer_device(buf.ptr)
        if device is not None and device != self.device:
            raise TpcommInvalidArgumentError(
                f"the buffer is on GPU {device}, but rank {self.rank}'s communicator is on GPU "
                f"{self.device}", code=4)

    def _torch_stream(self):
        return _torch_raw_stream()(self.device)


def _half_shape(rs, shape, world, per):
    """The output shape of a reduce-scatter (first dim / world) or all-gather (first dim x world)
    of `shape`, as torch.distributed and the engines have it; flat where the first dim does not
    divide."""
    if rs:
        if shape and shape[0] % world == 0:
            return (shape[0] // world,) + shape[1:]
        return (per,)
    return (shape[0] * world,) + shape[1:] if shape else (per * world,)


_raw_stream = None


def _torch_raw_stream():
    """device index -> torch's current cudaStream_t as an int (found once: a per-call cost)."""
    global _raw_stream
    if _raw_stream is None:
        torch = sys.modules["torch"]
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # no Stream object: faster
        _raw_stream = raw or (lambda device: torch.cuda.current_stream(device).cuda_stream)
    return _raw_stream
