"""What the vLLM and SGLang plugins share: the switch, strict mode, patches that can be undone,
and tpcomm's log lines routed into the engine's logger.

The plugins themselves are tpcomm.vllm_plugin and tpcomm.sglang_plugin, reached through the
engines' entry-point groups (`vllm.general_plugins`, `sglang.srt.plugins`, pyproject.toml), which
each engine loads in every process it starts. Installing tpcomm changes nothing: a plugin acts
only when enabled (enabled() below); docs/PYTHON.md says what each one replaces.
"""
import logging
import os
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from .errors import TpcommFallbackRefusedError

logger = logging.getLogger("tpcomm")

# The entry points' names (pyproject.toml): what VLLM_PLUGINS / SGLANG_PLUGINS list to pick us.
PLUGIN_NAME = "tpcomm"


def enabled(switch: str, plugin_list: str) -> bool:
    """On when `switch` (TPCOMM_VLLM / TPCOMM_SGLANG) is 1, or when the engine's own plugin list
    (VLLM_PLUGINS / SGLANG_PLUGINS, comma-separated) names tpcomm; `switch`=0 always wins."""
    value = os.environ.get(switch)
    if value is not None and value.strip() != "":
        return value.strip() == "1"
    names = {n.strip() for n in os.environ.get(plugin_list, "").split(",")}
    return PLUGIN_NAME in names


def strict() -> bool:
    """TPCOMM_STRICT=1: a call the plugin should serve but cannot is an error, not a fallback
    (the library reads the same variable for its own NCCL fallbacks)."""
    return os.environ.get("TPCOMM_STRICT", "0").strip() == "1"


class Bypasses:
    """Says once per reason that tpcomm let the engine's own path serve something; raises
    TpcommFallbackRefusedError instead under TPCOMM_STRICT=1."""

    def __init__(self, engine_logger: logging.Logger) -> None:
        self.logger = engine_logger
        self.seen: Set[Tuple[str, str]] = set()

    def __call__(self, what: str, why: str) -> None:
        if strict():
            raise TpcommFallbackRefusedError(
                f"tpcomm plugin: {what} was not served by tpcomm ({why}) and TPCOMM_STRICT=1")
        if (what, why) not in self.seen:
            self.seen.add((what, why))
            self.logger.info("tpcomm plugin: %s is left to the engine (%s; logged once)", what,
                             why)


class Patches:
    """Attribute replacements on the engine's modules and classes, recorded so that tests (and
    uninstall()) can put the originals back. Replacing twice is a no-op: engines may load a
    plugin more than once per process."""

    def __init__(self) -> None:
        self.done: List[Tuple[Any, str, Any]] = []

    def replace(self, owner: Any, name: str, new: Any) -> Any:
        old = getattr(owner, name, None)
        if getattr(old, "_tpcomm_original", None) is not None or old is new:
            return old
        if callable(new) and not isinstance(new, type):
            try:
                new._tpcomm_original = old
            except AttributeError:
                pass
        setattr(owner, name, new)
        self.done.append((owner, name, old))
        return old

    def undo(self) -> None:
        for owner, name, old in reversed(self.done):
            if old is None:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self.done.clear()


class _Forward(logging.Handler):
    """Hands tpcomm's records to the engine's logger, whose handlers and format the engine set
    up (a `tpcomm` logger of its own is configured by nobody inside an engine)."""

    def __init__(self, target: logging.Logger) -> None:
        super().__init__()
        self.target = target

    def emit(self, record: logging.LogRecord) -> None:
        if self.target.isEnabledFor(record.levelno):
            self.target.handle(record)


def forward_logs(engine_logger: logging.Logger) -> None:
    """Routes the `tpcomm` logger (CustomAllreduce's lines) into `engine_logger`."""
    if any(isinstance(h, _Forward) for h in logger.handlers):
        return
    logger.addHandler(_Forward(engine_logger))
    logger.setLevel(engine_logger.getEffectiveLevel())
    logger.propagate = False


def stop_forwarding() -> None:
    """Undoes forward_logs (the plugins' uninstall)."""
    for h in [h for h in logger.handlers if isinstance(h, _Forward)]:
        logger.removeHandler(h)
    logger.propagate = True
    logger.setLevel(logging.NOTSET)


def start(engine_logger: logging.Logger) -> Bypasses:
    """What a plugin's install() does first: tpcomm's log lines into `engine_logger`, and the
    reporter of what is left to the engine."""
    forward_logs(engine_logger)
    return Bypasses(engine_logger)


