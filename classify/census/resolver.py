"""The resolver: which semaphore the argument of a call (`&p->sem`, `sem`,
`c ? &a : &b`) names, from the declarations the census found, the struct of a
local pointer and the headers a file includes.
"""

from __future__ import annotations

import functools
import os
import re

from classify.census.cscan import clean_source
from classify.census.macros import declared_struct
from classify.census.model import Census, Decl


def strip_expr(e: str) -> str:
    e = re.sub(r"\s+", "", e)
    changed = True
    while changed:
        changed = False
        if e.startswith("(") and _balanced_outer(e):
            e, changed = e[1:-1], True
        cm = re.match(r"\((?:struct)?semaphore\*\)|\(structsemaphore\*\)", e)
        if cm:
            e, changed = e[cm.end():], True
    return e


def _split_ternary(e: str) -> list[str]:
    depth, q = 0, -1
    for i, c in enumerate(e):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "?" and depth == 0 and q < 0:
            q = i
        elif c == ":" and depth == 0 and q >= 0:
            return [e[q + 1:i], e[i + 1:]]
    return []


def _balanced_outer(e: str) -> bool:
    depth = 0
    for i, c in enumerate(e):
        depth += c == "("
        depth -= c == ")"
        if depth == 0 and i < len(e) - 1:
            return False
    return e.endswith(")")


def last_name(e: str) -> tuple[str, str, bool]:
    """(base, last member or identifier, indexed) of an lvalue like a->b.c[i]."""
    e = re.sub(r"\[[^\[\]]*\]", "[]", e)
    e = re.sub(r"\[[^\[\]]*\]", "[]", e)
    indexed = e.endswith("[]")
    e2 = e.rstrip("[]") if indexed else e
    e2 = re.sub(r"\[\]$", "", e2)
    parts = re.split(r"->|\.", e2)
    return (parts[0] if len(parts) > 1 else ""), parts[-1], indexed


class Resolver:
    """Maps an operation's argument to a census identity."""

    def __init__(self, census: Census):
        self.census = census
        self.members: dict[str, list[Decl]] = {}
        self.by_struct: dict[tuple[str, str], list[Decl]] = {}
        self.globals: dict[str, list[Decl]] = {}
        self.locals: dict[tuple[str, str, str], Decl] = {}
        self.file_vars: dict[tuple[str, str], Decl] = {}
        for d in list(census.sems.values()) + list(census.pointers.values()):
            if d.kind == "member":
                self.members.setdefault(d.name, []).append(d)
                self.by_struct.setdefault((d.struct.split(".")[-1], d.name), []).append(d)
                self.by_struct.setdefault((d.struct, d.name), []).append(d)
            elif d.kind in ("local", "param") or (d.kind == "static" and d.func):
                self.locals[(d.path, d.func, d.name)] = d
            else:
                self.file_vars[(d.path, d.name)] = d
                if d.kind == "global":
                    self.globals.setdefault(d.name, []).append(d)
        self.includes: dict[str, set[str]] = {}

    def _included(self, path: str) -> set[str]:
        return self.census.includes.get(path, set())

    def _visible(self, path: str, decl_path: str) -> bool:
        if decl_path == path:
            return True
        inc = self._included(path)
        if decl_path in inc:
            return True
        m = re.match(r"arch/[^/]+/include/(asm/.+)$", decl_path)
        return bool(m and "asm:" + m.group(1)[4:] in inc)

    def _struct_of(self, path: str, func_start: int, pos: int, base: str) -> str:
        """The struct tag of a variable named base, found at scan time."""
        return self.census.hints.get((path, pos, base), "")  # pos is the line

    def resolve(self, path: str, func: str, expr: str, pos: int = -1,
                func_start: int = -1, strict: bool = False,
                ) -> tuple[str, str, tuple[str, ...], str]:
        """(target id, via, candidates, note).  strict: the expression need not be a
        semaphore (an argument of any function), so a member is only taken when its
        struct is known and matches, or its declaration is visible from path."""
        e = strip_expr(expr)
        tern = _split_ternary(e)
        if tern:
            targets = []
            for branch in tern:
                t, v, c, _ = self.resolve(path, func, branch, pos, func_start)
                targets += [t] if t else list(c)
            return "", "ambiguous", tuple(sorted(set(targets))), \
                f"conditional argument `{expr}`"
        addr = e.startswith("&")
        if addr:
            e = strip_expr(e[1:])
        e = re.sub(r"^\*\(?", "", e) if not addr and e.startswith("*") else e
        base, name, indexed = last_name(e)
        if not re.fullmatch(r"\w+", name or ""):
            return "", "unresolved", (), f"argument `{expr}` is not a plain lvalue"
        if not base:
            return self._resolve_variable(path, func, name, addr, indexed)
        return self._resolve_member(path, func, e, base, name, addr, indexed, pos,
                                    func_start, strict)

    def _resolve_variable(self, path: str, func: str, name: str, addr: bool,
                          indexed: bool) -> tuple[str, str, tuple[str, ...], str]:
        """A plain name: a local of func, a variable of the file, or a global."""
        name = self.census.aliases.get(name, name)
        d = self.locals.get((path, func, name)) or self.file_vars.get((path, name))
        if d is None:
            cands = self.globals.get(name, [])
            if len(cands) == 1:
                d = cands[0]
            elif cands:
                return "", "ambiguous", tuple(sorted(c.id for c in cands)), \
                    f"several globals named {name}"
        if d is None and name in self.census.aliases.values():
            same = [x for (pth, nm), x in self.file_vars.items() if nm == name]
            d = same[0] if len(same) == 1 else None
        if d is None:
            return "", "unresolved", (), f"no struct semaphore named `{name}` in scope"
        if d.pointer and not addr:
            return d.id, "pointer", (), ""
        if not addr and not d.array:
            return "", "unresolved", (), f"`{name}` used without &"
        return d.id, "direct", (), "array element" if indexed else ""

    def _member_candidates(self, e: str, name: str) -> list[Decl]:
        """The struct members named name; a member of a nested struct (tag.sub.name)
        is only reached through .sub."""
        path_expr = "." + re.sub(r"->", ".", re.sub(r"\[[^\]]*\]", "", e))
        return [c for c in self.members.get(name, [])
                if "." not in c.struct or "anon@" in c.struct
                or path_expr.endswith("." + ".".join(c.struct.split(".")[1:] + [name]))]

    def _resolve_member(self, path: str, func: str, e: str, base: str, name: str,
                        addr: bool, indexed: bool, pos: int, func_start: int,
                        strict: bool) -> tuple[str, str, tuple[str, ...], str]:
        """`base->name` or `base.name`: by the struct of base when it is known, else by
        the members visible from path, else by the one in path's directory."""
        cands = self._member_candidates(e, name)
        if not cands:
            return "", "unresolved", (), f"no struct member `{name}` is a struct semaphore"
        tag = ""
        if re.fullmatch(r"\w+", base) and pos >= 0:
            tag = self._struct_of(path, func_start, pos, base)
        chosen: list[Decl] = []
        if tag:
            chosen = [c for c in cands if c.struct == tag or c.struct.endswith("." + tag)
                      or c.struct.split(".")[0] == tag]
            if len(chosen) > 1:
                vis = [c for c in chosen if self._visible(path, c.path)]
                chosen = vis or chosen
        if strict:
            if tag:
                chosen = [c for c in chosen if self._visible(path, c.path)
                          or os.path.dirname(c.path) == os.path.dirname(path)]
            else:
                chosen = [c for c in cands if self._visible(path, c.path)]
            if len(chosen) != 1:
                return "", "unresolved", (), "not known to be a semaphore"
        if not chosen:
            if len(cands) == 1:
                chosen = cands
            else:
                vis = [c for c in cands if self._visible(path, c.path)]
                chosen = vis if vis else []
        if len(chosen) != 1:
            pool = chosen or cands
            here = os.path.dirname(path)
            near = [c for c in pool if os.path.dirname(c.path) == here]
            if len(near) == 1:
                chosen = near
        if len(chosen) != 1:
            return "", "ambiguous", tuple(sorted(c.id for c in pool)), \
                f"member `{name}` of {len(pool)} structs"
        d = chosen[0]
        if d.pointer:
            return d.id, ("pointer" if not addr else "pointer-address"), (), ""
        if not addr and not d.array:
            return "", "unresolved", (), f"`{e}` used without &"
        return d.id, "direct", (), "array element" if indexed else ""


