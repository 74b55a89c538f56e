"""verify_pass.py's model: the per-rank TP transformer stack and the all-reduce each backend
plugs into it (GPU side; torch is imported only when a stack or reducer is built)."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_common, however loaded
from bench_common import symm_mem_world  # noqa: E402

BACKENDS = ("nccl", "symm", "tpcomm", "none", "tpcomm_fused")
DEFAULT_BACKENDS = BACKENDS[:4]  # tpcomm_fused with --fused
EPS = 1e-6  # RMSNorm's epsilon, the same in the fused and the unfused sequence


def shapes(args):
    """Per-rank weight shapes of one layer (TP-sharded as Megatron does)."""
    tp, h, i = args.nprocs, args.hidden, args.intermediate
    return {"w_qkv": (h, 3 * h // tp), "w_o": (h // tp, h), "w_gu": (h, 2 * i // tp),
            "w_d": (i // tp, h)}


def bytes_per_rank(args):
    per_layer = sum(a * b for a, b in shapes(args).values()) * 2
    kv = 2 * args.context * (args.hidden // args.nprocs) * 2
    layers = 1 if args.shared_weights else args.layers
    return per_layer * layers + kv * args.layers


class Stack:
    """The TP transformer stack of one rank; `reduce(site, produce)` is the all-reduce seam."""

    def __init__(self, args, rank, device):
        import torch

        torch.manual_seed(args.seed * 1000 + rank)  # each rank its own shard
        self.args, self.device = args, device
        self.heads = args.hidden // args.nprocs // args.head_dim
        bf16 = torch.bfloat16

        def weight(shape):
            return (torch.randn(shape, device=device, dtype=bf16) / math.sqrt(shape[0]))

        n_distinct = 1 if args.shared_weights else args.layers
        made = [{name: weight(shape) for name, shape in shapes(args).items()}
                for _ in range(n_distinct)]
        self.layers = [made[l % n_distinct] for l in range(args.layers)]
        self.kv = []
        if args.context:
            for _ in range(args.layers):
                k = torch.randn(1, self.heads, args.context, args.head_dim, device=device, dtype=bf16)
                self.kv.append((k, torch.randn_like(k)))
        self.norm = torch.ones(args.hidden, device=device, dtype=bf16)

    def attention(self, qkv, layer):
        import torch
        import torch.nn.functional as F

        q, k, v = qkv.chunk(3, dim=-1)
        if not self.kv:
            return q * torch.sigmoid(k) + v
        n = q.shape[0]
        q4 = q.view(n, self.heads, self.args.head_dim).transpose(0, 1).unsqueeze(0)
        kc, vc = self.kv[layer]
        o = F.scaled_dot_product_attention(q4, kc, vc)
        return o.squeeze(0).transpose(0, 1).reshape(n, -1) + v

    def forward(self, x, reduce):
        """reduce(site, produce) all-reduces a partial; a reduce with an `add_norm` attribute
        (the fused backend) also does x + all-reduce -> RMSNorm in one call where the layer
        has that sequence: add_norm(site, produce, x, gamma) -> (normed, new x)."""
        import torch
        import torch.nn.functional as F

        h_dim = self.args.hidden
        add_norm = getattr(reduce, "add_norm", None)

        def epilogue(site, produce, x, last=False):
            if add_norm is not None and not last:
                return add_norm(site, produce, x, self.norm)
            x = x + reduce(site, produce)
            return (None if last else F.rms_norm(x, (h_dim,), self.norm, EPS)), x

        h = F.rms_norm(x, (h_dim,), self.norm, EPS)
        for l, w in enumerate(self.layers):
            a = self.attention(h @ w["w_qkv"], l)
            h, x = epilogue(2 * l, lambda out, a=a, w=w: torch.matmul(a, w["w_o"], out=out), x)
            g, u = (h @ w["w_gu"]).chunk(2, dim=-1)
            m = F.silu(g) * u
            h, x = epilogue(2 * l + 1, lambda out, m=m, w=w: torch.matmul(m, w["w_d"], out=out),
                            x, last=l == len(self.layers) - 1)
        return x


def make_reduce(name, rank, gloo, args, comm):
    """reduce(site, produce) -> the all-reduced [k, H] tensor; produce(out) writes the partial."""
    import torch
    import torch.distributed as dist

    h = args.hidden

    def fresh(site, produce, k):
        out = torch.empty(k, h, device="cuda", dtype=torch.bfloat16)
        produce(out)
        return out

    def in_place(all_reduce):
        def by_k(k):
            def reduce(site, produce):
                out = fresh(site, produce, k)
                all_reduce(out)
                return out
            return reduce
        return by_k

    if name == "none":
        return lambda k: (lambda site, produce: fresh(site, produce, k))
    if name == "nccl":
        return in_place(dist.all_reduce)
    if name == "tpcomm":
        return in_place(comm.all_reduce)
    if name == "tpcomm_fused":
        import tpcomm.torch

        comm_id = tpcomm.torch.register_communicator(comm)

        def fused(k):
            reduce = in_place(comm.all_reduce)(k)  # the last layer's MLP output: no norm follows

            def add_norm(site, produce, x, gamma):
                return torch.ops.tpcomm.fused_allreduce_rmsnorm(fresh(site, produce, k), x, gamma,
                                                                EPS, 0, None, comm_id)
            reduce.add_norm = add_norm
            return reduce
        return fused
    if name == "symm":
        symm_mem, group_name = symm_mem_world()
        kmax = max(args.k)
        bufs = [symm_mem.empty(kmax * h, dtype=torch.bfloat16, device=f"cuda:{rank}")
                for _ in range(2)]
        for b in bufs:
            symm_mem.rendezvous(b, group_name)

        def symm(k):
            def reduce(site, produce):
                src = bufs[site % 2][: k * h].view(k, h)
                produce(src)
                out = torch.empty(k, h, device="cuda", dtype=torch.bfloat16)
                torch.ops.symm_mem.one_shot_all_reduce_out(src, "sum", group_name, out)
                return out
            return reduce
        return symm
    raise ValueError(name)
