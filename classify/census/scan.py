"""One file's census: its struct semaphore declarations and its semaphore API
calls, as plain JSON-able data (cached per file content).
"""

from __future__ import annotations

import re

from classify.census.cscan import (FileScopes, clean_source, file_includes, in_loop,
                                   macro_spans, object_macros, scan_scopes)
from classify.census.model import Decl, OPS, Op
from classify.census.resolver import _struct_hint, last_name, strip_expr


_DECL_RX = re.compile(r"\bstruct\s+semaphore\b(?!\s*;)")


_DEFSEM_RX = re.compile(r"\bDEFINE_SEMAPHORE\s*\(\s*(\w+)\s*(?:,\s*([^()]*(?:\([^()]*\)[^()]*)*))?\)")


_INITZ_RX = re.compile(r"__SEMAPHORE_INITIALIZER\s*\(\s*([^,()]+)\s*,\s*([^()]*(?:\([^()]*\)[^()]*)*)\)")


_DECLARATOR_RX = re.compile(
    r"\s*(\*+\s*(?:const\s+|__rcu\s+)?)?(\w+)\s*((?:\[[^\]]*\]\s*)*)(\(?)"
    r"(?:=\s*(?:\{\s*)?(__SEMAPHORE_INITIALIZER\s*\(\s*[^,]*,\s*([^)]*)\)))?")


