"""CustomAllreduce.fused_allreduce_rmsnorm keeps SGLang 0.5.23's contract
(srt/distributed/parallel_state.py:811-836: ca_comm.fused_allreduce_rmsnorm(input_,
residual_inp_, weight_, eps) -> (norm_out, residual_out) or None for "not handled"), without a
GPU: an enabled instance over a CPU stand-in communicator (a runner registered as its comm_id,
the sum over 2 ranks of one partial being 2 x the partial), eagerly and under torch.compile."""
import logging
import types

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch.library, "custom_op"):
    pytest.skip("torch.library.custom_op needs torch >= 2.4", allow_module_level=True)

from tpcomm import testing  # noqa: E402
from tpcomm import torch as tt  # noqa: E402
from tpcomm.errors import TpcommTimeoutError  # noqa: E402


def run_on_cpu(input, residual_in, residual_out, out, weight, eps, weight_offset, scale):
    o, r = testing.add_rmsnorm_reference(input.float() * 2, residual_in, weight, eps,
                                         weight_offset, scale)
    residual_out.copy_(r)
    out.copy_(o)


@pytest.fixture
def ca(monkeypatch):
    """An enabled CustomAllreduce whose tensors live on the CPU."""
    monkeypatch.setattr(tt, "dist", types.SimpleNamespace(get_rank=lambda group: 0,
                                                          get_world_size=lambda group: 2))
    ca = tt.CustomAllreduce(object(), "cpu", max_size=1 << 20)
    assert ca.disabled  # a CPU device: no communicator
    ca.disabled, ca.disabled_reason = False, None
    ca.comm_id = tt._torch_ops.register_runner(run_on_cpu)
    yield ca
    tt.unregister_communicator(ca.comm_id)


def layer_tensors(t=3, h=256, dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(1)
    return (torch.randn(t, h, generator=g).to(dtype), torch.randn(t, h, generator=g).to(dtype),
            torch.rand(h, generator=g).to(dtype) + 0.5)


def test_returns_new_norm_and_residual_and_leaves_the_inputs(ca):
    x, res, w = layer_tensors()
    x0, res0 = x.clone(), res.clone()
    got = ca.fused_allreduce_rmsnorm(x, res, w, 1e-5)
    assert isinstance(got, tuple) and len(got) == 2
    norm, residual = got
    want_norm, want_res = testing.add_rmsnorm_reference(x0.float() * 2, res0, w, 1e-5)
    assert torch.equal(norm, want_norm) and torch.equal(residual, want_res)
    assert torch.equal(x, x0) and torch.equal(res, res0)  # SGLang keeps using residual_inp_


def test_under_torch_compile_it_is_the_op_in_one_graph(ca):
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def layer(x, res, w):
        got = ca.fused_allreduce_rmsnorm(x, res, w, 1e-6)
        assert got is not None
        return got[0] + 1, got[1]

    x, res, w = layer_tensors()
    norm, residual = torch.compile(layer, backend=backend, fullgraph=True)(x, res, w)
    want_norm, want_res = testing.add_rmsnorm_reference(x.float() * 2, res, w, 1e-6)
    assert torch.equal(norm, want_norm + 1) and torch.equal(residual, want_res)
    targets = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert "tpcomm.fused_allreduce_rmsnorm" in targets, targets


DECLINED = [
    ("int dtype", lambda x, r, w: (x.int(), r.int(), w.int()), "is not float16"),
    ("residual shape", lambda x, r, w: (x, r[:1], w), "are not [T, H]"),
    ("weight dtype", lambda x, r, w: (x, r, w.float()), "are not [T, H]"),
    ("weight shape", lambda x, r, w: (x, r, w[:8]), "are not [T, H]"),
    ("strided", lambda x, r, w: (x.t().contiguous().t(), r, w), "not contiguous"),
    ("empty", lambda x, r, w: (x[:0], r[:0], w), "empty or above max_size"),
    ("over max_size", lambda x, r, w: (torch.zeros(4096, 256, dtype=x.dtype),
                                       torch.zeros(4096, 256, dtype=x.dtype), w),
     "empty or above max_size"),
    ("other device", lambda x, r, w: (x.to("meta"), r.to("meta"), w.to("meta")), "not on cpu"),
]


@pytest.mark.parametrize("what,change,says", DECLINED, ids=[d[0] for d in DECLINED])
def test_what_it_cannot_serve_is_none_and_logged_once(ca, caplog, what, change, says):
    args = change(*layer_tensors())
    with caplog.at_level(logging.INFO, logger="tpcomm"):
        for _ in range(3):
            assert ca.fused_allreduce_rmsnorm(*args, 1e-6) is None, what
    lines = [r.getMessage() for r in caplog.records if "fused_allreduce_rmsnorm" in r.getMessage()]
    assert len(lines) == 1 and says in lines[0], lines


def test_a_disabled_instance_declines(ca):
    ca.disabled = True
    assert ca.fused_allreduce_rmsnorm(*layer_tensors(), 1e-6) is None


def test_a_library_error_is_logged_and_raised(ca, caplog):
    def broken(*args):
        raise TpcommTimeoutError("a peer stopped answering", code=8)

    tt.unregister_communicator(ca.comm_id)
    ca.comm_id = tt._torch_ops.register_runner(broken)
    with caplog.at_level(logging.WARNING, logger="tpcomm"):
        with pytest.raises(TpcommTimeoutError):
            ca.fused_allreduce_rmsnorm(*layer_tensors(), 1e-6)
    assert any("fused_allreduce_rmsnorm on rank 0 failed: a peer stopped answering"
               in r.getMessage() for r in caplog.records)


def test_close_unregisters_the_communicator(ca):
    cid = ca.comm_id
    ca.close()
    assert ca.comm_id is None and cid not in tt._torch_ops._runners
    assert ca.fused_allreduce_rmsnorm(*layer_tensors(), 1e-6) is None
