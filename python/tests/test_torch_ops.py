"""The fused all-reduce + add + RMSNorm ops (torch.ops.tpcomm.*, tpcomm/_torch_ops.py) without a
GPU: their schemas, torch.library.opcheck (declared mutations, fake implementation, autograd
and AOT dispatch), torch.compile (aot_eager, fullgraph) with the shapes and dtypes its fake
tensors propagate, and the argument checks. Needs torch (skips without it).

The ops reach a communicator through a runner registered under a comm_id; here the runner is a
stand-in that computes on the CPU what the library computes on the GPU (every rank holding the
same partial sums, so the sum over WORLD ranks is WORLD * input). It tests which buffer gets
what; the math itself is checked on GPUs by test_gpu_fused_op.py."""
import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch.library, "custom_op"):
    pytest.skip("torch.library.custom_op needs torch >= 2.4", allow_module_level=True)

from tpcomm import testing  # noqa: E402
from tpcomm import torch as tt  # noqa: E402
from tpcomm.errors import TpcommInvalidArgumentError, TpcommInvalidUsageError  # noqa: E402

WORLD = 2
ops = torch.ops.tpcomm


def cpu_runner(calls=None):
    def run(input, residual_in, residual_out, out, weight, eps, weight_offset, scale):
        if calls is not None:
            calls.append((input, residual_in, residual_out, out))
        o, r = testing.add_rmsnorm_reference(input.float() * WORLD, residual_in, weight, eps,
                                             weight_offset, scale)
        residual_out.copy_(r)
        out.copy_(o)
    return run


@pytest.fixture
def comm_id():
    cid = tt._torch_ops.register_runner(cpu_runner())
    yield cid
    tt.unregister_communicator(cid)


