"""API surface and the pure-Python parts (no library, no GPU, no torch needed)."""
import ctypes

import pytest

import tpcomm
from tpcomm import _abi, _buffers, _config, _device, errors


def test_public_names():
    for name in tpcomm.__all__:
        assert hasattr(tpcomm, name), name
    for method in ("from_process_group", "from_unique_id", "init_all", "all_reduce",
                   "all_reduce_raw", "stats", "last_call", "explain", "async_error", "close"):
        assert callable(getattr(tpcomm.Communicator, method)), method
    assert tpcomm.ALGORITHMS[:4] == ("auto", "oneshot", "twoshot", "nccl")
    assert (tpcomm.FLOAT16, tpcomm.FLOAT32, tpcomm.BFLOAT16) == (6, 7, 9)


@pytest.mark.parametrize("code,cls,builtin", [
    (1, tpcomm.TpcommCudaError, RuntimeError),
    (4, tpcomm.TpcommInvalidArgumentError, ValueError),
    (8, tpcomm.TpcommTimeoutError, TimeoutError),
    (9, tpcomm.TpcommNoDeviceError, RuntimeError),
    (10, tpcomm.TpcommNoKernelImageError, RuntimeError),
    (12, tpcomm.TpcommFallbackRefusedError, RuntimeError),
    (13, tpcomm.TpcommNcclError, RuntimeError),
])
def test_error_class_per_result_code(code, cls, builtin):
    e = errors.make_error(code, "something failed", "tpcommAllReduce")
    assert type(e) is cls and isinstance(e, tpcomm.TpcommError) and isinstance(e, builtin)
    assert e.code == code and e.name == _abi.RESULT_NAMES[code]
    assert str(e) == "tpcommAllReduce: something failed"


def test_every_result_code_has_a_class():
    for code in range(1, _abi.NUM_RESULTS):
        assert errors.error_class(code) is not tpcomm.TpcommError, _abi.RESULT_NAMES[code]
    assert errors.error_class(99) is tpcomm.TpcommError


def test_op_not_repeated_when_the_message_names_it():
    e = errors.make_error(4, "tpcommAllReduce: count is 0", None)
    assert str(e) == "tpcommAllReduce: count is 0"


def test_config_defaults_match_the_initializer():
    cfg = _config.make_config()
    assert (cfg.size, cfg.magic, cfg.version) == (ctypes.sizeof(_abi.Config), _abi.CONFIG_MAGIC, 2)
    assert (cfg.bufferBytes, cfg.timeoutMs, cfg.strict, cfg.algo, cfg.ncclMode, cfg.maxBlocks,
            cfg.initTimeoutMs) == (0, 0, -1, -1, -1, 0, 0)
    assert cfg.launchKnobs is None


def test_config_values():
    cfg = _config.make_config(buffer_bytes=1 << 20, timeout_ms=200, strict=True, algo="twoshot",
                              nccl="off", max_blocks=8, init_timeout_ms=90000)
    assert (cfg.bufferBytes, cfg.timeoutMs, cfg.strict, cfg.algo, cfg.ncclMode, cfg.maxBlocks,
            cfg.initTimeoutMs) == (1 << 20, 200, 1, 2, _abi.NCCL_OFF, 8, 90000)
    assert _config.make_config(nccl_comm=0x1234).ncclMode == _abi.NCCL_GIVEN
    assert _config.make_config(algo="auto").algo == 0


def test_config_launch_knobs_and_the_wire():
    cfg = _config.make_config(launch_knobs="lean=0", wire="int8", wire_min_bytes=1 << 22)
    assert cfg.launchKnobs == b"lean=0,wire=int8,wire_min_bytes=4194304"
    assert _config.make_config(wire="fp8").launchKnobs == b"wire=fp8"


@pytest.mark.parametrize("kwargs", [{"algo": "fastest"}, {"algo": 42}, {"nccl": "maybe"}])
def test_config_rejects_bad_values(kwargs):
    with pytest.raises(tpcomm.TpcommInvalidArgumentError):
        _config.make_config(**kwargs)


def test_dtype_codes():
    assert _buffers.dtype_code("bfloat16") == 9 and _buffers.dtype_code("torch.float16") == 6
    assert _buffers.dtype_code(7) == 7
    for bad in ("int32", 3):
        with pytest.raises(tpcomm.TpcommInvalidArgumentError):
            _buffers.dtype_code(bad)


class FakeCai:
    def __init__(self, shape, typestr="<f2", strides=None, ptr=0x10000, readonly=False, stream=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides,
                                         "data": (ptr, readonly), "version": 3, "stream": stream}


