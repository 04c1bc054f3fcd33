"""The audit: census -> facts -> classes, for a whole tree (or one file).

``run_audit`` chains the stages and returns an ``Audit`` that the report writers
turn into audit.json, audit.md and audit.html.  Every semaphore of the census is
in the result; a semaphore whose file spatch could not analyse is ``unknown``
with "not analysed: ..." rather than dropped.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from classify.allocated import Family, families
from classify.calls import HelperCalls
from classify.census import (ACQUIRE, Census, Decl, Op, candidate_files, count_value,
                             resolve_address, subsystem, take_census)
from classify.census.callgraph import CallGraph, build_callgraph
from classify.census.guards import weigh
from classify.census.cscan import clean_source, read_text
from classify.census.exits import guarded_alike
from classify.census.pairs import prove_pairing
from classify.census.resolver import resolve_pointer
from classify.facts import Cache, FileFacts, collect_facts
from classify.rules import (COMPLETION, MUTEX, EscapeFact, Followed, InitFact, OpFact, SemFacts,
                            Verdict, classify)
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
class AuditStats:
    """What one audit cost (printed by `python3 -m classify audit`, never written)."""
    census_seconds: float = 0.0
    facts_seconds: float = 0.0
    callgraph_seconds: float = 0.0
    total_seconds: float = 0.0
    cache_hits: int = 0             # files whose facts the cache held
    cache_misses: int = 0
    files_analysed: int = 0         # the files spatch was given


@dataclass
class Audit:
    kernel: str
    version: str
    files: int
    results: list[SemResult]
    failures: list[FileFacts]
    unresolved_ops: list[Op]
    pointers: list[tuple[Decl, list[Op]]]
    stats: AuditStats = field(default_factory=AuditStats)
    allocated: list[Family] = field(default_factory=list)


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


def _function(op: Op, seen: str) -> str:
    """The function a call is in: spatch's, which knows it better than the census'
    brace scan, except in the body of a #define (`#define down_console_sem() ...`):
    spatch calls that `something_else`, the census names the macro, whose uses are
    its callers in the call graph."""
    if op.func.startswith("macro ") or not seen or seen == "something_else":
        return op.func
    return seen


def _join_ops(c: Census, facts: dict[str, FileFacts], out: dict[str, SemFacts]) -> None:
    seen_ops, balanced, atomic = _spatch_index(facts)
    source = _clean_sources(c, c.root)
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
        func = _function(op, seen_ops.get((op.path, op.line, op.op), ""))
        why, guard = atomic.get((op.path, op.line, op.op), ""), ""
        if why:
            why, guard = weigh(source(op.path), op.line, why)
        sf.ops.append(OpFact(op.op, op.path, op.line, func, analysed=analysed,
                             balanced=(op.path, op.line) in balanced and op.op in ACQUIRE,
                             atomic=why, note=op.note, loop=op.loop, guard=guard))
    for sf in out.values():
        _balance_guarded(sf, source)


def _balance_guarded(sf: SemFacts, source) -> None:
    """An acquisition released later in its function under the same condition
    (`if (c) down(E); ... if (c) up(E);`, census.exits.guarded_alike) is
    released whenever it was taken: balanced, as spatch's rule cannot see."""
    ups: dict[tuple[str, str], list[int]] = {}
    for o in sf.ops:
        if o.op == "up" and o.func:
            ups.setdefault((o.path, o.func), []).append(o.line)
    sf.ops = [dataclasses.replace(o, balanced=True)
              if o.op in ACQUIRE and not o.balanced and (o.path, o.func) in ups
              and guarded_alike(source(o.path), o.line, ups[(o.path, o.func)]) else o
              for o in sf.ops]