def tensors(t=4, h=64, dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(t, h, generator=g).to(dtype)
    res = torch.randn(t, h, generator=g).to(dtype)
    w = (1 + 0.1 * torch.randn(h, generator=g)).to(dtype)
    return x, res, w


def want(x, res, w, eps=1e-6, offset=0, scale=None):
    return testing.add_rmsnorm_reference(x.float() * WORLD, res, w, eps, offset, scale)


def test_reference_on_a_hand_computed_row():
    sums = torch.tensor([[1.0, 3.0]])
    res = torch.tensor([[2.0, 1.0]])
    out, r = testing.add_rmsnorm_reference(sums, res, torch.tensor([1.0, 2.0]), 0.0)
    rms = ((9 + 16) / 2) ** 0.5  # residual_out = [3, 4]
    assert r.tolist() == [[3.0, 4.0]]
    assert out.flatten().tolist() == pytest.approx([3 / rms, 2 * 4 / rms], rel=1e-6)
    out, _ = testing.add_rmsnorm_reference(sums, res, torch.tensor([1.0, 2.0]), 0.0, 1)  # Gemma
    assert out.flatten().tolist() == pytest.approx([2 * 3 / rms, 3 * 4 / rms], rel=1e-6)
    q, _ = testing.add_rmsnorm_reference(sums * 1000, res, torch.ones(2), 0.0,
                                         quant_scale=torch.tensor([0.001]))
    assert q.dtype == torch.float8_e4m3fn and q.float().max().item() == 448.0  # saturates


def written(op):
    return [a.name for a in op.default._schema.arguments if a.alias_info and a.alias_info.is_write]


def test_schemas_declare_what_each_op_writes():
    assert written(ops.fused_allreduce_rmsnorm) == []
    assert str(ops.fused_allreduce_rmsnorm.default._schema).endswith("-> (Tensor, Tensor)")
    assert written(ops.fused_allreduce_rmsnorm_) == ["input", "residual"]
    assert str(ops.fused_allreduce_rmsnorm_.default._schema).endswith("-> ()")
    assert written(ops.fused_allreduce_rmsnorm_quant_) == ["quant_out", "residual"]
    names = [a.name for a in ops.fused_allreduce_rmsnorm_quant_.default._schema.arguments]
    assert names == ["quant_out", "input", "residual", "weight", "quant_scale", "eps",
                     "weight_offset", "comm_id"]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_functional_op_returns_new_tensors_and_leaves_inputs(comm_id, dtype):
    x, res, w = tensors(dtype=dtype)
    x0, res0 = x.clone(), res.clone()
    out, r = ops.fused_allreduce_rmsnorm(x, res, w, 1e-5, 1, None, comm_id)
    o_want, r_want = want(x0, res0, w, 1e-5, 1)
    assert torch.equal(out, o_want) and torch.equal(r, r_want)
    assert torch.equal(x, x0) and torch.equal(res, res0)
    assert out.data_ptr() not in (x.data_ptr(), res.data_ptr())


def test_in_place_op_writes_norm_into_input_and_residual_in_place(comm_id):
    calls = []
    cid = tt._torch_ops.register_runner(cpu_runner(calls))
    x, res, w = tensors()
    o_want, r_want = want(x, res, w)
    ops.fused_allreduce_rmsnorm_(x, res, w, 1e-6, 0, cid)
    assert torch.equal(x, o_want) and torch.equal(res, r_want)
    inp, res_in, res_out, out = calls[0]
    assert out is inp and res_out is res_in  # the C call's in-place form, no copy
    tt.unregister_communicator(cid)


def test_quant_ops_write_fp8(comm_id):
    x, res, w = tensors(h=128)
    scale = torch.tensor([0.05])
    o_want, r_want = want(x, res, w, scale=scale)
    out, r = ops.fused_allreduce_rmsnorm(x, res, w, 1e-6, 0, scale, comm_id)
    assert out.dtype == torch.float8_e4m3fn and torch.equal(out.float(), o_want.float())
    q = torch.empty_like(x, dtype=torch.float8_e4m3fn)
    ops.fused_allreduce_rmsnorm_quant_(q, x, res, w, scale, 1e-6, 0, comm_id)
    assert torch.equal(q.float(), o_want.float()) and torch.equal(res, r_want)


def test_opcheck(comm_id):
    """Declared mutations (test_schema runs the op and compares every argument before and
    after), the fake implementation against the real one, autograd and AOT dispatch."""
    x, res, w = tensors(t=3, h=32)
    scale = torch.tensor([0.5])
    every = ("test_schema", "test_autograd_registration", "test_faketensor",
             "test_aot_dispatch_dynamic")
    # test_schema compares outputs with arithmetic that CPU float8 lacks: the FP8 forms' writes
    # are checked by test_quant_ops_write_fp8 and their declarations by the schema test above.
    no_fp8_compare = every[1:]
    cases = [
        (ops.fused_allreduce_rmsnorm.default, (x, res, w, 1e-6, 0, None, comm_id), every),
        (ops.fused_allreduce_rmsnorm.default, (x, res, w, 1e-6, 1, scale, comm_id),
         no_fp8_compare),
        (ops.fused_allreduce_rmsnorm_.default, (x.clone(), res.clone(), w, 1e-6, 0, comm_id),
         every),
        (ops.fused_allreduce_rmsnorm_quant_.default,
         (torch.empty_like(x, dtype=torch.float8_e4m3fn), x, res.clone(), w, scale, 1e-6, 0,
          comm_id), no_fp8_compare),
    ]
    for op, args, utils in cases:
        torch.library.opcheck(op, args, test_utils=utils)


def test_torch_compile_traces_every_op_in_one_graph(comm_id):
    seen, aot = [], []

    def backend(gm, example_inputs):  # records the fake-tensor metadata the trace propagated
        for node in gm.graph.nodes:
            if node.op == "call_function" and "tpcomm" in str(node.target):
                seen.append((str(node.target), node.meta.get("example_value")))
        from torch._dynamo.backends.common import aot_autograd

        def forward(g, _):  # the functionalized graph: the in-place op, functional, copied back
            aot.append(g)
            return g
        return aot_autograd(fw_compiler=forward)(gm, example_inputs)

    def layer(x, res, w, scale):
        out, r = ops.fused_allreduce_rmsnorm(x * 2, res, w, 1e-6, 0, None, comm_id)
        q, _ = ops.fused_allreduce_rmsnorm(out, r, w, 1e-6, 0, scale, comm_id)
        x2, r2 = out.clone(), r.clone()
        ops.fused_allreduce_rmsnorm_(x2, r2, w, 1e-6, 1, comm_id)
        return q, x2, r2

    x, res, w = tensors(t=5, h=96)
    scale = torch.tensor([0.1])
    compiled = torch.compile(layer, backend=backend, fullgraph=True)
    got = compiled(x, res, w, scale)
    expect = layer(x, res, w, scale)
    for g, e in zip(got, expect):
        assert g.dtype == e.dtype and torch.equal(g.float(), e.float())
    names = [name for name, _ in seen]
    assert names == ["tpcomm.fused_allreduce_rmsnorm"] * 2 + ["tpcomm.fused_allreduce_rmsnorm_"]
    (out, r), (q, _) = [v for _, v in seen[:2]]
    assert out.shape == r.shape == q.shape == (5, 96)
    assert out.dtype == torch.bfloat16 and q.dtype == torch.float8_e4m3fn
    code = aot[0].code
    assert "auto_functionalized" in code and "fused_allreduce_rmsnorm_.default" in code, code


def test_one_compiled_graph_serves_every_communicator():
    """comm_id is a SymInt under dynamic=True: a second communicator needs no recompilation."""
    compiles = []

    def backend(gm, example_inputs):
        compiles.append(gm)
        return gm.forward

    def f(x, res, w, cid):
        return ops.fused_allreduce_rmsnorm(x, res, w, 1e-6, 0, None, cid)

    compiled = torch.compile(f, backend=backend, fullgraph=True, dynamic=True)
    ids = [tt._torch_ops.register_runner(cpu_runner()) for _ in range(2)]
    x, res, w = tensors()
    for cid in ids:
        out, _ = compiled(x, res, w, cid)
        assert torch.equal(out, want(x, res, w)[0])
        tt.unregister_communicator(cid)
    assert len(compiles) == 1, f"{len(compiles)} compilations for {len(ids)} communicators"


BAD = [
    # (what, change to (x, res, w, eps, offset, scale), message)
    ("int input", lambda a: (a[0].int(),) + a[1:], "input is torch.int32"),
    ("residual shape", lambda a: (a[0], a[1][:, :32]) + a[2:], "residual is .* they must match"),
    ("residual dtype", lambda a: (a[0], a[1].half()) + a[2:], "residual is torch.float16"),
    ("weight shape", lambda a: a[:2] + (a[2][:10],) + a[3:], r"weight is .*\(64,\)"),
    ("weight dtype", lambda a: a[:2] + (a[2].float(),) + a[3:], "weight is torch.float32"),
    ("eps 0", lambda a: a[:3] + (0.0,) + a[4:], "eps is 0.0"),
    ("eps nan", lambda a: a[:3] + (float("nan"),) + a[4:], "eps is nan"),
    ("offset 2", lambda a: a[:4] + (2,) + a[5:], "weight_offset is 2"),
    ("scale dtype", lambda a: a[:5] + (torch.tensor([1.0], dtype=torch.float16),),
     "quant_scale is torch.float16"),
    ("scale size", lambda a: a[:5] + (torch.ones(2),), r"quant_scale is .*\(2,\)"),
    ("strided input", lambda a: (torch.randn(64, 4).to(torch.bfloat16).t(),) + a[1:],
     "input .* is not contiguous"),
    ("hidden too big", lambda a: (torch.zeros(1, 65537), torch.zeros(1, 65537),
                                  torch.zeros(65537)) + a[3:], "hidden .* is 65537"),
    ("scale on meta", lambda a: a[:5] + (torch.ones(1, device="meta"),), "quant_scale is on meta"),
]


@pytest.mark.parametrize("what,change,says", BAD, ids=[b[0] for b in BAD])
def test_bad_arguments_are_refused_before_the_call(comm_id, what, change, says):
    calls = []
    cid = tt._torch_ops.register_runner(cpu_runner(calls))
    x, res, w = tensors()
    args = change((x, res, w, 1e-6, 0, None))
    with pytest.raises(TpcommInvalidArgumentError, match="tpcomm.fused_allreduce_rmsnorm: " + says):
        ops.fused_allreduce_rmsnorm(*args, cid)
    with torch._subclasses.fake_tensor.FakeTensorMode(allow_non_fake_inputs=True):
        with pytest.raises(TpcommInvalidArgumentError, match=says):  # the fake impl: at trace
            ops.fused_allreduce_rmsnorm(*args, cid)
    assert not calls
    tt.unregister_communicator(cid)


def test_in_place_forms_check_their_outputs(comm_id):
    x, res, w = tensors()
    scale = torch.tensor([1.0])
    with pytest.raises(TpcommInvalidArgumentError, match="quant_out is torch.bfloat16"):
        ops.fused_allreduce_rmsnorm_quant_(torch.empty_like(x), x, res, w, scale, 1e-6, 0, comm_id)
    with pytest.raises(TpcommInvalidArgumentError, match="residual is"):
        ops.fused_allreduce_rmsnorm_(x, res[:2], w, 1e-6, 0, comm_id)


def test_unknown_comm_id_is_a_clear_error():
    x, res, w = tensors()
    with pytest.raises(TpcommInvalidUsageError, match="no communicator is registered as comm_id"):
        ops.fused_allreduce_rmsnorm(x, res, w, 1e-6, 0, None, 10**9)


class FakeComm:
    """What the runner reads of a tpcomm.Communicator, recording the C call's arguments."""
    rank, device = 0, 0

    def __init__(self):
        self.calls = []

    def _add_rmsnorm_torch_stream(self, *args):
        self.calls.append(args)


def test_communicator_runner_refuses_tensors_off_its_gpu():
    comm = FakeComm()
    cid = tt.register_communicator(comm)
    x, res, w = tensors()
    with pytest.raises(TpcommInvalidArgumentError,
                       match="tensors are on cpu, but rank 0's communicator is on GPU 0"):
        ops.fused_allreduce_rmsnorm(x, res, w, 1e-6, 0, None, cid)
    assert not comm.calls
    tt.unregister_communicator(cid)
