"""Semaphore parameters: what a function does with the `struct semaphore *` it is
given, applied where it is called.

dm-vdo's index takes its barrier semaphores through a helper,

    static inline void __down(struct semaphore *semaphore)
    {
            while (down_interruptible(semaphore) != 0)
                    fsleep(1000);
    }
    ...
    __down(&barrier->lock);

and a census of the calls of the semaphore API sees no down() of `barrier->lock`
at all.  A *summary* of such a function says which calls it makes on its
parameter (``ParamOp``: the API call, where, and the helpers in between), and
its effect: it takes it and returns holding it, releases it, takes and releases
it on every path, or initialises it.  A call that passes `&x->sem` to the function
then counts as those calls of that semaphore, at the call (audit.py), with the
helper named.  Summaries compose: a helper that passes its parameter on to another
helper has that one's calls too, to any depth, and a helper is found in the
caller's file, in a header, or as the one function of that name the census knows.

A function is summarised only when every use of its parameter is an argument of
the semaphore API or of another summarised function; anything else (stored,
returned, passed to a function with no summary, read through `->count`), a take
and a release that do not pair on every path, or a call spatch did not see in it,
leaves it unsummarised, with the reason: the call then stays an address handed to
other code, and no verdict may claim the caller never takes or waits on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from classify.census.cscan import clean_source, scan_scopes
from classify.census.exits import (_LEAVE_RX, _call_on, _head, _scopes, _statement_guard,
                                   held_exit)
from classify.census.model import ACQUIRE, Census, Decl, OPS
from classify.census.scan import split_top

TAKES, RELEASES, BOTH, INITS, NOTHING = ("takes", "releases", "takes and releases",
                                         "initialises", "does nothing with")
MAX_DEPTH = 8


@dataclass(frozen=True)
class ParamOp:
    """One call of the semaphore API that a summarised function makes on its
    parameter: in func (path:line), reached through `via` (outermost first)."""
    op: str
    path: str
    line: int
    func: str
    loop: bool = False
    via: tuple[str, ...] = ()
    count: str = ""          # sema_init(): the count, as the call site gives it


@dataclass(frozen=True)
class Summary:
    path: str
    func: str
    index: int               # which argument
    pointer: str             # the census id of the parameter
    ops: tuple[ParamOp, ...] = ()
    effect: str = ""
    why_not: str = ""        # not summarised: why
    # the census ids of every parameter the semaphore goes through: this one,
    # and those of the helpers it is passed on to
    pointers: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.why_not


@dataclass(frozen=True)
class _Def:
    """A function definition: its parameters and its body in the cleaned text."""
    path: str
    func: str
    params: tuple[str, ...]
    start: int
    end: int
    static: bool


_ARG_RX = r"(?<![\w.>])(?<!->){}\b"


def _split_top(text: str) -> list[str]:
    return [re.sub(r"\s+", " ", a).strip() for a in split_top(text)]


def _param_names(head: str, func: str) -> tuple[str, ...] | None:
    m = None
    for m in re.finditer(rf"\b{re.escape(func)}\s*\(", head):
        pass
    if m is None:
        return None
    depth, i = 1, m.end()
    while i < len(head) and depth:
        depth += {"(": 1, ")": -1}.get(head[i], 0)
        i += 1
    names = []
    for p in _split_top(head[m.end():i - 1]):
        nm = re.search(r"(\w+)\s*(?:\[[^\]]*\])*$", p)
        names.append(nm.group(1) if nm and p not in ("void", "...") else "")
    return tuple(names)


class Summaries:
    """The summaries of a census' functions with a `struct semaphore *` parameter.
    seen: the (path, line, op) of the API calls spatch saw."""

    def __init__(self, census: Census, seen: set[tuple[str, int, str]]):
        self.census, self.seen = census, seen
        self.by_name: dict[str, list[Decl]] = {}
        for d in census.pointers.values():
            if d.kind == "param":
                self.by_name.setdefault(d.func, []).append(d)
        self.memo: dict[tuple[str, str, int], Summary] = {}
        self._cleaned: dict[str, str] = {}
        self._defs: dict[tuple[str, str], _Def | None] = {}

    def _clean(self, path: str) -> str:
        if path not in self._cleaned:
            self._cleaned[path] = clean_source(self.census.texts.get(path, ""))
        return self._cleaned[path]

    def _definition(self, path: str, func: str) -> _Def | None:
        if (path, func) not in self._defs:
            self._defs[(path, func)] = self._find_definition(path, func)
        return self._defs[(path, func)]

    def _find_definition(self, path: str, func: str) -> _Def | None:
        clean = self._clean(path)
        for sc in scan_scopes(clean).scopes:
            if sc.kind == "func" and sc.name == func:
                head_start = max(clean.rfind(";", 0, sc.start), clean.rfind("}", 0, sc.start)) + 1
                head = clean[head_start:sc.start]
                params = _param_names(head, func)
                if params is None:
                    return None
                static = bool(re.search(r"\bstatic\b", head)) or path.endswith(".h")
                return _Def(path, func, params, sc.start, sc.end, static)
        return None

    def callee(self, path: str, name: str) -> tuple[_Def | None, str]:
        """The definition of name that a call in path reaches, or (None, why)."""
        defs = {(d.path, d.func) for d in self.by_name.get(name, ())}
        found = [x for x in (self._definition(p, f) for p, f in sorted(defs)) if x]
        here = [x for x in found if x.path == path]
        pick = here or [x for x in found if x.path.endswith(".h")] or \
            [x for x in found if not x.static]
        if len(pick) == 1:
            return pick[0], ""
        if not pick:
            return None, f"{name}() has no definition with a struct semaphore * parameter"
        return None, f"{name}() has {len(pick)} definitions: " + ", ".join(
            sorted(x.path for x in pick))

    def at_call(self, path: str, line: int, name: str, arg: str) -> Summary:
        """The summary that applies to the call of name on path:line whose argument
        is arg (`&x->sem`, spaces removed)."""
        d, why = self.callee(path, name)
        if d is None:
            return Summary(path, name, -1, "", why_not=why)
        index = self._arg_index(path, line, name, arg, d)
        if index < 0:
            return Summary(d.path, name, -1, "", why_not=(
                f"{path}:{line}: which parameter of {name}() gets {arg} is not known"))
        return self.summary(d, index)

    def _arg_index(self, path: str, line: int, name: str, arg: str, d: _Def) -> int:
        mine = [i for i, p in enumerate(d.params) if self._pointer(d, p)]
        if len(mine) == 1:
            return mine[0]
        clean = self._clean(path)
        starts = [0] + [m.end() for m in re.finditer("\n", clean)]
        a = starts[line - 1] if line <= len(starts) else len(clean)
        m = re.compile(rf"(?<![\w.>]){re.escape(name)}\s*\(").search(clean, a)
        if not m:
            return -1
        depth, i = 1, m.end()
        while i < len(clean) and depth:
            depth += {"(": 1, ")": -1}.get(clean[i], 0)
            i += 1
        args = [re.sub(r"\s+", "", x) for x in _split_top(clean[m.end():i - 1])]
        hits = [i for i, x in enumerate(args) if x == re.sub(r"\s+", "", arg) and i in mine]
        return hits[0] if len(hits) == 1 else -1

    def _pointer(self, d: _Def, param: str) -> Decl | None:
        return next((x for x in self.by_name.get(d.func, ())
                     if x.path == d.path and x.name == param), None) if param else None

    def summary(self, d: _Def, index: int, stack: tuple[str, ...] = ()) -> Summary:
        key = (d.path, d.func, index)
        if key not in self.memo:
            self.memo[key] = self._summarise(d, index, stack + (d.func,))
        return self.memo[key]

    def _summarise(self, d: _Def, index: int, stack: tuple[str, ...]) -> Summary:
        param = d.params[index] if index < len(d.params) else ""
        ptr = self._pointer(d, param)
        if ptr is None:
            return Summary(d.path, d.func, index, "", why_not=(
                f"{d.path}: parameter {index + 1} of {d.func}() is not a struct semaphore *"))
        if len(stack) > MAX_DEPTH or stack.count(d.func) > 1:
            return Summary(d.path, d.func, index, ptr.id, why_not=(
                f"{d.func}() passes it on through {len(stack)} helpers (or in a cycle)"))
        uses: list[_Use] = []
        for pos in self._uses(d, param):
            got = self._use(d, param, pos, stack)
            if isinstance(got, str):
                return Summary(d.path, d.func, index, ptr.id, why_not=got)
            uses.append(got)
        effect, why = self._effect(d, uses)
        ops = tuple(o for u in uses for o in u.ops)
        pointers = tuple(dict.fromkeys((ptr.id,) + tuple(p for u in uses for p in u.pointers)))
        return Summary(d.path, d.func, index, ptr.id, ops, effect, why, pointers)

    def _uses(self, d: _Def, param: str) -> list[int]:
        clean = self._clean(d.path)
        rx = re.compile(_ARG_RX.format(re.escape(param)))
        return [m.start() for m in rx.finditer(clean, d.start, d.end)]

    def _use(self, d: _Def, param: str, pos: int, stack: tuple[str, ...]) -> _Use | str:
        """What one use of the parameter does, or why it cannot be followed."""
        clean = self._clean(d.path)
        line = clean.count("\n", 0, pos) + 1
        at = f"{d.path}:{line} {d.func}()"
        k = pos - 1
        while k > d.start and clean[k].isspace():
            k -= 1
        e = pos + len(param)
        while e < d.end and clean[e].isspace():
            e += 1
        if clean[k] not in "(," or clean[e] not in ",)":
            return f"{at} uses its parameter {param} other than as an argument of a call"
        open_, argi = self._frame(clean, k, d.start)
        nm = re.search(r"([A-Za-z_]\w*)\s*$", clean[max(d.start, open_ - 80):open_])
        name = nm.group(1) if nm else ""
        if name in OPS:
            return self._api(d, name, argi, line, open_)
        inner, why = self.callee(d.path, name) if name else (None, "")
        if inner is None:
            return f"{at} passes it to {name or 'an expression'}(){': ' + why if why else ''}"
        sub = self.summary(inner, argi, stack)
        if not sub.ok:
            return sub.why_not
        return _Use(line, sub.effect, tuple(
            ParamOp(o.op, o.path, o.line, o.func, o.loop, (inner.func,) + o.via, o.count)
            for o in sub.ops), inner.func, sub.pointers)

    def _api(self, d: _Def, name: str, argi: int, line: int, open_: int) -> _Use | str:
        at = f"{d.path}:{line} {d.func}()"
        if argi != 0:
            return f"{at} gives its parameter as argument {argi + 1} of {name}()"
        if name == "sema_init":
            clean = self._clean(d.path)
            args = _split_top(clean[open_ + 1:clean.find(";", open_)].rsplit(")", 1)[0])
            count = args[1] if len(args) > 1 else "?"
            if count in d.params:
                return f"{at} initialises it with its parameter {count}"
            return _Use(line, INITS, (ParamOp(name, d.path, line, d.func, count=count),), name)
        if name not in ACQUIRE and name != "up":
            return f"{at} passes it to {name}()"
        if (d.path, line, name) not in self.seen:
            return f"{at}: spatch did not see its {name}()"
        op = next((o for o in self.census.ops if o.path == d.path and o.line == line
                   and o.op == name), None)
        return _Use(line, TAKES if name in ACQUIRE else RELEASES,
                    (ParamOp(name, d.path, line, d.func, bool(op and op.loop)),), name)

    def _every_path(self, d: _Def, u: "_Use") -> bool:
        text = self._clean(d.path)
        pos, _ = _call_on(text, u.line, frozenset({u.name}))
        return _every_path_at(text, _scopes(text), d.start, pos)

    @staticmethod
    def _frame(clean: str, k: int, start: int) -> tuple[int, int]:
        """(offset of the "(" whose argument list holds the "(" or "," at k, index)."""
        depth, argi, i = 0, 0, k
        while i > start:
            c = clean[i]
            if c in ")]":
                depth += 1
            elif c in "([":
                if depth == 0:
                    return i, argi
                depth -= 1
            elif c == "," and depth == 0:
                argi += 1
            i -= 1
        return start, argi

    def _effect(self, d: _Def, uses: list[_Use]) -> tuple[str, str]:
        """The function's effect from its uses': a take must be released on every
        path after it when the function also releases (a helper that takes and
        returns holding on some paths only cannot be applied at a call)."""
        takes = sorted({u.line for u in uses if u.effect == TAKES})
        gives = sorted({u.line for u in uses if u.effect == RELEASES})
        kinds = {u.effect for u in uses}
        if INITS in kinds and kinds & {TAKES, RELEASES, BOTH}:
            return "", f"{d.path}: {d.func}() initialises it and takes or releases it"
        for u in uses:
            if u.effect in (TAKES, RELEASES) and not self._every_path(d, u):
                what = "takes" if u.effect == TAKES else "releases"
                return "", (f"{d.path}:{u.line} {d.func}() {what} it on some paths only "
                            "(under a condition, or after a way out)")
        if takes and gives:
            text = self._clean(d.path)
            names = frozenset(u.name for u in uses)
            for t in takes:
                close, _ = held_exit(text, t, gives, names)
                if not close:
                    return "", (f"{d.path}:{t} {d.func}() takes it, releases it too, and "
                                "not on every path after the take")
            return BOTH, ""
        if takes:
            return TAKES, ""
        if gives:
            return RELEASES, ""
        if BOTH in kinds:
            return BOTH, ""
        return (INITS, "") if INITS in kinds else (NOTHING, "")


_CONDITIONAL_RX = re.compile(r"(?:else|if|switch|case|default)\b")
_LOOP_BODY_RX = re.compile(r"(?:for|while)\s*\(.*\)$|do$", re.S)


def _every_path_at(text: str, fs, start: int, pos: int) -> bool:
    """Whether the call at pos runs on every path through the function body that
    starts at start: no way out before it, not the lone body of an if, and in no
    block that a condition opens (the condition of an if or a while runs whenever
    its statement does).  A loop's body counts: its calls are marked as made in
    a loop (`for (i = 0; i < n; i++) up(s);`, drm's turnstile), and such a
    release closes no take (classify.calls)."""
    if _LEAVE_RX.search(text, start, pos):
        return False
    if _statement_guard(text, pos) is not None and not _LOOP_BODY_RX.match(_head(text, pos)):
        return False
    i = fs.innermost(pos)
    while i >= 0 and fs.scopes[i].kind == "block":
        if _CONDITIONAL_RX.match(_head(text, fs.scopes[i].start)):
            return False
        i = fs.scopes[i].parent
    return True


@dataclass(frozen=True)
class _Use:
    """One use of a parameter: on line, a call of name with that effect."""
    line: int
    effect: str
    ops: tuple[ParamOp, ...]
    name: str
    pointers: tuple[str, ...] = ()
