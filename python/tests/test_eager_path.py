"""Communicator.all_reduce's plain-torch fast path, with a stand-in torch module and library: it
serves plain dense tensors on the communicator's GPU without building buffer descriptions, and
hands everything else to the general path, which serves it or raises the same errors as before.
No torch, GPU or library needed."""
import ctypes
import sys
import types

import pytest

import tpcomm
from tpcomm import _abi, _buffers, _loader, communicator

STREAM = 0x5151


class FakeTensor:
    """The few torch.Tensor members tpcomm reads."""
    __module__ = "torch"

    def __init__(self, ptr=0x7F0000001000, n=4096, dtype="bf16", device=0, contiguous=True):
        self.ptr, self.n, self.dtype, self.dev, self.contiguous = ptr, n, dtype, device, contiguous
        self.is_cuda = device >= 0
        self.shape = (n,)
        self.device = types.SimpleNamespace(type="cuda" if device >= 0 else "cpu", index=device)

    def data_ptr(self):
        return self.ptr

    def numel(self):
        return self.n

    def get_device(self):
        return self.dev

    def is_contiguous(self):
        return self.contiguous

    def stride(self):
        return (1 if self.contiguous else 2,)


class SubTensor(FakeTensor):  # e.g. nn.Parameter: not the plain type
    __module__ = "torch.nn.parameter"


class RecordingLib:
    def __init__(self):
        self.calls = []

    def tpcommAllReduce(self, *args):
        self.calls.append(args)
        return 0

    def tpcommGetLastError(self):
        return b""


@pytest.fixture
def comm(monkeypatch):
    torch = types.ModuleType("torch")
    torch.float16, torch.float32, torch.bfloat16 = "f16", "f32", "bf16"
    torch.Tensor = FakeTensor
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: STREAM)
    monkeypatch.setitem(sys.modules, "torch", torch)
    for module, name in ((_buffers, "_torch_codes"), (_buffers, "_torch_tensor"),
                         (communicator, "_raw_stream")):
        monkeypatch.setattr(module, name, None)  # found again from the stand-in, restored after
    lib = RecordingLib()
    monkeypatch.setattr(_loader, "_lib", lib)
    c = communicator.Communicator.__new__(communicator.Communicator)
    c._handle, c.rank, c.world_size, c.device = ctypes.c_void_p(7), 0, 2, 0
    c.lib = lib
    return c


def test_plain_tensors_skip_the_descriptions(comm, monkeypatch):
    def no_describe(*a, **k):
        raise AssertionError("the fast path built a description")
    monkeypatch.setattr(_buffers, "describe", no_describe)
    x, y = FakeTensor(), FakeTensor(ptr=0x7F0000100000)
    assert comm.all_reduce(x) is x
    assert comm.all_reduce(x, out=y) is y
    (s1, r1, n1, d1, op1, h1, st1), (s2, r2, *_rest) = comm.lib.calls
    assert (s1, r1, n1, d1, op1, st1) == (x.ptr, x.ptr, 4096, _abi.BFLOAT16, _abi.SUM, STREAM)
    assert h1.value == 7 and (s2, r2) == (x.ptr, y.ptr)


def test_anything_else_takes_the_general_path(comm, monkeypatch):
    described = []
    real = _buffers.describe
    monkeypatch.setattr(_buffers, "describe", lambda *a, **k: described.append(1) or real(*a, **k))
    comm.all_reduce(SubTensor())  # served, by the general path
    assert len(described) == 1 and len(comm.lib.calls) == 1
    comm.all_reduce(FakeTensor(), stream=0x99)  # an explicit stream: general path, that stream
    assert comm.lib.calls[-1][-1] == 0x99


@pytest.mark.parametrize("tensor,out,says", [
    (FakeTensor(contiguous=False), None, "not contiguous"),
    (FakeTensor(device=1), None, "on GPU 1"),
    (FakeTensor(device=-1), None, "not on a CUDA device"),
    (FakeTensor(dtype="i32"), None, "not supported"),
    (FakeTensor(), FakeTensor(dtype="f32"), "out has"),
    (FakeTensor(), FakeTensor(n=8), "out has"),
    (FakeTensor(), FakeTensor(device=1), "on GPU 1"),
])
def test_the_same_errors_as_before(comm, tensor, out, says):
    with pytest.raises(tpcomm.TpcommInvalidArgumentError, match=says):
        comm.all_reduce(tensor, out=out)
    assert comm.lib.calls == []


def test_empty_tensors_are_not_sent(comm):
    x = FakeTensor(n=0)
    assert comm.all_reduce(x) is x and comm.lib.calls == []
