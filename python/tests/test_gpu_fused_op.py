"""torch.ops.tpcomm.fused_allreduce_rmsnorm* on a GPU: two ranks sharing one GPU in one process
(init_all([0, 0]), a stream each), eagerly, captured into CUDA graphs and replayed with new
data, and compiled by torch.compile (inductor); every result against the fp32 torch reference
(testing.add_rmsnorm_reference) and bit-identical across the ranks. Partial sums and residuals
are small integers, so the sum and residual_out are exact whichever kernel ran; the norm is
within its dtype's rounding, FP8 within one e4m3 step."""
import pytest

import gpu_common as g

torch = g.require_gpus(1)


def fused_worker(rank, world, gloo):
    import tpcomm

    # A long timeout: rank 0's kernel waits for rank 1's while torch.compile compiles on the host.
    gpu = g.SharedGpu(timeout_ms=60000)
    comms, ids, streams, both = gpu.comms, gpu.ids, gpu.streams, gpu.both
    inputs, check = g.fused_inputs, g.check_fused

    # Eager: the functional op (inputs untouched) and the in-place one, every dtype, rows of one
    # token to 256 and hidden sizes from 128 to 16384 with an odd one (at most 8 MiB a call).
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for t, h in ((1, 128), (7, 4097), (16, 7168), (256, 7168), (64, 16384)):
            what = f"{dtype} {t}x{h}"
            xs, res, w, sums = inputs(t, h, dtype)
            x0 = [x.clone() for x in xs]
            outs = both(lambda r: torch.ops.tpcomm.fused_allreduce_rmsnorm(
                xs[r], res, w, 1e-6, 0, None, ids[r]))
            check(outs, sums, res, w, "functional " + what)
            assert all(torch.equal(x, x0[r]) for r, x in enumerate(xs)), what
            gpu.report.append(f"{what}: {comms[0].last_call()['variant']}")
            rs = [res.clone(), res.clone()]
            both(lambda r: torch.ops.tpcomm.fused_allreduce_rmsnorm_(xs[r], rs[r], w, 1e-6, 1,
                                                                      ids[r]))
            check(list(zip(xs, rs)), sums, res, w, "in place, Gemma " + what, offset=1)

    if torch.cuda.get_device_capability(0) >= (8, 9):  # FP8 e4m3 output
        xs, res, w, sums = inputs(8, 7168, torch.bfloat16)
        scale = torch.tensor([0.02], device="cuda")
        outs = both(lambda r: torch.ops.tpcomm.fused_allreduce_rmsnorm(
            xs[r], res, w, 1e-6, 0, scale, ids[r]))
        check(outs, sums, res, w, "fp8", scale=scale)
        gpu.report.append(f"fp8 8x7168: {comms[0].last_call()['variant']}")
        qs = [torch.empty_like(xs[0], dtype=torch.float8_e4m3fn) for _ in range(2)]
        rs = [res.clone(), res.clone()]

        def quant_in_place(r):
            torch.ops.tpcomm.fused_allreduce_rmsnorm_quant_(qs[r], xs[r], rs[r], w, scale, 1e-6,
                                                            0, ids[r])
        # FP8 with the residual in place: the fused one-shot kernel's form only (tpcomm.h).
        if comms[0].explain_add_rmsnorm(8, 7168, "bfloat16", fp8=True)["variant"].startswith(
                "fused_"):
            both(quant_in_place)
            check(list(zip(qs, rs)), sums, res, w, "fp8 in place", scale=scale)
        else:
            for r in range(2):
                with pytest.raises(tpcomm.TpcommUnsupportedError, match="separate residualOut"):
                    quant_in_place(r)

    gpu.phase("eager")

    # CUDA graphs: each rank's calls captured on its stream, replayed with new data.
    t, h, dtype = 4, 7168, torch.bfloat16
    xs, res, w, _ = inputs(t, h, dtype)
    static_res = [res.clone(), res.clone()]
    graphs, outs = [torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()], [None, None]
    captured = [c.stats()["captured"] for c in comms]
    torch.cuda.synchronize()
    firsts = [None, None]
    for r in range(2):
        with torch.cuda.graph(graphs[r], stream=streams[r]):
            out, r_out = torch.ops.tpcomm.fused_allreduce_rmsnorm(xs[r], static_res[r], w, 1e-6,
                                                                  0, None, ids[r])
            firsts[r] = (out.clone(), r_out.clone())
            # A second epilogue whose partial sums are the first one's norm, in place.
            torch.ops.tpcomm.fused_allreduce_rmsnorm_(out, r_out, w, 1e-6, 0, ids[r])
            outs[r] = (out, r_out)
    assert [c.stats()["captured"] - n for c, n in zip(comms, captured)] == [2, 2]
    for seed in range(3):
        new_xs, new_res, _, sums = inputs(t, h, dtype, seed=seed + 10)
        for r in range(2):
            xs[r].copy_(new_xs[r])
            static_res[r].copy_(new_res)
        torch.cuda.synchronize()
        for r in range(2):
            with torch.cuda.stream(streams[r]):
                graphs[r].replay()
        torch.cuda.synchronize()
        check(firsts, sums, new_res, w, f"graph replay {seed}, first call")
        # Both ranks hold the same first norm (checked), so the second sum is twice it.
        first_out, first_res = firsts[0]
        check(outs, first_out.float() * 2, first_res, w, f"graph replay {seed}, second call")
    del graphs
    gpu.phase("CUDA graphs")

    # torch.compile (inductor), one graph for both communicators (comm_id is a SymInt).
    def layer(x, residual, weight, comm_id):
        out, r_out = torch.ops.tpcomm.fused_allreduce_rmsnorm(x * 2, residual, weight, 1e-6, 0,
                                                              None, comm_id)
        return out, r_out
    compiled = torch.compile(layer, fullgraph=True, dynamic=True)
    xs, res, w, sums = inputs(16, 7168, torch.bfloat16, seed=3)
    # Rank 0's call compiles, then its kernel waits for rank 1's, whose call finds the graph
    # compiled (comm_id is symbolic): no compilation while a kernel waits.
    outs = both(lambda r: compiled(xs[r], res, w, ids[r]))
    check(outs, sums * 2, res, w, "torch.compile")
    gpu.phase("torch.compile (inductor, compilation included)")
    gpu.close()
    return gpu.report


@pytest.mark.gpu
def test_fused_ops_on_two_ranks_sharing_one_gpu(library_or_skip):
    g.launch_one_process(fused_worker)
