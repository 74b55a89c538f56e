"""The binary wheel (scripts/build_wheel.sh): made from a build folder's libtpcomm.so and CLI,
tagged py3-none-manylinux_2_N, holding the package, the library, the CLI, py.typed and the
licenses, asking no newer glibc than its tag says, and working from a clean venv with no
environment variable set.

The wheel under test, first that applies:
  - $TPCOMM_TEST_WHEEL, when it is a manylinux wheel (CI's, built from build/);
  - in a source checkout: one built here by scripts/build_wheel.sh --partial-archs from the build
    folder of the library in use (build-dev works; ~20 s);
  - otherwise skipped (an installed package without its checkout).
"""
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "build_wheel.sh")
# The floor README.md and docs/PYTHON.md state ("glibc and driver floor").
GLIBC_FLOOR = (2, 34)
TAG = re.compile(r"^tpcomm-\d+\.\d+\.\d+-py3-none-manylinux_(\d+)_(\d+)_x86_64\.whl$")
# Libraries every manylinux system has (auditwheel's policy), which the wheel may ask for.
SYSTEM_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0",
               "libgcc_s.so.1", "ld-linux-x86-64.so.2"}


def _build_folder_of(library):
    build = os.path.dirname(os.path.dirname(library))  # <build>/src/libtpcomm.so
    if not all(os.path.exists(os.path.join(build, f)) for f in ("CMakeCache.txt", "tools/tpcomm")):
        pytest.skip(f"{library} is not in a CMake build folder with the CLI: set TPCOMM_TEST_WHEEL")
    return build