def uninstall(patches: Patches) -> None:
    """A plugin's uninstall(): the engine's code back as it was, tpcomm's log lines no longer
    routed into the engine's logger."""
    patches.undo()
    stop_forwarding()


def summary(engine: str, version: str, replaced: List[str], left: List[str]) -> str:
    """The one line per process a plugin logs."""
    return (f"tpcomm {engine} plugin (pid {os.getpid()}, {engine} {version}): replaced "
            f"{'; '.join(replaced) or 'nothing'}. Left to {engine}: {'; '.join(left) or 'nothing'}")


# ---- the engines' quantized all-reduce option, passed through to tpcomm's quantized wire
MiB = 1024 * 1024
# tpcomm.torch.CustomAllreduce's default max_size (a test checks they agree; this module does not
# import torch).
CUSTOM_AR_MAX_SIZE = 8 * MiB
# QuickReduce's largest message when the engine's max-size variable is unset (vLLM's
# ops.qr_max_size(), SGLang's "2GB is used by default").
QUICK_REDUCE_MAX_SIZE = 2048 * MiB
# The largest wire_min_bytes the library's knob takes (src/plan/knobs.cc).
WIRE_MIN_BYTES_LIMIT = 1 << 30
# The values of QuickReduce's quantization variable (vLLM's; SGLang's lack INT3) -> tpcomm's
# codec, None where no wire is asked. tpcomm has no 6- or 3-bit codec: the next wider one, never
# less precise than asked.
QUICK_REDUCE_CODECS: Dict[str, Optional[str]] = {
    "FP": None, "INT8": "int8", "INT6": "int8", "INT4": "int4", "INT3": "int4", "NONE": None}
QUICK_REDUCE_VALUES = tuple(QUICK_REDUCE_CODECS)
_WIDER = {"INT6": "6", "INT3": "3"}


