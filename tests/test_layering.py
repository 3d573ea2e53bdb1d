"""Imports run one way, and the trace-mode core never imports the live harness, vLLM or torch.

Layers (a module may import its own layer's shared modules and any lower layer):

    errors, limits, paths    the base (limits and paths may use errors; the package's own
                             ``STOP_SIGNALS`` and ``__version__`` too)
    core, inputs             trace core; declarative inputs (inputs may use core.basis, the
                             basis of a figure: pure definitions that import nothing of ours)
    params                   the params schema of flags and notebook parameters (may use
                             the base and, to look catalog ids up, inputs)
    physics                  modelled numbers (may use core, inputs)
    results, cluster         one module per result; recipes (may use the above)
    book                     runner, pages, plotting (may use the above)
    cli                      dispatches to everything, lazily
    live                     the harness: core, the base and inputs.scenarios (the plans:
                             pure standard library, no vLLM); imported by the CLI only

A result module may import only the shared result modules (``headline``, ``verdicts``,
``certainty``), never another result; only ``results.registry`` (``rackbook.results.REGISTRY``)
imports all six. Nothing imports another module's private (``_``-prefixed) name.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from rackbook import paths

PKG = paths.ROOT / "src" / "rackbook"
LAYER = {
    "errors": 0,
    "limits": 0.5,
    "__init__": 0,
    "__version__": 0,
    "STOP_SIGNALS": 0,
    "paths": 0.5,
    "core": 1,
    "inputs": 1,
    "params": 1.5,
    "physics": 2,
    "results": 3,
    "cluster": 3,
    "book": 4,
    "cli": 5,
}
SHARED_RESULTS = {
    "chapter_common",
    "headline",
    "verdicts",
    "evidence",
    "published_rows",
    "conclusions",
    "__init__",
}


def _module_name(p: Path) -> str:
    parts = p.relative_to(PKG).with_suffix("").parts
    return ".".join(parts).removesuffix(".__init__") or "__init__"


MODULES = {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}
CORE = sorted(m for m in MODULES if m.split(".")[0] != "live")


def _top(name: str) -> str:
    return name.split(".")[0]


def _imports(path: Path) -> list[tuple[str, list[str], int]]:
    """(imported rackbook module, names imported from it, line) for every import in a file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "rackbook":
                for a in node.names:  # `from rackbook import core` imports a subpackage
                    out.append((f"rackbook.{a.name}", [], node.lineno))
            elif node.module.startswith("rackbook."):
                names = [a.name for a in node.names]
                out.append((node.module, names, node.lineno))
        elif isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names if a.name.startswith("rackbook.")]
    return out


def _private_attributes(path: Path) -> list[tuple[str, int]]:
    """``module._name`` uses where ``module`` was imported from rackbook."""
    tree = ast.parse(path.read_text(), str(path))
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rackbook"):
            full = [f"{node.module}.{a.name}" for a in node.names]
            for a, f in zip(node.names, full, strict=True):
                if f.removeprefix("rackbook.") in MODULES or node.module == "rackbook":
                    bound.add(a.asname or a.name)
    return [
        (f"{n.value.id}.{n.attr}", n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id in bound
        and n.attr.startswith("_")
        and not n.attr.startswith("__")
    ]


def _violations() -> list[str]:
    bad = []
    for name, path in MODULES.items():
        me = _top(name)
        for module, names, line in _imports(path):
            target = module.removeprefix("rackbook.")
            top = _top(target)
            where = f"{path.name}:{line}"
            if me == "live":
                if top not in ("core", "errors", "paths", "live") and target != "inputs.scenarios":
                    bad.append(f"{where}: the live harness imports {module}")
            elif top == "live":
                if me != "cli":
                    bad.append(f"{where}: {name} imports the live harness ({module})")
            elif me == "inputs" and (
                target == "core.basis" or (target, names) == ("core", ["basis"])
            ):
                pass  # the basis of a figure is defined once, in the core
            elif LAYER.get(top, 99) > LAYER[me] or (
                LAYER.get(top) == LAYER[me] and top != me and me not in ("cli",)
            ):
                bad.append(f"{where}: {name} (layer {LAYER[me]}) imports {module} (back-import)")
            # the registry names the six results (rackbook.results.REGISTRY)
            registry = "results.registry" in (name, target)
            # a result that is a package (results/rack_scaling/) imports its own modules
            same = target.split(".")[:2] == name.split(".")[:2]
            if me == "results" and top == "results" and not same and not registry:
                other = target.split(".")[1] if "." in target else "__init__"
                if other not in SHARED_RESULTS:
                    bad.append(f"{where}: result module {name} imports another result ({module})")
            bad += [
                f"{where}: imports the private name {module}.{n}" for n in names if n[:1] == "_"
            ]
        bad += [
            f"{path.name}:{line}: uses the private name {a}"
            for a, line in _private_attributes(path)
        ]
    return bad


def test_imports_run_one_way_and_no_private_names():
    assert _violations() == []
    # core.basis stays pure definitions, so that inputs may use it
    assert [m for m, _, _ in _imports(MODULES["core.basis"])] == []


def test_the_check_fails_on_a_back_import(tmp_path, monkeypatch):
    fake = tmp_path / "core" / "fake.py"
    fake.parent.mkdir()
    fake.write_text(
        "from rackbook.results import headline\nfrom rackbook.inputs.loader import _x\n"
        "from rackbook.physics import eplb\neplb._check_layout(1, 1, 0)\n"
    )
    monkeypatch.setitem(MODULES, "core.fake", fake)
    monkeypatch.setattr(sys.modules[__name__], "PKG", tmp_path)
    found = _violations()
    assert any("back-import" in v for v in found)
    assert any("imports the private name" in v for v in found)
    assert any("uses the private name eplb._check_layout" in v for v in found)


@pytest.mark.parametrize("package", ["core", "inputs", "physics", "results", "book", "cluster"])
def test_every_package_exists(package):
    assert (PKG / package / "__init__.py").is_file()


def test_core_modules_import_no_live_code():
    code = (
        "import importlib, sys\n"
        f"for m in {CORE!r}: importlib.import_module('rackbook' + ('' if m == '__init__' "
        "else '.' + m))\n"
        "print(sorted(m for m in sys.modules if m.startswith(('rackbook.live', 'vllm', 'torch'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert "core.traces" in CORE and "cli" in CORE and len(CORE) > 20
