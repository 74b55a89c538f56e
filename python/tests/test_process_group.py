"""The creation protocol of Communicator.from_process_group (Begin, all-gather, End, agree) with
threads standing in for ranks and a stand-in library: every rank learns of any rank's failure
and raises, none is left waiting, and no communicator leaks. No torch, GPU or library needed."""
import ctypes
import threading

import pytest

import tpcomm
from tpcomm import _abi, _config, _device, _loader, _process_group


class FakeLib:
    """The C calls begin_exchange_end and Communicator() make, with scripted failures."""

    def __init__(self, fail_begin=(), fail_end=(), nodes=1, fail_link_begin=(), fail_link_end=()):
        self.fail_begin, self.fail_end = set(fail_begin), set(fail_end)
        self.nodes = nodes
        self.fail_link_begin, self.fail_link_end = set(fail_link_begin), set(fail_link_end)
        self.linked_with, self.linked = {}, set()
        self.destroyed, self.ended_with = [], {}
        self.errors = threading.local()
        self.ranks = {}
        self.node_link_calls, self.fail_link_calls = {}, set()  # rank -> count; ranks refused

    def tpcommCommInitRankBegin(self, comm, world, rank, cfg, handle):
        if rank in self.fail_begin:
            self.errors.msg = b"tpcommNoDevice: no CUDA device is visible"
            return 9
        comm._obj.value = 1000 + rank
        self.ranks[1000 + rank] = (rank, world)
        payload = f"handle of rank {rank}".encode()
        ctypes.memmove(ctypes.addressof(handle._obj), payload, len(payload))
        return 0

    def tpcommCommInitRankEnd(self, comm, handles):
        rank = self.ranks[comm.value][0]
        self.ended_with[rank] = [bytes(h.internal).rstrip(b"\0") for h in handles]
        if rank in self.fail_end:
            self.errors.msg = b"tpcommSystemError: cudaIpcOpenMemHandle failed"
            self.destroyed.append(rank)  # End destroys on failure
            return 2
        return 0

    def tpcommCommNodes(self, comm, nodes, local):
        nodes._obj.value = self.nodes
        local._obj.value = self.ranks[comm.value][1] // self.nodes
        return 0

    def tpcommCommNodeLinkBegin(self, comm, handle):
        rank = self.ranks[comm.value][0]
        if rank in self.fail_link_begin:
            self.errors.msg = b"tpcommNcclError: NCCL links the machines but cannot be loaded"
            return 13
        payload = f"link of rank {rank}".encode()
        ctypes.memmove(ctypes.addressof(handle._obj), payload, len(payload))
        return 0

    def tpcommCommNodeLinkEnd(self, comm, handles):
        rank = self.ranks[comm.value][0]
        self.linked_with[rank] = [bytes(h.internal).rstrip(b"\0") for h in handles]
        if rank in self.fail_link_end:
            self.errors.msg = b"tpcommTimeout: ncclCommInitRank over 2 machines did not complete"
            return 8  # the communicator stays, unlinked
        self.linked.add(rank)
        return 0

    def tpcommCommGetStats(self, comm, stats):
        rank = self.ranks[comm.value][0]
        stats._obj.calls[_abi.ALGO_NAMES.index("nccl")] = 10 * self.node_link_calls.get(rank, 0)
        return 0

    def tpcommCommGetPtxJitCalls(self, comm, calls):
        calls._obj.value = 0
        return 0

    def tpcommCommGetNodeLinkCalls(self, comm, calls):
        rank = self.ranks[comm.value][0]
        if rank in self.fail_link_calls:
            self.errors.msg = b"tpcommInvalidUsage: the communicator is broken"
            return 5
        calls._obj.value = self.node_link_calls.get(rank, 0)
        return 0

    def tpcommCommDestroy(self, comm):
        self.destroyed.append(self.ranks[comm.value][0])
        return 0

    def tpcommGetLastError(self):
        return getattr(self.errors, "msg", b"")

    def tpcommGetErrorString(self, code):
        return b"error"

    def _query(self, comm, out, index):
        out._obj.value = self.ranks[comm.value][index] if index < 2 else self.ranks[comm.value][0]
        return 0

    def tpcommCommUserRank(self, comm, out):
        return self._query(comm, out, 0)

    def tpcommCommCount(self, comm, out):
        return self._query(comm, out, 1)

    def tpcommCommCuDevice(self, comm, out):
        return self._query(comm, out, 2)  # device == rank