@pytest.fixture(scope="module")
def binary_wheel(library_or_skip, tmp_path_factory):
    given = os.environ.get("TPCOMM_TEST_WHEEL")
    if given and "manylinux" in os.path.basename(given):
        return given
    if not os.path.exists(os.path.join(REPO, "pyproject.toml")):
        pytest.skip("not a source checkout and no manylinux TPCOMM_TEST_WHEEL")
    build = _build_folder_of(library_or_skip)
    out = tmp_path_factory.mktemp("binary_wheel")
    r = subprocess.run(["bash", SCRIPT, "--build", build, "--out", str(out), "--partial-archs"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    path = r.stdout.strip().splitlines()[-1]
    assert os.path.dirname(path) == str(out) and os.path.isfile(path), r.stdout
    return path


def _floor(wheel):
    m = TAG.match(os.path.basename(wheel))
    assert m, f"not a py3-none manylinux wheel: {wheel}"
    return int(m.group(1)), int(m.group(2))


def test_tag_is_py3_none_manylinux_within_the_stated_floor(binary_wheel):
    floor = _floor(binary_wheel)
    assert floor <= GLIBC_FLOOR, f"{binary_wheel}: glibc {floor} above the documented {GLIBC_FLOOR}"
    with zipfile.ZipFile(binary_wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/WHEEL"))).decode()
    tags = re.findall(r"^Tag: (\S+)$", meta, re.M)
    assert tags and all(t.startswith("py3-none-manylinux_") for t in tags), meta
    assert "Root-Is-Purelib: false" in meta


def test_holds_package_library_cli_and_licenses(binary_wheel):
    with zipfile.ZipFile(binary_wheel) as z:
        names = set(z.namelist())
        for must in ("tpcomm/__init__.py", "tpcomm/_loader.py", "tpcomm/py.typed",
                     "tpcomm/lib/libtpcomm.so", "tpcomm/bin/tpcomm"):
            assert must in names, must
        for license_file in ("LICENSE", "THIRD_PARTY_NOTICES.md"):
            suffix = f".dist-info/licenses/{license_file}"
            assert [n for n in names if n.endswith(suffix)], license_file
        assert z.getinfo("tpcomm/bin/tpcomm").external_attr >> 16 & 0o111, "CLI not executable"
        assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
        # libcrypto and libstdc++ are linked in: auditwheel had nothing to copy (tpcomm.libs/), so
        # the library also works wherever it is copied to.
        assert not [n for n in names if n.startswith("tpcomm.libs/")]
        notices = z.read(next(n for n in names if n.endswith("THIRD_PARTY_NOTICES.md"))).decode()
    for component in ("CUDA Runtime", "OpenSSL", "libstdc++", "nlohmann/json", "LZ4", "Zstandard"):
        assert component in notices, component


def _version_needs(path):
    """{library: {versions}} and the NEEDED list, read by objdump -p from the ELF file."""
    r = subprocess.run(["objdump", "-p", path], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    needs, needed, lib = {}, [], None
    for line in r.stdout.splitlines():
        m = re.match(r"\s+NEEDED\s+(\S+)", line)
        if m:
            needed.append(m.group(1))
        m = re.match(r"\s+required from (\S+):", line)
        if m:
            lib = m.group(1)
            needs[lib] = set()
            continue
        m = re.match(r"\s+0x[0-9a-f]+ 0x[0-9a-f]+ \d+ (\S+)", line)
        if m and lib:
            needs[lib].add(m.group(1))
    return needs, needed


def _version_tuple(v):  # GLIBC_2.3.4 -> (2, 3, 4)
    return tuple(int(x) for x in v.split("_", 1)[1].split("."))


def test_no_binary_needs_a_newer_glibc_than_the_tag(binary_wheel, tmp_path):
    if subprocess.run(["objdump", "--version"], capture_output=True).returncode != 0:
        pytest.skip("no objdump (binutils)")
    floor = _floor(binary_wheel)
    elves = ["tpcomm/lib/libtpcomm.so", "tpcomm/bin/tpcomm"]
    with zipfile.ZipFile(binary_wheel) as z:
        z.extractall(tmp_path, members=elves)
    highest = {}
    for name in elves:
        needs, needed = _version_needs(str(tmp_path / name))
        assert set(needed) <= SYSTEM_LIBS, f"{name} needs {set(needed) - SYSTEM_LIBS}"
        glibc = [_version_tuple(v) for vs in needs.values() for v in vs if v.startswith("GLIBC_2")]
        highest[name] = max(glibc)
        cxx = sorted(v for vs in needs.values() for v in vs
                     if v.startswith(("GLIBCXX_", "CXXABI_")))
        assert not cxx, f"{name} asks the system's libstdc++ for {cxx}"
    print("highest GLIBC version needed:", {n: ".".join(map(str, v)) for n, v in highest.items()})
    for name, v in highest.items():
        assert v[:2] <= floor, f"{name} needs GLIBC {v}, above the tag's {floor}"


def test_clean_venv_finds_the_bundled_library_and_cli(binary_wheel, tmp_path):
    venv = tmp_path / "venv"
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "TPCOMM_LIBRARY", "TPCOMM_CLI") and not k.startswith("PIP_")}
    # This interpreter's pip installs into the venv (pip >= 22.3) where it has one: seeding the
    # venv with its own pip takes longer than the rest of the test.
    has_pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    if has_pip.returncode == 0:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        pip = [sys.executable, "-m", "pip", "--python", py]
    else:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [py, "-m", "pip"]
    r = subprocess.run(pip + ["install", "-q", "--no-deps", "--no-index", binary_wheel],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    code = ("import json, tpcomm; print(json.dumps({'file': tpcomm.__file__, "
            "'lib': tpcomm.library_path(), 'cli': tpcomm._loader.cli_path(), "
            "'version': tpcomm.library_version()}))")
    r = subprocess.run([py, "-c", code], capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    pkg = os.path.dirname(got["file"])
    assert pkg.startswith(str(venv)) and "site-packages" in pkg, got
    assert got["lib"] == os.path.join(pkg, "lib", "libtpcomm.so"), got
    assert got["cli"] == os.path.join(pkg, "bin", "tpcomm"), got
    r = subprocess.run([str(venv / "bin" / "tpcomm"), "version"], capture_output=True, text=True,
                       env=env, cwd=str(tmp_path))
    assert r.returncode == 0 and r.stdout.startswith("tpcomm "), r.stdout + r.stderr


@pytest.mark.skipif(os.environ.get("TPCOMM_EXPECT_INSTALLED") != "1",
                    reason="set by scripts/test.sh's wheel step, which runs this suite from a venv")
def test_the_package_under_test_is_the_installed_wheel():
    import tpcomm

    here = os.path.dirname(os.path.abspath(tpcomm.__file__))
    assert not here.startswith(os.path.join(REPO, "python")), here
    assert "site-packages" in here, here
    assert tpcomm.library_path() == os.path.join(here, "lib", "libtpcomm.so")
    assert not os.environ.get("TPCOMM_LIBRARY") and not os.environ.get("PYTHONPATH")
