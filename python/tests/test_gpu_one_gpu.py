"""Two ranks sharing one GPU, driven by one process (init_all([0, 0]), a stream per rank): the
Python call path with real torch tensors on any machine with a GPU. Plain dense tensors take
Communicator.all_reduce's short path (in place and out of place); slices, other streams and
the caller's errors take the general path. Sums of small integers are exact."""
import pytest

import gpu_common as g

torch = g.require_gpus(1)


def one_gpu_worker(rank, world, gloo):
    import tpcomm

    torch.cuda.set_device(0)
    # Few blocks per kernel: both ranks' kernels must be resident on the one GPU at once.
    comms = tpcomm.Communicator.init_all([0, 0], max_blocks=8)
    streams = [torch.cuda.Stream(0), torch.cuda.Stream(0)]

    def both(call, comms=comms):
        """call(r, comm) for both ranks, each on its own stream (one would wait for the other),
        after the inputs made on the default stream are complete (the side streams do not wait
        for it)."""
        torch.cuda.synchronize()
        with tpcomm.group():
            for r, c in enumerate(comms):
                with torch.cuda.stream(streams[r]):
                    call(r, c)
        torch.cuda.synchronize()

    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for n in (1, 4097, 65537):
            what = f"{dtype} x {n}"
            xs = [g.ints(n, r, dtype) for r in range(2)]
            want = (xs[0].cpu().float() + xs[1].cpu().float()).to(dtype)
            outs = [torch.empty_like(x) for x in xs]
            both(lambda r, c: c.all_reduce(xs[r], out=outs[r]))
            both(lambda r, c: c.all_reduce(xs[r]))
            for r in range(2):
                g.assert_equal(outs[r].cpu(), want, f"out of place, rank {r}, {what}")
                g.assert_equal(xs[r].cpu(), want, f"in place, rank {r}, {what}")
            assert comms[0].last_call()["bytes"] == n * xs[0].element_size(), what

    # A slice at an odd element offset (dense, so still the short path) and an explicit stream
    # (the general path): both must land where they were asked to.
    base = [g.ints(1001, r, torch.bfloat16) for r in range(2)]
    want = (base[0][1:].cpu().float() + base[1][1:].cpu().float()).to(torch.bfloat16)
    both(lambda r, c: c.all_reduce(base[r][1:]))
    for r in range(2):
        g.assert_equal(base[r][1:].cpu(), want, f"odd slice, rank {r}")
    ys = [g.ints(300, r, torch.float32) for r in range(2)]
    want = ys[0].cpu() + ys[1].cpu()
    torch.cuda.synchronize()
    with tpcomm.group():
        for r, c in enumerate(comms):
            c.all_reduce(ys[r], stream=streams[r])
    torch.cuda.synchronize()
    for r in range(2):
        g.assert_equal(ys[r].cpu(), want, f"explicit stream, rank {r}")

    # The caller's mistakes: refused before anything is enqueued, with the general path's words.
    c = comms[0]
    cases = [
        (torch.ones(64, 64, device="cuda:0", dtype=torch.bfloat16).t(), None, "not contiguous"),
        (torch.ones(8, device="cuda:0", dtype=torch.int32), None, "not supported"),
        (torch.ones(8, dtype=torch.float32), None, "not on a CUDA device"),
        (torch.ones(8, device="cuda:0"), torch.ones(8, device="cuda:0", dtype=torch.half),
         "out has"),
    ]
    for tensor, out, says in cases:
        with pytest.raises(tpcomm.TpcommInvalidArgumentError, match=says):
            c.all_reduce(tensor, out=out)
    for c in comms:
        c.close()

    # The call's own quantized wire (tpcommAllReduceWire) on communicators not opted in, the
    # two-shot pull forced (one GPU is NVLink to the planner): each codec runs its row, both
    # ranks get the same bits, each within the codec's error of the exact sum; "none" and None
    # run full precision; an unknown codec is refused by name.
    wcomms = tpcomm.Communicator.init_all([0, 0], max_blocks=8, algo="twoshot_pull",
                                          wire_min_bytes=0)
    n = 1 << 18
    xs = [torch.randn(n, device="cuda:0", dtype=torch.bfloat16) for _ in range(2)]
    exact = xs[0].float() + xs[1].float()
    for wire, tol in (("int8", 0.05), ("int4", 0.6), ("fp8", 0.25), ("fp8_e5m2", 0.5)):
        outs = [torch.empty_like(x) for x in xs]
        both(lambda r, c: c.all_reduce(xs[r], out=outs[r], wire=wire), wcomms)
        assert wcomms[0].last_call()["variant"] == f"p2p_twoshot_pull_{wire}", wire
        g.assert_equal(outs[0].cpu(), outs[1].cpu(), f"wire={wire}: the ranks' bits")
        # Within tol of the largest magnitude of each group of 32 (the codec's scale).
        amax = exact.abs().view(-1, 32).amax(dim=1, keepdim=True)
        err = ((outs[0].float() - exact).view(-1, 32).abs() / amax.clamp_min(1e-30)).max()
        assert float(err) < tol, (wire, float(err))
    for wire in ("none", None):
        outs = [torch.empty_like(x) for x in xs]
        both(lambda r, c: c.all_reduce(xs[r], out=outs[r], wire=wire), wcomms)
        assert wcomms[0].last_call()["variant"] == "p2p_twoshot_pull", wire
    with pytest.raises(tpcomm.TpcommInvalidArgumentError, match="int3"):
        wcomms[0].all_reduce(xs[0], wire="int3")
    for c in wcomms:
        c.close()
    return "ok"


@pytest.mark.gpu
def test_two_ranks_on_one_gpu(library_or_skip):
    from tpcomm import testing

    assert testing.launch(one_gpu_worker, 1, distributed=False,
                          timeout=g.LAUNCH_TIMEOUT) == ["ok"]
