"""tpcomm inside CUDA graphs (torch.cuda.graph), 2 GPUs, 2 processes: replays equal NCCL eager
results, many graphs share one communicator, and tpcomm interleaves with NCCL collectives on
the same stream inside one graph. No buffer registration step anywhere."""
import random

import pytest

import gpu_common as g

torch = g.require_gpus()


def _comm(gloo, rank):
    import tpcomm

    return tpcomm.Communicator.from_process_group(gloo, rank)


def _capture(body):
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        body()
    torch.cuda.synchronize()
    return graph


def scenario_replay_matches_nccl(rank, world, gloo):
    comm = _comm(gloo, rank)
    for name in ("float16", "bfloat16", "float32"):
        dtype = getattr(torch, name)
        esize = torch.finfo(dtype).bits // 8
        for n in (512 // esize * 2, 64 * 1024 // esize, (1 << 20) // esize + 3, (8 << 20) // esize):
            x = torch.zeros(n, device="cuda", dtype=dtype)
            y = torch.empty_like(x)
            z = torch.zeros_like(x)
            captured_before = comm.stats()["captured"]

            def body():
                comm.all_reduce(x, out=y)  # out of place
                z.copy_(x)
                comm.all_reduce(z)  # in place
            graph = _capture(body)
            stats = comm.stats()
            assert stats["captured"] - captured_before == 2, stats
            for seed in range(3):  # new data each replay: the graph reads the buffers live
                x.copy_(g.ints(n, rank, dtype, seed))
                ref = g.nccl_sum(x)
                graph.replay()
                g.assert_equal(y, ref, f"{name} x {n} replay {seed} (out of place)")
                g.assert_equal(z, ref, f"{name} x {n} replay {seed} (in place)")
                g.assert_same_on_all_ranks(y)
            assert comm.stats()["captured"] == stats["captured"], "replays must not count"
            del graph
    assert comm.async_error() is None
    comm.close()


def scenario_many_graphs_share_a_communicator(rank, world, gloo):
    comm = _comm(gloo, rank)
    rng = random.Random(7)  # the same sequence on every rank: collectives must line up
    cases = []
    for i in range(8):
        dtype = (torch.float16, torch.bfloat16, torch.float32)[i % 3]
        n = rng.choice([1, 300, 4096, 50_000, 262_144, 1_000_003 // (1 + i % 3)])
        x = torch.zeros(n, device="cuda", dtype=dtype)
        y1, y2 = torch.empty_like(x), torch.empty_like(x)

        def body(x=x, y1=y1, y2=y2):
            comm.all_reduce(x, out=y1)
            comm.all_reduce(y1, out=y2)  # chained: a sum of sums
        cases.append((x, y1, y2, _capture(body)))
    eager = g.ints(70_000, rank, torch.bfloat16)
    for round_ in range(3):
        order = list(range(len(cases)))
        rng.shuffle(order)
        for i in order:
            x, y1, y2, graph = cases[i]
            x.copy_(g.ints(x.numel(), rank, x.dtype, seed=round_ + i))
            ref1 = g.nccl_sum(x)
            ref2 = g.nccl_sum(ref1)
            graph.replay()
            g.assert_equal(y1, ref1, f"graph {i} round {round_} first call")
            g.assert_equal(y2, ref2, f"graph {i} round {round_} chained call")
            # eager calls on the same communicator between replays
            e = comm.all_reduce(eager, out=torch.empty_like(eager))
            g.assert_equal(e, g.nccl_sum(eager), "eager call between replays")
    comm.close()


def scenario_interleaved_with_nccl_in_one_graph(rank, world, gloo):
    """tpcomm -> NCCL -> elementwise -> tpcomm -> NCCL, all on the capture stream. Integer data
    stays exact (|values| <= 160 for 2 ranks)."""
    import torch.distributed as dist

    comm = _comm(gloo, rank)
    for dtype in (torch.bfloat16, torch.float32):
        n = 123_457
        x = torch.zeros(n, device="cuda", dtype=dtype)
        a, b = torch.empty_like(x), torch.empty_like(x)
        dist.all_reduce(a)  # NCCL must be initialised before its first capture

        def body():
            comm.all_reduce(x, out=a)
            dist.all_reduce(a)
            b.copy_(a + x)
            comm.all_reduce(b)
            dist.all_reduce(b)
        graph = _capture(body)
        for seed in range(3):
            x.copy_(g.ints(n, rank, dtype, seed))
            ra = g.nccl_sum(g.nccl_sum(x))
            rb = g.nccl_sum(g.nccl_sum(ra + x))
            graph.replay()
            g.assert_equal(a, ra, f"{dtype} seed {seed}: tpcomm then NCCL")
            g.assert_equal(b, rb, f"{dtype} seed {seed}: elementwise, tpcomm, NCCL")
        del graph
    comm.close()


def scenario_graph_on_a_side_stream_after_eager_work(rank, world, gloo):
    """The engines' pattern: eager warm-up calls, then capture on a separate stream."""
    comm = _comm(gloo, rank)
    x = g.ints(4096, rank, torch.bfloat16)
    out = torch.empty_like(x)
    for _ in range(3):
        comm.all_reduce(x, out=out)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            comm.all_reduce(x, out=out)
    torch.cuda.synchronize()
    for seed in range(5):
        x.copy_(g.ints(4096, rank, torch.bfloat16, seed))
        graph.replay()
        g.assert_equal(out, g.nccl_sum(x), f"side-stream graph replay {seed}")
    comm.close()


NAMES = ["replay_matches_nccl", "many_graphs_share_a_communicator",
         "interleaved_with_nccl_in_one_graph", "graph_on_a_side_stream_after_eager_work"]


@pytest.fixture(scope="module")
def outcome(library_or_skip):
    return g.launch_module(__name__, NAMES)


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_graphs(outcome, name):
    g.check(outcome, name)
