"""Packaging: pyproject.toml asks for the right wheel, and a built wheel holds the library and the
CLI, is tagged py3-none (one wheel for every CPython), and works from where it is unpacked.

The wheel under test, first that applies:
  - $TPCOMM_TEST_WHEEL=path/to/tpcomm-*.whl   check an existing wheel (no build);
  - no GPU on this machine, or --run-slow       build one in a temp dir for sm_75 only (~1 min on
                                                2 cores; needs nvcc and scikit-build-core);
  - otherwise skipped: GPU machines do not spend GPU time compiling.
"""
import glob
import importlib
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYPROJECT = os.path.join(REPO, "pyproject.toml")
in_checkout = pytest.mark.skipif(not os.path.exists(PYPROJECT), reason="not a source checkout")


def load_pyproject():
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        tomllib = pytest.importorskip("tomli")
    with open(PYPROJECT, "rb") as f:
        return tomllib.load(f)


@in_checkout
def test_pyproject_asks_for_a_py3_none_wheel_with_library_and_cli():
    p = load_pyproject()
    skb = p["tool"]["scikit-build"]
    assert skb["wheel"]["py-api"] == "py3"  # ctypes, no extension module: any CPython 3
    assert skb["wheel"]["packages"] == ["python/tpcomm"]
    assert skb["install"]["components"] == ["python"]
    assert set(skb["build"]["targets"]) == {"tpcomm", "tpcomm_cli"}
    defines = skb["cmake"]["define"]
    assert defines["TPCOMM_BUILD_TESTS"] == "OFF" and defines["TPCOMM_BUILD_BENCH"] == "OFF"
    assert "TPCOMM_CUDA_ARCHS" not in defines  # default = the fat build; -C overrides
    assert p["project"]["scripts"]["tpcomm"] == "tpcomm.cli:main"


@in_checkout
def test_apache_license_file_and_metadata():
    p = load_pyproject()
    assert p["project"]["license"] == "Apache-2.0"  # PEP 639: an SPDX expression
    assert p["project"]["license-files"] == ["LICENSE", "THIRD_PARTY_NOTICES.md"]
    # scikit-build-core 0.10 rejects the string form ("expecting a dictionary"); 0.11 takes it.
    assert p["build-system"]["requires"] == ["scikit-build-core>=0.11"]
    with open(os.path.join(REPO, "LICENSE")) as f:
        text = f.read()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the full text, not a pointer to it


@in_checkout
def test_wheel_metadata_says_apache_2(tmp_path):
    """The metadata scikit-build-core writes for the wheel (no CMake build needed)."""
    build = pytest.importorskip("scikit_build_core.build")
    import scikit_build_core

    if tuple(int(x) for x in scikit_build_core.__version__.split(".")[:2]) < (0, 11):
        pytest.skip(f"scikit-build-core {scikit_build_core.__version__} < 0.11 (the build "
                    "requires 0.11 and pip fetches it; this test uses the installed one)")
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        dist_info = build.prepare_metadata_for_build_wheel(str(tmp_path))
    finally:
        os.chdir(cwd)
    with open(os.path.join(tmp_path, dist_info, "METADATA")) as f:
        meta = f.read()
    assert "License-Expression: Apache-2.0" in meta and "License-File: LICENSE" in meta
    assert "License-File: THIRD_PARTY_NOTICES.md" in meta


@in_checkout
def test_one_version_for_c_and_python():
    p = load_pyproject()
    regex = p["tool"]["scikit-build"]["metadata"]["version"]["regex"]
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        cmake = f.read()
    version = re.search(regex, cmake).group("value")
    with open(os.path.join(REPO, "include", "tpcomm", "tpcomm.h")) as f:
        h = f.read()
    parts = [re.search(rf"#define TPCOMM_{n}\s+(\d+)", h).group(1) for n in ("MAJOR", "MINOR", "PATCH")]
    assert version == ".".join(parts)
    assert cmake.rstrip().endswith("include(cmake/Python.cmake)")