def test_cuda_array_interface():
    buf, keep = _buffers.describe(FakeCai((4, 8)))
    assert buf == _buffers.Buffer(0x10000, 32, _abi.FLOAT16, None, None) and keep is None
    assert _buffers.describe(FakeCai((3,), "<f4", (4,), stream=7))[0].stream == 7
    # A 2-D C-contiguous array given explicit strides is fine; a transposed one is not.
    assert _buffers.describe(FakeCai((2, 3), "<f4", (12, 4)))[0].count == 6
    with pytest.raises(tpcomm.TpcommInvalidArgumentError, match="not C-contiguous"):
        _buffers.describe(FakeCai((2, 3), "<f4", (4, 8)))
    with pytest.raises(tpcomm.TpcommInvalidArgumentError, match="read-only"):
        _buffers.describe(FakeCai((2,), readonly=True))
    with pytest.raises(tpcomm.TpcommInvalidArgumentError, match="bfloat16"):
        _buffers.describe(FakeCai((2,), "<i4"))
    # bfloat16 has no typestr: the caller names it.
    assert _buffers.describe(FakeCai((2,), "<V2"), dtype="bfloat16")[0].dtype == _abi.BFLOAT16


def _make_dlpack_capsule(device_type, code, bits, shape, strides=None, data=0x20000, offset=0):
    """A real "dltensor" capsule built with ctypes (what torch/CuPy/JAX hand out)."""
    class DLManagedTensor(ctypes.Structure):
        _fields_ = [("dl_tensor", _buffers._DLTensor), ("manager_ctx", ctypes.c_void_p),
                    ("deleter", ctypes.c_void_p)]

    n = len(shape)
    shape_arr = (ctypes.c_int64 * n)(*shape)
    strides_arr = (ctypes.c_int64 * n)(*strides) if strides else None
    m = DLManagedTensor()
    m.dl_tensor.data = data
    m.dl_tensor.device = _buffers._DLDevice(device_type, 1)
    m.dl_tensor.ndim = n
    m.dl_tensor.dtype = _buffers._DLDataType(code, bits, 1)
    m.dl_tensor.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    if strides_arr is not None:
        m.dl_tensor.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    m.dl_tensor.byte_offset = offset
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    capsule = new(ctypes.addressof(m), b"dltensor", None)
    return capsule, (m, shape_arr, strides_arr)  # keep the memory alive


def test_dlpack_capsule_is_read_not_consumed():
    capsule, keep = _make_dlpack_capsule(2, 4, 16, (2, 5), offset=64)  # CUDA bfloat16
    buf, held = _buffers.describe(capsule)
    assert buf == _buffers.Buffer(0x20000 + 64, 10, _abi.BFLOAT16, 1, None)
    assert held is capsule
    assert _buffers._capsule_name(capsule) == b"dltensor"  # still the caller's to consume


def test_dlpack_rejects_host_memory_and_bad_layouts():
    capsule, keep = _make_dlpack_capsule(1, 2, 32, (4,))  # kDLCPU float32
    with pytest.raises(tpcomm.TpcommInvalidArgumentError, match="not CUDA"):
        _buffers.describe(capsule)
    capsule, keep = _make_dlpack_capsule(2, 0, 32, (4,))  # int32
    with pytest.raises(tpcomm.TpcommInvalidArgumentError, match="not float16"):
        _buffers.describe(capsule)
    capsule, keep = _make_dlpack_capsule(2, 2, 32, (2, 3), strides=(1, 2))  # transposed
    with pytest.raises(tpcomm.TpcommInvalidArgumentError, match="C-contiguous"):
        _buffers.describe(capsule)


def test_unknown_objects_are_refused_with_a_hint():
    with pytest.raises(tpcomm.TpcommInvalidArgumentError, match="__cuda_array_interface__"):
        _buffers.describe([1.0, 2.0])


def test_stream_handles():
    class TorchLike:
        cuda_stream = 0x55

    class CupyLike:
        ptr = 0x66

    assert _buffers.stream_handle(None) == 0
    assert _buffers.stream_handle(7) == 7
    assert _buffers.stream_handle(TorchLike()) == 0x55
    assert _buffers.stream_handle(CupyLike()) == 0x66
    with pytest.raises(tpcomm.TpcommInvalidArgumentError):
        _buffers.stream_handle("default")


@pytest.mark.parametrize("given,index", [(None, None), (3, 3), ("cuda:2", 2), ("1", 1)])
def test_device_index(given, index):
    assert _device.device_index(given) == index


@pytest.mark.parametrize("bad", ["cpu", -1, 1.5])
def test_device_index_rejects(bad):
    with pytest.raises(tpcomm.TpcommInvalidArgumentError):
        _device.device_index(bad)


def test_unique_id_must_be_128_bytes():
    with pytest.raises(tpcomm.TpcommInvalidArgumentError, match="128 bytes"):
        tpcomm.Communicator.from_unique_id(0, 2, b"short")


def test_the_calls_wire_codes():
    # Communicator.all_reduce(wire=...): tpcommAllReduceWire's codes; None keeps the
    # communicator's; anything else is refused naming the codecs.
    assert _config.wire_code(None) == -1
    assert [_config.wire_code(w) for w in ("none", "int8", "int4", "fp8", "fp8_e4m3",
                                           "fp8_e5m2")] == [0, 1, 2, 3, 3, 4]
    for bad in ("int3", "INT8", 1, ""):
        with pytest.raises(tpcomm.TpcommInvalidArgumentError, match="not a codec"):
            _config.wire_code(bad)