def run_ranks(monkeypatch, lib, world=2, resolve=None):
    monkeypatch.setattr(_loader, "_lib", lib)
    monkeypatch.setattr(_device, "make_current", lambda index: None)
    barrier, slots = threading.Barrier(world, timeout=10), [None] * world
    results = [None] * world

    def all_gather_for(rank):
        def all_gather(payload, index):
            slots[rank] = payload
            barrier.wait()
            out = list(slots)
            barrier.wait()
            return out
        return all_gather

    def body(rank):
        try:
            results[rank] = _process_group.begin_exchange_end(
                tpcomm.Communicator, rank, world, _config.make_config(),
                (lambda r=rank: resolve(r)) if resolve else (lambda r=rank: r),
                all_gather_for(rank))
        except Exception as e:
            results[rank] = e
    threads = [threading.Thread(target=body, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
        assert not t.is_alive(), "a rank was left waiting"
    return results


def test_success_hands_every_rank_all_handles_in_rank_order(monkeypatch):
    lib = FakeLib()
    comms = run_ranks(monkeypatch, lib, world=3)
    assert [(c.rank, c.world_size, c.device) for c in comms] == [(0, 3, 0), (1, 3, 1), (2, 3, 2)]
    for rank in range(3):
        assert lib.ended_with[rank] == [f"handle of rank {r}".encode() for r in range(3)]
    assert lib.destroyed == []


def test_a_failed_begin_raises_everywhere(monkeypatch):
    lib = FakeLib(fail_begin={1})
    r0, r1 = run_ranks(monkeypatch, lib)
    assert isinstance(r1, tpcomm.TpcommNoDeviceError) and "no CUDA device" in str(r1)
    assert isinstance(r0, tpcomm.TpcommRemoteError) and "[1]" in str(r0)
    assert lib.destroyed == [0]  # rank 0's half-made communicator does not leak
    assert lib.ended_with == {}  # nobody went on to End


def test_a_failed_end_raises_everywhere(monkeypatch):
    lib = FakeLib(fail_end={0})
    r0, r1 = run_ranks(monkeypatch, lib)
    assert isinstance(r0, tpcomm.TpcommSystemError) and "cudaIpcOpenMemHandle" in str(r0)
    assert isinstance(r1, tpcomm.TpcommRemoteError) and "[0]" in str(r1)
    assert sorted(lib.destroyed) == [0, 1]


def test_a_python_side_failure_still_joins_the_exchange(monkeypatch):
    def resolve(rank):
        if rank == 1:
            raise tpcomm.TpcommInvalidArgumentError("device 'tpu:0' is not a CUDA device", code=4)
        return rank
    r0, r1 = run_ranks(monkeypatch, FakeLib(), resolve=resolve)
    assert isinstance(r1, tpcomm.TpcommInvalidArgumentError)
    assert isinstance(r0, tpcomm.TpcommRemoteError)


def test_without_a_driver_every_rank_raises_no_device(monkeypatch, library_or_skip):
    """The real library on a machine without a GPU: both ranks raise, neither waits."""
    import glob

    if glob.glob("/dev/nvidia[0-9]*"):
        pytest.skip("a GPU is present")
    barrier, slots = threading.Barrier(2, timeout=10), [None, None]
    results = [None, None]

    def body(rank):
        def all_gather(payload, index):
            slots[rank] = payload
            barrier.wait()
            out = list(slots)
            barrier.wait()
            return out
        try:
            _process_group.begin_exchange_end(tpcomm.Communicator, rank, 2, _config.make_config(),
                                              lambda: rank, all_gather)
        except Exception as e:
            results[rank] = e
    threads = [threading.Thread(target=body, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert all(isinstance(e, tpcomm.TpcommNoDeviceError) for e in results), results


def test_one_machine_has_no_second_round(monkeypatch):
    lib = FakeLib(nodes=1)
    run_ranks(monkeypatch, lib, world=2)
    assert lib.linked_with == {}


def test_across_machines_the_second_round_links_every_rank(monkeypatch):
    lib = FakeLib(nodes=2)
    comms = run_ranks(monkeypatch, lib, world=4)
    assert [c.rank for c in comms] == [0, 1, 2, 3]
    for rank in range(4):
        # The link handles of every rank, in rank order: not the first round's handles.
        assert lib.linked_with[rank] == [f"link of rank {r}".encode() for r in range(4)]
    assert lib.linked == {0, 1, 2, 3}
    assert lib.destroyed == []


def test_a_failed_link_begin_raises_everywhere_and_nobody_links(monkeypatch):
    lib = FakeLib(nodes=2, fail_link_begin={2})
    results = run_ranks(monkeypatch, lib, world=4)
    assert isinstance(results[2], tpcomm.TpcommNcclError), results[2]
    for r in (0, 1, 3):
        assert isinstance(results[r], tpcomm.TpcommRemoteError) and "[2]" in str(results[r])
    assert lib.linked_with == {}
    assert sorted(lib.destroyed) == [0, 1, 2, 3]  # Begin leaves the communicator: none leaks


def test_a_failed_link_end_raises_everywhere_and_destroys_every_communicator(monkeypatch):
    lib = FakeLib(nodes=2, fail_link_end={3})
    results = run_ranks(monkeypatch, lib, world=4)
    assert isinstance(results[3], tpcomm.TpcommTimeoutError), results[3]
    assert "did not complete" in str(results[3])
    for r in (0, 1, 2):
        assert isinstance(results[r], tpcomm.TpcommRemoteError)
        assert "failed to link the 2 machines" in str(results[r])
    assert sorted(lib.destroyed) == [0, 1, 2, 3]


def test_nodes_and_node_link_calls_across_machines(monkeypatch):
    lib = FakeLib(nodes=2)
    comms = run_ranks(monkeypatch, lib, world=4)
    lib.node_link_calls = {0: 3, 1: 4, 2: 5, 3: 6}
    assert [c.nodes for c in comms] == [(2, 2)] * 4
    for rank, comm in enumerate(comms):
        stats = comm.stats()
        assert stats["node_link_calls"] == 3 + rank
        assert stats["calls"]["nccl"] == 10 * (3 + rank)  # the library's count, passed through


def test_one_machine_has_one_node_and_no_node_link_calls(monkeypatch):
    comms = run_ranks(monkeypatch, FakeLib(nodes=1), world=2)
    assert [c.nodes for c in comms] == [(1, 2), (1, 2)]
    assert [c.stats()["node_link_calls"] for c in comms] == [0, 0]


def test_nodes_and_node_link_calls_raise_the_librarys_error(monkeypatch):
    lib = FakeLib(nodes=2)
    comms = run_ranks(monkeypatch, lib, world=2)
    lib.fail_link_calls = {1}
    assert comms[0].stats()["node_link_calls"] == 0
    with pytest.raises(tpcomm.TpcommInvalidUsageError, match="broken"):
        comms[1].stats()
    comms[0].close()
    with pytest.raises(tpcomm.TpcommInvalidUsageError, match="closed"):
        comms[0].nodes
