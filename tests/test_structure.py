"""The shape of the code: no import cycle among the project's modules or its
packages, the layers pointing one way, no function or module too long to read, and no
bare dict handed from one stage to another (CONTRIBUTING.md).

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
# classify.records, the typed records between the stages, imports nothing else.
LAYERS = ("classify.records", "classify", "classify.convert", "qemu", "qemu.bench")


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


# ---- records between the stages: no bare dict crosses a stage
#
# A package is a stage (classify, classify.census, classify.report, qemu, ...).  A
# function or class one stage takes from another must not take or return a bare `dict`
# (`dict`, `dict[str, dict]`, `list[dict]`, `dict[str, Any]`, ...: a record with no
# declared schema); a typed mapping (`dict[str, int]`, `dict[str, SemRuntime]`) is fine,
# and so are a record's own to_json()/from_json(), its serialisation.  Every use of a
# name from a module of another stage is checked: `from m import f`, `m.f`, and a
# class's fields and public methods.
SERIALISATION = {"to_json", "from_json"}

def stage(module: str, modules: dict[str, Path]) -> str:
    return module if modules[module].name == "__init__.py" else module.rpartition(".")[0]


def is_bare_dict(ann: ast.expr | None) -> bool:
    if ann is None:
        return False
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        return is_bare_dict(ast.parse(ann.value, mode="eval").body)
    if isinstance(ann, ast.Name):
        return ann.id in ("dict", "Dict")
    if isinstance(ann, ast.Subscript) and is_bare_dict(ann.value) and \
            isinstance(ann.slice, ast.Tuple) and ast.unparse(ann.slice.elts[-1]) in (
                "Any", "typing.Any", "object"):
        return True                                                     # dict[str, Any]
    if isinstance(ann, ast.Attribute):
        return ann.attr == "Dict"
    if isinstance(ann, ast.Subscript) and is_bare_dict(ann.value):      # dict[K, V]
        args = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        return any(is_bare_dict(a) for a in args)
    return any(is_bare_dict(c) for c in ast.iter_child_nodes(ann) if isinstance(c, ast.expr))


def _signature_is_bare(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    a = fn.args
    args = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]
    return any(is_bare_dict(x.annotation) for x in args) or is_bare_dict(fn.returns)


def bare_parts(node: ast.AST) -> list[str]:
    """The names of a definition that take or return a bare dict: a function, or a
    class's annotated fields and public methods."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node.name] if _signature_is_bare(node) else []
    if not isinstance(node, ast.ClassDef):
        return []
    out = []
    for item in getattr(node, "body", []):
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and \
                "ClassVar" not in ast.unparse(item.annotation) and is_bare_dict(item.annotation):
            out.append(f"{node.name}.{item.target.id}")
        elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                (not item.name.startswith("_") or item.name == "__init__") and \
                item.name not in SERIALISATION and _signature_is_bare(item):
            out.append(f"{node.name}.{item.name}")
    return out


def _bindings(name: str, path: Path, tree: ast.Module,
              modules: dict[str, Path]) -> dict[str, tuple[str, str]]:
    """Each name an import binds: alias -> (module, "") for a module, (module, symbol)."""
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name in modules:
                    out[a.asname] = (a.name, "")
                elif not a.asname and a.name.split(".")[0] in modules:
                    out[a.name.split(".")[0]] = (a.name.split(".")[0], "")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in modules:
                    out[a.asname or a.name] = (full, "")
                elif base in modules:
                    out[a.asname or a.name] = (base, a.name)
    return out


def _uses(tree: ast.Module, bindings: dict[str, tuple[str, str]],
          modules: dict[str, Path]) -> set[tuple[str, str]]:
    """(module, symbol) of every project name the module uses."""
    out = {b for b in bindings.values() if b[1]}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain = [node.attr]
        base = node.value
        while isinstance(base, ast.Attribute):
            chain.insert(0, base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in bindings or bindings[base.id][1]:
            continue
        mod = bindings[base.id][0]
        while chain and f"{mod}.{chain[0]}" in modules:
            mod = f"{mod}.{chain.pop(0)}"
        if chain:
            out.add((mod, chain[0]))
    return out


def bare_dict_seams(root: Path = REPO) -> list[str]:
    """"module.function" (or "module.Class.member") for each definition another stage
    uses that takes or returns a bare dict."""
    modules = project_modules(root)
    trees = {m: ast.parse(p.read_text()) for m, p in modules.items()}
    binds = {m: _bindings(m, modules[m], trees[m], modules) for m in modules}
    defs = {m: {n.name: n for n in t.body if isinstance(
        n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))} for m, t in trees.items()}

    def resolve(mod: str, sym: str, depth: int = 0) -> tuple[str, ast.AST] | None:
        if sym in defs.get(mod, {}):
            return mod, defs[mod][sym]
        if depth < 5 and sym in binds.get(mod, {}) and binds[mod][sym][1]:
            return resolve(*binds[mod][sym], depth + 1)
        return None

    found: set[str] = set()
    for user, tree in trees.items():
        for mod, sym in _uses(tree, binds[user], modules):
            hit = resolve(mod, sym)
            if hit and stage(hit[0], modules) != stage(user, modules):
                found |= {f"{hit[0]}.{part}" for part in bare_parts(hit[1])}
    return sorted(found)


# Bare dicts still handed across a stage (tests/bare_dicts_pending.txt, now empty).  The
# list only shrinks: a new seam that hands a bare dict fails the test below, and so does
# an entry that no longer does.
PENDING_BARE_DICTS = frozenset(
    ln.split("#")[0].strip() for ln in (REPO / "tests" / "bare_dicts_pending.txt").read_text(
    ).splitlines()) - {""}


def test_no_bare_dict_crosses_a_stage():
    assert sorted(set(bare_dict_seams()) - PENDING_BARE_DICTS) == []


def test_the_bare_dicts_still_pending_are_still_there():
    assert sorted(PENDING_BARE_DICTS - set(bare_dict_seams())) == []


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


def test_bare_dict_detector(tmp_path):
    root = _tree(tmp_path, {
        "classify/__init__.py": "", "qemu/__init__.py": "", "classify/sub/__init__.py": "",
        "classify/a.py": ("def takes(x: dict) -> int: ...\n"
                          "def gives() -> list[dict[str, dict]]: ...\n"
                          "def typed(x: dict[str, int]) -> 'Rec': ...\n"
                          "def unused(x: dict) -> None: ...\n"
                          "def inside(x: dict) -> None: ...\n"
                          "class Rec:\n    n: int\n    raw: 'dict | None'\n"
                          "    def to_json(self) -> dict: ...\n"
                          "    def items(self) -> dict[str, Any]: ...\n"
                          "    def _own(self) -> dict: ...\n"),
        "classify/b.py": "from classify.a import inside\n",        # the same stage
        "classify/sub/c.py": "from classify import a\nfrom classify.a import Rec\n"
                             "a.takes(a.gives(), a.typed())\n",
        "qemu/d.py": "import classify.a as m\nm.typed({})\n"})
    assert bare_dict_seams(root) == ["classify.a.Rec.items", "classify.a.Rec.raw",
                                     "classify.a.gives", "classify.a.takes"]
    assert is_bare_dict(ast.parse("dict[str, list[dict]] | None", mode="eval").body)
    assert not is_bare_dict(ast.parse("dict[tuple[str, int], str]", mode="eval").body)
