"""The engine plugins' fusion rewrite (tpcomm._fx_fusion, what the vLLM plugin's
fuse_allreduce_rms pass runs) on a GPU, without an engine: a traced layer tail (an all-reduce op,
then add + RMSNorm, laid out as vLLM's graph holds them) is rewritten into
torch.ops.tpcomm.fused_allreduce_rmsnorm, and the rewritten graph runs eagerly, compiled by
inductor, and captured into CUDA graphs replayed with new data. Two ranks share one GPU in one
process (init_all([0, 0]), a stream each), each with its own graph (the comm_id is a constant
of the graph, as in the engine). On the old code tpcomm._fx_fusion does not exist."""
import pytest

import gpu_common as g

torch = g.require_gpus(1)


def rewrite_worker(rank, world, gloo):
    import time
    from typing import Optional, Tuple

    from torch.fx.experimental.proxy_tensor import make_fx

    import tpcomm
    import tpcomm.torch as tt
    from tpcomm import _fx_fusion, testing

    @torch.library.custom_op("tpcomm_gpu_plugin_test::all_reduce", mutates_args=())
    def all_reduce(x: torch.Tensor, group_name: str) -> torch.Tensor:
        raise AssertionError("the rewrite should have removed the unfused all-reduce")

    @all_reduce.register_fake
    def _(x, group_name):
        return torch.empty_like(x)

    @torch.library.custom_op("tpcomm_gpu_plugin_test::add_rmsnorm", mutates_args=())
    def add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
                    variance_size: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
        raise AssertionError("the rewrite should have removed the unfused add + RMSNorm")

    @add_rmsnorm.register_fake
    def _(x, residual, weight, eps, variance_size=None):
        return torch.empty_like(x), torch.empty_like(residual)

    AR = torch.ops.tpcomm_gpu_plugin_test.all_reduce.default
    NORM = torch.ops.tpcomm_gpu_plugin_test.add_rmsnorm.default

    def layer(x, residual, weight):
        out, res = NORM(AR(x, "tp:0"), residual, weight, 1e-6)
        return out * 1, res  # a consumer after the fused op, as the next layer's GEMM

    torch.cuda.set_device(0)
    comms = tpcomm.Communicator.init_all([0, 0], max_blocks=8, timeout_ms=60000)
    ids = [tt.register_communicator(c) for c in comms]
    streams = [torch.cuda.Stream(0), torch.cuda.Stream(0)]
    report = []
    t0 = time.monotonic()

    def phase(name):
        nonlocal t0
        torch.cuda.synchronize()
        report.append(f"{name}: {time.monotonic() - t0:.2f} s")
        t0 = time.monotonic()

    def both(call):
        torch.cuda.synchronize()
        out = [None, None]
        with tpcomm.group():
            for r in range(2):
                with torch.cuda.stream(streams[r]):
                    out[r] = call(r)
        torch.cuda.synchronize()
        return out

    def inputs(t, h, seed):
        xs = [g.ints(t * h, r, torch.bfloat16, seed).view(t, h) for r in range(2)]
        res = g.ints(t * h, 5, torch.bfloat16, seed + 1).view(t, h)
        w = (torch.rand(h, device="cuda", generator=torch.Generator("cuda").manual_seed(seed))
             + 0.5).bfloat16()
        return xs, res, w, xs[0].float() + xs[1].float()

    def check(outs, sums, res, w, what):
        want_out, want_res = testing.add_rmsnorm_reference(sums, res, w, 1e-6)
        for r, (out, r_out) in enumerate(outs):
            g.assert_equal(r_out, want_res, f"residual_out, rank {r}, {what}")
            torch.testing.assert_close(out, want_out, rtol=1.6e-2, atol=1e-2, msg=what)
        assert torch.equal(outs[0][0], outs[1][0]), f"ranks differ: {what}"

    t, h = 8, 7168
    xs, res, w, sums = inputs(t, h, 0)
    graphs = []
    for r in range(2):
        gm = make_fx(layer, tracing_mode="fake")(xs[r], res, w)
        fused = _fx_fusion.fuse_allreduce_add_rmsnorm(
            gm.graph, AR, NORM, lambda node: node.args[1] == "tp:0", ids[r])
        gm.recompile()
        assert fused == 1, gm.graph
        graphs.append(gm)
    phase("trace + rewrite")

    check(both(lambda r: graphs[r](xs[r], res, w)), sums, res, w, "eager")
    phase("eager")

    # Inductor. Each rank's graph compiles on its first call; those calls run with a no-op
    # runner behind the comm_ids, so no rank's kernel waits for a peer that is compiling.
    compiled = [torch.compile(gm, fullgraph=True) for gm in graphs]
    runners = {cid: tt._torch_ops._runners[cid] for cid in ids}
    for cid in ids:
        tt._torch_ops._runners[cid] = lambda *args: None
    for r in range(2):
        compiled[r](xs[r], res, w)
    tt._torch_ops._runners.update(runners)
    phase("torch.compile (inductor) of both graphs")
    check(both(lambda r: compiled[r](xs[r], res, w)), sums, res, w, "inductor")
    phase("inductor run")

    # CUDA graphs of the compiled graphs, replayed with new data.
    static_res = [res.clone(), res.clone()]
    cuda_graphs, outs = [torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()], [None, None]
    captured = [c.stats()["captured"] for c in comms]
    torch.cuda.synchronize()
    for r in range(2):
        with torch.cuda.graph(cuda_graphs[r], stream=streams[r]):
            outs[r] = compiled[r](xs[r], static_res[r], w)
    assert [c.stats()["captured"] - n for c, n in zip(comms, captured)] == [1, 1]
    for seed in range(1, 4):
        new_xs, new_res, _, new_sums = inputs(t, h, seed)
        for r in range(2):
            xs[r].copy_(new_xs[r])
            static_res[r].copy_(new_res)
        torch.cuda.synchronize()
        for r in range(2):
            with torch.cuda.stream(streams[r]):
                cuda_graphs[r].replay()
        torch.cuda.synchronize()
        check(outs, new_sums, new_res, w, f"CUDA graph replay {seed}")
    del cuda_graphs
    phase("CUDA graphs (capture + 3 replays)")

    for c, cid in zip(comms, ids):
        tt.unregister_communicator(cid)
        assert c.async_error() is None
        c.close()
    return report


@pytest.mark.gpu
def test_the_plugins_fusion_rewrite_runs_eager_compiled_and_in_cuda_graphs(library_or_skip):
    from tpcomm import testing

    report = testing.launch(rewrite_worker, 1, distributed=False, timeout=g.LAUNCH_TIMEOUT)[0]
    print("\n".join(report))