def _cmake_build_of(library):
    """The CMake build folder that made `library` (its src/libtpcomm.so), if it has the kernel
    objects TPCOMM_KERNELS_FROM links; else None."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(library))) if library else ""
    objects = os.path.join(build, "src", "CMakeFiles", "tpcomm_kernel_objects.dir")
    ok = os.path.exists(os.path.join(build, "CMakeCache.txt")) and os.path.isdir(objects)
    return build if ok else None


def _has_gpu():
    return bool(glob.glob("/dev/nvidia[0-9]*"))


@pytest.fixture(scope="module")
def wheel(request, tmp_path_factory):
    given = os.environ.get("TPCOMM_TEST_WHEEL")
    if given:
        return given
    if not os.path.exists(PYPROJECT):
        pytest.skip("not a source checkout and no TPCOMM_TEST_WHEEL")
    if _has_gpu() and not request.config.getoption("--run-slow"):
        pytest.skip("GPU machine: wheel build skipped (--run-slow or TPCOMM_TEST_WHEEL to check)")
    if not shutil.which("nvcc") and not os.path.exists("/usr/local/cuda/bin/nvcc"):
        pytest.skip("no nvcc: cannot build the library")
    try:
        importlib.import_module("scikit_build_core")  # only whether it is installed here
        isolation = ["--no-build-isolation"]  # works offline
    except ImportError:
        isolation = []  # pip fetches scikit-build-core
    out = tmp_path_factory.mktemp("wheel")
    env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL=os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2"))
    cmd = [sys.executable, "-m", "pip", "wheel", REPO, "--no-deps", *isolation, "-w", str(out),
           "--config-settings=cmake.define.TPCOMM_CUDA_ARCHS=75-real",  # -C needs pip >= 23.1
           f"--config-settings=build-dir={out / 'build'}"]
    # The library under test comes from a CMake build of this checkout (scripts/test.sh): link its
    # kernel objects (src/CMakeLists.txt, TPCOMM_KERNELS_FROM) instead of compiling the kernels
    # again. What this checks is pip's path through CMake and the wheel's layout, not nvcc.
    build = _cmake_build_of(os.environ.get("TPCOMM_LIBRARY", ""))
    if build:
        cmd.append(f"--config-settings=cmake.define.TPCOMM_KERNELS_FROM={build}")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (path,) = glob.glob(str(out / "tpcomm-*.whl"))
    return path


def test_wheel_is_py3_none(wheel):
    # linux_x86_64 from `pip wheel .`, manylinux_2_N_x86_64 from scripts/build_wheel.sh
    platform = r"(linux|manylinux_\d+_\d+)_x86_64"
    assert re.search(rf"-py3-none-{platform}\.whl$", os.path.basename(wheel)), wheel
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/WHEEL"))
        assert re.search(rf"^Tag: py3-none-{platform}$", z.read(meta).decode(), re.M)


def test_wheel_holds_library_cli_and_package(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for must in ("tpcomm/lib/libtpcomm.so", "tpcomm/bin/tpcomm", "tpcomm/__init__.py",
                     "tpcomm/torch.py", "tpcomm/_abi.py", "tpcomm/_elf_check.py",
                     "tpcomm/py.typed"):
            assert must in names, must
        assert [n for n in names if n.endswith(".dist-info/licenses/LICENSE")], "no LICENSE"
        assert z.getinfo("tpcomm/bin/tpcomm").external_attr >> 16 & 0o111, "CLI not executable"
        # only what the package needs: no headers, no CMake config, no SONAME copies
        assert not [n for n in names if n.endswith((".h", ".cmake")) or ".so." in n]
        entry = next(n for n in names if n.endswith("entry_points.txt"))
        assert "tpcomm = tpcomm.cli:main" in z.read(entry).decode()


def test_unpacked_wheel_uses_its_own_library_and_cli(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path)
        for info in z.infolist():  # zipfile drops the mode bits; pip restores them the same way
            mode = info.external_attr >> 16
            if mode:
                os.chmod(tmp_path / info.filename, mode & 0o777)
    env = {k: v for k, v in os.environ.items() if k not in ("TPCOMM_LIBRARY", "TPCOMM_CLI")}
    env["PYTHONPATH"] = str(tmp_path)
    code = ("import tpcomm, subprocess; print(tpcomm.library_path()); "
            "print(tpcomm.library_version()); print(tpcomm._loader.cli_path())")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    lib, version, cli = r.stdout.split("\n")[:3]
    assert lib == str(tmp_path / "tpcomm" / "lib" / "libtpcomm.so")
    assert cli == str(tmp_path / "tpcomm" / "bin" / "tpcomm")
    r = subprocess.run([cli, "version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("tpcomm "), r.stderr
