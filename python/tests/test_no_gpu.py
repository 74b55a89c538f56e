"""With the library but without a GPU or driver (CI): clear errors at use, and everything that
needs no GPU (version, unique ids, the inspector) works."""
import glob
import os
import subprocess
import sys

import pytest

import tpcomm

HAS_GPU = bool(glob.glob("/dev/nvidia[0-9]*"))
no_gpu = pytest.mark.skipif(HAS_GPU, reason="a GPU is present: the no-GPU errors cannot happen")


def test_version(library_or_skip):
    assert tpcomm.library_version() >= (0, 1, 0)
    assert os.path.isabs(tpcomm.library_path())


def test_unique_ids_need_no_gpu(library_or_skip):
    a, b = tpcomm.get_unique_id(), tpcomm.get_unique_id()
    assert len(a) == len(b) == 128 and a != b


@no_gpu
def test_init_all_without_gpu_raises_no_device(library_or_skip):
    with pytest.raises(tpcomm.TpcommNoDeviceError) as info:
        tpcomm.Communicator.init_all([0, 1])
    e = info.value
    assert e.code == 9 and e.name == "tpcommNoDevice"
    assert "tpcommCommInitAll" in str(e)
    assert "driver" in str(e) or "device" in str(e)  # says what is missing


@no_gpu
def test_init_rank_without_gpu_raises_no_device(library_or_skip):
    with pytest.raises(tpcomm.TpcommNoDeviceError, match="tpcommCommInitRank"):
        tpcomm.Communicator.from_unique_id(0, 1, tpcomm.get_unique_id())


@no_gpu
def test_selecting_a_device_without_driver_raises_no_device(library_or_skip):
    with pytest.raises(tpcomm.TpcommNoDeviceError, match="driver"):
        tpcomm.Communicator.from_unique_id(0, 1, tpcomm.get_unique_id(), device=0)


def test_bad_config_is_refused_before_any_gpu_work(library_or_skip):
    with pytest.raises(tpcomm.TpcommInvalidArgumentError, match="algo"):
        tpcomm.Communicator.init_all([0], algo="bogus")


def test_inspect_the_library_itself(library_or_skip):
    report = tpcomm.inspect(tpcomm.library_path(), ["9.0", (12, 0)])
    assert report["exit_code"] in (0, 1)
    (entry,) = report["files"]
    assert entry["path"] == tpcomm.library_path() and not entry["errors"]
    ccs = {v["cc"] for v in entry["verdicts"]}
    assert {"9.0", "12.0"} <= ccs


def test_inspect_a_missing_file_raises(library_or_skip, tmp_path):
    with pytest.raises(tpcomm.TpcommCliError) as info:
        tpcomm.inspect(str(tmp_path / "nothing.so"))
    assert info.value.returncode == 2


@no_gpu
def test_doctor_reports_no_gpu(library_or_skip):
    try:
        report = tpcomm.doctor()
    except tpcomm.TpcommCliError as e:
        if "not built yet" in str(e):
            pytest.skip("this build's `tpcomm doctor` predates --json")
        raise
    assert report["exit_code"] == 2  # 2: no driver / no GPU visible


def test_console_entry_point_execs_the_cli(library_or_skip):
    code = "import sys; from tpcomm.cli import main; sys.argv = ['tpcomm', 'version']; main()"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("tpcomm "), r.stdout + r.stderr