def engine_wire(quant_env: str, min_kb_env: Optional[str], max_mb_env: Optional[str],
                log: logging.Logger,
                known: Sequence[str] = QUICK_REDUCE_VALUES) -> Optional[Dict[str, Any]]:
    """The engine's own quantized all-reduce option (AMD's QuickReduce: `quant_env` one of
    `known`, `min_kb_env` the size in KB below which tensors stay full precision, `max_mb_env`
    the largest message in MB; None where the engine has no such variable) as tpcomm options:
    {"config": CustomAllreduce's config, "max_size": bytes, "summary": what the plugin's line
    says}, or None where no wire is asked.

    Opt-in only, off by default: the variable unset, NONE or FP (QuickReduce at full precision)
    gives None and the plugin installs tpcomm's class unchanged. INT8 and INT4 are tpcomm's int8
    and int4 codecs; INT6 and INT3 the next wider (int8, int4: tpcomm has no 6- or 3-bit codec,
    and the wire is never less precise than asked), said in one INFO line. A value outside
    `known` (the engine rejects it too) is a WARNING naming the known ones, and no wire.

    max_size grows to the engine's max MB (QuickReduce's 2 GiB where unset), never below
    CustomAllreduce's 8 MiB: the wire is for the large (prefill) all-reduces, which should_custom_ar
    would otherwise decline above 8 MiB and the engine would send to NCCL at full precision.

    TPCOMM_WIRE, tpcomm's own knob, wins: set (and not "none"), the library reads it at init, so
    the config stays empty (only max_size grows), and an engine option also set is logged as
    ignored (WARNING)."""
    quant = os.environ.get(quant_env)
    min_kb = os.environ.get(min_kb_env) if min_kb_env else None
    tpcomm_wire = os.environ.get("TPCOMM_WIRE", "").strip()
    if tpcomm_wire and tpcomm_wire != "none":
        asked = [] if quant in (None, "", "NONE", "FP") else [(quant_env, quant)]
        ignored = [f"{name}={value}" for name, value in asked + [(min_kb_env, min_kb)]
                   if name and value]
        if ignored:
            log.warning("tpcomm plugin: TPCOMM_WIRE=%s sets tpcomm's quantized wire; %s ignored",
                        tpcomm_wire, ", ".join(ignored))
        max_size = _max_size(max_mb_env, log)
        return {"config": {}, "max_size": max_size,
                "summary": f"quantized wire {tpcomm_wire} from TPCOMM_WIRE={tpcomm_wire} "
                           f"(all-reduces up to {_size(max_size)})"}
    if quant is None or quant == "":
        return None
    if quant not in known:
        log.warning("tpcomm plugin: %s=%s is not a QuickReduce quantization (known: %s): "
                    "tpcomm's quantized wire stays off", quant_env, quant, ", ".join(known))
        return None
    codec = QUICK_REDUCE_CODECS.get(quant)
    if codec is None:
        return None
    what = f"quantized wire {codec} from {quant_env}={quant}"
    if quant in _WIDER:
        log.info("tpcomm plugin: %s=%s: tpcomm has no %s-bit codec, its wider %s serves the "
                 "all-reduces (never less precise than asked)", quant_env, quant, _WIDER[quant],
                 codec)
    config: Dict[str, Any] = {"wire": codec}
    details = []
    if min_kb is not None and min_kb != "":
        kb = _whole(min_kb)
        if kb is None or kb * 1024 > WIRE_MIN_BYTES_LIMIT:
            log.warning("tpcomm plugin: %s=%s is not a whole number of KB from 0 to %d: "
                        "tpcomm's quantized wire stays off", min_kb_env, min_kb,
                        WIRE_MIN_BYTES_LIMIT // 1024)
            return None
        config["wire_min_bytes"] = kb * 1024
        details.append(f"from {kb} KB, {min_kb_env}={min_kb}")
    max_size = _max_size(max_mb_env, log)
    details.append(f"all-reduces up to {_size(max_size)}")
    return {"config": config, "max_size": max_size, "summary": f"{what} ({'; '.join(details)})"}


def _whole(text: str) -> Optional[int]:
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value >= 0 else None


def _max_size(max_mb_env: Optional[str], log: logging.Logger) -> int:
    """The engine's max MB in bytes (0 or unset: QuickReduce's 2 GiB, as SGLang reads it),
    never below CustomAllreduce's default."""
    text = os.environ.get(max_mb_env, "") if max_mb_env else ""
    mb = _whole(text) if text != "" else 0
    if mb is None:
        log.warning("tpcomm plugin: %s=%s is not a whole number of MB: all-reduces up to %s go "
                    "to tpcomm", max_mb_env, text, _size(QUICK_REDUCE_MAX_SIZE))
        mb = 0
    return max(mb * MiB if mb else QUICK_REDUCE_MAX_SIZE, CUSTOM_AR_MAX_SIZE)


def _size(nbytes: int) -> str:
    return f"{nbytes // MiB} MiB" if nbytes % MiB == 0 else f"{nbytes} bytes"


_wire_classes: Dict[Tuple[Any, ...], type] = {}


def with_wire(base: type, options: Dict[str, Any]) -> type:
    """`base` (tpcomm.torch.CustomAllreduce) built with engine_wire's options: its config under
    the config the engine passes (the engine's keys win), max_size at least the options' (the
    engine's, if larger). One class per (base, options), so a plugin installed twice replaces
    nothing the second time."""
    wire_config = dict(options["config"])
    wire_max = int(options["max_size"])
    key = (base, tuple(sorted(wire_config.items())), wire_max)
    if key in _wire_classes:
        return _wire_classes[key]

    class TpcommWireCustomAllreduce(base):  # type: ignore[misc, valid-type]
        """tpcomm's CustomAllreduce with the quantized wire the engine's option asked for."""

        wire_options = {"config": dict(wire_config), "max_size": wire_max}

        def __init__(self, group: Any, device: Any, max_size: int = CUSTOM_AR_MAX_SIZE,
                     config: Optional[Dict[str, Any]] = None, **engine_kwargs: Any) -> None:
            super().__init__(group, device, max_size=max(int(max_size), wire_max),
                             config={**wire_config, **(config or {})}, **engine_kwargs)

    TpcommWireCustomAllreduce.__qualname__ = TpcommWireCustomAllreduce.__name__
    _wire_classes[key] = TpcommWireCustomAllreduce
    return TpcommWireCustomAllreduce


def version(distribution: str) -> str:
    """The installed engine's version, as its wheel says."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def import_or_none(module: str) -> Optional[Any]:
    """The engine's module, or None where it cannot be imported (an engine module can fail
    with more than ImportError: vLLM's fusion passes read its CUDA extension's ops at import)."""
    import importlib

    try:
        return importlib.import_module(module)
    except Exception:
        return None


def patch_vllm() -> None:
    """Installs the vLLM plugin now, whatever TPCOMM_VLLM says."""
    from . import vllm_plugin

    vllm_plugin.install()


def patch_sglang() -> None:
    """Installs the SGLang plugin now, whatever TPCOMM_SGLANG says."""
    from . import sglang_plugin

    sglang_plugin.install()


def vllm_plugin() -> None:
    """Kept for the entry point older tpcomm wheels declared."""
    from . import vllm_plugin as plugin

    plugin.plugin()

