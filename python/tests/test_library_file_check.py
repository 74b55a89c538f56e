"""A broken libtpcomm.so (truncated copy, wrong file, wrong machine) is a clear Python error that
names the file and what is wrong, never a SIGBUS inside dlopen."""
import os
import platform
import shutil
import signal
import struct
import subprocess
import sys

import pytest

from tpcomm import _elf_check

HOST_MACHINE = _elf_check._MACHINES.get(platform.machine(), 62)


def _elf(*, ident=b"\x7fELF\x02\x01\x01", e_type=3, machine=HOST_MACHINE, phnum=1,
         phentsize=56, seg_size=200, shnum=2, file_size=512):
    """A minimal ELF64 image: header, one PT_LOAD of seg_size bytes from 0, section headers
    (shnum x 64 bytes) right after the segment, padded or cut to file_size."""
    shoff = seg_size if shnum else 0
    head = ident.ljust(16, b"\0") + struct.pack(
        "<HHIQQQIHHHHHH", e_type, machine, 1, 0, 64, shoff, 0, 64, phentsize, phnum, 64, shnum, 0)
    phdr = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, seg_size, seg_size, 0x1000)
    return (head + phdr * phnum).ljust(file_size, b"\0")[:file_size]


@pytest.mark.parametrize("image, words", [
    (_elf(), None),
    (b"", "too short"),
    (_elf()[:63], "too short"),
    (b"#!/bin/sh\n" * 10, "not an ELF file"),
    (_elf(ident=b"\x7fELF\x01\x01\x01"), "not 64-bit"),
    (_elf(ident=b"\x7fELF\x02\x02\x01"), "big-endian"),
    (_elf(e_type=2), "not a shared library"),
    (_elf(machine=3), "built for i386"),
    (_elf(phentsize=32), "program header entries of 32 bytes"),
    (_elf(phnum=20), "program headers end at byte 1184, but the file has 512 bytes"),
    (_elf(file_size=300), "section header table ends at byte 328, but the file has 300"),
    (_elf(seg_size=400, shnum=0, file_size=300), "segment 0 (type 0x1) ends at byte 400"),
])
def test_elf_problems_are_named(tmp_path, image, words):
    path = tmp_path / "lib.so"
    path.write_bytes(image)
    why = _elf_check.problem(str(path))
    if words is None:
        assert why is None
    else:
        assert why is not None and words in why, why


def test_an_unreadable_file_is_a_problem_not_an_exception(tmp_path):
    assert "a directory, not a regular file" in _elf_check.problem(str(tmp_path))
    assert "cannot read it" in _elf_check.problem(str(tmp_path / "missing.so"))


def _run_quick(code, **env):
    """Runs `code` in a fresh interpreter; a hang (the old FIFO check) fails the test, in 20 s."""
    try:
        return subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env),
                              capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("the file check blocked on the FIFO (no writer ever comes)")


def test_a_fifo_is_refused_unopened(tmp_path):
    fifo = tmp_path / "libtpcomm.so"
    os.mkfifo(fifo)
    res = _run_quick(f"from tpcomm import _elf_check; print(_elf_check.problem({str(fifo)!r}))")
    assert res.returncode == 0, res.stderr
    assert "a FIFO (named pipe), not a regular file" in res.stdout, res.stdout


def test_a_fifo_at_tpcomm_library_fails_fast_and_clearly(tmp_path):
    fifo = tmp_path / "libtpcomm.so"
    os.mkfifo(fifo)
    res = _run_quick("import tpcomm; tpcomm.get_unique_id()", TPCOMM_LIBRARY=str(fifo))
    assert res.returncode == 1, (res.returncode, res.stderr)
    assert "TpcommLibraryNotFoundError" in res.stderr, res.stderr
    assert f"$TPCOMM_LIBRARY {fifo}: not loaded: a FIFO (named pipe)" in res.stderr, res.stderr


def _load_in_subprocess(library):
    env = dict(os.environ, TPCOMM_LIBRARY=str(library))
    return subprocess.run(
        [sys.executable, "-c", "import tpcomm; tpcomm.get_unique_id(); print('loaded')"],
        env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("keep", [0.5, 0.9, 100 / 3e6])
def test_a_truncated_library_is_a_clear_error_not_a_bus_error(library_or_skip, tmp_path, keep):
    data = open(library_or_skip, "rb").read()
    cut = tmp_path / "libtpcomm.so"
    cut.write_bytes(data[:max(1, int(len(data) * keep))])
    res = _load_in_subprocess(cut)
    assert res.returncode != -signal.SIGBUS, "dlopen of the truncated file crashed (SIGBUS)"
    assert res.returncode == 1, (res.returncode, res.stderr)
    assert "TpcommLibraryNotFoundError" in res.stderr, res.stderr
    assert f"$TPCOMM_LIBRARY {cut}: not loaded:" in res.stderr, res.stderr
    assert "truncated" in res.stderr, res.stderr


def test_the_intact_library_still_loads(library_or_skip, tmp_path):
    copy = tmp_path / "libtpcomm.so"
    shutil.copyfile(library_or_skip, copy)
    assert _elf_check.problem(str(copy)) is None
    res = _load_in_subprocess(copy)
    assert res.returncode == 0 and "loaded" in res.stdout, res.stderr
