"""Eager all-reduce on 2 GPUs, 2 processes: equal to torch.distributed.all_reduce (NCCL) and
bit-identical across ranks, fp16/bf16/fp32, 1 element .. 8 MiB; every creation path and every
accepted buffer form; the errors a caller can make."""
import pytest

import gpu_common as g

torch = g.require_gpus()

DTYPES = ("float16", "bfloat16", "float32")
# Random (non-integer) data: NCCL may round differently from tpcomm's fp32 accumulation at
# larger world sizes, so the comparison allows the dtype's tolerance; ranks must still agree.
TOL = {"float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1.3e-6, 1e-5)}


def _comm(gloo, rank):
    import tpcomm

    return tpcomm.Communicator.from_process_group(gloo, rank)


# ---- scenarios (run on every rank) ----
def scenario_eager_exact(rank, world, gloo):
    comm = _comm(gloo, rank)
    for name in DTYPES:
        dtype = getattr(torch, name)
        esize = torch.finfo(dtype).bits // 8
        for n in g.sizes(esize):
            what = f"{name} x {n}"
            x = g.ints(n, rank, dtype)
            ref = g.nccl_sum(x)
            y = torch.full_like(x, float("nan"))
            assert comm.all_reduce(x, out=y) is y
            g.assert_equal(y, ref, what + " out of place")
            g.assert_equal(x, g.ints(n, rank, dtype), what + " input untouched")
            assert comm.all_reduce(x) is x
            g.assert_equal(x, ref, what + " in place")
            g.assert_same_on_all_ranks(y)
    assert comm.async_error() is None
    comm.close()


def scenario_eager_random(rank, world, gloo):
    comm = _comm(gloo, rank)
    gen = torch.Generator(device="cuda").manual_seed(1234 + rank)
    for name in DTYPES:
        dtype = getattr(torch, name)
        for n in (5, 4096, 300_001, 2 * 1024 * 1024):
            x = torch.randn(n, device="cuda", dtype=dtype, generator=gen)
            ref = g.nccl_sum(x)
            y = comm.all_reduce(x, out=torch.empty_like(x))
            rtol, atol = TOL[name]
            torch.testing.assert_close(y.float(), ref.float(), rtol=rtol, atol=atol)
            g.assert_same_on_all_ranks(y)
    comm.close()


def scenario_stats_and_explain(rank, world, gloo):
    import tpcomm

    comm = _comm(gloo, rank)
    before = comm.stats()
    x = g.ints(512, rank, torch.bfloat16)
    for _ in range(3):
        comm.all_reduce(x)
    after = comm.stats()
    assert sum(after["calls"].values()) - sum(before["calls"].values()) == 3
    assert after["bytes"] - before["bytes"] == 3 * 1024
    last = comm.last_call()
    assert last["algo"] in tpcomm.ALGORITHMS and last["algo"] != "auto", last
    assert last["bytes"] == 1024 and last["dtype"] == "bfloat16" and last["reason"], last
    plan = comm.explain(nbytes=1024, dtype="bfloat16")
    assert plan["algo"] == last["algo"], (plan, last)
    big = comm.explain(nbytes=64 << 20)
    assert big["algo"] in tpcomm.ALGORITHMS, big
    if rank == 0:
        print(f"stats {after}; 1 KiB -> {last['algo']} ({last['reason']}); 64 MiB -> "
              f"{big['algo']}", flush=True)
    comm.close()


def scenario_from_unique_id(rank, world, gloo):
    import torch.distributed as dist

    import tpcomm

    box = [tpcomm.get_unique_id() if rank == 0 else None]
    dist.broadcast_object_list(box, src=0, group=gloo)
    with tpcomm.Communicator.from_unique_id(rank, world, box[0], device=rank) as comm:
        assert (comm.rank, comm.world_size, comm.device) == (rank, world, rank)
        x = g.ints(10_000, rank, torch.float16)
        g.assert_equal(comm.all_reduce(x.clone()), g.nccl_sum(x), "unique-id communicator")
    assert comm.closed


def scenario_buffer_forms(rank, world, gloo):
    """__cuda_array_interface__ objects, DLPack capsules and __dlpack__ objects, in place."""
    from torch.utils import dlpack

    comm = _comm(gloo, rank)

    class CaiOnly:  # what CuPy / numba arrays look like to tpcomm
        def __init__(self, t):
            self.__cuda_array_interface__ = t.__cuda_array_interface__

    class DlpackOnly:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    for dtype in (torch.float16, torch.float32):
        x = g.ints(3000, rank, dtype)
        ref = g.nccl_sum(x)
        comm.all_reduce(CaiOnly(x))
        torch.cuda.synchronize()
        g.assert_equal(x, ref, f"__cuda_array_interface__ {dtype}")
    for dtype in (torch.bfloat16, torch.float32):
        x = g.ints(3000, rank, dtype)
        ref = g.nccl_sum(x)
        comm.all_reduce(dlpack.to_dlpack(x))
        torch.cuda.synchronize()
        g.assert_equal(x, ref, f"DLPack capsule {dtype}")
        x = g.ints(3000, rank, dtype)
        comm.all_reduce(DlpackOnly(x))
        torch.cuda.synchronize()
        g.assert_equal(x, ref, f"__dlpack__ object {dtype}")
    comm.close()


def scenario_streams(rank, world, gloo):
    comm = _comm(gloo, rank)
    side = torch.cuda.Stream()
    x = g.ints(100_000, rank, torch.bfloat16)
    ref = g.nccl_sum(x)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # torch's current stream is used
        y = comm.all_reduce(x, out=torch.empty_like(x))
    side.synchronize()
    g.assert_equal(y, ref, "on torch's current (side) stream")
    z = torch.empty_like(x)
    torch.cuda.synchronize()
    comm.all_reduce(x, out=z, stream=side)  # an explicit stream object
    side.synchronize()
    g.assert_equal(z, ref, "explicit stream=")
    comm.close()


def scenario_caller_errors(rank, world, gloo):
    """Mistakes are refused on the calling rank before anything is enqueued (no collective)."""
    import tpcomm

    comm = _comm(gloo, rank)
    bad = {
        "CPU tensor": (torch.ones(8), "not on a CUDA device"),
        "int32": (torch.ones(8, device="cuda", dtype=torch.int32), "not supported"),
        "non-contiguous": (torch.ones(8, 8, device="cuda").t(), "not contiguous"),
        "other GPU": (torch.ones(8, device=f"cuda:{1 - rank}"), "is on GPU"),
    }
    for what, (t, words) in bad.items():
        try:
            comm.all_reduce(t)
        except tpcomm.TpcommInvalidArgumentError as e:
            assert words in str(e), (what, str(e))
        else:
            raise AssertionError(f"{what}: no error")
    x = torch.ones(8, device="cuda")
    try:
        comm.all_reduce(x, out=torch.empty(9, device="cuda"))
        raise AssertionError("mismatched out accepted")
    except tpcomm.TpcommInvalidArgumentError:
        pass
    assert comm.all_reduce(torch.empty(0, device="cuda")).numel() == 0  # empty: a no-op
    comm.close()
    comm.close()  # idempotent
    try:
        comm.all_reduce(x)
        raise AssertionError("closed communicator accepted a call")
    except tpcomm.TpcommInvalidUsageError:
        pass


NAMES = ["eager_exact", "eager_random", "stats_and_explain", "from_unique_id", "buffer_forms",
         "streams", "caller_errors"]


@pytest.fixture(scope="module")
def outcome(library_or_skip):
    return g.launch_module(__name__, NAMES)


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_allreduce(outcome, name):
    g.check(outcome, name)


# ---- one process driving both GPUs ----
def init_all_worker(rank, world, gloo):
    import tpcomm

    comms = tpcomm.Communicator.init_all([0, 1])
    assert [(c.rank, c.device) for c in comms] == [(0, 0), (1, 1)]
    for dtype in (torch.bfloat16, torch.float32):
        for n in (1, 4097, 1 << 20):
            xs = [g_ints_on(n, r, dtype) for r in range(2)]
            want = (xs[0].cpu().float() + xs[1].cpu().float()).to(dtype)
            with tpcomm.group():
                for c, x in zip(comms, xs):
                    c.all_reduce(x)
            for r, x in enumerate(xs):
                torch.cuda.synchronize(r)
                g.assert_equal(x.cpu(), want, f"init_all rank {r} {dtype} x {n}")
    for c in comms:
        c.close()
    return "ok"


def g_ints_on(n, rank, dtype):
    with torch.cuda.device(rank):
        return g.ints(n, rank, dtype)


@pytest.mark.gpu
def test_init_all_one_process(library_or_skip):
    from tpcomm import testing

    assert testing.launch(init_all_worker, 1, distributed=False,
                          timeout=g.LAUNCH_TIMEOUT) == ["ok"]
