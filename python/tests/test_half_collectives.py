"""Communicator.reduce_scatter / all_gather without a GPU: the argument checks made in Python
before the C call, and the C entry points' refusals through ctypes (tpcommReduceScatter,
tpcommAllGather, tpcommCommExplainCollective on a handle the library never created)."""
import ctypes

import pytest

from tpcomm import _abi, _loader
from tpcomm.communicator import Communicator, _half_shape
from tpcomm.errors import TpcommInvalidArgumentError, TpcommInvalidUsageError


class Array:
    """A stand-in device array (__cuda_array_interface__, never dereferenced)."""

    def __init__(self, n, typestr="<f4", ptr=0x10000):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": typestr, "data": (ptr, False),
                                         "version": 3, "strides": None}


def fake_comm(world=4, rank=1, handle=0x1234):
    comm = object.__new__(Communicator)  # no library call: the checks come first
    comm._handle = ctypes.c_void_p(handle)
    comm.rank, comm.world_size, comm.device = rank, world, 0
    return comm


def test_output_shapes_follow_dim0():
    assert _half_shape(True, (8, 3), 4, 6) == (2, 3)
    assert _half_shape(False, (2, 3), 4, 6) == (8, 3)
    # A first dim the world does not divide: flat, the elements still split evenly.
    assert _half_shape(True, (5, 4), 2, 10) == (10,)


def test_reduce_scatter_needs_a_multiple_of_the_world():
    with pytest.raises(TpcommInvalidArgumentError, match="not a multiple of the world size 4"):
        fake_comm().reduce_scatter(Array(10), out=Array(2))


def test_non_torch_input_needs_out():
    with pytest.raises(TpcommInvalidArgumentError, match="give out="):
        fake_comm().all_gather(Array(8))


def test_out_must_hold_the_result():
    with pytest.raises(TpcommInvalidArgumentError, match="it must hold 2 x float32"):
        fake_comm().reduce_scatter(Array(8), out=Array(3))
    with pytest.raises(TpcommInvalidArgumentError, match="it must hold 32 x float32"):
        fake_comm().all_gather(Array(8), out=Array(8))
    with pytest.raises(TpcommInvalidArgumentError, match="float16"):
        fake_comm().all_gather(Array(8), out=Array(32, "<f2"))


def test_explain_names_the_collectives():
    with pytest.raises(TpcommInvalidArgumentError, match="collective 'broadcast'"):
        fake_comm().explain(count=8, collective="broadcast")
    assert _abi.COLL_NAMES == ("all_reduce", "reduce_scatter", "all_gather")


def test_closed_communicator_is_refused():
    comm = fake_comm()
    comm._handle = None
    with pytest.raises(TpcommInvalidUsageError, match="closed"):
        comm.reduce_scatter_raw(0x1000, 0x2000, 4, "float32")


def test_the_library_refuses_a_handle_it_never_made(library_or_skip):
    lib = _loader.lib()
    bogus = ctypes.c_void_p(0x1234)
    for name in ("tpcommReduceScatter", "tpcommAllGather"):
        r = getattr(lib, name)(0x1000, 0x2000, 4, _abi.FLOAT32, bogus, None)
        assert _abi.RESULT_NAMES[r] == "tpcommInvalidUsage", name
        assert b"never created" in lib.tpcommGetLastError(), lib.tpcommGetLastError()
    info = _abi.CallInfo()
    r = lib.tpcommCommExplainCollective(bogus, 1, 4, _abi.FLOAT32, ctypes.byref(info))
    assert _abi.RESULT_NAMES[r] == "tpcommInvalidUsage"
    assert b"tpcommCommExplainCollective: comm" in lib.tpcommGetLastError()
    with pytest.raises(TpcommInvalidUsageError, match="tpcommAllGather"):
        fake_comm().all_gather_raw(0x1000, 0x2000, 4, "float32")
