"""Finds and loads libtpcomm.so and the `tpcomm` CLI, by absolute path, on first use.

Loading is lazy so that `import tpcomm` works anywhere (no GPU, no driver, even no library: the
error then comes at the first call and lists every place searched). The library links cudart
statically and loads libcuda/libnccl itself, so it does not depend on torch having been imported
first (the load-order trap of prebuilt custom all-reduce kernels).

Search order, first hit wins:
  1. $TPCOMM_LIBRARY            an explicit choice beats any default (e.g. a debug build)
  2. <package>/lib/libtpcomm.so the copy bundled in the wheel
  3. <repo>/build*/src/libtpcomm.so, newest first: a development build tree when the package is
     used from a source checkout (PYTHONPATH=python)
The CLI: $TPCOMM_CLI, <package>/bin/tpcomm, then tools/tpcomm next to the library's build tree.
"""
import ctypes
import glob
import os
import threading
from typing import Optional

from . import _abi, _elf_check
from .errors import TpcommLibraryNotFoundError

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_REPO_DIR = os.path.dirname(os.path.dirname(_PKG_DIR))  # python/tpcomm -> repo root

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_lib_path: Optional[str] = None


def _build_tree_candidates(name):
    hits = glob.glob(os.path.join(_REPO_DIR, "build*", name))
    return sorted(hits, key=os.path.getmtime, reverse=True)


def library_candidates():
    """Every path the loader would try, in order (for messages and tests)."""
    out = []
    env = os.environ.get("TPCOMM_LIBRARY")
    if env:
        out.append(("$TPCOMM_LIBRARY", env))
    out.append(("bundled", os.path.join(_PKG_DIR, "lib", "libtpcomm.so")))
    for path in _build_tree_candidates(os.path.join("src", "libtpcomm.so")):
        out.append(("build tree", path))
    return out


def _load_locked():
    global _lib, _lib_path
    tried = []
    for origin, path in library_candidates():
        if not os.path.exists(path):
            tried.append(f"{origin} {path}: no such file")
            if origin == "$TPCOMM_LIBRARY":
                break  # an explicit path that is wrong must not be silently replaced
            continue
        bad_file = _elf_check.problem(path)  # dlopen of a truncated file is a SIGBUS
        if bad_file:
            tried.append(f"{origin} {path}: not loaded: {bad_file}")
            if origin == "$TPCOMM_LIBRARY":
                break
            continue
        try:
            lib = ctypes.CDLL(os.path.abspath(path))
        except OSError as e:
            tried.append(f"{origin} {path}: {e}")
            if origin == "$TPCOMM_LIBRARY":
                break
            continue
        missing = _abi.bind(lib)
        if missing:
            tried.append(f"{origin} {path}: not a matching libtpcomm (missing {', '.join(missing)})")
            if origin == "$TPCOMM_LIBRARY":
                break
            continue
        _lib, _lib_path = lib, os.path.abspath(path)
        return
    raise TpcommLibraryNotFoundError(
        "cannot load libtpcomm.so. Install the wheel (python -m pip install .), or build it "
        "(cmake --build build --target tpcomm) and set TPCOMM_LIBRARY=/path/to/libtpcomm.so. "
        "Tried: " + "; ".join(tried))


def lib() -> ctypes.CDLL:
    """The loaded library (ctypes.CDLL with prototypes bound); raises TpcommLibraryNotFoundError."""
    if _lib is None:
        with _lock:
            if _lib is None:
                _load_locked()
    assert _lib is not None  # _load_locked sets it or raises
    return _lib


def library_path() -> str:
    """Absolute path of the library in use (loads it if needed)."""
    lib()
    assert _lib_path is not None
    return _lib_path


def cli_candidates():
    out = []
    env = os.environ.get("TPCOMM_CLI")
    if env:
        out.append(("$TPCOMM_CLI", env))
    out.append(("bundled", os.path.join(_PKG_DIR, "bin", "tpcomm")))
    if _lib_path:  # build/src/libtpcomm.so -> build/tools/tpcomm
        out.append(("next to the library",
                    os.path.join(os.path.dirname(os.path.dirname(_lib_path)), "tools", "tpcomm")))
    for path in _build_tree_candidates(os.path.join("tools", "tpcomm")):
        out.append(("build tree", path))
    return out


def cli_path() -> str:
    """Absolute path of the `tpcomm` executable. Never searches $PATH: the `tpcomm` found there
    may be this package's own console script, which would exec itself forever."""
    tried = []
    for origin, path in cli_candidates():
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.abspath(path)
        tried.append(f"{origin} {path}")
        if origin == "$TPCOMM_CLI":
            break
    raise TpcommLibraryNotFoundError(
        "cannot find the tpcomm CLI (built as target tpcomm_cli). Tried: " + "; ".join(tried))
