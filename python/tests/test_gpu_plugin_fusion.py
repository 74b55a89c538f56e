"""The engine plugins' fusion rewrite (tpcomm._fx_fusion, what the vLLM plugin's
fuse_allreduce_rms pass runs) on a GPU, without an engine: a traced layer tail (an all-reduce op,
then add + RMSNorm, then a consumer of the norm, laid out as vLLM's graph holds them:
fx_stand_ins.py, whose CPU twin is in test_engines.py) is rewritten into
torch.ops.tpcomm.fused_allreduce_rmsnorm, and the rewritten graph runs eagerly, compiled by
inductor, and captured into CUDA graphs replayed with new data. Two ranks share one GPU in one
process (gpu_common.SharedGpu), each with its own graph (the comm_id is a constant of the graph,
as in the engine).

The consumer after the fused op is a kernel the process has not launched before the first run,
launched between rank 0's fused call and rank 1's: every run is warmed (SharedGpu.both) so that
loading it cannot stall rank 0's kernel until the timeout (the failure this test once had:
residual_out all zeros, a minute lost)."""
import pytest

import gpu_common as g

torch = g.require_gpus(1)


def rewrite_worker(rank, world, gloo):
    import fx_stand_ins as fx

    from tpcomm import _fx_fusion

    # A short timeout: no kernel here waits for a peer while the host compiles (warmed runs), so
    # a stall is a failure and should cost seconds.
    gpu = g.SharedGpu(timeout_ms=10000)
    both = gpu.both
    t, h = 8, 7168
    xs, res, w, sums = g.fused_inputs(t, h, torch.bfloat16)
    graphs = []
    for r in range(2):
        gm, fused = fx.rewrite(fx.layer, (xs[r], res, w), gpu.ids[r])
        targets = fx.targets(gm)
        assert fused == 1 and _fx_fusion.FUSED in targets and fx.AR not in targets \
            and fx.NORM not in targets, gm.graph
        graphs.append(gm)
    gpu.phase("trace + rewrite")

    g.check_fused(both(lambda r: graphs[r](xs[r], res, w), warm=True), sums, res, w, "eager")
    gpu.phase("eager")

    # Inductor. Each rank's graph compiles in the warm-up run, where no kernel waits for a peer.
    compiled = [torch.compile(gm, fullgraph=True) for gm in graphs]
    outs = both(lambda r: compiled[r](xs[r], res, w), warm=True)
    gpu.phase("torch.compile (inductor) of both graphs, and a run")
    g.check_fused(outs, sums, res, w, "inductor")

    # CUDA graphs of the compiled graphs, replayed with new data.
    static_res = [res.clone(), res.clone()]
    cuda_graphs, outs = [torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()], [None, None]
    captured = [c.stats()["captured"] for c in gpu.comms]
    torch.cuda.synchronize()
    for r in range(2):
        with torch.cuda.graph(cuda_graphs[r], stream=gpu.streams[r]):
            outs[r] = compiled[r](xs[r], static_res[r], w)
    assert [c.stats()["captured"] - n for c, n in zip(gpu.comms, captured)] == [1, 1]
    for seed in range(1, 4):
        new_xs, new_res, _, new_sums = g.fused_inputs(t, h, torch.bfloat16, seed)
        for r in range(2):
            xs[r].copy_(new_xs[r])
            static_res[r].copy_(new_res)
        both(lambda r, graphs=cuda_graphs: graphs[r].replay())
        g.check_fused(outs, new_sums, new_res, w, f"CUDA graph replay {seed}")
    del cuda_graphs
    gpu.phase("CUDA graphs (capture + 3 replays)")
    gpu.close()
    return gpu.report


@pytest.mark.gpu
def test_the_plugins_fusion_rewrite_runs_eager_compiled_and_in_cuda_graphs(library_or_skip):
    g.launch_one_process(rewrite_worker)


def first_launch_worker(rank, world, gloo):
    """Why SharedGpu.both warms: rank 0's fused call, then a kernel this process has never
    launched (which CUDA loads lazily), then rank 1's call, unwarmed. Returns the seconds the
    three launches took and each rank's asynchronous error."""
    import time

    gpu = g.SharedGpu(timeout_ms=2000)
    xs, res, w, _ = g.fused_inputs(8, 7168, torch.bfloat16)
    fresh = torch.ones(4, device="cuda", dtype=torch.float64)

    def call(r):
        out = torch.ops.tpcomm.fused_allreduce_rmsnorm(xs[r], res, w, 1e-6, 0, None, gpu.ids[r])
        if r == 0:
            torch.sin(fresh)  # float64 sin: nothing in this process has launched it
        return out

    t0 = time.monotonic()
    gpu._run(call)
    seconds = time.monotonic() - t0
    errors = [c.async_error() for c in gpu.comms]
    for c in gpu.comms:
        c.close()
    return seconds, [repr(e) for e in errors]


@pytest.mark.gpu
def test_a_first_kernel_launch_between_the_ranks_calls_stalls_the_waiting_rank(library_or_skip):
    """The hazard SharedGpu.both's warm-up avoids, shown: loading a kernel between the ranks'
    launches waits for rank 0's kernel, which waits for rank 1's launch, until tpcomm's timeout
    (2 s here) ends it with an error and unwritten outputs. If this starts to pass through (CUDA
    loading kernels without waiting for the GPU), the warm-up is no longer needed."""
    from tpcomm import testing

    seconds, errors = testing.launch(first_launch_worker, 1, distributed=False,
                                     timeout=g.LAUNCH_TIMEOUT)[0]
    print(f"three launches: {seconds:.2f} s; asynchronous errors: {errors}")
    assert seconds >= 1.5 and errors[0] != "None", (seconds, errors)
