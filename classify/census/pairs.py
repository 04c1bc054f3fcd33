"""Take in one function, release in another: the proof that one task does both
(issue 13).

A *taker* returns holding the semaphore (an acquisition not released on every
path of its function); a *releaser* gives back what its caller holds (an up()
in a function that never takes it).  Together they are a lock held across two
calls when every use of each is paired on one task:

* a caller calls the taker and, later in its body, a releaser or up() itself;
  a caller of a releaser has taken the semaphore earlier in its body;
* a caller that takes and does not release afterwards returns holding it: it
  is a taker too, and the proof goes on at its own callers (and the same for a
  releaser), to any depth;
* a taker and a releaser stored in a pair of callbacks that the core calls in
  turn on one task (``contexts.PAIRED_FIELDS``: pci_error_handlers.reset_prepare
  and reset_done);
* one callback that takes or gives back by an on/off argument, stored in a field
  whose callers call it with 1 and then 0 (``contexts.FLAG_FIELDS``:
  i2c_gate_ctrl).

Anything else fails the proof, with the reason: a taker or releaser stored in a
field of unknown use, registered as a callback of its own (a work item, a timer,
an interrupt handler), callers not all found.  A taker stored in an ops table
that a system call enters (``contexts.SYSCALL_STRUCTS``) returns to user space
holding the semaphore, which a mutex may not do: that is recorded apart.
Exported functions are proven for their callers in the tree.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from classify.census.callgraph import CallGraph, Node, Ref
from classify.census.contexts import (FLAG_FIELDS, PAIRED_FIELDS, SYSCALL_STRUCTS,
                                      registration_context)

MAX_ROUNDS = 12
MAX_EVIDENCE = 10


@dataclass
class Pairing:
    ok: bool
    chain: list[str] = field(default_factory=list)    # file:line of each step
    why_not: str = ""                                 # the first step that fails
    user_return: str = ""                             # a taker entered from a syscall

    def text(self) -> str:
        return "; ".join(self.chain)


def _calls(graph: CallGraph, node: Node) -> list[Ref]:
    """The references to node that are calls on the caller's task: a direct call,
    or the function passed to another that calls it (not a registration)."""
    out = []
    for ref in graph.refs.get(node, ()):
        if not ref.caller:
            continue
        if ref.kind == "call":
            out.append(ref)
        elif ref.kind == "arg":
            passer, _, index = ref.detail.rpartition("/")
            if not registration_context(passer, int(index or 0)):
                out.append(ref)
    return out


_EXIT_RX = re.compile(r"\breturn\b|\bgoto\s+(\w+)")
_LABEL_RX = r"^[ \t]*{}[ \t]*:(?!:)"
_ANY_LABEL_RX = re.compile(r"^[ \t]*(?!default\b)[A-Za-z_]\w*[ \t]*:(?!:)", re.M)
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
    on that line, or of the `if (v)` right after `v = call(...);`."""
    at = starts[line - 1]
    body = _if_body(text, at)
    if body is not None:
        return body
    m = _ASSIGN_RX.match(text, at)
    if not m:
        return None
    end = text.find(";", at)
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


def _no_label_between(text: str, take: int, give: int) -> bool:
    starts = _line_starts(text)
    if give <= take or give > len(starts):
        return False
    return not _ANY_LABEL_RX.search(text[starts[take - 1]:starts[give - 1]])


@dataclass
class _Sites:
    """Per caller, the lines where the semaphore is taken and given back: its own
    down()/up() and its calls to takers and releasers."""
    takes: dict[Node, list[int]]
    gives: dict[Node, list[int]]
    source: Callable[[str], str]

    def closed_after(self, caller: Node, line: int) -> int:
        text = self.source(caller[0])
        return next((x for x in sorted(self.gives.get(caller, ()))
                     if falls_through(text, line, x)), 0)

    def opened_before(self, caller: Node, line: int) -> int:
        text = self.source(caller[0])
        return next((x for x in sorted(self.takes.get(caller, ()), reverse=True)
                     if falls_through(text, x, line) and _no_label_between(text, x, line)), 0)


def _sites(graph: CallGraph, takers: set[Node], releasers: set[Node],
           downs: dict[Node, list[int]], ups: dict[Node, list[int]],
           source: Callable[[str], str]) -> _Sites:
    takes = {k: list(v) for k, v in downs.items()}
    gives = {k: list(v) for k, v in ups.items()}
    for nodes, into in ((takers, takes), (releasers, gives)):
        for node in nodes:
            for ref in _calls(graph, node):
                into.setdefault((ref.path, ref.caller), []).append(ref.line)
    return _Sites(takes, gives, source)


def _climb(graph: CallGraph, takers: set[Node], releasers: set[Node],
           downs: dict[Node, list[int]], ups: dict[Node, list[int]],
           source: Callable[[str], str], chain: list[str]) -> tuple[set[Node], set[Node]]:
    """Takers and releasers, with every caller that returns holding (or gives back
    for its own caller) added, until nothing changes."""
    t, r = set(takers), set(releasers)
    for _ in range(MAX_ROUNDS):
        sites = _sites(graph, t, r, downs, ups, source)
        steps: list[str] = []
        t2, r2 = set(takers), set(releasers)
        for node in sorted(t):
            for ref in _calls(graph, node):
                caller = (ref.path, ref.caller)
                after = sites.closed_after(caller, ref.line)
                if after:
                    steps.append(f"{ref.path}:{ref.line} {ref.caller}() calls {node[1]}() "
                                 f"and gives it back at line {after}")
                else:
                    t2.add(caller)
        for node in sorted(r):
            for ref in _calls(graph, node):
                caller = (ref.path, ref.caller)
                if not sites.opened_before(caller, ref.line):
                    r2.add(caller)
        if (t2, r2) == (t, r):
            chain.extend(dict.fromkeys(steps))
            return t, r
        t, r = t2, r2
    return t, r