def _join_escapes(c: Census, facts: dict[str, FileFacts], out: dict[str, SemFacts]) -> None:
    """Addresses handed to other code, resolved by the census like the calls: one
    passed to a function with a summary is that function's calls at the call
    (classify.calls), one stored in a `struct semaphore *` the census knows is
    followed (_follow_pointers); the others stay escapes."""
    stored: dict[str, list[tuple[str, EscapeFact]]] = {}
    helpers = HelperCalls(c, facts)
    for rel, ff in facts.items():
        for f in ff.facts:
            if f.get("fact") != "escape":
                continue
            func = _escape_function(c, rel, f.get("func", ""), f["line"])
            target = resolve_address(c, rel, func, f["expr"], f["line"])
            if target not in out:
                continue
            esc = EscapeFact(rel, f["line"], func, f.get("to", "other code"))
            if not f.get("lhs"):
                kept = helpers.apply(out[target], esc, "&" + f["expr"])
                if kept is not None:
                    out[target].escapes.append(kept)
                continue
            out[target].escapes.append(esc)
            pid = resolve_pointer(c, rel, func, f["lhs"], f["line"])
            if pid:
                stored.setdefault(pid, []).append((target, esc))
    helpers.finish(out)
    _follow_pointers(c, facts, out, stored)
    for sf in out.values():
        sf.escapes = sorted(set(sf.escapes), key=lambda e: (e.path, e.line, e.to))


def _escape_function(c: Census, rel: str, func: str, line: int) -> str:
    """spatch's function of an escape; in a #define's body (spatch's
    `something_else`) the census' macro name."""
    if func != "something_else":
        return func
    macro = next((o.func for o in c.ops if o.path == rel and o.line == line
                  and o.func.startswith("macro ")), "")
    return macro


def _follow_pointers(c: Census, facts: dict[str, FileFacts], out: dict[str, SemFacts],
                     stored: dict[str, list[tuple[str, EscapeFact]]]) -> None:
    """The calls made through a pointer act on every semaphore whose address is
    stored in it: they become that semaphore's calls, and the store no longer
    counts as an escape.  Semaphores that share the pointer are named, since no
    one of them can change type alone."""
    seen_ops, _, atomic = _spatch_index(facts)
    for pid, stores in sorted(stored.items()):
        through = [op for op in c.ops if op.target == pid and op.via.startswith("pointer")
                   and op.op not in INIT_OPS]
        sems = sorted({sid for sid, _ in stores})
        for sid, esc in stores:
            sf = out[sid]
            if esc in sf.escapes:
                sf.escapes.remove(esc)
            sf.followed.append(Followed(f"{esc.path}:{esc.line}", pid, c.pointers[pid].kind,
                                        len(through), [x for x in sems if x != sid]))
        for sid in sems:
            out[sid].ops.extend(
                OpFact(op.op, op.path, op.line, op.func, analysed=(op.path, op.line, op.op)
                       in seen_ops, atomic=atomic.get((op.path, op.line, op.op), ""),
                       note=f"through {pid}", loop=op.loop) for op in through)


def _context_text(ctx) -> str:
    """One line for a rule and a reader: the contexts, then the evidence chain."""
    kinds = sorted(ctx.contexts) + (["under a lock"] if ctx.atomic_path else [])
    return " + ".join(kinds) + ": " + " -> ".join(ctx.chain)


def _pair_targets(sf: SemFacts) -> tuple[dict, set, dict, dict]:
    """A binary semaphore's takers (an acquisition not proven released in its
    function) and releasers (an up() in a function that never takes it), with the
    lines of its acquisitions and up()s by function."""
    downs: dict[tuple[str, str], list[int]] = {}
    ups: dict[tuple[str, str], list[int]] = {}
    if not any(i.value == 1 for i in sf.inits):
        return {}, set(), downs, ups
    for o in sf.ops:
        if o.func and (o.op in ACQUIRE or o.op == "up"):
            (downs if o.op in ACQUIRE else ups).setdefault(_node(o.path, o.func),
                                                          []).append(o.line)
    takers: dict[tuple[str, str], list[int]] = {}
    for o in sf.ops:
        if o.op in ACQUIRE and o.func and not o.balanced:
            takers.setdefault(_node(o.path, o.func), []).append(o.line)
    releasers = set(ups) - set(downs)
    return takers, releasers, downs, ups


