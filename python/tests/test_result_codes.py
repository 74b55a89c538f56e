"""One table of result codes: src/common/result_table.h, in the order of tpcomm.h's enum. The
Python side (_abi.RESULT_NAMES, one exception class per code in errors.py) is checked against
the header, the table and the loaded library's tpcommGetErrorString."""
import os
import re

import pytest

from tpcomm import _abi, errors

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(REPO, "include", "tpcomm", "tpcomm.h")
TABLE = os.path.join(REPO, "src", "common", "result_table.h")


def _read(path):
    if not os.path.exists(path):
        pytest.skip(f"no {os.path.relpath(path, REPO)} (not a checkout)")
    with open(path) as f:
        return f.read()


def header_enum():
    body = re.search(r"typedef enum \{(.*?)\} tpcommResult_t;", _read(HEADER), re.S).group(1)
    return [(name, int(value)) for name, value in re.findall(r"\b(tpcomm\w+)\s*=\s*(\d+)", body)]


def table_rows():
    return re.findall(r'X\((tpcomm\w+), "([^"]*)"\)', _read(TABLE))


def test_the_header_enum_is_pythons_table():
    enum = header_enum()
    assert enum[-1] == ("tpcommNumResults", _abi.NUM_RESULTS)
    assert enum[:-1] == [(name, i) for i, name in enumerate(_abi.RESULT_NAMES)]


def test_the_library_table_has_the_same_rows_in_the_same_order():
    assert [name for name, _ in table_rows()] == list(_abi.RESULT_NAMES)


def test_one_exception_class_per_failure_code():
    for code, name in enumerate(_abi.RESULT_NAMES):
        cls = errors.error_class(code)
        if code == _abi.SUCCESS:
            assert cls is errors.TpcommError
            continue
        assert cls is not errors.TpcommError, f"no exception class for {name}"
        assert cls.code == code
        err = errors.make_error(code, "message", op="tpcommX")
        assert isinstance(err, cls) and err.name == name and str(err) == "tpcommX: message"
    assert errors.error_class(_abi.NUM_RESULTS) is errors.TpcommError
    assert errors.make_error(_abi.NUM_RESULTS, "m").name == "unknown"


def test_the_loaded_library_describes_exactly_these_codes(library_or_skip):
    from tpcomm import _loader

    describe = _loader.lib().tpcommGetErrorString
    rows = table_rows()
    for code in range(_abi.NUM_RESULTS):
        assert describe(code).decode() == rows[code][1], _abi.RESULT_NAMES[code]
    assert describe(_abi.NUM_RESULTS).decode() == "unknown result code"
