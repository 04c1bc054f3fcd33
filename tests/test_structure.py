"""The shape of the code: no import cycle among the project's modules or its
packages, and no function or module too long to read (CONTRIBUTING.md).

The import graph is read from the source (every import statement, those inside
functions too), so a cycle hidden behind a lazy import is a cycle all the same.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("classify", "qemu")
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 500
# Entry points: they dispatch to every stage, and nothing imports them.
ENTRY_POINTS = {"classify.cli", "classify.__main__", "qemu.cli", "qemu.__main__",
                "qemu.bench.__main__"}
# The layers, from the bottom: a layer may import those before it, never after.
LAYERS = ("classify", "classify.convert", "qemu", "qemu.bench")


def module_name(path: Path, root: Path = REPO) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules(root: Path = REPO) -> dict[str, Path]:
    return {module_name(p, root): p for pkg in PACKAGES for p in sorted((root / pkg).rglob("*.py"))}


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `name` imports: `from a.b import c` names a.b.c when that is
    a module, else a.b; relative imports are resolved against the package."""
    is_pkg = path.name == "__init__.py"
    here = name if is_pkg else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        else:
            continue
        out |= {t for t in targets if t in modules and t != name}
    return out


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    modules = project_modules(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node, or with a self edge
    (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> str:
    return max((lay for lay in LAYERS if module == lay or module.startswith(lay + ".")),
               key=len)


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for mod, deps in sorted(graph.items()):
        for dep in sorted(deps):
            if dep in ENTRY_POINTS and mod not in ENTRY_POINTS:
                bad.append(f"{mod} imports the entry point {dep}")
            elif mod not in ENTRY_POINTS and \
                    LAYERS.index(layer(dep)) > LAYERS.index(layer(mod)):
                bad.append(f"{mod} ({layer(mod)}) imports {dep} ({layer(dep)})")
    return bad


def long_definitions(root: Path = REPO) -> list[str]:
    """Functions over MAX_FUNCTION_LINES and modules over MAX_MODULE_LINES, unless the
    line before the definition (or the module's first line) says why, with
    `# long: <reason>`."""
    out = []
    for name, path in project_modules(root).items():
        lines = path.read_text().splitlines()
        if len(lines) > MAX_MODULE_LINES and not lines[0].startswith("# long:"):
            out.append(f"{name}: {len(lines)} lines")
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if n > MAX_FUNCTION_LINES and \
                        not lines[first - 2].strip().startswith("# long:"):
                    out.append(f"{name}:{node.lineno} {node.name}(): {n} lines")
    return out


def test_no_import_cycle_among_modules():
    assert cycles(import_graph()) == []


def test_layers_point_one_way():
    assert layer_violations(import_graph()) == []


def test_no_function_or_module_too_long():
    assert long_definitions() == []


# ---- the detectors themselves, on a synthetic tree: a case each must catch, one not

def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


@pytest.mark.parametrize("a_text,expected", [
    ("def f():\n    from classify import b\n", [["classify.a", "classify.b"]]),  # lazy
    ("from . import b\n", [["classify.a", "classify.b"]]),                       # relative
    ("import os\n", []),                                                          # none
])
def test_cycle_detector(tmp_path, a_text, expected):
    root = _tree(tmp_path, {"classify/__init__.py": "", "classify/a.py": a_text,
                            "classify/b.py": "from classify.a import x\n",
                            "qemu/__init__.py": ""})
    assert cycles(import_graph(root)) == expected


def test_layer_detector_catches_analysis_importing_the_boot_side():
    graph = {"classify.audit": {"qemu.parse"}, "qemu.parse": set(),
             "qemu.runtime": {"classify.audit"}, "classify.cli": {"qemu.bench.parts"},
             "qemu.bench.parts": set()}
    assert layer_violations(graph) == ["classify.audit (classify) imports qemu.parse (qemu)"]


def test_length_detector(tmp_path):
    body = "".join(f"    x = {i}\n" for i in range(MAX_FUNCTION_LINES))
    root = _tree(tmp_path, {"classify/__init__.py": "", "qemu/__init__.py": "",
                            "classify/long.py": "def f():\n" + body,
                            "classify/why.py": "# long: a table\ndef g():\n" + body,
                            "classify/short.py": "def h():\n    return 1\n"})
    assert long_definitions(root) == [f"classify.long:1 f(): {MAX_FUNCTION_LINES + 1} lines"]