def _skip_to_comma(rest: str, i: int) -> int:
    """Offset after the "," that starts the next declarator, or -1 at ";" / ")"."""
    depth = 0
    while i < len(rest):
        c = rest[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return -1
            depth -= 1
        elif c == ";" and depth == 0:
            return -1
        elif c == "," and depth == 0:
            return i + 1
        i += 1
    return -1


def _paren_depth(clean: str, start: int, pos: int) -> int:
    seg = clean[start:pos]
    return seg.count("(") - seg.count(")")


def scan_declarations(path: str, clean: str, fs: FileScopes) -> list[Decl]:
    out: list[Decl] = []
    for m in _DECL_RX.finditer(clean):
        rest = clean[m.end():m.end() + 400]
        # declarators: "*a", "b[4]", "c = __SEMAPHORE_INITIALIZER(c, 1)", separated by ","
        pos_scope = fs.innermost(m.start())
        scope = fs.scopes[pos_scope] if pos_scope >= 0 else None
        stmt_start = max(clean.rfind(";", 0, m.start()), clean.rfind("{", 0, m.start()),
                         clean.rfind("}", 0, m.start())) + 1
        in_parens = _paren_depth(clean, stmt_start, m.start()) > 0
        prefix = clean[stmt_start:m.start()]
        off = 0
        while True:
            dm = _DECLARATOR_RX.match(rest, off)
            if not dm:
                break
            pointer = bool(dm.group(1))
            name, arr = dm.group(2), bool(dm.group(3))
            if dm.group(4) == "(" or name in ("const", "volatile"):
                break  # a function returning a semaphore pointer, or a cast
            line = fs.line_of(m.start())
            init = (dm.group(6) or "").strip()
            form = "__SEMAPHORE_INITIALIZER" if init else ""
            if in_parens:
                if pointer and "sizeof" not in prefix:
                    func = _func_after(clean, fs, m.start())
                    out.append(Decl(f"{path}:{func}().{name}", "param", path, line, name,
                                    func=func, pointer=True))
                break
            if scope is not None and scope.kind == "struct":
                out.append(Decl(f"{path}:{scope.name}.{name}", "member", path, line, name,
                                struct=scope.name, array=arr, pointer=pointer,
                                init=init, init_form=form))
            elif scope is None or (scope.kind == "other" and not fs.function_at(m.start())[0]):
                if re.search(r"\bextern\b", prefix):
                    al = re.match(r"\s*__alias\s*\(\s*(\w+)\s*\)", rest[dm.end():])
                    if al:  # extern struct semaphore a __alias(b): a is b
                        out.append(Decl(f"{path}:{name}", "alias", path, line, name,
                                        init=al.group(1)))
                    break
                kind = "static" if re.search(r"\bstatic\b", prefix) else "global"
                out.append(Decl(f"{path}:{name}", kind, path, line, name, array=arr,
                                pointer=pointer, init=init, init_form=form))
            else:
                func = fs.function_at(m.start())[0]
                kind = "static" if re.search(r"\bstatic\b", prefix) else "local"
                out.append(Decl(f"{path}:{func}().{name}", kind, path, line, name, func=func,
                                array=arr, pointer=pointer, init=init, init_form=form))
            # skip to the next declarator of the same declaration, if any
            tail = _skip_to_comma(rest, dm.end())
            if tail < 0:
                break
            off = tail
    for m in _DEFSEM_RX.finditer(clean):
        name, count = m.group(1), (m.group(2) or "").strip() or "1"
        line = fs.line_of(m.start())
        func = fs.function_at(m.start())[0]
        ident = f"{path}:{func}().{name}" if func else f"{path}:{name}"
        stmt_start = max(clean.rfind(";", 0, m.start()), clean.rfind("}", 0, m.start()),
                         clean.rfind("{", 0, m.start())) + 1
        kind = "static" if re.search(r"\bstatic\b", clean[stmt_start:m.start()]) else (
            "local" if func else "global")
        out.append(Decl(ident, kind, path, line, name, func=func, init=count,
                        init_form="DEFINE_SEMAPHORE"))
    return out


def _func_after(clean: str, fs: FileScopes, pos: int) -> str:
    """Name of the function whose parameter list contains pos (definition or prototype)."""
    stmt_start = max(clean.rfind(";", 0, pos), clean.rfind("}", 0, pos),
                     clean.rfind("{", 0, pos)) + 1
    m = None
    for m in re.finditer(r"(\w+)\s*\(", clean[stmt_start:pos]):
        pass
    return m.group(1) if m else "?"


_OP_RX = re.compile(r"(?<![\w.>])(" + "|".join(OPS) + r")\s*\(")


def arg_spans(clean: str, open_paren: int, stop: str = ""
              ) -> tuple[list[tuple[int, int]], int]:
    """The (start, end) offsets of the arguments of the call whose "(" is at
    open_paren, and the offset of its ")"; ([], -1) when it does not close (or a
    character of stop comes first, outside any inner parentheses)."""
    depth, start, spans = 0, open_paren + 1, []
    for i in range(open_paren, len(clean)):
        c = clean[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                spans.append((start, i))
                return spans, i
        elif c == "," and depth == 1:
            spans.append((start, i))
            start = i + 1
        elif c in stop and depth <= 1:
            break
    return [], -1


def split_args(clean: str, open_paren: int) -> tuple[list[str], int]:
    spans, close = arg_spans(clean, open_paren)
    if close < 0:
        return [], len(clean)
    return [re.sub(r"\s+", "", clean[a:b]) for a, b in spans], close


def split_top(text: str) -> list[str]:
    """text cut at its top-level commas (those outside () and []), as it is."""
    out, depth, cur = [], 0, []
    for ch in text:
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


_OWN_RX = re.compile(r"^[ \t]*\w[\w \t*]*?\b(" + "|".join(OPS) + r")[ \t]*\([^;{}()]*\)\s*\{",
                     re.M)


def scan_ops(path: str, clean: str, fs: FileScopes,
             with_macros: str = "", macros: list[tuple[int, int, str]] | None = None,
             ) -> list[tuple[Op, int]]:
    """Semaphore API calls; with_macros (the text cleaned with macro bodies kept)
    also finds calls inside #define bodies, attributed to "macro NAME"."""
    # a file that defines its own up()/down() does not call the semaphore API
    own = {m.group(1) for m in _OWN_RX.finditer(clean)}
    out = []
    scan = with_macros or clean
    for m in _OP_RX.finditer(scan):
        name = m.group(1)
        if name in own:
            continue
        before = scan[max(0, m.start() - 40):m.start()]
        if re.search(r"(?:\bvoid|\bint|\blong|\bstatic|\binline|\*|#\s*define)\s*$", before):
            continue  # a prototype or definition of a same-named function
        args, _ = split_args(scan, m.end() - 1)
        if not args or not args[0]:
            continue
        func, _ = fs.function_at(m.start())
        for start, end, mname in macros or ():
            if start <= m.start() < end:
                func = f"macro {mname}"
                break
        out.append((Op(path, fs.line_of(m.start()), name, args[0], func, tuple(args),
                       loop=in_loop(clean, fs, m.start())), m.start()))
    return out


def scan_file(rel: str, text: str) -> dict:
    """Everything the census needs from one file, as plain JSON-able data."""
    clean = clean_source(text)
    fs = scan_scopes(clean)
    decls = scan_declarations(rel, clean, fs)
    ops = []
    for op, pos in scan_ops(rel, clean, fs, clean_source(text, keep_macro_bodies=True),
                            macro_spans(text)):
        _, fstart = fs.function_at(pos)
        base, _, _ = last_name(strip_expr(op.expr).lstrip("&"))
        hint = _struct_hint(clean, fstart, pos, base) if re.fullmatch(r"\w+", base) else ""
        ops.append({"line": op.line, "op": op.op, "expr": op.expr, "func": op.func,
                    "args": list(op.args), "base": base, "hint": hint, "loop": op.loop})
    decl_lines = {d.line for d in decls if d.init}
    for m in re.finditer(r"\b__SEMAPHORE_INITIALIZER\s*\(", clean):
        line = fs.line_of(m.start())
        if line in decl_lines:
            continue
        args, _ = split_args(clean, m.end() - 1)
        if len(args) < 2:
            continue
        func, fstart = fs.function_at(m.start())
        expr = "&" + args[0]
        base, _, _ = last_name(strip_expr(args[0]))
        hint = _struct_hint(clean, fstart, m.start(), base) if re.fullmatch(r"\w+", base) else ""
        ops.append({"line": line, "op": "__SEMAPHORE_INITIALIZER", "expr": expr, "func": func,
                    "args": [expr, args[1]], "base": base, "hint": hint})
    macros = object_macros(text)
    counts = {o["args"][1] for o in ops
              if o["op"] in ("sema_init", "__SEMAPHORE_INITIALIZER") and len(o["args"]) > 1}
    counts |= {d.init for d in decls if d.init}
    used = {k: v for k, v in macros.items()
            if len(v) < 80 and re.fullmatch(r"[\w\s()+\-*/<>|&]+", v)}
    return {"decls": [d.__dict__ for d in decls], "ops": ops, "defines": used,
            "includes": file_includes(rel, text),
            "funcs": sorted({sc.name for sc in fs.scopes if sc.kind == "func"})}
