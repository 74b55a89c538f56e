"""torch.ops.tpcomm.reduce_scatter / all_gather on a GPU: two ranks sharing one GPU in one process
(init_all([0, 0]), a stream each), eagerly and captured into CUDA graphs replayed with new data.
Inputs are small integers, so every sum is exact: results must equal the torch reference bit for
bit on both ranks."""
import pytest

import gpu_common as g

torch = g.require_gpus(1)


def half_worker(rank, world, gloo):
    gpu = g.SharedGpu(timeout_ms=60000)
    comms, ids, streams, both = gpu.comms, gpu.ids, gpu.streams, gpu.both
    report = gpu.report

    def check(xs, rs, ags, what):
        total = xs[0].float() + xs[1].float()
        n = xs[0].shape[0] // 2
        for r in range(2):
            g.assert_equal(rs[r], total[r * n:(r + 1) * n].to(xs[0].dtype), f"RS rank {r} {what}")
            g.assert_equal(ags[r], torch.cat([xs[0], xs[1]]), f"AG rank {r} {what}")

    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for rows, h in ((2, 1), (2, 4097), (16, 7168), (64, 16384)):
            xs = [g.ints(rows * h, r, dtype).view(rows, h) for r in range(2)]
            rs = both(lambda r: torch.ops.tpcomm.reduce_scatter(xs[r], 2, ids[r]))
            ags = both(lambda r: torch.ops.tpcomm.all_gather(xs[r], 2, ids[r]))
            check(xs, rs, ags, f"eager {dtype} {rows}x{h}")
            report.append(f"{dtype} {rows}x{h}: {comms[0].last_call()['variant']}")

    # CUDA graphs: a reduce-scatter then an all-gather of its output, per rank, replayed.
    rows, h, dtype = 8, 7168, torch.bfloat16
    xs = [g.ints(rows * h, r, dtype).view(rows, h) for r in range(2)]
    graphs, outs = [torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()], [None, None]
    captured = [c.stats()["captured"] for c in comms]
    torch.cuda.synchronize()
    for r in range(2):
        with torch.cuda.graph(graphs[r], stream=streams[r]):
            part = torch.ops.tpcomm.reduce_scatter(xs[r], 2, ids[r])
            outs[r] = (part, torch.ops.tpcomm.all_gather(part, 2, ids[r]))
    assert [c.stats()["captured"] - n for c, n in zip(comms, captured)] == [2, 2]
    for seed in range(3):
        for r in range(2):
            xs[r].copy_(g.ints(rows * h, r, dtype, seed + 10).view(rows, h))
        torch.cuda.synchronize()
        for r in range(2):
            with torch.cuda.stream(streams[r]):
                graphs[r].replay()
        torch.cuda.synchronize()
        total = (xs[0].float() + xs[1].float()).to(dtype)
        for r in range(2):
            g.assert_equal(outs[r][0], total[r * 4:(r + 1) * 4], f"graph RS rank {r} {seed}")
            g.assert_equal(outs[r][1], total, f"graph AG rank {r} {seed}")
    report.append("graphs: 3 replays exact")
    del graphs
    gpu.close()
    return report


@pytest.mark.gpu
def test_half_ops_on_two_ranks_sharing_one_gpu(library_or_skip):
    g.launch_one_process(half_worker)