def _clean_sources(c: Census, root: Path):
    """path -> the file's text with comments and strings blanked, read once."""
    @functools.lru_cache(maxsize=None)
    def source(rel: str) -> str:
        text = c.texts.get(rel)
        if text is None:
            try:
                text = read_text(root, rel)
            except OSError:
                text = ""
        return clean_source(text)
    return source


def _asks_context(o: OpFact) -> bool:
    """A down_trylock(), whose fate depends on where its function runs, and a call
    through a helper, which spatch's atomic-context facts do not cover."""
    return bool(o.func) and (o.op == "down_trylock" or bool(o.via))


def _trylock_targets(semfacts: dict[str, SemFacts]) -> set[tuple[str, str]]:
    """The functions whose execution contexts the rules need (_asks_context)."""
    return {_node(o.path, o.func) for sf in semfacts.values() for o in sf.ops
            if _asks_context(o)}


def add_contexts(graph: CallGraph, semfacts: dict[str, SemFacts],
                 targets: set[tuple[str, str]]) -> None:
    for sf in semfacts.values():
        sf.ops = [dataclasses.replace(o, context=_context_text(graph.contexts(o.path, o.func)))
                  if _node(o.path, o.func) in targets and _asks_context(o) else o
                  for o in sf.ops]


# The rules a pairing proof can overturn: everything they decide is asked again.
PAIRING_RULES = frozenset({"lock.released_by_another_function",
                           "lock.trylock_reached_from_interrupt",
                           "lock.trylock_callers_not_followed",
                           "lock.not_released_on_every_path"})


def add_pairings(c: Census, root: Path, graph: CallGraph, semfacts: dict[str, SemFacts],
                 pairs: dict[str, tuple]) -> None:
    """For each binary semaphore of pairs taken in one function and released in
    another, the proof that one task does both (census.pairs)."""
    source = _clean_sources(c, Path(root))
    for sid, (takers, releasers, downs, ups) in pairs.items():
        semfacts[sid].pairing = prove_pairing(graph, takers, releasers, downs, ups, source)


# The classes a conversion patch is written for: the message says who takes and
# releases the semaphore and in which context, so each of their calls gets its
# function's contexts and callers (add_op_contexts).
CONVERTED = (MUTEX, COMPLETION)
MAX_CALLERS = 4          # caller chains kept per call (the shortest ones)


def _node(path: str, func: str) -> tuple[str, str]:
    """A function as the call graph names it (a function-like macro by its name)."""
    return path, func[6:] if func.startswith("macro ") else func


def _callers(graph: CallGraph, node: tuple[str, str]) -> tuple[tuple[str, ...], int]:
    """The chains from the roots that reach node, one string each: the shortest
    MAX_CALLERS (by hops, then text), and how many were left out."""
    chains: dict[str, int] = {}
    for chain in graph.root_chains(*node):
        chains.setdefault(" -> ".join(chain), len(chain))
    ordered = sorted(chains, key=lambda t: (chains[t], t))
    return tuple(ordered[:MAX_CALLERS]), max(0, len(ordered) - MAX_CALLERS)


