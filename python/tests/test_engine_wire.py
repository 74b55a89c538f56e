"""The engines' own quantized all-reduce option (AMD's QuickReduce variables) passed through to
tpcomm's quantized wire by the plugins (tpcomm.engines.engine_wire, with_wire), without an
engine and without a GPU. That the engines still have those variables, with those values, and
that the plugins install the class: test_contract_vllm.py, test_contract_sglang.py."""
import logging

import pytest

from tpcomm import engines, sglang_plugin, vllm_plugin

MiB = 1024 * 1024
VLLM = vllm_plugin.WIRE_ENV  # quantization, min KB, max MB
SGLANG = sglang_plugin.WIRE_ENV
LOGGER = "engine.wire.test"


@pytest.fixture
def env(monkeypatch):
    """monkeypatch with every variable engine_wire reads unset."""
    for name in (*VLLM, *SGLANG, "TPCOMM_WIRE"):
        if name:
            monkeypatch.delenv(name, raising=False)
    return monkeypatch


def wire(env, values, names=VLLM, known=vllm_plugin.WIRE_VALUES):
    for key, value in values.items():
        env.setenv(key, value)
    return engines.engine_wire(*names, logging.getLogger(LOGGER), known=known)


def lines(caplog, level):
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == level]


@pytest.mark.parametrize("value, codec", [
    ("INT8", "int8"), ("INT4", "int4"),
    ("INT6", "int8"), ("INT3", "int4"),  # no 6-/3-bit codec: the wider one
    ("FP", None), ("NONE", None),  # QuickReduce at full precision, or off: no wire
])
def test_every_quickreduce_value_maps_to_a_codec_or_none(env, caplog, value, codec):
    with caplog.at_level(logging.INFO, logger=LOGGER):
        got = wire(env, {VLLM[0]: value})
    if codec is None:
        assert got is None and caplog.records == []
        return
    assert got["config"] == {"wire": codec}
    assert got["max_size"] == 2048 * MiB  # QuickReduce's default largest message
    assert got["summary"] == (f"quantized wire {codec} from VLLM_ROCM_QUICK_REDUCE_QUANTIZATION="
                              f"{value} (all-reduces up to 2048 MiB)")
    info = lines(caplog, logging.INFO)
    if value in ("INT6", "INT3"):
        assert len(info) == 1 and f"no {value[3]}-bit codec" in info[0] and codec in info[0] \
            and "never less precise than asked" in info[0], info
    else:
        assert info == []
    assert lines(caplog, logging.WARNING) == []


def test_the_values_cover_vllms_choices_and_the_codecs_are_tpcomms():
    assert set(engines.QUICK_REDUCE_CODECS) == {"FP", "INT8", "INT6", "INT4", "INT3", "NONE"}
    from tpcomm._config import WIRE_CODES

    assert {c for c in engines.QUICK_REDUCE_CODECS.values() if c} <= set(WIRE_CODES)


@pytest.mark.parametrize("values", [{}, {VLLM[0]: ""},
                                    # the size variables alone ask no wire
                                    {VLLM[1]: "512", VLLM[2]: "64"}])
def test_off_by_default(env, caplog, values):
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        assert wire(env, values) is None
    assert caplog.records == []


@pytest.mark.parametrize("value", ["INT2", "int8", " INT8", "8"])
def test_an_unknown_value_is_a_warning_naming_the_known_ones_and_no_wire(env, caplog, value):
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert wire(env, {VLLM[0]: value}) is None
    warning = lines(caplog, logging.WARNING)
    assert len(warning) == 1, caplog.records
    assert f"VLLM_ROCM_QUICK_REDUCE_QUANTIZATION={value} is not a QuickReduce" in warning[0]
    assert "known: FP, INT8, INT6, INT4, INT3, NONE" in warning[0]


def test_sglang_knows_no_int3_and_has_no_min_size_variable(env, caplog):
    assert SGLANG[1] is None
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert wire(env, {SGLANG[0]: "INT3"}, SGLANG, sglang_plugin.WIRE_VALUES) is None
    assert "known: FP, INT8, INT6, INT4, NONE" in lines(caplog, logging.WARNING)[0]
    env.setenv(VLLM[1], "512")  # vLLM's variable: not SGLang's
    got = wire(env, {SGLANG[0]: "INT6", SGLANG[2]: "256"}, SGLANG, sglang_plugin.WIRE_VALUES)
    assert got["config"] == {"wire": "int8"} and got["max_size"] == 256 * MiB
    assert got["summary"] == ("quantized wire int8 from ROCM_QUICK_REDUCE_QUANTIZATION=INT6 "
                              "(all-reduces up to 256 MiB)")


