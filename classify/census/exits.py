"""Which ways out of a C function body pass a release: the textual path checks of
the pairing proof (census.pairs), on a file's text with comments and strings
blanked (classify.census.cscan), by line or offset.

* ``falls_through``: nothing leaves between a take and one later release;
* ``guarded_alike``: a take and a release under one condition;
* ``held_exit``: every way out after a take (return, goto to a label further on,
  break or continue out of the loop around it, the end of the function) passes a
  release first, and which one does not;
* ``taken_before``: every path to a release passes the take first;
* ``gate_left_open``: every call through an on/off field that turns it on in a
  file is turned off on every way out of its function (``contexts.FLAG_FIELDS``).
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass

from classify.census.cscan import FileScopes, Scope, _statement_start, scan_scopes
from classify.census.scan import split_top


_EXIT_RX = re.compile(r"\breturn\b|\bgoto\s+(\w+)")
_LABEL_RX = r"^[ \t]*{}[ \t]*:(?!:)"
_ASSIGN_RX = re.compile(r"\s*(?:\w+\s+)*\**\s*(\w+)\s*=[^=]")


@functools.lru_cache(maxsize=64)
def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def _body_end(text: str, pos: int) -> int:
    """The end of the statement that starts at pos: a braced block or up to ';'."""
    while pos < len(text) and text[pos].isspace():
        pos += 1
    if pos < len(text) and text[pos] == "{":
        depth = 0
        for i in range(pos, len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                return i + 1
        return len(text)
    end = text.find(";", pos)
    return len(text) if end < 0 else end + 1


def _if_body(text: str, pos: int) -> tuple[int, int] | None:
    """(start, end) of the body of the `if (...)` that starts at pos, or None."""
    m = re.compile(r"\s*(?:\}\s*else\s+)?if\s*\(").match(text, pos)
    if not m:
        return None
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    return i, _body_end(text, i)


def _failure_branch(text: str, starts: list[int], line: int) -> tuple[int, int] | None:
    """The branch taken when the call on line fails: the body of `if (call(...))`
    on that line, or of the `if (v)` right after `v = call(...);` (or right after
    the block that statement ends: a retry, `if (busy) { v = call(...); }`)."""
    at = starts[line - 1]
    body = _if_body(text, at)
    if body is not None:
        return body
    m = _ASSIGN_RX.match(text, at)
    if not m:
        return None
    end = text.find(";", at)
    if end >= 0:     # the `if (v)` may follow the end of the block the call ends
        end = re.compile(r"(?:\s*\})*").match(text, end + 1).end() - 1
    nxt = _if_body(text, end + 1) if end >= 0 else None
    if nxt is None:
        return None
    cond = text[end + 1:nxt[0]]
    return nxt if re.search(rf"\b{re.escape(m.group(1))}\b", cond) else None


def falls_through(text: str, take: int, give: int) -> bool:
    """Whether every path from the take on line `take` that does not fail it
    reaches line `give` of the same function body: no return, and no goto to a
    label outside the two lines, except in the take's failure branch; and no label
    in between that a path which never took it could jump to."""
    if give <= take:
        return False
    starts = _line_starts(text)
    if give > len(starts):
        return False
    a, b = starts[take] if take < len(starts) else len(text), starts[give - 1]
    region = text[a:b]
    failed = _failure_branch(text, starts, take)
    for m in _EXIT_RX.finditer(region):
        if failed and failed[0] <= a + m.start() < failed[1]:
            continue
        label = m.group(1)
        if label and re.search(_LABEL_RX.format(label), region, re.M):
            continue
        return False
    return True


# Every path from a take to the exits of its function ------------------------
#
# falls_through() asks whether nothing leaves between a take and one release; it
# takes any later release, even one in a branch (`if (err) { give(); goto out; }`)
# that most paths do not pass.  held_exit() asks the question the pairing needs:
# is there a way out of the function (return, goto to a label further on, break
# or continue out of the loop around the take, its end) that no release precedes?

_LEAVE_RX = re.compile(r"\b(?:return|break|continue)\b|\bgoto\s+(\w+)")
_LEAVE_TEXT_RX = re.compile(r"return\b|break\b|continue\b|goto\s+\w+")
_LEAD_LABELS_RX = re.compile(r"(?:\s*(?:case\b[^;:]*|default|[A-Za-z_]\w*)\s*:(?!:))*\s*")
_COND_HEAD_RX = re.compile(r"(else\s+)?(if|while|for|switch)\s*\(")
_LOOP_HEAD_RX = re.compile(r"(for|while|switch|do)\b")
_CALL_NAME_RX = re.compile(r"([A-Za-z_]\w*)\s*\(")
_NOT_CALLS = frozenset(("if", "for", "while", "switch", "return", "sizeof", "typeof",
                        "__typeof__", "defined", "likely", "unlikely", "WARN_ON",
                        "WARN_ON_ONCE"))
_SHORT_CIRCUIT_RX = re.compile(r"&&|\|\||\?")


@functools.lru_cache(maxsize=64)
def _scopes(text: str) -> FileScopes:
    return scan_scopes(text)


def _paren_end(text: str, open_: int) -> int:
    """The offset after the `)` that closes the `(` at open_, -1 if none."""
    depth = 0
    for i in range(open_, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return -1


def _innermost(fs: FileScopes, pos: int) -> Scope | None:
    i = fs.innermost(pos)
    return fs.scopes[i] if i >= 0 else None


def _inside(scope: Scope | None, pos: int) -> bool:
    return scope is None or scope.start < pos < scope.end


def _head(text: str, pos: int) -> str:
    """The statement text before pos, its labels (`out:`, `case X:`) left off."""
    start = _statement_start(text, pos)
    return text[start:pos][_LEAD_LABELS_RX.match(text, start, pos).end() - start:].strip()


def _statement_guard(text: str, pos: int) -> str | None:
    """Whether the statement holding pos runs whenever its block does: None if so;
    the condition (spaces removed) of the `if` whose lone body it is; "?" when it
    depends on something else (else, a loop, ?:, && or ||)."""
    prefix = _head(text, pos)
    m = _COND_HEAD_RX.match(prefix)
    if not m:
        return "?" if re.match(r"(?:else|do)\b", prefix) or \
            _SHORT_CIRCUIT_RX.search(prefix) else None
    end = _paren_end(prefix, m.end() - 1)
    if end < 0:    # pos is in the condition, evaluated whenever the statement is
        return "?" if m.group(1) or _SHORT_CIRCUIT_RX.search(prefix[m.end():]) else None
    rest = prefix[end:].strip()
    if m.group(1) or m.group(2) != "if" or _COND_HEAD_RX.match(rest) or \
            re.match(r"(?:else|do)\b", rest) or _SHORT_CIRCUIT_RX.search(rest):
        return "?"
    return re.sub(r"\s+", "", prefix[m.end():end - 1])


def _block_guard(text: str, scope: Scope | None) -> str:
    """The condition of `if (c) {` when scope is that braced body, else ""."""
    if scope is None or scope.kind != "block":
        return ""
    head = _head(text, scope.start)
    m = re.match(r"if\s*\(", head)
    if not m or _paren_end(head, m.end() - 1) != len(head):
        return ""
    return re.sub(r"\s+", "", head[m.end():-1])


def _statement_pos(text: str, pos: int) -> int:
    """Where the statement holding pos begins, after its labels."""
    start = _statement_start(text, pos)
    return _LEAD_LABELS_RX.match(text, start, pos).end()


def _anchors(text: str, fs: FileScopes, give: int, guard: str) -> list[int]:
    """The places a release at give counts from: the call itself when it runs
    whenever its block does, and the `if` around it when that tests what the take's
    `if` tested (`if (fe->ops.gate) fe->ops.gate(fe, 0);`, as the take was)."""
    sg = _statement_guard(text, give)
    out = [give] if sg is None else []
    if guard and guard != "?":
        if sg == guard:
            out.append(_statement_pos(text, give))
        elif sg is None and _block_guard(text, block := _innermost(fs, give)) == guard:
            out.append(_statement_pos(text, block.start))
    return out


def _take_guard(text: str, fs: FileScopes, take: int) -> str:
    sg = _statement_guard(text, take)
    return sg if sg is not None else _block_guard(text, _innermost(fs, take))


def _breaks_out(text: str, fs: FileScopes, pos: int, word: str, take: int) -> bool:
    """Whether the break or continue at pos leaves the loop (or, for break, the
    switch) that holds the take: that skips what follows the take in it."""
    if _LOOP_HEAD_RX.match(_head(text, pos)):
        return False               # a braceless loop after the take
    scope = _innermost(fs, pos)
    while scope is not None and scope.kind == "block":
        kind = _LOOP_HEAD_RX.match(_head(text, scope.start))
        if kind and (word == "break" or kind.group(1) != "switch"):
            return _inside(scope, take)
        scope = fs.scopes[scope.parent] if scope.parent >= 0 else None
    return False


@dataclass
class _Paths:
    """The ways out after one take, in one function body [start, end): the
    releases that count (anchor, release, block), and the part [after, stop) that
    every path crosses before the release that closes it."""
    text: str
    fs: FileScopes
    take: int
    after: int
    stop: int
    start: int
    end: int
    usable: list[tuple[int, int, Scope | None]]

    def covered(self, lo: int, pos: int) -> bool:
        """Released between lo and pos, in a block that holds pos: on its way there."""
        return any(lo <= a < pos and _inside(sc, pos) for a, _, sc in self.usable)

    def label(self, name: str) -> int:
        m = re.compile(_LABEL_RX.format(re.escape(name)), re.M).search(
            self.text, self.start, self.end)
        return m.start() if m else -1

    def leaves(self, m: re.Match, lo: int, seen: frozenset[str]) -> int:
        """Whether the exit matched by m (of _LEAVE_RX), on a path that has released
        nothing since lo, leaves holding: its offset if so (a goto whose label's
        path leaves holding), -1 if not (it stays before the release, or releases
        first)."""
        pos, name = m.start(), m.group(1)
        if self.covered(lo, pos):
            return -1              # released on its way out (`give(); goto out;`)
        if name:
            at = self.label(name)
            if self.after <= at < self.stop:
                return -1          # a jump that stays before the release
            if at < self.after:
                return pos         # not found, or back before the take
            # the jump is where it goes wrong, even if the return is further on
            return -1 if name in seen or self.tail(at, seen | {name}) < 0 else pos
        if m.group(0) in ("break", "continue") and \
                not _breaks_out(self.text, self.fs, pos, m.group(0), self.take):
            return -1
        return pos

    def tail(self, at: int, seen: frozenset[str]) -> int:
        """Where the path that jumps to the label at `at` leaves holding, -1 if it
        does not: the unwind code after the release (`error: ...; goto exit;`)."""
        block = _innermost(self.fs, at)
        for m in _LEAVE_RX.finditer(self.text, at, self.end):
            bad = self.leaves(m, at, seen)
            if bad >= 0:
                return bad
            if m.group(0) not in ("break", "continue") and \
                    _innermost(self.fs, m.start()) is block and \
                    _statement_guard(self.text, m.start()) is None:
                return -1          # every path from the label ends here
        return -1 if self.covered(at, self.end - 1) else self.end


def _leak(text: str, take: int, after: int, gives: list[int],
          failure: tuple[int, int] | None) -> tuple[int, int]:
    """(close, leak), offsets into text: close, the first release that every path
    from the take passes unless it leaves first (-1 if none); leak, the first way
    out of the function after the take that no release precedes (its end when no
    release closes it; -1 if none).  A goto to a label past the release is
    followed to where that path ends.  take: the taking call; after: where its
    statement's paths begin; gives: the releasing calls; failure: the branch taken
    when the take failed (its exits hold nothing)."""
    fs = _scopes(text)
    scope = _innermost(fs, take)
    while scope is not None and scope.kind != "func" and scope.parent >= 0:
        scope = fs.scopes[scope.parent]
    start, end = (scope.start, scope.end) if scope is not None and scope.kind == "func" \
        else (0, len(text))
    guard = _take_guard(text, fs, take)
    usable = sorted((a, g, _innermost(fs, a)) for g in gives if after <= g < end
                    for a in _anchors(text, fs, g, guard))
    close = next(((a, g) for a, g, sc in usable if _inside(sc, take)), None)
    stop = close[0] if close else end
    paths = _Paths(text, fs, take, after, stop, start, end, usable)
    for m in _LEAVE_RX.finditer(text, after, stop):
        if failure and failure[0] <= m.start() < failure[1]:
            continue
        bad = paths.leaves(m, after, frozenset())
        if bad >= 0:
            return (close[1] if close else -1), bad
    return (close[1], -1) if close else (-1, end)


def _line_of(text: str, pos: int) -> int:
    return bisect.bisect_right(_line_starts(text), pos)


def _exit_text(text: str, pos: int) -> str:
    """What leaves at pos: "return", "goto out_free", ... or "the end of f()"."""
    m = _LEAVE_TEXT_RX.match(text, pos)
    if m:
        return re.sub(r"\s+", " ", m.group(0))
    name = _scopes(text).function_at(pos - (text[pos:pos + 1] == "}"))[0]
    return f"the end of {name}()" if name else "the end of the function"


def _call_on(text: str, line: int, names: frozenset[str]) -> tuple[int, int]:
    """(start, end) of the call on line to one of names (else its first call)."""
    starts = _line_starts(text)
    a = starts[line - 1] if line <= len(starts) else len(text)
    b = starts[line] if line < len(starts) else len(text)
    found = [m for m in _CALL_NAME_RX.finditer(text, a, b) if m.group(1) not in _NOT_CALLS]
    pick = next((m for m in found if m.group(1) in names), found[0] if found else None)
    if pick is None:
        return a, b
    end = _paren_end(text, pick.end() - 1)
    return pick.start(), end if end > 0 else b


def held_exit(text: str, take: int, gives: list[int], names: frozenset[str] = frozenset(),
              failure_ok: bool = True) -> tuple[int, int]:
    """(close, leak), lines: close, the release on a line of gives that every path
    from the take on line take reaches (0 when none, or when a path leaves first);
    leak, the first return, goto, break or continue that leaves with nothing
    released, or the end of the function (0 when none).  names: the functions that
    take and release, to find the calls on their lines; failure_ok: the take
    holds nothing when it fails (a taker that gives back on its error paths), so
    exits in its failure branch do not count."""
    starts = _line_starts(text)
    t0, t1 = _call_on(text, take, names)
    gpos = [_call_on(text, g, names)[0] for g in gives if 0 < g <= len(starts)]
    failure = _failure_branch(text, starts, take) if failure_ok else None
    close, leak = _leak(text, t0, t1, gpos, failure)
    if leak >= 0:
        return 0, _line_of(text, leak)
    return _line_of(text, close), 0


# Calls through an on/off field (contexts.FLAG_FIELDS) in one file ------------

_ON, _OFF = frozenset(("1", "true")), frozenset(("0", "false"))


def _split_args(text: str) -> list[str]:
    """The arguments of a call (the text between its parentheses), spaces removed."""
    return [re.sub(r"\s+", "", a) for a in split_top(text) if a.strip()]


def _flag_calls(text: str, fld: str) -> list[tuple[int, int, list[str]]]:
    """The calls through field fld (`x->fld(...)`, `x.fld(...)`) inside functions:
    (start, end, arguments)."""
    fs = _scopes(text)
    out = []
    for m in re.finditer(rf"(?:\.|->)\s*{re.escape(fld)}\s*\(", text):
        end = _paren_end(text, m.end() - 1)
        if end > 0 and fs.function_at(m.start())[0]:
            out.append((m.start(), end, _split_args(text[m.end():end - 1])))
    return out


def gate_left_open(path: str, text: str, fld: str) -> tuple[str, list[int]]:
    """Whether every call through fld that turns it on (last argument 1) in text
    is followed on every way out of its function by one that turns it off (0):
    ("", the lines of the calls that turn it on) if so, else (why, []), naming the
    first way out that leaves it on, or the call whose argument is not a constant.
    text: the file with comments and strings blanked."""
    calls = _flag_calls(text, fld)
    offs = [start for start, _, args in calls if args and args[-1] in _OFF]
    ons = []
    for start, end, args in calls:
        flag = args[-1] if args else ""
        if flag in _OFF:
            continue
        line, call = _line_of(text, start), f"{fld}({', '.join(args)})"
        func = _scopes(text).function_at(start)[0]
        if flag not in _ON:
            return (f"{path}:{line} {func}() calls {call}: whether that turns it on or "
                    "off is not known"), []
        _, leak = _leak(text, start, end, offs, None)
        if leak >= 0:
            return (f"{path}:{_line_of(text, leak)} {_exit_text(text, leak)} after {call} "
                    f"at :{line} leaves {func}() with no {fld}(..., 0) on the way"), []
        ons.append(line)
    return "", ons


def _guard(text: str, starts: list[int], line: int) -> str:
    """The condition of the `if (...)` that governs the statement on line alone
    (`if (c)` on the line before, or `if (c) call();`), normalised; "" if none."""
    here = text[starts[line - 1]:starts[line] if line < len(starts) else len(text)]
    before = text[starts[line - 2]:starts[line - 1]] if line > 1 else ""
    for cand in (here, before):
        m = re.match(r"\s*if\s*\((.*)\)\s*(?:\w+\s*\(.*\)\s*;)?\s*$", cand)
        if m:
            return re.sub(r"\s+", "", m.group(1))
    return ""


def guarded_alike(text: str, take: int, gives: list[int]) -> bool:
    """`if (c) down(E); ... if (c) up(E);`: the take on line take and a later
    release under the same condition, whose variables are not assigned in between
    (hisi_sas' `if (!timeout->rst_ha_timeout)`): released whenever it was taken."""
    starts = _line_starts(text)
    if take < 2 or take > len(starts):
        return False
    cond = _guard(text, starts, take)
    if not cond:
        return False
    names = set(re.findall(r"[A-Za-z_]\w*", cond))
    for give in sorted(g for g in gives if take < g <= len(starts)):
        if _guard(text, starts, give) != cond:
            continue
        between = text[starts[take]:starts[give - 1]]
        if not any(re.search(rf"\b{n}\s*(?:[-+*/|&^]?=(?!=)|\+\+|--)", between)
                   for n in names) and falls_through(text, take, give):
            return True
    return False


_ANY_LABEL_OR_CASE_RX = re.compile(r"^[ \t]*(?:case\b[^;:]*|default|[A-Za-z_]\w*)[ \t]*:(?!:)",
                                   re.M)


def taken_before(text: str, take: int, give: int, names: frozenset[str] = frozenset()) -> bool:
    """Whether every path to the release on line give passes the take on line take:
    the take runs whenever its block does, that block holds the release, and no
    label (or case) between lets a path in.  Ways out between the two do not
    matter here (`if (err) { give(); goto out; } ... give();`): a path that leaves
    reaches no release; whether it leaves holding is held_exit()'s question."""
    if give <= take:
        return False
    t0, t1 = _call_on(text, take, names)
    g0, _ = _call_on(text, give, names)
    if g0 < t1 or _statement_guard(text, t0) is not None:
        return False
    return _inside(_innermost(_scopes(text), t0), g0) and \
        not _ANY_LABEL_OR_CASE_RX.search(text, t1, g0)


def exit_on(text: str, line: int) -> str:
    """What leaves the function on line (held_exit's leak): "goto out", "return",
    ... or "the end of f()"."""
    starts = _line_starts(text)
    a = starts[line - 1]
    b = starts[line] if line < len(starts) else len(text)
    m = _LEAVE_TEXT_RX.search(text, a, b)
    return _exit_text(text, m.start() if m else b - 1)
