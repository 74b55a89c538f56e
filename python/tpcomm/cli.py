"""The bundled `tpcomm` CLI: doctor() and inspect() wrappers, and the `tpcomm` console script.

Both wrappers run the CLI with --json and return the parsed report, so Python callers see
exactly what `tpcomm doctor` / `tpcomm inspect` print, with no second implementation.
"""
import json
import os
import subprocess
import sys
from typing import Any, Dict, Optional, Sequence, Tuple, Union

PathLike = Union[str, "os.PathLike[str]"]

from . import _loader
from .errors import TpcommCliError, TpcommLibraryNotFoundError


def _run_json(args, ok_codes):
    exe = _loader.cli_path()
    env = dict(os.environ)
    try:  # the CLI examines the same library this process uses
        env.setdefault("TPCOMM_LIBRARY", _loader.library_path())
    except TpcommLibraryNotFoundError:
        pass
    proc = subprocess.run([exe] + args, capture_output=True, text=True, env=env)
    try:
        report = json.loads(proc.stdout) if proc.stdout.strip() else None
    except ValueError:
        report = None
    if report is None or proc.returncode not in ok_codes:
        raise TpcommCliError(
            f"`tpcomm {' '.join(args)}` exited with {proc.returncode}: "
            f"{proc.stderr.strip() or proc.stdout.strip()[:500] or 'no output'}",
            returncode=proc.returncode, stderr=proc.stderr)
    if isinstance(report, dict):
        report.setdefault("exit_code", proc.returncode)
    return report


def doctor(*args: str) -> Dict[str, Any]:
    """`tpcomm doctor --json [args]` as a dict: driver, GPUs, links, architecture coverage,
    policy (keys in docs/DOCTOR.md). A report is returned whatever it found; 'exit_code' holds
    the CLI's verdict (0 all good, 1 something keeps tpcomm from full speed, 2 no driver or no
    GPU). A CLI that prints no report (e.g. a usage error) raises TpcommCliError."""
    return _run_json(["doctor", "--json"] + list(args), ok_codes=(0, 1, 2))


def inspect(paths: Union[PathLike, Sequence[PathLike]],
            ccs: Union[None, str, Sequence[Union[str, Tuple[int, int]]]] = None) -> Dict[str, Any]:
    """`tpcomm inspect --json [--cc X.Y]... FILE...` as a dict: the CUDA images in ELF files and,
    per compute capability, whether they run natively, by PTX JIT, or not at all. Needs no GPU.
    `paths`: one path or a list; `ccs`: e.g. ["9.0", (12, 0)] or "all-known"."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if isinstance(ccs, str):
        ccs = [ccs]
    args = ["inspect", "--json"]
    for cc in ccs or []:
        args += ["--cc", f"{cc[0]}.{cc[1]}" if isinstance(cc, tuple) else str(cc)]
    # exit 1 = some cc cannot run some file, 3 = some verdict is unknown (a corrupt or unreadable
    # image decides it): valid answers, not failures
    return _run_json(args + ["--"] + [os.fspath(p) for p in paths], ok_codes=(0, 1, 3))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Console script `tpcomm`: replaces this process with the bundled CLI."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        exe = _loader.cli_path()
    except TpcommLibraryNotFoundError as e:
        print(f"tpcomm: {e}", file=sys.stderr)
        return 2
    os.execv(exe, [exe] + list(argv))
