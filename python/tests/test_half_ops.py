"""The reduce-scatter and all-gather ops (torch.ops.tpcomm.reduce_scatter / all_gather,
tpcomm/_torch_ops.py) and CustomAllreduce.custom_reduce_scatter / custom_all_gather with vLLM
0.34.0's contract (vllm/distributed/device_communicators/custom_all_reduce.py: a new tensor along
dim 0, or None for "not handled"), without a GPU: a stand-in half runner computes on the CPU what
WORLD ranks holding inputs rank * 10 + x would get. Needs torch (skips without it)."""
import logging
import types

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch.library, "custom_op"):
    pytest.skip("torch.library.custom_op needs torch >= 2.4", allow_module_level=True)

from tpcomm import torch as tt  # noqa: E402
from tpcomm.errors import TpcommInvalidArgumentError, TpcommInvalidUsageError  # noqa: E402

WORLD, RANK = 4, 1
ops = torch.ops.tpcomm


def peer_input(x, rank):
    return x + rank * 10  # what rank `rank` would pass, given this rank's x (RANK's: x + 10)


def cpu_half_runner(calls):
    def run(rs, input, out, world_size):
        calls.append((rs, input, out, world_size))
        x = input - RANK * 10
        if rs:
            n = input.shape[0] // world_size
            total = sum(peer_input(x, r).float() for r in range(world_size))
            out.copy_(total[RANK * n:(RANK + 1) * n].to(out.dtype))
        else:
            out.copy_(torch.cat([peer_input(x, r) for r in range(world_size)]))
    return run


@pytest.fixture
def calls():
    return []


@pytest.fixture
def comm_id(calls):
    cid = tt._torch_ops.register_runner(lambda *a: None, cpu_half_runner(calls))
    yield cid
    tt.unregister_communicator(cid)


def x_of(shape=(8, 3), dtype=torch.float32):
    return (torch.arange(int(torch.tensor(shape).prod())).reshape(shape) + RANK * 10).to(dtype)


def test_schemas_take_world_size_and_write_nothing():
    for op in (ops.reduce_scatter, ops.all_gather):
        schema = op.default._schema
        assert [a.name for a in schema.arguments] == ["input", "world_size", "comm_id"]
        assert not any(a.alias_info and a.alias_info.is_write for a in schema.arguments)
        assert str(schema).endswith("-> Tensor")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_ops_shapes_and_values(comm_id, calls, dtype):
    x = x_of(dtype=dtype)
    rs = ops.reduce_scatter(x, WORLD, comm_id)
    assert rs.shape == (2, 3) and rs.dtype == dtype
    base = x.float() - RANK * 10
    want = sum(base + r * 10 for r in range(WORLD))[2:4].to(dtype)
    assert torch.equal(rs, want)
    ag = ops.all_gather(x[:2], WORLD, comm_id)
    assert ag.shape == (8, 3)
    assert torch.equal(ag[2:4], x[:2])  # this rank's run, in rank order
    assert [c[0] for c in calls] == [True, False]


def test_opcheck(comm_id):
    x = x_of()
    every = ("test_schema", "test_autograd_registration", "test_faketensor",
             "test_aot_dispatch_dynamic")
    torch.library.opcheck(ops.reduce_scatter.default, (x, WORLD, comm_id), test_utils=every)
    torch.library.opcheck(ops.all_gather.default, (x, WORLD, comm_id), test_utils=every)


def test_fake_impls_give_the_shape_under_compile(comm_id):
    def f(x):
        return ops.reduce_scatter(x, WORLD, comm_id) + 1, ops.all_gather(x, WORLD, comm_id)

    x = x_of((4, 5))
    rs, ag = torch.compile(f, backend="aot_eager", fullgraph=True)(x)
    assert rs.shape == (1, 5) and ag.shape == (16, 5)


@pytest.mark.parametrize("bad,match", [
    (lambda: x_of((6, 3)), "first dim 6 is not a multiple of world_size 4"),
    (lambda: x_of().int(), "float16, bfloat16 or float32"),
    (lambda: x_of().t(), "not contiguous"),
    (lambda: torch.tensor(1.0), "scalar"),
])
def test_bad_inputs_are_refused_naming_the_op(comm_id, bad, match):
    with pytest.raises(TpcommInvalidArgumentError, match="tpcomm.reduce_scatter: .*" + match):
        ops.reduce_scatter(bad(), WORLD, comm_id)


def test_unregistered_comm_id(comm_id):
    with pytest.raises(TpcommInvalidUsageError, match="tpcomm.all_gather: no communicator"):
        ops.all_gather(x_of(), WORLD, comm_id + 1000)


@pytest.fixture
def ca(monkeypatch, comm_id):
    """An enabled CustomAllreduce whose tensors live on the CPU."""
    monkeypatch.setattr(tt, "dist", types.SimpleNamespace(get_rank=lambda group: RANK,
                                                          get_world_size=lambda group: WORLD))
    ca = tt.CustomAllreduce(object(), "cpu", max_size=1 << 20)
    assert ca.disabled  # a CPU device: no communicator
    ca.disabled, ca.disabled_reason = False, None
    ca.comm_id = comm_id
    return ca


def test_custom_reduce_scatter_and_all_gather_serve(ca, calls):
    x = x_of((8, 3), torch.bfloat16)
    assert ca.should_custom_reduce_scatter(x) and ca.should_custom_all_gather(x)
    rs = ca.custom_reduce_scatter(x)
    assert rs.shape == (2, 3) and rs.dtype == torch.bfloat16
    ag = ca.custom_all_gather(x)
    assert ag.shape == (32, 3) and torch.equal(ag[8:16], x)
    assert len(calls) == 2


def test_under_torch_compile_they_are_the_ops(ca):
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def layer(x):
        return ca.custom_reduce_scatter(x), ca.custom_all_gather(x)

    rs, ag = torch.compile(layer, backend=backend, fullgraph=True)(x_of())
    assert rs.shape == (2, 3) and ag.shape == (32, 3)
    targets = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert "tpcomm.reduce_scatter.default" in targets or "tpcomm.reduce_scatter" in targets, \
        targets
    assert any("tpcomm.all_gather" in t for t in targets), targets


@pytest.mark.parametrize("make,why", [
    (lambda: x_of((6, 3)), "not a multiple of world size"),
    (lambda: x_of().int(), "is not float16"),
    (lambda: torch.zeros(0, 3), "empty or above max_size"),
    (lambda: torch.zeros(1 << 19, 3), "empty or above max_size"),
    (lambda: x_of().t(), "not contiguous"),
])
def test_declines_with_none_and_logs_once(ca, caplog, make, why):
    x = make()
    with caplog.at_level(logging.INFO, logger="tpcomm"):
        assert not ca.should_custom_reduce_scatter(x)
        assert ca.custom_reduce_scatter(x) is None
        assert ca.custom_reduce_scatter(x) is None
    lines = [r.getMessage() for r in caplog.records if "custom_reduce_scatter" in r.getMessage()]
    assert len(lines) == 1 and why in lines[0], lines


def test_disabled_declines_without_touching_the_tensor(ca):
    ca.disabled = True
    assert ca.custom_all_gather(object()) is None
    assert ca.should_custom_reduce_scatter(object()) is False
