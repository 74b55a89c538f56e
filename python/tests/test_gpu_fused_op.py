"""torch.ops.tpcomm.fused_allreduce_rmsnorm* on a GPU: two ranks sharing one GPU in one process
(init_all([0, 0]), a stream each), eagerly, captured into CUDA graphs and replayed with new
data, and compiled by torch.compile (inductor); every result against the fp32 torch reference
(testing.add_rmsnorm_reference) and bit-identical across the ranks. Partial sums and residuals
are small integers, so the sum and residual_out are exact whichever kernel ran; the norm is
within its dtype's rounding, FP8 within one e4m3 step."""
import pytest

import gpu_common as g

torch = g.require_gpus(1)

TOL = {torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2), torch.float16: dict(rtol=2e-3, atol=2e-3),
       torch.float32: dict(rtol=5e-5, atol=1e-5)}
FP8_TOL = dict(rtol=0.13, atol=2 ** -9)  # one e4m3 step (3 mantissa bits), subnormals


def fused_worker(rank, world, gloo):
    import time

    import tpcomm
    import tpcomm.torch as tt
    from tpcomm import testing

    torch.cuda.set_device(0)
    # Few blocks per kernel: both ranks' kernels must be resident on the one GPU at once. A long
    # timeout: rank 0's kernel waits for rank 1's while torch.compile compiles on the host.
    comms = tpcomm.Communicator.init_all([0, 0], max_blocks=8, timeout_ms=60000)
    ids = [tt.register_communicator(c) for c in comms]
    streams = [torch.cuda.Stream(0), torch.cuda.Stream(0)]
    report = []
    t0 = time.monotonic()

    def phase(name):
        nonlocal t0
        torch.cuda.synchronize()
        report.append(f"{name}: {time.monotonic() - t0:.1f} s")
        t0 = time.monotonic()

    def both(call):
        """call(r) -> result for both ranks, each on its own stream, after the inputs made on
        the default stream are complete."""
        torch.cuda.synchronize()
        out = [None, None]
        with tpcomm.group():
            for r in range(2):
                with torch.cuda.stream(streams[r]):
                    out[r] = call(r)
        torch.cuda.synchronize()
        return out

    def inputs(t, h, dtype, seed=0):
        xs = [g.ints(t * h, r, dtype, seed).view(t, h) for r in range(2)]
        res = g.ints(t * h, 5, dtype, seed + 1).view(t, h)
        w = (torch.rand(h, device="cuda", generator=torch.Generator("cuda").manual_seed(seed))
             + 0.5).to(dtype)
        sums = xs[0].float() + xs[1].float()
        return xs, res, w, sums

    def check(outs, sums, res, w, what, offset=0, scale=None):
        want_out, want_res = testing.add_rmsnorm_reference(sums, res, w, 1e-6, offset, scale)
        for r, (out, r_out) in enumerate(outs):
            g.assert_equal(r_out, want_res, f"residual_out, rank {r}, {what}")
            if scale is None:
                torch.testing.assert_close(out, want_out, **TOL[res.dtype], msg=what)
            else:
                torch.testing.assert_close(out.float(), want_out.float(), **FP8_TOL, msg=what)
        for a, b in zip(outs[0], outs[1]):
            assert torch.equal(a.view(torch.uint8), b.view(torch.uint8)), f"ranks differ: {what}"

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
            report.append(f"{what}: {comms[0].last_call()['variant']}")
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
        report.append(f"fp8 8x7168: {comms[0].last_call()['variant']}")
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

    phase("eager")

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
    phase("CUDA graphs")

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
    phase("torch.compile (inductor, compilation included)")

    for c in comms:
        assert c.async_error() is None
        c.close()
    return report


@pytest.mark.gpu
def test_fused_ops_on_two_ranks_sharing_one_gpu(library_or_skip):
    from tpcomm import testing

    report = testing.launch(fused_worker, 1, distributed=False, timeout=g.LAUNCH_TIMEOUT)[0]
    print("\n".join(report))
