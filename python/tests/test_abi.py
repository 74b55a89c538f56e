"""The ctypes mirror (tpcomm/_abi.py) against include/tpcomm/tpcomm.h: enum values, constants,
and (with a C compiler) every struct's size and field offsets. Skipped where the header is not
around (an installed wheel tested outside the source tree)."""
import ctypes
import os
import re
import shutil
import subprocess

import pytest

import tpcomm
from tpcomm import _abi, _config

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(REPO, "include", "tpcomm", "tpcomm.h")

pytestmark = pytest.mark.skipif(not os.path.exists(HEADER), reason="no tpcomm.h (not a checkout)")


def header():
    with open(HEADER) as f:
        return f.read()


def enum_values(prefix):
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"\b(" + prefix + r"\w*)\s*=\s*(\d+)", header())}


def define(name):
    m = re.search(r"#define\s+" + name + r"\s+(\w+)", header())
    return int(m.group(1).rstrip("uU"), 0)


def test_result_codes():
    values = {k: v for k, v in enum_values("tpcomm").items() if k in _abi.RESULT_NAMES}
    assert values == {name: i for i, name in enumerate(_abi.RESULT_NAMES)}
    assert enum_values("tpcommNumResults")["tpcommNumResults"] == _abi.NUM_RESULTS


def test_datatypes_ops_and_modes():
    v = enum_values("tpcomm")
    assert (v["tpcommFloat16"], v["tpcommFloat32"], v["tpcommBfloat16"]) == \
        (_abi.FLOAT16, _abi.FLOAT32, _abi.BFLOAT16)
    assert v["tpcommSum"] == _abi.SUM
    assert (v["tpcommNcclAuto"], v["tpcommNcclOff"], v["tpcommNcclGiven"]) == \
        (_abi.NCCL_AUTO, _abi.NCCL_OFF, _abi.NCCL_GIVEN)


def test_algorithms():
    v = enum_values("tpcommAlgo")
    assert v.pop("tpcommAlgoAuto") == 0 and v.pop("tpcommNumAlgos", None) is None
    assert enum_values("tpcommNumAlgos")["tpcommNumAlgos"] == _abi.NUM_ALGOS
    assert sorted(v.values()) == list(range(1, _abi.NUM_ALGOS))  # every value: an enumerator


def test_variants():
    """The header's variants are 0..tpcommNumVariants-1, each an enumerator (the package asks the
    library for their names: test_every_library_value_has_a_python_name_that_round_trips)."""
    v = enum_values("tpcommVariant")
    n = enum_values("tpcommNumVariants")["tpcommNumVariants"]
    assert sorted(v.values()) == list(range(n))  # every value: an enumerator


def test_collectives():
    v = enum_values("tpcommColl")
    assert enum_values("tpcommNumColls")["tpcommNumColls"] == len(_abi.COLL_NAMES)
    assert [v["tpcommColl" + "".join(w.title() for w in n.split("_"))] for n in _abi.COLL_NAMES] \
        == list(range(len(_abi.COLL_NAMES)))


def library_names(lib, fn):
    """fn(0), fn(1), ... as the library names them, up to its first NULL (its count)."""
    getattr(lib, fn).restype = ctypes.c_char_p
    getattr(lib, fn).argtypes = [ctypes.c_int]
    names = []
    while len(names) < 1024:
        name = getattr(lib, fn)(len(names))
        if name is None:
            return tuple(names)
        names.append(name.decode())
    raise AssertionError(f"{fn} names more than 1024 values")


def test_every_library_value_has_a_python_name_that_round_trips():
    """Every algorithm value the library names (0..count-1, no gaps) is the mirror's, and the
    Python side turns it into that name and back (algo=, stats, last_call/explain); every variant
    value is passed on by the library's own name."""
    lib_path = os.environ.get("TPCOMM_LIBRARY")
    if not lib_path or not os.path.exists(lib_path):
        pytest.skip("TPCOMM_LIBRARY not set")
    lib = ctypes.CDLL(lib_path)
    algos = library_names(lib, "tpcommAlgoName")
    variants = library_names(lib, "tpcommVariantName")
    assert algos == _abi.ALGO_NAMES
    # Every variant the header has is named by the library, and the package passes its names on.
    assert len(variants) == enum_values("tpcommNumVariants")["tpcommNumVariants"]
    assert [_abi.variant_name(lib, v) for v in range(len(variants))] == list(variants)
    assert _abi.variant_name(lib, len(variants)) == str(len(variants))
    assert _abi.variant_name(lib, -1) == "-1"
    stats = _abi.Stats()
    for a, name in enumerate(algos):
        assert _config.algo_code(name) == a and _config.algo_code(a) == a
        assert _config.make_config(algo=name).algo == a
        stats.calls[a] = 100 + a
    assert _abi.stats_dict(stats)["calls"] == {name: 100 + a for a, name in enumerate(algos)}
    assert tpcomm.ALGORITHMS == algos
    for v, name in enumerate(variants):
        info = _abi.CallInfo(algo=v % len(algos), variant=v)
        assert _abi.call_info_dict(info, lib)["variant"] == name
        assert _abi.call_info_dict(info, lib)["algo"] == algos[v % len(algos)]
    for bad in (-1, len(algos)):
        with pytest.raises(tpcomm.TpcommInvalidArgumentError, match=f"algo={bad}"):
            _config.algo_code(bad)


def test_constants():
    assert define("TPCOMM_CONFIG_MAGIC") == _abi.CONFIG_MAGIC
    assert define("TPCOMM_STATS_MAX_ALGOS") == _abi.STATS_MAX_ALGOS >= _abi.NUM_ALGOS
    assert define("TPCOMM_CONFIG_VERSION") == _abi.CONFIG_VERSION
    assert define("TPCOMM_UNIQUE_ID_BYTES") == _abi.UNIQUE_ID_BYTES
    assert define("TPCOMM_RANK_HANDLE_BYTES") == _abi.RANK_HANDLE_BYTES
    assert re.search(r"char reason\[" + str(_abi.REASON_BYTES) + r"\]", header())


def test_every_api_function_has_a_prototype():
    declared = set(re.findall(r"TPCOMM_API\s+[\w\s\*]+?\b(tpcomm\w+)\s*\(", header()))
    assert declared == set(_abi.PROTOTYPES)


STRUCTS = {
    "tpcommConfig_t": _abi.Config,
    "tpcommStats_t": _abi.Stats,
    "tpcommCallInfo_t": _abi.CallInfo,
    "tpcommUniqueId": _abi.UniqueId,
    "tpcommRankHandle": _abi.RankHandle,
}


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")
def test_struct_layouts_match_the_c_compiler(tmp_path):
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "tpcomm/tpcomm.h"',
             "int main(void) {"]
    for cname, cls in STRUCTS.items():
        lines.append(f'  printf("{cname} (sizeof) %zu\\n", sizeof({cname}));')
        for field, _ in cls._fields_:
            lines.append(f'  printf("{cname} {field} %zu\\n", offsetof({cname}, {field}));')
    lines += ["  return 0;", "}"]
    src = tmp_path / "probe.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "probe"
    compiler = shutil.which("cc") or shutil.which("gcc")
    subprocess.run([compiler, "-I", os.path.join(REPO, "include"), str(src), "-o", str(exe)],
                   check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        cname, field, value = line.split()
        cls = STRUCTS[cname]
        expect = ctypes.sizeof(cls) if field == "(sizeof)" else getattr(cls, field).offset
        assert int(value) == expect, f"{cname}.{field}: C says {value}, ctypes {expect}"