def test_min_kb_is_wire_min_bytes(env):
    got = wire(env, {VLLM[0]: "INT4", VLLM[1]: "512"})
    assert got["config"] == {"wire": "int4", "wire_min_bytes": 512 * 1024}
    assert "from 512 KB, VLLM_ROCM_QUICK_REDUCE_QUANTIZATION_MIN_SIZE_KB=512" in got["summary"]
    assert wire(env, {VLLM[1]: "0"})["config"] == {"wire": "int4", "wire_min_bytes": 0}
    # tpcomm's largest wire_min_bytes (src/plan/knobs.cc: 2^30)
    assert wire(env, {VLLM[1]: str(1 << 20)})["config"]["wire_min_bytes"] == 1 << 30


@pytest.mark.parametrize("bad", ["abc", "-1", "1.5", str((1 << 20) + 1)])
def test_a_bad_min_kb_is_a_warning_and_no_wire(env, caplog, bad):
    """Never less precise than asked: a threshold tpcomm cannot read leaves the wire off rather
    than quantizing from tpcomm's 1 MiB default."""
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert wire(env, {VLLM[0]: "INT8", VLLM[1]: bad}) is None
    warning = lines(caplog, logging.WARNING)
    assert len(warning) == 1 and f"QUANTIZATION_MIN_SIZE_KB={bad} is not a whole number" in \
        warning[0] and "stays off" in warning[0]


@pytest.mark.parametrize("mb, max_size", [
    (None, 2048 * MiB), ("0", 2048 * MiB),  # SGLang reads 0 as QuickReduce's default
    ("64", 64 * MiB), ("4096", 4096 * MiB),
    ("4", 8 * MiB), ("1", 8 * MiB),  # never below CustomAllreduce's default
])
def test_max_mb_is_max_size(env, caplog, mb, max_size):
    values = {VLLM[0]: "INT8"}
    if mb is not None:
        values[VLLM[2]] = mb
    with caplog.at_level(logging.INFO, logger=LOGGER):
        got = wire(env, values)
    assert got["max_size"] == max_size and caplog.records == []
    assert got["max_size"] >= engines.CUSTOM_AR_MAX_SIZE


@pytest.mark.parametrize("bad", ["lots", "-5"])
def test_a_bad_max_mb_is_a_warning_and_quickreduces_default(env, caplog, bad):
    with caplog.at_level(logging.INFO, logger=LOGGER):
        got = wire(env, {VLLM[0]: "INT8", VLLM[2]: bad})
    assert got["max_size"] == 2048 * MiB and got["config"] == {"wire": "int8"}
    warning = lines(caplog, logging.WARNING)
    assert len(warning) == 1 and f"MAX_SIZE_BYTES_MB={bad} is not a whole number" in warning[0]


def test_tpcomm_wire_wins_over_the_engine_option(env, caplog):
    with caplog.at_level(logging.INFO, logger=LOGGER):
        got = wire(env, {"TPCOMM_WIRE": "fp8", VLLM[0]: "INT4", VLLM[1]: "512",
                         VLLM[2]: "128"})
    # The library reads TPCOMM_WIRE itself: nothing in the config; the engine's max still counts.
    assert got["config"] == {} and got["max_size"] == 128 * MiB
    assert got["summary"] == "quantized wire fp8 from TPCOMM_WIRE=fp8 (all-reduces up to 128 MiB)"
    assert lines(caplog, logging.WARNING) == [
        "tpcomm plugin: TPCOMM_WIRE=fp8 sets tpcomm's quantized wire; "
        "VLLM_ROCM_QUICK_REDUCE_QUANTIZATION=INT4, "
        "VLLM_ROCM_QUICK_REDUCE_QUANTIZATION_MIN_SIZE_KB=512 ignored"]


@pytest.mark.parametrize("engine_value", [None, "NONE", "FP"])
def test_tpcomm_wire_alone_grows_max_size_and_warns_of_nothing(env, caplog, engine_value):
    values = {"TPCOMM_WIRE": "int8"}
    if engine_value is not None:
        values[VLLM[0]] = engine_value
    with caplog.at_level(logging.INFO, logger=LOGGER):
        got = wire(env, values)
    assert got["config"] == {} and got["max_size"] == 2048 * MiB
    assert caplog.records == []


@pytest.mark.parametrize("tpcomm_wire", ["none", ""])
def test_tpcomm_wire_none_or_empty_leaves_the_engine_option(env, tpcomm_wire):
    got = wire(env, {"TPCOMM_WIRE": tpcomm_wire, VLLM[0]: "INT8"})
    assert got["config"] == {"wire": "int8"}
    assert wire(env, {VLLM[0]: "NONE"}) is None