def _field_of(ref: Ref) -> tuple[str, str]:
    """(struct type or "", field name) of a field or store reference."""
    if ref.kind == "field":
        struct, _, name = ref.detail.partition(".")
        return struct, name
    name = ref.detail.replace("->", ".").rsplit(".", 1)[-1]
    return "", name if name.isidentifier() else ""


def _stored_in(graph: CallGraph, nodes: set[Node], fld: str, struct: str) -> Node | None:
    for node in sorted(nodes):
        for ref in graph.refs.get(node, ()):
            if ref.kind in ("field", "store"):
                s, f = _field_of(ref)
                if f == fld and (not s or not struct or s == struct):
                    return node
    return None


def _stored(graph: CallGraph, node: Node, ref: Ref, t: set[Node], r: set[Node],
            ups: dict[Node, list[int]]) -> tuple[str, str]:
    """A taker's or releaser's store into a field: ("ok", evidence) when the field's
    protocol pairs it on one task, else ("user", why) or ("no", why)."""
    struct, fld = _field_of(ref)
    at, name = f"{ref.path}:{ref.line}", node[1]
    if node in t and struct in SYSCALL_STRUCTS:
        return "user", (f"{at} {name}() is {struct}.{fld}, entered from a system call, and "
                        "returns holding the semaphore: it is held across the return to "
                        "user space")
    if fld in FLAG_FIELDS and node in t and node in ups:
        return "ok", f"{at} {name}() is {fld}, taking on 1 and giving back on 0: {FLAG_FIELDS[fld]}"
    for (s, first, second), why in PAIRED_FIELDS.items():
        if struct and struct != s:
            continue
        if fld == first and node in t:
            partner = _stored_in(graph, r, second, struct or s)
        elif fld == second and node in r:
            partner = _stored_in(graph, t, first, struct or s)
        else:
            continue
        if partner is not None:
            return "ok", f"{at} {name}() is {s}.{fld}, paired with {partner[1]}(): {why}"
    return "no", (f"{at} {name}() is stored in {ref.detail}: which task calls it, and "
                  "with what, is not known")


def prove_pairing(graph: CallGraph, takers: dict[Node, list[int]], releasers: set[Node],
                  downs: dict[Node, list[int]], ups: dict[Node, list[int]],
                  source: Callable[[str], str]) -> Pairing:
    """Whether every taker and releaser of one semaphore is paired on one task.
    takers: the lines of the acquisitions not proven released, by function
    (one guarded like a later release does not count); downs/ups: the lines of
    its acquisitions and up()s, by function; source: a file's text with comments
    and strings blanked (classify.census.cscan)."""
    chain: list[str] = []
    takers = {n for n, lines in takers.items()
              if not all(guarded_alike(source(n[0]), x, ups.get(n, [])) for x in lines)}
    t, r = _climb(graph, takers, releasers, downs, ups, source, chain)
    out = Pairing(True, chain)
    for node in sorted(t | r):
        if node in graph.open_ends:
            return _fail(out, graph.open_ends[node])
        refs = [x for x in graph.refs.get(node, []) if not x.detail.startswith("EXPORT_SYMBOL")]
        if not refs:
            return _fail(out, f"{node[0]}: no caller of {node[1]}() found"
                         + (" in the tree (it is exported)" if _exported(graph, node) else ""))
        for ref in refs:
            if ref.kind == "arg" and registration_context(*_passer(ref)):
                return _fail(out, f"{ref.path}:{ref.line} {node[1]}() is registered with "
                             f"{_passer(ref)[0]}(): it runs on a task of its own")
            if ref.kind in ("field", "store"):
                status, text = _stored(graph, node, ref, t, r, ups)
                if status == "user":
                    out.user_return = out.user_return or text
                if status != "ok":
                    return _fail(out, text)
                chain.append(text)
            elif not ref.caller:
                return _fail(out, f"{ref.path}:{ref.line} {node[1]}() is named at file "
                             "scope: its use is not known")
        if _exported(graph, node):
            chain.append(f"{node[1]}() is exported by {node[0]}: its callers in the tree "
                         "were followed")
    out.chain = _merge_sites(list(dict.fromkeys(chain)))[:MAX_EVIDENCE]
    return out


def _merge_sites(chain: list[str]) -> list[str]:
    """Steps that say the same of one function at several places, as one step:
    "f.c:394, :422, :505 drxk_gate_ctrl() is i2c_gate_ctrl, ..."."""
    merged: dict[str, list[str]] = {}
    for step in chain:
        at, _, rest = step.partition(" ")
        if not re.fullmatch(r"[^:\s]+:\d+", at):
            at, rest = "", step
        merged.setdefault(rest, []).append(at)
    out = []
    for rest, ats in merged.items():
        ats = [a for a in ats if a]
        if not ats:
            out.append(rest)
            continue
        path = ats[0].rsplit(":", 1)[0]
        more = [(":" + a.rsplit(":", 1)[1]) if a.startswith(path + ":") else a for a in ats[1:]]
        out.append(", ".join([ats[0]] + more) + " " + rest)
    return out


def _passer(ref: Ref) -> tuple[str, int]:
    passer, _, index = ref.detail.rpartition("/")
    return passer, int(index or 0)


def _exported(graph: CallGraph, node: Node) -> bool:
    return any(" is exported:" in hop for _, hop in graph.roots.get(node, ()))


def _fail(out: Pairing, why: str) -> Pairing:
    out.ok, out.why_not = False, why
    return out
