"""verify_pass.py's reporting (CPU side): the break-even math, the per-backend summary over
ranks, the markdown table, issue 5's targets and the plot."""

LABELS = {"nccl": "NCCL (torch.distributed)", "symm": "torch symm-mem one-shot",
          "tpcomm": "tpcomm", "none": "no all-reduce (compute only)",
          "tpcomm_fused": "tpcomm fused AR + add + RMSNorm"}


# ---------------------------------------------------------------- break-even (pure math)
def expected_tokens(alpha, k):
    """Tokens one chain-speculation round yields with per-token acceptance alpha, verifying k."""
    if alpha >= 1.0:
        return float(k)
    return (1.0 - alpha ** k) / (1.0 - alpha)


def break_even(t_verify, t_decode, k, draft_cost):
    """(E*, a*): tokens per round needed to match plain decoding, and the acceptance giving
    them; a* is None when even a = 1 (E = k) cannot pay for the round."""
    need = (t_verify + (k - 1) * draft_cost * t_decode) / t_decode
    if need <= 1.0:
        return need, 0.0
    if need >= k:
        return need, None
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if expected_tokens(mid, k) < need:
            lo = mid
        else:
            hi = mid
    return need, (lo + hi) / 2


def summarize(per_rank, args):
    """Slowest rank's forward time; all-reduce time and share; break-even per backend and k."""
    rows = []
    for same in zip(*[r["rows"] for r in per_rank]):
        row = {"backend": same[0]["backend"], "k": same[0]["k"]}
        errs = [r["error"] for r in same if "error" in r]
        if errs:
            row["error"] = errs[0]
        else:
            row["forward_us"] = max(r["forward_us"] for r in same)
            row["forward_us_per_rank"] = [r["forward_us"] for r in same]
            row["finite"] = all(r["finite"] for r in same)
            if row["backend"] != "none":
                row["replicas_identical"] = len({r["checksum"] for r in same}) == 1
        rows.append(row)
    by = {(r["backend"], r["k"]): r for r in rows}
    for r in rows:
        base = by.get(("none", r["k"]))
        if r["backend"] != "none" and "forward_us" in r and base and "forward_us" in base:
            r["allreduce_us"] = r["forward_us"] - base["forward_us"]
            r["allreduce_share"] = max(0.0, r["allreduce_us"]) / r["forward_us"]
            r["allreduce_us_per_call"] = r["allreduce_us"] / (2 * args.layers)
        dec = by.get((r["backend"], 1))
        if r["k"] > 1 and "forward_us" in r and dec and "forward_us" in dec:
            r["tokens_needed"], r["alpha_breakeven"] = break_even(
                r["forward_us"], dec["forward_us"], r["k"], args.draft_cost)
            r["alpha_breakeven_free_draft"] = break_even(
                r["forward_us"], dec["forward_us"], r["k"], 0.0)[1]
    return rows


def table(rows, args):
    head = ["k", "backend", "forward us", "all-reduce us", "AR share", "us per AR call",
            "E* tokens", f"a* (draft {args.draft_cost:g})", "a* (free draft)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def f(v, fmt):
        return "-" if v is None else (fmt.format(v) if not isinstance(v, str) else v)
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['k']} | {r['backend']} | error: {r['error']} |")
            continue
        a = r.get("alpha_breakeven", "never" if "tokens_needed" in r else None)
        a0 = r.get("alpha_breakeven_free_draft", "never" if "tokens_needed" in r else None)
        lines.append("| " + " | ".join([
            str(r["k"]), r["backend"], f(r.get("forward_us"), "{:.0f}"),
            f(r.get("allreduce_us"), "{:.0f}"), f(r.get("allreduce_share"), "{:.1%}"),
            f(r.get("allreduce_us_per_call"), "{:.1f}"), f(r.get("tokens_needed"), "{:.2f}"),
            f(a, "{:.3f}"), f(a0, "{:.3f}")]) + " |")
    return "\n".join(lines)


def _pairs(rows, backend, base, key):
    """(k, backend's row, base's row) for every k where both rows have `key`, by k."""
    by = {(r["backend"], r["k"]): r for r in rows}
    for (b, k), r in sorted(by.items(), key=lambda kv: kv[0][1]):
        other = by.get((base, k))
        if b == backend and other and key in r and key in other:
            yield k, r, other


def targets(rows):
    """Issue 5: tpcomm's all-reduce time per forward <= 0.25x NCCL's, and a faster forward, at
    every k."""
    out = []
    for k, r, n in _pairs(rows, "tpcomm", "nccl", "allreduce_us"):
        out.append({"k": k, "ar_ratio": r["allreduce_us"] / n["allreduce_us"]
                    if n["allreduce_us"] > 0 else None,
                    "faster": r["forward_us"] < n["forward_us"],
                    "ok": n["allreduce_us"] > 0 and r["allreduce_us"] <= 0.25 * n["allreduce_us"]
                    and r["forward_us"] < n["forward_us"]})
    return out


def fused_targets(rows, args):
    """Issue 22: the forward with tpcomm's fused all-reduce + add + RMSNorm is faster than with
    the unfused tpcomm sequence (all-reduce, add, RMSNorm), at every k. A forward makes
    2 x layers - 1 fused calls (the last all-reduce has no norm after it)."""
    out = []
    for k, r, u in _pairs(rows, "tpcomm_fused", "tpcomm", "forward_us"):
        saved = u["forward_us"] - r["forward_us"]
        out.append({"k": k, "fused_us": r["forward_us"], "unfused_us": u["forward_us"],
                    "saved_us_per_call": saved / (2 * args.layers - 1), "faster": saved > 0})
    return out


def plot(rows, args, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(17, 5))
    ks = args.k
    for b in args.backends:
        pts = [(r["k"], r) for r in rows if r["backend"] == b and "forward_us" in r]
        if not pts:
            continue
        style = {"ls": "--"} if b == "none" else {}
        axes[0].plot([k for k, _ in pts], [r["forward_us"] / 1000 for _, r in pts], marker="o",
                     label=LABELS[b], **style)
        ar = [(k, r["allreduce_us"] / 1000) for k, r in pts if "allreduce_us" in r]
        if ar:
            axes[1].plot([k for k, _ in ar], [v for _, v in ar], marker="o", label=LABELS[b])
        al = [(k, r.get("alpha_breakeven")) for k, r in pts if "tokens_needed" in r]
        if al:
            axes[2].plot([k for k, v in al if v is not None], [v for _, v in al if v is not None],
                         marker="o", label=LABELS[b])
    axes[0].set(ylabel="ms per verify forward", title="forward time (CUDA graph)")
    axes[1].set(ylabel="ms of all-reduce per forward", title=f"all-reduce time ({2 * args.layers} calls)")
    axes[2].set(ylabel="break-even acceptance a*", ylim=(0, 1),
                title=f"acceptance needed (draft cost {args.draft_cost:g} x T(1))")
    for ax in axes:
        ax.set(xscale="log", xlabel="verify width k (tokens)")
        ax.set_xticks(ks)
        ax.set_xticklabels([str(k) for k in ks])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