# ---- with_wire: the class the plugins install
class Recorder:
    """Stands for tpcomm.torch.CustomAllreduce (its signature), recording what it is built
    with."""

    def __init__(self, group, device, max_size=8 * MiB, config=None, **engine_kwargs):
        self.args = dict(group=group, device=device, max_size=max_size, config=config,
                         engine_kwargs=engine_kwargs)


OPTIONS = {"config": {"wire": "int8", "wire_min_bytes": 4096}, "max_size": 64 * MiB,
           "summary": "..."}


def test_with_wire_merges_the_config_under_the_engines_and_raises_max_size():
    cls = engines.with_wire(Recorder, OPTIONS)
    assert issubclass(cls, Recorder) and cls.wire_options == {
        "config": {"wire": "int8", "wire_min_bytes": 4096}, "max_size": 64 * MiB}
    # vLLM's call (cuda_communicator.py): keywords only, and some tpcomm ignores.
    ca = cls(group="g", device="cuda:1", symm_mem_enabled=False, register_graph_buffers=True)
    assert ca.args == dict(group="g", device="cuda:1", max_size=64 * MiB,
                           config={"wire": "int8", "wire_min_bytes": 4096},
                           engine_kwargs=dict(symm_mem_enabled=False,
                                              register_graph_buffers=True))
    # SGLang's (positional); an engine's own config keys win, a larger max_size stays.
    ca = cls("g", 0, 256 * MiB, {"wire_min_bytes": 1 << 20, "timeout_ms": 5})
    assert ca.args["max_size"] == 256 * MiB
    assert ca.args["config"] == {"wire": "int8", "wire_min_bytes": 1 << 20, "timeout_ms": 5}
    assert cls("g", 0, max_size=1024).args["max_size"] == 64 * MiB
    assert OPTIONS["config"] == {"wire": "int8", "wire_min_bytes": 4096}  # not written


def test_with_wire_makes_one_class_per_options():
    """A plugin installed twice (engines may load it twice) then replaces nothing again."""
    assert engines.with_wire(Recorder, OPTIONS) is engines.with_wire(Recorder, dict(OPTIONS))
    other = dict(OPTIONS, config={"wire": "int4"})
    assert engines.with_wire(Recorder, other) is not engines.with_wire(Recorder, OPTIONS)


def test_tpcomm_wire_options_leave_the_config_to_the_library(env):
    env.setenv("TPCOMM_WIRE", "int4")
    cls = engines.with_wire(Recorder, engines.engine_wire(*VLLM, logging.getLogger(LOGGER)))
    ca = cls(group="g", device=0)
    assert ca.args["config"] == {} and ca.args["max_size"] == 2048 * MiB


def test_the_v2_subclass_holds_the_wire_class():
    """SGLang's CustomAllReduceV2 path: tpcomm's subclass of it builds the wire class inside."""
    class V2:
        def __init__(self, group, device, **kwargs):
            self.v2_args = (group, device, kwargs)

    wire_class = engines.with_wire(Recorder, OPTIONS)
    cls = sglang_plugin.with_tpcomm(V2, wire_class)
    assert cls is sglang_plugin.with_tpcomm(V2, wire_class)
    obj = cls(group="g", device="cuda:0")
    assert isinstance(obj.tpcomm, wire_class) and obj.tpcomm.args["max_size"] == 64 * MiB
    assert obj.tpcomm.args["config"] == OPTIONS["config"]
    assert obj.v2_args == ("g", "cuda:0", {})


# ---- with tpcomm's real CustomAllreduce (needs torch, not a GPU)
def test_with_wire_over_tpcomms_custom_allreduce_reaches_the_communicator(monkeypatch):
    pytest.importorskip("torch")
    import inspect
    import types

    from tpcomm import torch as tt

    default = inspect.signature(tt.CustomAllreduce.__init__).parameters["max_size"].default
    assert engines.CUSTOM_AR_MAX_SIZE == default  # engines.py's copy of it

    built = []

    class Comm:
        def __init__(self, group, device, **config):
            built.append(config)

    monkeypatch.setattr(tt, "dist", types.SimpleNamespace(
        get_rank=lambda group: 0, get_world_size=lambda group: 2))
    monkeypatch.setattr(tt.Communicator, "from_process_group", Comm)
    monkeypatch.setattr(tt, "register_communicator", lambda comm: 7)
    cls = engines.with_wire(tt.CustomAllreduce, OPTIONS)
    ca = cls(group=object(), device="cuda:0", symm_mem_enabled=False)
    assert isinstance(ca, tt.CustomAllreduce) and not ca.disabled and ca.comm_id == 7
    assert built == [{"wire": "int8", "wire_min_bytes": 4096}] and ca.max_size == 64 * MiB
