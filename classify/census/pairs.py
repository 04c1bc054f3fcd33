"""Take in one function, release in another: the proof that one task does both
(issue 13).

A *taker* returns holding the semaphore (an acquisition not released on every
path of its function); a *releaser* gives back what its caller holds (an up()
in a function that never takes it).  Together they are a lock held across two
calls when every use of each is paired on one task:

* a caller calls the taker and, later in its body, a releaser or up() itself,
  on every way out after the take (``census.exits.held_exit``: a return, a goto
  past the release, a break out of the loop around the take, the end of the
  function; a release in an error branch closes that branch only); a caller of
  a releaser has taken the semaphore earlier in its body, on every path to the
  release (``taken_before``);
* a caller that takes and does not release afterwards returns holding it: it
  is a taker too, and the proof goes on at its own callers (and the same for a
  releaser), to any depth;
* a taker and a releaser stored in a pair of callbacks that the core calls in
  turn on one task (``contexts.PAIRED_FIELDS``: pci_error_handlers.reset_prepare
  and reset_done);
* one callback that takes or gives back by an on/off argument, stored in a field
  whose callers call it with 1 and then 0 (``contexts.FLAG_FIELDS``:
  i2c_gate_ctrl): the calls of the storing file that turn it on turn it off on
  every way out of their function (``gate_left_open``; em28xx's probe jumped to
  kfree() with the gate open), the callers elsewhere are taken on the field's
  convention.

Anything else fails the proof, with the reason: a taker or releaser stored in a
field of unknown use, registered as a callback of its own (a work item, a timer,
an interrupt handler), callers not all found; a way out that leaves it held comes
first (file:line) when it made its function a taker.  A taker stored in an ops
table that a system call enters (``contexts.SYSCALL_STRUCTS``) returns to user
space holding the semaphore, which a mutex may not do: that is recorded apart.
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
from classify.census.exits import (exit_on, gate_left_open, held_exit,
                                   taken_before)
from classify.census.model import ACQUIRE

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


@dataclass
class _Sites:
    """Per caller, the lines where the semaphore is taken and given back: its own
    down()/up() and its calls to takers and releasers; names: the functions called
    there, to find the calls on those lines."""
    takes: dict[Node, list[int]]
    gives: dict[Node, list[int]]
    source: Callable[[str], str]
    names: frozenset[str] = frozenset()

    def closed_after(self, caller: Node, line: int) -> tuple[int, int]:
        """(the line of the release that every path after the take on line passes,
        0), or (0, the first way out that passes none, or 0 when the caller gives
        nothing back after line: then it returns holding it by design)."""
        text = self.source(caller[0])
        gives = sorted(x for x in self.gives.get(caller, ()) if x >= line)
        close, leak = held_exit(text, line, gives, self.names)
        # a function that both takes and gives back, called on line: not a release
        # after the take, and nothing that an exit skips
        return close, (leak if gives and gives[-1] > line else 0)

    def opened_before(self, caller: Node, line: int) -> int:
        """The line of the take that every path to the release on line passes."""
        text = self.source(caller[0])
        return next((x for x in sorted(self.takes.get(caller, ()), reverse=True)
                     if taken_before(text, x, line, self.names)), 0)


def _sites(graph: CallGraph, takers: set[Node], releasers: set[Node],
           downs: dict[Node, list[int]], ups: dict[Node, list[int]],
           source: Callable[[str], str]) -> _Sites:
    takes = {k: list(v) for k, v in downs.items()}
    gives = {k: list(v) for k, v in ups.items()}
    for nodes, into in ((takers, takes), (releasers, gives)):
        for node in nodes:
            for ref in _calls(graph, node):
                into.setdefault((ref.path, ref.caller), []).append(ref.line)
    names = frozenset(n[1] for n in takers | releasers) | frozenset(ACQUIRE) | {"up"}
    return _Sites(takes, gives, source, names)


def _climb(graph: CallGraph, takers: set[Node], releasers: set[Node],
           downs: dict[Node, list[int]], ups: dict[Node, list[int]],
           source: Callable[[str], str], chain: list[str],
           leaks: dict[Node, str]) -> tuple[set[Node], set[Node]]:
    """Takers and releasers, with every caller that returns holding (or gives back
    for its own caller) added, until nothing changes.  leaks: for a caller that
    releases after the take but has a way out that skips the release (a goto past
    the unwind label), that exit; and the same for the callers it makes takers, so
    that a proof failing further up names where it began."""
    t, r = set(takers), set(releasers)
    for _ in range(MAX_ROUNDS):
        sites = _sites(graph, t, r, downs, ups, source)
        steps: list[str] = []
        t2, r2 = set(takers), set(releasers)
        for node in sorted(t):
            for ref in _calls(graph, node):
                caller = (ref.path, ref.caller)
                after, leak = sites.closed_after(caller, ref.line)
                if after:
                    steps.append(f"{ref.path}:{ref.line} {ref.caller}() calls {node[1]}(), "
                                 f"which takes it, and every path of {ref.caller}() "
                                 f"releases it afterwards, at line {after}")
                    continue
                t2.add(caller)
                if leak:
                    leaks[caller] = (f"{ref.path}:{leak} {exit_on(source(ref.path), leak)} "
                                     f"after {node[1]}() at :{ref.line} leaves "
                                     f"{ref.caller}() holding it")
                elif node in leaks:
                    leaks.setdefault(caller, leaks[node])
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
            ups: dict[Node, list[int]], source: Callable[[str], str]) -> tuple[str, str]:
    """A taker's or releaser's store into a field: ("ok", evidence) when the field's
    protocol pairs it on one task, else ("user", why) or ("no", why)."""
    struct, fld = _field_of(ref)
    at, name = f"{ref.path}:{ref.line}", node[1]
    if node in t and struct in SYSCALL_STRUCTS:
        return "user", (f"{at} {name}() is {struct}.{fld}, entered from a system call, and "
                        "returns holding the semaphore: it is held across the return to "
                        "user space")
    if fld in FLAG_FIELDS and node in t and node in ups:
        return _flag_stored(at, name, fld, ref.path, source)
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


def _flag_stored(at: str, name: str, fld: str, path: str,
                 source: Callable[[str], str]) -> tuple[str, str]:
    """An on/off callback stored in fld at `at` (path:line): paired when every call
    of the storing file that turns it on turns it off again before leaving its
    function (em28xx's probe opened the gate and jumped to kfree() on an error);
    the calls elsewhere (tuner drivers, the DVB core) are taken on the field's
    protocol, FLAG_FIELDS."""
    why, ons = gate_left_open(path, source(path), fld)
    if why:
        return "no", f"{why}: the semaphore {name}() takes on 1 stays held"
    base = path.rsplit("/", 1)[-1]
    mine = (f"in {base}, every {fld}(..., 1) is followed by {fld}(..., 0) on each way "
            f"out of its function (:{', :'.join(map(str, ons))})" if ons else
            f"{base} itself never calls it with 1")
    return "ok", (f"{at} {name}() is the {fld} callback: called with 1 it takes the "
                  f"lock, called with 0 it releases it; {mine}; {FLAG_FIELDS[fld]}")


def prove_pairing(graph: CallGraph, takers: dict[Node, list[int]], releasers: set[Node],
                  downs: dict[Node, list[int]], ups: dict[Node, list[int]],
                  source: Callable[[str], str]) -> Pairing:
    """Whether every taker and releaser of one semaphore is paired on one task.
    takers: the lines of the acquisitions not proven released, by function (one
    released later under its own condition is, classify.audit._balance_guarded);
    downs/ups: the lines of its acquisitions and up()s, by function; source: a
    file's text with comments and strings blanked (classify.census.cscan)."""
    chain: list[str] = []
    leaks: dict[Node, str] = {}
    t, r = _climb(graph, takers, releasers, downs, ups, source, chain, leaks)
    out = Pairing(True, chain)
    for node in sorted(t | r):
        fail = functools.partial(_fail, out, leak=leaks.get(node, "") if node in t else "")
        if node in graph.open_ends:
            return fail(graph.open_ends[node])
        refs = [x for x in graph.refs.get(node, []) if not x.detail.startswith("EXPORT_SYMBOL")]
        if not refs:
            return fail(f"{node[0]}: no caller of {node[1]}() found"
                        + (" in the tree (it is exported)" if _exported(graph, node) else ""))
        for ref in refs:
            if ref.kind == "arg" and registration_context(*_passer(ref)):
                return fail(f"{ref.path}:{ref.line} {node[1]}() is registered with "
                            f"{_passer(ref)[0]}(): it runs on a task of its own")
            if ref.kind in ("field", "store"):
                status, text = _stored(graph, node, ref, t, r, ups, source)
                if status == "user":
                    out.user_return = out.user_return or text
                if status != "ok":
                    return fail(text)
                chain.append(text)
            elif not ref.caller:
                return fail(f"{ref.path}:{ref.line} {node[1]}() is named at file "
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


def _fail(out: Pairing, why: str, leak: str = "") -> Pairing:
    """The proof fails with why; leak, the way out that made the failing function
    a taker, comes first: that is where it is held, the rest is why no caller was
    proven to release it."""
    out.ok, out.why_not = False, f"{leak}; {why}" if leak else why
    return out
