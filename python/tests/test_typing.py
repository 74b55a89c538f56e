"""The public Python API carries type hints, and the package says so (PEP 561's py.typed marker,
shipped in the wheel: test_packaging.py). Read from the sources with ast, so tpcomm.torch is
checked without torch."""
import ast
import os

import pytest

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tpcomm")
PUBLIC_MODULES = ["__init__.py", "communicator.py", "cli.py", "engines.py", "errors.py",
                  "torch.py", "vllm_plugin.py", "sglang_plugin.py"]


def _public_functions(tree):
    """(qualified name, node) of module-level functions and methods of public classes whose
    names do not start with '_' (and __init__, which takes the constructor's arguments)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            yield node.name, node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and (
                        not item.name.startswith("_") or item.name == "__init__"):
                    yield f"{node.name}.{item.name}", item


def _missing_hints(node):
    args = node.args
    params = args.posonlyargs + args.args + args.kwonlyargs
    if params and params[0].arg in ("self", "cls"):
        params = params[1:]
    missing = [a.arg for a in params if a.annotation is None]
    missing += [f"*{a.arg}" for a in (args.vararg, args.kwarg) if a and a.annotation is None]
    if node.returns is None:
        missing.append("return")
    return missing


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_public_function_is_annotated(module):
    with open(os.path.join(PKG, module)) as f:
        tree = ast.parse(f.read())
    unannotated = {name: missing for name, node in _public_functions(tree)
                   if (missing := _missing_hints(node))}
    assert not unannotated, f"{module}: {unannotated}"


def test_the_package_is_marked_typed():
    assert os.path.isfile(os.path.join(PKG, "py.typed"))


def test_the_hints_agree_with_the_code():
    """mypy over the package (scripts/test.sh installs it; skipped where it is missing)."""
    pytest.importorskip("mypy")
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-incremental", PKG],
        capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
