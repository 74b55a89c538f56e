"""What the vLLM and SGLang plugins share: the switch, strict mode, patches that can be undone,
and tpcomm's log lines routed into the engine's logger.

The plugins themselves are tpcomm.vllm_plugin and tpcomm.sglang_plugin, reached through the
engines' entry-point groups (`vllm.general_plugins`, `sglang.srt.plugins`, pyproject.toml), which
each engine loads in every process it starts. Installing tpcomm changes nothing: a plugin acts
only when enabled (enabled() below); docs/PYTHON.md says what each one replaces.
"""
import logging
import os
from typing import Any, List, Optional, Set, Tuple

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