def add_op_contexts(c: Census, root: Path, cache: Cache, semfacts: dict[str, SemFacts],
                    verdicts: dict[str, Verdict], graph: CallGraph | None,
                    walked: set[tuple[str, str]]) -> CallGraph | None:
    """Once the verdicts are final: for every call (with a known function) of a
    semaphore classed mutex or completion, its function's contexts and its
    callers.  A function the rules' walk started from (walked: a trylock
    caller, a taker or releaser) is read from graph, whose contexts the rules
    used; the others from one more walk from them alone (returned), which
    leaves the rules' graph, and so every verdict, as it was.  A down_trylock()
    keeps the context the rules read."""
    sids = [sid for sid in sorted(verdicts) if verdicts[sid].cls in CONVERTED]
    need = {_node(o.path, o.func) for sid in sids for o in semfacts[sid].ops if o.func}
    if not need or not Path(root).is_dir():
        return None
    walked = {n for n in walked if not n[1].startswith("macro ")} if graph else set()
    rest = need - walked
    extra = build_callgraph(c, root, cache, rest) if rest else None
    known: dict[tuple[str, str], tuple[str, tuple[str, ...], int]] = {}
    for node in sorted(need):
        g = graph if node in walked else extra
        known[node] = (_context_text(g.contexts(*node)),) + _callers(g, node)
    for sid in sids:
        sf = semfacts[sid]
        ops = []
        for o in sf.ops:
            if o.func:
                ctx, callers, more = known[_node(o.path, o.func)]
                o = dataclasses.replace(o, context=o.context or ctx, callers=callers,
                                        callers_more=more)
            ops.append(o)
        sf.ops = ops
    return extra


def classify_all(c: Census, root: Path, cache: Cache,
                 semfacts: dict[str, SemFacts]) -> dict[str, Verdict]:
    """The rules over every semaphore: first with the trylock contexts, then again
    for those a pairing proof can change, with it.  One call graph serves both,
    from the trylock callers and the takers and releasers of every binary
    semaphore: each round of callers in other files is one grep of the whole tree,
    and one walk needs half the rounds of two.  Then the contexts and callers of
    every call of a mutex or completion (add_op_contexts)."""
    trylocks = _trylock_targets(semfacts)
    pairs = {sid: _pair_targets(sf) for sid, sf in sorted(semfacts.items())}
    pairs = {sid: p for sid, p in pairs.items() if p[0] or p[1]}
    targets = trylocks | {n for takers, releasers, _, _ in pairs.values()
                          for n in set(takers) | releasers}
    graph = (build_callgraph(c, root, cache, targets)
             if targets and Path(root).is_dir() else None)
    if graph is not None:
        add_contexts(graph, semfacts, trylocks)
    verdicts = {sid: classify(sf) for sid, sf in semfacts.items()}
    again = {sid for sid, v in verdicts.items() if v.rule in PAIRING_RULES and sid in pairs}
    if graph is not None:
        add_pairings(c, root, graph, semfacts, {sid: pairs[sid] for sid in sorted(again)})
    for sid in again:
        verdicts[sid] = classify(semfacts[sid])
    add_op_contexts(c, root, cache, semfacts, verdicts, graph, targets)
    return verdicts


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
        files = candidate_files(kernel, cache)
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
                          timeout=timeout, nice=nice, names=names,
                          rewritten=frozenset(c.expanded))
    t_facts = time.monotonic() - started - t_census
    semfacts = join(c, facts)
    graph_started = time.monotonic()
    verdicts = classify_all(c, root, cache, semfacts)
    t_graph = time.monotonic() - graph_started
    results = []
    for sid in sorted(semfacts):
        d = c.sems[sid]
        results.append(SemResult(d, semfacts[sid], verdicts[sid], subsystem(d.path)))
    failures = sorted((ff for ff in facts.values() if ff.status != "ok"), key=lambda f: f.path)
    unresolved = [op for op in c.ops if op.via in ("unresolved", "ambiguous")]
    pointers = []
    for pid in sorted(c.pointers):
        pointers.append((c.pointers[pid], [op for op in c.ops if op.target == pid]))
    # calls spatch did not see, by function: the functions it could not parse
    total = time.monotonic() - started
    stats = AuditStats(round(t_census, 1), round(t_facts, 1), round(t_graph, 1),
                       round(total, 1), cache.hits, cache.misses, len(relevant))
    log.info("audit: %d semaphores classified in %.1f s", len(results), total)
    followed = {f.pointer for sf in semfacts.values() for f in sf.followed}
    return Audit(str(kernel), version, len(files), results, failures, unresolved, pointers,
                 stats, families(c, followed))
