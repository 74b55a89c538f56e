"""`import tpcomm` needs neither torch, nor a GPU, nor even the library: problems surface at use."""
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

# Makes `import torch` (and anything under it) fail, as on a machine without torch.
BLOCK_TORCH = textwrap.dedent("""
    import sys
    class _NoTorch:
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ImportError("torch is blocked for this test")
    sys.meta_path.insert(0, _NoTorch())
""")


def run_python(code, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", BLOCK_TORCH + textwrap.dedent(code)],
                          capture_output=True, text=True, env=env, cwd=HERE)


def test_import_without_torch_and_without_library():
    r = run_python("""
        import sys, tpcomm
        assert "torch" not in sys.modules, "import tpcomm imported torch"
        assert tpcomm._loader._lib is None, "import tpcomm loaded the library eagerly"
        for name in tpcomm.__all__:
            getattr(tpcomm, name)
        try:
            tpcomm.get_unique_id()
        except tpcomm.TpcommLibraryNotFoundError as e:
            print("RAISED", e)
        else:
            raise SystemExit("no error without a library")
    """, {"TPCOMM_LIBRARY": "/nonexistent/libtpcomm.so"})
    assert r.returncode == 0, r.stderr
    assert "RAISED" in r.stdout
    # The message names the path tried and says how to get a library.
    assert "/nonexistent/libtpcomm.so" in r.stdout
    assert "TPCOMM_LIBRARY" in r.stdout


def test_explicit_library_path_is_not_silently_replaced():
    """A wrong $TPCOMM_LIBRARY must fail, not fall back to another copy found elsewhere."""
    r = run_python("""
        import tpcomm
        try:
            tpcomm.library_path()
        except tpcomm.TpcommLibraryNotFoundError as e:
            print("RAISED", e)
    """, {"TPCOMM_LIBRARY": "/nonexistent/libtpcomm.so"})
    assert "RAISED" in r.stdout, r.stdout + r.stderr
    assert "bundled" not in r.stdout.split("Tried:")[1]


def test_tpcomm_torch_needs_torch():
    r = run_python("""
        try:
            import tpcomm.torch
        except ImportError as e:
            print("IMPORTERROR", e)
    """)
    assert "IMPORTERROR" in r.stdout, r.stdout + r.stderr


def test_engine_plugins_are_inert_by_default():
    """The vllm.general_plugins / sglang.srt.plugins entry points run in every engine process:
    off unless asked for, and importing nothing heavy then."""
    r = run_python("""
        import os, sys
        for key in ("TPCOMM_VLLM", "VLLM_PLUGINS", "TPCOMM_SGLANG", "SGLANG_PLUGINS"):
            os.environ.pop(key, None)
        import tpcomm.engines, tpcomm.sglang_plugin, tpcomm.vllm_plugin
        tpcomm.vllm_plugin.plugin()
        tpcomm.sglang_plugin.plugin()
        tpcomm.engines.vllm_plugin()  # the entry point older wheels declared
        assert "torch" not in sys.modules and "vllm" not in sys.modules
        print("OK")
    """)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr


@pytest.mark.parametrize("argv", [["version"], ["--help"]])
def test_python_m_tpcomm_runs_the_cli(argv, library_or_skip):
    r = subprocess.run([sys.executable, "-m", "tpcomm"] + argv, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "tpcomm" in r.stdout
