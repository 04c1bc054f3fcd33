"""The audit: census -> facts -> classes, for a whole tree (or one file).

``run_audit`` chains the stages and returns an ``Audit`` that the report writers
turn into audit.json, audit.md and audit.html.  Every semaphore of the census is
in the result; a semaphore whose file spatch could not analyse is ``unknown``
with "not analysed: ..." rather than dropped.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from classify.census import (ACQUIRE, Census, Decl, Op, candidate_files, count_value,
                             resolve_address, subsystem, take_census)
from classify.census.callgraph import build_callgraph
from classify.facts import Cache, FileFacts, collect_facts
from classify.rules import EscapeFact, InitFact, OpFact, SemFacts, Verdict, classify
from classify.tree import TreeError

log = logging.getLogger("sem2mutex.audit")

INIT_OPS = ("sema_init", "__SEMAPHORE_INITIALIZER")


@dataclass
class SemResult:
    decl: Decl
    facts: SemFacts
    verdict: Verdict
    subsystem: str


@dataclass
class Audit:
    kernel: str
    version: str
    files: int
    results: list[SemResult]
    failures: list[FileFacts]
    unresolved_ops: list[Op]
    pointers: list[tuple[Decl, list[Op]]]
    stats: dict = field(default_factory=dict)


def _spatch_index(facts: dict[str, FileFacts]) -> tuple[dict, set, dict]:
    """What spatch saw, by (file, line, op): the function of each call it parsed,
    the balanced acquisitions, and the calls it found in atomic context."""
    seen_ops: dict[tuple[str, int, str], str] = {}
    balanced: set[tuple[str, int]] = set()
    atomic: dict[tuple[str, int, str], str] = {}
    for rel, ff in facts.items():
        for f in ff.facts:
            kind = f.get("fact")
            if kind == "op":
                seen_ops[(rel, f["line"], f["op"])] = f.get("func", "")
            elif kind == "balanced":
                balanced.add((rel, f["line"]))
            elif kind == "atomic":
                atomic.setdefault((rel, f["line"], f["op"]), f["why"])
    return seen_ops, balanced, atomic


def _join_decls(c: Census, facts: dict[str, FileFacts], out: dict[str, SemFacts]) -> None:
    for d in c.sems.values():
        sf = out[d.id]
        if d.init:
            sf.inits.append(InitFact(d.init, count_value(c, d.init, d.path),
                                     d.path, d.line, d.init_form))
        ff = facts.get(d.path)
        if ff is not None and ff.status != "ok":
            sf.not_analysed.append(f"{d.path}: {ff.error}")


def _join_ops(c: Census, facts: dict[str, FileFacts], out: dict[str, SemFacts]) -> None:
    seen_ops, balanced, atomic = _spatch_index(facts)
    for op in c.ops:
        ff = facts.get(op.path)
        if op.via == "ambiguous":
            for cand in op.candidates:
                if cand in out:
                    out[cand].possible_ops.append(OpFact(op.op, op.path, op.line, op.func,
                                                         note=op.note))
            continue
        if op.via != "direct" or op.target not in out:
            continue
        sf = out[op.target]
        if ff is not None and ff.status != "ok":
            msg = f"{op.path}: {ff.error}"
            if msg not in sf.not_analysed:
                sf.not_analysed.append(msg)
        if op.op in INIT_OPS:
            count = op.args[1] if len(op.args) > 1 else "?"
            sf.inits.append(InitFact(count, count_value(c, count, op.path),
                                     op.path, op.line, op.op))
            continue
        analysed = (op.path, op.line, op.op) in seen_ops
        # spatch knows the enclosing function better than the census' brace scan
        func = seen_ops.get((op.path, op.line, op.op)) or op.func
        sf.ops.append(OpFact(op.op, op.path, op.line, func, analysed=analysed,
                             balanced=(op.path, op.line) in balanced and op.op in ACQUIRE,
                             atomic=atomic.get((op.path, op.line, op.op), ""),
                             note=op.note, loop=op.loop))


def _join_escapes(c: Census, facts: dict[str, FileFacts], out: dict[str, SemFacts]) -> None:
    """Addresses handed to other code, resolved by the census like the calls."""
    for rel, ff in facts.items():
        for f in ff.facts:
            if f.get("fact") != "escape":
                continue
            target = resolve_address(c, rel, f.get("func", ""), f["expr"], f["line"])
            if target in out:
                out[target].escapes.append(EscapeFact(rel, f["line"], f.get("func", ""),
                                                      f.get("to", "other code")))
    for sf in out.values():
        sf.escapes = sorted(set(sf.escapes), key=lambda e: (e.path, e.line, e.to))


def _context_text(ctx) -> str:
    """One line for a rule and a reader: the contexts, then the evidence chain."""
    kinds = sorted(ctx.contexts) + (["under a lock"] if ctx.atomic_path else [])
    return " + ".join(kinds) + ": " + " -> ".join(ctx.chain)


def add_contexts(c: Census, root: Path, cache: Cache,
                 semfacts: dict[str, SemFacts]) -> float:
    """The execution contexts of the functions that call down_trylock() on a
    semaphore (the rule that decides a trylock's fate needs them), from the
    census' call graph; returns the seconds it took."""
    started = time.monotonic()
    targets = {(o.path, o.func) for sf in semfacts.values() for o in sf.ops
               if o.op == "down_trylock" and o.func}
    if not targets or not Path(root).is_dir():
        return 0.0
    graph = build_callgraph(c, root, cache, targets)
    for sf in semfacts.values():
        sf.ops = [dataclasses.replace(o, context=_context_text(graph.contexts(o.path, o.func)))
                  if (o.path, o.func) in targets and o.op == "down_trylock" else o
                  for o in sf.ops]
    return time.monotonic() - started


def join(c: Census, facts: dict[str, FileFacts]) -> dict[str, SemFacts]:
    """Attach the spatch facts to the census' semaphores."""
    out: dict[str, SemFacts] = {d.id: SemFacts(d.id) for d in c.sems.values()}
    _join_decls(c, facts, out)
    _join_ops(c, facts, out)
    _join_escapes(c, facts, out)
    return out


def run_audit(kernel: Path, cache_dir: Path, fresh: bool = False, jobs: int | None = None,
              timeout: float = 120.0, nice: int = 10, version: str = "") -> Audit:
    started = time.monotonic()
    kernel = Path(kernel)
    cache = Cache(cache_dir, fresh=fresh)
    if kernel.is_file():
        files = [kernel.name]
        root = kernel.parent
    else:
        root = kernel
        log.info("census: prefiltering %s", kernel)
        files = candidate_files(kernel)
    log.info("census: %d files can matter", len(files))
    c = take_census(root, files, cache=cache)
    t_census = time.monotonic() - started
    if not c.sems and root == kernel:
        raise TreeError(f"{kernel}: no struct semaphore found ({len(files)} file(s) "
                        "mention the semaphore API): nothing to audit")
    log.info("census: %d semaphores, %d pointers, %d calls (%.1f s)", len(c.sems),
             len(c.pointers), len(c.ops), t_census)
    # spatch only reads the files that declare or touch a semaphore
    # (a header that only declares a struct member holds no fact worth a parse)
    relevant = sorted({op.path for op in c.ops} |
                      {d.path for d in c.sems.values() if d.kind != "member"})
    names = sorted({d.name for d in c.sems.values()})
    facts = collect_facts(root, relevant, c.texts, cache, cache_dir, jobs=jobs,
                          timeout=timeout, nice=nice, names=names)
    t_facts = time.monotonic() - started - t_census
    semfacts = join(c, facts)
    t_graph = add_contexts(c, root, cache, semfacts)
    results = []
    for sid in sorted(semfacts):
        d = c.sems[sid]
        results.append(SemResult(d, semfacts[sid], classify(semfacts[sid]), subsystem(d.path)))
    failures = sorted((ff for ff in facts.values() if ff.status != "ok"), key=lambda f: f.path)
    unresolved = [op for op in c.ops if op.via in ("unresolved", "ambiguous")]
    pointers = []
    for pid in sorted(c.pointers):
        pointers.append((c.pointers[pid], [op for op in c.ops if op.target == pid]))
    # calls spatch did not see, by function: the functions it could not parse
    total = time.monotonic() - started
    stats = {"census_seconds": round(t_census, 1), "facts_seconds": round(t_facts, 1),
             "callgraph_seconds": round(t_graph, 1),
             "total_seconds": round(total, 1), "cache_hits": cache.hits,
             "cache_misses": cache.misses, "files_analysed": len(relevant)}
    log.info("audit: %d semaphores classified in %.1f s", len(results), total)
    return Audit(str(kernel), version, len(files), results, failures, unresolved, pointers,
                 stats)
