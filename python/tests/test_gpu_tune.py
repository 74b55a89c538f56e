"""`tpcomm tune --share-gpu` on one GPU: the whole tune flow (the all-reduce sweep, then the fused
call's one-shot, two-shot and unfused pair, each checked against the pair's bits on every rank)
runs with two ranks sharing GPU 0, labels its numbers so, picks a fused crossover and writes
nothing (the numbers are not a link's)."""
import os
import subprocess

import pytest

import gpu_common as g

g.require_gpus(1)
pytestmark = pytest.mark.gpu


def test_tune_share_gpu_measures_the_fused_forms(tmp_path):
    from tpcomm import _loader

    out = tmp_path / "table.json"
    r = subprocess.run(
        [_loader.cli_path(), "tune", "--share-gpu", "--world", "2", "--quick", "--iters", "5",
         "--reps", "3", "--hidden", "4096", "--out", str(out)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "NCCL_NVLS_ENABLE": "0"})
    text = r.stdout + r.stderr
    assert r.returncode == 0, text
    assert "The fused call: world 2, rows of 4096 bf16" in text, text
    assert "(ranks sharing one GPU)" in text, text
    assert "fused_twoshot_rows: " in text, text
    assert "bits differ" not in text and "WRONG" not in text, text
    assert "--dry-run: nothing written" in text, text
    assert not out.exists(), "--share-gpu wrote a table"
    # Every row count ran the pair and at least one fused form.
    fused_part = r.stdout.split("The fused call:", 1)[1]
    fused_rows = [line.split() for line in fused_part.splitlines()
                  if line.strip() and line.split()[0].isdigit()]
    assert [int(x[0]) for x in fused_rows] == [1, 4, 16, 64, 256, 1024], text
    for x in fused_rows:
        assert x[3] != "-", f"the unfused pair did not run at {x[0]} rows: {text}"
        assert x[1] != "-" or x[2] != "-", f"no fused form ran at {x[0]} rows: {text}"