def _struct_hint(clean: str, func_start: int, pos: int, base: str) -> str:
    lo = max(0, func_start - 2000) if func_start >= 0 else 0
    found = re.findall(r"\bstruct\s+(\w+)\s*\*?\s*(?:const\s+)?\b" + re.escape(base)
                       + r"\b\s*[,;=)\[]", clean[lo:pos])
    if found:
        return found[-1]
    # a variable a macro of cocci/macros.h declares: closure_type(c, struct cache_set, ...)
    return declared_struct(clean[max(lo, func_start):pos], base) if func_start >= 0 else ""


def _line_end(text: str, line: int) -> int:
    pos = 0
    for _ in range(line):
        nxt = text.find("\n", pos)
        if nxt < 0:
            return len(text)
        pos = nxt + 1
    return pos


@functools.lru_cache(maxsize=16)
def _cleaned(text: str) -> str:
    """clean_source once per file, not once per escaping address in it."""
    return clean_source(text)


def resolve_address(c: Census, rel: str, func: str, expr: str, line: int) -> str:
    """The semaphore id whose address `expr` (spatch's text of the argument) is,
    when one is certain; "" otherwise.  Resolved like a call's argument, the
    struct of a local pointer read from the source around line when the census
    has no hint for it."""
    expr = "&" + re.sub(r"\s+", "", expr)
    base, _, _ = last_name(strip_expr(expr[1:]))
    if re.fullmatch(r"\w+", base) and (rel, line, base) not in c.hints:
        cleaned = _cleaned(c.texts.get(rel, ""))
        end = _line_end(cleaned, line)
        c.hints[(rel, line, base)] = _struct_hint(cleaned, max(0, end - 20000), end, base)
    target, via, _, _ = c.resolver.resolve(rel, func, expr, line, strict=True)
    return target if via == "direct" else ""


def resolve_pointer(c: Census, rel: str, func: str, expr: str, line: int) -> str:
    """The id of the `struct semaphore *` that the lvalue `expr` names (the left
    side of `t.act.semaphore = &tsem`), when the census knows it; "" otherwise."""
    expr = re.sub(r"\s+", "", expr)
    target, via, _, _ = c.resolver.resolve(rel, func, expr, line, strict=True)
    return target if via == "pointer" and target in c.pointers else ""
