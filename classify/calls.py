"""Calls that pass a semaphore's address to a function: joined to the semaphore.

spatch finds each `f(..., &E, ...)` whose E the census knows (an escape fact).
When f has a summary (census.summaries: what it does with the `struct semaphore
*` it is given, to any depth), the call becomes the semaphore's own calls, in the
caller, with the helpers named (`down_interruptible() in enter_threads_barrier()
through __down()`); an acquisition there is released on every path when every
way out of the caller after the call passes an up() of it (census.exits), or when
the helper releases it itself.  The parameter is recorded as followed, with the
other semaphores given to it, as a pointer they share (none of them can change
type alone).  A call whose function has no summary stays an address handed to
other code, with the reason when the function does take a `struct semaphore *`:
no verdict may then say the caller never takes or waits on it.
"""

from __future__ import annotations

import dataclasses

from classify.census import Census, count_value
from classify.census.cscan import clean_source
from classify.census.branches import released_on_every_path
from classify.census.model import ACQUIRE
from classify.census.summaries import BOTH, Summaries, Summary
from classify.facts import FileFacts
from classify.rules import EscapeFact, Followed, InitFact, OpFact, SemFacts


class HelperCalls:
    """The summaries of one census, applied to the calls spatch found."""

    def __init__(self, c: Census, facts: dict[str, FileFacts]):
        seen = {(rel, f["line"], f["op"]) for rel, ff in facts.items() for f in ff.facts
                if f.get("fact") == "op"}
        self.c = c
        self.summaries = Summaries(c, seen)
        self.applied: dict[str, list[tuple[str, EscapeFact, Summary]]] = {}
        self.texts: dict[str, str] = {}

    def apply(self, sf: SemFacts, esc: EscapeFact, arg: str) -> EscapeFact | None:
        """Join the call esc (passing arg, `&x->sem`) to sf: None when its function's
        summary applies, else the escape to keep (with why, for a function that takes
        a struct semaphore * and could not be summarised)."""
        name = esc.to[:-2] if esc.to.endswith("()") else ""
        if not name:
            return esc
        s = self.summaries.at_call(esc.path, esc.line, name, arg)
        if not s.ok:
            known = name in self.summaries.by_name
            return dataclasses.replace(esc, why=s.why_not) if known else esc
        for pid in s.pointers:
            self.applied.setdefault(pid, []).append((sf.id, esc, s))
        seen: set[str] = set()
        for o in s.ops:
            if o.op == "sema_init":
                sf.inits.append(InitFact(o.count, count_value(self.c, o.count, o.path),
                                         esc.path, esc.line, f"sema_init through {s.func}()"))
                continue
            if o.op in seen:
                continue
            seen.add(o.op)
            sf.ops.append(OpFact(o.op, esc.path, esc.line, esc.func, analysed=True,
                                 balanced=s.effect == BOTH and o.op in ACQUIRE,
                                 loop=o.loop, via=(s.func,) + o.via))
        return None

    def finish(self, out: dict[str, SemFacts]) -> None:
        """The followed parameters, and the acquisitions of the functions that call
        a helper: released on every path by the up()s after them."""
        for pid, uses in sorted(self.applied.items()):
            sems = sorted({sid for sid, _, _ in uses})
            for sid, esc, s in uses:
                out[sid].followed.append(Followed(
                    f"{esc.path}:{esc.line}", pid, "param", len(s.ops),
                    [x for x in sems if x != sid]))
        for sf in out.values():
            callers = {(o.path, o.func) for o in sf.ops if o.via}
            if callers:
                sf.ops = [self._balanced(sf, o) if (o.path, o.func) in callers else o
                          for o in sf.ops]

    def _balanced(self, sf: SemFacts, o: OpFact) -> OpFact:
        if o.op not in ACQUIRE or o.balanced or not o.func:
            return o
        # an up() a helper makes in a loop (any number of times) closes nothing
        gives = sorted({x.line for x in sf.ops if x.op == "up" and x.path == o.path
                        and x.func == o.func and x.line > o.line
                        and not (x.via and x.loop)})
        names = frozenset(v[0] for x in sf.ops for v in [x.via] if v) | \
            frozenset(ACQUIRE) | {"up"}
        return dataclasses.replace(o, balanced=released_on_every_path(
            self._text(o.path), o.line, gives, names))

    def _text(self, path: str) -> str:
        if path not in self.texts:
            self.texts[path] = clean_source(self.c.texts.get(path, ""))
        return self.texts[path]
