"""tpcomm.torch.CustomAllreduce, used the way vLLM and SGLang use theirs, on 2 GPUs."""
import logging

import pytest

import gpu_common as g

torch = g.require_gpus()


def _car(gloo, rank, **kwargs):
    from tpcomm.torch import CustomAllreduce

    return CustomAllreduce(gloo, torch.device("cuda", rank), **kwargs)


def scenario_enabled_and_exact(rank, world, gloo):
    car = _car(gloo, rank, symm_mem_enabled=True)  # vLLM passes this; accepted, ignored
    assert not car.disabled, car.disabled_reason
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        esize = torch.finfo(dtype).bits // 8
        for n in (1, 1000, 65_536 // esize, car.max_size // esize):
            x = g.ints(n, rank, dtype)
            assert car.should_custom_ar(x)
            y = car.custom_all_reduce(x)
            assert y is not None and y.data_ptr() != x.data_ptr()  # a new tensor, like vLLM's
            g.assert_equal(y, g.nccl_sum(x), f"custom_all_reduce {dtype} x {n}")
            g.assert_equal(x, g.ints(n, rank, dtype), "input untouched")
    car.close()


def scenario_should_custom_ar_rules(rank, world, gloo):
    car = _car(gloo, rank, max_size=1 << 20)
    ok = torch.ones(1024, device="cuda", dtype=torch.bfloat16)
    assert car.should_custom_ar(ok)
    refused = {
        "int32": torch.ones(1024, device="cuda", dtype=torch.int32),
        "float64": torch.ones(1024, device="cuda", dtype=torch.float64),
        "non-contiguous": torch.ones(64, 64, device="cuda", dtype=torch.bfloat16).t(),
        "over max_size": torch.ones((1 << 20) // 2 + 1, device="cuda", dtype=torch.bfloat16),
        "other GPU": torch.ones(1024, device=f"cuda:{1 - rank}", dtype=torch.bfloat16),
        "CPU": torch.ones(1024, dtype=torch.bfloat16),
        "empty": torch.ones(0, device="cuda", dtype=torch.bfloat16),
    }
    for what, t in refused.items():
        assert not car.should_custom_ar(t), what
        assert car.custom_all_reduce(t) is None, what  # the engine falls back to NCCL
    assert car.should_custom_ar(torch.ones((1 << 20) // 2, device="cuda", dtype=torch.bfloat16))
    car.close()
    car.close()
    assert car.disabled and not car.should_custom_ar(ok)


def scenario_graph_capture_like_the_engines(rank, world, gloo):
    """GroupCoordinator.graph_capture: `with ca.capture():` around warm-up + torch.cuda.graph."""
    car = _car(gloo, rank)
    x = torch.zeros(8192, device="cuda", dtype=torch.bfloat16)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with car.capture():
        with torch.cuda.stream(stream):
            warm = car.custom_all_reduce(g.ints(8192, rank, torch.bfloat16))  # not capturing
            g.assert_equal(warm, g.nccl_sum(g.ints(8192, rank, torch.bfloat16)), "warm-up")
            with torch.cuda.graph(graph, stream=stream):
                y = car.custom_all_reduce(x)
                y2 = car.custom_all_reduce(y)
    torch.cuda.synchronize()
    for seed in range(4):
        x.copy_(g.ints(8192, rank, torch.bfloat16, seed))
        graph.replay()
        ref = g.nccl_sum(x)
        g.assert_equal(y, ref, f"captured custom_all_reduce, replay {seed}")
        g.assert_equal(y2, g.nccl_sum(ref), f"chained captured call, replay {seed}")
    car.register_graph_buffers()  # engines may call it: a no-op
    car.close()


def scenario_disabled_with_a_reason(rank, world, gloo):
    import torch.distributed as dist

    from tpcomm.torch import CustomAllreduce

    singles = [dist.new_group([r], backend="gloo") for r in range(world)]  # collective
    logger = logging.getLogger("tpcomm")
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        one = CustomAllreduce(singles[rank], rank)
        assert one.disabled and "world size 1" in one.disabled_reason
        assert one.custom_all_reduce(torch.ones(8, device="cuda")) is None
        cpu = CustomAllreduce(gloo, "cpu")
        assert cpu.disabled and "not a CUDA device" in cpu.disabled_reason
    finally:
        logger.removeHandler(handler)
    assert any("disabled" in m and "not a CUDA device" in m for m in seen), seen  # never silent


NAMES = ["enabled_and_exact", "should_custom_ar_rules", "graph_capture_like_the_engines",
         "disabled_with_a_reason"]


@pytest.fixture(scope="module")
def outcome(library_or_skip):
    return g.launch_module(__name__, NAMES)


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_custom_allreduce(outcome, name):
    g.check(outcome, name)
