"""Initial counts: the value of `sema_init(&x, MAX_CMDS)`'s count, with the
object-like macros of the file, of the other census files, and of the headers the
file includes.  Evaluated, never executed: an expression of integers and macros.
"""

from __future__ import annotations

import ast
import operator
import re

from classify.census.cscan import file_includes, object_macros, read_text
from classify.census.model import Census


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift,
           ast.BitOr: operator.or_, ast.BitAnd: operator.and_}


def eval_count(expr: str, macros: dict[str, str], depth: int = 0) -> int | None:
    """The integer value of a count expression, expanding object-like macros."""
    e = re.sub(r"\s+", " ", expr.strip())
    e = re.sub(r"(?<=\d)[uUlL]+\b", "", e)
    if depth > 8:
        return None

    def sub(m: re.Match) -> str:
        name = m.group(0)
        if name in macros:
            v = eval_count(macros[name], macros, depth + 1)
            if v is not None:
                return str(v)
        return name
    e = re.sub(r"\b[A-Za-z_]\w*\b", sub, e)
    e = re.sub(r"^\((?:unsigned\s+)?(?:int|long)\)", "", e)
    if not re.fullmatch(r"[\d\s()+\-*/<>|&x]+", e):
        return None
    try:
        tree = ast.parse(e.replace("/", "//"), mode="eval")
    except SyntaxError:
        try:
            return int(e, 0)
        except ValueError:
            return None
    return _eval(tree.body)


def _eval(node) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _eval(node.operand)
        return -v if v is not None else None
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _eval(node.left), _eval(node.right)
        if a is None or b is None:
            return None
        try:
            return _BINOPS[type(node.op)](a, b)
        except (ZeroDivisionError, ValueError):
            return None
    return None



def _tree_macros(c: Census) -> dict[str, str]:
    """The object-like macros of every census file that no two files define
    differently (computed once per census)."""
    if c.memo.tree_macros is None:
        merged: dict[str, str] = {}
        conflicts: set[str] = set()
        for p, defs in c.defines.items():
            for k, v in defs.items():
                if k in merged and merged[k] != v:
                    conflicts.add(k)
                merged.setdefault(k, v)
        for k in conflicts:
            merged.pop(k, None)
        c.memo.tree_macros = merged
    return c.memo.tree_macros


def _macros_for(c: Census, path: str) -> dict[str, str]:
    return {**_tree_macros(c), **c.defines.get(path, {})}


def _exists(c: Census, rel: str) -> bool:
    memo = c.memo.exists
    if rel not in memo:
        memo[rel] = (c.root / rel).is_file()
    return memo[rel]


def _read_header(c: Census, rel: str) -> tuple[set[str], dict[str, str]] | None:
    """A header's includes and object-like macros, read once per census."""
    memo = c.memo.headers
    if rel not in memo:
        try:
            text = read_text(c.root, rel)
        except OSError:
            memo[rel] = None
        else:
            memo[rel] = (set(file_includes(rel, text)), object_macros(text))
    return memo[rel]


def _header_macros(c: Census, path: str, depth: int = 3) -> dict[str, str]:
    """Object-like macros of the headers path includes (depth levels), for counts
    such as sema_init(&x, MAX_CMDS) whose macro lives in a header."""
    out: dict[str, str] = {}
    seen: set[str] = set()
    level = [path]
    for _ in range(depth):
        nxt = []
        for rel in level:
            if rel in seen:
                continue
            seen.add(rel)
            incs = c.includes.get(rel)
            if incs is None:
                header = _read_header(c, rel)
                if header is None:
                    continue
                incs = header[0]
                if rel != path:
                    for k, v in header[1].items():
                        out.setdefault(k, v)
            elif rel != path:
                for k, v in c.defines.get(rel, {}).items():
                    out.setdefault(k, v)
            for inc in sorted(incs):
                if inc.endswith(".h") and not inc.startswith("asm:") and _exists(c, inc):
                    nxt.append(inc)
        level = nxt
    return out


def count_value(c: Census, count: str, path: str) -> int | None:
    """The value of a semaphore's initial count as written at path (a number, a
    macro of the file, of the tree, or of the headers the file includes); None
    when it cannot be resolved."""
    value = eval_count(count, _macros_for(c, path))
    if value is None and re.search(r"[A-Za-z_]", count) and c.root.is_dir():
        value = eval_count(count, {**_header_macros(c, path), **c.defines.get(path, {})})
    return value
