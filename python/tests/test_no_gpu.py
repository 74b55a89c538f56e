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


def _object_with_a_corrupt_cubin(path):
    """A minimal ELF object whose one fat-binary image is an sm_80 cubin without a section table
    (e_shoff 0): the inspector cannot tell whether it holds kernels."""
    def le(v, n):
        return v.to_bytes(n, "little")
    cubin = bytearray(64)
    cubin[0:4] = b"\x7fELF"
    cubin[4:7] = b"\x02\x01\x01"
    cubin[18:20] = le(190, 2)  # EM_CUDA; e_shoff (40..47) stays 0
    entry = (le(2, 2) + le(0x101, 2) + le(64, 4) + le(len(cubin), 8) + le(0, 4) + le(0, 4) +
             le(0x10008, 4) + le(80, 4) + le(0, 8) + le(0x11, 8) + le(0, 8) + le(0, 8))
    body = entry + bytes(cubin)
    fatbin = le(0xBA55ED50, 4) + le(1, 2) + le(16, 2) + le(len(body), 8) + body
    names = b"\0.shstrtab\0.nv_fatbin\0"
    names_at = 64 + len(fatbin)
    shoff = (names_at + len(names) + 7) // 8 * 8
    header = bytearray(64)
    header[0:7] = b"\x7fELF\x02\x01\x01"
    header[16:18], header[18:20], header[20:24] = le(1, 2), le(62, 2), le(1, 4)
    header[40:48], header[52:54], header[58:60] = le(shoff, 8), le(64, 2), le(64, 2)
    header[60:62], header[62:64] = le(3, 2), le(1, 2)

    def section(name, kind, offset, size):
        return le(name, 4) + le(kind, 4) + bytes(16) + le(offset, 8) + le(size, 8) + bytes(24)
    data = bytes(header) + fatbin + names
    data += bytes(shoff - len(data))
    data += section(0, 0, 0, 0) + section(1, 3, names_at, len(names))
    data += section(11, 1, 64, len(fatbin))
    path.write_bytes(data)


def test_inspect_says_unknown_for_a_corrupt_cubin(library_or_skip, tmp_path):
    path = tmp_path / "corrupt.o"
    _object_with_a_corrupt_cubin(path)
    report = tpcomm.inspect(str(path), ["9.0"])
    assert report["exit_code"] == 3  # neither "runs" (0) nor "cannot run" (1)
    (entry,) = report["files"]
    (verdict,) = entry["verdicts"]
    assert verdict["verdict"] == "unknown" and not verdict["can_run"]
    image = entry["containers"][0]["entries"][0]
    assert image["contents"] == "corrupt" and "e_shoff 0" in image["problem"]


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


def test_fused_calls_reach_the_library_and_carry_its_words(library_or_skip):
    """Communicator.all_reduce_add_rmsnorm_raw / explain_add_rmsnorm call the C functions with
    their prototypes (a handle that is no communicator: the library says so by name, before it
    touches any pointer); a closed one is refused in Python."""
    import ctypes

    comm = tpcomm.Communicator.__new__(tpcomm.Communicator)
    comm._handle, comm.rank, comm.device = ctypes.c_void_p(0x1000), 0, 0
    with pytest.raises(tpcomm.TpcommInvalidUsageError,
                       match="tpcommAllReduceAddRmsNorm: comm 0x1000 is not a live communicator"):
        comm.all_reduce_add_rmsnorm_raw(16, 32, 48, 64, 80, 1, 8, "bfloat16", eps=1e-5,
                                        weight_offset=1, quant_scale=96, stream=0)
    with pytest.raises(tpcomm.TpcommInvalidUsageError,
                       match="tpcommCommExplainAddRmsNorm: comm 0x1000 is not a live"):
        comm.explain_add_rmsnorm(1, 8, fp8=True)
    comm._handle = None
    with pytest.raises(tpcomm.TpcommInvalidUsageError, match="the communicator is closed"):
        comm.all_reduce_add_rmsnorm_raw(16, 32, 48, 64, 80, 1, 8, "bfloat16")
